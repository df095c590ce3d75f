//! Response caching through the gateway (`litellm_settings.cache`): the real HTTP provider over
//! an in-process OpenAI upstream that numbers its answers and records every body it gets (paused
//! clock, so TTLs are exact), loopback gateways to the mock upstream for the wire-level checks,
//! and throwaway Redis servers for the shared backend. The rules are LiteLLM's `Cache`
//! (`caching/caching.py`: the key, `caching_groups`, the namespace, `ttl`, `s-maxage`, `no-cache`,
//! `no-store`, `use-cache` under `default_off`); LiteLLM has no tests of its own to port.
#![cfg(feature = "gateway")]

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
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

/// An OpenAI upstream that numbers its answers (`answer #n`), so a cached answer is told apart
/// from a fresh one, and keeps every body it got.
#[derive(Clone, Default)]
struct Upstream {
    calls: Arc<AtomicUsize>,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Upstream {
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

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
        let (calls, bodies) = (self.calls.clone(), self.bodies.clone());
        let transport = service_fn(move |req: Request<Full<Bytes>>| {
            let (calls, bodies) = (calls.clone(), bodies.clone());
            async move {
                let path = req.uri().path().to_owned();
                let bytes = req.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
                let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                bodies.lock().push(body.clone());
                let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
                let model = body["model"].as_str().unwrap_or_default().to_owned();
                if model.contains("slow") {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                }
                let (status, kind, answer) = if model.contains("fail500") {
                    (
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "application/json",
                        json!({"error": {"message": "boom"}}).to_string(),
                    )
                } else if path.ends_with("/v1/completions") {
                    let answer = json!({
                        "id": format!("cmpl-{n}"), "object": "text_completion", "created": 1, "model": model,
                        "choices": [{"index": 0, "text": format!("answer #{n}"), "logprobs": null, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}
                    });
                    (StatusCode::OK, "application/json", answer.to_string())
                } else if path.ends_with("/embeddings") {
                    let answer = json!({
                        "object": "list", "model": model,
                        "data": [{"object": "embedding", "index": 0, "embedding": [n as f64, 0.5]}],
                        "usage": {"prompt_tokens": 2, "total_tokens": 2}
                    });
                    (StatusCode::OK, "application/json", answer.to_string())
                } else if body["stream"] == true {
                    let chunk = |delta: Value, finish: Value| {
                        json!({"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": model,
                               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
                    };
                    let sse = format!(
                        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
                        chunk(json!({"role": "assistant", "content": format!("answer #{n}")}), Value::Null),
                        chunk(json!({}), json!("stop"))
                    );
                    (StatusCode::OK, "text/event-stream", sse)
                } else {
                    let finish = if model.contains("filtered") { "content_filter" } else { "stop" };
                    let answer = json!({
                        "id": format!("chatcmpl-{n}"), "object": "chat.completion", "created": 1, "model": model,
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("answer #{n}")}, "finish_reason": finish}],
                        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
                    });
                    (StatusCode::OK, "application/json", answer.to_string())
                };
                let mut resp = http::Response::new(Full::new(Bytes::from(answer)));
                *resp.status_mut() = status;
                resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(kind));
                Ok::<_, BoxError>(resp)
            }
        });
        HttpProvider::with_transport(transport, ProviderConfig::default().timeout(Duration::from_secs(30)))
    }
}

const MODELS: &str = r#"
model_list:
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o, api_key: k1, api_base: "http://upstream.test/v1" }
    model_info: { id: a }
  - model_name: azure-gpt-4o
    litellm_params: { model: openai/gpt-4o-azure, api_key: k2, api_base: "http://upstream.test/v1" }
    model_info: { id: z }
  - model_name: mini
    litellm_params: { model: openai/gpt-4o-mini, api_key: k3, api_base: "http://upstream.test/v1" }
    model_info: { id: m }
  - model_name: broken
    litellm_params: { model: openai/fail500, api_key: k4, api_base: "http://upstream.test/v1" }
    model_info: { id: b }
  - model_name: filtered
    litellm_params: { model: openai/filtered, api_key: k5, api_base: "http://upstream.test/v1" }
    model_info: { id: f }
  - model_name: canned
    litellm_params: { model: openai/gpt-4o, api_key: k6, api_base: "http://upstream.test/v1", mock_response: "canned" }
    model_info: { id: c }
  - model_name: slow
    litellm_params: { model: openai/slow, api_key: k8, api_base: "http://upstream.test/v1" }
    model_info: { id: s }
  - model_name: embed
    litellm_params: { model: openai/text-embedding-3-small, api_key: k7, api_base: "http://upstream.test/v1" }
    model_info: { id: e }
"#;

fn config(settings: &str) -> Config {
    Config::from_yaml_str(&format!("{MODELS}{settings}")).expect("valid config")
}

const LOCAL: &str = r#"
router_settings:
  num_retries: 0
  model_group_alias: { fast: gpt-4o }
litellm_settings:
  cache: true
  cache_params: { type: local, ttl: 60 }
"#;

fn gateway(upstream: &Upstream, settings: &str) -> Gateway {
    Gateway::builder(config(settings)).provider(upstream.provider()).seed(1).build().expect("gateway")
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default()
    }

    fn content(&self) -> String {
        let v: Value = serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("JSON ({e}): {:?}", self.body));
        v["choices"][0]["message"]["content"].as_str().unwrap_or_default().to_owned()
    }
}

