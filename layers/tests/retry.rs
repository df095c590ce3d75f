//! Behaviour of the retry layer, driven through the real `RetryLayer` over the real `SelectLayer`
//! and a provider scripted per deployment. A paused clock makes every backoff exact and a fixed
//! seed makes every pick and every jitter identical between runs. The LiteLLM tests a case mirrors
//! are named by their row in the census (`research/litellm-router-census.md` §3.4).

mod support;

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    ops::Range,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use http::StatusCode;
use support::*;
use switchyard_layers::{
    BoxError, DeploymentId, Outcome, Registry, RequestFacts, RouteBody, RouteCtx, RouteError, RouteErrorKind,
    RouteRequest, StateStore,
    cooldown::{CooldownConfig, CooldownLayer},
    deadline::DeadlineLayer,
    fallback_tables::{FallbackHint, FallbackTables},
    retry::{Retry, RetryBudget, RetryConfig, RetryLayer, RetryPolicy},
    select::{RoutingStrategy, Select},
    state::{Admission, Limits},
};
use tokio::time::{Instant, advance, sleep, timeout};
use tower::{Layer, Service, ServiceBuilder, ServiceExt, service_fn};

// ---------------------------------------------------------------------------------------------
// a provider scripted per deployment
// ---------------------------------------------------------------------------------------------

/// What a deployment does on one attempt.
#[derive(Clone, Debug)]
enum Step {
    /// Answers with its id.
    Ok,
    /// Fails upstream with this outcome and status.
    Fail { outcome: Outcome, status: u16, retry_after: Option<Duration>, cool_for: Option<Duration> },
    /// One of our own refusals from a lower layer (as if the cooldown or pre-call layer refused).
    Refuse(RouteErrorKind, Option<Duration>),
    /// Never answers (to cancel mid-attempt).
    Hang,
}

fn fail(outcome: Outcome, status: u16) -> Step {
    Step::Fail { outcome, status, retry_after: None, cool_for: None }
}

fn server_error() -> Step {
    fail(Outcome::ServerError, 500)
}

impl Step {
    /// The failure carries a `Retry-After` of `secs`.
    fn retry_after(self, secs: f64) -> Self {
        match self {
            Step::Fail { outcome, status, cool_for, .. } => {
                Step::Fail { outcome, status, retry_after: Some(Duration::from_secs_f64(secs)), cool_for }
            }
            other => other,
        }
    }

    /// The deployment is benched for a minute after this failure (standing in for the cooldown
    /// layer, which these tests leave out).
    fn cooled(self) -> Self {
        match self {
            Step::Fail { outcome, status, retry_after, .. } => {
                Step::Fail { outcome, status, retry_after, cool_for: Some(Duration::from_secs(60)) }
            }
            other => other,
        }
    }
}

/// Per-deployment scripts: queued steps first, then the deployment's standing step, else `Ok`.
#[derive(Default)]
struct Script {
    queued: Mutex<HashMap<String, VecDeque<Step>>>,
    standing: Mutex<HashMap<String, Step>>,
    calls: Mutex<Vec<(String, Instant)>>,
}

impl Script {
    fn then(&self, id: &str, steps: impl IntoIterator<Item = Step>) -> &Self {
        self.queued.lock().unwrap().entry(id.to_owned()).or_default().extend(steps);
        self
    }

    fn always(&self, id: &str, step: Step) -> &Self {
        self.standing.lock().unwrap().insert(id.to_owned(), step);
        self
    }

    fn next(&self, id: &str) -> Step {
        let queued = self.queued.lock().unwrap().get_mut(id).and_then(VecDeque::pop_front);
        queued.or_else(|| self.standing.lock().unwrap().get(id).cloned()).unwrap_or(Step::Ok)
    }

    /// The deployments called so far, in order.
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().iter().map(|(id, _)| id.clone()).collect()
    }

    /// When each call arrived.
    fn times(&self) -> Vec<Instant> {
        self.calls.lock().unwrap().iter().map(|(_, at)| *at).collect()
    }

    /// The time between consecutive calls.
    fn gaps(&self) -> Vec<Duration> {
        self.times().windows(2).map(|w| w[1] - w[0]).collect()
    }

    fn clear(&self) {
        self.calls.lock().unwrap().clear();
    }
}

