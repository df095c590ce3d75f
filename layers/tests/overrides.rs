//! Per-request overrides and LiteLLM's testing hooks in the routing layers: the request's
//! `model_group_retry_policy`, `cooldown_time` and `specific_deployment`, and the
//! `mock_testing_*` keys, through the real fallback, retry, cooldown and select layers over a
//! scripted provider. Ported from LiteLLM's `test_router_fallbacks.py` (`mock_testing_fallbacks`),
//! `test_router_retries.py` (`test_dynamic_router_retry_policy`) and
//! `test_router_cooldown_handlers.py` (`test_dynamic_cooldowns`).

mod support;

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use bytes::Bytes;
use parking_lot::Mutex;
use support::{Req, Resp, call, dep, route_error, served, with_ctx};
use switchyard_layers::{
    BoxError, DeploymentId, Outcome, Registry, RequestFacts, RouteBody, RouteCtx, RouteError, RouteErrorKind,
    RouteRequest, StateStore,
    cooldown::{CooldownConfig, CooldownLayer},
    ctx::{MockFailure, MockHooks},
    fallback::{FallbackConfig, FallbackLayer},
    retry::{RetryConfig, RetryLayer, RetryPolicy},
    select::{RoutingStrategy, SelectLayer},
};
use tower::{Service, ServiceBuilder, service_fn};

/// A provider failing with `outcome` for the listed deployment ids and answering the others,
/// recording the id of every attempt it sees.
#[derive(Clone)]
struct Upstream {
    failing: Arc<BTreeMap<String, Outcome>>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    fn new(failing: &[(&str, Outcome)]) -> Self {
        let failing = failing.iter().map(|(id, o)| ((*id).to_owned(), *o)).collect();
        Self { failing: Arc::new(failing), seen: Arc::default() }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().clone()
    }

    fn service(&self) -> impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + Send + 'static {
        let this = self.clone();
        service_fn(move |req: Req| {
            let this = this.clone();
            async move {
                let d = req.route_ctx().and_then(|c| c.selected.clone()).expect("the select layer chose");
                this.seen.lock().push(d.id.to_string());
                match this.failing.get(d.id.as_str()) {
                    None => Ok(http::Response::new(RouteBody::from(d.id.to_string()))),
                    Some(outcome) => Err(RouteError::upstream(*outcome, d.id.clone(), format!("{} failed", d.id))
                        .with_upstream_response(outcome.http_status(), Bytes::from_static(b"{}"))
                        .into()),
                }
            }
        })
    }
}

/// The router's order: fallback, retry, cooldown, select, over `upstream`.
fn router(
    registry: &Arc<Registry>,
    store: &Arc<StateStore>,
    fallback: FallbackConfig,
    retry: RetryConfig,
    upstream: &Upstream,
) -> impl Service<Req, Response = Resp, Error = BoxError> + Clone + Send + 'static {
    ServiceBuilder::new()
        .layer(FallbackLayer::new(registry.clone(), fallback))
        .layer(RetryLayer::new(registry.clone(), store.clone(), retry).with_seed(1))
        .layer(CooldownLayer::new(registry.clone(), store.clone(), CooldownConfig::default()))
        .layer(SelectLayer::new(registry.clone(), store.clone(), RoutingStrategy::SimpleShuffle.build()).with_seed(1))
        .service(upstream.service())
}

fn request(model: &str, facts: RequestFacts) -> Req {
    with_ctx(RouteCtx::with_facts(model, facts))
}

fn registry(deps: &[(&str, &str)]) -> Arc<Registry> {
    support::registry(deps.iter().map(|(g, id)| dep(g, id)))
}

// ===== mock_testing_fallbacks and friends =====

#[tokio::test(start_paused = true)]
async fn mock_testing_fallbacks_fails_the_first_group_without_an_attempt_and_the_fallback_answers() {
    let registry = registry(&[("gpt-4o", "a"), ("mini", "m")]);
    let store = Arc::new(StateStore::memory());
    let upstream = Upstream::new(&[]);
    let mut svc = router(
        &registry,
        &store,
        FallbackConfig::new().fallbacks("gpt-4o", ["mini"]),
        RetryConfig::default().num_retries(3),
        &upstream,
    );
    let facts = RequestFacts::new().mock(MockHooks::default().fail_first_group(MockFailure::General));
    let resp = call(&mut svc, request("gpt-4o", facts)).await.expect("the fallback answers");
    assert_eq!(served(&resp).deployment.as_str(), "m");
    assert_eq!(served(&resp).hops, 1);
    // No retry of the mocked group, and no attempt at its deployment: LiteLLM raises the mock
    // error in the fallback layer, before the retries.
    assert_eq!(upstream.seen(), ["m"]);
}