async fn post_with(gw: &Gateway, path: &str, body: &Value, headers: &[(&str, &str)]) -> Answer {
    let mut req = Request::post(path).header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = gw.router().oneshot(req.body(Body::from(body.to_string())).expect("request")).await.expect("infallible");
    let (parts, body) = resp.into_parts();
    Answer { status: parts.status, headers: parts.headers, body: body.collect().await.expect("body").to_bytes() }
}

async fn post(gw: &Gateway, body: &Value) -> Answer {
    post_with(gw, "/v1/chat/completions", body, &[]).await
}

fn chat(model: &str, extra: Value) -> Value {
    let mut body = json!({"model": model, "messages": [{"role": "user", "content": "hi"}]});
    if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
        b.extend(e);
    }
    body
}

// ===== hits skip routing =====

#[tokio::test(start_paused = true)]
async fn a_repeated_request_is_answered_from_the_cache_without_calling_the_upstream() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    let first = post(&gw, &chat("gpt-4o", json!({}))).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.header("x-switchyard-cache"), "miss");
    assert_eq!(first.content(), "answer #1");
    let key = first.header("x-litellm-cache-key").to_owned();
    assert_eq!(key.len(), 64, "a stored answer names its key: {key:?}");

    let second =
        post_with(&gw, "/v1/chat/completions", &chat("gpt-4o", json!({})), &[("x-switchyard-trail", "1")]).await;
    assert_eq!(second.status, StatusCode::OK);
    assert_eq!(second.content(), "answer #1");
    assert_eq!(second.header("x-switchyard-cache"), "hit");
    assert_eq!(second.header("x-litellm-cache-key"), key);
    assert_eq!(second.header("x-switchyard-trail"), "cache_hit");
    assert!(second.headers.get("x-litellm-model-id").is_none(), "no deployment served a hit");
    assert_eq!(second.header("x-litellm-model-group"), "gpt-4o");
    assert_eq!(upstream.calls(), 1);
}

/// A wildcard group answers many models under its own name: each model asked for has its own
/// entries (an answer of `openai/gpt-x` never answers `openai/gpt-y`).
#[tokio::test(start_paused = true)]
async fn each_model_a_wildcard_group_serves_has_its_own_entries() {
    let upstream = Upstream::default();
    let yaml = format!(
        "model_list:\n  - model_name: \"openai/*\"\n    litellm_params: {{ model: \"openai/*\", api_key: k, api_base: \"http://upstream.test/v1\" }}\n{}",
        LOCAL.replace("  model_group_alias: { fast: gpt-4o }\n", "")
    );
    let gw = Gateway::builder(Config::from_yaml_str(&yaml).expect("valid config"))
        .provider(upstream.provider())
        .seed(1)
        .build()
        .expect("gateway");
    assert_eq!(post(&gw, &chat("openai/gpt-x", json!({}))).await.content(), "answer #1");
    let other = post(&gw, &chat("openai/gpt-y", json!({}))).await;
    assert_eq!((other.header("x-switchyard-cache"), other.content().as_str()), ("miss", "answer #2"));
    assert_eq!(post(&gw, &chat("openai/gpt-x", json!({}))).await.header("x-switchyard-cache"), "hit");
    assert_eq!(upstream.calls(), 2);
}

/// An answer a fallback group gave is not the requested group's: it is not stored under the
/// requested group's key (LiteLLM keys the answer by the group that served it).
#[tokio::test(start_paused = true)]
async fn an_answer_from_a_fallback_group_is_not_stored_for_the_group_asked_for() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, &LOCAL.replace("num_retries: 0", "num_retries: 0\n  fallbacks: [{ broken: [mini] }]"));
    for n in 1..=2 {
        let answer = post(&gw, &chat("broken", json!({}))).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.header("x-switchyard-cache"), "miss", "call {n}");
    }
    // Each call tried `broken` (500) then `mini`.
    assert_eq!(upstream.calls(), 4);
}

/// A pre-router's virtual name is routed every time (its answer depends on the per-request
/// decision), never answered from the cache.
#[tokio::test(start_paused = true)]
async fn a_pre_routed_name_is_never_cached() {
    let upstream = Upstream::default();
    let entry = "  - model_name: smart\n    litellm_params:\n      model: auto_router/complexity_router\n      complexity_router_config: { tiers: { SIMPLE: gpt-4o, MEDIUM: gpt-4o, COMPLEX: mini, REASONING: mini } }\n";
    let gw = Gateway::builder(Config::from_yaml_str(&format!("{MODELS}{entry}{LOCAL}")).expect("valid config"))
        .provider(upstream.provider())
        .seed(1)
        .build()
        .expect("gateway");
    for n in 1..=2 {
        let answer = post(&gw, &chat("smart", json!({}))).await;
        assert_eq!(answer.content(), format!("answer #{n}"));
        assert!(answer.headers.get("x-switchyard-cache").is_none());
    }
    assert_eq!(upstream.calls(), 2);
}

