//! The adaptive pre-router from a LiteLLM config, end to end: config loading (valid and invalid,
//! naming the path), the gateway over loopback HTTP to mock upstreams learning from the calls'
//! outcomes, `POST /router/feedback` keyed by request id, and the state endpoints.

use http::StatusCode;
use serde_json::{Value, json};
use switchyard::{
    Config,
    config::{AutoRouter, ConfigErrorKind},
    layers::preroute::ROUTED_MODEL_HEADER,
};

#[path = "support/loopback.rs"]
mod loopback;

use loopback::{failing, gateway, healthy, post, send};

const GROUPS: &str = "model_list:
  - model_name: good
    litellm_params: { model: openai/gpt-4o, api_key: k, input_cost_per_token: 0.000001 }
    model_info: { adaptive_router_preferences: { quality_tier: 2, strengths: [writing] } }
  - model_name: cheap
    litellm_params: { model: openai/gpt-4o-mini, api_key: k, input_cost_per_token: 0.0000001 }
";

fn with_router(config: &str) -> String {
    format!(
        "{GROUPS}  - model_name: smart
    litellm_params:
      model: auto_router/adaptive_router
      adaptive_router_default_model: cheap
      adaptive_router_config: {config}
"
    )
}

#[test]
fn an_adaptive_router_entry_loads_with_litellms_keys() {
    let config = Config::from_yaml_str(&with_router(
        "{ available_models: [good, cheap], weights: { quality: 0.8, cost: 0.2 }, decay_half_life: 3600, tier_labels: x }",
    ))
    .expect("loads");
    let [entry] = config.pre_routers.as_slice() else { panic!("one pre-router") };
    assert_eq!(entry.name, "smart");
    let AutoRouter::Adaptive(a) = &entry.router else { panic!("adaptive") };
    assert_eq!(a.config.weights.quality, 0.8);
    assert_eq!(a.config.decay_half_life, 3600.0);
    assert_eq!(a.default_model.as_deref(), Some("cheap"));
    assert_eq!(config.adaptive_preferences["good"].quality_tier, 2);
    assert!(config.warnings.iter().any(|w| w.contains("adaptive_router_config.tier_labels")), "{:#?}", config.warnings);
    assert!(config.build_pre_routers().expect("builds").get("smart").is_some());
}

#[track_caller]
fn refused(yaml: &str, kind: ConfigErrorKind, path: &str, fragment: &str) {
    let err = Config::from_yaml_str(yaml).expect_err("refused");
    assert_eq!(err.kind(), kind, "{err}");
    assert_eq!(err.path(), path, "{err}");
    assert!(err.to_string().contains(fragment), "{err}");
}

#[test]
fn invalid_adaptive_settings_fail_the_load_naming_their_path() {
    let lp = "model_list[2].litellm_params";
    refused(
        &with_router("{ available_models: [good, cheap], weights: { quality: 0.5, cost: 0.2 } }"),
        ConfigErrorKind::Invalid,
        &format!("{lp}.adaptive_router_config"),
        "weights: must sum to 1.0",
    );
    refused(
        &with_router("{ available_models: [good, nope] }"),
        ConfigErrorKind::Invalid,
        &format!("{lp}.adaptive_router_config.available_models[1]"),
        "`nope` is not a model group",
    );
    refused(
        &with_router("{ available_models: [] }"),
        ConfigErrorKind::Invalid,
        &format!("{lp}.adaptive_router_config"),
        "available_models",
    );
    refused(
        &with_router("{ available_models: [good], weights: { quality: 1.0, cost: 0.0, latency: 0.0 } }"),
        ConfigErrorKind::Type,
        &format!("{lp}.adaptive_router_config.weights.latency"),
        "unknown field",
    );
    let bad_tier = with_router("{ available_models: [good, cheap] }").replace("quality_tier: 2", "quality_tier: 5");
    refused(
        &bad_tier,
        ConfigErrorKind::Invalid,
        "model_list[0].model_info.adaptive_router_preferences.quality_tier",
        "[1, 2, 3]",
    );
    let bad_strength = with_router("{ available_models: [good, cheap] }").replace("[writing]", "[poetry]");
    refused(
        &bad_strength,
        ConfigErrorKind::Type,
        "model_list[0].model_info.adaptive_router_preferences.strengths[0]",
        "poetry",
    );
    refused(
        &with_router("{ available_models: [good], decay_half_life: -1 }"),
        ConfigErrorKind::Invalid,
        &format!("{lp}.adaptive_router_config"),
        "decay_half_life",
    );
}

