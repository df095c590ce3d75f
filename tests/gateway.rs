//! The gateway end to end: endpoints, auth, routing headers, metrics, operations, reload and
//! shutdown. Most tests call the axum app in-process (`oneshot`) with the simulated provider;
//! the socket tests serve on 127.0.0.1:0, one of them through the real HTTP provider to the mock
//! upstream. Real time, generous bounds, no sleeps for synchronisation.
#![cfg(feature = "gateway")]

use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde_json::{Value, json};
use switchyard::{
    Config,
    gateway::Gateway,
    services::{
        mock::{MockProfile, MockUpstream},
        profile::{Failure, Latency},
        provider::{HttpProvider, ProviderConfig},
        sim::{SimProfile, SimProvider},
    },
};
use tokio::sync::{mpsc, oneshot};
use tower::{ServiceBuilder, ServiceExt};

#[path = "support/config_file.rs"]
mod config_file;
use config_file::ConfigFile;

const KEY: &str = "sk-test-master";
const UPSTREAM_KEY: &str = "sk-upstream-secret-0123456789abcdef";
/// Bound on anything a test waits for.
const PATIENCE: Duration = Duration::from_secs(20);

/// Two deployments of `gpt-4o` (a, b), a `backup` group it falls back to, an embedding group,
/// a visible and a hidden alias, and a master key.
const CONFIG: &str = r#"
model_list:
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o, api_key: sk-upstream-secret-0123456789abcdef, rpm: 600, weight: 1, api_base: "https://a.example.com/v1?key=sk-q" }
    model_info: { id: a }
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o, api_base: "https://b.example.com/v1", weight: 2, tpm: 100000 }
    model_info: { id: b }
  - { model_name: backup, litellm_params: { model: openai/backup }, model_info: { id: c } }
  - { model_name: text-embedding-3-small, litellm_params: { model: openai/text-embedding-3-small }, model_info: { id: e } }
router_settings:
  model_group_alias: { fast: gpt-4o, internal: { model: backup, hidden: true } }
  fallbacks: [{ gpt-4o: [backup] }]
general_settings: { master_key: sk-test-master }
"#;

fn config(yaml: &str) -> Config {
    Config::from_yaml_str(yaml).expect("valid config")
}

fn gateway_with(yaml: &str, sim: SimProvider) -> Gateway {
    Gateway::builder(config(yaml)).provider(sim).seed(7).build().expect("gateway")
}

/// A simulator answering in a millisecond.
fn quick_sim(seed: u64) -> SimProvider {
    let ms = Latency::fixed(Duration::from_millis(1));
    let quick = SimProfile::builder().latency(ms).ttft(ms).chunk_interval(ms).build().expect("valid profile");
    SimProvider::new(seed).default_profile(quick)
}

fn gateway() -> Gateway {
    gateway_with(CONFIG, quick_sim(1))
}

fn failing(kind: Failure) -> SimProfile {
    SimProfile::builder().fail(kind, 1.0).build().expect("valid profile")
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

    /// An OpenAI-style error answer's `error.code`.
    fn error_code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("not an error answer: {}", self.text()))
            .to_owned()
    }
}

async fn send(gw: &Gateway, req: Request<Body>) -> Answer {
    let resp =
        tokio::time::timeout(PATIENCE, gw.router().oneshot(req)).await.expect("answered in time").expect("infallible");
    let (parts, body) = resp.into_parts();
    let body = tokio::time::timeout(PATIENCE, body.collect()).await.expect("body in time").expect("body").to_bytes();
    Answer { status: parts.status, headers: parts.headers, body }
}

fn authed(builder: http::request::Builder) -> http::request::Builder {
    builder.header("authorization", format!("Bearer {KEY}"))
}

fn post_json(path: &str, body: &Value) -> Request<Body> {
    authed(Request::post(path))
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .expect("request")
}

fn get(path: &str) -> Request<Body> {
    authed(Request::get(path)).body(Body::empty()).expect("request")
}

fn chat_body(model: &str) -> Value {
    json!({ "model": model, "messages": [{ "role": "user", "content": "hello" }] })
}

fn chat(model: &str) -> Request<Body> {
    post_json("/v1/chat/completions", &chat_body(model))
}

// ---------------------------------------------------------------- auth