/// A name that resolves to no group is routed (to its 404), never answered from the cache; a
/// reload that points a group at other models starts its entries afresh.
#[tokio::test(start_paused = true)]
async fn unknown_names_are_routed_and_a_repointed_group_starts_afresh() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    for _ in 0..2 {
        let answer = post(&gw, &chat("nowhere", json!({}))).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND);
        assert!(answer.headers.get("x-switchyard-cache").is_none());
    }
    let first = post(&gw, &chat("gpt-4o", json!({}))).await;
    assert_eq!(first.content(), "answer #1");
    let models = MODELS.replace("openai/gpt-4o, api_key: k1", "openai/gpt-4o-2, api_key: k1");
    gw.reload(Config::from_yaml_str(&format!("{models}{LOCAL}")).expect("valid config")).await.expect("reload");
    let after = post(&gw, &chat("gpt-4o", json!({}))).await;
    assert_eq!((after.header("x-switchyard-cache"), after.content().as_str()), ("miss", "answer #2"));
}

#[tokio::test(start_paused = true)]
async fn parameters_that_change_the_answer_are_separate_entries_but_order_and_metadata_are_not() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    post(&gw, &chat("gpt-4o", json!({"temperature": 0.5}))).await;
    assert_eq!(post(&gw, &chat("gpt-4o", json!({"temperature": 0.9}))).await.content(), "answer #2");
    // Same request, members reordered, with metadata and routing keys: the first answer.
    let reordered = json!({"metadata": {"tags": ["x"]}, "num_retries": 1, "temperature": 0.5,
                           "messages": [{"content": "hi", "role": "user"}], "model": "gpt-4o"});
    assert_eq!(post(&gw, &reordered).await.content(), "answer #1");
    assert_eq!(upstream.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn an_alias_shares_its_groups_entries_and_other_groups_do_not() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    post(&gw, &chat("gpt-4o", json!({}))).await;
    assert_eq!(post(&gw, &chat("fast", json!({}))).await.content(), "answer #1");
    assert_eq!(post(&gw, &chat("mini", json!({}))).await.content(), "answer #2");
    assert_eq!(upstream.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn caching_groups_share_answers_across_model_groups() {
    let upstream = Upstream::default();
    let settings = LOCAL.replace(
        "  model_group_alias: { fast: gpt-4o }\n",
        "  model_group_alias: { fast: gpt-4o }\n  caching_groups: [[gpt-4o, azure-gpt-4o]]\n",
    );
    let gw = gateway(&upstream, &settings);
    post(&gw, &chat("azure-gpt-4o", json!({}))).await;
    assert_eq!(post(&gw, &chat("gpt-4o", json!({}))).await.content(), "answer #1");
    assert_eq!(post(&gw, &chat("mini", json!({}))).await.content(), "answer #2");
    assert_eq!(upstream.calls(), 2);
}

// ===== TTL and the request's controls =====

#[tokio::test(start_paused = true)]
async fn an_answer_expires_after_the_ttl() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    post(&gw, &chat("gpt-4o", json!({}))).await;
    tokio::time::advance(Duration::from_secs(59)).await;
    assert_eq!(post(&gw, &chat("gpt-4o", json!({}))).await.content(), "answer #1");
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(post(&gw, &chat("gpt-4o", json!({}))).await.content(), "answer #2");
}

#[tokio::test(start_paused = true)]
async fn a_requests_ttl_replaces_the_configured_one() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    post(&gw, &chat("gpt-4o", json!({"cache": {"ttl": 5}}))).await;
    tokio::time::advance(Duration::from_secs(4)).await;
    assert_eq!(post(&gw, &chat("gpt-4o", json!({}))).await.content(), "answer #1");
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(post(&gw, &chat("gpt-4o", json!({}))).await.content(), "answer #2");
}

#[tokio::test(start_paused = true)]
async fn s_maxage_only_accepts_answers_young_enough() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    post(&gw, &chat("gpt-4o", json!({}))).await;
    tokio::time::advance(Duration::from_secs(10)).await;
    let fresh = post(&gw, &chat("gpt-4o", json!({"cache": {"s-maxage": 5}}))).await;
    assert_eq!(fresh.content(), "answer #2", "older than 5 s: routed");
    assert_eq!(post(&gw, &chat("gpt-4o", json!({"cache": {"s-max-age": 30}}))).await.content(), "answer #2");
}

#[tokio::test(start_paused = true)]
async fn no_cache_routes_and_stores_no_store_answers_and_does_not() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    post(&gw, &chat("gpt-4o", json!({}))).await;
    // no-cache: routed although an answer is cached; its answer replaces the entry.
    assert_eq!(post(&gw, &chat("gpt-4o", json!({"cache": {"no-cache": true}}))).await.content(), "answer #2");
    assert_eq!(post(&gw, &chat("gpt-4o", json!({}))).await.content(), "answer #2");
    // no-store: served from the cache when it can be, never stored.
    let other = chat("gpt-4o", json!({"temperature": 1, "cache": {"no-store": true}}));
    assert_eq!(post(&gw, &other).await.content(), "answer #3");
    assert_eq!(post(&gw, &chat("gpt-4o", json!({"temperature": 1}))).await.content(), "answer #4");
    assert_eq!(upstream.calls(), 4);
}

#[tokio::test(start_paused = true)]
async fn the_cache_controls_are_never_sent_upstream() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    post(&gw, &chat("gpt-4o", json!({"cache": {"no-cache": true, "ttl": 9}}))).await;
    let sent = upstream.bodies.lock().clone();
    assert_eq!(sent.len(), 1);
    assert!(sent[0].get("cache").is_none(), "{}", sent[0]);
}

