//! LiteLLM's per-request overrides, testing hooks and name resolution through the gateway: the
//! real HTTP provider over an in-process OpenAI-speaking upstream that records every body it gets
//! (paused clock), and over loopback HTTP to the mock upstreams. Ported from LiteLLM's
//! `test_router_fallbacks.py` (`mock_testing_fallbacks`, client-side fallbacks), `test_router.py`
//! (`mock_response`, `test_router_specific_model_via_id`), `test_router_pattern_matching.py`
//! (provider-prefixed wildcard lookup) and `test_mock_request.py` (the mocked answers).
#![cfg(feature = "gateway")]

use std::{sync::Arc, time::Duration};

use axum::body::Body;
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use parking_lot::Mutex;
use serde_json::{Value, json};
use switchyard::{
    Config,
    gateway::Gateway,
    services::provider::{HttpProvider, ProviderConfig},
};
use tower::{BoxError, ServiceExt, service_fn};

#[path = "support/loopback.rs"]
mod loopback;

/// Every body the in-process upstream received.
#[derive(Clone, Default)]
struct Upstream {
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Upstream {
    fn bodies(&self) -> Vec<Value> {
        self.bodies.lock().clone()
    }

    /// An OpenAI chat completions upstream: answers `from <model>`, except that a model whose
    /// name holds `fail500` answers 500.
    fn provider(
        &self,
    ) -> HttpProvider<
        impl tower::Service<
            Request<Full<Bytes>>,
            Response = http::Response<Full<Bytes>>,
            Error = BoxError,
            Future: Send + 'static,
        > + Clone
        + Send
        + Sync
        + 'static,
    > {
        let bodies = self.bodies.clone();
        let transport = service_fn(move |req: Request<Full<Bytes>>| {
            let bodies = bodies.clone();
            async move {
                let bytes = req.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
                let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                bodies.lock().push(body.clone());
                let model = body["model"].as_str().unwrap_or_default().to_owned();
                let (status, answer) = if model.contains("fail500") {
                    (StatusCode::INTERNAL_SERVER_ERROR, json!({"error": {"message": "boom", "type": "server_error"}}))
                } else {
                    (
                        StatusCode::OK,
                        json!({
                            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("from {model}")}, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
                        }),
                    )
                };
                let mut resp = http::Response::new(Full::new(Bytes::from(answer.to_string())));
                *resp.status_mut() = status;
                resp.headers_mut()
                    .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
                Ok::<_, BoxError>(resp)
            }
        });
        HttpProvider::with_transport(transport, ProviderConfig::default().timeout(Duration::from_secs(30)))
    }
}

const CONFIG: &str = r#"
model_list:
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o, api_key: k1, api_base: "http://upstream.test/v1" }
    model_info: { id: a }
  - model_name: mini
    litellm_params: { model: openai/gpt-4o-mini, api_key: k2, api_base: "http://upstream.test/v1" }
    model_info: { id: m }
  - model_name: long
    litellm_params: { model: openai/gpt-4.1, api_key: k3, api_base: "http://upstream.test/v1" }
    model_info: { id: l }
  - model_name: broken
    litellm_params: { model: openai/fail500, api_key: k4, api_base: "http://upstream.test/v1" }
    model_info: { id: b }
  - model_name: canned
    litellm_params: { model: openai/gpt-4o, api_key: k5, api_base: "http://upstream.test/v1", mock_response: "from the config" }
    model_info: { id: c }
  - model_name: limited
    litellm_params: { model: openai/gpt-4o, api_key: k6, api_base: "http://upstream.test/v1", mock_response: litellm.RateLimitError }
    model_info: { id: r }
  - model_name: embed
    litellm_params: { model: openai/text-embedding-3-small, api_key: k9, api_base: "http://upstream.test/v1", mock_response: [0.25, 0.5] }
    model_info: { id: v }
  - model_name: embed-limited
    litellm_params: { model: openai/text-embedding-3-large, api_key: k10, api_base: "http://upstream.test/v1", mock_response: litellm.RateLimitError }
    model_info: { id: vr }
  - model_name: instruct
    litellm_params: { model: openai/gpt-3.5-turbo-instruct, api_key: k11, api_base: "http://upstream.test/v1", mock_response: "from the instruct config" }
    model_info: { id: i }
  - model_name: "openai/*"
    litellm_params: { model: "openai/*", api_key: k7, api_base: "http://upstream.test/v1" }
    model_info: { id: w }
  - model_name: eu
    litellm_params: { model: custom_openai/gpt-4o-eu, api_key: k8, api_base: "http://upstream.test/v1" }
    model_info: { id: e }
