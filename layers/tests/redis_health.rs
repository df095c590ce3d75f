//! Health-check state shared through Redis: three stores (replicas) on one throwaway
//! `redis-server` see each other's probe verdicts, the newest verdict wins, and the probe lease
//! makes one replica probe each deployment per interval.
#![cfg(feature = "redis")]

#[path = "support/redis.rs"]
mod redis_support;

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use redis_support::RedisServer;
use switchyard_layers::{
    Deployment, DeploymentId, Registry, StateStore,
    health::{HealthCheckConfig, HealthChecker, ProbeFailure, Prober},
    state::{HealthRecord, RedisConfig},
};
use tokio::time::Instant;

static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Three connected stores sharing one fresh namespace.
async fn replicas(server: &RedisServer, name: &str) -> Vec<Arc<StateStore>> {
    let ns = format!("h{}-{name}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let mut out = Vec::new();
    for _ in 0..3 {
        let config = RedisConfig::new(server.url()).namespace(&ns).response_timeout(Duration::from_secs(5));
        let s = Arc::new(StateStore::redis(config).unwrap());
        tokio::time::timeout(Duration::from_secs(10), s.ready()).await.expect("connected to the test's redis");
        out.push(s);
    }
    out
}

async fn verdict(store: &StateStore, id: &DeploymentId) -> Option<HealthRecord> {
    store.refresh_health(std::slice::from_ref(id)).await;
    store.health(std::slice::from_ref(id)).await.remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_replica_reads_the_verdict_one_stored_and_the_newest_wins() {
    let server = RedisServer::start();
    let stores = replicas(&server, "share").await;
    let id = DeploymentId::from("azure-eu");
    let ttl = Duration::from_secs(900);
    let failed = HealthRecord::new(false, Duration::from_millis(42), Some(503), "503 Service Unavailable");
    stores[0].record_health(&id, failed, ttl).await;
    for s in &stores[1..] {
        let seen = verdict(s, &id).await.expect("the other replicas read it");
        assert!(!seen.healthy);
        assert_eq!(seen.status, Some(503));
        assert_eq!(seen.latency, Duration::from_millis(42));
        assert_eq!(&*seen.reason, "503 Service Unavailable");
        assert!(seen.age(Instant::now()) < Duration::from_secs(2), "placed by its age on the server's clock");
    }
    assert!(stores[1].may_have_unhealthy());
    // A newer verdict from another replica replaces it everywhere...
    stores[1].record_health(&id, HealthRecord::new(true, Duration::from_millis(30), None, ""), ttl).await;
    assert!(verdict(&stores[2], &id).await.unwrap().healthy);
    // ...and an older one does not.
    let stale =
        HealthRecord::new(false, Duration::ZERO, Some(500), "late").at(Instant::now() - Duration::from_secs(60));
    stores[0].record_health(&id, stale, ttl).await;
    assert!(verdict(&stores[2], &id).await.unwrap().healthy);
    // Every key has a TTL.
    let keys = server.command(&["KEYS", "*health*"]);
    for key in keys.lines().filter(|k| !k.is_empty()) {
        let pttl: i64 = server.command(&["PTTL", key]).trim().parse().unwrap_or(-1);
        assert!(pttl > 0, "{key} has no TTL");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_holds_a_deployments_probe_lease() {
    let server = RedisServer::start();
    let stores = replicas(&server, "lease").await;
    let id = DeploymentId::from("d");
    let hold = Duration::from_millis(300);
    let claims = futures_util::future::join_all(stores.iter().map(|s| s.claim_health_lease(&id, hold))).await;
    assert_eq!(claims.iter().filter(|c| **c).count(), 1, "{claims:?}");
    // Once the hold lapses, someone may take it again (waits on the lease, bounded).
    let started = Instant::now();
    loop {
        if stores[2].claim_health_lease(&id, hold).await {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "the lease never lapsed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(started.elapsed() >= Duration::from_millis(200));
}

/// Three checkers (one per replica) over five deployments, `d3` failing: every replica comes to
/// see `d3` unhealthy, and each deployment is probed about once per interval by the whole fleet,
/// not three times.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_probe_each_deployment_once_per_interval() {
    let server = RedisServer::start();
    let stores = replicas(&server, "fleet").await;
    let registry = Arc::new(Registry::new());
    for i in 0..5 {
        registry.add(Deployment::builder("g", format!("openai/m{i}")).id(format!("d{i}")).build().unwrap()).unwrap();
    }
    let calls: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
    let prober: Arc<dyn Prober> = {
        let calls = calls.clone();
        Arc::new(move |d: Arc<Deployment>| {
            let calls = calls.clone();
            async move {
                *calls.lock().unwrap().entry(d.id.to_string()).or_insert(0) += 1;
                if d.id.as_str() == "d3" { Err(ProbeFailure::new(Some(500), "boom")) } else { Ok(()) }
            }
        })
    };
    let interval = Duration::from_secs(2);
    let config = HealthCheckConfig::new().interval(interval).jitter(0.0);
    let started = Instant::now();
    let checkers: Vec<_> = stores
        .iter()
        .map(|s| HealthChecker::spawn(registry.clone(), s.clone(), config.clone(), prober.clone()).unwrap())
        .collect();
    let d3 = DeploymentId::from("d3");
    for s in &stores {
        loop {
            if s.health(std::slice::from_ref(&d3)).await[0].as_ref().is_some_and(|r| !r.healthy) {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(20), "a replica never saw d3's verdict");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let elapsed = started.elapsed();
    drop(checkers);
    let calls = calls.lock().unwrap().clone();
    // One lease per deployment per hold (90 % of the interval): at most one probe per hold
    // elapsed, plus the first.
    let bound = (elapsed.as_secs_f64() / config.lease_hold().as_secs_f64()).ceil() as u32 + 1;
    for i in 0..5 {
        let n = calls.get(&format!("d{i}")).copied().unwrap_or(0);
        assert!((1..=bound).contains(&n), "d{i} probed {n} times in {elapsed:?} (bound {bound}): {calls:?}");
    }
    let total: u32 = calls.values().sum();
    assert!(total < 3 * 5 * bound.max(1), "the fleet probed as if each replica probed alone: {calls:?}");
}
