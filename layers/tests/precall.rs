//! Behaviour of the pre-call layer over the real select layer (and the retry, cooldown and
//! fallback layers where a rule involves them). Each test is named after the rule it pins; the
//! LiteLLM tests they mirror are rows 27-36 of the census (`research/litellm-router-census.md`
//! §3.2) and the rate-limit defects of §2.4.

mod support;

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use parking_lot::Mutex;
use proptest::prelude::*;
use support::*;
use switchyard_layers::{
    BoxError, DeploymentId, Outcome, Registry, RequestFacts, RouteBody, RouteCtx, RouteError, RouteErrorKind,
    RouteRequest, StateStore,
    cooldown::{CooldownConfig, CooldownLayer},
    deployment::Capabilities,
    fallback::{FallbackConfig, FallbackLayer},
    precall::{PreCallConfig, PreCallLayer, Tokenizer, count_input_tokens},
    retry::{RetryConfig, RetryLayer},
    select::RoutingStrategy,
    state::{Admission, Limits, StoreConfig},
};
use tokio::{
    sync::{mpsc, watch},
    time::{Instant, advance},
};
use tower::{Service, ServiceBuilder, ServiceExt, service_fn};

// ===== fixtures =====

fn memory() -> Arc<StateStore> {
    Arc::new(StateStore::memory())
}

fn id(s: &str) -> DeploymentId {
    DeploymentId::from(s)
}

fn precall(reg: &Arc<Registry>, store: &Arc<StateStore>, config: PreCallConfig) -> PreCallLayer {
    PreCallLayer::new(reg.clone(), store.clone(), config)
}

/// Pre-call over select over `provider`.
fn rig<P>(
    reg: &Arc<Registry>,
    store: &Arc<StateStore>,
    config: PreCallConfig,
    provider: P,
) -> impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + Send + 'static
where
    P: Service<Req, Response = Resp, Error = BoxError> + Clone + Send + 'static,
    P::Future: Send + 'static,
{
    ServiceBuilder::new()
        .layer(precall(reg, store, config))
        .layer(select(reg, store, RoutingStrategy::SimpleShuffle))
        .service(provider)
}

/// A request for `model` with `facts`.
fn with_facts(model: &str, facts: RequestFacts) -> Req {
    with_ctx(RouteCtx::with_facts(model, facts))
}

fn tags(list: &[&str]) -> RequestFacts {
    RequestFacts::new().tags(list.iter().map(|t| (*t).to_owned()).collect())
}

/// A chat body whose one message is `hello` said `n` times: about `n` o200k tokens.
fn chat_body(n: usize) -> Bytes {
    let text = vec!["hello"; n].join(" ");
    Bytes::from(serde_json::json!({"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}).to_string())
}

/// Sends `n` requests made by `make` and counts who served (errors count under `error:<kind>`).
async fn tally_with<S>(svc: &mut S, n: usize, make: impl Fn() -> Req) -> BTreeMap<String, usize>
where
    S: Service<Req, Response = Resp, Error = BoxError>,
{
    let mut counts = BTreeMap::new();
    for _ in 0..n {
        let key = match call(svc, make()).await {
            Ok(resp) => served(&resp).deployment.to_string(),
            Err(e) => format!("error:{}", RouteError::find(&*e).map_or("other", |r| r.kind().as_str())),
        };
        *counts.entry(key).or_default() += 1;
    }
    counts
}

fn keys(counts: &BTreeMap<String, usize>) -> Vec<&str> {
    counts.keys().map(String::as_str).collect()
}

async fn usage(store: &StateStore, d: &str) -> (u64, u64) {
    let u = store.usage(&[id(d)]).await[0];
    (u.requests, u.tokens)
}

/// A provider whose answers stream until the test drops the sender it hands out per request.
#[derive(Clone, Default)]
struct Streams {
    senders: Arc<Mutex<Vec<mpsc::UnboundedSender<Bytes>>>>,
}

impl Streams {
    fn service(&self) -> impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + Send + 'static {
        let senders = self.senders.clone();
        service_fn(move |_req: Req| {
            let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
            senders.lock().push(tx);
            async move {
                let chunks = futures_util::stream::unfold(rx, |mut rx| async move {
                    rx.recv().await.map(|b| (Ok::<_, BoxError>(Frame::data(b)), rx))
                });
                Ok::<_, BoxError>(http::Response::new(RouteBody::new(StreamBody::new(chunks))))
            }
        })
    }

    fn sender(&self, i: usize) -> mpsc::UnboundedSender<Bytes> {
        self.senders.lock()[i].clone()
    }

    fn end(&self, i: usize) {
        self.senders.lock()[i] = mpsc::unbounded_channel().0;
    }
}

/// A provider that fails every attempt on `failing` with a 500 and logs every attempt's deployment.
fn scripted(
    failing: &'static [&'static str],
    log: Arc<Mutex<Vec<String>>>,
) -> impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + Send + 'static {
    service_fn(move |req: Req| {
        let log = log.clone();
        async move {
            let d = selected_id(&req);
            log.lock().push(d.clone());
            if failing.contains(&d.as_str()) {
                let err = RouteError::upstream(Outcome::ServerError, id(&d), "500 from upstream")
                    .with_upstream_response(http::StatusCode::INTERNAL_SERVER_ERROR, Bytes::new());
                return Err::<Resp, BoxError>(err.into());
            }
            Ok(http::Response::new(RouteBody::from(d)))
        }
    })
}

// ===== context window (census rows 27, 28, 32) =====

