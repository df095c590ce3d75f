//! LiteLLM's routing semantics through the whole gateway (issue 23, "Routing semantics"): `order`
//! tiers inside the group, `rpm` / `tpm` as LiteLLM reads them, `model_info.cooldown_time`, the
//! LiteLLM headers, and a 200 whose `finish_reason` is `content_filter` going to
//! `content_policy_fallbacks`. The gateway runs in-process over the real HTTP provider; the
//! upstream is an axum server on 127.0.0.1:0 answering in OpenAI's wire format, scripted by the
//! provider model each deployment sends. Real time, generous bounds, no sleeps for
//! synchronisation.
#![cfg(feature = "gateway")]

use std::{collections::HashMap, sync::Arc, time::Duration};

use axum::{Json, body::Body, extract::State, response::IntoResponse};
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use parking_lot::Mutex;
use serde_json::{Value, json};
use switchyard::{
    Config,
    gateway::Gateway,
    services::provider::{HttpProvider, ProviderConfig},
};
use tower::ServiceExt;

const KEY: &str = "sk-test-master";
/// Bound on anything a test waits for.
const PATIENCE: Duration = Duration::from_secs(20);

/// What the upstream saw and how many times each model failed so far.
#[derive(Default)]
struct Upstream {
    /// Provider models in the order they were asked for.
    seen: Mutex<Vec<String>>,
    /// `flaky-*` models fail their first call.
    calls: Mutex<HashMap<String, u32>>,
}

/// A chat completion in OpenAI's wire format.
fn completion(model: &str, content: Option<&str>, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000, "model": model,
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": content }, "finish_reason": finish }],
        "usage": { "prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30 }
    })
}

/// The scripted upstream: the provider model in the body says what to answer.
/// `filtered*`: a 200 cut by the content filter; `fail*`: a 500; `flaky*`: a 500 the first time;
/// anything else: a clean answer. A stream request gets chunks, the last with the finish reason.
async fn answer(State(up): State<Arc<Upstream>>, Json(body): Json<Value>) -> axum::response::Response {
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    up.seen.lock().push(model.clone());
    let call = {
        let mut calls = up.calls.lock();
        let n = calls.entry(model.clone()).or_default();
        *n += 1;
        *n
    };
    let fails = model.starts_with("fail") || (model.starts_with("flaky") && call == 1);
    if fails {
        let error = json!({ "error": { "message": "upstream broke", "type": "server_error", "code": null } });
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(error)).into_response();
    }
    let filtered = model.starts_with("filtered");
    let (content, finish) = if filtered { (None, "content_filter") } else { (Some("hello there"), "stop") };
    if body["stream"] == json!(true) {
        let chunk = |delta: Value, finish: Value| {
            let c = json!({ "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_700_000_000,
                "model": model, "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] });
            format!("data: {c}\n\n")
        };
        let mut sse = chunk(json!({ "role": "assistant", "content": "partial " }), Value::Null);
        sse += &chunk(json!({}), json!(finish));
        sse += "data: [DONE]\n\n";
        return ([("content-type", "text/event-stream")], sse).into_response();
    }
    Json(completion(&model, content, finish)).into_response()
}

/// Starts the upstream on a loopback port; returns its base URL and what it records.
async fn upstream() -> (String, Arc<Upstream>) {
    let state = Arc::new(Upstream::default());
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(answer)).with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, state)
}

/// A gateway over the HTTP provider for `model_list` entries (`name`, `model`, extra
/// `litellm_params`, extra `model_info`) and `router_settings`, all pointing at `base`.
fn gateway(base: &str, entries: &[(&str, &str, &str, &str)], router_settings: &str) -> Gateway {
    let mut yaml = String::from("model_list:\n");
    for (name, model, params, info) in entries {
        yaml += &format!(
            "  - model_name: {name}\n    litellm_params: {{ model: openai/{model}, api_base: \"{base}\", api_key: sk-up{params} }}\n    model_info: {{ id: {model}{info} }}\n"
        );
    }
    yaml += &format!("router_settings: {{ {router_settings} }}\ngeneral_settings: {{ master_key: {KEY} }}\n");
    let config = Config::from_yaml_str(&yaml).unwrap_or_else(|e| panic!("valid config ({e}):\n{yaml}"));
    let provider = HttpProvider::new(ProviderConfig::default().timeout(Duration::from_secs(10))).expect("provider");
    Gateway::builder(config).provider(provider).seed(7).build().expect("gateway")
}

