//! Several routers (gateway replicas) sharing one Redis, through the whole default stack: exact
//! shared limits, at most one Redis round trip per attempt, cooldowns set by one replica honoured
//! by the others, and no failed request while Redis is down.
#![cfg(feature = "redis")]

#[path = "../layers/tests/support/redis.rs"]
mod redis_support;

use std::{sync::Arc, time::Duration};

use redis_support::RedisServer;
use switchyard::{
    Config, RouteErrorKind, Router,
    layers::{
        StateStore,
        state::{CooldownState, RedisConfig},
    },
    services::{
        openai::{ChatMessage, ChatRequest},
        profile::{Failure, Latency},
        sim::{SimProfile, SimProvider},
    },
};

const CONFIG: &str = r#"
model_list:
  - model_name: limited
    litellm_params: { model: openai/gpt-4o, rpm: 100 }
    model_info: { id: limited-1 }
  - model_name: open
    litellm_params: { model: openai/gpt-4o }
    model_info: { id: open-1 }
  - model_name: open
    litellm_params: { model: openai/gpt-4o }
    model_info: { id: open-2 }
  - model_name: pair
    litellm_params: { model: openai/gpt-4o, rpm: 1000000 }
    model_info: { id: pair-ok }
  - model_name: pair
    litellm_params: { model: openai/gpt-4o, rpm: 1000000 }
    model_info: { id: pair-bad }
router_settings:
  num_retries: 2
  allowed_fails: 0
  cooldown_time: 60
  enforce_rate_limits: true
"#;

fn sim() -> SimProvider {
    let fast = SimProfile::builder().latency(Latency::ZERO).ttft(Latency::ZERO).chunk_interval(Latency::ZERO);
    let bad = fast.clone().error_latency(Latency::ZERO).fail(Failure::InternalError, 1.0);
    SimProvider::new(7).default_profile(fast.build().unwrap()).profile("pair-bad", bad.build().unwrap())
}

fn hello(model: &str) -> ChatRequest {
    ChatRequest::new(model, vec![ChatMessage::user("hello")])
}