fn scripted(
    script: Arc<Script>,
    store: Arc<StateStore>,
) -> impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + Send + Sync + 'static {
    service_fn(move |req: Req| {
        let (script, store) = (script.clone(), store.clone());
        async move {
            let id = selected_id(&req);
            let step = script.next(&id);
            script.calls.lock().unwrap().push((id.clone(), Instant::now()));
            match step {
                Step::Ok => Ok(http::Response::new(RouteBody::from(id))),
                Step::Fail { outcome, status, retry_after, cool_for } => {
                    let deployment = DeploymentId::from(id.as_str());
                    if let Some(ttl) = cool_for {
                        store.bench(&deployment, ttl, "test".into(), Some(status), None).await;
                    }
                    let status = StatusCode::from_u16(status).expect("valid status");
                    let mut e = RouteError::upstream(outcome, deployment, format!("{status} from {id}"))
                        .with_upstream_response(status, Bytes::from(format!("{{\"from\":\"{id}\"}}")));
                    if let Some(ra) = retry_after {
                        e = e.with_retry_after(ra);
                    }
                    Err(e.into())
                }
                Step::Refuse(kind, retry_after) => {
                    let mut e = RouteError::new(kind, format!("refused by a lower layer ({})", kind.as_str()));
                    if let Some(ra) = retry_after {
                        e = e.with_retry_after(ra);
                    }
                    Err(e.into())
                }
                Step::Hang => std::future::pending().await,
            }
        }
    })
}

/// Retry over select over the scripted provider, all seeded.
struct Rig {
    registry: Arc<Registry>,
    store: Arc<StateStore>,
    script: Arc<Script>,
}

impl Rig {
    fn new(registry: Arc<Registry>) -> Self {
        Self { registry, store: Arc::new(StateStore::memory()), script: Arc::default() }
    }

    fn stack(
        &self,
        config: RetryConfig,
    ) -> Retry<Select<impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + Send + use<>>> {
        ServiceBuilder::new()
            .layer(RetryLayer::new(self.registry.clone(), self.store.clone(), config).with_seed(SEED))
            // Declared limits refuse (the refusal tests need them to; no other rig declares any).
            .layer(select(&self.registry, &self.store, RoutingStrategy::SimpleShuffle).enforce_rate_limits(true))
            .service(scripted(self.script.clone(), self.store.clone()))
    }
}

fn one_deployment() -> Rig {
    Rig::new(registry([dep("gpt", "a")]))
}

fn two_deployments() -> Rig {
    Rig::new(registry([dep("gpt", "a"), dep("gpt", "b")]))
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// A wait of `base` plus jitter, which is below 0.75 s.
fn jittered(base: f64) -> Range<Duration> {
    secs(base)..secs(base + 0.75)
}

fn tables(f: impl FnOnce(&mut FallbackTables)) -> FallbackTables {
    let mut t = FallbackTables::default();
    f(&mut t);
    t
}

/// `req` as a fallback layer above with `tables` passes it down: carrying its hint.
fn under_fallbacks(req: Req, tables: FallbackTables) -> Req {
    let ctx = req.route_ctx().expect("a routed request");
    assert!(ctx.set_fallback_hint(FallbackHint::new(tables)), "the first hint of the call");
    req
}

fn list(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

fn upstream_status(err: &BoxError) -> Option<u16> {
    RouteError::find(&**err).and_then(RouteError::upstream_status).map(|s| s.as_u16())
}

// ---------------------------------------------------------------------------------------------
// how many retries (census rows 63-65, 70-72)
// ---------------------------------------------------------------------------------------------

/// Row 63: an authentication error in a group with one deployment is not retried.
#[tokio::test(start_paused = true)]
async fn auth_error_is_not_retried_in_a_single_deployment_group() {
    let rig = one_deployment();
    rig.script.always("a", fail(Outcome::Auth, 401));
    let err = call(&mut rig.stack(RetryConfig::default()), request("gpt")).await.unwrap_err();
    assert_eq!(rig.script.calls(), ["a"]);
    assert_eq!(upstream_status(&err), Some(401));
}

/// The 401/403 exception of the status rule: another deployment may hold a valid key.
#[tokio::test(start_paused = true)]
async fn auth_error_is_retried_on_another_deployment() {
    let rig = two_deployments();
    rig.script.always("a", fail(Outcome::Auth, 401)).always("b", fail(Outcome::Auth, 401));
    let _ = call(&mut rig.stack(RetryConfig::default()), request("gpt")).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 3, "{:?}", rig.script.calls());
}

/// Row 63: a server error is retried `num_retries` = 2 times by default.
#[tokio::test(start_paused = true)]
async fn server_error_is_retried_twice_by_default() {
    let rig = one_deployment();
    rig.script.always("a", server_error());
    let err = call(&mut rig.stack(RetryConfig::default()), request("gpt")).await.unwrap_err();
    assert_eq!(rig.script.calls(), ["a", "a", "a"]);
    assert_eq!(upstream_status(&err), Some(500));
}

/// Row 64: `AuthenticationErrorRetries: 0` stops auth retries even with another deployment.
#[tokio::test(start_paused = true)]
async fn authentication_error_retries_zero_stops_auth_retries() {
    let rig = two_deployments();
    rig.script.always("a", fail(Outcome::Auth, 401)).always("b", fail(Outcome::Auth, 401));
    let policy = RetryPolicy::from_litellm(&BTreeMap::from([("AuthenticationErrorRetries".to_owned(), 0)])).unwrap();
    let _ = call(&mut rig.stack(RetryConfig::default().retry_policy(policy)), request("gpt")).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 1);
}

