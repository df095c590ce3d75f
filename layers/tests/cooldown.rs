//! Cooldown behaviour (census §3.3), on a paused clock.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use parking_lot::Mutex;
use switchyard_layers::{
    BoxError, Deployment, Outcome, Registry, RequestFacts, RouteBody, RouteCtx, RouteError, RouteErrorKind,
    RouteRequest, Served, StateStore,
    cooldown::{AllowedFailsPolicy, CooldownConfig, CooldownEvent, CooldownLayer, ProbeConfig},
    select::{RoutingStrategy, SelectLayer},
    state::CooldownState,
};
use tokio::time::Instant;
use tower::{Service, ServiceBuilder, ServiceExt, util::BoxCloneSyncService};

type Req = http::Request<Bytes>;
type Resp = http::Response<RouteBody>;
type Stack = BoxCloneSyncService<Req, Resp, BoxError>;

/// How a scripted deployment answers.
#[derive(Clone)]
enum Script {
    Ok,
    Fail {
        status: u16,
        outcome: Outcome,
        retry_after: Option<Duration>,
        message: &'static str,
    },
    /// Fails `fail` of every `every` calls (deterministic).
    FailSome {
        fail: u64,
        every: u64,
        status: u16,
    },
    Connect,
    /// Streams one chunk, then breaks.
    CutStream,
}

fn fail(status: u16) -> Script {
    let outcome = Outcome::from_status(http::StatusCode::from_u16(status).expect("status"));
    Script::Fail { status, outcome, retry_after: None, message: "upstream error" }
}

#[derive(Clone, Default)]
struct Upstream {
    scripts: Arc<Mutex<HashMap<String, Script>>>,
    calls: Arc<Mutex<HashMap<String, u64>>>,
    seq: Arc<AtomicU64>,
}

impl Upstream {
    fn set(&self, id: &str, s: Script) {
        self.scripts.lock().insert(id.to_owned(), s);
    }

    fn calls(&self, id: &str) -> u64 {
        self.calls.lock().get(id).copied().unwrap_or(0)
    }

    fn service(
        &self,
    ) -> impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + Send + Sync + use<> {
        let this = self.clone();
        tower::service_fn(move |req: Req| {
            let this = this.clone();
            async move {
                let d = req.route_ctx().and_then(|c| c.selected.clone()).expect("a deployment was selected");
                let id = d.id.to_string();
                let n = {
                    let mut calls = this.calls.lock();
                    let c = calls.entry(id.clone()).or_default();
                    *c += 1;
                    *c
                };
                this.seq.fetch_add(1, Ordering::Relaxed);
                let script = this.scripts.lock().get(&id).cloned().unwrap_or(Script::Ok);
                let err = |status: u16, outcome, ra: Option<Duration>, msg: &str| -> BoxError {
                    let mut e = RouteError::upstream(outcome, d.id.clone(), msg).with_upstream_response(
                        http::StatusCode::from_u16(status).expect("status"),
                        Bytes::from_static(b"{}"),
                    );
                    if let Some(ra) = ra {
                        e = e.with_retry_after(ra);
                    }
                    e.into()
                };
                match script {
                    Script::Ok => {}
                    Script::Fail { status, outcome, retry_after, message } => {
                        return Err(err(status, outcome, retry_after, message));
                    }
                    Script::FailSome { fail, every, status } if (n - 1) % every < fail => {
                        return Err(err(status, Outcome::ServerError, None, "flaky"));
                    }
                    Script::FailSome { .. } => {}
                    Script::Connect => {
                        return Err(RouteError::upstream(Outcome::Connect, d.id.clone(), "connection refused").into());
                    }
                    Script::CutStream => {
                        let cut: BoxError = RouteError::upstream(Outcome::Transport, d.id.clone(), "cut").into();
                        let frames = futures_util::stream::iter([
                            Ok(http_body::Frame::data(Bytes::from_static(b"data: {}\n\n"))),
                            Err(cut),
                        ]);
                        return Ok(http::Response::new(RouteBody::new(http_body_util::StreamBody::new(frames))));
                    }
                }
                Ok(http::Response::new(RouteBody::from("ok")))
            }
        })
    }
}

struct Fixture {
    store: Arc<StateStore>,
    layer: CooldownLayer,
    stack: Stack,
    upstream: Upstream,
}

