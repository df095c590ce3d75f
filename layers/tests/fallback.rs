//! Behaviour of the fallback layer over the real select layer and a scripted provider: which
//! group answers, how many hops it took, and what a failed call reports.

mod support;

use std::{collections::HashMap, sync::Arc, time::Duration};

use bytes::Bytes;
use parking_lot::Mutex;
use proptest::prelude::*;
use support::{Req, Resp, call, dep, route_error, served, with_ctx};
use switchyard_layers::{
    BoxError, Outcome, Registry, RequestFacts, RouteBody, RouteCtx, RouteError, RouteErrorKind, RouteRequest,
    StateStore,
    deadline::DeadlineLayer,
    fallback::{FallbackConfig, FallbackEvent, FallbackLayer, FallbackTable, FallbackTables},
    retry::{RetryConfig, RetryLayer},
    select::{RoutingStrategy, SelectLayer},
};
use tokio::time::Instant;
use tower::{
    Layer, Service, ServiceBuilder,
    layer::layer_fn,
    service_fn,
    util::{BoxCloneService, Either, MapRequest, MapResultLayer},
};

// ===== fixtures =====

/// How the scripted upstream answers for one deployment.
#[derive(Clone)]
enum Answer {
    Ok,
    Fail(Outcome),
    /// One of our own refusals (as a layer below the fallback would return it).
    Refuse(RouteErrorKind),
}

/// What the provider saw of one attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    target: String,
    hop: u32,
    excluded: usize,
    deadline: Option<Instant>,
}

/// A provider answering per deployment id, else per target name (anything not in the script
/// succeeds), taking
/// `delay` per attempt, and recording what each attempt carried.
#[derive(Clone)]
struct Upstream {
    script: Arc<HashMap<String, Answer>>,
    delay: Duration,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Upstream {
    fn new(script: &[(&str, Answer)]) -> Self {
        let script = script.iter().map(|(id, a)| ((*id).to_owned(), a.clone())).collect();
        Self { script: Arc::new(script), delay: Duration::ZERO, seen: Arc::default() }
    }

    fn failing(ids: &[&str], outcome: Outcome) -> Self {
        Self::new(&ids.iter().map(|id| (*id, Answer::Fail(outcome))).collect::<Vec<_>>())
    }

    fn slow(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().clone()
    }

    fn service(&self) -> impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + Send + 'static {
        let this = self.clone();
        service_fn(move |req: Req| {
            let this = this.clone();
            async move {
                let ctx = req.route_ctx().expect("a routed request");
                let d = ctx.selected.clone().expect("the select layer chose");
                this.seen.lock().push(Seen {
                    target: ctx.target().to_owned(),
                    hop: ctx.hop,
                    excluded: ctx.excluded.len(),
                    deadline: ctx.deadline,
                });
                tokio::time::sleep(this.delay).await;
                let answer = this.script.get(d.id.as_str()).or_else(|| this.script.get(ctx.target()));
                match answer.cloned().unwrap_or(Answer::Ok) {
                    Answer::Ok => Ok(http::Response::new(RouteBody::from(d.id.to_string()))),
                    Answer::Fail(outcome) => {
                        let body = Bytes::from(format!(r#"{{"error":{{"message":"{} failed"}}}}"#, d.id));
                        Err(RouteError::upstream(outcome, d.id.clone(), format!("{} failed: {outcome}", d.id))
                            .with_upstream_response(outcome.http_status(), body)
                            .into())
                    }
                    Answer::Refuse(kind) => {
                        Err(RouteError::new(kind, format!("{} refused", d.id)).with_group(d.group.clone()).into())
                    }
                }
            }
        })
    }
}

/// One deployment per group, its id the group's name with `/` and `*` spelled out.
fn registry(groups: &[&str]) -> Arc<Registry> {
    support::registry(groups.iter().map(|g| dep(g, &id_of(g))))
}

fn id_of(group: &str) -> String {
    format!("{}-d", group.replace('/', "-").replace('*', "star"))
}

/// The fallback layer over the real select layer over `upstream`, with every event collected.
fn stack(
    registry: &Arc<Registry>,
    config: FallbackConfig,
    upstream: &Upstream,
) -> (impl Service<Req, Response = Resp, Error = BoxError> + Clone + Send + 'static, Arc<Mutex<Vec<FallbackEvent>>>) {
    let events: Arc<Mutex<Vec<FallbackEvent>>> = Arc::default();
    let sink = events.clone();
    let fallback = FallbackLayer::new(registry.clone(), config).on_event(move |e| sink.lock().push(e.clone()));
    let select =
        SelectLayer::new(registry.clone(), Arc::new(StateStore::memory()), RoutingStrategy::SimpleShuffle.build())
            .with_seed(1);
    (ServiceBuilder::new().layer(fallback).layer(select).service(upstream.service()), events)
}

/// The fallback layer over a retry layer (`num_retries` per group, no backoff) over the real
/// select layer over `upstream`, with every event collected: the default router's shape.
fn stack_with_retry(
    registry: &Arc<Registry>,
    config: FallbackConfig,
    num_retries: u32,
    upstream: &Upstream,
) -> (impl Service<Req, Response = Resp, Error = BoxError> + Clone + Send + 'static, Arc<Mutex<Vec<FallbackEvent>>>) {
    stack_over_retry(registry, config, RetryConfig::default().num_retries(num_retries), Between::Nothing, upstream)
}

/// A user's layer between the fallback and the retry layers, and what it does.
#[derive(Clone, Copy, Debug)]
enum Between {
    /// No layer at all.
    Nothing,
    /// A `layer_fn` wrapper that passes every request and answer through.
    PassThrough,
    /// Wraps errors in another error type (as a `map_err` or a timeout layer would).
    WrapErrors,
    /// Answers instead of an error (as a layer serving a canned response would).
    SwallowErrors,
    /// Sets a deadline on each request it sees (a per-group time budget).
    Deadline(Duration),
}

impl Between {
    /// `inner` behind this layer.
    fn wrap<S>(self, inner: S) -> Either<S, BoxCloneService<Req, Resp, BoxError>>
    where
        S: Service<Req, Response = Resp, Error = BoxError> + Clone + Send + 'static,
        S::Future: Send + 'static,
    {
        let boxed = match self {
            Self::Nothing => return Either::Left(inner),
            Self::PassThrough => BoxCloneService::new(layer_fn(|s| MapRequest::new(s, |r: Req| r)).layer(inner)),
            Self::WrapErrors => BoxCloneService::new(
                MapResultLayer::new(|r: Result<Resp, BoxError>| r.map_err(|e| Box::new(Wrapped(e)) as BoxError))
                    .layer(inner),
            ),
            Self::SwallowErrors => BoxCloneService::new(
                MapResultLayer::new(|r: Result<Resp, BoxError>| {
                    r.or_else(|_| Ok(http::Response::new(RouteBody::from("canned"))))
                })
                .layer(inner),
            ),
            Self::Deadline(d) => BoxCloneService::new(DeadlineLayer::new(d).layer(inner)),
        };
        Either::Right(boxed)
    }
}

/// An error wrapping another.
#[derive(Debug)]
struct Wrapped(BoxError);

impl std::fmt::Display for Wrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "wrapped: {}", self.0)
    }
}

