//! Health-check routing: the probe task's schedule (on a paused clock), the filter's staleness
//! rule and its fail-open, through the real routing stack.

mod support;

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use support::*;
use switchyard_layers::{
    DeploymentId, Registry, RouteCtx, StateStore,
    health::{HealthCheckConfig, HealthChecker, HealthConfig, ProbeFailure, Prober},
    stack::RoutingStack,
    state::HealthRecord,
};
use tower::ServiceBuilder;

/// Probes that fail for the deployments in `down`, counted per deployment.
#[derive(Clone, Default)]
struct Probes {
    calls: Arc<Mutex<BTreeMap<String, u32>>>,
    down: Arc<Mutex<Vec<String>>>,
    /// Each probe takes this long.
    latency: Duration,
}

impl Probes {
    fn down(&self, id: &str) {
        self.down.lock().unwrap().push(id.to_owned());
    }

    fn count(&self, id: &str) -> u32 {
        self.calls.lock().unwrap().get(id).copied().unwrap_or(0)
    }

    fn prober(&self) -> Arc<dyn Prober> {
        let this = self.clone();
        Arc::new(move |d: Arc<switchyard_layers::Deployment>| {
            let this = this.clone();
            async move {
                *this.calls.lock().unwrap().entry(d.id.to_string()).or_insert(0) += 1;
                tokio::time::sleep(this.latency).await;
                if this.down.lock().unwrap().contains(&d.id.to_string()) {
                    Err(ProbeFailure::new(Some(503), "service unavailable"))
                } else {
                    Ok(())
                }
            }
        })
    }
}

fn two_deployments() -> Arc<Registry> {
    registry([dep("gpt-4o", "a"), dep("gpt-4o", "b")])
}

/// Lets the spawned task run until it waits on the clock again.
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

async fn healthy(store: &StateStore, id: &str) -> Option<bool> {
    store.health(&[DeploymentId::from(id)]).await[0].as_ref().map(|r| r.healthy)
}

#[tokio::test(start_paused = true)]
async fn each_deployment_is_probed_once_per_interval() {
    let (registry, store, probes) = (two_deployments(), Arc::new(StateStore::memory()), Probes::default());
    probes.down("b");
    let config = HealthCheckConfig::new().interval(Duration::from_secs(60)).jitter(0.0);
    let checker = HealthChecker::spawn(registry, store.clone(), config, probes.prober()).unwrap();
    settle().await;
    assert_eq!((probes.count("a"), probes.count("b")), (1, 1), "the first round starts at once");
    assert_eq!(healthy(&store, "a").await, Some(true));
    assert_eq!(healthy(&store, "b").await, Some(false));
    tokio::time::advance(Duration::from_secs(59)).await;
    settle().await;
    assert_eq!(probes.count("a"), 1, "not before the interval");
    tokio::time::advance(Duration::from_secs(1)).await;
    settle().await;
    assert_eq!((probes.count("a"), probes.count("b")), (2, 2));
    checker.stop();
    tokio::time::advance(Duration::from_secs(600)).await;
    settle().await;
    assert_eq!(probes.count("a"), 2, "a stopped checker probes no more");
}

#[tokio::test(start_paused = true)]
async fn rounds_are_jittered_reproducibly_within_the_bound() {
    let run = |seed: u64| async move {
        let (registry, store, probes) = (two_deployments(), Arc::new(StateStore::memory()), Probes::default());
        let config = HealthCheckConfig::new().interval(Duration::from_secs(100)).jitter(0.2).seed(seed);
        let _checker = HealthChecker::spawn(registry, store, config, probes.prober()).unwrap();
        let mut rounds_at = Vec::new();
        for second in 0..1000u64 {
            settle().await;
            if probes.count("a") as usize > rounds_at.len() {
                rounds_at.push(second);
            }
            tokio::time::advance(Duration::from_secs(1)).await;
        }
        rounds_at
    };
    let first = run(7).await;
    assert_eq!(first, run(7).await, "one seed, one schedule");
    for pair in first.windows(2) {
        let gap = pair[1] - pair[0];
        assert!((80..=121).contains(&gap), "gap {gap} s outside 100 s ± 20 %: {first:?}");
    }
    assert!(first.windows(2).any(|p| p[1] - p[0] != 100), "jittered: {first:?}");
}

#[tokio::test(start_paused = true)]
async fn in_flight_probes_are_bounded_and_slow_ones_time_out() {
    let ids: Vec<String> = (0..10).map(|i| format!("d{i}")).collect();
    let registry = registry(ids.iter().map(|id| dep("g", id)));
    let store = Arc::new(StateStore::memory());
    let in_flight = Arc::new(AtomicU32::new(0));
    let peak = Arc::new(AtomicU32::new(0));
    let prober: Arc<dyn Prober> = {
        let (in_flight, peak) = (in_flight.clone(), peak.clone());
        Arc::new(move |d: Arc<switchyard_layers::Deployment>| {
            let (in_flight, peak) = (in_flight.clone(), peak.clone());
            async move {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                // `d9` hangs past its timeout.
                let wait = if d.id.as_str() == "d9" { Duration::from_secs(3600) } else { Duration::from_secs(1) };
                tokio::time::sleep(wait).await;
                in_flight.fetch_sub(1, Ordering::SeqCst);
                Ok(())
            }
        })
    };
    let config = HealthCheckConfig::new().concurrency(3).timeout(Duration::from_secs(5)).jitter(0.0);
    let _checker = HealthChecker::spawn(registry, store.clone(), config, prober).unwrap();
    for _ in 0..20 {
        settle().await;
        tokio::time::advance(Duration::from_secs(1)).await;
    }
    assert_eq!(peak.load(Ordering::SeqCst), 3);
    let d9 = store.health(&[DeploymentId::from("d9")]).await[0].clone().unwrap();
    assert!(!d9.healthy);
    assert!(d9.reason.contains("timed out"), "{}", d9.reason);
    assert_eq!(healthy(&store, "d0").await, Some(true));
}