#[tokio::test(start_paused = true)]
async fn a_namespace_separates_entries() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    let a = post(&gw, &chat("gpt-4o", json!({"cache": {"namespace": "team-a"}}))).await;
    assert!(a.header("x-litellm-cache-key").starts_with("team-a:"), "{}", a.header("x-litellm-cache-key"));
    let b = post(&gw, &chat("gpt-4o", json!({"metadata": {"redis_namespace": "team-b"}}))).await;
    assert_eq!(b.content(), "answer #2");
    assert_eq!(post(&gw, &chat("gpt-4o", json!({"cache": {"namespace": "team-a"}}))).await.content(), "answer #1");
}

#[tokio::test(start_paused = true)]
async fn default_off_caches_only_requests_that_opt_in() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, &LOCAL.replace("ttl: 60 }", "ttl: 60, mode: default_off }"));
    post(&gw, &chat("gpt-4o", json!({}))).await;
    let plain = post(&gw, &chat("gpt-4o", json!({}))).await;
    assert_eq!(plain.content(), "answer #2");
    assert!(plain.headers.get("x-switchyard-cache").is_none());
    post(&gw, &chat("gpt-4o", json!({"cache": {"use-cache": true}}))).await;
    assert_eq!(post(&gw, &chat("gpt-4o", json!({"cache": {"use-cache": true}}))).await.content(), "answer #3");
    assert_eq!(upstream.calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_control_of_the_wrong_type_is_a_400_naming_it() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    let answer = post(&gw, &chat("gpt-4o", json!({"cache": {"ttl": "long"}}))).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8_lossy(&answer.body).contains("cache.ttl"));
    assert_eq!(upstream.calls(), 0);
}

// ===== what is never cached =====

#[tokio::test(start_paused = true)]
async fn errors_content_filtered_and_mocked_answers_are_never_stored() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    for _ in 0..2 {
        assert_eq!(post(&gw, &chat("broken", json!({}))).await.status, StatusCode::BAD_GATEWAY);
        post(&gw, &chat("filtered", json!({}))).await;
    }
    assert_eq!(upstream.calls(), 4);
    // A request's mock skips the cache; a deployment's mock is not stored.
    let mocked = post(&gw, &chat("gpt-4o", json!({"mock_response": "mocked"}))).await;
    assert_eq!(mocked.content(), "mocked");
    assert!(mocked.headers.get("x-switchyard-cache").is_none());
    assert_eq!(post(&gw, &chat("gpt-4o", json!({}))).await.content(), "answer #5");
    post(&gw, &chat("canned", json!({}))).await;
    let again = post(&gw, &chat("canned", json!({}))).await;
    assert_eq!(again.header("x-switchyard-cache"), "miss");
}

#[tokio::test(start_paused = true)]
async fn a_request_the_client_abandons_stores_nothing() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    let abandoned = tokio::time::timeout(Duration::from_secs(1), post(&gw, &chat("slow", json!({})))).await;
    assert!(abandoned.is_err(), "the client gave up before the answer");
    let answer = post(&gw, &chat("slow", json!({}))).await;
    assert_eq!(answer.header("x-switchyard-cache"), "miss");
    assert_eq!(answer.content(), "answer #2");
    assert_eq!(post(&gw, &chat("slow", json!({}))).await.content(), "answer #2");
}

// ===== streams and embeddings =====

/// What the OpenAI SDKs do with a chat stream: each `data:` field of an event is one JSON chunk
/// until `[DONE]`; deltas add up to the message.
fn sdk_read_stream(body: &[u8]) -> (String, Vec<String>, Option<Value>) {
    let text = std::str::from_utf8(body).expect("utf-8");
    assert!(text.ends_with("data: [DONE]\n\n"), "a stream ends with [DONE]: {text}");
    let mut content = String::new();
    let mut finishes = Vec::new();
    let mut usage = None;
    for event in text.split("\n\n").filter(|e| !e.is_empty()) {
        let data = event.strip_prefix("data: ").unwrap_or_else(|| panic!("an event is one data field: {event:?}"));
        assert!(!data.contains('\n'), "one line per event");
        if data == "[DONE]" {
            break;
        }
        let chunk: Value = serde_json::from_str(data).expect("each event is a JSON chunk");
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert!(chunk["id"].is_string() && chunk["created"].is_number() && chunk["model"].is_string(), "{chunk}");
        for choice in chunk["choices"].as_array().expect("choices") {
            content.push_str(choice["delta"]["content"].as_str().unwrap_or_default());
            if let Some(f) = choice["finish_reason"].as_str() {
                finishes.push(f.to_owned());
            }
        }
        if !chunk["usage"].is_null() && chunk.get("usage").is_some() {
            usage = Some(chunk["usage"].clone());
        }
    }
    (content, finishes, usage)
}