/// An answer read whole.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_else(|| panic!("no `{name}` header"))
    }
}

async fn chat_with(gw: &Gateway, model: &str, extra: Value) -> Answer {
    let mut body = json!({ "model": model, "messages": [{ "role": "user", "content": "hello" }] });
    if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
        b.extend(e);
    }
    let req = Request::post("/v1/chat/completions")
        .header("authorization", format!("Bearer {KEY}"))
        .header("content-type", "application/json")
        .header("x-request-id", "req-semantics-1")
        .body(Body::from(body.to_string()))
        .expect("request");
    let resp =
        tokio::time::timeout(PATIENCE, gw.router().oneshot(req)).await.expect("answered in time").expect("infallible");
    let (parts, body) = resp.into_parts();
    let body = tokio::time::timeout(PATIENCE, body.collect()).await.expect("body in time").expect("body").to_bytes();
    Answer { status: parts.status, headers: parts.headers, body }
}

async fn chat(gw: &Gateway, model: &str) -> Answer {
    chat_with(gw, model, json!({})).await
}

// ---------------------------------------------------------------- content filter

/// LiteLLM `test_router_content_policy_fallbacks` (census §3.5 #80): a 200 whose
/// `finish_reason` is `content_filter` goes to the group's `content_policy_fallbacks` entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_content_filtered_answer_goes_to_the_content_policy_fallbacks() {
    let (base, up) = upstream().await;
    let entries = [("gpt-4o", "filtered-gpt", "", ""), ("safe", "clean-safe", "", "")];
    let gw = gateway(&base, &entries, "content_policy_fallbacks: [{ gpt-4o: [safe] }], num_retries: 2");
    let answer = chat(&gw, "gpt-4o").await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.header("x-switchyard-deployment-id"), "clean-safe");
    assert_eq!(answer.header("x-litellm-attempted-fallbacks"), "1");
    assert_eq!(answer.json()["choices"][0]["finish_reason"], "stop");
    assert_eq!(*up.seen.lock(), ["filtered-gpt", "clean-safe"], "not retried in its group: the fallback takes it");
}

/// LiteLLM `test_should_raise_content_policy_error` (census §3.5 #81): without a fallback for it
/// the filtered answer is returned as it is; a content-policy table without an entry for the
/// group does not take it even when default fallbacks exist; with no content-policy table at
/// all, the default fallbacks do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_content_filtered_answer_is_returned_as_is_unless_a_fallback_takes_it() {
    let (base, _up) = upstream().await;
    let entries =
        [("gpt-4o", "filtered-gpt", "", ""), ("other", "clean-other", "", ""), ("safe", "clean-safe", "", "")];
    for (settings, served) in [
        ("num_retries: 0", "filtered-gpt"),
        ("content_policy_fallbacks: [{ other: [safe] }], default_fallbacks: [safe]", "filtered-gpt"),
        ("default_fallbacks: [safe]", "clean-safe"),
    ] {
        let gw = gateway(&base, &entries, settings);
        let answer = chat(&gw, "gpt-4o").await;
        assert_eq!(answer.status, StatusCode::OK, "{settings}: {}", answer.text());
        assert_eq!(answer.header("x-switchyard-deployment-id"), served, "{settings}");
    }
    // `disable_fallbacks` in the request: nothing would serve it elsewhere, the answer stays.
    let gw = gateway(&base, &entries, "content_policy_fallbacks: [{ gpt-4o: [safe] }]");
    let answer = chat_with(&gw, "gpt-4o", json!({ "disable_fallbacks": true })).await;
    assert_eq!(answer.header("x-switchyard-deployment-id"), "filtered-gpt");
    assert_eq!(answer.json()["choices"][0]["finish_reason"], "content_filter");
}