router_settings:
  num_retries: 0
  fallbacks: [{ gpt-4o: [mini] }, { limited: [mini] }, { broken: [mini] }, { embed-limited: [embed] }]
  context_window_fallbacks: [{ gpt-4o: [long] }]
"#;

fn gateway(upstream: &Upstream) -> Gateway {
    Gateway::builder(Config::from_yaml_str(CONFIG).expect("valid config"))
        .provider(upstream.provider())
        .seed(1)
        .build()
        .expect("gateway")
}

async fn post(gw: &Gateway, path: &str, body: Value) -> (StatusCode, String, Bytes) {
    let req = Request::post(path)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .expect("request");
    let resp = gw.router().oneshot(req).await.expect("infallible");
    let status = resp.status();
    let kind = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (status, kind, body)
}

fn json_of(body: &Bytes) -> Value {
    serde_json::from_slice(body).unwrap_or_else(|e| panic!("JSON ({e}): {body:?}"))
}

fn chat(model: &str, extra: Value) -> Value {
    let mut body = json!({"model": model, "messages": [{"role": "user", "content": "hi"}]});
    if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
        b.extend(e);
    }
    body
}

/// The content of a chat completion.
fn content(body: &Bytes) -> String {
    json_of(body)["choices"][0]["message"]["content"].as_str().unwrap_or_default().to_owned()
}

// ===== mock_response =====

#[tokio::test(start_paused = true)]
async fn mock_response_in_the_request_answers_without_calling_the_upstream() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    let (status, _, body) = post(&gw, "/v1/chat/completions", chat("gpt-4o", json!({"mock_response": "hello"}))).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    let v = json_of(&body);
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"], json!({"role": "assistant", "content": "hello"}));
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(v["usage"]["prompt_tokens"], 10);
    assert_eq!(v["usage"]["completion_tokens"], 20);
    assert!(upstream.bodies().is_empty(), "the upstream was called: {:?}", upstream.bodies());
}

#[tokio::test(start_paused = true)]
async fn a_streamed_mock_response_is_server_sent_events_three_characters_at_a_time() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    let body = chat("gpt-4o", json!({"mock_response": "hello world", "stream": true}));
    let (status, kind, body) = post(&gw, "/v1/chat/completions", body).await;
    assert_eq!(status, StatusCode::OK);
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    let text = std::str::from_utf8(&body).expect("utf-8");
    let events: Vec<&str> = text.split("\n\n").filter_map(|e| e.strip_prefix("data: ")).collect();
    assert_eq!(events.last(), Some(&"[DONE]"));
    let deltas: Vec<String> = events
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e).ok())
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(deltas, ["hel", "lo ", "wor", "ld"]);
    assert!(text.contains(r#""finish_reason":"stop""#), "{text}");
    assert!(upstream.bodies().is_empty());
}

#[tokio::test(start_paused = true)]
async fn mock_response_in_litellm_params_answers_for_that_deployment() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    let (status, _, body) = post(&gw, "/v1/chat/completions", chat("canned", json!({}))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content(&body), "from the config");
    // The request's own mock wins over the deployment's (LiteLLM merges request kwargs last).
    let (_, _, body) = post(&gw, "/v1/chat/completions", chat("canned", json!({"mock_response": "mine"}))).await;
    assert_eq!(content(&body), "mine");
    assert!(upstream.bodies().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_mock_response_on_the_anthropic_front_door_is_an_anthropic_message() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    let body = json!({"model": "gpt-4o", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}], "mock_response": "bonjour"});
    let (status, _, body) = post(&gw, "/v1/messages", body).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    let v = json_of(&body);
    assert_eq!(v["type"], "message");
    assert_eq!(v["content"][0]["text"], "bonjour");
    assert!(upstream.bodies().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_mock_error_string_is_classified_and_the_fallback_answers() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    // `limited` mocks `litellm.RateLimitError`: a 429 of that deployment, then `mini`.
    let (status, _, body) = post(&gw, "/v1/chat/completions", chat("limited", json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    assert_eq!(content(&body), "from gpt-4o-mini");
    // The request's `litellm.ContextWindowExceededError` reaches the context-window table.
    let body = chat("gpt-4o", json!({"mock_response": "litellm.ContextWindowExceededError"}));
    let (status, _, body) = post(&gw, "/v1/chat/completions", body).await;
    // The request's mock also answers the fallback's attempt: LiteLLM keeps it for every hop.
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body:?}");
    assert!(String::from_utf8_lossy(&body).contains("mock context window"), "{body:?}");
}

#[tokio::test(start_paused = true)]
async fn an_embeddings_mock_response_is_an_openai_embeddings_list() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    // LiteLLM's `mock_embedding`: the array is the vector; usage is 10 prompt tokens.
    let body = json!({"model": "gpt-4o", "input": ["a", "b"], "mock_response": [0.1, 0.2, 0.3]});
    let (status, _, body) = post(&gw, "/v1/embeddings", body).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    let v = json_of(&body);
    assert_eq!(v["object"], "list");
    assert_eq!(v["model"], "gpt-4o");
    assert_eq!(v["data"][0], json!({"object": "embedding", "index": 0, "embedding": [0.1, 0.2, 0.3]}));
    assert_eq!(v["data"][1]["index"], 1);
    assert_eq!(v["usage"], json!({"prompt_tokens": 10, "total_tokens": 10}));
    // `"error"` is `mock_embedding`'s failure: an upstream 500 on every hop (the request's mock
    // answers the fallback too), so the gateway's 502.
    let body = json!({"model": "gpt-4o", "input": "a", "mock_response": "error"});
    let (status, _, _) = post(&gw, "/v1/embeddings", body).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert!(upstream.bodies().is_empty(), "the upstream was called: {:?}", upstream.bodies());
}