#[tokio::test(start_paused = true)]
async fn mock_testing_context_and_content_policy_fallbacks_use_their_own_tables() {
    let registry = registry(&[("gpt-4o", "a"), ("mini", "m"), ("long", "l"), ("safe", "s")]);
    let store = Arc::new(StateStore::memory());
    let upstream = Upstream::new(&[]);
    let config = FallbackConfig::new()
        .fallbacks("gpt-4o", ["mini"])
        .context_window_fallbacks("gpt-4o", ["long"])
        .content_policy_fallbacks("gpt-4o", ["safe"]);
    let mut svc = router(&registry, &store, config, RetryConfig::default(), &upstream);
    for (failure, expected) in [(MockFailure::ContextWindow, "l"), (MockFailure::ContentPolicy, "s")] {
        let facts = RequestFacts::new().mock(MockHooks::default().fail_first_group(failure));
        let resp = call(&mut svc, request("gpt-4o", facts)).await.expect("a fallback answers");
        assert_eq!(served(&resp).deployment.as_str(), expected, "{failure:?}");
    }
    assert_eq!(upstream.seen(), ["l", "s"]);
}

#[tokio::test(start_paused = true)]
async fn mock_testing_fallbacks_without_a_fallback_is_the_mock_error() {
    let registry = registry(&[("gpt-4o", "a")]);
    let store = Arc::new(StateStore::memory());
    let upstream = Upstream::new(&[]);
    let mut svc = router(&registry, &store, FallbackConfig::new(), RetryConfig::default(), &upstream);
    let facts = RequestFacts::new().mock(MockHooks::default().fail_first_group(MockFailure::General));
    let err = call(&mut svc, request("gpt-4o", facts)).await.expect_err("nothing to fall back to");
    let route = route_error(&err, RouteErrorKind::Upstream);
    assert_eq!(route.outcome(), Some(Outcome::ServerError));
    assert!(route.message().contains("This is a mock exception for model=gpt-4o"), "{route}");
    assert!(upstream.seen().is_empty());
    // The deployment was not benched: no attempt failed.
    assert!(store.cooldowns(&[DeploymentId::from("a")]).await[0].is_none());
}

// ===== mock_testing_rate_limit_error =====

#[tokio::test(start_paused = true)]
async fn mock_testing_rate_limit_error_fails_the_first_attempt_and_the_retry_is_real() {
    let registry = registry(&[("gpt-4o", "a"), ("gpt-4o", "b")]);
    let store = Arc::new(StateStore::memory());
    let upstream = Upstream::new(&[]);
    let mut svc = router(&registry, &store, FallbackConfig::new(), RetryConfig::default().num_retries(1), &upstream);
    let facts = RequestFacts::new().mock(MockHooks::default().rate_limit_error(true));
    let resp = call(&mut svc, request("gpt-4o", facts)).await.expect("the retry answers");
    assert_eq!(served(&resp).retries, 1);
    assert_eq!(upstream.seen().len(), 1, "one real attempt");
}

#[tokio::test(start_paused = true)]
async fn mock_testing_rate_limit_error_without_retries_goes_to_the_fallback_which_fails_first_too() {
    // LiteLLM pops the key per group (its retry layer's own copy of the kwargs), so each group's
    // first attempt is the mock 429; with no retries, every group fails.
    let registry = registry(&[("gpt-4o", "a"), ("mini", "m")]);
    let store = Arc::new(StateStore::memory());
    let upstream = Upstream::new(&[]);
    let fallback = FallbackConfig::new().fallbacks("gpt-4o", ["mini"]);
    let mut svc = router(&registry, &store, fallback, RetryConfig::default().num_retries(0), &upstream);
    let facts = RequestFacts::new().mock(MockHooks::default().rate_limit_error(true));
    let err = call(&mut svc, request("gpt-4o", facts)).await.expect_err("both groups mock a 429");
    assert_eq!(route_error(&err, RouteErrorKind::Upstream).outcome(), Some(Outcome::RateLimited));
    assert!(upstream.seen().is_empty());
    // With one retry per group, the first group's retry answers.
    let mut svc = router(
        &registry,
        &store,
        FallbackConfig::new().fallbacks("gpt-4o", ["mini"]),
        RetryConfig::default().num_retries(1),
        &upstream,
    );
    let facts = RequestFacts::new().mock(MockHooks::default().rate_limit_error(true));
    let resp = call(&mut svc, request("gpt-4o", facts)).await.expect("served");
    assert_eq!(served(&resp).deployment.as_str(), "a");
}

// ===== model_group_retry_policy =====