/// Sends `calls` requests for `gpt-4o` through the default stack with `health`, over a provider
/// that echoes the deployment; who served how many.
async fn served_by(registry: &Arc<Registry>, store: &Arc<StateStore>, health: HealthConfig, calls: usize) -> Tally {
    let stack = RoutingStack::builder(registry.clone(), store.clone()).seed(SEED).health(health).build();
    let mut svc = ServiceBuilder::new().layer(stack).service(echo());
    let mut tally = Tally::default();
    for _ in 0..calls {
        let res = call(&mut svc, request("gpt-4o")).await.expect("served");
        tally.add(&served(&res).deployment.to_string());
    }
    tally
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Tally(BTreeMap<String, u32>);

impl Tally {
    fn add(&mut self, id: &str) {
        *self.0.entry(id.to_owned()).or_insert(0) += 1;
    }

    fn of(&self, id: &str) -> u32 {
        self.0.get(id).copied().unwrap_or(0)
    }
}

async fn mark(store: &StateStore, id: &str, healthy: bool) {
    let record = HealthRecord::new(healthy, Duration::from_millis(20), (!healthy).then_some(503), "probe");
    store.record_health(&DeploymentId::from(id), record, Duration::from_secs(900)).await;
}

#[tokio::test(start_paused = true)]
async fn an_unhealthy_deployment_gets_no_traffic() {
    let (registry, store) = (two_deployments(), Arc::new(StateStore::memory()));
    mark(&store, "a", false).await;
    let tally = served_by(&registry, &store, HealthConfig::new(), 50).await;
    assert_eq!((tally.of("a"), tally.of("b")), (0, 50));
}

#[tokio::test(start_paused = true)]
async fn the_filter_is_off_unless_enabled() {
    let (registry, store) = (two_deployments(), Arc::new(StateStore::memory()));
    mark(&store, "a", false).await;
    let tally = served_by(&registry, &store, HealthConfig::disabled(), 50).await;
    assert!(tally.of("a") > 0, "{tally:?}");
}

#[tokio::test(start_paused = true)]
async fn a_stale_record_is_ignored() {
    let (registry, store) = (two_deployments(), Arc::new(StateStore::memory()));
    mark(&store, "a", false).await;
    let config = HealthConfig::new().staleness(Duration::from_secs(120));
    tokio::time::advance(Duration::from_secs(119)).await;
    assert_eq!(served_by(&registry, &store, config.clone(), 20).await.of("a"), 0, "still fresh");
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(served_by(&registry, &store, config, 50).await.of("a") > 0, "stale: unknown health routes as healthy");
}

#[tokio::test(start_paused = true)]
async fn a_healthy_verdict_readmits_at_once() {
    let (registry, store) = (two_deployments(), Arc::new(StateStore::memory()));
    mark(&store, "a", false).await;
    tokio::time::advance(Duration::from_secs(1)).await;
    mark(&store, "a", true).await;
    assert!(served_by(&registry, &store, HealthConfig::new(), 50).await.of("a") > 0);
}

#[tokio::test(start_paused = true)]
async fn when_every_candidate_is_unhealthy_the_filter_fails_open_and_the_trail_says_so() {
    let (registry, store) = (two_deployments(), Arc::new(StateStore::memory()));
    mark(&store, "a", false).await;
    mark(&store, "b", false).await;
    let stack = RoutingStack::builder(registry.clone(), store.clone()).seed(SEED).health(HealthConfig::new()).build();
    let mut svc = ServiceBuilder::new().layer(stack).service(echo());
    let ctx = RouteCtx::new("gpt-4o");
    let trail = ctx.call_trail();
    let res = call(&mut svc, with_ctx(ctx)).await.expect("served although every deployment is unhealthy");
    assert!(["a", "b"].contains(&served(&res).deployment.as_str()));
    assert_eq!(trail.health_fail_open(), vec![Arc::<str>::from("gpt-4o")]);
}

#[tokio::test(start_paused = true)]
async fn only_the_listed_groups_are_filtered() {
    let registry = registry([dep("gpt-4o", "a"), dep("gpt-4o", "b")]);
    let store = Arc::new(StateStore::memory());
    mark(&store, "a", false).await;
    let tally = served_by(&registry, &store, HealthConfig::new().groups(["claude"]), 50).await;
    assert!(tally.of("a") > 0, "gpt-4o is not in the list: {tally:?}");
}

#[tokio::test(start_paused = true)]
async fn probes_feed_the_filter_after_the_first_round() {
    let (registry, store, probes) = (two_deployments(), Arc::new(StateStore::memory()), Probes::default());
    probes.down("a");
    let config = HealthCheckConfig::new().interval(Duration::from_secs(30)).jitter(0.0);
    let _checker = HealthChecker::spawn(registry.clone(), store.clone(), config, probes.prober()).unwrap();
    settle().await;
    let tally = served_by(&registry, &store, HealthConfig::new().staleness(Duration::from_secs(60)), 40).await;
    assert_eq!(tally.of("a"), 0, "{tally:?}");
    assert_eq!(probes.count("a"), 1);
}