/// Streams are left alone, as LiteLLM leaves them: the filter's finish reason comes after content
/// the client already has, so the stream ends as the upstream ended it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_content_filtered_stream_is_passed_on_as_it_is() {
    let (base, up) = upstream().await;
    let entries = [("gpt-4o", "filtered-gpt", "", ""), ("safe", "clean-safe", "", "")];
    let gw = gateway(&base, &entries, "content_policy_fallbacks: [{ gpt-4o: [safe] }]");
    let answer = chat_with(&gw, "gpt-4o", json!({ "stream": true })).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.header("x-switchyard-deployment-id"), "filtered-gpt");
    assert!(answer.text().contains("\"finish_reason\":\"content_filter\""), "{}", answer.text());
    assert_eq!(*up.seen.lock(), ["filtered-gpt"]);
}

// ---------------------------------------------------------------- order tiers

/// Tier 1 fails and `num_retries` is 0: the call still moves to tier 2 inside the group (before
/// any configured fallback), and that move is not a retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_order_tier_moves_to_the_next_one_without_a_retry() {
    let (base, up) = upstream().await;
    let entries =
        [("g", "fail-primary", ", order: 1", ""), ("g", "clean-backup", ", order: 2", ""), ("g2", "clean-g2", "", "")];
    let gw = gateway(&base, &entries, "num_retries: 0, fallbacks: [{ g: [g2] }]");
    let answer = chat(&gw, "g").await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.header("x-switchyard-deployment-id"), "clean-backup");
    assert_eq!(answer.header("x-litellm-attempted-retries"), "0");
    assert_eq!(answer.header("x-litellm-attempted-fallbacks"), "0");
    assert!(answer.headers.get("x-litellm-max-retries").is_none(), "no retry was made");
    assert_eq!(*up.seen.lock(), ["fail-primary", "clean-backup"]);
}

// ---------------------------------------------------------------- rpm / tpm

/// Under simple-shuffle `rpm` is a weight, as LiteLLM reads it: a deployment past it keeps
/// serving; `enforce_rate_limits` (or LiteLLM's `enforce_model_rate_limits` pre-call check)
/// makes it a limit, answered 429.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpm_is_a_weight_unless_enforce_rate_limits_is_set() {
    let (base, _up) = upstream().await;
    let entries = [("g", "clean-a", ", rpm: 1", "")];
    let gw = gateway(&base, &entries, "num_retries: 0");
    for _ in 0..3 {
        assert_eq!(chat(&gw, "g").await.status, StatusCode::OK);
    }
    for settings in
        ["num_retries: 0, enforce_rate_limits: true", "optional_pre_call_checks: [enforce_model_rate_limits]"]
    {
        let gw = gateway(&base, &entries, settings);
        assert_eq!(chat(&gw, "g").await.status, StatusCode::OK);
        let answer = chat(&gw, "g").await;
        assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS, "{settings}: {}", answer.text());
    }
    // `enable_pre_call_checks` enforces `rpm` too (LiteLLM's RPM pre-call check).
    let gw = gateway(&base, &entries, "num_retries: 0, enable_pre_call_checks: true");
    assert_eq!(chat(&gw, "g").await.status, StatusCode::OK);
    assert_eq!(chat(&gw, "g").await.status, StatusCode::TOO_MANY_REQUESTS);
}

// ---------------------------------------------------------------- headers