fn fixture(deployments: Vec<Deployment>, config: CooldownConfig) -> Fixture {
    let registry = Arc::new(Registry::with_deployments(deployments).expect("unique ids"));
    let store = Arc::new(StateStore::memory());
    let upstream = Upstream::default();
    let layer = CooldownLayer::new(registry.clone(), store.clone(), config);
    let stack = BoxCloneSyncService::new(
        ServiceBuilder::new()
            .layer(layer.clone())
            .layer(
                SelectLayer::new(registry.clone(), store.clone(), RoutingStrategy::SimpleShuffle.build()).with_seed(5),
            )
            .service(upstream.service()),
    );
    Fixture { store, layer, stack, upstream }
}

fn deps(group: &str, ids: &[&str]) -> Vec<Deployment> {
    ids.iter().map(|id| Deployment::builder(group, format!("openai/{id}")).id(*id).build().expect("valid")).collect()
}

impl Fixture {
    async fn call(&self, model: &str) -> Result<Resp, BoxError> {
        let mut req = http::Request::new(Bytes::new());
        req.extensions_mut().insert(RouteCtx::new(model));
        self.stack.clone().oneshot(req).await
    }

    async fn stream(&self, model: &str) -> Result<Resp, BoxError> {
        let mut req = http::Request::new(Bytes::new());
        req.extensions_mut().insert(RouteCtx::with_facts(model, RequestFacts::new().streaming(true)));
        self.stack.clone().oneshot(req).await
    }

    async fn call_n(&self, model: &str, n: usize) -> Vec<Result<Resp, BoxError>> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.call(model).await);
        }
        out
    }

    async fn cooling(&self, id: &str) -> bool {
        self.store.cooldowns(&[id.into()]).await[0].is_some()
    }

    async fn until(&self, id: &str) -> Option<Duration> {
        self.store.cooldowns(&[id.into()]).await[0].as_ref().map(|c| c.until.saturating_duration_since(Instant::now()))
    }
}

fn kind(err: &BoxError) -> RouteErrorKind {
    RouteError::find(&**err).expect("a routing error").kind()
}

#[tokio::test(start_paused = true)]
async fn rate_limited_deployment_in_a_multi_deployment_group_is_benched() {
    let f = fixture(deps("g", &["a", "b"]), CooldownConfig::default());
    f.upstream.set("a", fail(429));
    let results = f.call_n("g", 20).await;
    assert!(f.cooling("a").await);
    assert!(!f.cooling("b").await);
    assert_eq!(f.upstream.calls("a"), 1, "benched after its first 429");
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 19);
}

#[tokio::test(start_paused = true)]
async fn single_deployment_group_is_not_cooled_down_on_429() {
    let f = fixture(deps("g", &["a"]), CooldownConfig::default());
    f.upstream.set("a", fail(429));
    f.call_n("g", 10).await;
    assert!(!f.cooling("a").await);
    assert_eq!(f.upstream.calls("a"), 10);
}

#[tokio::test(start_paused = true)]
async fn auth_error_benches_even_a_single_deployment() {
    let f = fixture(deps("g", &["a"]), CooldownConfig::default());
    f.upstream.set("a", fail(401));
    f.call("g").await.expect_err("401");
    assert!(f.cooling("a").await);
    assert_eq!(kind(&f.call("g").await.expect_err("benched")), RouteErrorKind::AllCoolingDown);
}

#[tokio::test(start_paused = true)]
async fn not_found_benches_and_other_4xx_never_do() {
    for (status, benched) in [(404, true), (400, false), (403, false), (409, false), (422, false)] {
        let f = fixture(deps("g", &["a", "b"]), CooldownConfig::default());
        f.upstream.set("a", fail(status));
        f.call_n("g", 30).await;
        assert_eq!(f.cooling("a").await, benched, "status {status}");
    }
}

#[tokio::test(start_paused = true)]
async fn context_window_errors_never_bench() {
    let f = fixture(deps("g", &["a", "b"]), CooldownConfig::default());
    f.upstream.set(
        "a",
        Script::Fail { status: 400, outcome: Outcome::ContextWindowExceeded, retry_after: None, message: "too long" },
    );
    f.call_n("g", 30).await;
    assert!(!f.cooling("a").await);
}

#[tokio::test(start_paused = true)]
async fn a_first_failure_alone_does_not_bench_but_five_failing_requests_do() {
    let f = fixture(deps("g", &["a", "b"]), CooldownConfig::default());
    f.upstream.set("a", fail(500));
    let mut a_calls_when_benched = None;
    for _ in 0..40 {
        let _ = f.call("g").await;
        if a_calls_when_benched.is_none() && f.cooling("a").await {
            a_calls_when_benched = Some(f.upstream.calls("a"));
        }
    }
    assert_eq!(a_calls_when_benched, Some(5), "benched at the 5th failure (minimum request threshold)");
}