/// Row 64: `ContentPolicyViolationErrorRetries: 3` retries a content filter refusal three times
/// (the policy lifts the non-retryable-status rule, as in LiteLLM).
#[tokio::test(start_paused = true)]
async fn content_policy_error_retries_three_retries_content_filter_refusals() {
    let rig = one_deployment();
    rig.script.always("a", fail(Outcome::ContentPolicy, 400));
    let policy = RetryPolicy::new().content_policy(3);
    let _ = call(&mut rig.stack(RetryConfig::default().retry_policy(policy)), request("gpt")).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 4);
}

/// Row 65: `model_group_retry_policy` replaces the router's policy for its group only; LiteLLM's
/// never-read `InternalServerErrorRetries` is honoured.
#[tokio::test(start_paused = true)]
async fn group_retry_policy_replaces_the_router_policy_for_its_group() {
    let rig = Rig::new(registry([dep("gpt", "a"), dep("claude", "c")]));
    rig.script.always("a", server_error()).always("c", server_error());
    let config = RetryConfig::default()
        .retry_policy(RetryPolicy::new().internal_server_error(4))
        .group_retry_policy("claude", RetryPolicy::new().internal_server_error(1));
    let mut svc = rig.stack(config);
    let _ = call(&mut svc, request("gpt")).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 5, "router policy: 4 retries");
    rig.script.clear();
    let _ = call(&mut svc, request("claude")).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 2, "group policy: 1 retry");
}

/// Rows 71/72: a deployment's `num_retries` overrides the router's.
#[tokio::test(start_paused = true)]
async fn deployment_num_retries_overrides_the_router() {
    let rig = Rig::new(registry([dep("gpt", "a").num_retries(4), dep("small", "s").num_retries(0)]));
    rig.script.always("a", server_error()).always("s", server_error());
    let mut svc = rig.stack(RetryConfig::default().num_retries(1));
    let _ = call(&mut svc, request("gpt")).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 5);
    rig.script.clear();
    let _ = call(&mut svc, request("small")).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 1);
}

/// A per-request `num_retries` wins over the retry policy, the deployment and the router.
#[tokio::test(start_paused = true)]
async fn request_num_retries_overrides_everything() {
    let rig = Rig::new(registry([dep("gpt", "a").num_retries(4)]));
    rig.script.always("a", server_error());
    let config = RetryConfig::default().num_retries(5).retry_policy(RetryPolicy::new().internal_server_error(6));
    let mut svc = rig.stack(config);
    let none = RouteCtx::with_facts("gpt", RequestFacts::new().num_retries(Some(0)));
    let _ = call(&mut svc, with_ctx(none)).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 1);
    rig.script.clear();
    let three = RouteCtx::with_facts("gpt", RequestFacts::new().num_retries(Some(3)));
    let _ = call(&mut svc, with_ctx(three)).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 4);
}

// ---------------------------------------------------------------------------------------------
// the should-retry table (rows 66, 67, 69)
// ---------------------------------------------------------------------------------------------

/// Rows 66/68: a 429 with another healthy deployment is retried at once, even though it asked
/// for a 10 s wait (LiteLLM's instant retry).
#[tokio::test(start_paused = true)]
async fn rate_limit_with_a_healthy_candidate_is_retried_instantly() {
    let rig = two_deployments();
    let first = {
        // Find which deployment the seeded select tries first, then make only that one fail.
        let probe = two_deployments();
        let _ = call(&mut probe.stack(RetryConfig::default()), request("gpt")).await.unwrap();
        probe.script.calls()[0].clone()
    };
    rig.script.always(&first, fail(Outcome::RateLimited, 429).retry_after(10.0));
    let start = Instant::now();
    let resp = call(&mut rig.stack(RetryConfig::default()), request("gpt")).await.unwrap();
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_ne!(served(&resp).deployment.as_str(), first);
    assert_eq!(served(&resp).retries, 1);
}

