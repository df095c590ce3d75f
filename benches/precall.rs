//! Added time per attempt of the pre-call layer, and the cost of counting input tokens.
//!
//! - `attempt/*`: the select layer alone against pre-call + select over eight deployments of one
//!   group with RPM limits, tags (tag filtering on) and two order tiers, on the memory store; the
//!   provider answers at once, so the difference is what the pre-call checks cost per attempt.
//!   The `+ tpm and context window` variant also counts the prompt's tokens (a fresh request each
//!   time, so every iteration counts).
//! - `count/*`: `count_input_tokens` on chat bodies of about 1k and 100k o200k tokens.
//!
//! ```text
//! cargo bench --bench precall -- --warm-up-time 1 --measurement-time 3
//! ```

use std::{hint::black_box, sync::Arc};

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use switchyard::{
    RouteBody, RouteCtx, StateStore,
    layers::{
        BoxError, Deployment, Registry, RequestFacts,
        precall::{PreCallConfig, PreCallLayer, Tokenizer, count_input_tokens},
        select::{RoutingStrategy, SelectLayer},
    },
};
use tower::{ServiceBuilder, ServiceExt, service_fn, util::BoxCloneSyncService};

type Stack = BoxCloneSyncService<http::Request<Bytes>, http::Response<RouteBody>, BoxError>;

/// Eight deployments: tiers 1 and 2, tagged `free` / `paid` / `default`, every one with a high
/// RPM limit (never reached) and, with `tpm`, a TPM limit and a context window.
fn registry(tpm: bool) -> Arc<Registry> {
    let tags = ["free", "paid", "default", "free"];
    let list = (0..8).map(|i| {
        let mut b = Deployment::builder("gpt-4o", format!("openai/gpt-4o-{i}"))
            .id(format!("d{i}"))
            .rpm(u64::MAX / 2)
            .order(1 + i / 4)
            .tags([tags[i as usize % 4]]);
        if tpm {
            b = b.tpm(u64::MAX / 2).max_input_tokens(128_000);
        }
        b.build().expect("valid deployment")
    });
    Arc::new(Registry::with_deployments(list).expect("distinct ids"))
}

fn request(body: &Bytes) -> http::Request<Bytes> {
    let facts = RequestFacts::new().tags(vec!["free".into()]).with_body(body.clone());
    let mut req = http::Request::new(body.clone());
    req.extensions_mut().insert(RouteCtx::with_facts("gpt-4o", facts));
    req
}

/// A chat body of roughly `tokens` o200k tokens of English prose.
fn chat_body(tokens: u64) -> Bytes {
    const PROSE: &str = "The quick brown fox jumps over the lazy dog while the committee reviews \
        quarterly results, and engineers refactor the routing layer to shave microseconds. ";
    let per = count_input_tokens(&body_of(PROSE), Tokenizer::O200kBase).expect("chat") - 7;
    let text = PROSE.repeat(usize::try_from(tokens / per).unwrap_or(1).max(1));
    body_of(&text)
}

fn body_of(text: &str) -> Bytes {
    Bytes::from(serde_json::json!({"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}).to_string())
}

fn attempt(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let provider =
        service_fn(|_req: http::Request<Bytes>| async { Ok::<_, BoxError>(http::Response::new(RouteBody::empty())) });
    let small = chat_body(200);
    let mut group = c.benchmark_group("attempt");
    for (name, tpm, precall) in [
        ("select alone", false, false),
        ("pre-call (limits, tags, order) + select", false, true),
        ("pre-call (+ tpm and context window, 200-token prompt) + select", true, true),
    ] {
        let registry = registry(tpm);
        let store = Arc::new(StateStore::memory());
        let select = SelectLayer::new(registry.clone(), store.clone(), RoutingStrategy::SimpleShuffle.build());
        let config = PreCallConfig::new().pre_call_checks(true).tag_filtering(true);
        let svc: Stack = if precall {
            BoxCloneSyncService::new(
                ServiceBuilder::new()
                    .layer(PreCallLayer::new(registry, store, config))
                    .layer(select.with_seed(1))
                    .service(provider),
            )
        } else {
            BoxCloneSyncService::new(ServiceBuilder::new().layer(select.with_seed(1)).service(provider))
        };
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| {
                let s = svc.clone();
                let req = request(&small);
                async move { black_box(s.oneshot(req).await.expect("served")) }
            });
        });
    }
    group.finish();
}

fn count(c: &mut Criterion) {
    let mut group = c.benchmark_group("count");
    for tokens in [1_000u64, 100_000] {
        let body = chat_body(tokens);
        group.throughput(Throughput::Elements(tokens));
        for tokenizer in [Tokenizer::O200kBase, Tokenizer::Cl100kBase, Tokenizer::Estimate] {
            // Load the vocabulary outside the measurement.
            black_box(tokenizer.count("warm up"));
            group.bench_with_input(BenchmarkId::new(tokenizer.as_str(), tokens), &body, |b, body| {
                b.iter(|| black_box(count_input_tokens(body, tokenizer)));
            });
        }
    }
    group.finish();
}

criterion_group!(benches, attempt, count);
criterion_main!(benches);