#[tokio::test(start_paused = true)]
async fn a_deployment_that_cuts_every_stream_is_benched_like_one_that_fails() {
    // Its first chunk is not a success: the stream's outcome is counted once, at its end (a
    // success at the first chunk plus a failure at the cut would make it look 50% healthy).
    let f = fixture(deps("g", &["a", "b"]), CooldownConfig::default());
    f.upstream.set("a", Script::CutStream);
    let mut served_by_a = 0;
    while f.upstream.calls("a") < 5 {
        let resp = f.stream("g").await.expect("a stream starts");
        let by_a = resp.extensions().get::<Served>().is_some_and(|s| s.deployment.as_str() == "a");
        let read = http_body_util::BodyExt::collect(resp.into_body()).await;
        assert_eq!(read.is_err(), by_a, "only `a` cuts its streams");
        served_by_a += usize::from(by_a);
    }
    assert_eq!(served_by_a, 5);
    assert!(f.cooling("a").await, "5 cut streams out of 5: benched");
    assert!(!f.cooling("b").await);
}

#[tokio::test(start_paused = true)]
async fn single_deployment_is_benched_only_at_1000_requests_all_failing() {
    let f = fixture(deps("g", &["a"]), CooldownConfig::default());
    f.upstream.set("a", fail(500));
    f.call_n("g", 999).await;
    assert!(!f.cooling("a").await);
    f.call("g").await.expect_err("500");
    assert!(f.cooling("a").await);
}

#[tokio::test(start_paused = true)]
async fn high_traffic_benches_only_the_deployment_failing_above_half() {
    // 3 deployments, 100 requests each; `c` fails 3 of 5 (60%), `b` 1 of 5 (20%).
    let f = fixture(deps("g", &["a", "b", "c"]), CooldownConfig::default().cooldown_time(Duration::from_secs(3600)));
    f.upstream.set("b", Script::FailSome { fail: 1, every: 5, status: 500 });
    f.upstream.set("c", Script::FailSome { fail: 3, every: 5, status: 500 });
    f.call_n("g", 300).await;
    assert!(!f.cooling("a").await);
    assert!(!f.cooling("b").await, "20% failures stay in rotation");
    assert!(f.cooling("c").await, "60% failures are benched");
}

#[tokio::test(start_paused = true)]
async fn allowed_fails_benches_a_single_deployment_after_the_allowance() {
    let f = fixture(deps("g", &["a"]), CooldownConfig::default().allowed_fails(Some(1)));
    f.upstream.set("a", fail(408));
    f.call("g").await.expect_err("first timeout");
    assert!(!f.cooling("a").await, "one failure is allowed");
    f.call("g").await.expect_err("second timeout");
    assert!(f.cooling("a").await);
}

#[tokio::test(start_paused = true)]
async fn allowed_fails_policy_reads_the_class_of_the_failure() {
    let policy = AllowedFailsPolicy::from_litellm(
        &[("TimeoutErrorAllowedFails".to_owned(), 1), ("InternalServerErrorAllowedFails".to_owned(), 0)]
            .into_iter()
            .collect(),
    )
    .expect("valid policy");
    let f = fixture(deps("g", &["a", "b"]), CooldownConfig::default().allowed_fails_policy(Some(policy)));
    f.upstream.set("b", fail(500));
    f.upstream.set("a", fail(408));
    let _ = f.call_n("g", 6).await;
    assert!(f.cooling("b").await, "InternalServerErrorAllowedFails = 0 benches at the first 500");
    assert!(f.cooling("a").await, "TimeoutErrorAllowedFails = 1 benches at the second timeout");
    assert_eq!(f.upstream.calls("a"), 2);
    assert!(
        AllowedFailsPolicy::from_litellm(&[("Bogus".to_owned(), 1)].into_iter().collect())
            .expect_err("unknown field")
            .to_string()
            .contains("TimeoutErrorAllowedFails")
    );
}

#[tokio::test(start_paused = true)]
async fn deployment_cooldown_time_zero_never_benches() {
    let mut d = deps("g", &["b"]);
    d.push(Deployment::builder("g", "openai/a").id("a").cooldown_time(Duration::ZERO).build().expect("valid"));
    let f = fixture(d, CooldownConfig::default());
    f.upstream.set("a", fail(429));
    f.call_n("g", 20).await;
    assert!(!f.cooling("a").await);
}