/// Row 66: rate limited with nothing healthy left and a general fallback configured: no retry,
/// the fallback layer takes over.
#[tokio::test(start_paused = true)]
async fn rate_limit_with_nothing_healthy_is_not_retried_when_fallbacks_exist() {
    let rig = two_deployments();
    let limited = fail(Outcome::RateLimited, 429).retry_after(5.0).cooled();
    rig.script.always("a", limited.clone()).always("b", limited);
    let fallbacks = tables(|t| {
        t.general.insert("gpt".into(), list(&["claude"]));
    });
    let config = RetryConfig::default().num_retries(5);
    let start = Instant::now();
    let _ = call(&mut rig.stack(config), under_fallbacks(request("gpt"), fallbacks)).await.unwrap_err();
    // One instant retry on the other deployment; then both are benched and the fallback decides.
    assert_eq!(rig.script.calls().len(), 2);
    assert_eq!(start.elapsed(), Duration::ZERO);
}

/// Row 69: no healthy deployment left means no retry, whatever the count allows.
#[tokio::test(start_paused = true)]
async fn no_healthy_candidate_means_no_retry() {
    let rig = one_deployment();
    rig.script.always("a", server_error().cooled());
    let _ = call(&mut rig.stack(RetryConfig::default().num_retries(5)), request("gpt")).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 1);
}

/// Row 67: a context-window error is left to the context-window fallback, even when a policy
/// would retry bad requests.
#[tokio::test(start_paused = true)]
async fn context_window_error_with_a_context_window_fallback_is_not_retried() {
    let rig = one_deployment();
    rig.script.always("a", fail(Outcome::ContextWindowExceeded, 400));
    let fallbacks = tables(|t| {
        t.context_window.insert("gpt".into(), list(&["gpt-long"]));
    });
    let config = RetryConfig::default().retry_policy(RetryPolicy::new().bad_request(3));
    let _ = call(&mut rig.stack(config), under_fallbacks(request("gpt"), fallbacks)).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 1);
}

/// A content filter refusal is left to the content-policy fallback, even with a policy.
#[tokio::test(start_paused = true)]
async fn content_policy_error_with_a_content_policy_fallback_is_not_retried() {
    let rig = one_deployment();
    rig.script.always("a", fail(Outcome::ContentPolicy, 400));
    let fallbacks = tables(|t| {
        t.content_policy.insert("gpt".into(), list(&["gpt-lenient"]));
    });
    let config = RetryConfig::default().retry_policy(RetryPolicy::new().content_policy(3));
    let _ = call(&mut rig.stack(config), under_fallbacks(request("gpt"), fallbacks)).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 1);
}

/// Without a context-window fallback, a `bad_request` policy retries context-window errors
/// (LiteLLM's class mapping: a context-window error is a bad request).
#[tokio::test(start_paused = true)]
async fn bad_request_policy_retries_context_window_errors_without_a_fallback() {
    let rig = one_deployment();
    rig.script.always("a", fail(Outcome::ContextWindowExceeded, 400));
    let config = RetryConfig::default().retry_policy(RetryPolicy::new().bad_request(2));
    let _ = call(&mut rig.stack(config), request("gpt")).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 3);
}

/// Row 69: 404, 400 and 422 are never retried (LiteLLM #19216).
#[tokio::test(start_paused = true)]
async fn not_found_bad_request_and_unprocessable_are_never_retried() {
    for (outcome, status) in [(Outcome::NotFound, 404), (Outcome::BadRequest, 400), (Outcome::BadRequest, 422)] {
        let rig = two_deployments();
        rig.script.always("a", fail(outcome, status)).always("b", fail(outcome, status));
        let err = call(&mut rig.stack(RetryConfig::default().num_retries(3)), request("gpt")).await.unwrap_err();
        assert_eq!(rig.script.calls().len(), 1, "{status}");
        assert_eq!(upstream_status(&err), Some(status));
    }
}

/// The table is read after every failure, not only the first: a 400 on the retry ends the call.
#[tokio::test(start_paused = true)]
async fn should_retry_is_evaluated_after_every_attempt() {
    let rig = one_deployment();
    rig.script.then("a", [server_error(), fail(Outcome::BadRequest, 400), Step::Ok]);
    let err = call(&mut rig.stack(RetryConfig::default().num_retries(5)), request("gpt")).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 2);
    assert_eq!(upstream_status(&err), Some(400));
}

