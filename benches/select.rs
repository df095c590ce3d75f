//! Cost of one pick per routing strategy, at 4, 64 and 1,024 candidates, of a whole `Select`
//! service call over an always-ready provider, and of the cooldown layer's filter over groups of
//! the same sizes with no deployment cooling down, with a cooldown only in another group, and
//! with a quarter of the group cooling down.
//!
//! Every strategy gets the state it reads: latency samples and peak-EWMA estimates, requests in
//! flight, window usage under generous limits, and prices (built-in and per deployment), so each
//! one does its real work rather than a shortcut.
//!
//! ```text
//! cargo bench --bench select -- --warm-up-time 1 --measurement-time 2
//! ```

use std::{hint::black_box, sync::Arc, time::Duration};

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use rand::{SeedableRng, rngs::SmallRng};
use switchyard_layers::{
    BoxError, Deployment, Registry, RequestFacts, RouteBody, RouteCtx, RouteRequest, StateStore,
    cooldown::{CooldownConfig, CooldownLayer},
    select::{RoutingStrategy, SelectLayer, Selection, StrategyArgs},
    state::{InFlightGuard, Limits},
};
use tower::{ServiceBuilder, ServiceExt, service_fn};

const SIZES: [usize; 3] = [4, 64, 1024];

/// Provider models cycled through the group: built-in prices, one unpriced model.
const MODELS: [&str; 5] = ["openai/gpt-4o", "openai/gpt-4o-mini", "azure/gpt-4.1", "openai/o3-mini", "vllm/llama-3"];

/// A group of `n` deployments with weights, limits and some explicit prices.
fn registry(n: usize) -> Arc<Registry> {
    let registry = Registry::new();
    for i in 0..n {
        let mut b = Deployment::builder("g", MODELS[i % MODELS.len()])
            .id(format!("d{i}"))
            .weight((i % 7 + 1) as f64)
            // Limits high enough never to bind, so the reservation path runs but always admits.
            .rpm(1 << 40)
            .tpm(1 << 50);
        if i % 3 == 0 {
            b = b.input_cost_per_token(1e-6 + i as f64 * 1e-9).output_cost_per_token(2e-6);
        }
        registry.add(b.build().expect("valid deployment")).expect("distinct ids");
    }
    Arc::new(registry)
}

/// A store where every deployment has latency, TTFT and usage history and some requests in flight.
fn store(registry: &Registry, rt: &tokio::runtime::Runtime) -> (Arc<StateStore>, Vec<InFlightGuard>) {
    let store = Arc::new(StateStore::memory());
    let mut guards = Vec::new();
    for (i, d) in registry.deployments().iter().enumerate() {
        for s in 0..10 {
            let secs = 0.2 + ((i * 31 + s * 17) % 100) as f64 / 100.0;
            store.local().record_latency(&d.id, secs, Duration::from_secs_f64(secs));
            let attempt = store.local().begin(&d.id);
            store.local().record_ttft_held(&attempt, Duration::from_secs_f64(secs / 4.0), tokio::time::Instant::now());
        }
        for _ in 0..(i % 4) {
            guards.push(store.local().begin(&d.id));
        }
        let tokens = ((i * 7919) % 50_000) as u64;
        rt.block_on(store.try_reserve(&d.id, Limits { rpm: d.rpm, tpm: d.tpm }, tokens));
    }
    (store, guards)
}

fn strategy_picks(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let mut group = c.benchmark_group("pick");
    for n in SIZES {
        let registry = registry(n);
        let (store, _guards) = store(&registry, &rt);
        let g = registry.group("g").expect("group");
        let candidates = g.candidates();
        let ids: Vec<_> = candidates.iter().map(|d| d.id.clone()).collect();
        let usage = rt.block_on(store.usage(&ids));
        let facts = RequestFacts::new().with_input_tokens(500);
        let args = StrategyArgs::new(0.1).expect("valid buffer");
        for (name, kind) in RoutingStrategy::ALL {
            let strategy = kind.build_with(&args);
            // As the select layer does: usage only for the strategies that read it.
            let usage = strategy.needs_usage().then_some(&usage[..]);
            let selection = Selection::new(&g, &candidates, usage, store.local(), &facts, 500);
            let mut rng = SmallRng::seed_from_u64(7);
            group.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
                b.iter(|| black_box(strategy.pick(black_box(&selection), &mut rng)));
            });
        }
    }
    group.finish();
}