#[tokio::test(start_paused = true)]
async fn retry_after_sets_the_cooldown_time_and_deployment_cooldown_time_beats_it() {
    let f = fixture(deps("g", &["a", "b"]), CooldownConfig::default());
    f.upstream.set(
        "a",
        Script::Fail {
            status: 429,
            outcome: Outcome::RateLimited,
            retry_after: Some(Duration::from_secs(30)),
            message: "slow down",
        },
    );
    f.call_n("g", 10).await;
    assert_eq!(f.until("a").await, Some(Duration::from_secs(30)));

    let mut d = deps("g", &["b"]);
    d.push(Deployment::builder("g", "openai/a").id("a").cooldown_time(Duration::from_secs(9)).build().expect("valid"));
    let f = fixture(d, CooldownConfig::default());
    f.upstream.set(
        "a",
        Script::Fail {
            status: 429,
            outcome: Outcome::RateLimited,
            retry_after: Some(Duration::from_secs(30)),
            message: "slow down",
        },
    );
    f.call_n("g", 10).await;
    assert_eq!(f.until("a").await, Some(Duration::from_secs(9)));
}

#[tokio::test(start_paused = true)]
async fn router_cooldown_time_applies_and_the_bench_ends_at_its_deadline() {
    let f = fixture(deps("g", &["a", "b"]), CooldownConfig::default().cooldown_time(Duration::from_secs(10)));
    f.upstream.set("a", fail(429));
    f.call_n("g", 10).await;
    tokio::time::advance(Duration::from_secs(5)).await;
    assert!(f.cooling("a").await, "still benched at t/2");
    tokio::time::advance(Duration::from_secs(5)).await;
    assert!(!f.cooling("a").await, "back at t");
}

#[tokio::test(start_paused = true)]
async fn recooling_extends_the_deadline() {
    let f = fixture(deps("g", &["a", "b"]), CooldownConfig::default().allowed_fails(Some(0)));
    f.upstream.set(
        "a",
        Script::Fail {
            status: 503,
            outcome: Outcome::ServerError,
            retry_after: Some(Duration::from_secs(10)),
            message: "busy",
        },
    );
    f.call_n("g", 10).await;
    assert_eq!(f.until("a").await, Some(Duration::from_secs(10)));
    tokio::time::advance(Duration::from_secs(11)).await;
    f.upstream.set(
        "a",
        Script::Fail {
            status: 503,
            outcome: Outcome::ServerError,
            retry_after: Some(Duration::from_secs(60)),
            message: "busy",
        },
    );
    f.call_n("g", 10).await;
    assert_eq!(f.until("a").await, Some(Duration::from_secs(60)));
}

#[tokio::test(start_paused = true)]
async fn a_connection_failure_counts_against_the_deployment() {
    let f = fixture(deps("g", &["a", "b"]), CooldownConfig::default());
    f.upstream.set("a", Script::Connect);
    f.call_n("g", 40).await;
    assert!(f.cooling("a").await, "a host that refuses connections is benched (LiteLLM never benched it)");
}

#[tokio::test(start_paused = true)]
async fn stored_reason_is_masked_and_truncated() {
    let key = "sk-live-0123456789abcdefghijKLMNOP";
    let deployments = vec![
        Deployment::builder("g", "openai/a")
            .id("a")
            .api_key(switchyard_layers::ApiKey::new(key))
            .build()
            .expect("valid"),
        Deployment::builder("g", "openai/b").id("b").build().expect("valid"),
    ];
    let f = fixture(deployments, CooldownConfig::default());
    let message: &'static str =
        Box::leak(format!("Incorrect API key provided: {key}. {}", "x".repeat(500)).into_boxed_str());
    f.upstream.set("a", Script::Fail { status: 401, outcome: Outcome::Auth, retry_after: None, message });
    f.call_n("g", 10).await;
    let listed = f.layer.list().await;
    let CooldownState::CoolingDown(c) = &listed[0].state else { panic!("a is cooling down: {listed:?}") };
    assert!(!c.reason.contains("0123456789abcdef"), "{}", c.reason);
    assert!(c.reason.len() <= 200, "{} bytes", c.reason.len());
}

#[tokio::test(start_paused = true)]
async fn all_cooling_down_carries_the_earliest_deadline() {
    let f = fixture(deps("g", &["a", "b"]), CooldownConfig::default());
    for (id, secs) in [("a", 30), ("b", 12)] {
        f.store.bench(&id.into(), Duration::from_secs(secs), "test".into(), Some(429), None).await;
    }
    let err = f.call("g").await.expect_err("all benched");
    let e = RouteError::find(&*err).expect("routing error");
    assert_eq!(e.kind(), RouteErrorKind::AllCoolingDown);
    assert_eq!(e.retry_after(), Some(Duration::from_secs(12)));
    assert_eq!(e.outcome(), Some(Outcome::RateLimited), "feeds the general fallback table");
    assert_eq!(e.group().map(|g| &**g), Some("g"));
}