/// Row 27: a ~5k-token prompt skips the 4k-context deployment; the 16k one serves.
#[tokio::test(start_paused = true)]
async fn context_window_filter_skips_the_deployment_the_prompt_does_not_fit() {
    let reg =
        registry([gpt4o("gpt-4o", "small").max_input_tokens(4_096), gpt4o("gpt-4o", "large").max_input_tokens(16_384)]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let provider = service_fn(move |req: Req| {
        let log = log.clone();
        async move {
            let ctx = req.route_ctx().expect("ctx");
            log.lock().push((ctx.facts().input_tokens.get().copied(), ctx.reserve_tokens));
            Ok::<_, BoxError>(http::Response::new(RouteBody::from(selected_id(&req))))
        }
    });
    let mut svc = rig(&reg, &memory(), PreCallConfig::new().pre_call_checks(true), provider);
    let body = chat_body(5_000);
    let counts = tally_with(&mut svc, 20, || with_facts("gpt-4o", RequestFacts::new().with_body(body.clone()))).await;
    assert_eq!(keys(&counts), ["large"], "{counts:?}");
    let (tokens, _) = seen.lock()[0];
    let tokens = tokens.expect("counted once, kept in the facts");
    if Tokenizer::O200kBase.is_exact() {
        assert!((5_000..5_050).contains(&tokens), "{tokens} tokens");
    } else {
        // Without the `tiktoken` feature: 29,999 bytes of text at 4 a token, plus 4 for the
        // message and 3 for the reply.
        assert_eq!(tokens, 7_500 + 4 + 3);
    }
}

/// Row 28: no deployment fits, so the call fails with `ContextWindowExceeded`, and the fallback
/// layer sends it to the group's `context_window_fallbacks`.
#[tokio::test(start_paused = true)]
async fn prompt_that_fits_no_window_goes_to_the_context_window_fallbacks() {
    let reg = registry([
        gpt4o("gpt-4o", "small").max_input_tokens(1_000),
        gpt4o("gpt-4o-16k", "large").max_input_tokens(16_384),
        gpt4o("gpt-4o-mini", "general"),
    ]);
    let store = memory();
    let fallback = FallbackLayer::new(
        reg.clone(),
        FallbackConfig::new().context_window_fallbacks("gpt-4o", ["gpt-4o-16k"]).fallbacks("gpt-4o", ["gpt-4o-mini"]),
    );
    let mut svc = ServiceBuilder::new()
        .layer(fallback)
        .layer(precall(&reg, &store, PreCallConfig::new().pre_call_checks(true)))
        .layer(select(&reg, &store, RoutingStrategy::SimpleShuffle))
        .service(echo());
    let resp =
        call(&mut svc, with_facts("gpt-4o", RequestFacts::new().with_body(chat_body(2_000)))).await.expect("served");
    assert_eq!(served(&resp).deployment.as_str(), "large");
    assert_eq!(served(&resp).hops, 1);

    // Without a fallback table the error itself is typed: 400, outcome `ContextWindowExceeded`.
    let mut bare = rig(&reg, &store, PreCallConfig::new().pre_call_checks(true), echo());
    let err = call(&mut bare, with_facts("gpt-4o", RequestFacts::new().with_body(chat_body(2_000)))).await.unwrap_err();
    let route = route_error(&err, RouteErrorKind::ContextWindowExceeded);
    assert_eq!(route.outcome(), Some(Outcome::ContextWindowExceeded));
    assert_eq!(route.http_status(), http::StatusCode::BAD_REQUEST);
    assert!(route.message().contains("1000"), "{route}");
}

/// Row 32: the count given by the caller is used as is (no body needed), and the check only
/// removes (the registry's group is untouched for the next request).
#[tokio::test(start_paused = true)]
async fn a_count_in_the_facts_is_used_and_the_group_is_not_mutated() {
    let reg = registry([gpt4o("g", "small").max_input_tokens(100), gpt4o("g", "large").max_input_tokens(1_000)]);
    let mut svc = rig(&reg, &memory(), PreCallConfig::new().context_window(true), echo());
    let counts = tally_with(&mut svc, 10, || with_facts("g", RequestFacts::new().with_input_tokens(500))).await;
    assert_eq!(keys(&counts), ["large"]);
    let counts = tally_with(&mut svc, 40, || with_facts("g", RequestFacts::new().with_input_tokens(50))).await;
    assert_eq!(keys(&counts), ["large", "small"], "both serve a short prompt: {counts:?}");
}

#[tokio::test(start_paused = true)]
async fn tokens_are_not_counted_when_no_deployment_has_a_window_or_a_tpm_limit() {
    // A model the catalog does not know: `openai/gpt-4o` would have the catalog's window.
    let reg = registry([switchyard_layers::Deployment::builder("g", "hosted_vllm/my-model").id("a")]);
    assert_eq!(reg.deployments()[0].max_input_tokens, None);
    let counted = Arc::new(Mutex::new(None));
    let seen = counted.clone();
    let provider = service_fn(move |req: Req| {
        *seen.lock() = Some(req.route_ctx().and_then(|c| c.facts().input_tokens.get().copied()));
        async { Ok::<_, BoxError>(http::Response::new(RouteBody::empty())) }
    });
    let mut svc = rig(&reg, &memory(), PreCallConfig::new().pre_call_checks(true), provider);
    call(&mut svc, with_facts("g", RequestFacts::new().with_body(chat_body(100)))).await.expect("served");
    assert_eq!(*counted.lock(), Some(None), "no check needed a count");
}

#[tokio::test(start_paused = true)]
async fn a_large_prompt_is_counted_off_the_executor_with_the_same_result() {
    let reg = registry([gpt4o("g", "a").max_input_tokens(200_000)]);
    let body = chat_body(30_000);
    assert!(body.len() > PreCallConfig::DEFAULT_OFFLOAD_COUNTING_ABOVE);
    let expected = count_input_tokens(&body, Tokenizer::O200kBase).expect("a chat body");
    let tokens = Arc::new(Mutex::new(None));
    let seen = tokens.clone();
    let provider = service_fn(move |req: Req| {
        *seen.lock() = req.route_ctx().and_then(|c| c.facts().input_tokens.get().copied());
        async { Ok::<_, BoxError>(http::Response::new(RouteBody::empty())) }
    });
    let mut svc = rig(&reg, &memory(), PreCallConfig::new().context_window(true), provider);
    call(&mut svc, with_facts("g", RequestFacts::new().with_body(body))).await.expect("fits");
    assert_eq!(*tokens.lock(), Some(expected));
}

/// A deployment of `group` with id `id` serving `openai/gpt-4o` (o200k tokens).
fn gpt4o(group: &str, id: &str) -> switchyard_layers::DeploymentBuilder {
    switchyard_layers::Deployment::builder(group, "openai/gpt-4o").id(id)
}

// ===== region (row 29) =====

#[tokio::test(start_paused = true)]
async fn allowed_model_region_keeps_only_in_region_deployments() {
    let reg = registry([dep("g", "eu").region("westeurope"), dep("g", "us").region("eastus"), dep("g", "anywhere")]);
    let mut svc = rig(&reg, &memory(), PreCallConfig::new().pre_call_checks(true), echo());
    let eu = || with_facts("g", RequestFacts::new().region(Some("eu".into())));
    assert_eq!(keys(&tally_with(&mut svc, 30, eu).await), ["eu"]);
    let exact = || with_facts("g", RequestFacts::new().region(Some("EastUS".into())));
    assert_eq!(keys(&tally_with(&mut svc, 30, exact).await), ["us"]);
    let any = tally_with(&mut svc, 60, || request("g")).await;
    assert_eq!(keys(&any), ["anywhere", "eu", "us"], "no region asked: every deployment serves");
}

#[tokio::test(start_paused = true)]
async fn a_deployment_without_a_region_is_dropped_when_the_request_asks_for_one() {
    let reg = registry([dep("g", "anywhere"), dep("g", "eu").region("eu")]);
    let mut svc = rig(&reg, &memory(), PreCallConfig::new().pre_call_checks(true), echo());
    let err = call(&mut svc, with_facts("g", RequestFacts::new().region(Some("us".into())))).await.unwrap_err();
    let route = route_error(&err, RouteErrorKind::NoCandidates);
    assert!(route.message().contains("region `us`"), "{route}");
}

#[tokio::test(start_paused = true)]
async fn region_is_not_checked_without_pre_call_checks() {
    let reg = registry([dep("g", "eu").region("eu")]);
    let mut svc = rig(&reg, &memory(), PreCallConfig::new(), echo());
    call(&mut svc, with_facts("g", RequestFacts::new().region(Some("us".into())))).await.expect("LiteLLM's default");
}

// ===== params (row 30) =====

fn supports(flag: &str, value: bool) -> Capabilities {
    let mut c = Capabilities::default();
    assert!(c.set(flag, value));
    c
}

#[tokio::test(start_paused = true)]
async fn a_deployment_declaring_no_response_format_support_is_filtered() {
    let reg = registry([
        dep("g", "no").capabilities(supports("supports_response_schema", false)),
        dep("g", "yes").capabilities(supports("supports_response_schema", true)),
        dep("g", "undeclared"),
    ]);
    let mut svc = rig(&reg, &memory(), PreCallConfig::new().pre_call_checks(true), echo());
    let structured = || with_facts("g", RequestFacts::new().required_params(vec!["response_format".into()]));
    assert_eq!(keys(&tally_with(&mut svc, 60, structured).await), ["undeclared", "yes"]);
}

#[tokio::test(start_paused = true)]
async fn tools_need_function_calling_and_none_supporting_them_is_no_candidates() {
    let reg = registry([dep("g", "a").capabilities(supports("supports_function_calling", false))]);
    let mut svc = rig(&reg, &memory(), PreCallConfig::new().pre_call_checks(true), echo());
    let err =
        call(&mut svc, with_facts("g", RequestFacts::new().required_params(vec!["tools".into()]))).await.unwrap_err();
    let route = route_error(&err, RouteErrorKind::NoCandidates);
    assert!(route.message().contains("tools"), "{route}");
}

// ===== tags (rows 33-36) =====

fn tiers() -> Arc<Registry> {
    registry([dep("g", "free").tags(["free"]), dep("g", "paid").tags(["paid"]), dep("g", "dflt").tags(["default"])])
}

fn tagging() -> PreCallConfig {
    PreCallConfig::new().tag_filtering(true)
}

/// Row 33.
#[tokio::test(start_paused = true)]
async fn free_and_paid_tags_route_to_their_deployments() {
    let mut svc = rig(&tiers(), &memory(), tagging(), echo());
    assert_eq!(keys(&tally_with(&mut svc, 20, || with_facts("g", tags(&["free"]))).await), ["free"]);
    assert_eq!(keys(&tally_with(&mut svc, 20, || with_facts("g", tags(&["paid"]))).await), ["paid"]);
}

/// Row 34.
#[tokio::test(start_paused = true)]
async fn untagged_requests_and_the_default_tag_go_to_the_default_deployments() {
    let mut svc = rig(&tiers(), &memory(), tagging(), echo());
    assert_eq!(keys(&tally_with(&mut svc, 20, || request("g")).await), ["dflt"]);
    assert_eq!(keys(&tally_with(&mut svc, 20, || with_facts("g", tags(&["default"]))).await), ["dflt"]);
}

#[tokio::test(start_paused = true)]
async fn tags_matching_no_deployment_go_to_the_default_deployments() {
    let mut svc = rig(&tiers(), &memory(), tagging(), echo());
    assert_eq!(keys(&tally_with(&mut svc, 20, || with_facts("g", tags(&["enterprise"]))).await), ["dflt"]);
}

/// Row 35.
#[tokio::test(start_paused = true)]
async fn tags_matching_nothing_without_a_default_are_refused_with_403_naming_the_tags() {
    let reg = registry([dep("g", "free").tags(["free"]), dep("g", "untagged")]);
    let mut svc = rig(&reg, &memory(), tagging(), echo());
    let err = call(&mut svc, with_facts("g", tags(&["enterprise"]))).await.unwrap_err();
    let route = route_error(&err, RouteErrorKind::NotAllowed);
    assert_eq!(route.http_status(), http::StatusCode::FORBIDDEN);
    assert!(route.message().contains("Not allowed to access model due to tags configuration"), "{route}");
    assert!(route.message().contains("`enterprise`"), "{route}");
    // Without a `default` deployment an untagged request may use every deployment.
    assert_eq!(keys(&tally_with(&mut svc, 40, || request("g")).await), ["free", "untagged"]);
}

/// Row 36.
#[tokio::test(start_paused = true)]
async fn match_any_takes_an_intersection_and_match_all_a_subset() {
    let reg = registry([dep("g", "ab").tags(["a", "b"]), dep("g", "a").tags(["a"])]);
    let mut any = rig(&reg, &memory(), tagging(), echo());
    assert_eq!(keys(&tally_with(&mut any, 40, || with_facts("g", tags(&["a", "b"]))).await), ["a", "ab"]);
    let mut all = rig(&reg, &memory(), tagging().tag_match_any(false), echo());
    assert_eq!(keys(&tally_with(&mut all, 20, || with_facts("g", tags(&["a", "b"]))).await), ["ab"]);
    let err = call(&mut all, with_facts("g", tags(&["a", "c"]))).await.unwrap_err();
    route_error(&err, RouteErrorKind::NotAllowed);
}

#[tokio::test(start_paused = true)]
async fn a_negated_tag_excludes_the_deployments_carrying_it() {
    let reg =
        registry([dep("g", "free").tags(["fast", "free"]), dep("g", "paid").tags(["fast", "paid"]), dep("g", "plain")]);
    let mut svc = rig(&reg, &memory(), tagging(), echo());
    assert_eq!(keys(&tally_with(&mut svc, 20, || with_facts("g", tags(&["fast", "!paid"]))).await), ["free"]);
    let only_negation = tally_with(&mut svc, 40, || with_facts("g", tags(&["!paid"]))).await;
    assert_eq!(keys(&only_negation), ["free", "plain"], "otherwise an untagged request");
    let err = call(&mut svc, with_facts("g", tags(&["paid", "!paid"]))).await.unwrap_err();
    route_error(&err, RouteErrorKind::NotAllowed);
}

#[tokio::test(start_paused = true)]
async fn tags_are_ignored_unless_tag_filtering_is_enabled() {
    let mut svc = rig(&tiers(), &memory(), PreCallConfig::new(), echo());
    let counts = tally_with(&mut svc, 60, || with_facts("g", tags(&["free"]))).await;
    assert_eq!(keys(&counts), ["dflt", "free", "paid"]);
}

// ===== blocked =====

#[tokio::test(start_paused = true)]
async fn blocked_deployments_never_serve_even_from_an_outer_layers_list() {
    let reg = registry([dep("g", "on"), dep("g", "off").blocked(true)]);
    let mut svc = rig(&reg, &memory(), PreCallConfig::new(), echo());
    let make = || {
        let mut ctx = RouteCtx::new("g");
        ctx.candidates = Some(reg.resolve("g").expect("a group").group.deployments().to_vec().into());
        with_ctx(ctx)
    };
    assert_eq!(keys(&tally_with(&mut svc, 20, make).await), ["on"]);
}

// ===== order tiers =====

#[tokio::test(start_paused = true)]
async fn the_lowest_order_tier_serves_every_request() {
    let reg = registry([
        dep("g", "primary").order(1).weight(1.0),
        dep("g", "backup").order(2).weight(100.0),
        dep("g", "unordered").weight(100.0),
    ]);
    let mut svc = rig(&reg, &memory(), PreCallConfig::new(), echo());
    let counts = tally_with(&mut svc, 100, || request("g")).await;
    assert_eq!(counts.get("primary"), Some(&100), "{counts:?}");
}

#[tokio::test(start_paused = true)]
async fn deployments_without_an_order_serve_after_every_ordered_one() {
    let reg = registry([dep("g", "primary").order(1), dep("g", "backup").order(2), dep("g", "unordered")]);
    let mut svc = rig(&reg, &memory(), PreCallConfig::new(), echo());
    let excluding = |ids: &[&str]| {
        let mut ctx = RouteCtx::new("g");
        ctx.excluded = ids.iter().map(|i| id(i)).collect();
        with_ctx(ctx)
    };
    assert_eq!(keys(&tally_with(&mut svc, 10, || excluding(&["primary"])).await), ["backup"]);
    assert_eq!(keys(&tally_with(&mut svc, 10, || excluding(&["primary", "backup"])).await), ["unordered"]);
}

/// LiteLLM issues 18444 and 38968: tier 1 fails, the call moves to tier 2 (then 3) within the
/// group, and no attempt of the call goes back to a deployment that already failed.
#[tokio::test(start_paused = true)]
async fn failed_tier_fails_over_to_the_next_tier_and_never_reselects_the_failed_primary() {
    let reg =
        registry([dep("g", "a1").order(1), dep("g", "a2").order(1), dep("g", "b").order(2), dep("g", "c").order(3)]);
    let store = memory();
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut svc = ServiceBuilder::new()
        .layer(RetryLayer::new(reg.clone(), store.clone(), RetryConfig::default().num_retries(3)).with_seed(SEED))
        .layer(precall(&reg, &store, PreCallConfig::new()))
        .layer(select(&reg, &store, RoutingStrategy::SimpleShuffle))
        .service(scripted(&["a1", "a2"], log.clone()));
    for _ in 0..20 {
        log.lock().clear();
        let resp = call(&mut svc, request("g")).await.expect("tier 2 serves");
        assert_eq!(served(&resp).deployment.as_str(), "b");
        let attempts = log.lock().clone();
        assert_eq!(attempts.len(), 3, "{attempts:?}");
        let mut first_tier = attempts[..2].to_vec();
        first_tier.sort();
        assert_eq!(first_tier, ["a1", "a2"], "tier 1 once each, never the failed one again: {attempts:?}");
        assert_eq!(attempts[2], "b");
    }
}

/// Pre-call, select and the retry layer over `provider`, with `fallbacks` above when given.
fn tiered<P>(
    reg: &Arc<Registry>,
    store: &Arc<StateStore>,
    num_retries: u32,
    fallbacks: Option<FallbackConfig>,
    provider: P,
) -> impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + Send + 'static
where
    P: Service<Req, Response = Resp, Error = BoxError> + Clone + Send + 'static,
    P::Future: Send + 'static,
{
    let fallback = FallbackLayer::new(reg.clone(), fallbacks.unwrap_or_default());
    ServiceBuilder::new()
        .layer(fallback)
        .layer(
            RetryLayer::new(reg.clone(), store.clone(), RetryConfig::default().num_retries(num_retries))
                .with_seed(SEED),
        )
        .layer(precall(reg, store, PreCallConfig::new()))
        .layer(select(reg, store, RoutingStrategy::SimpleShuffle))
        .service(provider)
}

/// LiteLLM's order-based fallback: with `num_retries: 0` a failed tier 1 still moves to tier 2
/// inside the group (before, tier 2 was reached only through a retry, so never here).
#[tokio::test(start_paused = true)]
async fn with_num_retries_0_a_failed_tier_still_moves_to_the_next_tier() {
    let reg = registry([dep("g", "a1").order(1), dep("g", "a2").order(1), dep("g", "b").order(2)]);
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut svc = tiered(&reg, &memory(), 0, None, scripted(&["a1", "a2"], log.clone()));
    for _ in 0..10 {
        log.lock().clear();
        let resp = call(&mut svc, request("g")).await.expect("tier 2 serves");
        let s = served(&resp);
        assert_eq!((s.deployment.as_str(), s.retries, s.hops), ("b", 0, 0), "a tier move is no retry and no hop");
        let attempts = log.lock().clone();
        assert_eq!(attempts.len(), 2, "tier 1 once (its retry count is 0), then tier 2: {attempts:?}");
        assert_eq!(attempts[1], "b");
    }
}

/// The next tier is tried before any configured fallback, as soon as every deployment of the
/// current tier has failed, and without using the retry count: tiers 1 and 2 fail, tier 3 serves
/// in the group; only when every tier failed does the call hop.
#[tokio::test(start_paused = true)]
async fn tiers_are_tried_before_configured_fallbacks_without_consuming_num_retries() {
    let reg = registry([dep("g", "a").order(1), dep("g", "b").order(2), dep("g", "c").order(3), dep("g2", "other")]);
    let log = Arc::new(Mutex::new(Vec::new()));
    let fallbacks = || Some(FallbackConfig::new().fallbacks("g", ["g2"]));
    let mut svc = tiered(&reg, &memory(), 1, fallbacks(), scripted(&["a", "b"], log.clone()));
    let resp = call(&mut svc, request("g")).await.expect("tier 3 serves");
    assert_eq!((served(&resp).deployment.as_str(), served(&resp).hops), ("c", 0));
    assert_eq!(*log.lock(), ["a", "b", "c"], "each tier's one deployment failed: the next tier at once");
    assert_eq!(served(&resp).retries, 0);

    let log = Arc::new(Mutex::new(Vec::new()));
    let mut svc = tiered(&reg, &memory(), 0, fallbacks(), scripted(&["a", "b", "c"], log.clone()));
    let resp = call(&mut svc, request("g")).await.expect("the fallback group serves");
    assert_eq!((served(&resp).deployment.as_str(), served(&resp).hops), ("other", 1));
    assert_eq!(*log.lock(), ["a", "b", "c", "other"]);
}

/// After a tier move the call stays on the new tier: its retries never go back to the failed
/// primary (LiteLLM issue 38968).
#[tokio::test(start_paused = true)]
async fn retries_after_a_tier_move_stay_on_the_new_tier() {
    let reg = registry([dep("g", "primary").order(1), dep("g", "backup").order(2)]);
    let log = Arc::new(Mutex::new(Vec::new()));
    let backup_failures = Arc::new(AtomicUsize::new(1));
    let provider = {
        let log = log.clone();
        service_fn(move |req: Req| {
            let (log, backup_failures) = (log.clone(), backup_failures.clone());
            async move {
                let d = selected_id(&req);
                log.lock().push(d.clone());
                let fails = d == "primary"
                    || (d == "backup"
                        && backup_failures
                            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                            .is_ok());
                if fails {
                    return Err::<Resp, BoxError>(RouteError::upstream(Outcome::ServerError, id(&d), "500").into());
                }
                Ok(http::Response::new(RouteBody::from(d)))
            }
        })
    };
    let mut svc = tiered(&reg, &memory(), 2, None, provider);
    let resp = call(&mut svc, request("g")).await.expect("the backup serves on its retry");
    assert_eq!((served(&resp).deployment.as_str(), served(&resp).retries), ("backup", 1));
    assert_eq!(*log.lock(), ["primary", "backup", "backup"]);
}

/// A context-window failure does not move tiers (LiteLLM skips its order-based fallback for
/// context-window and content-policy errors): it goes to its own fallback table.
#[tokio::test(start_paused = true)]
async fn a_context_window_failure_does_not_move_to_the_next_tier() {
    let reg = registry([dep("g", "a").order(1), dep("g", "b").order(2), dep("big", "large")]);
    let log = Arc::new(Mutex::new(Vec::new()));
    let provider = {
        let log = log.clone();
        service_fn(move |req: Req| {
            let log = log.clone();
            async move {
                let d = selected_id(&req);
                log.lock().push(d.clone());
                if d != "large" {
                    let e = RouteError::upstream(Outcome::ContextWindowExceeded, id(&d), "context_length_exceeded");
                    return Err::<Resp, BoxError>(e.into());
                }
                Ok(http::Response::new(RouteBody::from(d)))
            }
        })
    };
    let cw = FallbackConfig::new().context_window_fallbacks("g", ["big"]);
    let mut svc = tiered(&reg, &memory(), 2, Some(cw), provider);
    let resp = call(&mut svc, request("g")).await.expect("the context-window fallback serves");
    assert_eq!(served(&resp).deployment.as_str(), "large");
    assert_eq!(*log.lock(), ["a", "large"]);
}

// ===== RPM / TPM =====

/// `enforce_rate_limits`: declared RPM / TPM limits refuse requests under every strategy (the
/// tests below pin how enforcement works; without the setting, LiteLLM's reading applies).
fn enforcing() -> PreCallConfig {
    PreCallConfig::new().enforce_rate_limits(true)
}

/// LiteLLM reads `rpm` / `tpm` as simple-shuffle weights: without `enable_pre_call_checks` or
/// `enforce_rate_limits`, a deployment past its `rpm` keeps serving (counted, not refused).
#[tokio::test(start_paused = true)]
async fn rpm_and_tpm_are_weights_not_limits_under_simple_shuffle_by_default() {
    let reg = registry([dep("g", "a").rpm(2).tpm(10)]);
    let store = memory();
    let mut svc = rig(&reg, &store, PreCallConfig::new(), echo());
    let counts = tally_with(&mut svc, 5, || with_facts("g", RequestFacts::new().with_input_tokens(50))).await;
    assert_eq!(count(&counts, "a"), 5, "served past rpm 2 and tpm 10");
    assert_eq!(usage(&store, "a").await.0, 5, "still counted in the window");
}

/// LiteLLM's `_pre_call_checks` (with `enable_pre_call_checks`) enforces `rpm` and reads no
/// `tpm`; `enforce_rate_limits` enforces both.
#[tokio::test(start_paused = true)]
async fn pre_call_checks_enforce_rpm_only_and_enforce_rate_limits_both() {
    let reg = registry([dep("g", "a").rpm(2).tpm(100_000), dep("h", "b").tpm(100)]);
    let store = memory();
    let mut svc = rig(&reg, &store, PreCallConfig::new().pre_call_checks(true), echo());
    let counts = tally_with(&mut svc, 4, || request("g")).await;
    assert_eq!(count(&counts, "a"), 2, "rpm enforced: {counts:?}");
    let prompt = || with_facts("h", RequestFacts::new().with_input_tokens(60));
    let counts = tally_with(&mut svc, 3, prompt).await;
    assert_eq!(count(&counts, "b"), 3, "tpm not read by the pre-call checks: {counts:?}");
    let store = memory();
    let mut svc = rig(&reg, &store, enforcing(), echo());
    let counts = tally_with(&mut svc, 3, prompt).await;
    assert_eq!(count(&counts, "b"), 1, "60 + 60 > 100 with enforce_rate_limits: {counts:?}");
}

/// 1,000 concurrent requests against rpm = 100 on the memory store: exactly 100 are served in
/// the window, the others are refused with a rate-limit error (the select layer's atomic
/// reservation decides the races the pre-call read cannot).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rpm_1000_concurrent_requests_against_rpm_100_admit_exactly_100() {
    let reg = registry([dep("g", "a").rpm(100)]);
    let store = memory();
    let svc = rig(&reg, &store, enforcing(), echo());
    let handles: Vec<_> = (0..1_000)
        .map(|_| {
            let svc = svc.clone();
            tokio::spawn(async move { svc.oneshot(request("g")).await })
        })
        .collect();
    let (mut ok, mut limited) = (0, 0);
    for h in handles {
        match h.await.expect("task") {
            Ok(_) => ok += 1,
            Err(e) => {
                route_error(&e, RouteErrorKind::RateLimited);
                limited += 1;
            }
        }
    }
    assert_eq!((ok, limited), (100, 900));
    assert_eq!(usage(&store, "a").await.0, 100);
}