/// LiteLLM's proxy and router headers: the call id is the request id, the cost comes from the
/// deployment's prices and the usage, the group's limits are the sums of its deployments', and
/// what remains counts this answer (census §3.6 #91).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn litellm_headers_carry_the_call_id_the_cost_and_the_groups_limits() {
    let (base, _up) = upstream().await;
    let priced = ", rpm: 100, tpm: 10000, input_cost_per_token: 0.001, output_cost_per_token: 0.002";
    let entries = [("g", "clean-a", priced, ""), ("g", "clean-b", ", rpm: 50", "")];
    let gw = gateway(&base, &entries, "");
    let answer = chat(&gw, "g").await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.header("x-litellm-call-id"), "req-semantics-1");
    assert_eq!(answer.header("x-ratelimit-limit-requests"), "150");
    assert_eq!(answer.header("x-ratelimit-remaining-requests"), "149");
    assert_eq!(answer.header("x-ratelimit-limit-tokens"), "10000");
    let remaining: u64 = answer.header("x-ratelimit-remaining-tokens").parse().expect("a number");
    assert!(remaining <= 10_000 - 20, "the answer's completion tokens count: {remaining}");
    if answer.header("x-switchyard-deployment-id") == "clean-a" {
        let cost: f64 = answer.header("x-litellm-response-cost").parse().expect("a number");
        assert!((cost - (10.0 * 0.001 + 20.0 * 0.002)).abs() < 1e-9, "{cost}");
    }
    // A group without limits has no rate-limit headers.
    let gw = gateway(&base, &[("g", "clean-a", "", "")], "");
    let answer = chat(&gw, "g").await;
    assert!(answer.headers.get("x-ratelimit-limit-requests").is_none());
}

/// LiteLLM sends `x-litellm-max-retries` (the retry count in effect) only on answers that
/// needed a retry (`add_retry_headers_to_response`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_retries_is_sent_only_when_the_answer_needed_a_retry() {
    let (base, _up) = upstream().await;
    let gw = gateway(&base, &[("g", "flaky-a", "", "")], "num_retries: 3");
    let answer = chat(&gw, "g").await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.header("x-litellm-attempted-retries"), "1");
    assert_eq!(answer.header("x-litellm-max-retries"), "3");
    let answer = chat(&gw, "g").await;
    assert_eq!(answer.header("x-litellm-attempted-retries"), "0");
    assert!(answer.headers.get("x-litellm-max-retries").is_none());
}

// ---------------------------------------------------------------- cooldown time

/// LiteLLM 1.100 reads `model_info.cooldown_time` before `litellm_params.cooldown_time` (census
/// §1.23; `test_deployment_callback_respects_cooldown_time`): the bench lasts the former.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_info_cooldown_time_wins_over_the_deployments_own() {
    let (base, _up) = upstream().await;
    // Two deployments, so a 500 majority benches (the rate rule needs 5 requests, > 50% failing):
    // simpler to let `allowed_fails: 0` bench at the first failure.
    let entries = [("g", "fail-a", ", cooldown_time: 9", ", cooldown_time: 42"), ("g", "clean-b", "", "")];
    let gw = gateway(&base, &entries, "allowed_fails: 0, num_retries: 0");
    for _ in 0..20 {
        let _ = chat(&gw, "g").await;
        let cooling = gw.routing().cooldowns().await;
        if let Some(entry) = cooling.iter().find(|c| c.deployment.as_str() == "fail-a") {
            let switchyard::layers::state::CooldownState::CoolingDown(c) = &entry.state else {
                panic!("cooling down: {entry:?}")
            };
            let left = c.until.saturating_duration_since(tokio::time::Instant::now());
            assert!(left > Duration::from_secs(35) && left <= Duration::from_secs(42), "{left:?}");
            return;
        }
    }
    panic!("`fail-a` was never picked");
}

#[test]
fn model_info_cooldown_time_is_read_without_a_warning_and_checked() {
    let yaml = "model_list:\n  - { model_name: g, litellm_params: { model: openai/g }, model_info: { id: a, cooldown_time: 30 } }\n";
    let config = Config::from_yaml_str(yaml).expect("valid");
    assert!(config.warnings.iter().all(|w| !w.contains("cooldown_time")), "{:?}", config.warnings);
    let bad = yaml.replace("cooldown_time: 30", "cooldown_time: -1");
    let err = Config::from_yaml_str(&bad).expect_err("negative");
    assert!(err.to_string().contains("model_list[0].model_info.cooldown_time"), "{err}");
}