#[tokio::test(start_paused = true)]
async fn a_streaming_request_is_served_from_a_cached_answer_as_openai_chunks() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    post(&gw, &chat("gpt-4o", json!({}))).await;
    let streamed = post(&gw, &chat("gpt-4o", json!({"stream": true, "stream_options": {"include_usage": true}}))).await;
    assert_eq!(streamed.status, StatusCode::OK);
    assert!(streamed.header("content-type").starts_with("text/event-stream"));
    assert_eq!(streamed.header("x-switchyard-cache"), "hit");
    let (content, finishes, usage) = sdk_read_stream(&streamed.body);
    assert_eq!(content, "answer #1");
    assert_eq!(finishes, ["stop"]);
    assert_eq!(usage.expect("a usage chunk")["total_tokens"], 5);
    assert_eq!(upstream.calls(), 1);
    // Without include_usage, no usage chunk.
    let (_, _, usage) = sdk_read_stream(&post(&gw, &chat("gpt-4o", json!({"stream": true}))).await.body);
    assert!(usage.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_streamed_answer_is_passed_through_and_not_stored() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    let first = post(&gw, &chat("gpt-4o", json!({"stream": true}))).await;
    assert_eq!(first.header("x-switchyard-cache"), "miss");
    assert!(first.headers.get("x-litellm-cache-key").is_none(), "nothing was stored");
    assert_eq!(sdk_read_stream(&first.body).0, "answer #1");
    assert_eq!(post(&gw, &chat("gpt-4o", json!({}))).await.content(), "answer #2");
    assert_eq!(upstream.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn embeddings_are_cached_and_chat_entries_do_not_answer_them() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    let body = json!({"model": "embed", "input": ["hello"]});
    let first = post_with(&gw, "/v1/embeddings", &body, &[]).await;
    assert_eq!(first.status, StatusCode::OK);
    let second = post_with(&gw, "/v1/embeddings", &body, &[]).await;
    assert_eq!(second.header("x-switchyard-cache"), "hit");
    assert_eq!(second.body, first.body);
    assert_eq!(upstream.calls(), 1);
    // Only chat completions when `supported_call_types` says so.
    let upstream = Upstream::default();
    let gw = gateway(&upstream, &LOCAL.replace("ttl: 60 }", "ttl: 60, supported_call_types: [acompletion] }"));
    post_with(&gw, "/v1/embeddings", &body, &[]).await;
    post_with(&gw, "/v1/embeddings", &body, &[]).await;
    assert_eq!(upstream.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn text_completions_are_cached_and_streamed_from_the_cache() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    let body = json!({"model": "gpt-4o", "prompt": "2 + 2 ="});
    let first = post_with(&gw, "/v1/completions", &body, &[]).await;
    assert_eq!(first.status, StatusCode::OK, "{:?}", first.body);
    assert_eq!(first.header("x-switchyard-cache"), "miss");
    let second = post_with(&gw, "/v1/completions", &body, &[]).await;
    assert_eq!(second.header("x-switchyard-cache"), "hit");
    assert_eq!(second.body, first.body);
    let mut streaming = body.clone();
    streaming["stream"] = json!(true);
    let streamed = post_with(&gw, "/v1/completions", &streaming, &[]).await;
    let text = String::from_utf8_lossy(&streamed.body).into_owned();
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    let first_event: Value =
        serde_json::from_str(text.split("\n\n").next().unwrap().strip_prefix("data: ").unwrap()).unwrap();
    assert_eq!(first_event["object"], "text_completion");
    assert_eq!(first_event["choices"][0]["text"], "answer #1");
    // A chat request with the same words is another entry.
    assert_eq!(post(&gw, &chat("gpt-4o", json!({}))).await.header("x-switchyard-cache"), "miss");
    assert_eq!(upstream.calls(), 2);
}

// ===== scopes and reloads =====

#[tokio::test(start_paused = true)]
async fn answers_are_not_shared_across_master_keys() {
    let upstream = Upstream::default();
    let keyed = |key: &str| format!("{LOCAL}general_settings: {{ master_key: {key} }}\n");
    let gw = gateway(&upstream, &keyed("sk-one"));
    let auth = [("authorization", "Bearer sk-one")];
    post_with(&gw, "/v1/chat/completions", &chat("gpt-4o", json!({})), &auth).await;
    let hit = post_with(&gw, "/v1/chat/completions", &chat("gpt-4o", json!({})), &auth).await;
    assert_eq!(hit.content(), "answer #1");
    gw.reload(config(&keyed("sk-two"))).await.expect("reload");
    let auth = [("authorization", "Bearer sk-two")];
    let other = post_with(&gw, "/v1/chat/completions", &chat("gpt-4o", json!({})), &auth).await;
    assert_eq!(other.content(), "answer #2", "another credential, another scope");
}

#[tokio::test(start_paused = true)]
async fn a_reload_applies_new_cache_settings_and_keeps_entries_when_unchanged() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    post(&gw, &chat("gpt-4o", json!({}))).await;
    gw.reload(config(LOCAL)).await.expect("same settings");
    assert_eq!(post(&gw, &chat("gpt-4o", json!({}))).await.content(), "answer #1", "entries kept");
    let without = LOCAL.replace("  cache: true\n  cache_params: { type: local, ttl: 60 }\n", "  cache: false\n");
    gw.reload(config(&without)).await.expect("cache off");
    let routed = post(&gw, &chat("gpt-4o", json!({}))).await;
    assert_eq!(routed.content(), "answer #2");
    assert!(routed.headers.get("x-switchyard-cache").is_none());
    gw.reload(config(LOCAL)).await.expect("cache on");
    assert_eq!(post(&gw, &chat("gpt-4o", json!({}))).await.header("x-switchyard-cache"), "miss", "a new cache");
}

#[tokio::test(start_paused = true)]
async fn hits_and_misses_are_counted() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, LOCAL);
    post(&gw, &chat("gpt-4o", json!({"seed": 424242}))).await;
    post(&gw, &chat("gpt-4o", json!({"seed": 424242}))).await;
    let req = Request::get("/metrics").body(Body::empty()).expect("request");
    let resp = gw.router().oneshot(req).await.expect("infallible");
    let text = String::from_utf8(resp.into_body().collect().await.expect("body").to_bytes().to_vec()).expect("utf-8");
    for result in ["hit", "miss", "store"] {
        let line = format!(r#"switchyard_cache_requests_total{{endpoint="chat",result="{result}"}}"#);
        assert!(text.contains(&line), "{line} missing from:\n{text}");
    }
    // LiteLLM's names, for boards built on its proxy.
    for line in [
        r#"litellm_cache_hits_metric_total{model="gpt-4o"}"#,
        r#"litellm_cache_misses_metric_total{model="gpt-4o"}"#,
        r#"litellm_cached_tokens_metric_total{model="gpt-4o"}"#,
    ] {
        assert!(text.contains(line), "{line} missing from:\n{text}");
    }
}