/// The window slides: the next 100 pass exactly 60 s after the first 100, not at a calendar
/// minute boundary, and not a millisecond earlier.
#[tokio::test(start_paused = true)]
async fn rpm_window_slides_and_its_boundary_is_exact() {
    let reg = registry([dep("g", "a").rpm(100)]);
    let store = memory();
    let svc = rig(&reg, &store, enforcing(), echo());
    let burst = |svc: _| async move {
        let handles: Vec<_> = (0..1_000)
            .map(|_| {
                let svc = Clone::clone(&svc);
                tokio::spawn(async move { ServiceExt::<Req>::oneshot(svc, request("g")).await.is_ok() })
            })
            .collect();
        let mut ok = 0;
        for h in handles {
            ok += usize::from(h.await.expect("task"));
        }
        ok
    };
    assert_eq!(burst(svc.clone()).await, 100);
    advance(Duration::from_millis(59_990)).await;
    assert_eq!(burst(svc.clone()).await, 0, "still inside the first window");
    advance(Duration::from_millis(10)).await;
    assert_eq!(burst(svc.clone()).await, 100);
}

#[tokio::test(start_paused = true)]
async fn a_deployment_at_its_rpm_limit_is_skipped_and_never_cooled_down() {
    let reg = registry([dep("g", "a").rpm(2).order(1), dep("g", "b").order(2)]);
    let store = memory();
    let mut svc = ServiceBuilder::new()
        .layer(CooldownLayer::new(reg.clone(), store.clone(), CooldownConfig::default()))
        .layer(precall(&reg, &store, enforcing()))
        .layer(select(&reg, &store, RoutingStrategy::SimpleShuffle))
        .service(echo());
    let counts = tally_with(&mut svc, 10, || request("g")).await;
    assert_eq!((count(&counts, "a"), count(&counts, "b")), (2, 8));
    assert_eq!(store.cooldowns(&[id("a"), id("b")]).await, vec![None, None]);
    advance(Duration::from_secs(60)).await;
    assert_eq!(serve(&mut svc, "g").await, "a", "back in its own tier once the window slid");
}

