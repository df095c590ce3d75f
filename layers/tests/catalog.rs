//! The model catalog where routing reads it: deployments built with the catalog's values where
//! they declare none, the context-window check on catalog windows, budgets charged at catalog
//! prices, and the capability filter (images and tools). Lookup rules and the data file are
//! tested in `layers/src/catalog/tests.rs`; cost routing in `tests/select.rs`.

mod support;

use std::{sync::Arc, time::Duration};

use http_body_util::BodyExt;
use support::*;
use switchyard_layers::{
    BoxError, Deployment, DeploymentBuilder, Outcome, Registry, RequestFacts, RouteBody, RouteCtx, RouteErrorKind,
    StateStore, Usage, catalog,
    deployment::Capabilities,
    fallback::{FallbackConfig, FallbackLayer},
    precall::{PreCallConfig, PreCallLayer},
    select::RoutingStrategy,
};
use tower::{Service, ServiceBuilder, service_fn};

fn memory() -> Arc<StateStore> {
    Arc::new(StateStore::memory())
}

fn d(group: &str, model: &str, id: &str) -> DeploymentBuilder {
    Deployment::builder(group, model).id(id)
}

fn rig(
    reg: &Arc<Registry>,
    store: &Arc<StateStore>,
    config: PreCallConfig,
) -> impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + Send + 'static {
    ServiceBuilder::new()
        .layer(PreCallLayer::new(reg.clone(), store.clone(), config))
        .layer(select(reg, store, RoutingStrategy::SimpleShuffle))
        .service(echo())
}

fn with_facts(group: &str, facts: RequestFacts) -> Req {
    with_ctx(RouteCtx::with_facts(group, facts))
}