#[tokio::test(start_paused = true)]
async fn an_embeddings_mock_in_litellm_params_is_classified_and_falls_back() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    let (status, _, body) = post(&gw, "/v1/embeddings", json!({"model": "embed", "input": "a"})).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    let v = json_of(&body);
    assert_eq!(
        (v["model"].as_str(), &v["data"][0]["embedding"]),
        (Some("text-embedding-3-small"), &json!([0.25, 0.5]))
    );
    // `embed-limited` mocks a 429: the fallback `embed` answers.
    let (status, _, body) = post(&gw, "/v1/embeddings", json!({"model": "embed-limited", "input": "a"})).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    assert_eq!(json_of(&body)["data"][0]["embedding"], json!([0.25, 0.5]));
    // A vector answers embeddings only.
    let (status, _, body) = post(&gw, "/v1/chat/completions", chat("embed", json!({}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body:?}");
    assert!(upstream.bodies().is_empty());
}

#[tokio::test(start_paused = true)]
async fn mock_timeout_on_embeddings_times_the_first_group_out_and_the_fallback_answers() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    let body = json!({"model": "gpt-4o", "input": "a", "mock_timeout": true});
    let (status, _, body) = post(&gw, "/v1/embeddings", body).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    let models: Vec<Value> = upstream.bodies().iter().map(|b| b["model"].clone()).collect();
    assert_eq!(models, [json!("gpt-4o-mini")]);
}