#[tokio::test(start_paused = true)]
async fn a_request_retry_policy_replaces_the_configured_group_policy() {
    // LiteLLM's `test_dynamic_router_retry_policy`: the per-request dict wins for its groups.
    let registry = registry(&[("gpt-4o", "a"), ("gpt-4o", "b"), ("gpt-4o", "c")]);
    let store = Arc::new(StateStore::memory());
    let upstream =
        Upstream::new(&[("a", Outcome::RateLimited), ("b", Outcome::RateLimited), ("c", Outcome::RateLimited)]);
    let config = RetryConfig::default().num_retries(5).group_retry_policy("gpt-4o", RetryPolicy::new().rate_limit(2));
    let mut svc = router(&registry, &store, FallbackConfig::new(), config.clone(), &upstream);
    let err = call(&mut svc, request("gpt-4o", RequestFacts::new())).await.expect_err("every deployment fails");
    route_error(&err, RouteErrorKind::Upstream);
    assert_eq!(upstream.seen().len(), 3, "the configured policy: 2 retries");

    let upstream =
        Upstream::new(&[("a", Outcome::RateLimited), ("b", Outcome::RateLimited), ("c", Outcome::RateLimited)]);
    // A fresh store: the first call benched every deployment.
    let store = Arc::new(StateStore::memory());
    let mut svc = router(&registry, &store, FallbackConfig::new(), config, &upstream);
    let policies = BTreeMap::from([("gpt-4o".to_owned(), RetryPolicy::new().rate_limit(0))]);
    let facts = RequestFacts::new().retry_policies(Some(policies));
    call(&mut svc, request("gpt-4o", facts)).await.expect_err("not retried");
    assert_eq!(upstream.seen().len(), 1, "the request's policy: no retry");
}

#[tokio::test(start_paused = true)]
async fn not_found_error_retries_lift_the_rule_that_never_retries_a_404() {
    let registry = registry(&[("gpt-4o", "a"), ("gpt-4o", "b")]);
    let store = Arc::new(StateStore::memory());
    let upstream = Upstream::new(&[("a", Outcome::NotFound), ("b", Outcome::NotFound)]);
    let mut svc = router(&registry, &store, FallbackConfig::new(), RetryConfig::default(), &upstream);
    call(&mut svc, request("gpt-4o", RequestFacts::new())).await.expect_err("a 404");
    assert_eq!(upstream.seen().len(), 1, "a 404 is not retried by default");

    let upstream = Upstream::new(&[("a", Outcome::NotFound), ("b", Outcome::NotFound)]);
    // A fresh store: the first call's 404 benched its deployment.
    let store = Arc::new(StateStore::memory());
    let config = RetryConfig::default().retry_policy(RetryPolicy::new().not_found(1));
    let mut svc = router(&registry, &store, FallbackConfig::new(), config, &upstream);
    call(&mut svc, request("gpt-4o", RequestFacts::new())).await.expect_err("both 404");
    assert_eq!(upstream.seen().len(), 2, "NotFoundErrorRetries: 1");
}

#[tokio::test(start_paused = true)]
async fn default_retries_count_for_classes_without_their_own_value() {
    let registry = registry(&[("gpt-4o", "a"), ("gpt-4o", "b"), ("gpt-4o", "c"), ("gpt-4o", "d")]);
    let store = Arc::new(StateStore::memory());
    let failing = [
        ("a", Outcome::ServerError),
        ("b", Outcome::ServerError),
        ("c", Outcome::ServerError),
        ("d", Outcome::ServerError),
    ];
    let upstream = Upstream::new(&failing);
    let config = RetryConfig::default().num_retries(0).retry_policy(RetryPolicy::new().default_value(2));
    let mut svc = router(&registry, &store, FallbackConfig::new(), config, &upstream);
    call(&mut svc, request("gpt-4o", RequestFacts::new())).await.expect_err("every one fails");
    assert_eq!(upstream.seen().len(), 3, "DefaultRetries: 2 replaces the router's 0");
}

// ===== cooldown_time =====

#[tokio::test(start_paused = true)]
async fn a_request_cooldown_time_of_zero_benches_nothing() {
    // LiteLLM's `test_dynamic_cooldowns` (`cooldown_time=0` per request).
    let registry = registry(&[("gpt-4o", "a"), ("gpt-4o", "b")]);
    let store = Arc::new(StateStore::memory());
    let upstream = Upstream::new(&[("a", Outcome::RateLimited), ("b", Outcome::RateLimited)]);
    let mut svc = router(&registry, &store, FallbackConfig::new(), RetryConfig::default().num_retries(0), &upstream);
    let facts = RequestFacts::new().cooldown_time(Some(Duration::ZERO));
    call(&mut svc, request("gpt-4o", facts)).await.expect_err("a 429");
    tokio::task::yield_now().await;
    let ids = [DeploymentId::from("a"), DeploymentId::from("b")];
    assert!(store.cooldowns(&ids).await.iter().all(Option::is_none), "nothing benched");

    // Without it, the 429 in a two-deployment group benches the deployment (LiteLLM's rule).
    call(&mut svc, request("gpt-4o", RequestFacts::new())).await.expect_err("a 429");
    tokio::task::yield_now().await;
    assert!(store.cooldowns(&ids).await.iter().any(Option::is_some), "one benched");
}

