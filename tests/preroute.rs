//! Pre-routers from a LiteLLM config, end to end: `auto_router/complexity_router` and
//! `auto_router/quality_router` entries through the gateway over loopback HTTP to mock upstreams
//! that speak the OpenAI wire format, `/v1/models`, and a reload that rebuilds them.

use bytes::Bytes;
use http::StatusCode;
use serde_json::json;
use switchyard::{
    Config, Router,
    layers::{BoxError, RouteBody, RouteCtx, preroute::ROUTED_MODEL_HEADER},
    services::mock::MockHandle,
};
use tower::{ServiceExt, service_fn};

#[path = "support/loopback.rs"]
mod loopback;

use loopback::{gateway, healthy, post, send};

/// A group of one OpenAI deployment on the mock at `base`.
fn group(name: &str, base: &str, model_info: &str) -> String {
    format!(
        "  - model_name: {name}\n    litellm_params: {{ model: openai/gpt-4o-mini, api_key: key-{name}, api_base: \"{base}\" }}\n    \
         model_info: {{ id: {name}-1{model_info} }}\n"
    )
}

const COMPLEXITY_ENTRY: &str = "  - model_name: smart
    litellm_params:
      model: auto_router/complexity_router
      complexity_router_config:
        tiers: { SIMPLE: small, MEDIUM: small, COMPLEX: big, REASONING: big }
      complexity_router_default_model: small
";

/// `small` and `big`, each on its own mock, and the `smart` complexity router over them.
async fn complexity_gateway() -> (MockHandle, MockHandle, loopback::Served) {
    let (small, big) = (healthy(), healthy());
    let yaml = format!(
        "model_list:\n{}{}{COMPLEXITY_ENTRY}",
        group("small", &small.base_url(), ""),
        group("big", &big.base_url(), "")
    );
    (small, big, gateway(&yaml).await)
}

fn chat(model: &str, text: &str) -> String {
    json!({"model": model, "messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": text}]})
        .to_string()
}