#[tokio::test(start_paused = true)]
async fn every_deployment_at_its_limit_is_rate_limited_until_the_first_slot_frees() {
    let reg = registry([dep("g", "a").rpm(1), dep("g", "b").rpm(1)]);
    let store = memory();
    let mut svc = rig(&reg, &store, enforcing(), echo());
    serve(&mut svc, "g").await;
    advance(Duration::from_secs(20)).await;
    serve(&mut svc, "g").await;
    let err = call(&mut svc, request("g")).await.unwrap_err();
    let route = route_error(&err, RouteErrorKind::RateLimited);
    assert_eq!(route.retry_after(), Some(Duration::from_secs(40)), "the first slot frees 60 s after the first request");
    assert_eq!(route.outcome(), Some(Outcome::RateLimited), "feeds the general fallbacks");
    assert_eq!(route.http_status(), http::StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test(start_paused = true)]
async fn tpm_reserves_the_input_estimate_and_skips_deployments_without_room_for_the_prompt() {
    let reg = registry([dep("g", "a").tpm(1_000).order(1), dep("g", "b").order(2)]);
    let store = memory();
    let mut svc = rig(&reg, &store, enforcing(), echo());
    let prompt = || with_facts("g", RequestFacts::new().with_input_tokens(600));
    let counts = tally_with(&mut svc, 3, prompt).await;
    assert_eq!((count(&counts, "a"), count(&counts, "b")), (1, 2), "600 + 600 > 1000");
    assert_eq!(usage(&store, "a").await, (1, 600), "the estimate was reserved");
}

/// LiteLLM's precedence: a deployment that fits the prompt but is at its limit makes the call
/// rate limited; only when none fits at all is it a context-window error.
#[tokio::test(start_paused = true)]
async fn rate_limit_wins_over_context_window_when_both_remove_candidates() {
    let reg = registry([gpt4o("g", "small").max_input_tokens(100), gpt4o("g", "busy").max_input_tokens(10_000).rpm(1)]);
    let store = memory();
    let admitted = store.try_reserve(&id("busy"), Limits { rpm: Some(1), tpm: None }, 0).await;
    assert!(matches!(admitted, Admission::Admitted(_)));
    let mut svc = rig(&reg, &store, enforcing().pre_call_checks(true), echo());
    let err = call(&mut svc, with_facts("g", RequestFacts::new().with_input_tokens(500))).await.unwrap_err();
    route_error(&err, RouteErrorKind::RateLimited);
    let err = call(&mut svc, with_facts("g", RequestFacts::new().with_input_tokens(50_000))).await.unwrap_err();
    route_error(&err, RouteErrorKind::ContextWindowExceeded);
}

#[tokio::test(start_paused = true)]
async fn a_rate_limited_group_goes_to_the_general_fallbacks() {
    let reg = registry([dep("g", "a").rpm(1), dep("g2", "other")]);
    let store = memory();
    let mut svc = ServiceBuilder::new()
        .layer(FallbackLayer::new(reg.clone(), FallbackConfig::new().fallbacks("g", ["g2"])))
        .layer(RetryLayer::new(reg.clone(), store.clone(), RetryConfig::default()).with_seed(SEED))
        .layer(precall(&reg, &store, enforcing()))
        .layer(select(&reg, &store, RoutingStrategy::SimpleShuffle))
        .service(echo());
    assert_eq!(serve(&mut svc, "g").await, "a");
    assert_eq!(serve(&mut svc, "g").await, "other");
}

/// Cancelled requests give back everything they hold: the in-flight count, the parallel slot
/// and the token estimate. (Their request slots stay counted, like a failed attempt's: the
/// upstream may have counted the request.)
#[tokio::test(start_paused = true)]
async fn cancelled_requests_release_every_slot_and_token_estimate() {
    let reg = registry([dep("g", "a").rpm(1_000).tpm(100_000).max_parallel_requests(10)]);
    let store = memory();
    let (mut gate, provider) = gated();
    let svc = rig(&reg, &store, PreCallConfig::new(), provider);
    let handles: Vec<_> = (0..5)
        .map(|_| {
            let svc = svc.clone();
            let mut req = with_facts("g", RequestFacts::new().with_input_tokens(100));
            req.extensions_mut().insert(Park);
            tokio::spawn(svc.oneshot(req))
        })
        .collect();
    for _ in 0..5 {
        gate.entered.recv().await.expect("parked");
    }
    assert_eq!(store.local().in_flight(&id("a")), 5);
    assert_eq!(usage(&store, "a").await, (5, 500));
    for h in &handles {
        h.abort();
    }
    for h in handles {
        assert!(h.await.expect_err("aborted").is_cancelled());
    }
    assert_eq!(store.local().in_flight(&id("a")), 0);
    assert_eq!(usage(&store, "a").await, (5, 0));
    drop(gate.open);
}

// ===== parallel requests =====

#[tokio::test(start_paused = true)]
async fn the_parallel_slot_is_held_until_the_last_stream_chunk() {
    let reg = registry([dep("g", "a").max_parallel_requests(1)]);
    let store = memory();
    let streams = Streams::default();
    let mut svc = rig(&reg, &store, PreCallConfig::new(), streams.service());
    let resp = call(&mut svc, request("g")).await.expect("first stream");
    assert_eq!(store.local().in_flight(&id("a")), 1);

    let err = call(&mut svc, request("g")).await.unwrap_err();
    let route = route_error(&err, RouteErrorKind::RateLimited);
    assert!(route.message().contains("parallel-request limit"), "{route}");
    assert_eq!(route.retry_after(), None, "nobody knows when a stream ends");

    let mut body = resp.into_body();
    streams.sender(0).send(Bytes::from_static(b"data: 1\n\n")).expect("open");
    body.frame().await.expect("a chunk").expect("ok");
    assert_eq!(store.local().in_flight(&id("a")), 1, "mid-stream: still held");
    streams.end(0);
    assert!(body.frame().await.is_none(), "end of stream");
    assert_eq!(store.local().in_flight(&id("a")), 0, "released at the last chunk");
    drop(body);
    let _next = call(&mut svc, request("g")).await.expect("the slot is free again");
}

#[tokio::test(start_paused = true)]
async fn dropping_the_stream_releases_the_parallel_slot() {
    let reg = registry([dep("g", "a").max_parallel_requests(1)]);
    let store = memory();
    let streams = Streams::default();
    let mut svc = rig(&reg, &store, PreCallConfig::new(), streams.service());
    let resp = call(&mut svc, request("g")).await.expect("first stream");
    streams.sender(0).send(Bytes::from_static(b"data: 1\n\n")).expect("open");
    drop(resp);
    assert_eq!(store.local().in_flight(&id("a")), 0);
    let _next = call(&mut svc, request("g")).await.expect("the slot is free again");
}

#[tokio::test(start_paused = true)]
async fn all_full_fails_fast_without_a_wait() {
    let reg = registry([dep("g", "a"), dep("g", "b")]);
    let store = memory();
    let streams = Streams::default();
    let config = PreCallConfig::new().default_max_parallel_requests(Some(1));
    let mut svc = rig(&reg, &store, config, streams.service());
    let _held =
        [call(&mut svc, request("g")).await.expect("a or b"), call(&mut svc, request("g")).await.expect("the other")];
    let start = Instant::now();
    let err = call(&mut svc, request("g")).await.unwrap_err();
    route_error(&err, RouteErrorKind::RateLimited);
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn wait_for_parallel_slot_serves_when_a_slot_frees() {
    let reg = registry([dep("g", "a").max_parallel_requests(1)]);
    let store = memory();
    let streams = Streams::default();
    let config = PreCallConfig::new().wait_for_parallel_slot(Some(Duration::from_secs(5)));
    let mut svc = rig(&reg, &store, config, streams.service());
    let first = call(&mut svc, request("g")).await.expect("first stream");
    let start = Instant::now();
    let waiting = tokio::spawn(svc.clone().oneshot(request("g")));
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!waiting.is_finished(), "waits for the slot");
    drop(first);
    let resp = waiting.await.expect("task").expect("served once the slot freed");
    assert_eq!(served(&resp).deployment.as_str(), "a");
    assert_eq!(start.elapsed(), Duration::ZERO, "woken by the release, not by a timer");
}

#[tokio::test(start_paused = true)]
async fn wait_for_parallel_slot_gives_up_after_its_bound() {
    let reg = registry([dep("g", "a").max_parallel_requests(1)]);
    let store = memory();
    let streams = Streams::default();
    let config = PreCallConfig::new().wait_for_parallel_slot(Some(Duration::from_secs(5)));
    let mut svc = rig(&reg, &store, config, streams.service());
    let _first = call(&mut svc, request("g")).await.expect("first stream");
    let start = Instant::now();
    let err = call(&mut svc, request("g")).await.unwrap_err();
    let route = route_error(&err, RouteErrorKind::RateLimited);
    assert!(route.message().contains("waited"), "{route}");
    assert_eq!(start.elapsed(), Duration::from_secs(5));
}

/// Many requests race for 5 slots on several threads: exactly 5 reach the provider at once,
/// because the select layer takes the slot with a compare-and-swap, whatever the pre-call read saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_slots_are_taken_atomically_under_contention() {
    let reg = registry([dep("g", "a").max_parallel_requests(5)]);
    let store = memory();
    let (open, gate) = watch::channel(false);
    let now = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (n, p) = (now.clone(), peak.clone());
    let provider = service_fn(move |_req: Req| {
        let (mut gate, n, p) = (gate.clone(), n.clone(), p.clone());
        async move {
            let inside = n.fetch_add(1, Ordering::SeqCst) + 1;
            p.fetch_max(inside, Ordering::SeqCst);
            gate.wait_for(|open| *open).await.expect("gate kept");
            n.fetch_sub(1, Ordering::SeqCst);
            Ok::<_, BoxError>(http::Response::new(RouteBody::empty()))
        }
    });
    let svc = rig(&reg, &store, PreCallConfig::new(), provider);
    let (done_tx, mut done) = mpsc::unbounded_channel();
    for _ in 0..200 {
        let (svc, done_tx) = (svc.clone(), done_tx.clone());
        tokio::spawn(async move {
            let _ = done_tx.send(svc.oneshot(request("g")).await.map(drop));
        });
    }
    for _ in 0..195 {
        let result = done.recv().await.expect("a result");
        let err = result.expect_err("only 5 get a slot while the gate is closed");
        route_error(&err, RouteErrorKind::RateLimited);
    }
    assert_eq!(store.local().in_flight(&id("a")), 5);
    open.send(true).expect("open");
    for _ in 0..5 {
        done.recv().await.expect("a result").expect("served");
    }
    assert_eq!(peak.load(Ordering::SeqCst), 5);
    assert_eq!(store.local().in_flight(&id("a")), 0);
}