async fn served_by<S>(svc: &mut S, group: &str, facts: impl Fn() -> RequestFacts, n: usize) -> Vec<String>
where
    S: Service<Req, Response = Resp, Error = BoxError>,
{
    let mut ids = Vec::new();
    for _ in 0..n {
        let resp = call(svc, with_facts(group, facts())).await.expect("served");
        let id = served(&resp).deployment.to_string();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids.sort();
    ids
}

// ===== deployments =====

#[test]
fn a_deployment_takes_what_it_does_not_declare_from_the_catalog() {
    let plain = Deployment::builder("claude", "anthropic/claude-sonnet-4-5").build().unwrap();
    let facts = catalog::lookup("anthropic/claude-sonnet-4-5").unwrap();
    assert_eq!(plain.catalog().map(|f| f.key), Some("claude-sonnet-4-5"));
    assert_eq!(plain.max_input_tokens, facts.max_input_tokens);
    assert_eq!(plain.max_output_tokens, Some(64_000));
    assert_eq!((plain.input_cost_per_token, plain.output_cost_per_token), (Some(3e-6), Some(1.5e-5)));
    assert_eq!(plain.capabilities.vision, Some(true));

    // model_info wins, field by field and flag by flag.
    let mut caps = Capabilities::default();
    caps.set("supports_vision", false);
    let declared = Deployment::builder("claude", "anthropic/claude-sonnet-4-5")
        .max_input_tokens(50_000)
        .input_cost_per_token(1e-6)
        .capabilities(caps)
        .build()
        .unwrap();
    assert_eq!(declared.max_input_tokens, Some(50_000));
    assert_eq!(declared.max_output_tokens, Some(64_000), "not declared: the catalog's");
    assert_eq!((declared.input_cost_per_token, declared.output_cost_per_token), (Some(1e-6), Some(1.5e-5)));
    assert_eq!(declared.capabilities.vision, Some(false));
    assert_eq!(declared.capabilities.function_calling, Some(true));

    // A model the catalog does not know keeps what it declares, and nothing else.
    let unknown = Deployment::builder("g", "hosted_vllm/llama-3-70b").build().unwrap();
    assert!(unknown.catalog().is_none());
    assert_eq!((unknown.max_input_tokens, unknown.input_cost_per_token), (None, None));
}

#[test]
fn an_azure_deployment_is_looked_up_by_its_base_model() {
    let named = Deployment::builder("gpt-4o", "azure/prod-eu-1").build().unwrap();
    assert!(named.catalog().is_none(), "a deployment name says nothing about the model");
    let based = Deployment::builder("gpt-4o", "azure/prod-eu-1").base_model("gpt-4o-mini").build().unwrap();
    assert_eq!(based.catalog().map(|f| f.key), Some("azure/gpt-4o-mini"));
    assert_eq!(based.max_input_tokens, Some(128_000));
    assert_eq!(based.id, named.id, "base_model is model_info metadata: the id does not change");
}

#[test]
fn ids_depend_on_declared_values_only() {
    // The id this deployment derived before the catalog existed
    // (`ids_of_deployments_without_a_budget_did_not_change` in the crate).
    let d = Deployment::builder("gpt-4o", "openai/gpt-4o").rpm(10).build().unwrap();
    assert_eq!(d.id.as_str(), "98f9511818156b28be7f025d30055f0e");
    assert!(d.input_cost_per_token.is_some(), "priced by the catalog");
}

#[test]
fn to_builder_gives_back_declared_values_so_a_new_base_model_is_looked_up_afresh() {
    let big = Deployment::builder("g", "azure/prod").base_model("gpt-4.1").max_output_tokens(100).build().unwrap();
    assert_eq!(big.max_input_tokens, Some(1_047_576));
    let same = big.to_builder().build().unwrap();
    assert_eq!(
        (same.id.clone(), same.max_input_tokens, same.max_output_tokens),
        (big.id.clone(), Some(1_047_576), Some(100))
    );
    // The catalog's window of the old base model does not stick as if it were declared.
    let small = big.to_builder().base_model("gpt-4o-mini").build().unwrap();
    assert_eq!((small.max_input_tokens, small.max_output_tokens), (Some(128_000), Some(100)));
}

// ===== context window =====

/// A prompt longer than `gpt-4o`'s catalog window (128k) is moved to a deployment with a bigger
/// one (`gpt-4.1`: 1M), with no window declared anywhere.
#[tokio::test(start_paused = true)]
async fn a_prompt_too_long_for_the_catalog_window_moves_to_a_bigger_deployment() {
    let reg = registry([d("chat", "openai/gpt-4o", "gpt-4o"), d("chat", "azure/gpt-4.1", "gpt-4.1")]);
    let store = memory();
    let mut svc = rig(&reg, &store, PreCallConfig::new().pre_call_checks(true));
    let long = || RequestFacts::new().with_input_tokens(200_000);
    assert_eq!(served_by(&mut svc, "chat", long, 20).await, ["gpt-4.1"]);
    let short = || RequestFacts::new().with_input_tokens(1_000);
    assert_eq!(served_by(&mut svc, "chat", short, 40).await, ["gpt-4.1", "gpt-4o"]);
}

/// No deployment's catalog window fits: the existing typed error, which feeds
/// `context_window_fallbacks`.
#[tokio::test(start_paused = true)]
async fn a_prompt_too_long_for_every_catalog_window_is_context_window_exceeded() {
    let reg = registry([
        d("gpt-4o", "openai/gpt-4o", "openai"),
        d("gpt-4o", "azure/gpt-4o", "azure"),
        d("claude", "anthropic/claude-sonnet-4-5", "claude"),
    ]);
    let store = memory();
    let mut bare = rig(&reg, &store, PreCallConfig::new().pre_call_checks(true));
    let err = call(&mut bare, with_facts("gpt-4o", RequestFacts::new().with_input_tokens(150_000))).await.unwrap_err();
    let route = route_error(&err, RouteErrorKind::ContextWindowExceeded);
    assert_eq!(route.outcome(), Some(Outcome::ContextWindowExceeded));
    assert!(route.message().contains("128000"), "{route}");

    let mut svc = ServiceBuilder::new()
        .layer(FallbackLayer::new(reg.clone(), FallbackConfig::new().context_window_fallbacks("gpt-4o", ["claude"])))
        .layer(PreCallLayer::new(reg.clone(), store.clone(), PreCallConfig::new().pre_call_checks(true)))
        .layer(select(&reg, &store, RoutingStrategy::SimpleShuffle))
        .service(echo());
    let resp = call(&mut svc, with_facts("gpt-4o", RequestFacts::new().with_input_tokens(150_000))).await.unwrap();
    assert_eq!(served(&resp).deployment.as_str(), "claude");
}

/// `model_info.max_input_tokens` overrides the catalog's window, both ways.
#[tokio::test(start_paused = true)]
async fn a_declared_window_overrides_the_catalog() {
    let reg = registry([
        d("chat", "openai/gpt-4o", "declared-big").max_input_tokens(1_000_000),
        d("chat", "openai/gpt-4.1", "declared-small").max_input_tokens(8_000),
    ]);
    let mut svc = rig(&reg, &memory(), PreCallConfig::new().pre_call_checks(true));
    let long = || RequestFacts::new().with_input_tokens(200_000);
    assert_eq!(served_by(&mut svc, "chat", long, 20).await, ["declared-big"]);
}

// ===== budgets =====

/// A deployment without declared prices is charged the catalog's list prices.
#[tokio::test(start_paused = true)]
async fn budgets_charge_catalog_prices() {
    const HOUR: Duration = Duration::from_secs(3600);
    let reg = registry([d("g", "openai/gpt-4o", "a").max_budget(1.0).budget_duration(HOUR)]);
    let store = memory();
    let provider = service_fn(|req: Req| async move {
        Ok::<_, BoxError>(http::Response::new(RouteBody::from(selected_id(&req)).with_usage(Usage::new(1_000, 500))))
    });
    let mut svc = ServiceBuilder::new()
        .layer(PreCallLayer::new(reg.clone(), store.clone(), PreCallConfig::new()))
        .layer(select(&reg, &store, RoutingStrategy::SimpleShuffle))
        .service(provider);
    let resp = call(&mut svc, request("g")).await.expect("served");
    resp.into_body().collect().await.expect("body");
    // gpt-4o: $2.50 / M input, $10 / M output.
    let spent = store.spend("deployment_spend:a").await.expect("memory store");
    assert!((spent - (1_000.0 * 2.5e-6 + 500.0 * 1e-5)).abs() < 1e-12, "{spent}");
}

// ===== capabilities =====

fn images() -> RequestFacts {
    RequestFacts::new().images(true)
}

/// Images skip a deployment known not to support vision (`azure/o3-mini`: `supports_vision:
/// false` in the catalog); one the catalog knows nothing about is kept.
#[tokio::test(start_paused = true)]
async fn images_skip_a_deployment_known_not_to_support_vision() {
    let reg = registry([
        d("chat", "azure/o3-mini", "o3-mini"),
        d("chat", "openai/gpt-4o", "gpt-4o"),
        d("chat", "hosted_vllm/llava", "unknown"),
    ]);
    assert_eq!(reg.deployment(&"o3-mini".into()).unwrap().capabilities.vision, Some(false));
    let mut svc = rig(&reg, &memory(), PreCallConfig::new());
    assert_eq!(served_by(&mut svc, "chat", images, 40).await, ["gpt-4o", "unknown"]);
    let text = || RequestFacts::new();
    assert_eq!(served_by(&mut svc, "chat", text, 60).await, ["gpt-4o", "o3-mini", "unknown"]);
}

/// Tools skip a deployment known not to support function calling (`deepseek-reasoner`).
#[tokio::test(start_paused = true)]
async fn tools_skip_a_deployment_known_not_to_support_function_calling() {
    let reg =
        registry([d("chat", "deepseek/deepseek-reasoner", "reasoner"), d("chat", "deepseek/deepseek-chat", "chat")]);
    let mut svc = rig(&reg, &memory(), PreCallConfig::new());
    let tools = || RequestFacts::new().tools(true);
    assert_eq!(served_by(&mut svc, "chat", tools, 30).await, ["chat"]);
}

/// None left: a typed error naming the capability and the group (400; general fallbacks apply).
#[tokio::test(start_paused = true)]
async fn images_with_no_vision_deployment_left_are_unsupported_naming_capability_and_group() {
    let reg = registry([d("reasoning", "azure/o3-mini", "a"), d("vision", "openai/gpt-4o", "b")]);
    let store = memory();
    let mut bare = rig(&reg, &store, PreCallConfig::new());
    let err = call(&mut bare, with_facts("reasoning", images())).await.unwrap_err();
    let route = route_error(&err, RouteErrorKind::Unsupported);
    assert_eq!(route.capability(), Some("supports_vision"));
    assert_eq!(route.group().map(|g| &**g), Some("reasoning"));
    assert_eq!(route.http_status(), http::StatusCode::BAD_REQUEST);
    assert!(route.to_string().contains("`reasoning`") && route.to_string().contains("images"), "{route}");

    let mut svc = ServiceBuilder::new()
        .layer(FallbackLayer::new(reg.clone(), FallbackConfig::new().fallbacks("reasoning", ["vision"])))
        .layer(PreCallLayer::new(reg.clone(), store.clone(), PreCallConfig::new()))
        .layer(select(&reg, &store, RoutingStrategy::SimpleShuffle))
        .service(echo());
    let resp = call(&mut svc, with_facts("reasoning", images())).await.expect("fell back");
    assert_eq!(served(&resp).deployment.as_str(), "b");

    // Images and tools: the first capability missing is named.
    let both = RequestFacts::new().tools(true).images(true);
    let err = call(&mut bare, with_facts("reasoning", both)).await.unwrap_err();
    assert_eq!(route_error(&err, RouteErrorKind::Unsupported).capability(), Some("supports_vision"));
}

/// `model_info.supports_vision: true` overrides the catalog's `false`; the filter can be off.
#[tokio::test(start_paused = true)]
async fn a_declared_capability_overrides_the_catalog_and_the_filter_can_be_turned_off() {
    let mut caps = Capabilities::default();
    caps.set("supports_vision", true);
    let reg =
        registry([d("chat", "azure/o3-mini", "declared").capabilities(caps), d("chat", "azure/o3-mini", "plain")]);
    let mut svc = rig(&reg, &memory(), PreCallConfig::new());
    assert_eq!(served_by(&mut svc, "chat", images, 30).await, ["declared"]);
    let mut off = rig(&reg, &memory(), PreCallConfig::new().capabilities(false));
    assert_eq!(served_by(&mut off, "chat", images, 40).await, ["declared", "plain"]);
}
