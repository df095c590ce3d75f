//! A user-provided [`StoreBackend`]: a wrapper over the memory backend that counts the operations
//! the layers ask of it, under a whole routing stack. Every layer reaches shared state through
//! the backend (nothing goes around it), and the routing rules hold on it as on the built-in ones.

mod support;

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use support::*;
use switchyard_layers::{
    BoxError, DeploymentId, Outcome, RouteBody, RouteError, StateStore,
    retry::RetryConfig,
    stack::RoutingStack,
    state::{
        Admission, Bench, Bookkeeping, Cooldown, CooldownState, HealthRecord, LatencyConfig, Limits, MemoryBackend,
        OutcomeCounts, SpendState, StoreBackend, StoreConfig, StoreError, StoreFuture, WindowUsage,
    },
};
use tower::{ServiceBuilder, service_fn};

/// Operations asked of the backend, by name.
type Calls = Arc<Mutex<BTreeMap<&'static str, u64>>>;

/// The memory backend, counting what it is asked.
#[derive(Debug)]
struct Counting {
    inner: MemoryBackend,
    calls: Calls,
}

impl Counting {
    fn count(&self, op: &'static str) {
        *self.calls.lock().expect("not poisoned").entry(op).or_default() += 1;
    }
}

impl StoreBackend for Counting {
    fn name(&self) -> &'static str {
        "counting"
    }

    fn watch_cooldowns(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.watch_cooldowns()
    }

    fn cooldown_states<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<CooldownState>> {
        self.count("cooldown_states");
        self.inner.cooldown_states(ids)
    }

    fn may_have_cooldowns_among(&self, ids: &mut dyn Iterator<Item = &DeploymentId>) -> bool {
        self.count("may_have_cooldowns_among");
        self.inner.may_have_cooldowns_among(ids)
    }

    fn all_cooldowns(&self) -> StoreFuture<'_, Vec<(DeploymentId, CooldownState)>> {
        self.count("all_cooldowns");
        self.inner.all_cooldowns()
    }

    fn bench<'a>(&'a self, id: &'a DeploymentId, bench: Bench) -> StoreFuture<'a, Cooldown> {
        self.count("bench");
        self.inner.bench(id, bench)
    }

    fn claim_probe<'a>(&'a self, id: &'a DeploymentId, hold: Duration) -> StoreFuture<'a, bool> {
        self.count("claim_probe");
        self.inner.claim_probe(id, hold)
    }

    fn clear_cooldown<'a>(&'a self, id: &'a DeploymentId) -> StoreFuture<'a, bool> {
        self.count("clear_cooldown");
        self.inner.clear_cooldown(id)
    }

    fn record_outcome<'a>(&'a self, id: &'a DeploymentId, success: bool) -> StoreFuture<'a, OutcomeCounts> {
        self.count(if success { "record_outcome(success)" } else { "record_outcome(failure)" });
        self.inner.record_outcome(id, success)
    }

    fn usage<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<WindowUsage>> {
        self.count("usage");
        self.inner.usage(ids)
    }

    fn try_reserve<'a>(&'a self, id: &'a DeploymentId, limits: Limits, tokens: u64) -> StoreFuture<'a, Admission> {
        self.count("try_reserve");
        self.inner.try_reserve(id, limits, tokens)
    }

    fn room_in<'a>(&'a self, id: &'a DeploymentId, limits: Limits, tokens: u64) -> StoreFuture<'a, Duration> {
        self.count("room_in");
        self.inner.room_in(id, limits, tokens)
    }

    fn spends<'a>(&'a self, keys: &'a [&'a str]) -> StoreFuture<'a, Result<Vec<SpendState>, StoreError>> {
        self.count("spends");
        self.inner.spends(keys)
    }

    fn affinity<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<DeploymentId>> {
        self.count("affinity");
        self.inner.affinity(key)
    }

    fn set_affinity<'a>(&'a self, key: &'a str, id: &'a DeploymentId, ttl: Duration) -> StoreFuture<'a, ()> {
        self.count("set_affinity");
        self.inner.set_affinity(key, id, ttl)
    }

    fn run_bookkeeping(&self, work: Bookkeeping<'_>) {
        self.count(match &work {
            Bookkeeping::Success(_) => "bookkeeping(success)",
            Bookkeeping::Reconcile { .. } => "bookkeeping(reconcile)",
            Bookkeeping::Task(_) => "bookkeeping(task)",
            _ => "bookkeeping(other)",
        });
        self.inner.run_bookkeeping(work);
    }

    fn health<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<Option<HealthRecord>>> {
        self.count("health");
        self.inner.health(ids)
    }

    fn all_health(&self) -> StoreFuture<'_, Vec<(DeploymentId, HealthRecord)>> {
        self.count("all_health");
        self.inner.all_health()
    }

    fn record_health<'a>(&'a self, id: &'a DeploymentId, record: HealthRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        self.count("record_health");
        self.inner.record_health(id, record, ttl)
    }

    fn claim_health_lease<'a>(&'a self, id: &'a DeploymentId, hold: Duration) -> StoreFuture<'a, bool> {
        self.count("claim_health_lease");
        self.inner.claim_health_lease(id, hold)
    }
}

