//! Budgets in the pre-call layer: provider and deployment spend limits over a period, spend
//! recorded from the real usage when a served body ends. LiteLLM's budget tests are rows 92-93 of
//! the census (`research/litellm-router-census.md` §3.6); the defects fixed are §2.6 #46.

mod support;

use std::{sync::Arc, time::Duration};

use http_body_util::BodyExt;
use support::*;
use switchyard_layers::{
    BoxError, Outcome, Registry, RouteBody, RouteError, RouteErrorKind, StateStore, Usage,
    fallback::{FallbackConfig, FallbackLayer},
    precall::{Budget, BudgetConfig, PreCallConfig, PreCallLayer},
    select::RoutingStrategy,
};
use tokio::time::advance;
use tower::{Service, ServiceBuilder, service_fn};

const HOUR: Duration = Duration::from_secs(3600);
/// Every answer's usage: 1,000 prompt and 500 completion tokens.
const USAGE: Usage = Usage::new(1_000, 500);
/// `USAGE` at the prices of [`priced`]: 1,000 × $1e-6 + 500 × $2e-6.
const COST: f64 = 0.002;

fn memory() -> Arc<StateStore> {
    Arc::new(StateStore::memory())
}

/// A deployment of `g` with provider model `{provider}/{id}` and prices that make [`USAGE`]
/// cost [`COST`].
fn priced(provider: &str, id: &str) -> switchyard_layers::DeploymentBuilder {
    switchyard_layers::Deployment::builder("g", format!("{provider}/{id}"))
        .id(id)
        .input_cost_per_token(1e-6)
        .output_cost_per_token(2e-6)
}

/// A provider answering with the deployment's id and [`USAGE`].
fn with_usage() -> impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + Send + 'static {
    service_fn(|req: Req| async move {
        Ok::<_, BoxError>(http::Response::new(RouteBody::from(selected_id(&req)).with_usage(USAGE)))
    })
}

fn rig<P>(
    reg: &Arc<Registry>,
    store: &Arc<StateStore>,
    budgets: BudgetConfig,
    provider: P,
) -> impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + Send + 'static
where
    P: Service<Req, Response = Resp, Error = BoxError> + Clone + Send + 'static,
    P::Future: Send + 'static,
{
    ServiceBuilder::new()
        .layer(PreCallLayer::new(reg.clone(), store.clone(), PreCallConfig::new().budgets(budgets)))
        .layer(select(reg, store, RoutingStrategy::SimpleShuffle))
        .service(provider)
}

/// Sends `n` requests for `g`, reading each body to its end, and counts who served.
async fn tally_read<S>(svc: &mut S, n: usize) -> std::collections::BTreeMap<String, usize>
where
    S: Service<Req, Response = Resp, Error = BoxError>,
{
    let mut counts = std::collections::BTreeMap::new();
    for _ in 0..n {
        let resp = call(svc, request("g")).await.expect("served");
        let who = served(&resp).deployment.to_string();
        resp.into_body().collect().await.expect("body");
        *counts.entry(who).or_default() += 1;
    }
    counts
}