#[tokio::test]
async fn master_key_is_required_everywhere_but_the_health_probes() {
    let gw = gateway();
    let anonymous = |path: &str, method: &str| {
        Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .body(Body::from(chat_body("gpt-4o").to_string()))
            .expect("request")
    };
    for (path, method) in [
        ("/v1/chat/completions", "POST"),
        ("/chat/completions", "POST"),
        ("/v1/embeddings", "POST"),
        ("/v1/models", "GET"),
        ("/metrics", "GET"),
        ("/router/deployments", "GET"),
        ("/router/deployments/a/cooldown", "POST"),
        ("/router/reload", "POST"),
    ] {
        let answer = send(&gw, anonymous(path, method)).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{method} {path}");
        assert_eq!(answer.error_code(), "invalid_api_key");
        assert!(answer.headers.contains_key("x-request-id"));
    }
    let wrong = Request::post("/v1/chat/completions")
        .header("authorization", "Bearer sk-test-maste")
        .body(Body::from(chat_body("gpt-4o").to_string()))
        .expect("request");
    assert_eq!(send(&gw, wrong).await.status, StatusCode::UNAUTHORIZED);
    let right = send(&gw, chat("gpt-4o")).await;
    assert_eq!(right.status, StatusCode::OK, "{}", right.text());
    for header in ["api-key", "x-api-key"] {
        let req = Request::get("/v1/models").header(header, KEY).body(Body::empty()).expect("request");
        assert_eq!(send(&gw, req).await.status, StatusCode::OK, "key in `{header}`");
    }
    for path in ["/health/liveliness", "/health/readiness"] {
        let req = Request::get(path).body(Body::empty()).expect("request");
        assert_eq!(send(&gw, req).await.status, StatusCode::OK, "{path} is open");
    }
}

#[tokio::test]
async fn without_a_master_key_everything_is_open() {
    let gw = gateway_with(&CONFIG.replace("general_settings: { master_key: sk-test-master }", ""), quick_sim(1));
    let req = Request::get("/v1/models").body(Body::empty()).expect("request");
    assert_eq!(send(&gw, req).await.status, StatusCode::OK);
}

// ---------------------------------------------------------------- OpenAI endpoints

#[tokio::test]
async fn chat_completion_carries_routing_headers_and_the_request_id() {
    let gw = gateway();
    let mut req = chat("gpt-4o");
    req.headers_mut().insert("x-request-id", "req-42".parse().expect("header"));
    let answer = send(&gw, req).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.json()["object"], "chat.completion");
    assert_eq!(answer.header("x-request-id"), "req-42");
    assert_eq!(answer.header("x-switchyard-model-group"), "gpt-4o");
    assert_eq!(answer.header("x-litellm-model-group"), "gpt-4o");
    let id = answer.header("x-switchyard-deployment-id");
    assert!(id == "a" || id == "b", "{id}");
    assert_eq!(answer.header("x-litellm-model-id"), id);
    assert_eq!(answer.header("x-switchyard-attempted-retries"), "0");
    assert_eq!(answer.header("x-litellm-attempted-retries"), "0");
    assert_eq!(answer.header("x-switchyard-attempted-fallbacks"), "0");
    assert_eq!(answer.header("x-litellm-attempted-fallbacks"), "0");
    // A number of milliseconds (its size is measured by the benchmarks, not asserted here).
    let overhead: f64 = answer.header("x-switchyard-overhead-ms").parse().expect("a number of milliseconds");
    assert!(overhead >= 0.0, "{overhead}");

    // Without a client id, one is made; the short path and the alias work too.
    let answer = send(&gw, post_json("/chat/completions", &chat_body("fast"))).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.header("x-request-id").len() >= 32);
    assert_eq!(answer.header("x-switchyard-model-group"), "gpt-4o");
}