/// `a` answers 429, `b` serves: the first call that lands on `a` benches it (a 429 in a group of
/// two) and is retried on `b`; every call is served, and each layer's state went through the
/// custom backend: reservations (both have an RPM limit), the success count, and the cooldown
/// rules (an outcome and a bench, run as a bookkeeping task that calls the backend again).
#[tokio::test(start_paused = true)]
async fn a_user_provided_backend_serves_every_layer() {
    let calls = Calls::default();
    let backend = Counting { inner: MemoryBackend::new(StoreConfig::default()), calls: calls.clone() };
    let store = Arc::new(StateStore::with_backend(backend, LatencyConfig::default()));
    assert_eq!(store.backend_name(), "counting");
    let a = DeploymentId::from("a");
    let reg = registry([dep("g", "a").rpm(100), dep("g", "b").rpm(100)]);
    let provider = service_fn(|req: Req| async move {
        let id = selected_id(&req);
        if id == "a" {
            let err = RouteError::upstream(Outcome::RateLimited, DeploymentId::from("a"), "slow down")
                .with_upstream_response(http::StatusCode::TOO_MANY_REQUESTS, Bytes::from_static(b"{}"));
            return Err::<Resp, BoxError>(err.into());
        }
        Ok(http::Response::new(RouteBody::from(id)))
    });
    let stack =
        RoutingStack::builder(reg, store.clone()).seed(SEED).retry(RetryConfig::default().num_retries(2)).build();
    let mut svc = ServiceBuilder::new().layer(stack).service(provider);

    let mut served_by = Vec::new();
    for _ in 0..8 {
        served_by.push(serve(&mut svc, "g").await);
        if store.cooldowns(std::slice::from_ref(&a)).await[0].is_some() {
            break;
        }
    }
    assert!(served_by.iter().all(|d| d == "b"), "{served_by:?}");
    let cooldown = store.cooldowns(std::slice::from_ref(&a)).await[0].clone().expect("a is benched");
    assert_eq!(cooldown.status, Some(429));

    let calls = calls.lock().expect("not poisoned").clone();
    let n = |op: &str| calls.get(op).copied().unwrap_or(0);
    let attempts = served_by.len() as u64 + 1;
    assert_eq!(n("try_reserve"), attempts, "one reservation per attempt: {calls:?}");
    assert_eq!(n("bookkeeping(success)"), served_by.len() as u64, "{calls:?}");
    assert_eq!(n("bookkeeping(task)"), 1, "the cooldown rules after the 429: {calls:?}");
    assert_eq!(n("record_outcome(failure)"), 1, "{calls:?}");
    assert_eq!(n("bench"), 1, "{calls:?}");
    assert!(n("may_have_cooldowns_among") >= served_by.len() as u64, "{calls:?}");
}