impl std::error::Error for Wrapped {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

/// The fallback layer over `between` over a retry layer with `retry` over the select layer.
fn stack_over_retry(
    registry: &Arc<Registry>,
    config: FallbackConfig,
    retry: RetryConfig,
    between: Between,
    upstream: &Upstream,
) -> (impl Service<Req, Response = Resp, Error = BoxError> + Clone + Send + 'static, Arc<Mutex<Vec<FallbackEvent>>>) {
    let events: Arc<Mutex<Vec<FallbackEvent>>> = Arc::default();
    let sink = events.clone();
    let fallback = FallbackLayer::new(registry.clone(), config).on_event(move |e| sink.lock().push(e.clone()));
    let store = Arc::new(StateStore::memory());
    let retry = RetryLayer::new(registry.clone(), store.clone(), retry).with_seed(2);
    let select = SelectLayer::new(registry.clone(), store, RoutingStrategy::SimpleShuffle.build()).with_seed(1);
    let below = ServiceBuilder::new().layer(retry).layer(select).service(upstream.service());
    (fallback.layer(between.wrap(below)), events)
}

fn request(model: &str) -> Req {
    with_ctx(RouteCtx::new(model))
}

/// A request for `model` carrying a marker every copy of the request clones: its strong count
/// is 1 again once no copy is left.
fn marked_request(model: &str) -> (Req, Arc<()>) {
    let marker = Arc::new(());
    let mut req = request(model);
    req.extensions_mut().insert(marker.clone());
    (req, marker)
}

fn request_with(model: &str, facts: RequestFacts) -> Req {
    with_ctx(RouteCtx::with_facts(model, facts))
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|n| (*n).to_owned()).collect()
}

/// The groups of a trail, in order.
fn trail_groups(err: &RouteError) -> Vec<String> {
    err.trail().iter().map(|r| r.group.to_string()).collect()
}

fn hop_count(events: &Mutex<Vec<FallbackEvent>>) -> usize {
    events.lock().iter().filter(|e| matches!(e, FallbackEvent::Hop { .. })).count()
}

// ===== hop counts (census §3.5 #74) =====

#[tokio::test(start_paused = true)]
async fn direct_success_reports_zero_hops() {
    let reg = registry(&["a", "b"]);
    let (mut svc, events) = stack(&reg, FallbackConfig::new().fallbacks("a", ["b"]), &Upstream::new(&[]));
    let resp = call(&mut svc, request("a")).await.expect("served");
    assert_eq!((&*served(&resp).group, served(&resp).hops), ("a", 0));
    assert!(events.lock().is_empty());
}

#[tokio::test(start_paused = true)]
async fn one_fallback_reports_one_hop() {
    let reg = registry(&["a", "b"]);
    let up = Upstream::failing(&["a-d"], Outcome::ServerError);
    let (mut svc, _) = stack(&reg, FallbackConfig::new().fallbacks("a", ["b"]), &up);
    let resp = call(&mut svc, request("a")).await.expect("served");
    assert_eq!((&*served(&resp).group, served(&resp).hops), ("b", 1));
}

#[tokio::test(start_paused = true)]
async fn third_fallback_reports_three_hops_not_the_innermost_level() {
    let reg = registry(&["a", "b", "c", "d"]);
    let up = Upstream::failing(&["a-d", "b-d", "c-d"], Outcome::ServerError);
    let config = FallbackConfig::new().fallbacks("a", ["b"]).fallbacks("b", ["c"]).fallbacks("c", ["d"]);
    let (mut svc, _) = stack(&reg, config, &up);
    let resp = call(&mut svc, request("a")).await.expect("served");
    let s = served(&resp);
    assert_eq!((&*s.group, s.hops, s.attempts), ("d", 3, 4));
    assert_eq!(s.failed.iter().map(|r| &*r.group).collect::<Vec<_>>(), ["a", "b", "c"]);
    let hops: Vec<_> = up.seen().iter().map(|s| (s.target.clone(), s.hop)).collect();
    assert_eq!(hops, [("a".into(), 0), ("b".into(), 1), ("c".into(), 2), ("d".into(), 3)]);
}