#[tokio::test(start_paused = true)]
async fn waiting_for_a_cooldown_serves_when_it_ends_within_the_bound() {
    let f = fixture(deps("g", &["a"]), CooldownConfig::default().wait_for_cooldown(Some(Duration::from_secs(5))));
    f.store.bench(&"a".into(), Duration::from_secs(3), "test".into(), Some(429), None).await;
    let start = Instant::now();
    f.call("g").await.expect("served after the wait");
    assert_eq!(start.elapsed(), Duration::from_secs(3));

    f.store.bench(&"a".into(), Duration::from_secs(30), "test".into(), Some(429), None).await;
    let start = Instant::now();
    assert_eq!(kind(&f.call("g").await.expect_err("too long to wait")), RouteErrorKind::AllCoolingDown);
    assert_eq!(start.elapsed(), Duration::ZERO, "no wait past the bound");
}

#[tokio::test(start_paused = true)]
async fn disable_cooldowns_never_benches_or_filters() {
    let f = fixture(deps("g", &["a", "b"]), CooldownConfig::default().disabled(true));
    f.upstream.set("a", fail(429));
    f.call_n("g", 20).await;
    assert!(!f.cooling("a").await);
    assert!(f.upstream.calls("a") > 5);
}

#[tokio::test(start_paused = true)]
async fn half_open_probe_readmits_on_success_and_grows_the_bench_on_failure() {
    let probe = ProbeConfig::default();
    let f = fixture(
        deps("g", &["a", "b"]),
        CooldownConfig::default().cooldown_time(Duration::from_secs(10)).probe(Some(probe)),
    );
    f.upstream.set("a", fail(429));
    f.call_n("g", 10).await;
    assert_eq!(f.until("a").await, Some(Duration::from_secs(10)));
    tokio::time::advance(Duration::from_secs(10)).await;

    // Deadline passed: the next request probes `a` (and fails), which benches it for 2 × 10 s.
    let before = f.upstream.calls("a");
    f.call("g").await.expect_err("the probe fails");
    assert_eq!(f.upstream.calls("a"), before + 1, "exactly one probe");
    assert_eq!(f.until("a").await, Some(Duration::from_secs(20)));

    tokio::time::advance(Duration::from_secs(20)).await;
    f.upstream.set("a", Script::Ok);
    let resp = f.call("g").await.expect("the probe succeeds");
    assert_eq!(resp.extensions().get::<Served>().expect("served").deployment.as_str(), "a");
    assert_eq!(f.store.cooldown_states(&["a".into()]).await, vec![CooldownState::Available]);
    let share_a = f
        .call_n("g", 200)
        .await
        .iter()
        .filter(|r| {
            r.as_ref().is_ok_and(|r| r.extensions().get::<Served>().is_some_and(|s| s.deployment.as_str() == "a"))
        })
        .count();
    assert!(share_a > 50, "re-admitted: {share_a} of 200");
}

#[tokio::test(start_paused = true)]
async fn a_half_open_deployment_serves_nothing_but_its_single_probe() {
    let f = fixture(
        deps("g", &["a", "b"]),
        CooldownConfig::default().cooldown_time(Duration::from_secs(10)).probe(Some(ProbeConfig::default())),
    );
    f.upstream.set("a", fail(429));
    f.call_n("g", 10).await;
    tokio::time::advance(Duration::from_secs(10)).await;
    // Claim the probe elsewhere (another replica): requests here must avoid `a`.
    assert!(f.store.claim_probe(&"a".into(), Duration::from_secs(30)).await);
    let before = f.upstream.calls("a");
    f.call_n("g", 20).await;
    assert_eq!(f.upstream.calls("a"), before);
}

#[tokio::test(start_paused = true)]
async fn cooldown_events_reach_the_hook_and_the_listing_names_the_group() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let f = fixture(deps("g", &["a", "b"]), CooldownConfig::default().on_event(move |e| sink.lock().push(e.clone())));
    f.upstream.set("a", fail(429));
    f.call_n("g", 10).await;
    let benched = events
        .lock()
        .iter()
        .filter(
            |e| matches!(e, CooldownEvent::Benched { deployment, status: Some(429), .. } if deployment.as_str() == "a"),
        )
        .count();
    assert_eq!(benched, 1);
    let listed = f.layer.list().await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].deployment.as_str(), "a");
    assert_eq!(listed[0].group.as_deref(), Some("g"));
}