#[tokio::test(start_paused = true)]
async fn a_completions_mock_response_is_a_text_completion_whole_or_streamed() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    let (status, _, body) = post(&gw, "/v1/completions", json!({"model": "instruct", "prompt": "hi"})).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    let v = json_of(&body);
    assert_eq!(v["object"], "text_completion");
    assert_eq!(
        v["choices"][0],
        json!({"text": "from the instruct config", "index": 0, "logprobs": null, "finish_reason": "stop"})
    );
    assert_eq!(v["usage"], json!({"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}));
    let body = json!({"model": "gpt-4o", "prompt": "hi", "mock_response": "hello", "stream": true});
    let (status, kind, body) = post(&gw, "/v1/completions", body).await;
    assert_eq!(status, StatusCode::OK);
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    let text = std::str::from_utf8(&body).expect("utf-8");
    let events: Vec<&str> = text.split("\n\n").filter_map(|e| e.strip_prefix("data: ")).collect();
    assert_eq!(events.last(), Some(&"[DONE]"));
    let pieces: Vec<String> = events
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e).ok())
        .filter_map(|c| c["choices"][0]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(pieces, ["hel", "lo", ""]);
    // LiteLLM's error strings fail the attempt as on chat: an upstream 500 on every hop.
    let body = json!({"model": "gpt-4o", "prompt": "hi", "mock_response": "litellm.InternalServerError"});
    let (status, _, _) = post(&gw, "/v1/completions", body).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert!(upstream.bodies().is_empty());
}

// ===== mock_testing_* =====

#[tokio::test(start_paused = true)]
async fn mock_testing_fallbacks_reaches_the_fallback_and_is_never_sent_upstream() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    for (key, expected) in
        [("mock_testing_fallbacks", "from gpt-4o-mini"), ("mock_testing_context_fallbacks", "from gpt-4.1")]
    {
        let (status, _, body) = post(&gw, "/v1/chat/completions", chat("gpt-4o", json!({ key: true }))).await;
        assert_eq!(status, StatusCode::OK, "{key}: {body:?}");
        assert_eq!(content(&body), expected, "{key}");
    }
    // LiteLLM's `str_to_bool` strings work too.
    let (_, _, body) =
        post(&gw, "/v1/chat/completions", chat("gpt-4o", json!({"mock_testing_fallbacks": "True"}))).await;
    assert_eq!(content(&body), "from gpt-4o-mini");
    let bodies = upstream.bodies();
    assert_eq!(bodies.len(), 3, "only the fallbacks were called");
    for b in bodies {
        assert!(b.as_object().is_some_and(|o| !o.keys().any(|k| k.starts_with("mock_"))), "{b}");
    }
}

#[tokio::test(start_paused = true)]
async fn mock_testing_rate_limit_error_is_retried_on_a_real_attempt() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    // The mocked 429 is the first attempt; the request's one retry is a real attempt.
    let body = chat("gpt-4o", json!({"mock_testing_rate_limit_error": true, "num_retries": 1}));
    let (status, _, body) = post(&gw, "/v1/chat/completions", body).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    assert_eq!(content(&body), "from gpt-4o");
    let bodies = upstream.bodies();
    assert_eq!(bodies.len(), 1);
    assert!(bodies[0].get("mock_testing_rate_limit_error").is_none() && bodies[0].get("num_retries").is_none());
}

#[tokio::test(start_paused = true)]
async fn mock_timeout_times_the_first_group_out_at_its_timeout_and_the_fallback_answers() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    let start = tokio::time::Instant::now();
    let body = chat("gpt-4o", json!({"mock_timeout": true, "timeout": 7}));
    let (status, _, body) = post(&gw, "/v1/chat/completions", body).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    assert_eq!(content(&body), "from gpt-4o-mini");
    assert_eq!(start.elapsed(), Duration::from_secs(7), "the attempt waited its (request's) timeout");
    // Without a fallback the client sees the timeout.
    let start = tokio::time::Instant::now();
    let (status, _, _) = post(&gw, "/v1/chat/completions", chat("mini", json!({"mock_timeout": true}))).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(start.elapsed(), Duration::from_secs(30), "the provider's timeout");
}

// ===== per-request overrides =====

#[tokio::test(start_paused = true)]
async fn per_request_overrides_are_read_and_never_sent_upstream() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    let overrides = json!({
        "num_retries": 2, "timeout": 20, "request_timeout": 25, "stream_timeout": 10, "cooldown_time": 0,
        "model_group_retry_policy": {"gpt-4o": {"RateLimitErrorRetries": 0}},
        "specific_deployment": false, "mock_timeout": false, "mock_testing_fallbacks": false,
        "mock_testing_rate_limit_error": false, "disable_fallbacks": false, "temperature": 0.5,
        "metadata": {"num_retries": 1, "cooldown_time": 1}
    });
    let (status, _, body) = post(&gw, "/v1/chat/completions", chat("gpt-4o", overrides)).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    let bodies = upstream.bodies();
    let sent = bodies[0].as_object().expect("a JSON object");
    let mut keys: Vec<&str> = sent.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["messages", "model", "temperature"], "{sent:?}");
}

