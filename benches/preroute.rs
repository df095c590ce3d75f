//! The complexity pre-router's cost per request (issue 22's target: under 20 µs for a 2 KB
//! prompt).
//!
//! - `complexity/classify`: the scorer alone on a prompt of about 2 KB (LiteLLM's `classify`);
//! - `complexity/route_body`: what the layer pays per call, reading the conversation from a chat
//!   body carrying that prompt (plus a system prompt) and deciding;
//! - `complexity/greeting`: the same for a two-word prompt;
//! - `quality/route_body`: the quality router on the same body (the same scorer, then the tier's
//!   cheapest group among eight), with a caller's minimum tier;
//! - `adaptive/route_body`: the adaptive router on the same body (LiteLLM's request classifier,
//!   then one Beta draw per group among eight, scored against cost; memory store, seeded);
//! - `adaptive/outcome`: what learning from one call's outcome costs the request's task (the
//!   local posterior update and handing the store write to the bookkeeping).
//!
//! ```text
//! cargo bench --bench preroute -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::sync::Arc;

use switchyard::layers::{
    RequestFacts, StateStore,
    ctx::PreRouteDecision,
    preroute::{
        PreRouteInput, PreRouteOutcome, PreRouter,
        adaptive::{AdaptiveCandidate, AdaptivePreferences, AdaptiveRouter, AdaptiveRouterConfig},
        complexity::{ComplexityRouter, ComplexityRouterConfig},
        quality::{QualityCandidate, QualityRouter, QualityRouterConfig, RoutingPreferences},
    },
};

/// About 2 KB of a mixed technical ask: code and technical terms, a numbered list, questions.
fn prompt() -> String {
    let paragraph = "We run a distributed ingestion service written in Rust and Python that receives events over \
        gRPC and HTTP, batches them, and writes them to a PostgreSQL database. Latency at the 99th percentile \
        went from 40 ms to 900 ms after the last deploy. 1. Look at the async runtime and the connection pool. \
        2. Check whether the new schema migration added an index. Could it be the memory allocator? Or the GC \
        in the Python workers? ";
    let mut out = String::new();
    while out.len() < 2048 {
        out.push_str(paragraph);
    }
    out.truncate(2048);
    out
}

fn chat_body(prompt: &str) -> Bytes {
    serde_json::json!({
        "model": "smart-router",
        "messages": [
            {"role": "system", "content": "You are a senior engineer. Answer precisely."},
            {"role": "user", "content": prompt},
        ],
    })
    .to_string()
    .into()
}

fn bench(c: &mut Criterion) {
    let router = ComplexityRouter::new(ComplexityRouterConfig::default()).expect("the default config");
    let prompt = prompt();
    let mut group = c.benchmark_group("complexity");
    group.throughput(Throughput::Bytes(prompt.len() as u64));
    group.bench_function("classify", |b| b.iter(|| black_box(router.classify(black_box(&prompt)))));
    let facts = RequestFacts::new().with_body(chat_body(&prompt));
    group.bench_function("route_body", |b| {
        b.iter(|| black_box(router.route(&PreRouteInput::new("smart-router", black_box(&facts)))))
    });
    let greeting = RequestFacts::new().with_body(chat_body("Hello there!"));
    group.bench_function("greeting", |b| {
        b.iter(|| black_box(router.route(&PreRouteInput::new("smart-router", black_box(&greeting)))))
    });
    group.finish();

    let names: Vec<String> = (0..8).map(|i| format!("group-{i}")).collect();
    let candidates = names.iter().enumerate().map(|(i, name)| {
        let tier = u32::try_from(i / 2 + 1).unwrap_or(1);
        QualityCandidate::new(name.as_str(), RoutingPreferences::new(tier)).with_prices(Some(1e-6 * i as f64), None)
    });
    let quality = QualityRouter::new(QualityRouterConfig::new(names.iter()).with_default_model("group-0"), candidates)
        .expect("a valid config");
    let mut facts = RequestFacts::new().with_body(chat_body(&prompt));
    facts.min_quality_tier = Some(2);
    let mut group = c.benchmark_group("quality");
    group.throughput(Throughput::Bytes(prompt.len() as u64));
    group.bench_function("route_body", |b| {
        b.iter(|| black_box(quality.route(&PreRouteInput::new("smart-router", black_box(&facts)))))
    });
    group.finish();

    let candidates = names.iter().enumerate().map(|(i, name)| {
        let tier = u8::try_from(i % 3 + 1).unwrap_or(2);
        AdaptiveCandidate::new(name.as_str(), AdaptivePreferences::new(tier)).with_input_cost(Some(1e-6 * i as f64))
    });
    let store = Arc::new(StateStore::memory());
    let adaptive =
        AdaptiveRouter::new("smart-router", AdaptiveRouterConfig::new(names.iter()), candidates, store, Some(7))
            .expect("a valid config");
    let facts = RequestFacts::new().with_body(chat_body(&prompt));
    let mut group = c.benchmark_group("adaptive");
    group.throughput(Throughput::Bytes(prompt.len() as u64));
    group.bench_function("route_body", |b| {
        b.iter(|| black_box(adaptive.route(&PreRouteInput::new("smart-router", black_box(&facts)))))
    });
    let decision = PreRouteDecision::new("group-3", "bandit").with_tier("general");
    group.bench_function("outcome", |b| {
        b.iter(|| {
            adaptive.on_outcome(&PreRouteOutcome::failed(
                "smart-router",
                &decision,
                Some(switchyard::layers::Outcome::ServerError),
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