/// `n` routers with their own stores on one Redis namespace: `n` replicas of one gateway.
async fn replicas(server: &RedisServer, namespace: &str, n: usize) -> Vec<(Router, Arc<StateStore>)> {
    let config = Config::from_yaml_str(CONFIG).unwrap();
    let mut out = Vec::new();
    for i in 0..n {
        let redis = RedisConfig::new(server.url())
            .namespace(namespace)
            .connect_timeout(Duration::from_millis(300))
            // Generous: on a loaded CI machine a timeout would route on local state (the degraded
            // mode), and these tests are about the shared state.
            .response_timeout(Duration::from_secs(5));
        let store = Arc::new(StateStore::redis(redis).unwrap());
        tokio::time::timeout(Duration::from_secs(10), store.ready()).await.expect("connected");
        let router = Router::builder(&config).store(store.clone()).seed(i as u64).build(sim()).unwrap();
        out.push((router, store));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_serve_exactly_the_shared_rpm() {
    let server = RedisServer::start();
    let replicas = Arc::new(replicas(&server, "exact", 3).await);
    let calls = (0..1000).map(|i| {
        let replicas = replicas.clone();
        tokio::spawn(async move { replicas[i % 3].0.chat(hello("limited")).await })
    });
    let (mut served, mut limited) = (0, 0);
    for r in futures_util::future::join_all(calls).await {
        match r.unwrap() {
            Ok(_) => served += 1,
            Err(e) => {
                assert_eq!(e.kind(), RouteErrorKind::RateLimited, "{e}");
                assert!(e.retry_after().is_some(), "a refusal says when the window has room");
                limited += 1;
            }
        }
    }
    assert_eq!((served, limited), (100, 900));
    for (_, store) in replicas.iter() {
        assert!(!store.is_degraded(), "every reservation went to Redis");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_costs_at_most_one_redis_round_trip() {
    let server = RedisServer::start();
    let replicas = replicas(&server, "round-trips", 1).await;
    let (router, store) = &replicas[0];
    // Warm up (loads the scripts).
    router.chat(hello("limited")).await.unwrap();
    store.flush().await;

    let n = 50;
    let before = store.redis_stats().unwrap();
    for _ in 0..n {
        router.chat(hello("open")).await.unwrap();
    }
    let after = store.redis_stats().unwrap();
    assert_eq!(after.request_round_trips - before.request_round_trips, 0, "no limit: nothing to reserve");

    let before = after;
    for _ in 0..n {
        router.chat(hello("limited")).await.unwrap();
    }
    let after = store.redis_stats().unwrap();
    assert_eq!(after.request_round_trips - before.request_round_trips, n, "one reservation per attempt");

    // Failing attempts too: the reservation is the only round trip; the cooldown rules run on the
    // background writer.
    let before = store.redis_stats().unwrap();
    let mut attempts = 0;
    for _ in 0..20 {
        let answer = router.chat(hello("pair")).await.unwrap();
        attempts += answer.served.attempts;
    }
    store.flush().await;
    let after = store.redis_stats().unwrap();
    assert_eq!(after.request_round_trips - before.request_round_trips, u64::from(attempts));
    assert!(after.background_round_trips > before.background_round_trips, "bookkeeping went to the writer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_benched_by_one_replica_is_avoided_by_the_others() {
    let server = RedisServer::start();
    let replicas = replicas(&server, "bench", 3).await;
    // Each replica has read the group once (as every attempt does).
    for (router, _) in &replicas {
        router.chat(hello("pair")).await.unwrap();
    }
    // Replica 0 benches the failing deployment (allowed_fails: 0).
    for _ in 0..10 {
        replicas[0].0.chat(hello("pair")).await.unwrap();
    }
    replicas[0].1.flush().await;
    let bad = switchyard::layers::DeploymentId::from("pair-bad");
    for (_, store) in &replicas {
        let mut changes = store.watch_cooldowns();
        loop {
            let state = store.cooldown_states(std::slice::from_ref(&bad)).await.remove(0);
            if matches!(state, CooldownState::CoolingDown(_)) {
                break;
            }
            tokio::time::timeout(Duration::from_secs(5), changes.changed()).await.expect("propagated").unwrap();
        }
    }
    // The other replicas now go straight to the healthy deployment.
    for (router, _) in &replicas[1..] {
        for _ in 0..20 {
            let answer = router.chat(hello("pair")).await.unwrap();
            assert_eq!(answer.served.deployment.as_str(), "pair-ok");
            assert_eq!(answer.served.attempts, 1, "no attempt on the benched deployment");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_fails_while_redis_is_killed_and_restarted_under_load() {
    let mut server = RedisServer::start();
    let replicas = Arc::new(replicas(&server, "outage", 2).await);
    let (served_tx, mut served) = tokio::sync::watch::channel(0u64);
    let served_tx = Arc::new(served_tx);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Four clients keep both replicas busy the whole time, on a limited and an open group.
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let (replicas, served_tx, stop) = (replicas.clone(), served_tx.clone(), stop.clone());
            tokio::spawn(async move {
                let mut i = 0usize;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let model = if (c + i).is_multiple_of(2) { "open" } else { "pair" };
                    replicas[(c + i) % 2].0.chat(hello(model)).await.expect("served, whatever Redis does");
                    served_tx.send_modify(|n| *n += 1);
                    i += 1;
                }
            })
        })
        .collect();
    async fn until(served: &mut tokio::sync::watch::Receiver<u64>, n: u64) {
        let target = *served.borrow() + n;
        tokio::time::timeout(Duration::from_secs(20), served.wait_for(|s| *s >= target))
            .await
            .expect("requests keep being served")
            .unwrap();
    }
    until(&mut served, 200).await;
    server.kill();
    until(&mut served, 400).await;
    assert!(replicas.iter().all(|(_, s)| s.is_degraded()), "both replicas noticed the outage");
    server.restart();
    for (_, store) in replicas.iter() {
        tokio::time::timeout(Duration::from_secs(10), store.ready()).await.expect("reconnected");
    }
    until(&mut served, 200).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for c in clients {
        c.await.expect("no client saw a failure");
    }
    assert!(replicas.iter().all(|(_, s)| !s.is_degraded()));
}

#[cfg(feature = "gateway")]
/// The gateway built from a LiteLLM config with `redis_url`: it starts while Redis is down,
/// serves, and says in its readiness answer that it runs on local state until Redis answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_reports_the_degraded_mode_and_keeps_serving() {
    use axum::body::Body;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    let mut server = RedisServer::start();
    server.kill();
    let yaml = format!("{CONFIG}  redis_url: {}\n  redis_namespace: gw\n  redis_response_timeout: 0.2\n", server.url());
    let config = Config::from_yaml_str(&yaml).unwrap();
    let gateway = switchyard::gateway::Gateway::builder(config).provider(sim()).build().unwrap();
    let readiness = || async {
        let req = http::Request::get("/health/readiness").body(Body::empty()).unwrap();
        let resp = gateway.router().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), http::StatusCode::OK, "a degraded store keeps the gateway ready");
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice::<serde_json::Value>(&body).unwrap()
    };
    let v = readiness().await;
    assert_eq!(v["state"], serde_json::json!({ "backend": "redis", "degraded": true }));
    let chat = || {
        let body = serde_json::json!({ "model": "open", "messages": [{ "role": "user", "content": "hi" }] });
        http::Request::post("/v1/chat/completions")
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap()
    };
    assert_eq!(gateway.router().oneshot(chat()).await.unwrap().status(), http::StatusCode::OK);

    server.restart();
    tokio::time::timeout(Duration::from_secs(10), gateway.routing().store().ready()).await.expect("connected");
    assert_eq!(readiness().await["state"]["degraded"], false);
    assert_eq!(gateway.router().oneshot(chat()).await.unwrap().status(), http::StatusCode::OK);
}

/// Successes are bookkeeping the answer does not wait for: a replica sums them per deployment and
/// records them once per tick. `flush` records the sums at once (what a gateway does on shutdown),
/// so another replica's outcome read counts every one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_successes_reach_redis_on_flush() {
    let server = RedisServer::start();
    let replicas = replicas(&server, "successes", 2).await;
    let (router, store) = &replicas[0];
    for _ in 0..25 {
        router.chat(hello("limited")).await.unwrap();
    }
    store.flush().await;
    let counts = replicas[1].1.record_outcome(&"limited-1".into(), false).await;
    assert_eq!((counts.successes, counts.failures), (25, 1), "the other replica sees all 25 successes");
    assert!(!store.is_degraded());
}