const CODING_TASK: &str = "Implement a Python function for the API endpoint, then refactor the database query. \
    Make the handler async and add concurrency with a threading pool.\n1. Write the code\n2. Add the tests";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_complexity_router_sends_a_greeting_to_simple_and_a_coding_task_to_complex() {
    let (small, big, gw) = complexity_gateway().await;
    let url = format!("{}/v1/chat/completions", gw.origin);

    let answer = post(url.clone(), &chat("smart", "Hello there"), &[]).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    assert_eq!(answer.header(ROUTED_MODEL_HEADER.as_str()), "small");
    assert_eq!(answer.header("x-switchyard-model-group"), "small");
    assert_eq!((small.requests(), big.requests()), (1, 0));
    let sent = small.last_request().and_then(|r| r.json()).expect("the upstream got JSON");
    assert_eq!(sent["model"], "gpt-4o-mini", "the deployment's model goes upstream, not the virtual name");

    let answer = post(url, &chat("smart", CODING_TASK), &[]).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    assert_eq!(answer.header(ROUTED_MODEL_HEADER.as_str()), "big");
    assert_eq!(answer.header("x-switchyard-model-group"), "big");
    assert_eq!((small.requests(), big.requests()), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_for_a_group_is_not_pre_routed_and_the_virtual_name_is_listed() {
    let (small, big, gw) = complexity_gateway().await;
    let answer = post(format!("{}/v1/chat/completions", gw.origin), &chat("big", "Hello there"), &[]).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    assert_eq!(answer.header(ROUTED_MODEL_HEADER.as_str()), "");
    assert_eq!((small.requests(), big.requests()), (0, 1));

    let models = send("GET", format!("{}/v1/models", gw.origin), None, &[]).await.json();
    let ids: Vec<&str> = models["data"].as_array().expect("a list").iter().filter_map(|m| m["id"].as_str()).collect();
    assert_eq!(ids, ["big", "small", "smart"]);
}

/// `mini` (tier 1), `mid` (tier 2, two deployments, the cheaper one sets the price), `pricey`
/// (tier 2, dearer) and `top` (tier 4), and the `quality` router over them.
fn quality_yaml(mocks: &[&MockHandle; 4]) -> String {
    let [mini, mid, pricey, top] = mocks.map(|m| m.base_url());
    let prefs = |tier: u32, cost: f64| {
        format!(", litellm_routing_preferences: {{ quality_tier: {tier} }}, input_cost_per_token: {cost}")
    };
    format!(
        "model_list:\n{}{}{}{}  - model_name: quality
    litellm_params:
      model: auto_router/quality_router
      quality_router_config: {{ available_models: [mini, mid, pricey, top] }}
      quality_router_default_model: mid
",
        group("mini", &mini, &prefs(1, 0.000_000_1)),
        group("mid", &mid, &prefs(2, 0.000_001)),
        group("pricey", &pricey, &prefs(2, 0.000_01)),
        group("top", &top, &prefs(4, 0.000_02)),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quality_router_serves_the_cheapest_group_meeting_the_callers_minimum_tier() {
    let mocks = [healthy(), healthy(), healthy(), healthy()];
    let gw = gateway(&quality_yaml(&[&mocks[0], &mocks[1], &mocks[2], &mocks[3]])).await;
    let url = format!("{}/v1/chat/completions", gw.origin);
    let counts = || mocks.iter().map(MockHandle::requests).collect::<Vec<_>>();

    // A greeting needs tier 1.
    let answer = post(url.clone(), &chat("quality", "Hello there"), &[]).await;
    assert_eq!((answer.status, answer.header(ROUTED_MODEL_HEADER.as_str())), (StatusCode::OK, "mini"));
    // At least tier 2, by header: the cheaper tier-2 group.
    let answer = post(url.clone(), &chat("quality", "Hello there"), &[("x-switchyard-min-quality-tier", "2")]).await;
    assert_eq!((answer.status, answer.header(ROUTED_MODEL_HEADER.as_str())), (StatusCode::OK, "mid"));
    // At least tier 3, in the body's metadata: no tier 3, so the next one up.
    let body = json!({"model": "quality", "metadata": {"min_quality_tier": 3}, "messages": [{"role": "user", "content": "Hello there"}]});
    let answer = post(url.clone(), &body.to_string(), &[]).await;
    assert_eq!((answer.status, answer.header(ROUTED_MODEL_HEADER.as_str())), (StatusCode::OK, "top"));
    assert_eq!(counts(), [1, 1, 0, 1]);

    // A minimum that is not a number is the caller's mistake, named.
    let answer = post(url, &chat("quality", "Hello there"), &[("x-switchyard-min-quality-tier", "high")]).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(answer.json()["error"]["message"].as_str().is_some_and(|m| m.contains("x-switchyard-min-quality-tier")));
    assert_eq!(counts(), [1, 1, 0, 1]);
}

/// A provider that answers every attempt.
fn provider()
-> impl tower::Service<http::Request<Bytes>, Response = http::Response<RouteBody>, Error = BoxError, Future: Send + 'static>
+ Clone
+ Send
+ Sync
+ 'static {
    service_fn(|_: http::Request<Bytes>| async { Ok::<_, BoxError>(http::Response::new(RouteBody::empty())) })
}

fn request(model: &str, text: &str) -> http::Request<Bytes> {
    let body = Bytes::from(chat(model, text));
    let facts = switchyard::layers::RequestFacts::new().with_body(body.clone());
    let mut req = http::Request::new(body);
    req.extensions_mut().insert(RouteCtx::with_facts(model, facts));
    req
}

async fn routed(router: &Router, model: &str, text: &str) -> Result<String, BoxError> {
    let resp = router.service().oneshot(request(model, text)).await?;
    Ok(resp.headers().get(ROUTED_MODEL_HEADER).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned())
}

#[tokio::test]
async fn a_reload_rebuilds_the_pre_routers() {
    let groups = "model_list:
  - { model_name: small, litellm_params: { model: openai/gpt-4o-mini } }
  - { model_name: big, litellm_params: { model: openai/gpt-4o } }
";
    let first = Config::from_yaml_str(&format!("{groups}{COMPLEXITY_ENTRY}")).expect("valid");
    let router = Router::from_config(&first, provider()).expect("router");
    assert_eq!(router.pre_routed_names(), ["smart"]);
    assert_eq!(routed(&router, "smart", CODING_TASK).await.expect("served"), "big");

    // The same name now sends everything complex to `small`, and a second router appears.
    let second = Config::from_yaml_str(&format!(
        "{groups}{}  - model_name: auto
    litellm_params: {{ model: auto_router/complexity_router, complexity_router_config: {{ tiers: {{ SIMPLE: big, MEDIUM: big }} }} }}
",
        COMPLEXITY_ENTRY.replace("COMPLEX: big", "COMPLEX: small")
    ))
    .expect("valid");
    router.reload(&second).expect("reloads");
    assert_eq!(router.pre_routed_names(), ["auto", "smart"]);
    assert_eq!(routed(&router, "smart", CODING_TASK).await.expect("served"), "small");
    assert_eq!(routed(&router, "auto", "Hello there").await.expect("served"), "big");

    // A config without pre-routers: the names are gone, asking for one is an unknown group.
    router.reload(&Config::from_yaml_str(groups).expect("valid")).expect("reloads");
    assert!(router.pre_routed_names().is_empty());
    let err = routed(&router, "smart", "Hello there").await.expect_err("not a group any more");
    assert!(err.to_string().contains("smart"), "{err}");
}

#[tokio::test]
async fn a_reload_with_an_invalid_pre_router_changes_nothing() {
    let yaml = "model_list:
  - { model_name: small, litellm_params: { model: openai/gpt-4o-mini } }
";
    let first = Config::from_yaml_str(&format!(
        "{yaml}  - {{ model_name: smart, litellm_params: {{ model: auto_router/complexity_router, complexity_router_default_model: small, complexity_router_config: {{ tiers: {{ SIMPLE: small }} }} }} }}\n"
    ))
    .expect("valid");
    let router = Router::from_config(&first, provider()).expect("router");
    // Built in code, past the loader's checks: the reload still refuses it.
    let mut bad = first.clone();
    if let Some(switchyard::config::AutoRouter::Complexity(c)) = bad.pre_routers.first_mut().map(|p| &mut p.router) {
        c.tiers.insert(switchyard::layers::preroute::complexity::Tier::Complex, "nowhere".to_owned());
    }
    let err = router.reload(&bad).expect_err("an unknown tier group");
    assert!(
        err.to_string()
            .starts_with("pre_routers[0].complexity_router_config.tiers.COMPLEX: `nowhere` is not a model group"),
        "{err}"
    );
    assert_eq!(router.pre_routed_names(), ["smart"]);
    assert_eq!(routed(&router, "smart", "Hello there").await.expect("served"), "small");
}