// ===== LiteLLM's cache endpoints =====

async fn send(gw: &Gateway, req: Request<Body>) -> (StatusCode, Value) {
    let resp = gw.router().oneshot(req).await.expect("infallible");
    let status = resp.status();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

#[tokio::test(start_paused = true)]
async fn cache_delete_removes_an_answer_by_its_key_and_ping_answers() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, &format!("{LOCAL}general_settings: {{ master_key: sk-admin }}\n"));
    let auth = [("authorization", "Bearer sk-admin")];
    let first = post_with(&gw, "/v1/chat/completions", &chat("gpt-4o", json!({})), &auth).await;
    let key = first.header("x-litellm-cache-key").to_owned();
    let delete = |keys: Value| {
        Request::post("/cache/delete")
            .header("authorization", "Bearer sk-admin")
            .header("content-type", "application/json")
            .body(Body::from(json!({ "keys": keys }).to_string()))
            .expect("request")
    };
    let (status, answer) = send(&gw, delete(json!([key, "not-a-key"]))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer, json!({"status": "success", "deleted": 1}));
    let again = post_with(&gw, "/v1/chat/completions", &chat("gpt-4o", json!({})), &auth).await;
    assert_eq!(again.content(), "answer #2", "the deleted answer is asked again");

    let ping = Request::get("/cache/ping").header("authorization", "Bearer sk-admin").body(Body::empty()).unwrap();
    assert_eq!(send(&gw, ping).await, (StatusCode::OK, json!({"status": "healthy", "cache_type": "local"})));
    let anonymous = Request::get("/cache/ping").body(Body::empty()).unwrap();
    assert_eq!(send(&gw, anonymous).await.0, StatusCode::UNAUTHORIZED);
    let (status, _) = send(&gw, delete(json!("one"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test(start_paused = true)]
async fn the_cache_endpoints_answer_503_without_a_cache() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, "router_settings: { num_retries: 0 }\n");
    let (status, answer) = send(&gw, Request::get("/cache/ping").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer["error"]["code"], "cache_not_configured");
}

// ===== config =====

#[test]
fn cache_settings_load_as_litellm_reads_them() {
    use switchyard::cache::{CacheBackend, CacheMode};
    let c = config(
        "litellm_settings:\n  cache: true\n  cache_params: { type: local, ttl: 30, namespace: ns, mode: default_off, \
         supported_call_types: [completion], similarity_threshold: 0.8 }\nrouter_settings:\n  caching_groups: [[gpt-4o, mini]]\n",
    );
    let cache = c.cache.as_ref().expect("a cache");
    assert!(matches!(cache.backend, CacheBackend::Local { .. }));
    assert_eq!(cache.ttl, Duration::from_secs(30));
    assert_eq!(cache.namespace.as_deref(), Some("ns"));
    assert_eq!(cache.mode, CacheMode::DefaultOff);
    assert!(cache.call_types.chat && !cache.call_types.embeddings && !cache.call_types.completions);
    assert_eq!(cache.caching_groups, vec![vec!["gpt-4o".to_owned(), "mini".to_owned()]]);
    assert!(
        c.warnings.iter().any(|w| w.contains("litellm_settings.cache_params.similarity_threshold")),
        "{:?}",
        c.warnings
    );
    assert!(!c.warnings.iter().any(|w| w.contains("`litellm_settings.cache`")), "{:?}", c.warnings);
}

