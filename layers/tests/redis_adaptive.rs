//! The adaptive pre-router's posteriors shared through Redis: three replicas (each its own store
//! and router) on one throwaway `redis-server` learn from each other's feedback, the script's
//! decay and cap match the memory backend's rule, and a replica keeps routing on what it learned
//! itself when Redis is gone.
#![cfg(feature = "redis")]

#[path = "support/redis.rs"]
mod redis_support;

use std::{sync::Arc, time::Duration};

use redis_support::RedisServer;
use switchyard_layers::{
    StateStore,
    preroute::adaptive::{
        AdaptiveCandidate, AdaptivePreferences, AdaptiveRouter, AdaptiveRouterConfig, AdaptiveSnapshot, Feedback,
        RequestClass,
    },
    state::{BanditDecay, RedisConfig},
};

static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

async fn stores(server: &RedisServer, n: usize) -> Vec<Arc<StateStore>> {
    let ns = format!("b{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let mut out = Vec::new();
    for _ in 0..n {
        let config = RedisConfig::new(server.url()).namespace(&ns).response_timeout(Duration::from_secs(5));
        let s = Arc::new(StateStore::redis(config).unwrap());
        tokio::time::timeout(Duration::from_secs(10), s.ready()).await.expect("connected to the test's redis");
        out.push(s);
    }
    out
}

fn router(store: &Arc<StateStore>, seed: u64) -> AdaptiveRouter {
    AdaptiveRouter::new(
        "smart",
        AdaptiveRouterConfig::new(["a", "b"]),
        [
            AdaptiveCandidate::new("a", AdaptivePreferences::new(2)).with_input_cost(Some(1e-6)),
            AdaptiveCandidate::new("b", AdaptivePreferences::new(2)).with_input_cost(Some(1e-6)),
        ],
        store.clone(),
        Some(seed),
    )
    .expect("a valid router")
}

fn cell(s: &AdaptiveSnapshot, class: &str, model: &str) -> (f64, f64) {
    let c = s.cells.iter().find(|c| c.request_type == class && c.model == model).expect("the cell");
    (c.alpha, c.beta)
}

fn close(a: (f64, f64), b: (f64, f64)) -> bool {
    (a.0 - b.0).abs() < 1e-3 && (a.1 - b.1).abs() < 1e-3
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_learn_from_each_others_feedback() {
    let server = RedisServer::start();
    let stores = stores(&server, 3).await;
    let routers: Vec<AdaptiveRouter> = stores.iter().enumerate().map(|(i, s)| router(s, i as u64)).collect();
    for i in 0..12 {
        let r = &routers[i % 3];
        r.feedback(RequestClass::CodeGeneration, "a", Feedback::Score(1.0)).expect("applies");
        r.feedback(RequestClass::CodeGeneration, "b", Feedback::Score(0.0)).expect("applies");
    }
    for s in &stores {
        s.flush().await;
    }
    for r in &routers {
        r.sync().await;
        let snap = r.snapshot();
        assert!(close(cell(&snap, "code_generation", "a"), (17.0, 5.0)), "{:?}", cell(&snap, "code_generation", "a"));
        assert!(close(cell(&snap, "code_generation", "b"), (5.0, 17.0)), "{:?}", cell(&snap, "code_generation", "b"));
        assert!(close(cell(&snap, "general", "a"), (5.0, 5.0)));
    }
    // A router built after a reload (or on a new replica) reads the shared posteriors.
    let late = router(&stores[0], 9);
    late.sync().await;
    assert!(close(cell(&late.snapshot(), "code_generation", "a"), (17.0, 5.0)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_script_caps_and_decays_as_the_memory_backend_does() {
    let server = RedisServer::start();
    let stores = stores(&server, 1).await;
    let redis = &stores[0];
    let memory = StateStore::memory();
    let capped = BanditDecay::new(Duration::ZERO, 20.0);
    for store in [&**redis, &memory] {
        for _ in 0..30 {
            store.bandit_add("r", "general|a", 0.75, 0.25, capped).await;
        }
    }
    redis.flush().await;
    let (from_redis, from_memory) =
        (redis.bandit_cells("r").await.expect("cells"), memory.bandit_cells("r").await.expect("cells"));
    let (e, m) = (from_redis[0].1, from_memory[0].1);
    assert!((e.successes - 15.0).abs() < 1e-9 && (e.failures - 5.0).abs() < 1e-9, "{e:?}");
    assert!((e.successes - m.successes).abs() < 1e-9 && (e.failures - m.failures).abs() < 1e-9);
    // A 200 ms half-life on the server's clock: after about a second, little is left.
    let fast = BanditDecay::new(Duration::from_millis(200), 0.0);
    redis.bandit_add("r", "general|b", 8.0, 8.0, fast).await;
    redis.flush().await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let cells = redis.bandit_cells("r").await.expect("cells");
    let b = cells.iter().find(|(k, _)| k == "general|b").expect("the cell").1;
    assert!(b.age >= Duration::from_millis(900), "{b:?}");
    let now = b.decayed(fast);
    assert!(now.successes < 0.5 && now.failures < 0.5, "{now:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_redis_a_replica_learns_on_its_own() {
    let mut server = RedisServer::start();
    let stores = stores(&server, 1).await;
    let r = router(&stores[0], 1);
    server.kill();
    for _ in 0..5 {
        r.feedback(RequestClass::Writing, "a", Feedback::Score(1.0)).expect("applies");
    }
    stores[0].flush().await;
    // The write failed (Redis is gone) or was kept locally; either way the router still knows.
    r.sync().await;
    assert!(close(cell(&r.snapshot(), "writing", "a"), (10.0, 5.0)), "{:?}", cell(&r.snapshot(), "writing", "a"));
}