/// Our own refusals that no wait can fix are never retried.
/// Our own refusals are not retried: another attempt now would meet the same refusal. Waiting for
/// a cooldown is the cooldown layer's opt-in `wait_for_cooldown`; the rest goes to the fallbacks.
#[tokio::test(start_paused = true)]
async fn our_own_refusals_are_never_retried() {
    for kind in [
        RouteErrorKind::UnknownGroup,
        RouteErrorKind::NoCandidates,
        RouteErrorKind::BudgetExceeded,
        RouteErrorKind::ContextWindowExceeded,
        RouteErrorKind::AllCoolingDown,
        RouteErrorKind::RateLimited,
    ] {
        let rig = one_deployment();
        rig.script.always("a", Step::Refuse(kind, Some(secs(1.0))));
        let start = Instant::now();
        let err = call(&mut rig.stack(RetryConfig::default().num_retries(3)), request("gpt")).await.unwrap_err();
        assert_eq!((rig.script.calls().len(), start.elapsed()), (1, Duration::ZERO), "{kind:?}");
        route_error(&err, kind);
    }
}

/// The select layer's own "every deployment is at its RPM limit" refusal comes back at once,
/// saying when the window frees.
#[tokio::test(start_paused = true)]
async fn rpm_refusal_from_select_is_returned_at_once_with_its_wait() {
    let rig = Rig::new(registry([dep("gpt", "a").rpm(1)]));
    let taken = rig.store.try_reserve(&DeploymentId::from("a"), Limits { rpm: Some(1), tpm: None }, 0).await;
    assert!(matches!(taken, Admission::Admitted(_)));
    let start = Instant::now();
    let err = call(&mut rig.stack(RetryConfig::default()), request("gpt")).await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert!(rig.script.calls().is_empty());
    assert_eq!(route_error(&err, RouteErrorKind::RateLimited).retry_after(), Some(Duration::from_secs(60)));
}

// ---------------------------------------------------------------------------------------------
// exclusion
// ---------------------------------------------------------------------------------------------

/// The deployment that failed is not tried again by the next attempt.
#[tokio::test(start_paused = true)]
async fn failed_deployment_is_excluded_from_the_next_attempt() {
    let rig = two_deployments();
    rig.script.always("a", server_error()).always("b", server_error());
    let mut svc = rig.stack(RetryConfig::default().num_retries(1));
    for _ in 0..10 {
        rig.script.clear();
        let _ = call(&mut svc, request("gpt")).await.unwrap_err();
        let calls = rig.script.calls();
        assert_eq!(calls.len(), 2);
        assert_ne!(calls[0], calls[1]);
    }
}

/// The only deployment of a group is retried.
#[tokio::test(start_paused = true)]
async fn only_deployment_of_a_group_is_retried() {
    let rig = one_deployment();
    rig.script.then("a", [server_error()]);
    let resp = call(&mut rig.stack(RetryConfig::default()), request("gpt")).await.unwrap();
    assert_eq!(rig.script.calls(), ["a", "a"]);
    assert_eq!(served(&resp).retries, 1);
}

/// With the real cooldown layer below: a deployment benched by someone else is never tried, and
/// the one that failed is retried (after a backoff) because it is the only one that can serve.
#[tokio::test(start_paused = true)]
async fn failed_deployment_is_retried_when_it_is_the_only_one_that_can_serve() {
    let rig = two_deployments();
    rig.store.bench(&DeploymentId::from("b"), secs(60.0), "benched".into(), Some(429), None).await;
    rig.script.then("a", [server_error()]);
    let mut svc = ServiceBuilder::new()
        .layer(RetryLayer::new(rig.registry.clone(), rig.store.clone(), RetryConfig::default()).with_seed(SEED))
        .layer(CooldownLayer::new(rig.registry.clone(), rig.store.clone(), CooldownConfig::default()))
        .layer(select(&rig.registry, &rig.store, RoutingStrategy::SimpleShuffle))
        .service(scripted(rig.script.clone(), rig.store.clone()));
    let resp = call(&mut svc, request("gpt")).await.unwrap();
    assert_eq!(rig.script.calls(), ["a", "a"]);
    assert_eq!(served(&resp).retries, 1);
    assert!(jittered(0.5).contains(&rig.script.gaps()[0]), "{:?}", rig.script.gaps());
}

