//! Reliability under faults, sized for CI (seconds each): the gateway on a loopback port, the
//! HTTP provider, and mock upstreams that misbehave on purpose. Upstream faults before the first
//! content chunk fall back; after it, the stream ends with one error event; none outlives its
//! timeout. Cancelled requests and streams give back their parallel slots and token estimates.
//! Hostile and slow clients get typed answers. Redis killed, slowed and flushed under load fails
//! no request. A short soak leaves nothing in flight. The long runs (100k soak, three gateway
//! processes) are in `tests/reliability_long.rs`; results in `docs/reliability.md`.
#![cfg(feature = "gateway")]

#[cfg(feature = "redis")]
#[path = "../layers/tests/support/redis.rs"]
mod redis_support;
#[path = "support/reliability.rs"]
mod reliability_support;

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use http::StatusCode;
use http_body_util::BodyExt;
use rand::{Rng, SeedableRng, rngs::StdRng};
use reliability_support::{Fleet, Kind, PATIENCE, Served, chat_body, client, drained, post, post_raw, send};
use switchyard::{
    layers::DeploymentId,
    services::{
        mock::{MockHandle, MockProfile, MockUpstream},
        profile::{Failure, Latency},
    },
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn mock(profile: MockProfile) -> MockHandle {
    MockUpstream::start(profile).expect("mock upstream")
}

fn profile(b: switchyard::services::mock::MockProfileBuilder) -> MockProfile {
    b.build().expect("valid profile")
}

/// One deployment entry: group `name`, id `name`, at `base`, with `extra` litellm_params.
fn entry(name: &str, base: &str, extra: &str) -> String {
    format!(
        "  - model_name: {name}\n    litellm_params: {{ model: openai/m-{name}, api_base: \"{base}\", api_key: sk-mock{extra} }}\n    model_info: {{ id: {name} }}\n"
    )
}

/// The per-attempt timeout of the faulty deployments (whole answer, first chunk, gap).
const FAULT_TIMEOUT: f64 = 0.5;
/// What "does not hang past its timeout" allows on top of it: fallback, the backup's answer,
/// and a loaded 2-core machine.
const SLACK: Duration = Duration::from_secs(4);

/// The upstream faults that strike before the first content chunk (or the whole answer), and
/// their mocks.
fn faults_before_commit() -> Vec<(&'static str, String, Option<MockHandle>)> {
    let fixed = |ms| Latency::fixed(Duration::from_millis(ms));
    let mocks = [
        ("reset", MockProfile::builder().reset(1.0)),
        ("silent", MockProfile::builder().no_response(1.0)),
        ("slow_first_byte", MockProfile::builder().latency(fixed(60_000))),
        ("stall", MockProfile::builder().stall(1.0)),
        ("huge", MockProfile::builder().huge_response(2 << 20)),
        ("malformed", MockProfile::builder().malformed_chunk(0, 1.0)),
        ("error_500", MockProfile::builder().fail(Failure::InternalError, 1.0)),
    ];
    let mut out: Vec<_> = mocks
        .into_iter()
        .map(|(name, b)| {
            let m = mock(profile(b));
            (name, m.base_url(), Some(m))
        })
        .collect();
    out.push(("refused", MockUpstream::refused_base_url().expect("a closed port"), None));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_faults_before_the_first_content_fall_back_within_the_timeout() {
    let backup = mock(MockProfile::healthy());
    let faults = faults_before_commit();
    let mut yaml = String::from("model_list:\n");
    yaml += &entry("backup", &backup.base_url(), ", timeout: 10, stream_timeout: 10");
    let timeouts = format!(", timeout: {FAULT_TIMEOUT}, stream_timeout: {FAULT_TIMEOUT}");
    for (name, base, _) in &faults {
        yaml += &entry(name, base, &timeouts);
    }
    yaml += "router_settings:\n  num_retries: 0\n  fallbacks:\n";
    for (name, _, _) in &faults {
        yaml += &format!("    - {{ {name}: [backup] }}\n");
    }
    // Answers above 1 MiB fail the attempt (the huge mock sends 2 MiB).
    let gw = Served::start(&yaml, 1 << 20).await;
    let http = client();

    let calls = faults.iter().flat_map(|(name, _, _)| [(*name, false), (*name, true)]).map(|(name, stream)| {
        let (http, req) = (http.clone(), post(&gw.origin, &chat_body(name, stream)));
        async move { (name, stream, send(&http, req).await) }
    });
    for (name, stream, answer) in futures_util::future::join_all(calls).await {
        let answer = answer.unwrap_or_else(|e| panic!("{name} (stream {stream}): {e}"));
        println!(
            "before commit: {name:>15} stream={stream:<5} {:?} via {} in {:.0?}",
            answer.kind(),
            answer.header("x-switchyard-model-group"),
            answer.elapsed
        );
        assert_eq!(answer.kind(), Kind::Served, "{name} (stream {stream}): {answer:?}");
        let bound = Duration::from_secs_f64(FAULT_TIMEOUT) + SLACK;
        assert!(answer.elapsed < bound, "{name} (stream {stream}) took {:?}", answer.elapsed);
        if name == "huge" && stream {
            // The mock's streams are not huge: served by the deployment itself.
            assert_eq!(answer.header("x-switchyard-model-group"), "huge");
            continue;
        }
        assert_eq!(answer.header("x-switchyard-model-group"), "backup", "{name} (stream {stream}) fell back");
        assert_eq!(answer.header("x-switchyard-attempted-fallbacks"), "1", "{name} (stream {stream})");
    }
    let ids: Vec<&str> = faults.iter().map(|(n, _, _)| *n).chain(["backup"]).collect();
    drained(gw.store(), &ids).await;
    for (name, _, m) in &faults {
        if let Some(m) = m {
            let s = m.stats();
            match *name {
                "reset" | "silent" => assert!(s.connection_faults >= 2, "{name}: {s:?}"),
                _ => assert!(s.requests >= 2, "{name}: {s:?}"),
            }
        }
    }
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_faults_after_the_first_content_end_the_stream_with_one_error_event() {
    let backup = mock(MockProfile::healthy());
    let faults = [
        ("cut", MockProfile::builder().chunks(6).stream_cut(3, 1.0)),
        // The first chunk at once, the next after a minute: the gap timeout ends it.
        ("stall_mid", MockProfile::builder().chunks(4).chunk_interval(Latency::fixed(Duration::from_secs(60)))),
        ("malformed_mid", MockProfile::builder().chunks(6).malformed_chunk(2, 1.0)),
        ("missing_done", MockProfile::builder().missing_done(1.0)),
    ];
    let mocks: Vec<(&str, MockHandle)> = faults.into_iter().map(|(n, b)| (n, mock(profile(b)))).collect();
    let mut yaml = String::from("model_list:\n");
    yaml += &entry("backup", &backup.base_url(), "");
    let timeouts = format!(", timeout: {FAULT_TIMEOUT}, stream_timeout: {FAULT_TIMEOUT}");
    for (name, m) in &mocks {
        yaml += &entry(name, &m.base_url(), &timeouts);
    }
    yaml += "router_settings:\n  num_retries: 0\n  fallbacks:\n";
    for (name, _) in &mocks {
        yaml += &format!("    - {{ {name}: [backup] }}\n");
    }
    let gw = Served::start(&yaml, 1 << 20).await;
    let http = client();
    let calls = mocks.iter().map(|(name, _)| {
        let (http, req) = (http.clone(), post(&gw.origin, &chat_body(name, true)));
        async move { (*name, send(&http, req).await) }
    });
    for (name, answer) in futures_util::future::join_all(calls).await {
        let answer = answer.unwrap_or_else(|e| panic!("{name}: {e}"));
        println!("after commit: {name:>13} {:?} in {:.0?}", answer.kind(), answer.elapsed);
        let expected = if name == "stall_mid" { "timeout" } else { "transport" };
        assert_eq!(answer.kind(), Kind::StreamError(expected.into()), "{name}: {answer:?}");
        assert!(!answer.clean_end, "{name}: a broken stream never ends cleanly");
        assert!(answer.text.contains("Mock answer from"), "{name}: content came first: {}", answer.text);
        assert_eq!(answer.header("x-switchyard-model-group"), name, "{name}: committed, no fallback");
        let bound = Duration::from_secs_f64(FAULT_TIMEOUT) + SLACK;
        assert!(answer.elapsed < bound, "{name} took {:?}", answer.elapsed);
    }
    let ids: Vec<&str> = mocks.iter().map(|(n, _)| *n).collect();
    drained(gw.store(), &ids).await;
    gw.stop().await;
}

/// Polls `cond` every 5 ms for at most `PATIENCE` (what the test waits for has no event).
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !cond() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_requests_and_streams_release_their_slots_and_estimates() {
    // Answers take a minute at first: the requests are cancelled while the upstream works.
    let upstream = mock(profile(MockProfile::builder().latency(Latency::fixed(Duration::from_secs(60)))));
    let mut yaml = String::from("model_list:\n");
    yaml += &entry("limited", &upstream.base_url(), ", tpm: 1000000, max_parallel_requests: 2");
    yaml += "router_settings:\n  num_retries: 0\n";
    let gw = Served::start(&yaml, 1 << 20).await;
    let http = client();
    let id = DeploymentId::from("limited");
    let usage = || async {
        gw.store().flush().await;
        gw.store().usage(std::slice::from_ref(&id)).await[0]
    };

    // Mid-request: two requests hold both slots, a third is refused, then both are cancelled.
    let held: Vec<_> = (0..2)
        .map(|_| {
            let (http, req) = (http.clone(), post(&gw.origin, &chat_body("limited", false)));
            tokio::spawn(async move { send(&http, req).await })
        })
        .collect();
    until("both requests at the upstream", || upstream.requests() == 2).await;
    assert_eq!(gw.store().local().in_flight(&id), 2);
    let third = send(&http, post(&gw.origin, &chat_body("limited", false))).await.expect("answered");
    assert_eq!(third.status, StatusCode::TOO_MANY_REQUESTS, "{third:?}");
    assert_eq!(usage().await.requests, 2, "the refused one reserved nothing");
    assert!(usage().await.tokens > 0, "estimates reserved");
    for h in &held {
        h.abort();
    }
    drained(gw.store(), &["limited"]).await;
    // The estimate is given back when the cancelled attempt's guard drops, just after its slot.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut after = usage().await;
    while after.tokens != 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
        after = usage().await;
    }
    assert_eq!((after.requests, after.tokens), (2, 0), "slots kept (the upstream saw them), estimates released");

    // Mid-stream: 40 chunks 25 ms apart; the client reads two frames and goes away.
    let streaming = MockProfile::builder().chunks(40).chunk_interval(Latency::fixed(Duration::from_millis(25)));
    upstream.set_profile(profile(streaming.prompt_tokens(7)));
    let resp = http.request(post(&gw.origin, &chat_body("limited", true))).await.expect("answered");
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    for _ in 0..2 {
        body.frame().await.expect("a frame").expect("not broken");
    }
    assert_eq!(gw.store().local().in_flight(&id), 1, "the stream holds its slot");
    drop(body);
    drained(gw.store(), &["limited"]).await;
    let after_stream = usage().await;
    assert_eq!(after_stream.requests, 3);
    assert!(after_stream.tokens > 0, "a served stream's reservation stands until the window ends");

    // Both slots are free again: two whole answers at once.
    upstream.set_profile(profile(MockProfile::builder().prompt_tokens(7)));
    let both = (0..2).map(|_| send(&http, post(&gw.origin, &chat_body("limited", false))));
    for answer in futures_util::future::join_all(both).await {
        assert_eq!(answer.expect("answered").kind(), Kind::Served);
    }
    drained(gw.store(), &["limited"]).await;
    // Each whole answer reconciles its estimate with the real usage: 7 prompt + 8 completion.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut end = usage().await;
    while end.tokens - after_stream.tokens != 2 * 15 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
        end = usage().await;
    }
    assert_eq!(end.tokens - after_stream.tokens, 2 * 15, "reconciled to the real usage");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_and_slow_clients_get_typed_answers() {
    let upstream =
        mock(profile(MockProfile::builder().chunks(20).chunk_interval(Latency::fixed(Duration::from_millis(1)))));
    let mut yaml = String::from("model_list:\n");
    yaml += &entry("m", &upstream.base_url(), "");
    let gw = Served::start(&yaml, 1 << 20).await;
    let http = client();

    // Oversized (the gateway takes 64 KiB here), malformed, wrongly typed.
    let big = format!(r#"{{"model":"m","messages":[{{"role":"user","content":"{}"}}]}}"#, "x".repeat(100 << 10));
    let cases = [
        ("application/json", Bytes::from(big), StatusCode::PAYLOAD_TOO_LARGE),
        ("application/json", Bytes::from_static(b"{\"model\": \"m\", \"messages\": ["), StatusCode::BAD_REQUEST),
        ("application/json", Bytes::from_static(b"[1, 2, 3]"), StatusCode::BAD_REQUEST),
        ("application/json", Bytes::from_static(b"\xff\xfe not utf-8"), StatusCode::BAD_REQUEST),
        ("application/xml", Bytes::from_static(b"<model>m</model>"), StatusCode::UNSUPPORTED_MEDIA_TYPE),
        ("multipart/form-data; boundary=x", Bytes::from_static(b"--x--"), StatusCode::UNSUPPORTED_MEDIA_TYPE),
    ];
    for (content_type, body, status) in cases {
        let answer = send(&http, post_raw(&gw.origin, content_type, body)).await.expect("answered");
        assert_eq!(answer.status, status, "{content_type}: {answer:?}");
        assert!(matches!(answer.kind(), Kind::Refused(_)), "{content_type}: {answer:?}");
    }
    assert_eq!(upstream.requests(), 0, "none of them reached the upstream");

    // A slow reader: a stream read one frame per 20 ms is delivered whole.
    let resp = http.request(post(&gw.origin, &chat_body("m", true))).await.expect("answered");
    let mut body = resp.into_body();
    let mut text = String::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.expect("not broken").into_data() {
            text.push_str(&String::from_utf8_lossy(&data));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");

    // A slow writer: the request trickles in over ~0.4 s, in five pieces.
    let body = chat_body("m", false).to_string();
    let host = gw.origin.trim_start_matches("http://").to_owned();
    let mut sock = tokio::net::TcpStream::connect(&host).await.expect("connect");
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    sock.write_all(head.as_bytes()).await.expect("head");
    for piece in body.as_bytes().chunks(body.len().div_ceil(5)) {
        tokio::time::sleep(Duration::from_millis(80)).await;
        sock.write_all(piece).await.expect("piece");
    }
    let mut raw = Vec::new();
    tokio::time::timeout(PATIENCE, sock.read_to_end(&mut raw)).await.expect("answered in time").expect("read");
    let raw = String::from_utf8_lossy(&raw);
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.contains("chat.completion"), "{raw}");

    drained(gw.store(), &["m"]).await;
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_soak_ends_every_request_typed_and_leaves_nothing_in_flight() {
    let fleet = Fleet::start(5);
    let gw = Served::start(&fleet.yaml(100), 1 << 20).await;
    let http = client();
    let next = Arc::new(AtomicU64::new(0));
    let total = 1_500u64;
    let workers = (0..16u64).map(|w| {
        let (http, origin, next) = (http.clone(), gw.origin.clone(), next.clone());
        tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(w);
            let mut kinds = BTreeMap::<Kind, u64>::new();
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let group = if rng.random_bool(0.1) { "capped" } else { "mixed" };
                let answer = send(&http, post(&origin, &chat_body(group, rng.random_bool(0.3)))).await;
                let kind = answer.map_or_else(Kind::Untyped, |a| a.kind());
                *kinds.entry(kind).or_default() += 1;
            }
            kinds
        })
    });
    let mut kinds = BTreeMap::<Kind, u64>::new();
    for w in futures_util::future::join_all(workers).await {
        for (k, n) in w.expect("worker") {
            *kinds.entry(k).or_default() += n;
        }
    }
    println!("short soak: {total} requests: {}", reliability_support::tally(&kinds));
    assert_eq!(kinds.values().sum::<u64>(), total);
    assert!(kinds.keys().all(|k| !matches!(k, Kind::Untyped(_))), "{kinds:?}");
    assert!(kinds.get(&Kind::Served).copied().unwrap_or(0) > total / 2, "{kinds:?}");
    assert!(kinds.contains_key(&Kind::Refused("rate_limited".into())), "the capped group refuses: {kinds:?}");
    drained(gw.store(), &fleet.ids()).await;
    gw.stop().await;
}

#[cfg(feature = "redis")]
mod redis_faults {
    use super::*;
    use crate::redis_support::RedisServer;
    use switchyard::{
        Config,
        layers::{
            StateStore,
            state::{CooldownState, RedisConfig},
        },
    };

    /// Two gateways (replicas) on one Redis, each with its own store.
    async fn replicas(server: &RedisServer, yaml: &str) -> Vec<Served> {
        let mut out = Vec::new();
        for _ in 0..2 {
            let redis = RedisConfig::new(server.url())
                .namespace("reliability")
                .connect_timeout(Duration::from_millis(300))
                .response_timeout(Duration::from_millis(200));
            let store = Arc::new(StateStore::redis(redis).expect("store"));
            tokio::time::timeout(PATIENCE, store.ready()).await.expect("connected");
            let config = Config::from_yaml_str(yaml).expect("config");
            out.push(Served::start_with(config, 1 << 20, Some(store)).await);
        }
        out
    }

    struct Load {
        stop: Arc<AtomicBool>,
        served: tokio::sync::watch::Receiver<u64>,
        clients: Vec<tokio::task::JoinHandle<Duration>>,
    }

    impl Load {
        /// Four clients alternating between the replicas on the `open` group; each returns
        /// the slowest answer it saw, and panics on any answer but a served one.
        fn start(origins: Vec<String>) -> Self {
            let http = client();
            let stop = Arc::new(AtomicBool::new(false));
            let (tx, served) = tokio::sync::watch::channel(0u64);
            let tx = Arc::new(tx);
            let clients = (0..4)
                .map(|c| {
                    let (http, origins, stop, tx) = (http.clone(), origins.clone(), stop.clone(), tx.clone());
                    tokio::spawn(async move {
                        let mut slowest = Duration::ZERO;
                        let mut i = c;
                        while !stop.load(Ordering::Relaxed) {
                            let req = post(&origins[i % origins.len()], &chat_body("open", i % 3 == 0));
                            let answer = send(&http, req).await.expect("answered");
                            assert_eq!(answer.kind(), Kind::Served, "whatever Redis does: {answer:?}");
                            slowest = slowest.max(answer.elapsed);
                            tx.send_modify(|n| *n += 1);
                            i += 1;
                        }
                        slowest
                    })
                })
                .collect();
            Self { stop, served, clients }
        }

        async fn more(&mut self, n: u64) {
            let target = *self.served.borrow() + n;
            tokio::time::timeout(PATIENCE, self.served.wait_for(|s| *s >= target))
                .await
                .expect("requests keep being served")
                .expect("clients alive");
        }

        /// Stops the clients; how many requests were served, and the slowest answer.
        async fn finish(self) -> (u64, Duration) {
            self.stop.store(true, Ordering::Relaxed);
            let mut slowest = Duration::ZERO;
            for c in self.clients {
                slowest = slowest.max(c.await.expect("no client saw a failure"));
            }
            let served = *self.served.borrow();
            (served, slowest)
        }
    }

    const YAML_TAIL: &str = "router_settings:\n  num_retries: 1\n  enforce_rate_limits: true\n";

    fn yaml(upstream: &MockHandle) -> String {
        let mut yaml = String::from("model_list:\n");
        // `open` has a (high) limit, so every attempt reserves in Redis.
        yaml += &entry("open", &upstream.base_url(), ", rpm: 1000000");
        yaml += &entry("exact", &upstream.base_url(), ", rpm: 20");
        yaml + YAML_TAIL
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn redis_killed_and_restarted_under_load_degrades_then_resyncs() {
        let mut server = RedisServer::start();
        let upstream = mock(MockProfile::healthy());
        let reps = replicas(&server, &yaml(&upstream)).await;
        let mut load = Load::start(reps.iter().map(|r| r.origin.clone()).collect());
        load.more(100).await;
        server.kill();
        load.more(200).await;
        assert!(reps.iter().all(|r| r.store().is_degraded()), "both replicas noticed");
        server.restart();
        for r in &reps {
            tokio::time::timeout(PATIENCE, r.store().ready()).await.expect("resynced");
        }
        load.more(100).await;
        let (served, slowest) = load.finish().await;
        println!("redis killed: {served} served, none failed, slowest answer {slowest:.0?}");
        assert!(reps.iter().all(|r| !r.store().is_degraded()));
        drained(reps[0].store(), &["open"]).await;
        drained(reps[1].store(), &["open"]).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_redis_costs_at_most_its_response_timeout() {
        let server = Arc::new(RedisServer::start());
        let upstream = mock(MockProfile::healthy());
        let reps = replicas(&server, &yaml(&upstream)).await;
        let mut load = Load::start(reps.iter().map(|r| r.origin.clone()).collect());
        load.more(100).await;
        // Redis answers nothing for 3 s; the response timeout is 200 ms.
        let sleeper = {
            let server = server.clone();
            tokio::task::spawn_blocking(move || server.command(&["DEBUG", "SLEEP", "3"]))
        };
        load.more(200).await;
        assert_eq!(sleeper.await.expect("sleeper"), "OK");
        for r in &reps {
            tokio::time::timeout(PATIENCE, r.store().ready()).await.expect("back in sync");
        }
        load.more(100).await;
        let (served, slowest) = load.finish().await;
        let degradations: u64 = reps.iter().map(|r| r.store().redis_stats().map_or(0, |s| s.degradations)).sum();
        println!("redis slow: {served} served, none failed, slowest answer {slowest:.0?}, degradations {degradations}");
        assert!(degradations >= 1, "a late reply counts as unreachable: degraded, then resynced");
        // Without the timeout, requests would have waited for the 3 s sleep.
        assert!(slowest < Duration::from_millis(2_000), "slowest answer {slowest:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn redis_flushed_mid_run_restarts_windows_and_cooldowns() {
        let server = RedisServer::start();
        let upstream = mock(MockProfile::healthy());
        let reps = replicas(&server, &yaml(&upstream)).await;
        let http = client();
        // `exact` (rpm 20) is exhausted fleet-wide: 20 of 30 served, across both replicas.
        let served = |n: usize| {
            let http = http.clone();
            let origins: Vec<String> = reps.iter().map(|r| r.origin.clone()).collect();
            async move {
                let calls = (0..n).map(|i| send(&http, post(&origins[i % 2], &chat_body("exact", false))));
                let mut ok = 0;
                for a in futures_util::future::join_all(calls).await {
                    match a.expect("answered").kind() {
                        Kind::Served => ok += 1,
                        Kind::Refused(code) => assert_eq!(code, "rate_limited"),
                        other => panic!("{other:?}"),
                    }
                }
                ok
            }
        };
        assert_eq!(served(30).await, 20);
        // A cooldown set through replica 0 reaches replica 1.
        let exact = DeploymentId::from("exact");
        reps[0].store().bench(&exact, Duration::from_secs(600), "maintenance".into(), None, None).await;
        wait_cooldown(reps[1].store(), &exact, true).await;

        let mut load = Load::start(reps.iter().map(|r| r.origin.clone()).collect());
        load.more(50).await;
        assert_eq!(server.command(&["FLUSHALL"]), "OK");
        // The re-read finds the counter below the mirror's: the flushed state is the truth.
        wait_cooldown(reps[0].store(), &exact, false).await;
        wait_cooldown(reps[1].store(), &exact, false).await;
        load.more(100).await;
        let (served_during, _) = load.finish().await;
        println!("redis flushed: {served_during} served during the flush, none failed");
        // A fresh window, and no cooldown: exactly 20 more.
        assert_eq!(served(30).await, 20);
        assert!(reps.iter().all(|r| !r.store().is_degraded()));
    }

    async fn wait_cooldown(store: &StateStore, id: &DeploymentId, cooling: bool) {
        let mut changes = store.watch_cooldowns();
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let state = store.cooldown_states(std::slice::from_ref(id)).await.remove(0);
            if matches!(state, CooldownState::CoolingDown(_)) == cooling {
                return;
            }
            // Changes wake this; a resync that finds nothing new does not, so re-read every 100 ms.
            let _ = tokio::time::timeout(Duration::from_millis(100), changes.changed()).await;
            assert!(tokio::time::Instant::now() < deadline, "cooldown of {id} never became {cooling}");
        }
    }
}