#[tokio::test]
async fn streaming_chat_answers_server_sent_events_until_done() {
    let gw = gateway();
    let mut body = chat_body("gpt-4o");
    body["stream"] = json!(true);
    let answer = send(&gw, post_json("/v1/chat/completions", &body)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert!(answer.header("content-type").starts_with("text/event-stream"));
    assert_eq!(answer.header("x-switchyard-model-group"), "gpt-4o");
    let text = answer.text();
    assert!(text.contains("chat.completion.chunk"), "{text}");
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
}

#[tokio::test]
async fn embeddings_answer_in_the_openai_format() {
    let gw = gateway();
    for path in ["/v1/embeddings", "/embeddings"] {
        let answer = send(&gw, post_json(path, &json!({ "model": "text-embedding-3-small", "input": "hello" }))).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
        let v = answer.json();
        assert_eq!(v["object"], "list");
        assert!(v["data"][0]["embedding"].as_array().is_some_and(|e| !e.is_empty()));
        assert_eq!(answer.header("x-switchyard-deployment-id"), "e");
    }
}

#[tokio::test]
async fn models_lists_groups_and_visible_aliases() {
    let gw = gateway();
    for path in ["/v1/models", "/models"] {
        let answer = send(&gw, get(path)).await;
        assert_eq!(answer.status, StatusCode::OK);
        let v = answer.json();
        assert_eq!(v["object"], "list");
        let ids: Vec<&str> = v["data"].as_array().expect("data").iter().filter_map(|m| m["id"].as_str()).collect();
        assert_eq!(ids, ["backup", "fast", "gpt-4o", "text-embedding-3-small"]);
        assert_eq!(v["data"][0]["object"], "model");
    }
}

#[tokio::test]
async fn unknown_model_is_404_listing_the_groups() {
    let answer = send(&gateway(), chat("gpt-5")).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(answer.error_code(), "model_not_found");
    let message = answer.json()["error"]["message"].as_str().expect("message").to_owned();
    assert!(message.contains("gpt-4o") && message.contains("backup"), "{message}");
    assert!(!message.contains("internal"), "hidden aliases stay hidden: {message}");
}

#[tokio::test]
async fn body_too_large_is_413_and_malformed_json_is_400() {
    let gw = Gateway::builder(config(CONFIG)).provider(quick_sim(1)).max_body_bytes(1024).build().expect("gateway");
    let big = json!({ "model": "gpt-4o", "messages": [{ "role": "user", "content": "x".repeat(4096) }] });
    let answer = send(&gw, post_json("/v1/chat/completions", &big)).await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(answer.error_code(), "body_too_large");

    let broken = authed(Request::post("/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(Body::from(r#"{"model": "gpt-4o", "messages": ["#))
        .expect("request");
    let answer = send(&gw, broken).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.json()["error"]["type"], "invalid_request_error");
}

#[tokio::test]
async fn unknown_routes_and_wrong_methods_answer_openai_style_json() {
    let gw = gateway();
    let answer = send(&gw, get("/v1/nothing-here")).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(answer.error_code(), "unknown_endpoint");
    assert!(answer.headers.contains_key("x-request-id"));

    let answer = send(&gw, get("/v1/chat/completions")).await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(answer.error_code(), "method_not_allowed");
    let answer = send(&gw, post_json("/v1/models", &json!({}))).await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(answer.header("allow"), "GET,HEAD");
}

// ---------------------------------------------------------------- routing headers

#[tokio::test]
async fn routing_headers_count_a_retry() {
    const GROUP: &str = r#"
model_list:
  - { model_name: g, litellm_params: { model: openai/g }, model_info: { id: flaky } }
  - { model_name: g, litellm_params: { model: openai/g }, model_info: { id: steady } }
general_settings: { master_key: sk-test-master }
"#;
    let gw = gateway_with(GROUP, quick_sim(3).profile("flaky", failing(Failure::RateLimited)));
    // `flaky` answers 429 the first time it is picked, which benches it; until then the random
    // pick may choose `steady` directly.
    for _ in 0..40 {
        let answer = send(&gw, chat("g")).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
        assert_eq!(answer.header("x-switchyard-deployment-id"), "steady");
        if answer.header("x-switchyard-attempted-retries") == "1" {
            assert_eq!(answer.header("x-litellm-attempted-retries"), "1");
            assert_eq!(answer.header("x-switchyard-attempted-fallbacks"), "0");
            return;
        }
    }
    panic!("`flaky` was never picked");
}

#[tokio::test]
async fn routing_headers_count_a_fallback() {
    let sim = quick_sim(4).profile("a", failing(Failure::InternalError)).profile("b", failing(Failure::InternalError));
    let gw = gateway_with(CONFIG, sim);
    let answer = send(&gw, chat("gpt-4o")).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.header("x-switchyard-model-group"), "backup");
    assert_eq!(answer.header("x-litellm-model-group"), "backup");
    assert_eq!(answer.header("x-switchyard-deployment-id"), "c");
    assert_eq!(answer.header("x-switchyard-attempted-fallbacks"), "1");
    assert_eq!(answer.header("x-litellm-attempted-fallbacks"), "1");

    // The hop and the failed attempts are in the metrics.
    let metrics = send(&gw, get("/metrics")).await.text();
    assert!(has_sample(&metrics, "switchyard_fallbacks_total", &[r#"from="gpt-4o""#, r#"to="backup""#]), "{metrics}");
    assert!(
        has_sample(&metrics, "switchyard_attempts_total", &[r#"group="gpt-4o""#, r#"outcome="server_error""#]),
        "{metrics}"
    );
    assert!(has_sample(&metrics, "switchyard_retries_total", &[r#"group="gpt-4o""#]), "{metrics}");
}

// ---------------------------------------------------------------- metrics and health

/// Whether the exposition has a sample line of `name` with every label in `labels`.
fn has_sample(text: &str, name: &str, labels: &[&str]) -> bool {
    text.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .any(|l| labels.iter().all(|label| l.contains(label)))
}

#[tokio::test]
async fn metrics_expose_request_counters_and_histograms_after_traffic() {
    let gw = gateway();
    assert_eq!(send(&gw, chat("gpt-4o")).await.status, StatusCode::OK);
    let answer = send(&gw, get("/metrics")).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.header("content-type").starts_with("text/plain"));
    let text = answer.text();
    assert!(
        has_sample(&text, "switchyard_requests_total", &[r#"endpoint="/v1/chat/completions""#, r#"status="200""#]),
        "{text}"
    );
    assert!(has_sample(&text, "switchyard_attempts_total", &[r#"group="gpt-4o""#, r#"outcome="success""#]), "{text}");
    assert!(has_sample(&text, "switchyard_request_duration_seconds_bucket", &[r#"endpoint="/v1/chat/completions""#]));
    assert!(has_sample(&text, "switchyard_overhead_seconds_count", &[]), "{text}");
}

#[tokio::test]
async fn readiness_counts_deployments_and_fails_without_any() {
    let answer = send(&gateway(), Request::get("/health/readiness").body(Body::empty()).expect("request")).await;
    assert_eq!(answer.status, StatusCode::OK);
    let v = answer.json();
    assert_eq!(v["status"], "ready");
    assert_eq!(v["deployments"], 4);
    assert_eq!(v["model_groups"], 3);
    assert_eq!(v["state"]["backend"], "memory");
    assert_eq!(v["state"]["degraded"], false);

    let empty = gateway_with("model_list: []", SimProvider::new(1));
    let answer = send(&empty, Request::get("/health/readiness").body(Body::empty()).expect("request")).await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.json()["deployments"], 0);
    let answer = send(&empty, Request::get("/health/liveliness").body(Body::empty()).expect("request")).await;
    assert_eq!(answer.status, StatusCode::OK);
}

// ---------------------------------------------------------------- operations

#[tokio::test]
async fn the_deployment_listing_shows_limits_state_and_load_but_no_secrets() {
    let gw = gateway();
    assert_eq!(send(&gw, chat("gpt-4o")).await.status, StatusCode::OK);
    let answer = send(&gw, get("/router/deployments")).await;
    assert_eq!(answer.status, StatusCode::OK);
    let text = answer.text();
    assert!(!text.contains("sk-upstream") && !text.contains("user:pw") && !text.contains("sk-q"), "{text}");
    let v = answer.json();
    let rows = v["deployments"].as_array().expect("rows");
    assert_eq!(rows.len(), 4);
    let a = &rows[0];
    assert_eq!(a["id"], "a");
    assert_eq!(a["group"], "gpt-4o");
    assert_eq!(a["model"], "openai/gpt-4o");
    assert_eq!(a["api_base"], "https://a.example.com/v1");
    assert_eq!(a["rpm"], 600);
    assert_eq!(rows[1]["weight"], 2.0);
    assert_eq!(rows[1]["tpm"], 100000);
    assert_eq!(a["cooldown"]["status"], "available");
    assert_eq!(a["in_flight"], 0);
    let used: u64 = rows.iter().filter_map(|r| r["rpm_used"].as_u64()).sum();
    assert_eq!(used, 1, "one request in the window: {v}");
}

#[tokio::test]
async fn benching_by_hand_then_readmitting_changes_routing() {
    let gw = gateway();
    let answer =
        send(&gw, post_json("/router/deployments/a/cooldown", &json!({ "seconds": 300, "reason": "maintenance" })))
            .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.json()["cooldown"]["status"], "cooling_down");
    let listing = send(&gw, get("/router/deployments")).await.json();
    let a = &listing["deployments"][0];
    assert_eq!(a["cooldown"]["status"], "cooling_down");
    assert_eq!(a["cooldown"]["reason"], "maintenance");
    assert!(a["cooldown"]["until_seconds"].as_f64().is_some_and(|s| s > 250.0 && s <= 300.0), "{a}");

    for _ in 0..20 {
        assert_eq!(send(&gw, chat("gpt-4o")).await.header("x-switchyard-deployment-id"), "b");
    }

    let del = authed(Request::delete("/router/deployments/a/cooldown")).body(Body::empty()).expect("request");
    let answer = send(&gw, del).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.json()["was_cooling_down"], true);
    let mut served_by_a = false;
    for _ in 0..60 {
        if send(&gw, chat("gpt-4o")).await.header("x-switchyard-deployment-id") == "a" {
            served_by_a = true;
            break;
        }
    }
    assert!(served_by_a, "`a` serves again once re-admitted");

    // An empty body benches for the router's cooldown_time (5 s).
    let empty = authed(Request::post("/router/deployments/b/cooldown")).body(Body::empty()).expect("request");
    let answer = send(&gw, empty).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.json()["cooldown"]["until_seconds"].as_f64().is_some_and(|s| s > 0.0 && s <= 5.0));

    for method in ["POST", "DELETE"] {
        let req = authed(Request::builder().method(method).uri("/router/deployments/nope/cooldown"))
            .body(Body::empty())
            .expect("request");
        let answer = send(&gw, req).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{method}");
        assert_eq!(answer.error_code(), "deployment_not_found");
    }
    let answer = send(&gw, post_json("/router/deployments/a/cooldown", &json!({ "seconds": -1 }))).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn all_deployments_cooling_down_is_429_with_retry_after() {
    const GROUP: &str = r#"
model_list:
  - { model_name: g, litellm_params: { model: openai/g }, model_info: { id: g1 } }
  - { model_name: g, litellm_params: { model: openai/g }, model_info: { id: g2 } }
router_settings: { num_retries: 0 }
general_settings: { master_key: sk-test-master }
"#;
    // Without retries: a retry would wait for the first deployment to return.
    let gw = gateway_with(GROUP, quick_sim(5));
    for id in ["g1", "g2"] {
        let answer =
            send(&gw, post_json(&format!("/router/deployments/{id}/cooldown"), &json!({ "seconds": 30 }))).await;
        assert_eq!(answer.status, StatusCode::OK);
    }
    let answer = send(&gw, chat("g")).await;
    assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS, "{}", answer.text());
    let after: u64 = answer.header("retry-after").parse().expect("seconds");
    assert!((1..=30).contains(&after), "{after}");
    assert_eq!(answer.json()["error"]["type"], "rate_limit_error");
}

// ---------------------------------------------------------------- reload

const BEFORE: &str = r#"
model_list:
  - { model_name: g, litellm_params: { model: openai/old }, model_info: { id: old } }
general_settings: { master_key: sk-test-master }
"#;

const AFTER: &str = r#"
model_list:
  - { model_name: g, litellm_params: { model: openai/new }, model_info: { id: new } }
  - { model_name: h, litellm_params: { model: openai/h }, model_info: { id: h1 } }
router_settings:
  model_group_alias: { gee: g }
general_settings: { master_key: sk-test-master }
"#;

#[tokio::test]
async fn reload_swaps_deployments_while_a_stream_in_flight_completes() {
    let file = ConfigFile::new(BEFORE);
    // `old` streams slowly: 20 chunks 20 ms apart.
    let slow = SimProfile::builder()
        .chunks(20)
        .chunk_interval(Latency::fixed(Duration::from_millis(20)))
        .build()
        .expect("valid profile");
    let sim = SimProvider::new(6).profile("old", slow);
    let gw = Gateway::builder(Config::from_path(file.path()).expect("config"))
        .provider(sim)
        .config_path(file.path())
        .build()
        .expect("gateway");

    let mut body = chat_body("g");
    body["stream"] = json!(true);
    let streaming = tokio::time::timeout(PATIENCE, gw.router().oneshot(post_json("/v1/chat/completions", &body)))
        .await
        .expect("stream started in time")
        .expect("infallible");
    assert_eq!(streaming.status(), StatusCode::OK);
    assert_eq!(streaming.headers()["x-switchyard-deployment-id"], "old");

    file.write(AFTER);
    let answer = send(&gw, post_json("/router/reload", &json!({}))).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let summary = answer.json();
    assert_eq!(summary["added"], json!(["new", "h1"]));
    assert_eq!(summary["removed"], json!(["old"]));
    assert_eq!(summary["aliases_set"], json!(["gee"]));

    // The stream resolved `old` before the reload and finishes with it.
    let rest =
        tokio::time::timeout(PATIENCE, streaming.into_body().collect()).await.expect("in time").expect("no error");
    let text = String::from_utf8_lossy(&rest.to_bytes()).into_owned();
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
    assert!(text.matches("chat.completion.chunk").count() >= 20, "{text}");

    let answer = send(&gw, chat("gee")).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.header("x-switchyard-deployment-id"), "new");
    assert_eq!(send(&gw, chat("h")).await.status, StatusCode::OK);
    assert_eq!(gw.routing().store().local().in_flight(&"old".into()), 0, "the stream released its slot");
}

#[tokio::test]
async fn a_broken_config_is_refused_and_changes_nothing() {
    let file = ConfigFile::new(BEFORE);
    let gw = Gateway::builder(config(BEFORE)).provider(quick_sim(7)).config_path(file.path()).build().expect("gateway");
    file.write("model_list:\n  - { model_name: g, litellm_params: { model: openai/x, rpm: -5 } }\n");
    let answer = send(&gw, post_json("/router/reload", &json!({}))).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.error_code(), "invalid_config");
    assert!(answer.text().contains("rpm"), "{}", answer.text());
    assert_eq!(send(&gw, chat("g")).await.header("x-switchyard-deployment-id"), "old");

    let no_file = gateway();
    let answer = send(&no_file, post_json("/router/reload", &json!({}))).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.error_code(), "no_config_file");
}

// ---------------------------------------------------------------- over sockets

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Serves `gw` on a loopback port; returns its address, the shutdown trigger and the server task.
async fn serve(gw: &Gateway) -> (String, oneshot::Sender<()>, tokio::task::JoinHandle<std::io::Result<()>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("address"));
    let (stop, stopped) = oneshot::channel::<()>();
    let gw = gw.clone();
    let task = tokio::spawn(async move {
        gw.serve(listener, async move {
            let _ = stopped.await;
        })
        .await
    });
    (origin, stop, task)
}

fn http_post(url: String, body: &Value, headers: &[(&str, &str)]) -> Request<Full<Bytes>> {
    let mut req = Request::post(url).header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.body(Full::new(Bytes::from(body.to_string()))).expect("request")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_lets_an_in_flight_request_finish() {
    // Every attempt takes 400 ms, and says when it starts.
    let (started_tx, mut started) = mpsc::unbounded_channel::<()>();
    let slow =
        SimProfile::builder().latency(Latency::fixed(Duration::from_millis(400))).build().expect("valid profile");
    let provider = ServiceBuilder::new()
        .map_request(move |req: Request<Bytes>| {
            let _ = started_tx.send(());
            req
        })
        .service(SimProvider::new(8).default_profile(slow));
    let gw = Gateway::builder(config(CONFIG)).provider(provider).build().expect("gateway");
    let (origin, stop, server) = serve(&gw).await;

    let auth = format!("Bearer {KEY}");
    let in_flight = tokio::spawn(client().request(http_post(
        format!("{origin}/v1/chat/completions"),
        &chat_body("gpt-4o"),
        &[("authorization", &auth)],
    )));
    tokio::time::timeout(PATIENCE, started.recv()).await.expect("the request reached the provider");
    let _ = stop.send(());

    let resp = tokio::time::timeout(PATIENCE, in_flight).await.expect("in time").expect("task").expect("answered");
    assert_eq!(resp.status(), StatusCode::OK);
    let body = resp.into_body().collect().await.expect("whole body").to_bytes();
    assert!(String::from_utf8_lossy(&body).contains("chat.completion"));
    tokio::time::timeout(PATIENCE, server).await.expect("stopped in time").expect("task").expect("clean stop");

    // Nothing listens any more.
    let refused = client()
        .request(http_post(format!("{origin}/v1/chat/completions"), &chat_body("gpt-4o"), &[("authorization", &auth)]))
        .await;
    assert!(refused.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_to_end_through_the_http_provider_and_the_mock_upstream() {
    let upstream = MockUpstream::start(MockProfile::healthy()).expect("mock upstream");
    let yaml = format!(
        r#"
model_list:
  - model_name: gpt-4o
    litellm_params: {{ model: openai/gpt-4o-mini, api_base: "{}", api_key: {UPSTREAM_KEY} }}
    model_info: {{ id: mock }}
general_settings: {{ master_key: {KEY} }}
"#,
        upstream.base_url()
    );
    let provider = HttpProvider::new(ProviderConfig::default().timeout(Duration::from_secs(10))).expect("provider");
    let gw = Gateway::builder(config(&yaml)).provider(provider).build().expect("gateway");
    let (origin, stop, server) = serve(&gw).await;
    let auth = format!("Bearer {KEY}");
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let headers = [("authorization", auth.as_str()), ("x-request-id", "req-e2e-1"), ("traceparent", traceparent)];

    let resp = client()
        .request(http_post(format!("{origin}/v1/chat/completions"), &chat_body("gpt-4o"), &headers))
        .await
        .expect("answered");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["x-request-id"], "req-e2e-1");
    assert_eq!(resp.headers()["x-switchyard-deployment-id"], "mock");
    assert_eq!(resp.headers()["x-litellm-model-group"], "gpt-4o");
    let body: Value =
        serde_json::from_slice(&resp.into_body().collect().await.expect("body").to_bytes()).expect("json");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "gpt-4o-mini");

    let seen = upstream.last_request().expect("the mock saw the request");
    assert_eq!(seen.headers["authorization"], format!("Bearer {UPSTREAM_KEY}").as_str(), "the deployment's key");
    assert!(seen.headers.values().all(|v| v.as_bytes() != KEY.as_bytes()), "the client's key stays here");
    assert_eq!(seen.headers["x-request-id"], "req-e2e-1");
    assert_eq!(seen.headers["traceparent"], traceparent);

    let mut stream_body = chat_body("gpt-4o");
    stream_body["stream"] = json!(true);
    let resp = client()
        .request(http_post(format!("{origin}/chat/completions"), &stream_body, &headers[..1]))
        .await
        .expect("answered");
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers()["content-type"].to_str().expect("ascii").starts_with("text/event-stream"));
    assert!(resp.headers().contains_key("x-request-id"), "generated when absent");
    let text =
        String::from_utf8_lossy(&resp.into_body().collect().await.expect("whole stream").to_bytes()).into_owned();
    assert!(text.matches("chat.completion.chunk").count() >= 8, "{text}");
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");

    let _ = stop.send(());
    tokio::time::timeout(PATIENCE, server).await.expect("stopped in time").expect("task").expect("clean stop");
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cuts_off_what_still_runs_after_the_grace_period() {
    // `gpt-4o` attempts hang and say when they start; `backup` streams for 10 s.
    let (started_tx, mut started) = mpsc::unbounded_channel::<()>();
    let long_stream = SimProfile::builder()
        .chunks(100)
        .chunk_interval(Latency::fixed(Duration::from_millis(100)))
        .build()
        .expect("valid profile");
    let sim = SimProvider::new(9).default_profile(failing(Failure::Hang)).profile("c", long_stream);
    let provider = ServiceBuilder::new()
        .map_request(move |req: Request<Bytes>| {
            let _ = started_tx.send(());
            req
        })
        .service(sim);
    let gw = Gateway::builder(config(CONFIG))
        .provider(provider)
        .shutdown_grace(Duration::from_millis(300))
        .build()
        .expect("gateway");
    let (origin, stop, server) = serve(&gw).await;
    let auth = format!("Bearer {KEY}");
    let mut stream_body = chat_body("backup");
    stream_body["stream"] = json!(true);
    let streaming = client()
        .request(http_post(format!("{origin}/v1/chat/completions"), &stream_body, &[("authorization", &auth)]))
        .await
        .expect("the stream started");
    assert_eq!(streaming.status(), StatusCode::OK);
    let hanging = tokio::spawn(client().request(http_post(
        format!("{origin}/v1/chat/completions"),
        &chat_body("gpt-4o"),
        &[("authorization", &auth)],
    )));
    for _ in 0..2 {
        tokio::time::timeout(PATIENCE, started.recv()).await.expect("both requests reached the provider");
    }
    let _ = stop.send(());
    tokio::time::timeout(PATIENCE, server).await.expect("gave up in time").expect("task").expect("clean stop");
    let answer = tokio::time::timeout(PATIENCE, hanging).await.expect("in time").expect("task").expect("answered");
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE, "cut off at the end of the grace period");
    let rest = tokio::time::timeout(PATIENCE, streaming.into_body().collect()).await.expect("in time");
    assert!(rest.is_err(), "the stream ends with an error, never cleanly");
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_config_file() {
    let file = ConfigFile::new(BEFORE);
    let gw = Gateway::builder(config(BEFORE))
        .provider(SimProvider::new(10))
        .config_path(file.path())
        .build()
        .expect("gateway");
    let (origin, stop, server) = serve(&gw).await;
    // Once it answers, it is serving, so it listens for SIGHUP.
    let live = client().get(format!("{origin}/health/liveliness").parse().expect("uri")).await.expect("answered");
    assert_eq!(live.status(), StatusCode::OK);

    file.write(AFTER);
    let pid = std::process::id().to_string();
    let sent = std::process::Command::new("kill").args(["-HUP", &pid]).status().expect("run kill");
    assert!(sent.success());
    // The reload runs on the signal's task: wait for its effect (there is no other event to await).
    let router = gw.routing().clone();
    let waited = tokio::time::timeout(PATIENCE, async move {
        while router.registry().deployment(&"new".into()).is_none() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "SIGHUP reloaded the file");
    assert!(gw.routing().registry().deployment(&"old".into()).is_none());

    let _ = stop.send(());
    tokio::time::timeout(PATIENCE, server).await.expect("stopped in time").expect("task").expect("clean stop");
}

#[tokio::test]
async fn litellm_metric_names_follow_a_fallback() {
    let sim = quick_sim(14).profile("a", failing(Failure::InternalError)).profile("b", failing(Failure::InternalError));
    let gw = gateway_with(CONFIG, sim);
    let answer = send(&gw, chat("gpt-4o")).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.header("x-switchyard-deployment-id"), "c");

    let text = send(&gw, get("/metrics")).await.text();
    let has = |name: &str, labels: &[&str]| has_sample(&text, name, labels);
    assert!(
        has(
            "litellm_deployment_failure_responses_total",
            &[
                r#"requested_model="gpt-4o""#,
                r#"model_id="a""#,
                r#"litellm_model_name="gpt-4o""#,
                r#"api_provider="openai""#,
                r#"exception_status="500""#,
                r#"exception_class="Openai.InternalServerError""#,
            ]
        ),
        "{text}"
    );
    assert!(has("litellm_deployment_success_responses_total", &[r#"requested_model="gpt-4o""#, r#"model_id="c""#]));
    assert!(has("litellm_deployment_total_requests_total", &[r#"model_id="a""#]));
    assert!(has("litellm_deployment_total_requests_total", &[r#"model_id="c""#]));
    assert!(
        has(
            "litellm_deployment_successful_fallbacks_total",
            &[r#"requested_model="gpt-4o""#, r#"fallback_model="backup""#]
        ),
        "{text}"
    );
    assert!(has("litellm_deployment_state", &[r#"model_id="c""#]), "{text}");
    assert!(has("litellm_llm_api_latency_metric_bucket", &[r#"model_id="c""#, r#"requested_model="gpt-4o""#]));
    assert!(has("litellm_request_total_latency_metric_count", &[r#"model_id="c""#]));
    assert!(has("litellm_overhead_latency_metric_count", &[r#"model_group="backup""#]));
    assert!(has(
        "litellm_proxy_total_requests_metric_total",
        &[r#"route="/v1/chat/completions""#, r#"status_code="200""#]
    ));
    // Limits from the config, the api_base without its query string.
    assert!(
        has("litellm_deployment_rpm_limit", &[r#"model_id="a""#, r#"api_base="https://a.example.com/v1""#]),
        "{text}"
    );
    assert!(has("litellm_deployment_tpm_limit", &[r#"model_id="b""#]), "{text}");
    assert!(!text.contains("sk-q"), "no credential in a label");
}