async fn spend(store: &StateStore, key: &str) -> f64 {
    store.spend(key).await.expect("memory store")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[tokio::test(start_paused = true)]
async fn a_spent_provider_budget_moves_traffic_to_another_provider() {
    let reg = registry([priced("openai", "oa"), priced("azure", "az")]);
    let store = memory();
    let budgets = BudgetConfig::new().provider("openai", Budget::new(1.0, HOUR));
    let mut svc = rig(&reg, &store, budgets, with_usage());

    let before = tally_read(&mut svc, 40).await;
    assert!(count(&before, "oa") > 0 && count(&before, "az") > 0, "{before:?}");
    let openai = spend(&store, "provider_spend:openai").await;
    assert!(close(openai, COST * count(&before, "oa") as f64), "{openai}");

    store.add_spend_detached("provider_spend:openai", 1.0, HOUR);
    let after = tally_read(&mut svc, 40).await;
    assert_eq!(count(&after, "az"), 40, "{after:?}");
}

#[tokio::test(start_paused = true)]
async fn a_spent_deployment_budget_removes_only_that_deployment() {
    let reg = registry([priced("openai", "capped").max_budget(0.01).budget_duration(HOUR), priced("openai", "free")]);
    let store = memory();
    let mut svc = rig(&reg, &store, BudgetConfig::new(), with_usage());

    // $0.01 at $0.002 a request: the capped deployment serves exactly five requests.
    let counts = tally_read(&mut svc, 60).await;
    assert_eq!(count(&counts, "capped"), 5, "{counts:?}");
    assert_eq!(count(&counts, "free"), 55);
    assert!(close(spend(&store, "deployment_spend:capped").await, 0.01));
    assert_eq!(spend(&store, "deployment_spend:free").await, 0.0, "no budget, no key");
}

#[tokio::test(start_paused = true)]
async fn every_deployment_over_budget_is_budget_exceeded_with_the_reset_time() {
    let reg = registry([priced("openai", "a"), priced("azure", "b").max_budget(0.5).budget_duration(HOUR)]);
    let store = memory();
    store.add_spend_detached("provider_spend:openai", 2.0, HOUR);
    advance(Duration::from_secs(600)).await;
    store.add_spend_detached("deployment_spend:b", 0.5, HOUR);
    let budgets = BudgetConfig::new().provider("openai", Budget::new(2.0, HOUR));
    let mut svc = rig(&reg, &store, budgets, with_usage());

    let err = call(&mut svc, request("g")).await.unwrap_err();
    let route = route_error(&err, RouteErrorKind::BudgetExceeded);
    assert_eq!(route.http_status(), http::StatusCode::TOO_MANY_REQUESTS);
    assert!(route.message().contains("provider `openai` spent $2.0000 of $2.0000"), "{route}");
    assert!(route.message().contains("deployment `b` spent $0.5000 of $0.5000"), "{route}");
    // The openai period started 10 minutes earlier: `a` is back first.
    assert_eq!(route.retry_after(), Some(Duration::from_secs(3000)));
}

#[tokio::test(start_paused = true)]
async fn a_group_over_budget_goes_to_the_general_fallbacks() {
    let backup = switchyard_layers::Deployment::builder("g2", "azure/backup").id("backup");
    let reg = registry([priced("openai", "a"), backup]);
    let store = memory();
    store.add_spend_detached("provider_spend:openai", 5.0, HOUR);
    let budgets = BudgetConfig::new().provider("openai", Budget::new(5.0, HOUR));
    let mut svc = ServiceBuilder::new()
        .layer(FallbackLayer::new(reg.clone(), FallbackConfig::new().fallbacks("g", ["g2"])))
        .layer(PreCallLayer::new(reg.clone(), store.clone(), PreCallConfig::new().budgets(budgets)))
        .layer(select(&reg, &store, RoutingStrategy::SimpleShuffle))
        .service(echo());

    let resp = call(&mut svc, request("g")).await.expect("the fallback serves");
    assert_eq!(served(&resp).deployment.as_str(), "backup");
    assert_eq!(served(&resp).hops, 1);
}

#[tokio::test(start_paused = true)]
async fn spend_resets_after_its_period() {
    let reg = registry([priced("openai", "a").max_budget(0.002).budget_duration(HOUR)]);
    let store = memory();
    let mut svc = rig(&reg, &store, BudgetConfig::new(), with_usage());

    assert_eq!(count(&tally_read(&mut svc, 1).await, "a"), 1);
    let err = call(&mut svc, request("g")).await.unwrap_err();
    assert_eq!(route_error(&err, RouteErrorKind::BudgetExceeded).retry_after(), Some(HOUR));
    advance(HOUR - Duration::from_secs(1)).await;
    assert!(call(&mut svc, request("g")).await.is_err(), "still in the period");
    advance(Duration::from_secs(1)).await;
    assert_eq!(count(&tally_read(&mut svc, 1).await, "a"), 1, "a new period");
}

#[tokio::test(start_paused = true)]
async fn spend_is_the_real_usage_counted_when_the_body_ends() {
    let reg = registry([priced("openai", "a").max_budget(1.0).budget_duration(HOUR)]);
    let store = memory();
    let mut svc = rig(&reg, &store, BudgetConfig::new().provider("openai", Budget::new(10.0, HOUR)), with_usage());

    let resp = call(&mut svc, request("g")).await.expect("served");
    assert_eq!(spend(&store, "deployment_spend:a").await, 0.0, "nothing before the body ends");
    resp.into_body().collect().await.expect("body");
    assert!(close(spend(&store, "deployment_spend:a").await, COST));
    assert!(close(spend(&store, "provider_spend:openai").await, COST), "every matching key");

    // An answer dropped unread was still billed by the upstream: it counts too.
    drop(call(&mut svc, request("g")).await.expect("served"));
    assert!(close(spend(&store, "deployment_spend:a").await, 2.0 * COST));
}

#[tokio::test(start_paused = true)]
async fn failed_attempts_and_answers_without_usage_add_no_spend() {
    let reg = registry([priced("openai", "a").max_budget(1.0).budget_duration(HOUR)]);
    let store = memory();
    let failing = service_fn(|_req: Req| async {
        Err::<Resp, BoxError>(RouteError::upstream(Outcome::ServerError, "a".into(), "boom").into())
    });
    let mut svc = rig(&reg, &store, BudgetConfig::new(), failing);
    assert!(call(&mut svc, request("g")).await.is_err());
    assert_eq!(spend(&store, "deployment_spend:a").await, 0.0);

    let mut svc = rig(&reg, &store, BudgetConfig::new(), echo());
    let resp = call(&mut svc, request("g")).await.expect("served");
    resp.into_body().collect().await.expect("body");
    assert_eq!(spend(&store, "deployment_spend:a").await, 0.0, "no usage reported");
}

#[tokio::test(start_paused = true)]
async fn an_unknown_price_adds_no_spend() {
    let reg = registry([dep("g", "unpriced").max_budget(0.001).budget_duration(HOUR)]);
    let store = memory();
    let mut svc = rig(&reg, &store, BudgetConfig::new().provider("openai", Budget::new(0.001, HOUR)), with_usage());
    let counts = tally_read(&mut svc, 5).await;
    assert_eq!(count(&counts, "unpriced"), 5);
    assert_eq!(spend(&store, "deployment_spend:unpriced").await, 0.0);
    assert_eq!(spend(&store, "provider_spend:openai").await, 0.0);
}

#[tokio::test(start_paused = true)]
async fn a_provider_without_a_budget_is_not_limited() {
    // LiteLLM drops a deployment whose provider has a budget entry without a limit (§2.6 #46);
    // here only configured budgets limit.
    let reg = registry([priced("azure", "az")]);
    let store = memory();
    store.add_spend_detached("provider_spend:azure", 100.0, HOUR);
    let budgets = BudgetConfig::new().provider("openai", Budget::new(0.0, HOUR));
    let mut svc = rig(&reg, &store, budgets, with_usage());
    assert_eq!(count(&tally_read(&mut svc, 3).await, "az"), 3);
}