// ===== loops, disable, defaults (#75-#78) =====

#[tokio::test(start_paused = true)]
async fn default_and_specific_fallbacks_never_loop() {
    let reg = registry(&["a", "b"]);
    let up = Upstream::failing(&["a-d", "b-d"], Outcome::Auth);
    let config = FallbackConfig::new().fallbacks("a", ["b"]).fallbacks("b", ["a"]).default_fallbacks(["a", "b"]);
    let (mut svc, events) = stack(&reg, config, &up);
    let err = call(&mut svc, request("a")).await.expect_err("every group fails");
    let route = route_error(&err, RouteErrorKind::Upstream);
    assert_eq!(trail_groups(route), ["a", "b"]);
    assert_eq!(route.deployment().map(|d| d.as_str()), Some("b-d"));
    assert_eq!(hop_count(&events), 1);
}

#[tokio::test(start_paused = true)]
async fn disable_fallbacks_makes_no_hop() {
    let reg = registry(&["a", "b"]);
    let up = Upstream::failing(&["a-d"], Outcome::ServerError);
    let (mut svc, events) = stack(&reg, FallbackConfig::new().fallbacks("a", ["b"]), &up);
    let req = request_with("a", RequestFacts::new().disable_fallbacks(true));
    let err = call(&mut svc, req).await.expect_err("no fallback");
    let route = route_error(&err, RouteErrorKind::Upstream);
    assert_eq!(trail_groups(route), ["a"]);
    assert!(events.lock().is_empty());
    assert_eq!(up.seen().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn default_fallbacks_serve_a_group_without_an_entry() {
    let reg = registry(&["a", "b", "c"]);
    let up = Upstream::failing(&["a-d"], Outcome::ServerError);
    let config = FallbackConfig::new().fallbacks("b", ["a"]).default_fallbacks(["c"]);
    let (mut svc, events) = stack(&reg, config, &up);
    let resp = call(&mut svc, request("a")).await.expect("served");
    assert_eq!(&*served(&resp).group, "c");
    assert!(matches!(events.lock()[0], FallbackEvent::Hop { table: FallbackTable::Default, .. }));
}

#[tokio::test(start_paused = true)]
async fn unknown_model_is_served_by_the_first_default_fallback() {
    let reg = registry(&["a", "b"]);
    let (mut svc, _) = stack(&reg, FallbackConfig::new().default_fallbacks(["b", "a"]), &Upstream::new(&[]));
    let resp = call(&mut svc, request("no-such-model")).await.expect("served");
    assert_eq!((&*served(&resp).group, served(&resp).hops), ("b", 1));
}

#[tokio::test(start_paused = true)]
async fn unknown_model_without_default_fallbacks_is_an_unknown_group_error() {
    let reg = registry(&["a", "b"]);
    let (mut svc, _) = stack(&reg, FallbackConfig::new().fallbacks("a", ["b"]), &Upstream::new(&[]));
    let err = call(&mut svc, request("no-such-model")).await.expect_err("unknown");
    let route = route_error(&err, RouteErrorKind::UnknownGroup);
    assert_eq!(route.known_groups(), ["a", "b"]);
}

// ===== per-request list (#79) =====

#[tokio::test(start_paused = true)]
async fn per_request_fallbacks_override_the_table() {
    let reg = registry(&["a", "b", "c"]);
    let up = Upstream::failing(&["a-d"], Outcome::ServerError);
    let (mut svc, events) = stack(&reg, FallbackConfig::new().fallbacks("a", ["b"]), &up);
    let req = request_with("a", RequestFacts::new().fallbacks(Some(names(&["c"]))));
    let resp = call(&mut svc, req).await.expect("served");
    assert_eq!(&*served(&resp).group, "c");
    assert!(up.seen().iter().all(|s| s.target != "b"));
    assert!(matches!(events.lock()[0], FallbackEvent::Hop { table: FallbackTable::PerRequest, .. }));
}

#[tokio::test(start_paused = true)]
async fn per_request_fallbacks_are_tried_in_order_each_once() {
    let reg = registry(&["a", "b", "c"]);
    let up = Upstream::failing(&["a-d", "b-d"], Outcome::RateLimited);
    let (mut svc, _) = stack(&reg, FallbackConfig::new(), &up);
    let req = request_with("a", RequestFacts::new().fallbacks(Some(names(&["a", "b", "c"]))));
    let resp = call(&mut svc, req).await.expect("served");
    assert_eq!((&*served(&resp).group, served(&resp).hops), ("c", 2));
    let targets: Vec<_> = up.seen().into_iter().map(|s| s.target).collect();
    assert_eq!(targets, ["a", "b", "c"]);
}

// ===== content policy and context window tables (#80, #82) =====

#[tokio::test(start_paused = true)]
async fn content_policy_error_goes_to_the_content_policy_table() {
    let reg = registry(&["a", "b", "safe"]);
    let up = Upstream::failing(&["a-d"], Outcome::ContentPolicy);
    let config = FallbackConfig::new().fallbacks("a", ["b"]).content_policy_fallbacks("a", ["safe"]);
    let (mut svc, events) = stack(&reg, config, &up);
    let resp = call(&mut svc, request("a")).await.expect("served");
    assert_eq!(&*served(&resp).group, "safe");
    assert!(matches!(
        events.lock()[0],
        FallbackEvent::Hop { table: FallbackTable::ContentPolicy, reason: Some(Outcome::ContentPolicy), .. }
    ));
}

#[tokio::test(start_paused = true)]
async fn context_window_error_goes_to_the_context_window_table() {
    let reg = registry(&["a", "b", "big"]);
    let up = Upstream::failing(&["a-d"], Outcome::ContextWindowExceeded);
    let config = FallbackConfig::new().fallbacks("a", ["b"]).context_window_fallbacks("a", ["big"]);
    let (mut svc, _) = stack(&reg, config, &up);
    let resp = call(&mut svc, request("a")).await.expect("served");
    assert_eq!(&*served(&resp).group, "big");
}

#[tokio::test(start_paused = true)]
async fn context_window_error_without_an_entry_uses_the_general_table() {
    let reg = registry(&["a", "b", "big"]);
    let up = Upstream::failing(&["a-d"], Outcome::ContextWindowExceeded);
    let config = FallbackConfig::new().fallbacks("a", ["b"]).context_window_fallbacks("other", ["big"]);
    let (mut svc, events) = stack(&reg, config, &up);
    let resp = call(&mut svc, request("a")).await.expect("served");
    assert_eq!(&*served(&resp).group, "b");
    assert!(matches!(events.lock()[0], FallbackEvent::Hop { table: FallbackTable::General, .. }));
}

#[tokio::test(start_paused = true)]
async fn our_context_window_refusal_reads_the_context_window_table() {
    let reg = registry(&["a", "b", "big"]);
    let up = Upstream::new(&[("a-d", Answer::Refuse(RouteErrorKind::ContextWindowExceeded))]);
    let config = FallbackConfig::new().fallbacks("a", ["b"]).context_window_fallbacks("a", ["big"]);
    let (mut svc, _) = stack(&reg, config, &up);
    let resp = call(&mut svc, request("a")).await.expect("served");
    assert_eq!(&*served(&resp).group, "big");
}

#[tokio::test(start_paused = true)]
async fn all_cooling_down_falls_back_through_the_general_table() {
    let reg = registry(&["a", "b"]);
    let up = Upstream::new(&[("a-d", Answer::Refuse(RouteErrorKind::AllCoolingDown))]);
    let (mut svc, events) = stack(&reg, FallbackConfig::new().fallbacks("a", ["b"]), &up);
    let resp = call(&mut svc, request("a")).await.expect("served");
    assert_eq!(&*served(&resp).group, "b");
    assert!(matches!(
        events.lock()[0],
        FallbackEvent::Hop { reason: Some(Outcome::RateLimited), error: Some(RouteErrorKind::AllCoolingDown), .. }
    ));
}

#[tokio::test(start_paused = true)]
async fn an_invalid_request_does_not_fall_back() {
    let reg = registry(&["a", "b"]);
    let up = Upstream::new(&[("a-d", Answer::Refuse(RouteErrorKind::InvalidRequest))]);
    let (mut svc, events) = stack(&reg, FallbackConfig::new().fallbacks("a", ["b"]), &up);
    let err = call(&mut svc, request("a")).await.expect_err("not retried elsewhere");
    route_error(&err, RouteErrorKind::InvalidRequest);
    assert!(events.lock().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_provider_prefixed_group_matches_a_stripped_key() {
    let reg = support::registry([dep("openai/*", "oai"), dep("claude", "claude-d"), dep("other", "other-d")]);
    let up = Upstream::failing(&["oai"], Outcome::ServerError);
    let config = FallbackConfig::new().fallbacks("gpt-x", ["claude"]).default_fallbacks(["other"]);
    let (mut svc, _) = stack(&reg, config, &up);
    let resp = call(&mut svc, request("openai/gpt-x")).await.expect("served");
    assert_eq!(&*served(&resp).group, "claude");
}

#[tokio::test(start_paused = true)]
async fn a_star_entry_serves_any_group_without_its_own() {
    let reg = support::registry([dep("openai/*", "oai"), dep("claude", "claude-d")]);
    let up = Upstream::failing(&["oai"], Outcome::ServerError);
    let mut tables = FallbackTables::default();
    tables.general.insert("*".into(), names(&["claude"]));
    let (mut svc, _) = stack(&reg, FallbackConfig::from(tables), &up);
    let resp = call(&mut svc, request("openai/gpt-y")).await.expect("served");
    assert_eq!(&*served(&resp).group, "claude");
}

#[tokio::test(start_paused = true)]
async fn two_models_of_one_wildcard_group_are_different_targets() {
    let reg = support::registry([dep("openai/*", "oai")]);
    let up = Upstream::failing(&["openai/gpt-x"], Outcome::ServerError);
    let (mut svc, _) = stack(&reg, FallbackConfig::new().fallbacks("openai/gpt-x", ["openai/gpt-y"]), &up);
    let resp = call(&mut svc, request("openai/gpt-x")).await.expect("served");
    assert_eq!((&*served(&resp).group, served(&resp).hops), ("openai/*", 1));
    assert_eq!(up.seen().last().map(|s| s.target.as_str()), Some("openai/gpt-y"));
}

// ===== final error, trail, skipping (#83) =====

#[tokio::test(start_paused = true)]
async fn when_every_target_fails_the_last_error_is_returned_with_the_whole_trail() {
    let reg = registry(&["a", "b", "c"]);
    let up = Upstream::new(&[
        ("a-d", Answer::Fail(Outcome::ServerError)),
        ("b-d", Answer::Fail(Outcome::RateLimited)),
        ("c-d", Answer::Fail(Outcome::Auth)),
    ]);
    let (mut svc, events) = stack(&reg, FallbackConfig::new().fallbacks("a", ["b", "c"]), &up);
    let err = call(&mut svc, request("a")).await.expect_err("every group fails");
    let route = route_error(&err, RouteErrorKind::Upstream);
    assert_eq!(route.outcome(), Some(Outcome::Auth));
    assert_eq!(route.deployment().map(|d| d.as_str()), Some("c-d"));
    assert_eq!(route.upstream_status(), Some(http::StatusCode::UNAUTHORIZED));
    assert!(route.upstream_body().is_some_and(|b| b.starts_with(b"{\"error\"")));
    assert_eq!(trail_groups(route), ["a", "b", "c"]);
    let outcomes: Vec<_> = route.trail().iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes, [Outcome::ServerError, Outcome::RateLimited, Outcome::Auth]);
    assert!(route.to_string().contains("groups tried: `a`, `b`, `c`"), "{route}");
    assert!(matches!(events.lock().last(), Some(FallbackEvent::Failed { hops: 2, reason: Some(Outcome::Auth), .. })));
}

#[tokio::test(start_paused = true)]
async fn a_failing_fallback_is_skipped_and_the_next_one_answers() {
    let reg = registry(&["a", "b", "c"]);
    let up = Upstream::failing(&["a-d", "b-d"], Outcome::ServerError);
    let (mut svc, _) = stack(&reg, FallbackConfig::new().fallbacks("a", ["b", "c"]), &up);
    let resp = call(&mut svc, request("a")).await.expect("served");
    let s = served(&resp);
    assert_eq!((&*s.group, s.hops), ("c", 2));
    assert_eq!(s.failed.iter().map(|r| &*r.group).collect::<Vec<_>>(), ["a", "b"]);
}

#[tokio::test(start_paused = true)]
async fn a_failed_hop_reads_its_own_entry_before_the_rest_of_the_list() {
    let reg = registry(&["a", "b", "b2", "c"]);
    let up = Upstream::failing(&["a-d", "b-d"], Outcome::ServerError);
    let config = FallbackConfig::new().fallbacks("a", ["b", "c"]).fallbacks("b", ["b2"]);
    let (mut svc, _) = stack(&reg, config, &up);
    let resp = call(&mut svc, request("a")).await.expect("served");
    assert_eq!((&*served(&resp).group, served(&resp).hops), ("b2", 2));
}

#[tokio::test(start_paused = true)]
async fn an_alias_of_a_visited_group_is_not_tried_again() {
    let reg = registry(&["a", "b"]);
    reg.set_alias("a-alias", "a", false).expect("alias");
    let up = Upstream::failing(&["a-d", "b-d"], Outcome::ServerError);
    let (mut svc, _) = stack(&reg, FallbackConfig::new().fallbacks("a", ["a-alias", "b"]), &up);
    let err = call(&mut svc, request("a")).await.expect_err("both fail");
    assert_eq!(trail_groups(route_error(&err, RouteErrorKind::Upstream)), ["a", "b"]);
}

#[tokio::test(start_paused = true)]
async fn a_target_that_does_not_resolve_is_skipped_not_an_error() {
    let reg = registry(&["a", "b"]);
    let up = Upstream::failing(&["a-d"], Outcome::ServerError);
    let (mut svc, events) = stack(&reg, FallbackConfig::new().fallbacks("a", ["ghost", "b"]), &up);
    let resp = call(&mut svc, request("a")).await.expect("served");
    assert_eq!((&*served(&resp).group, served(&resp).hops), ("b", 1));
    assert!(matches!(&events.lock()[0], FallbackEvent::Skipped { name, .. } if &**name == "ghost"));
}

#[tokio::test(start_paused = true)]
async fn each_hop_starts_from_the_original_request() {
    let reg = support::registry([dep("a", "a1"), dep("a", "a2"), dep("b", "b1")]);
    let up = Upstream::failing(&["a1", "a2"], Outcome::ServerError);
    let (mut svc, _) = stack(&reg, FallbackConfig::new().fallbacks("a", ["b"]), &up);
    call(&mut svc, request("a")).await.expect("served");
    let last = up.seen().pop().expect("b was called");
    assert_eq!((last.target.as_str(), last.hop, last.excluded), ("b", 1, 0));
}

#[tokio::test(start_paused = true)]
async fn over_a_retry_layer_each_hop_starts_from_the_request_as_it_arrived() {
    let reg = support::registry([dep("a", "a1"), dep("a", "a2"), dep("b", "b1")]);
    let up = Upstream::failing(&["a1", "a2"], Outcome::ServerError);
    let config = FallbackConfig::new().fallbacks("a", ["b"]);
    let (mut svc, events) = stack_with_retry(&reg, config, 1, &up);
    let resp = call(&mut svc, request("a")).await.expect("served");
    assert_eq!((&*served(&resp).group, served(&resp).hops, served(&resp).attempts), ("b", 1, 3));
    let seen: Vec<_> = up.seen().into_iter().map(|s| (s.target, s.hop, s.excluded)).collect();
    assert_eq!(seen, [("a".into(), 0, 0), ("a".into(), 0, 1), ("b".into(), 1, 0)]);
    assert_eq!(hop_count(&events), 1);
}

#[tokio::test(start_paused = true)]
async fn over_a_retry_layer_the_final_error_holds_no_copy_of_the_request() {
    let reg = support::registry([dep("a", "a1"), dep("b", "b1")]);
    let up = Upstream::failing(&["a1", "b1"], Outcome::ServerError);
    let config = FallbackConfig::new().fallbacks("a", ["b"]);
    let (mut svc, _) = stack_with_retry(&reg, config, 0, &up);
    let (req, marker) = marked_request("a");
    let err = call(&mut svc, req).await.expect_err("every group fails");
    assert_eq!(trail_groups(route_error(&err, RouteErrorKind::Upstream)), ["a", "b"]);
    assert_eq!(Arc::strong_count(&marker), 1, "a copy of the request outlived the call inside its error");
}

#[tokio::test(start_paused = true)]
async fn hops_keep_the_calls_deadline_not_one_set_below_for_the_first_group() {
    // A user layer between sets a deadline of its own for the first group; a hop starts with the
    // deadline the fallback layer saw (none here), from its own copy, and gets a new one there.
    let reg = registry(&["a", "b"]);
    let up = Upstream::failing(&["a-d"], Outcome::ServerError).slow(Duration::from_secs(6));
    let config = FallbackConfig::new().fallbacks("a", ["b"]);
    let retry = RetryConfig::default().num_retries(0);
    let between = Between::Deadline(Duration::from_secs(10));
    let (mut svc, _) = stack_over_retry(&reg, config, retry, between, &up);
    let start = Instant::now();
    call(&mut svc, request("a")).await.expect("b answers");
    let seen = up.seen();
    assert_eq!(seen.len(), 2);
    let deadlines: Vec<_> = seen.iter().map(|s| s.deadline.map(|d| d - start)).collect();
    assert_eq!(deadlines, [Some(Duration::from_secs(10)), Some(Duration::from_secs(16))]);
}

#[tokio::test(start_paused = true)]
async fn with_a_user_layer_between_an_error_wrapped_on_the_way_up_still_falls_back() {
    let reg = registry(&["a", "b"]);
    let up = Upstream::failing(&["a-d"], Outcome::ServerError);
    let config = FallbackConfig::new().fallbacks("a", ["b"]);
    let retry = RetryConfig::default().num_retries(0);
    let (mut svc, _) = stack_over_retry(&reg, config, retry, Between::WrapErrors, &up);
    let (req, marker) = marked_request("a");
    let resp = call(&mut svc, req).await.expect("b answers");
    assert_eq!((&*served(&resp).group, served(&resp).hops), ("b", 1));
    drop(resp);
    assert_eq!(Arc::strong_count(&marker), 1, "a copy of the request outlived the call");
}

#[tokio::test(start_paused = true)]
async fn with_a_user_layer_answering_between_no_copy_outlives_the_call() {
    let reg = registry(&["a", "b"]);
    let up = Upstream::failing(&["a-d"], Outcome::ServerError);
    let config = FallbackConfig::new().fallbacks("a", ["b"]);
    let retry = RetryConfig::default().num_retries(0);
    let (mut svc, _) = stack_over_retry(&reg, config, retry, Between::SwallowErrors, &up);
    let (req, marker) = marked_request("a");
    let resp = call(&mut svc, req).await.expect("the layer between answers");
    drop(resp);
    assert_eq!(Arc::strong_count(&marker), 1, "a copy of the request outlived the call");
}

#[tokio::test(start_paused = true)]
async fn a_user_layer_answering_between_ends_the_call_with_its_answer_and_no_hop() {
    let reg = registry(&["a", "b"]);
    let up = Upstream::failing(&["a-d"], Outcome::ServerError);
    let config = FallbackConfig::new().fallbacks("a", ["b"]);
    let retry = RetryConfig::default().num_retries(0);
    let (mut svc, events) = stack_over_retry(&reg, config, retry, Between::SwallowErrors, &up);
    let resp = call(&mut svc, request("a")).await.expect("the layer between answers");
    assert!(resp.extensions().get::<switchyard_layers::Served>().is_none(), "the canned answer");
    assert_eq!(up.seen().len(), 1);
    assert_eq!(hop_count(&events), 0);
}

/// The fallback layer's hint crosses any layer between: the retry layer below still leaves a
/// context-window error with a context-window fallback to it, even with a policy that would
/// retry bad requests.
#[tokio::test(start_paused = true)]
async fn the_retry_layer_leaves_a_failure_with_a_fallback_to_it_across_a_user_layer() {
    use switchyard_layers::retry::RetryPolicy;
    for between in
        [Between::Nothing, Between::PassThrough, Between::WrapErrors, Between::Deadline(Duration::from_secs(60))]
    {
        let reg = support::registry([dep("a", "a1"), dep("a", "a2"), dep("b", "b1")]);
        let up = Upstream::failing(&["a1", "a2"], Outcome::ContextWindowExceeded);
        let config = FallbackConfig::new().context_window_fallbacks("a", ["b"]);
        let retry = RetryConfig::default().num_retries(3).retry_policy(RetryPolicy::new().bad_request(3));
        let (mut svc, events) = stack_over_retry(&reg, config, retry, between, &up);
        let resp = call(&mut svc, request("a")).await.expect("b answers");
        assert_eq!((&*served(&resp).group, served(&resp).hops), ("b", 1), "{between:?}");
        let seen: Vec<_> = up.seen().into_iter().map(|s| (s.target, s.hop)).collect();
        assert_eq!(seen, [("a".into(), 0), ("b".into(), 1)], "no retry in a: {between:?}");
        assert_eq!(hop_count(&events), 1);
    }
}

/// Without a fallback layer above, nothing gives the hint: the same failure is retried by policy.
#[tokio::test(start_paused = true)]
async fn without_a_fallback_layer_above_the_retry_layer_retries_by_its_policy() {
    use switchyard_layers::retry::RetryPolicy;
    let reg = support::registry([dep("a", "a1"), dep("a", "a2")]);
    let up = Upstream::failing(&["a1", "a2"], Outcome::ContextWindowExceeded);
    let store = Arc::new(StateStore::memory());
    let retry = RetryConfig::default().retry_policy(RetryPolicy::new().bad_request(2));
    let retry = RetryLayer::new(reg.clone(), store.clone(), retry).with_seed(2);
    let select = SelectLayer::new(reg.clone(), store, RoutingStrategy::SimpleShuffle.build()).with_seed(1);
    let mut svc = ServiceBuilder::new().layer(retry).layer(select).service(up.service());
    call(&mut svc, request("a")).await.expect_err("every attempt fails");
    assert_eq!(up.seen().len(), 3);
}

// ===== bounds =====

#[tokio::test(start_paused = true)]
async fn max_fallbacks_bounds_the_total_hops() {
    let groups = ["g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"];
    let reg = registry(&groups);
    let ids: Vec<String> = groups.iter().map(|g| id_of(g)).collect();
    let up = Upstream::failing(&ids.iter().map(String::as_str).collect::<Vec<_>>(), Outcome::ServerError);
    let config = groups.windows(2).fold(FallbackConfig::new().max_fallbacks(5), |c, w| c.fallbacks(w[0], [w[1]]));
    let (mut svc, events) = stack(&reg, config, &up);
    let err = call(&mut svc, request("g0")).await.expect_err("the chain is cut");
    let route = route_error(&err, RouteErrorKind::Upstream);
    assert_eq!(trail_groups(route), ["g0", "g1", "g2", "g3", "g4", "g5"]);
    assert_eq!(hop_count(&events), 5);
    assert!(route.to_string().contains("max_fallbacks = 5"), "{route}");
}

#[tokio::test(start_paused = true)]
async fn max_fallbacks_counts_siblings_too() {
    let reg = registry(&["a", "b", "c", "d"]);
    let up = Upstream::failing(&["a-d", "b-d", "c-d"], Outcome::ServerError);
    let (mut svc, _) = stack(&reg, FallbackConfig::new().fallbacks("a", ["b", "c", "d"]).max_fallbacks(2), &up);
    let err = call(&mut svc, request("a")).await.expect_err("d is never reached");
    assert_eq!(trail_groups(route_error(&err, RouteErrorKind::Upstream)), ["a", "b", "c"]);
}

#[tokio::test(start_paused = true)]
async fn no_hop_starts_after_the_deadline() {
    let reg = registry(&["a", "b", "c", "d"]);
    let up = Upstream::failing(&["a-d", "b-d", "c-d", "d-d"], Outcome::Timeout).slow(Duration::from_secs(4));
    let config = FallbackConfig::new().fallbacks("a", ["b", "c", "d"]);
    let (svc, _) = stack(&reg, config, &up);
    let mut svc = DeadlineLayer::new(Duration::from_secs(10)).layer(svc);
    let start = Instant::now();
    let err = call(&mut svc, request("a")).await.expect_err("out of time");
    let route = route_error(&err, RouteErrorKind::Upstream);
    // a at 0 s, b at 4 s, c at 8 s; d would start at 12 s, after the deadline.
    assert_eq!(trail_groups(route), ["a", "b", "c"]);
    assert!(route.to_string().contains("deadline"), "{route}");
    let deadline = start + Duration::from_secs(10);
    assert!(up.seen().iter().all(|s| s.deadline == Some(deadline)));
}

#[tokio::test(start_paused = true)]
async fn a_deadline_the_request_already_has_is_kept() {
    let reg = registry(&["a"]);
    let up = Upstream::new(&[]);
    let (svc, _) = stack(&reg, FallbackConfig::new(), &up);
    let mut svc = DeadlineLayer::new(Duration::from_secs(10)).layer(svc);
    let mut ctx = RouteCtx::new("a");
    let own = Instant::now() + Duration::from_secs(3);
    ctx.deadline = Some(own);
    call(&mut svc, with_ctx(ctx)).await.expect("served");
    assert_eq!(up.seen()[0].deadline, Some(own));
}

// ===== events (#84) =====

#[tokio::test(start_paused = true)]
async fn hop_events_are_delivered_once_per_hop() {
    let reg = registry(&["a", "b", "c"]);
    let up = Upstream::failing(&["a-d", "b-d"], Outcome::ServerError);
    let (mut svc, events) = stack(&reg, FallbackConfig::new().fallbacks("a", ["b", "c"]), &up);
    call(&mut svc, request("a")).await.expect("served");
    let events = events.lock().clone();
    assert_eq!(events.len(), 3, "{events:?}");
    let hops: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            FallbackEvent::Hop { from, to, hop, reason, .. } => Some((from.to_string(), to.to_string(), *hop, *reason)),
            _ => None,
        })
        .collect();
    let down = Some(Outcome::ServerError);
    assert_eq!(hops, [("a".into(), "b".into(), 1, down), ("b".into(), "c".into(), 2, down)]);
    assert!(matches!(&events[2], FallbackEvent::Succeeded { group, hops: 2, .. } if &**group == "c"));
}

// ===== property: random fallback graphs =====

/// A random router: `n` groups, each with up to three general fallbacks, a default list, some
/// failing groups, a hop bound, and the group the call starts in.
#[derive(Clone, Debug)]
struct Graph {
    n: usize,
    edges: Vec<Vec<usize>>,
    default: Vec<usize>,
    failing: Vec<bool>,
    max: u32,
    start: usize,
}

fn graphs() -> impl Strategy<Value = Graph> {
    (1usize..=8)
        .prop_flat_map(|n| {
            (
                Just(n),
                proptest::collection::vec(proptest::collection::vec(0..n, 0..=3), n),
                proptest::collection::vec(0..n, 0..=2),
                proptest::collection::vec(any::<bool>(), n),
                0u32..=6,
                0..n,
            )
        })
        .prop_map(|(n, edges, default, failing, max, start)| Graph { n, edges, default, failing, max, start })
}

/// The layers a graph runs through.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// The fallback layer over the select layer.
    Bare,
    /// The fallback layer over a retry layer (one retry per group), with a user layer between or not.
    OverRetry { between: Between },
}