/// `good` (healthy) and `bad` (every call a 500), and `smart` over them; no retries.
fn learning_yaml(good: &str, bad: &str) -> String {
    format!(
        "model_list:
  - model_name: good
    litellm_params: {{ model: openai/gpt-4o-mini, api_key: k, api_base: \"{good}\", input_cost_per_token: 0.000001 }}
  - model_name: bad
    litellm_params: {{ model: openai/gpt-4o-mini, api_key: k, api_base: \"{bad}\", input_cost_per_token: 0.000001 }}
  - model_name: smart
    litellm_params:
      model: auto_router/adaptive_router
      adaptive_router_config: {{ available_models: [good, bad] }}
router_settings: {{ num_retries: 0 }}
"
    )
}

fn chat(model: &str, text: &str) -> String {
    json!({"model": model, "messages": [{"role": "user", "content": text}]}).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bandit_learns_from_failures_to_avoid_a_failing_group() {
    let (good, bad) = (healthy(), failing(StatusCode::INTERNAL_SERVER_ERROR));
    let gw = gateway(&learning_yaml(&good.base_url(), &bad.base_url())).await;
    let url = format!("{}/v1/chat/completions", gw.origin);
    let mut routed = Vec::new();
    for _ in 0..60 {
        let answer = post(url.clone(), &chat("smart", "Hello there"), &[]).await;
        routed.push(answer.header(ROUTED_MODEL_HEADER.as_str()).to_owned());
        if answer.status != StatusCode::OK {
            assert_eq!(answer.status, StatusCode::BAD_GATEWAY, "{:?}", answer.body);
        }
    }
    // Each success teaches the bandit as much as each failure: the bad group is tried a few times.
    let tried = bad.requests();
    assert!((1..10).contains(&tried), "bad got {tried} of 60: {routed:?}");
    let state = send("GET", format!("{}/adaptive_router/state", gw.origin), None, &[]).await.json();
    let cells = state["routers"][0]["cells"].as_array().expect("cells").clone();
    let general = |model: &str| {
        cells.iter().find(|c| c["request_type"] == "general" && c["model"] == model).cloned().expect("a cell")
    };
    // Every call to the bad group counted one failure against it, every other call one success.
    let (good_cell, bad_cell) = (general("good"), general("bad"));
    assert_eq!(bad_cell["chosen"].as_u64(), Some(tried));
    let failures = bad_cell["beta"].as_f64().expect("beta") - 5.0;
    assert!((failures - tried as f64).abs() < 1e-3, "{bad_cell}");
    assert!(bad_cell["quality_mean"].as_f64().expect("a mean") < 0.5, "{bad_cell}");
    assert!(good_cell["quality_mean"].as_f64().expect("a mean") > 0.9, "{good_cell}");
    let before = bad.requests();
    for _ in 0..20 {
        post(url.clone(), &chat("smart", "Hello there"), &[]).await;
    }
    assert_eq!(bad.requests(), before, "the bad group gets no more calls");
}

async fn feedback(origin: &str, body: Value) -> loopback::Answer {
    post(format!("{origin}/router/feedback"), &body.to_string(), &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_keyed_by_request_id_moves_the_posterior_once() {
    let (a, b) = (healthy(), healthy());
    let gw = gateway(&learning_yaml(&a.base_url(), &b.base_url())).await;
    let answer =
        post(format!("{}/v1/chat/completions", gw.origin), &chat("smart", "Please proofread this email"), &[]).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let id = answer.header("x-request-id").to_owned();
    assert_eq!(answer.header("x-litellm-call-id"), id);
    let group = answer.header(ROUTED_MODEL_HEADER.as_str()).to_owned();

    let applied = feedback(&gw.origin, json!({"request_id": id, "score": 0.0})).await;
    assert_eq!(applied.status, StatusCode::OK, "{:?}", applied.body);
    let body = applied.json();
    assert_eq!((body["model"].as_str(), body["request_type"].as_str()), (Some("smart"), Some("writing")));
    assert_eq!(body["routed_model"].as_str(), Some(group.as_str()));
    assert_eq!((body["alpha_delta"].as_f64(), body["beta_delta"].as_f64()), (Some(0.0), Some(1.0)));

    let state = send("GET", format!("{}/adaptive_router/state", gw.origin), None, &[]).await.json();
    let cell = state["routers"][0]["cells"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["request_type"] == "writing" && c["model"] == group.as_str()).cloned())
        .expect("the cell");
    // One success (the call's outcome) and one failure (the feedback) on the 5 : 5 prior (a day's
    // half-life takes a trace off on the real clock).
    let (alpha, beta) = (cell["alpha"].as_f64().expect("alpha"), cell["beta"].as_f64().expect("beta"));
    assert!((alpha - 6.0).abs() < 1e-3 && (beta - 6.0).abs() < 1e-3, "{cell}");

    let again = feedback(&gw.origin, json!({"request_id": id, "signal": "satisfaction"})).await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{:?}", again.body);
    let unknown = feedback(&gw.origin, json!({"request_id": "nope", "score": 1})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{:?}", unknown.body);
    assert_eq!(unknown.header("x-switchyard-error"), "unknown_request_id");

    for (body, fragment) in [
        (json!({"score": 1}), "`request_id` is required"),
        (json!({"request_id": id, "score": 2}), "`score` must be from 0 to 1"),
        (json!({"request_id": id, "signal": "joy"}), "`signal` `joy` is not one of"),
        (json!({"request_id": id}), "one of `score`"),
        (json!({"request_id": id, "score": 1, "signal": "loop"}), "not both"),
        (json!({"request_id": id, "score": "high"}), "`score`"),
        (json!({"request_id": id, "scroe": 1}), "scroe"),
    ] {
        let answer = feedback(&gw.origin, body).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{:?}", answer.body);
        assert!(answer.text().contains(fragment), "{fragment}: {}", answer.text());
    }

    let state = send("GET", format!("{}/router/state", gw.origin), None, &[]).await.json();
    let pre = &state["pre_routing"];
    assert_eq!(pre["names"], json!(["smart"]));
    assert_eq!(pre["decisions"][0]["name"], "smart");
    assert_eq!(pre["decisions"][0]["groups"][0]["calls"], 1);
    assert_eq!(pre["adaptive"][0]["decisions"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_adaptive_router_the_state_is_404() {
    let a = healthy();
    let gw = gateway(&format!(
        "model_list:\n  - {{ model_name: a, litellm_params: {{ model: openai/gpt-4o, api_key: k, api_base: \"{}\" }} }}\n",
        a.base_url()
    ))
    .await;
    let answer = send("GET", format!("{}/adaptive_router/state", gw.origin), None, &[]).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_tokens_for_a_virtual_name_counts_as_the_group_its_pre_router_would_pick() {
    let (a, b) = (healthy(), healthy());
    let yaml = format!(
        "{}  - model_name: tiered
    litellm_params:
      model: auto_router/complexity_router
      complexity_router_config: {{ tiers: {{ SIMPLE: bad, MEDIUM: bad, COMPLEX: good, REASONING: good }} }}
",
        learning_yaml(&a.base_url(), &b.base_url()).replace("router_settings: { num_retries: 0 }\n", "")
    );
    let gw = gateway(&yaml).await;
    let body = |model: &str| {
        json!({"model": model, "max_tokens": 10, "messages": [{"role": "user", "content": "Hello there, how are you?"}]})
            .to_string()
    };
    for path in ["/v1/messages/count_tokens", "/anthropic/v1/messages/count_tokens"] {
        for (model, group) in [("tiered", Some("bad")), ("smart", None)] {
            let answer = post(format!("{}{path}", gw.origin), &body(model), &[]).await;
            assert_eq!(answer.status, StatusCode::OK, "{model}: {:?}", answer.body);
            assert!(answer.json()["input_tokens"].as_u64().is_some_and(|n| n > 0), "{:?}", answer.body);
            let routed = answer.header(ROUTED_MODEL_HEADER.as_str());
            match group {
                Some(group) => assert_eq!(routed, group),
                None => assert!(["good", "bad"].contains(&routed), "{routed}"),
            }
        }
    }
    // Counting is not routing: the adaptive router counted no decision, and no upstream was called.
    let state = send("GET", format!("{}/adaptive_router/state", gw.origin), None, &[]).await.json();
    assert_eq!(state["routers"][0]["decisions"], 0);
    assert_eq!((a.requests(), b.requests()), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_and_the_adaptive_state_take_the_master_key() {
    let (a, b) = (healthy(), healthy());
    let yaml =
        format!("{}general_settings: {{ master_key: sk-test-1234 }}\n", learning_yaml(&a.base_url(), &b.base_url()));
    let gw = gateway(&yaml).await;
    let body = json!({"request_id": "x", "score": 1}).to_string();
    let answer = post(format!("{}/router/feedback", gw.origin), &body, &[]).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    let answer = send("GET", format!("{}/adaptive_router/state", gw.origin), None, &[]).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    let key = [("authorization", "Bearer sk-test-1234")];
    let answer = post(format!("{}/router/feedback", gw.origin), &body, &key).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND, "{:?}", answer.body);
}