/// With the real cooldown layer below: a 429 benches the deployment and the retry goes at once to
/// the other one.
#[tokio::test(start_paused = true)]
async fn rate_limited_deployment_is_benched_and_the_retry_is_instant() {
    let rig = two_deployments();
    let limited = fail(Outcome::RateLimited, 429).retry_after(30.0);
    rig.script.always("a", limited.clone()).always("b", limited);
    let mut svc = ServiceBuilder::new()
        .layer(RetryLayer::new(rig.registry.clone(), rig.store.clone(), RetryConfig::default()).with_seed(SEED))
        .layer(CooldownLayer::new(rig.registry.clone(), rig.store.clone(), CooldownConfig::default()))
        .layer(select(&rig.registry, &rig.store, RoutingStrategy::SimpleShuffle))
        .service(scripted(rig.script.clone(), rig.store.clone()));
    let start = Instant::now();
    let err = call(&mut svc, request("gpt")).await.unwrap_err();
    let calls = rig.script.calls();
    // Both benched for their Retry-After (30 s): nothing healthy is left and 30 s fits the wait
    // rules, but both are upstream 429s, so row 7 ends the call without waiting.
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_ne!(calls[0], calls[1]);
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(upstream_status(&err), Some(429));
}

/// Once every deployment has failed, the next round skips only the one that failed last.
#[tokio::test(start_paused = true)]
async fn after_every_deployment_failed_the_next_round_skips_the_last_one() {
    let rig = two_deployments();
    rig.script.always("a", server_error()).always("b", server_error());
    let _ = call(&mut rig.stack(RetryConfig::default().num_retries(3)), request("gpt")).await.unwrap_err();
    let calls = rig.script.calls();
    assert_eq!(calls.len(), 4);
    assert!(calls.windows(2).all(|w| w[0] != w[1]), "{calls:?}");
}

// ---------------------------------------------------------------------------------------------
// backoff (row 68)
// ---------------------------------------------------------------------------------------------

/// Each wait uses the Retry-After of the error just seen, not the first one (LiteLLM #20722).
#[tokio::test(start_paused = true)]
async fn backoff_uses_the_latest_errors_retry_after() {
    let rig = one_deployment();
    rig.script.then("a", [server_error().retry_after(1.0), server_error().retry_after(3.0), Step::Ok]);
    let _ = call(&mut rig.stack(RetryConfig::default()), request("gpt")).await.unwrap();
    let gaps = rig.script.gaps();
    assert!(jittered(1.0).contains(&gaps[0]), "{gaps:?}");
    assert!(jittered(3.0).contains(&gaps[1]), "{gaps:?}");
}

/// Without a Retry-After a lone deployment is retried after 0.5, 1, 2, 4, 8, 8 s (plus jitter).
#[tokio::test(start_paused = true)]
async fn backoff_doubles_from_half_a_second_and_caps_at_8_seconds() {
    let rig = one_deployment();
    rig.script.always("a", server_error());
    let _ = call(&mut rig.stack(RetryConfig::default().num_retries(6)), request("gpt")).await.unwrap_err();
    let gaps = rig.script.gaps();
    assert_eq!(gaps.len(), 6);
    for (gap, base) in gaps.iter().zip([0.5, 1.0, 2.0, 4.0, 8.0, 8.0]) {
        assert!(jittered(base).contains(gap), "{gaps:?}");
    }
}

/// A Retry-After over a minute is ignored for the backoff (cooldowns and fallbacks handle it).
#[tokio::test(start_paused = true)]
async fn retry_after_over_a_minute_falls_back_to_the_exponential_backoff() {
    let rig = one_deployment();
    rig.script.then("a", [server_error().retry_after(120.0), Step::Ok]);
    let _ = call(&mut rig.stack(RetryConfig::default()), request("gpt")).await.unwrap();
    assert!(jittered(0.5).contains(&rig.script.gaps()[0]));
}

/// The router's `retry_after` is a floor for every computed wait and is not capped at 8 s
/// (LiteLLM clamps it to 8 s).
#[tokio::test(start_paused = true)]
async fn retry_after_floor_is_respected_and_not_capped_at_8_seconds() {
    let rig = one_deployment();
    rig.script.then("a", [server_error(), server_error().retry_after(1.0), Step::Ok]);
    let _ = call(&mut rig.stack(RetryConfig::default().retry_after(secs(20.0))), request("gpt")).await.unwrap();
    let gaps = rig.script.gaps();
    assert!(jittered(20.0).contains(&gaps[0]), "{gaps:?}");
    assert!(jittered(20.0).contains(&gaps[1]), "{gaps:?}");
}

/// The call ends as soon as the last attempt fails: its total time is the waits between attempts.
#[tokio::test(start_paused = true)]
async fn no_sleep_after_the_last_attempt() {
    let rig = one_deployment();
    rig.script.always("a", server_error());
    let start = Instant::now();
    let _ = call(&mut rig.stack(RetryConfig::default()), request("gpt")).await.unwrap_err();
    let between: Duration = rig.script.gaps().iter().sum();
    assert_eq!(rig.script.times()[0], start);
    assert_eq!(start.elapsed(), between);
}