fn run_graph(g: &Graph) -> (Result<Resp, BoxError>, Vec<FallbackEvent>) {
    let (result, events, _) = run_graph_as(g, Shape::Bare);
    (result, events)
}

/// Runs `g` through `shape`: the result, the fallback events and what the upstream saw.
fn run_graph_as(g: &Graph, shape: Shape) -> (Result<Resp, BoxError>, Vec<FallbackEvent>, Vec<Seen>) {
    let groups: Vec<String> = (0..g.n).map(|i| format!("g{i}")).collect();
    let reg = registry(&groups.iter().map(String::as_str).collect::<Vec<_>>());
    let ids: Vec<String> = groups.iter().zip(&g.failing).filter(|(_, f)| **f).map(|(n, _)| id_of(n)).collect();
    let up = Upstream::failing(&ids.iter().map(String::as_str).collect::<Vec<_>>(), Outcome::ServerError);
    let mut config =
        FallbackConfig::new().max_fallbacks(g.max).default_fallbacks(g.default.iter().map(|i| &groups[*i]));
    for (i, targets) in g.edges.iter().enumerate() {
        if !targets.is_empty() {
            config = config.fallbacks(&groups[i], targets.iter().map(|t| &groups[*t]));
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().expect("runtime");
    rt.block_on(async {
        let result;
        let events = match shape {
            Shape::Bare => {
                let (mut svc, events) = stack(&reg, config, &up);
                result = call(&mut svc, request(&groups[g.start])).await;
                events
            }
            Shape::OverRetry { between } => {
                let retry = RetryConfig::default().num_retries(1);
                let (mut svc, events) = stack_over_retry(&reg, config, retry, between, &up);
                result = call(&mut svc, request(&groups[g.start])).await;
                events
            }
        };
        let events = events.lock().clone();
        (result, events, up.seen())
    })
}

/// What a caller can observe of a result, to compare two runs.
fn observed(result: &Result<Resp, BoxError>) -> String {
    match result {
        Ok(resp) => {
            let s = served(resp);
            let failed: Vec<_> = s.failed.iter().map(|r| (r.group.to_string(), r.outcome)).collect();
            format!(
                "ok {} {} hops={} attempts={} retries={} failed={failed:?}",
                s.group, s.deployment, s.hops, s.attempts, s.retries
            )
        }
        Err(err) => match RouteError::find(&**err) {
            Some(e) => format!("err {:?} {} group={:?} trail={:?}", e.kind(), e.message(), e.group(), trail_groups(e)),
            None => format!("untyped {err}"),
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// A user layer between the fallback and the retry layers changes nothing a caller or the
    /// upstream can see: same answer or error, same events, same attempts in the same order with
    /// the same context.
    #[test]
    fn a_user_layer_between_fallback_and_retry_changes_no_answer(g in graphs()) {
        let (direct, direct_events, direct_seen) = run_graph_as(&g, Shape::OverRetry { between: Between::Nothing });
        let (between, between_events, between_seen) =
            run_graph_as(&g, Shape::OverRetry { between: Between::PassThrough });
        prop_assert_eq!(observed(&direct), observed(&between));
        prop_assert_eq!(format!("{direct_events:?}"), format!("{between_events:?}"));
        prop_assert_eq!(direct_seen, between_seen);
    }

    #[test]
    fn random_fallback_graphs_end_typed_without_revisits(g in graphs()) {
        let (result, events) = run_graph(&g);
        let hops: Vec<u32> = events
            .iter()
            .filter_map(|e| match e { FallbackEvent::Hop { hop, .. } => Some(*hop), _ => None })
            .collect();
        let n_hops = hops.len() as u32;
        prop_assert_eq!(hops, (1..=n_hops).collect::<Vec<_>>());
        prop_assert!(n_hops <= g.max);
        match result {
            Ok(resp) => {
                let s = served(&resp);
                prop_assert_eq!(s.hops, n_hops);
                prop_assert!(s.attempts <= 1 + n_hops);
                let mut groups: Vec<_> = s.failed.iter().map(|r| r.group.clone()).collect();
                groups.push(s.group.clone());
                let len = groups.len();
                groups.sort();
                groups.dedup();
                prop_assert_eq!(groups.len(), len, "a group was visited twice");
                prop_assert!(!g.failing[s.group[1..].parse::<usize>().expect("g<i>")]);
            }
            Err(err) => {
                let route = RouteError::find(&*err);
                prop_assert!(route.is_some(), "untyped error: {}", err);
                let trail = route.map(RouteError::trail).unwrap_or_default();
                prop_assert!(trail.len() as u32 <= 1 + n_hops);
                let mut groups: Vec<_> = trail.iter().map(|r| r.group.clone()).collect();
                let len = groups.len();
                groups.sort();
                groups.dedup();
                prop_assert_eq!(groups.len(), len, "a group was visited twice");
                prop_assert!(trail.iter().all(|r| !r.outcome.is_success()));
            }
        }
    }
}
