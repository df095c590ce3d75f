//! Added time per call of the whole default stack (`Router::from_config`: fallback, retry,
//! cooldown, select over the memory store) against the bare provider, in the same run.
//!
//! Eight deployments of one group, weighted, no limits (the common case); the provider answers at
//! once, so the difference between the two benchmarks is what the routing stack costs.
//!
//! ```text
//! cargo bench --bench stack -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use std::sync::Arc;

use switchyard::{
    Config, RouteBody, RouteCtx, Router, StateStore,
    layers::{
        BoxError, Registry,
        cooldown::{CooldownConfig, CooldownLayer},
        retry::{RetryConfig, RetryLayer},
        select::{RoutingStrategy, SelectLayer},
    },
};
use tower::{ServiceBuilder, ServiceExt, service_fn, util::BoxCloneSyncService};

fn config() -> Config {
    let mut yaml = String::from("model_list:\n");
    for i in 0..8 {
        yaml.push_str(&format!(
            "  - model_name: gpt-4o\n    litellm_params: {{ model: openai/gpt-4o-{i}, weight: {} }}\n    model_info: {{ id: d{i} }}\n",
            i % 4 + 1
        ));
    }
    yaml.push_str("  - model_name: gpt-4o-mini\n    litellm_params: { model: openai/gpt-4o-mini }\n");
    yaml.push_str("router_settings:\n  fallbacks: [{ gpt-4o: [gpt-4o-mini] }]\n");
    Config::from_yaml_str(&yaml).expect("valid bench config")
}

/// A stack as a type-erased service.
type Stack = BoxCloneSyncService<http::Request<Bytes>, http::Response<RouteBody>, BoxError>;

fn request() -> http::Request<Bytes> {
    let mut req = http::Request::new(Bytes::from_static(br#"{"model":"gpt-4o","messages":[]}"#));
    req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
    req
}

fn stack(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
    let provider =
        service_fn(|_req: http::Request<Bytes>| async { Ok::<_, BoxError>(http::Response::new(RouteBody::empty())) });
    let router = Router::builder(&config()).seed(1).build(provider).expect("router");
    let service = router.service();

    let mut group = c.benchmark_group("call");
    group.bench_function("bare provider", |b| {
        b.to_async(&rt).iter(|| {
            let p = provider;
            async move { black_box(p.oneshot(request()).await.expect("ok")) }
        });
    });
    // The stack built up one layer at a time, to attribute the cost.
    let registry = Arc::new(Registry::with_deployments(config().deployments).expect("registry"));
    let store = Arc::new(StateStore::memory());
    let select = SelectLayer::new(registry.clone(), store.clone(), RoutingStrategy::SimpleShuffle.build()).with_seed(1);
    let cooldown = CooldownLayer::new(registry.clone(), store.clone(), CooldownConfig::default());
    let retry = RetryLayer::new(registry.clone(), store.clone(), RetryConfig::default()).with_seed(2);
    let partial: [(&str, Stack); 3] = [
        ("select", BoxCloneSyncService::new(ServiceBuilder::new().layer(select.clone()).service(provider))),
        (
            "cooldown + select",
            BoxCloneSyncService::new(
                ServiceBuilder::new().layer(cooldown.clone()).layer(select.clone()).service(provider),
            ),
        ),
        (
            "retry + cooldown + select",
            BoxCloneSyncService::new(
                ServiceBuilder::new().layer(retry).layer(cooldown).layer(select).service(provider),
            ),
        ),
    ];
    for (name, svc) in partial {
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| {
                let s = svc.clone();
                async move { black_box(s.oneshot(request()).await.expect("ok")) }
            });
        });
    }
    group.bench_function("default stack, 8 deployments", |b| {
        b.to_async(&rt).iter(|| {
            let s = service.clone();
            async move { black_box(s.oneshot(request()).await.expect("ok")) }
        });
    });
    group.finish();
}

criterion_group!(benches, stack);
criterion_main!(benches);