// ===== the sliding window (property tests against a naive model) =====

/// The store's usage equals the naive sum of events in `(now - 60 s, now]`, give or take events
/// that left less than one resolution tick ago (events count for the full window and at most
/// one resolution longer); and `room_in` is never shorter than the truth, at most one
/// resolution longer.
fn check_window(events: Vec<(u64, u64)>, rpm: u64) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().expect("runtime");
    rt.block_on(async move {
        let config = StoreConfig::default();
        let (window, resolution) = (config.usage_window, config.resolution);
        let store = StateStore::memory_with(config);
        let d = id("d");
        let start = Instant::now();
        let mut log: Vec<(Duration, u64)> = Vec::new();
        for (gap_us, tokens) in events {
            advance(Duration::from_micros(gap_us)).await;
            let at = start.elapsed();
            let admitted = store.try_reserve(&d, Limits::default(), tokens).await;
            prop_assert!(matches!(admitted, Admission::Admitted(_)));
            log.push((at, tokens));

            let now = start.elapsed();
            let inside = |slack: Duration| log.iter().filter(move |(t, _)| now < *t + window + slack);
            let (lo_n, lo_t) =
                (inside(Duration::ZERO).count() as u64, inside(Duration::ZERO).map(|e| e.1).sum::<u64>());
            let (hi_n, hi_t) = (inside(resolution).count() as u64, inside(resolution).map(|e| e.1).sum::<u64>());
            let u = store.usage(std::slice::from_ref(&d)).await[0];
            prop_assert!((lo_n..=hi_n).contains(&u.requests), "requests {} not in {lo_n}..={hi_n}", u.requests);
            prop_assert!((lo_t..=hi_t).contains(&u.tokens), "tokens {} not in {lo_t}..={hi_t}", u.tokens);

            // Time until one more request fits under `rpm`: the (count - rpm + 1)-th oldest live
            // event must leave the window.
            let limits = Limits { rpm: Some(rpm), tpm: None };
            let wait = store.room_in(&d, limits, 0).await;
            let live: Vec<Duration> = log.iter().map(|e| e.0).filter(|t| now < *t + window).collect();
            let truth = match (live.len() as u64 + 1).checked_sub(rpm) {
                Some(excess) if excess > 0 => live[(excess - 1) as usize] + window - now,
                _ => Duration::ZERO,
            };
            prop_assert!(wait >= truth && wait <= truth + resolution, "room_in {wait:?}, truth {truth:?}");
        }
        Ok(())
    })
}

/// The case the property test found: an event between two ticks left the window up to one
/// resolution early (the current time was rounded up as well as the event's), so a limit could
/// be exceeded in a real 60 s window.
#[tokio::test(start_paused = true)]
async fn an_event_counts_for_the_whole_window_whatever_its_time_within_a_tick() {
    let store = StateStore::memory();
    advance(Duration::from_millis(5)).await;
    let admitted = store.try_reserve(&id("d"), Limits::default(), 0).await;
    assert!(matches!(admitted, Admission::Admitted(_)));
    advance(Duration::from_micros(59_996_500)).await;
    assert_eq!(usage(&store, "d").await.0, 1, "59.9965 s old: still inside the window");
    advance(Duration::from_millis(10)).await;
    assert_eq!(usage(&store, "d").await.0, 0, "gone at most one resolution after 60 s");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn sliding_window_totals_match_a_naive_model(
        events in prop::collection::vec((0u64..15_000_000, 0u64..5_000), 1..80),
        rpm in 1u64..20,
    ) {
        check_window(events, rpm)?;
    }
}