#[test]
fn cache_config_errors_name_the_key() {
    let err = |settings: &str| Config::from_yaml_str(&format!("{MODELS}{settings}")).expect_err("refused");
    let e = err("litellm_settings: { cache: true, cache_params: { type: s3 } }\n");
    assert_eq!(e.path(), "litellm_settings.cache_params.type");
    assert!(e.message().contains("local") && e.message().contains("redis"), "{e}");
    let e = err("litellm_settings: { cache: true }\n");
    assert_eq!(e.path(), "litellm_settings.cache_params.type", "LiteLLM's default is redis, and no Redis is set");
    let e = err(
        "litellm_settings: { cache: true, cache_params: { type: local } }\nrouter_settings: { caching_groups: [[gpt-4o, nope]] }\n",
    );
    assert_eq!(e.path(), "router_settings.caching_groups[0][1]");
    assert!(e.message().contains("nope") && e.message().contains("gpt-4o"), "{e}");
    let e = err(
        "litellm_settings: { cache: true, cache_params: { type: local } }\nrouter_settings: { caching_groups: [[gpt-4o], [gpt-4o]] }\n",
    );
    assert_eq!(e.path(), "router_settings.caching_groups[1][0]");
    let e = err("litellm_settings: { cache: true, cache_params: { type: local, mode: sometimes } }\n");
    assert_eq!(e.path(), "litellm_settings.cache_params.mode");
    let e = err("litellm_settings: { cache: true, cache_params: { type: redis, host: cache, port: 0 } }\n");
    assert_eq!(e.path(), "litellm_settings.cache_params.port");
    let e = err("litellm_settings: { cache: true, cache_params: { type: local, ttl: 0 } }\n");
    assert_eq!(e.path(), "litellm_settings.cache_params.ttl");
}

#[test]
fn a_redis_cache_finds_its_server_in_the_params_the_environment_or_the_router() {
    use switchyard::cache::CacheBackend;
    let redis_of = |c: &Config| match &c.cache.as_ref().expect("a cache").backend {
        CacheBackend::Redis(r) => r.clone(),
        other => panic!("{other:?}"),
    };
    let c = config(
        "litellm_settings: { cache: true, cache_params: { type: redis, host: cache, port: 6380, password: pw } }\n",
    );
    let r = redis_of(&c);
    assert_eq!((r.host.as_deref(), r.port), (Some("cache"), Some(6380)));
    let env = |name: &str| match name {
        "REDIS_HOST" => Some("envhost".to_owned()),
        "REDIS_PORT" => Some("7000".to_owned()),
        _ => None,
    };
    let c =
        Config::from_yaml_str_with_env(&format!("{MODELS}litellm_settings: {{ cache: true }}\n"), &env).expect("loads");
    let r = redis_of(&c);
    assert_eq!((r.host.as_deref(), r.port), (Some("envhost"), Some(7000)));
    let c = config(
        "router_settings: { redis_url: 'redis://shared:6379', redis_namespace: state }\nlitellm_settings: { cache: true }\n",
    );
    let r = redis_of(&c);
    assert_eq!(r.url.as_deref(), Some("redis://shared:6379"));
    assert_eq!(r.namespace, None, "the state namespace is not the cache's");
    // The Router's own switch: its Redis, else memory.
    let c = config("router_settings: { cache_responses: true }\n");
    assert!(matches!(c.cache.as_ref().expect("a cache").backend, CacheBackend::Local { .. }));
}

#[test]
fn cache_params_without_cache_true_warn_and_configure_nothing() {
    let c = config("litellm_settings: { cache_params: { type: local } }\n");
    assert!(c.cache.is_none());
    assert!(c.warnings.iter().any(|w| w.contains("`litellm_settings.cache_params` is ignored")), "{:?}", c.warnings);
}

// ===== Redis =====

#[cfg(feature = "redis")]
#[path = "../layers/tests/support/redis.rs"]
mod redis_support;

#[cfg(feature = "redis")]
fn redis_settings(url: &str, ttl: u64) -> String {
    format!(
        "router_settings:\n  num_retries: 0\nlitellm_settings:\n  cache: true\n  cache_params: {{ type: redis, url: '{url}', ttl: {ttl}, namespace: sy }}\n"
    )
}