#[tokio::test(start_paused = true)]
async fn a_malformed_override_is_refused_naming_the_field() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    for (extra, field) in [
        (json!({"cooldown_time": -1}), "`cooldown_time`"),
        (json!({"metadata": {"num_retries": "two"}}), "`metadata.num_retries`"),
        (json!({"model_group_retry_policy": {"gpt-4o": {"Typo": 1}}}), "`model_group_retry_policy.gpt-4o`"),
        (
            json!({"model_group_retry_policy": {"gpt-4o": {"RateLimitErrorRetries": -1}}}),
            "`gpt-4o.RateLimitErrorRetries`",
        ),
        (json!({"model_group_retry_policy": [1]}), "`model_group_retry_policy`"),
        (json!({"mock_response": 5}), "`mock_response`"),
        (json!({"mock_timeout": "yes"}), "`mock_timeout`"),
        (json!({"fallbacks": [{"model": "mini", "temperature": 0}]}), "`fallbacks[0].temperature`"),
    ] {
        let (status, _, body) = post(&gw, "/v1/chat/completions", chat("gpt-4o", extra.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{extra}");
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains(field), "{extra}: {text}");
    }
    assert!(upstream.bodies().is_empty());
}

#[tokio::test(start_paused = true)]
async fn per_request_fallbacks_may_be_given_as_dicts() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    for fallbacks in [json!([{"model": "long"}]), json!([{"broken": ["long"]}]), json!(["long"])] {
        let body = chat("broken", json!({ "fallbacks": fallbacks }));
        let (status, _, body) = post(&gw, "/v1/chat/completions", body).await;
        assert_eq!(status, StatusCode::OK, "{body:?}");
        assert_eq!(content(&body), "from gpt-4.1", "the request's list replaces the configured one");
    }
}

// ===== name resolution =====

#[tokio::test(start_paused = true)]
async fn a_bare_model_name_reaches_the_provider_wildcard_group() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    // `o3-mini` is no group; the catalog says OpenAI, and `openai/*` serves `openai/o3-mini`.
    let (status, _, body) = post(&gw, "/v1/chat/completions", chat("o3-mini", json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    assert_eq!(upstream.bodies()[0]["model"], "o3-mini");
}

#[tokio::test(start_paused = true)]
async fn a_deployments_provider_model_reaches_it_and_specific_deployment_requires_it() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream);
    let (status, _, body) = post(&gw, "/v1/chat/completions", chat("custom_openai/gpt-4o-eu", json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    assert_eq!(content(&body), "from gpt-4o-eu");
    let body = chat("custom_openai/gpt-4o-eu", json!({"specific_deployment": true}));
    let (status, _, _) = post(&gw, "/v1/chat/completions", body).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, body) = post(&gw, "/v1/chat/completions", chat("eu", json!({"specific_deployment": true}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a group name is not a provider model");
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("gpt-4o") && text.contains("mini"), "the error lists the known groups: {text}");
}

// ===== over loopback HTTP =====

#[tokio::test]
async fn over_loopback_the_testing_hooks_never_reach_the_upstream() {
    let fallback = loopback::healthy();
    let yaml = format!(
        "model_list:\n  - model_name: gpt-4o\n    litellm_params: {{ model: openai/gpt-4o, api_key: k, api_base: \"{base}\" }}\n  \
         - model_name: mini\n    litellm_params: {{ model: openai/gpt-4o-mini, api_key: k, api_base: \"{base}\" }}\n\
         router_settings:\n  num_retries: 0\n  fallbacks: [{{ gpt-4o: [mini] }}]\n",
        base = fallback.base_url()
    );
    let gw = loopback::gateway(&yaml).await;
    let url = format!("{}/v1/chat/completions", gw.origin);
    let body = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}],
        "mock_testing_fallbacks": true, "cooldown_time": 0, "model_group_retry_policy": {"mini": {"DefaultRetries": 1}}});
    let answer = loopback::post(url.clone(), &body.to_string(), &[]).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    assert_eq!(fallback.requests(), 1, "only the fallback reached the upstream");
    let sent = fallback.last_request().and_then(|r| r.json()).expect("a JSON body");
    assert_eq!(sent["model"], "gpt-4o-mini");
    for key in ["mock_testing_fallbacks", "cooldown_time", "model_group_retry_policy"] {
        assert!(sent.get(key).is_none(), "{key} was sent upstream: {sent}");
    }
    // A streamed mock answer over a real connection.
    let body = json!({"model": "gpt-4o", "stream": true, "messages": [{"role": "user", "content": "hi"}], "mock_response": "streamed"});
    let answer = loopback::post(url, &body.to_string(), &[]).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.streamed_text(), "streamed");
    assert_eq!(fallback.requests(), 1, "the mock answered without the upstream");
}