fn service_call(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let mut group = c.benchmark_group("select_call");
    for n in [4, 64] {
        let registry = registry(n);
        let store = Arc::new(StateStore::memory());
        let provider = service_fn(|_req: http::Request<Bytes>| async {
            Ok::<_, BoxError>(http::Response::new(RouteBody::empty()))
        });
        for kind in [RoutingStrategy::SimpleShuffle, RoutingStrategy::LeastBusy] {
            let layer = SelectLayer::new(registry.clone(), store.clone(), kind).with_seed(7);
            let svc = ServiceBuilder::new().layer(layer).service(provider);
            group.bench_with_input(BenchmarkId::new(kind.as_str(), n), &n, |b, _| {
                // Cloned per request, as axum does; the response (and its guards) dropped inside.
                b.to_async(&rt).iter(|| {
                    let svc = svc.clone();
                    async move {
                        let mut req = http::Request::new(Bytes::from_static(b"{}"));
                        req.extensions_mut().insert(RouteCtx::new("g"));
                        drop(black_box(svc.oneshot(req).await.expect("served")));
                    }
                });
            });
        }
    }
    group.finish();
}

/// Which deployments are cooling down in a cooldown-filter benchmark.
#[derive(Clone, Copy)]
enum Cooling {
    /// None anywhere: the layer's local fast path, no read.
    None,
    /// One deployment of another group: the layer checks the candidates against the list of
    /// benched deployments, finds none of them there, and reads no state.
    Elsewhere,
    /// Every fourth deployment of the group: read, and a quarter dropped.
    Quarter,
}

impl Cooling {
    const ALL: [(&str, Cooling); 3] =
        [("none", Cooling::None), ("other group", Cooling::Elsewhere), ("quarter", Cooling::Quarter)];
}

/// The `CooldownLayer` alone over a provider that answers at once: resolving the group's
/// candidates and dropping those cooling down (the provider marks no deployment as served, so no
/// outcome is recorded after the call).
fn cooldown_filter(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
    let mut group = c.benchmark_group("cooldown_filter");
    for n in SIZES {
        for (name, cooling) in Cooling::ALL {
            let registry = registry(n);
            registry
                .add(Deployment::builder("other", "openai/gpt-4o").id("other").build().expect("valid"))
                .expect("new");
            let store = Arc::new(StateStore::memory());
            let benched: Vec<_> = match cooling {
                Cooling::None => Vec::new(),
                Cooling::Elsewhere => vec!["other".into()],
                Cooling::Quarter => (0..n).step_by(4).map(|i| format!("d{i}").into()).collect(),
            };
            for id in &benched {
                rt.block_on(store.bench(id, Duration::from_secs(3600), "bench".into(), Some(429), None));
            }
            let layer = CooldownLayer::new(registry.clone(), store, CooldownConfig::default());
            // Once, untimed: the filter leaves the expected candidates.
            let expected = n - if matches!(cooling, Cooling::Quarter) { benched.len() } else { 0 };
            let check = ServiceBuilder::new().layer(layer.clone()).service(service_fn(
                |req: http::Request<Bytes>| async move {
                    let left = req.route_ctx().and_then(|c| c.candidates.as_ref()).map_or(0, |c| c.len());
                    Ok::<_, BoxError>(http::Response::new(RouteBody::from(left.to_string())))
                },
            ));
            let answer = rt.block_on(async {
                let resp = check.oneshot(cooldown_request()).await.expect("served");
                http_body_util::BodyExt::collect(resp.into_body()).await.expect("body").to_bytes()
            });
            assert_eq!(answer, expected.to_string(), "candidates left by the cooldown filter ({name}, {n})");

            let provider = service_fn(|_req: http::Request<Bytes>| async {
                Ok::<_, BoxError>(http::Response::new(RouteBody::empty()))
            });
            let svc = ServiceBuilder::new().layer(layer).service(provider);
            group.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
                b.to_async(&rt).iter(|| {
                    let svc = svc.clone();
                    async move { drop(black_box(svc.oneshot(cooldown_request()).await.expect("served"))) }
                });
            });
        }
    }
    group.finish();
}

fn cooldown_request() -> http::Request<Bytes> {
    let mut req = http::Request::new(Bytes::from_static(b"{}"));
    req.extensions_mut().insert(RouteCtx::new("g"));
    req
}

criterion_group!(benches, strategy_picks, service_call, cooldown_filter);
criterion_main!(benches);