// ---------------------------------------------------------------------------------------------
// deadline and budget
// ---------------------------------------------------------------------------------------------

/// The call's deadline is never slept past: when the next wait would cross it, the call ends with
/// the last error.
#[tokio::test(start_paused = true)]
async fn deadline_stops_retries_before_sleeping_past_it() {
    let rig = one_deployment();
    rig.script.always("a", server_error().retry_after(2.0));
    let start = Instant::now();
    let config = RetryConfig::default().num_retries(5);
    let mut stack = DeadlineLayer::new(secs(3.0)).layer(rig.stack(config));
    let err = call(&mut stack, request("gpt")).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 2);
    assert!(jittered(2.0).contains(&start.elapsed()), "{:?}", start.elapsed());
    assert_eq!(RouteError::find(&*err).unwrap().trail().len(), 2);
}

/// A deadline already in the request (set by an outer layer) wins over the configured one.
#[tokio::test(start_paused = true)]
async fn deadline_in_the_request_is_kept() {
    let rig = one_deployment();
    rig.script.always("a", server_error().retry_after(5.0));
    let mut ctx = RouteCtx::new("gpt");
    ctx.deadline = Some(Instant::now() + secs(1.0));
    let start = Instant::now();
    let mut stack = DeadlineLayer::new(secs(60.0)).layer(rig.stack(RetryConfig::default()));
    let _ = call(&mut stack, with_ctx(ctx)).await.unwrap_err();
    assert_eq!((rig.script.calls().len(), start.elapsed()), (1, Duration::ZERO));
}

/// The shared budget allows `ratio` retries per call: empty, it stops retries; traffic refills it.
#[tokio::test(start_paused = true)]
async fn retry_budget_stops_retries_when_exhausted_and_refills_with_traffic() {
    let rig = Rig::new(registry([dep("gpt", "a"), dep("ok", "b")]));
    rig.script.always("a", server_error());
    let budget = Arc::new(RetryBudget::new(0.5, 0).unwrap());
    let mut svc = rig.stack(RetryConfig::default().budget(budget.clone()));
    let mut attempts = Vec::new();
    for _ in 0..2 {
        rig.script.clear();
        let _ = call(&mut svc, request("gpt")).await.unwrap_err();
        attempts.push(rig.script.calls().len());
    }
    // 0.5 token after the first call: no retry; 1.0 after the second: one retry, then empty.
    assert_eq!(attempts, [1, 2]);
    for _ in 0..4 {
        call(&mut svc, request("ok")).await.unwrap();
    }
    rig.script.clear();
    let _ = call(&mut svc, request("gpt")).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 3, "four healthy calls paid for two retries");
    assert_eq!(budget.balance(), 0.5);
}

// ---------------------------------------------------------------------------------------------
// results
// ---------------------------------------------------------------------------------------------

/// `Served::retries` counts the retries made in the group; `attempts` stays the select layer's.
#[tokio::test(start_paused = true)]
async fn served_retries_counts_the_retries_in_the_group() {
    let rig = one_deployment();
    rig.script.then("a", [server_error(), fail(Outcome::Timeout, 408)]);
    let resp = call(&mut rig.stack(RetryConfig::default()), request("gpt")).await.unwrap();
    assert_eq!((served(&resp).retries, served(&resp).attempts), (2, 3));
    assert_eq!(served(&resp).failed.len(), 2);
}