#[tokio::test(start_paused = true)]
async fn a_request_cooldown_time_shortens_the_bench_and_never_lengthens_it() {
    let registry = registry(&[("gpt-4o", "a"), ("gpt-4o", "b")]);
    let upstream = Upstream::new(&[("a", Outcome::RateLimited), ("b", Outcome::RateLimited)]);
    for (asked, expected) in [(1, 1), (3600, 5)] {
        let store = Arc::new(StateStore::memory());
        let mut svc =
            router(&registry, &store, FallbackConfig::new(), RetryConfig::default().num_retries(0), &upstream);
        let facts = RequestFacts::new().cooldown_time(Some(Duration::from_secs(asked)));
        let err = call(&mut svc, request("gpt-4o", facts)).await.expect_err("a 429");
        let failed = route_error(&err, RouteErrorKind::Upstream).deployment().cloned().expect("a deployment failed");
        tokio::task::yield_now().await;
        let bench = store.cooldowns(&[failed]).await.remove(0).expect("benched");
        let left = bench.until.saturating_duration_since(tokio::time::Instant::now());
        assert_eq!(left, Duration::from_secs(expected), "asked {asked} s, router 5 s");
    }
}

// ===== specific_deployment =====

#[tokio::test(start_paused = true)]
async fn specific_deployment_routes_by_provider_model_only() {
    let registry = support::registry([
        switchyard_layers::Deployment::builder("gpt-4o", "azure/gpt-4o-eu").id("eu"),
        switchyard_layers::Deployment::builder("gpt-4o", "openai/gpt-4o").id("us"),
    ]);
    let store = Arc::new(StateStore::memory());
    let upstream = Upstream::new(&[]);
    let mut svc = router(&registry, &store, FallbackConfig::new(), RetryConfig::default(), &upstream);
    let facts = RequestFacts::new().specific_deployment(true);
    let resp = call(&mut svc, request("azure/gpt-4o-eu", facts)).await.expect("served");
    assert_eq!(served(&resp).deployment.as_str(), "eu");
    let facts = RequestFacts::new().specific_deployment(true);
    let err = call(&mut svc, request("gpt-4o", facts)).await.expect_err("a group name is not a provider model");
    route_error(&err, RouteErrorKind::UnknownGroup);
}

// ===== name resolution =====

#[test]
fn a_bare_model_name_reaches_the_provider_wildcard_group_as_litellms_pattern_router_does() {
    // LiteLLM's `PatternMatchRouter.get_pattern`: the name, then `{provider}/{name}`.
    let registry = support::registry([
        switchyard_layers::Deployment::builder("openai/*", "openai/*").id("w"),
        switchyard_layers::Deployment::builder("gpt-4o", "azure/gpt-4o-eu").id("g"),
    ]);
    let resolved = registry.resolve("gpt-4o-mini").expect("the catalog says OpenAI");
    assert_eq!(&**resolved.group.name(), "openai/*");
    assert_eq!(&*resolved.group.deployments()[0].model, "openai/gpt-4o-mini");
    // A group of that very name wins.
    assert_eq!(&**registry.resolve("gpt-4o").expect("a group").group.name(), "gpt-4o");
    // A name the catalog does not know has no provider to try.
    let err = registry.resolve("my-own-model").expect_err("unknown");
    assert_eq!(err.kind(), RouteErrorKind::UnknownGroup);
    assert!(err.to_string().contains("gpt-4o"), "the error lists the known groups: {err}");
}

#[test]
fn a_provider_model_reaches_every_deployment_that_has_it() {
    let registry = support::registry([
        switchyard_layers::Deployment::builder("gpt-4o", "azure/gpt-4o-eu").id("e1"),
        switchyard_layers::Deployment::builder("gpt-4o", "azure/gpt-4o-eu").id("e2").api_base("https://b.example"),
        switchyard_layers::Deployment::builder("gpt-4o", "openai/gpt-4o").id("o"),
        switchyard_layers::Deployment::builder("backup", "openai/gpt-4o").id("o2"),
    ]);
    let resolved = registry.resolve("azure/gpt-4o-eu").expect("a provider model");
    let ids: Vec<&str> = resolved.group.deployments().iter().map(|d| d.id.as_str()).collect();
    assert_eq!((&**resolved.group.name(), ids), ("gpt-4o", vec!["e1", "e2"]), "named after their own group");
    let resolved = registry.resolve("openai/gpt-4o").expect("a provider model of two groups");
    assert_eq!((&**resolved.group.name(), resolved.group.deployments().len()), ("openai/gpt-4o", 2));
}