/// Waits (real time, bounded) until the background write of `key` reached Redis.
#[cfg(feature = "redis")]
async fn until_stored(server: &redis_support::RedisServer, key: &str) {
    let deadline = tokio::time::Instant::now() + loopback::PATIENCE;
    while server.command(&["EXISTS", key]) != "1" {
        assert!(tokio::time::Instant::now() < deadline, "{key} never reached Redis");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Two replicas on one Redis: an answer one of them stored answers the other without its
/// upstream, and the key carries the TTL.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_answers_through_redis_with_a_ttl() {
    let server = redis_support::RedisServer::start();
    let settings = redis_settings(&server.url(), 120);
    let (up_a, up_b) = (Upstream::default(), Upstream::default());
    let (a, b) = (gateway(&up_a, &settings), gateway(&up_b, &settings));
    let first = post(&a, &chat("gpt-4o", json!({}))).await;
    assert_eq!(first.header("x-switchyard-cache"), "miss");
    let key = first.header("x-litellm-cache-key").to_owned();
    assert!(key.starts_with("sy:"), "{key}");
    until_stored(&server, &key).await;
    let ttl: u64 = server.command(&["PTTL", &key]).parse().expect("a TTL");
    assert!(ttl > 100_000 && ttl <= 120_000, "{ttl} ms");

    // A lookup never waits for a connect: B's connection is up before its first lookup.
    let ping = Request::get("/cache/ping").body(Body::empty()).unwrap();
    assert_eq!(send(&b, ping).await.0, StatusCode::OK);
    let second = post(&b, &chat("gpt-4o", json!({"stream": true}))).await;
    assert_eq!(second.header("x-switchyard-cache"), "hit");
    assert_eq!(sdk_read_stream(&second.body).0, "answer #1");
    assert_eq!((up_a.calls(), up_b.calls()), (1, 0));

    // `POST /cache/delete` on one replica removes the answer for both.
    let ping = Request::get("/cache/ping").body(Body::empty()).unwrap();
    assert_eq!(send(&b, ping).await, (StatusCode::OK, json!({"status": "healthy", "cache_type": "redis"})));
    let delete = Request::post("/cache/delete")
        .header("content-type", "application/json")
        .body(Body::from(json!({ "keys": [key] }).to_string()))
        .unwrap();
    assert_eq!(send(&b, delete).await.1["deleted"], 1);
    assert_eq!(server.command(&["EXISTS", &key]), "0");
}

/// A Redis outage never fails a request: lookups and writes degrade to misses, and caching
/// resumes when Redis is back.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_redis_makes_misses_not_failures() {
    let mut server = redis_support::RedisServer::start();
    let upstream = Upstream::default();
    let gw = gateway(&upstream, &redis_settings(&server.url(), 60));
    let first = post(&gw, &chat("gpt-4o", json!({}))).await;
    until_stored(&server, first.header("x-litellm-cache-key")).await;
    server.kill();
    for n in 2..=4 {
        let answer = post(&gw, &chat("gpt-4o", json!({}))).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.header("x-switchyard-cache"), "miss");
        assert_eq!(answer.content(), format!("answer #{n}"));
    }
    server.restart();
    // The data went with the process: the next answer is stored again, then served.
    let deadline = tokio::time::Instant::now() + loopback::PATIENCE;
    loop {
        let answer = post(&gw, &chat("gpt-4o", json!({"seed": 1}))).await;
        assert_eq!(answer.status, StatusCode::OK);
        if answer.header("x-switchyard-cache") == "hit" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "caching never resumed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A server that does not exist at start: every request is routed.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_redis_at_start_routes_every_request() {
    let upstream = Upstream::default();
    let gw = gateway(&upstream, &redis_settings("redis://127.0.0.1:1", 60));
    for _ in 0..3 {
        assert_eq!(post(&gw, &chat("gpt-4o", json!({}))).await.status, StatusCode::OK);
    }
    assert_eq!(upstream.calls(), 3);
}

/// A server that accepts connections and never answers: after the first timeout, Redis is left
/// alone for a second at a time, so requests are not each held for a timeout.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_redis_does_not_hold_every_request() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("redis://{}", listener.local_addr().expect("address"));
    let held = tokio::spawn(async move {
        let mut sockets = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            sockets.push(socket);
        }
    });
    let upstream = Upstream::default();
    let gw = gateway(&upstream, &redis_settings(&url, 60));
    let started = std::time::Instant::now();
    for _ in 0..20 {
        assert_eq!(post(&gw, &chat("gpt-4o", json!({}))).await.status, StatusCode::OK);
    }
    assert_eq!(upstream.calls(), 20);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "20 requests took {took:?}");
    held.abort();
}

/// The same on a Redis Cluster (`startup_nodes`): answers land on the node of their slot, and
/// `POST /cache/delete` removes keys of several slots.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_cluster_cache_is_shared_and_deletes_across_slots() {
    let cluster = redis_support::RedisCluster::start(3);
    let nodes: Vec<String> = cluster.urls().iter().map(|u| format!("'{u}'")).collect();
    let settings = format!(
        "router_settings:\n  num_retries: 0\nlitellm_settings:\n  cache: true\n  cache_params: {{ type: redis, startup_nodes: [{}], ttl: 60 }}\n",
        nodes.join(", ")
    );
    let (up_a, up_b) = (Upstream::default(), Upstream::default());
    let (a, b) = (gateway(&up_a, &settings), gateway(&up_b, &settings));
    let mut keys = Vec::new();
    for n in 0..4 {
        let answer = post(&a, &chat("gpt-4o", json!({ "seed": n }))).await;
        assert_eq!(answer.header("x-switchyard-cache"), "miss");
        keys.push(answer.header("x-litellm-cache-key").to_owned());
    }
    let stored = |key: &str| cluster.nodes().iter().any(|n| n.try_command(&["EXISTS", key]).is_ok_and(|r| r == "1"));
    let deadline = tokio::time::Instant::now() + loopback::PATIENCE;
    while !keys.iter().all(|k| stored(k)) {
        assert!(tokio::time::Instant::now() < deadline, "the answers never reached the cluster");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let ping = Request::get("/cache/ping").body(Body::empty()).unwrap();
    assert_eq!(send(&b, ping).await.0, StatusCode::OK);
    for n in 0..4 {
        let answer = post(&b, &chat("gpt-4o", json!({ "seed": n }))).await;
        assert_eq!(answer.header("x-switchyard-cache"), "hit", "seed {n}");
        assert_eq!(answer.content(), format!("answer #{}", n + 1));
    }
    assert_eq!(up_b.calls(), 0);
    let delete = Request::post("/cache/delete")
        .header("content-type", "application/json")
        .body(Body::from(json!({ "keys": keys }).to_string()))
        .unwrap();
    assert_eq!(send(&b, delete).await.1["deleted"], 4);
    assert!(keys.iter().all(|k| !stored(k)));
}