/// The call fails with the last attempt's error, which carries every attempt in its trail.
#[tokio::test(start_paused = true)]
async fn final_error_is_the_last_attempts_and_carries_the_trail() {
    let rig = one_deployment();
    rig.script.then("a", [server_error(), fail(Outcome::ServerError, 503), fail(Outcome::ServerError, 502)]);
    let err = call(&mut rig.stack(RetryConfig::default()), request("gpt")).await.unwrap_err();
    let route = route_error(&err, RouteErrorKind::Upstream);
    assert_eq!(route.upstream_status(), Some(StatusCode::BAD_GATEWAY));
    assert_eq!(route.upstream_body(), Some(&Bytes::from_static(br#"{"from":"a"}"#)));
    assert_eq!(route.deployment().map(DeploymentId::as_str), Some("a"));
    let trail: Vec<_> = route.trail().iter().map(|r| (r.deployment.as_str(), r.outcome)).collect();
    assert_eq!(trail, [("a", Outcome::ServerError); 3]);
}

/// A request that cannot be cloned gets exactly one attempt.
#[tokio::test(start_paused = true)]
async fn request_that_cannot_be_replayed_is_sent_once() {
    struct OneShot(RouteCtx);
    impl RouteRequest for OneShot {
        fn route_ctx(&self) -> Option<&RouteCtx> {
            Some(&self.0)
        }
        fn route_ctx_mut(&mut self) -> Option<&mut RouteCtx> {
            Some(&mut self.0)
        }
        fn try_clone_request(&self) -> Option<Self> {
            None
        }
    }
    let registry = registry([dep("gpt", "a")]);
    let store = Arc::new(StateStore::memory());
    let calls = Arc::new(Mutex::new(0));
    let provider = service_fn({
        let calls = calls.clone();
        move |req: OneShot| {
            *calls.lock().unwrap() += 1;
            let id = req.0.selected.as_ref().map(|d| d.id.clone()).expect("selected");
            async move { Err::<Resp, BoxError>(RouteError::upstream(Outcome::ServerError, id, "500").into()) }
        }
    });
    let mut svc = ServiceBuilder::new()
        .layer(RetryLayer::new(registry.clone(), store.clone(), RetryConfig::default()).with_seed(SEED))
        .layer(select(&registry, &store, RoutingStrategy::SimpleShuffle))
        .service(provider);
    let err = svc.ready().await.unwrap().call(OneShot(RouteCtx::new("gpt"))).await.unwrap_err();
    assert_eq!(*calls.lock().unwrap(), 1);
    assert_eq!(RouteError::find(&*err).unwrap().trail().len(), 1);
}

// ---------------------------------------------------------------------------------------------
// cancellation
// ---------------------------------------------------------------------------------------------

/// Dropping the call while it waits to retry leaves nothing in flight and nothing running.
#[tokio::test(start_paused = true)]
async fn cancelling_during_backoff_leaks_nothing() {
    let rig = one_deployment();
    rig.script.always("a", server_error().retry_after(5.0));
    let mut svc = rig.stack(RetryConfig::default());
    let cancelled = timeout(secs(1.0), call(&mut svc, request("gpt"))).await;
    assert!(cancelled.is_err(), "still backing off when dropped");
    assert_eq!(rig.store.local().in_flight(&DeploymentId::from("a")), 0);
    advance(secs(60.0)).await;
    sleep(secs(1.0)).await;
    assert_eq!(rig.script.calls().len(), 1, "no retry ran after the drop");
}

/// Dropping the call mid-attempt releases the attempt's in-flight count.
#[tokio::test(start_paused = true)]
async fn cancelling_mid_attempt_leaks_nothing() {
    let rig = one_deployment();
    rig.script.then("a", [server_error(), Step::Hang]);
    let mut svc = rig.stack(RetryConfig::default());
    let cancelled = timeout(secs(10.0), call(&mut svc, request("gpt"))).await;
    assert!(cancelled.is_err());
    assert_eq!(rig.script.calls().len(), 2, "dropped during the retry");
    assert_eq!(rig.store.local().in_flight(&DeploymentId::from("a")), 0);
}

// ---------------------------------------------------------------------------------------------
// which fallbacks count
// ---------------------------------------------------------------------------------------------

/// With `disable_fallbacks` on the request, no fallback table takes the failure: a policy retries
/// the context-window error in the group.
#[tokio::test(start_paused = true)]
async fn disabled_fallbacks_leave_context_window_errors_to_the_retry_policy() {
    let rig = one_deployment();
    rig.script.always("a", fail(Outcome::ContextWindowExceeded, 400));
    let fallbacks = tables(|t| {
        t.context_window.insert("gpt".into(), list(&["gpt-long"]));
    });
    let config = RetryConfig::default().retry_policy(RetryPolicy::new().bad_request(2));
    let ctx = RouteCtx::with_facts("gpt", RequestFacts::new().disable_fallbacks(true));
    let _ = call(&mut rig.stack(config), under_fallbacks(with_ctx(ctx), fallbacks)).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 3);
}

/// A group named with a provider prefix matches a fallback entry without it, as in the fallback layer.
#[tokio::test(start_paused = true)]
async fn fallback_entries_match_a_group_name_without_its_provider_prefix() {
    let rig = Rig::new(registry([dep("openai/gpt-4o", "a")]));
    rig.script.always("a", fail(Outcome::ContentPolicy, 400));
    let fallbacks = tables(|t| {
        t.content_policy.insert("gpt-4o".into(), list(&["claude"]));
    });
    let config = RetryConfig::default().retry_policy(RetryPolicy::new().content_policy(2));
    let _ = call(&mut rig.stack(config), under_fallbacks(request("openai/gpt-4o"), fallbacks)).await.unwrap_err();
    assert_eq!(rig.script.calls().len(), 1);
}
