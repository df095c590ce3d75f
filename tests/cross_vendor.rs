//! Cross-vendor routing end to end: the LiteLLM Router's first example (a `gpt-4o` group of two
//! Azure keys and one OpenAI key that falls back to a `claude` group on Anthropic) loads as
//! written and works, with the real HTTP provider and mock upstreams that speak each vendor's
//! wire format (OpenAI / Azure chat completions, Anthropic Messages).

use std::time::Duration;

use futures_util::StreamExt;
use http::StatusCode;
use serde_json::{Value, json};
use switchyard::{
    Config, Router,
    layers::Outcome,
    services::{
        mock::{MockHandle, MockProfile, MockUpstream},
        openai::{ChatMessage, ChatRequest, EmbeddingRequest},
        profile::Failure,
        provider::{HttpProvider, ProviderConfig},
    },
};

/// Bound on anything a test waits for.
const PATIENCE: Duration = Duration::from_secs(20);

fn mock(profile: MockProfile) -> MockHandle {
    MockUpstream::start(profile).expect("mock upstream")
}

fn failing(status: StatusCode) -> MockHandle {
    mock(MockProfile::builder().fail_status(status, 1.0).build().expect("valid profile"))
}

/// The seeds' example config (`docs/litellm.md`), with each deployment's `api_base` pointing at
/// a mock and `extra` appended to `router_settings`.
fn seeds_config(openai_side: &MockHandle, claude: &MockHandle, extra: &str) -> Config {
    let openai = openai_side.origin();
    let anthropic = claude.origin();
    Config::from_yaml_str(&format!(
        r#"
model_list:
  - model_name: gpt-4o
    litellm_params: {{ model: azure/my-gpt4o-east, api_key: azure-key-east, rpm: 600, api_base: "{openai}" }}
    model_info: {{ id: east }}
  - model_name: gpt-4o
    litellm_params: {{ model: azure/my-gpt4o-west, api_key: azure-key-west, rpm: 600, api_base: "{openai}" }}
    model_info: {{ id: west }}
  - model_name: gpt-4o
    litellm_params: {{ model: openai/gpt-4o, api_key: sk-openai-key, rpm: 200, api_base: "{openai}/v1" }}
    model_info: {{ id: openai }}
  - model_name: claude
    litellm_params: {{ model: anthropic/claude-sonnet-4-5, api_key: sk-ant-test-key, api_base: "{anthropic}" }}
    model_info: {{ id: claude-1 }}
router_settings:
  routing_strategy: usage-based-routing-v2
  num_retries: 2
  fallbacks: [{{ "gpt-4o": ["claude"] }}]
{extra}"#
    ))
    .expect("the seeds' config loads")
}

/// One `claude` group with one Anthropic deployment at `upstream`; `settings` is the
/// `router_settings` flow mapping.
fn claude_config(upstream: &MockHandle, settings: &str) -> Config {
    Config::from_yaml_str(&format!(
        "model_list:\n  - model_name: claude\n    litellm_params: {{ model: anthropic/claude-sonnet-4-5, api_key: sk-ant-a, \
         api_base: \"{}\" }}\nrouter_settings: {settings}\n",
        upstream.origin()
    ))
    .expect("valid config")
}

fn router(config: &Config) -> Router {
    let provider = HttpProvider::new(ProviderConfig::default().timeout(Duration::from_secs(10))).expect("provider");
    Router::builder(config).seed(3).build(provider).expect("router builds")
}

fn hello() -> ChatRequest {
    ChatRequest::new("gpt-4o", vec![ChatMessage::system("Be brief."), ChatMessage::user("hello")])
}

/// The text the mock answers with for `model` (its 8 default chunks).
fn mock_text(model: &str) -> String {
    let mut text = format!("Mock answer from `{model}`.");
    for i in 1..8 {
        text.push_str(&format!(" token{i}"));
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_openai_side_down_falls_back_to_claude_on_anthropic() {
    let openai_side = failing(StatusCode::INTERNAL_SERVER_ERROR);
    let claude = mock(MockProfile::healthy());
    let router = router(&seeds_config(&openai_side, &claude, ""));

    let answer = tokio::time::timeout(PATIENCE, router.chat(hello())).await.expect("in time").expect("claude serves");
    assert_eq!(&*answer.served.group, "claude");
    assert_eq!(answer.served.deployment.as_str(), "claude-1");
    assert_eq!(answer.served.hops, 1);
    // num_retries: 2 inside gpt-4o: three attempts there, then one on claude.
    assert_eq!(openai_side.requests(), 3);
    assert_eq!(answer.served.failed.len(), 3);
    assert_eq!(claude.requests(), 1);

    let completion = serde_json::to_value(&answer.completion).expect("json");
    assert_eq!(completion["object"], "chat.completion");
    assert_eq!(completion["choices"][0]["message"]["role"], "assistant");
    assert_eq!(completion["choices"][0]["message"]["content"], mock_text("claude-sonnet-4-5"));
    assert_eq!(completion["choices"][0]["finish_reason"], "stop");
    let usage = &completion["usage"];
    assert_eq!(usage["completion_tokens"], 8);
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(usage["prompt_tokens"].as_u64().expect("prompt tokens") + 8),
        "{usage}"
    );

    // What reached Anthropic: its own request shape, its own credentials, nothing of OpenAI's.
    let sent = claude.last_request().expect("recorded");
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.headers.get("x-api-key").map(|v| v.as_bytes()), Some(&b"sk-ant-test-key"[..]));
    assert_eq!(sent.headers.get("anthropic-version").map(|v| v.as_bytes()), Some(&b"2023-06-01"[..]));
    assert!(sent.headers.get("authorization").is_none());
    let body = sent.json().expect("a JSON body");
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(body["messages"], json!([{ "role": "user", "content": [{ "type": "text", "text": "hello" }] }]));
    assert!(body["max_tokens"].as_u64().is_some_and(|n| n > 0), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_falls_back_to_claude_and_arrives_as_openai_chunks() {
    let openai_side = failing(StatusCode::SERVICE_UNAVAILABLE);
    let claude = mock(MockProfile::healthy());
    let router = router(&seeds_config(&openai_side, &claude, ""));

    // The usage chunk is sent when asked for, as OpenAI does.
    let asks_usage = hello().streaming(true).param("stream_options", json!({"include_usage": true}));
    let mut stream =
        tokio::time::timeout(PATIENCE, router.chat_stream(asks_usage)).await.expect("in time").expect("claude streams");
    assert_eq!(&*stream.served().group, "claude");
    let mut text = String::new();
    let mut finish = None;
    let mut usage = None;
    while let Some(chunk) = tokio::time::timeout(PATIENCE, stream.next()).await.expect("chunk in time") {
        let chunk = serde_json::to_value(chunk.expect("no error mid-stream")).expect("json");
        assert_eq!(chunk["object"], "chat.completion.chunk");
        if let Some(choice) = chunk["choices"].get(0) {
            text.push_str(choice["delta"]["content"].as_str().unwrap_or_default());
            if let Some(reason) = choice["finish_reason"].as_str() {
                finish = Some(reason.to_owned());
            }
        }
        if chunk["usage"].is_object() {
            usage = Some(chunk["usage"].clone());
        }
    }
    assert_eq!(text, mock_text("claude-sonnet-4-5"));
    assert_eq!(finish.as_deref(), Some("stop"));
    let usage = usage.expect("a final usage chunk");
    assert_eq!(usage["completion_tokens"], 8, "{usage}");
    let sent = claude.last_request().and_then(|r| r.json()).expect("recorded");
    assert_eq!(sent["stream"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overloaded_anthropic_deployment_is_retried_on_its_sibling_and_benched() {
    let overloaded = mock(
        MockProfile::builder()
            .fail_status(StatusCode::from_u16(529).expect("529"), 1.0)
            .build()
            .expect("valid profile"),
    );
    let healthy = mock(MockProfile::healthy());
    let config = Config::from_yaml_str(&format!(
        r#"
model_list:
  - model_name: claude
    litellm_params: {{ model: anthropic/claude-sonnet-4-5, api_key: sk-ant-a, api_base: "{}", weight: 1000 }}
    model_info: {{ id: claude-a }}
  - model_name: claude
    litellm_params: {{ model: anthropic/claude-sonnet-4-5, api_key: sk-ant-b, api_base: "{}" }}
    model_info: {{ id: claude-b }}
router_settings: {{ num_retries: 3, allowed_fails: 0, routing_strategy: simple-shuffle }}
"#,
        overloaded.origin(),
        healthy.origin()
    ))
    .expect("valid config");
    let router = router(&config);
    for _ in 0..4 {
        let req = ChatRequest::new("claude", vec![ChatMessage::user("hi")]);
        let answer = tokio::time::timeout(PATIENCE, router.chat(req)).await.expect("in time").expect("served");
        assert_eq!(answer.served.deployment.as_str(), "claude-b");
    }
    // Weighted to be picked first, then benched after its first 529: tried exactly once.
    assert_eq!(overloaded.requests(), 1, "requests to the overloaded one");
    let cooling: Vec<String> = router.cooldowns().await.into_iter().map(|c| c.deployment.to_string()).collect();
    assert_eq!(cooling, ["claude-a"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_errors_are_classified_into_the_shared_outcomes() {
    let cases = [
        (StatusCode::BAD_REQUEST, Some("context_length_exceeded"), Outcome::ContextWindowExceeded),
        (StatusCode::UNAUTHORIZED, None, Outcome::Auth),
        (StatusCode::NOT_FOUND, None, Outcome::NotFound),
        (StatusCode::TOO_MANY_REQUESTS, None, Outcome::RateLimited),
        (StatusCode::INTERNAL_SERVER_ERROR, None, Outcome::ServerError),
        (StatusCode::from_u16(529).expect("529"), None, Outcome::ServerError),
    ];
    for (status, code, outcome) in cases {
        let mut b = MockProfile::builder().fail_status(status, 1.0).retry_after(Duration::from_secs(7));
        if let Some(code) = code {
            b = b.error_code(code);
        }
        let upstream = mock(b.build().expect("valid profile"));
        let config = claude_config(&upstream, "{ num_retries: 0 }");
        let err = router(&config)
            .chat(ChatRequest::new("claude", vec![ChatMessage::user("hi")]))
            .await
            .expect_err("the upstream fails");
        assert_eq!(err.outcome(), Some(outcome), "{status}: {err}");
        assert_eq!(err.upstream_status(), Some(status), "{err}");
        if outcome == Outcome::RateLimited {
            assert_eq!(err.retry_after(), Some(Duration::from_secs(7)), "{err}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_too_long_for_claude_takes_the_context_window_fallback() {
    let small = mock(MockProfile::builder().fail(Failure::ContextWindowExceeded, 1.0).build().expect("valid profile"));
    let big = mock(MockProfile::healthy());
    let config = Config::from_yaml_str(&format!(
        r#"
model_list:
  - model_name: claude-haiku
    litellm_params: {{ model: anthropic/claude-3-5-haiku-latest, api_key: sk-ant-a, api_base: "{}" }}
  - model_name: gpt-4o
    litellm_params: {{ model: openai/gpt-4o, api_key: sk-b, api_base: "{}/v1" }}
router_settings:
  num_retries: 0
  context_window_fallbacks: [{{ claude-haiku: [gpt-4o] }}]
"#,
        small.origin(),
        big.origin()
    ))
    .expect("valid config");
    let answer = router(&config)
        .chat(ChatRequest::new("claude-haiku", vec![ChatMessage::user("a long prompt")]))
        .await
        .expect("the fallback serves");
    assert_eq!(&*answer.served.group, "gpt-4o");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_to_an_anthropic_deployment_are_a_400_naming_the_provider_without_a_call() {
    let upstream = mock(MockProfile::healthy());
    let config = claude_config(&upstream, "{}");
    let req: EmbeddingRequest =
        serde_json::from_value(json!({ "model": "claude", "input": "hi" })).expect("an embedding request");
    let err = router(&config).embed(req).await.expect_err("not served");
    assert_eq!(err.http_status(), StatusCode::BAD_REQUEST, "{err}");
    assert!(err.to_string().contains("anthropic"), "{err}");
    assert_eq!(upstream.requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_anthropic_cannot_take_is_a_400_naming_it() {
    let upstream = mock(MockProfile::healthy());
    let config = claude_config(&upstream, "{}");
    let req = ChatRequest::new("claude", vec![ChatMessage::user("hi")]).param("logit_bias", json!({ "50256": -100 }));
    let err = router(&config).chat(req).await.expect_err("refused");
    assert_eq!(err.http_status(), StatusCode::BAD_REQUEST, "{err}");
    assert!(err.to_string().contains("logit_bias"), "{err}");
    assert_eq!(upstream.requests(), 0);
    let tools = ChatRequest::new("claude", vec![ChatMessage::user("weather?")])
        .param(
            "tools",
            json!([{ "type": "function", "function": { "name": "weather", "parameters": { "type": "object" } } }]),
        )
        .param("tool_choice", "required");
    let answer = router(&config).chat(tools).await.expect("tools translate");
    let completion: Value = serde_json::to_value(&answer.completion).expect("json");
    assert_eq!(completion["choices"][0]["finish_reason"], "tool_calls", "{completion}");
    let call = &completion["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "weather");
    let args: Value = serde_json::from_str(call["function"]["arguments"].as_str().expect("a string")).expect("json");
    assert_eq!(args, json!({ "mock": true }));
    let sent = upstream.last_request().and_then(|r| r.json()).expect("recorded");
    assert_eq!(sent["tool_choice"], json!({ "type": "any" }));
    assert_eq!(sent["tools"][0]["name"], "weather");
}

#[cfg(feature = "redis")]
#[path = "../layers/tests/support/redis.rs"]
mod redis_support;

/// `tests/fixtures/seeds_router.yaml` (the seeds' example as written), its `os.environ/`
/// references resolved to the mocks, the keys and the Redis server given.
#[cfg(feature = "redis")]
fn seeds_fixture(openai_side: &MockHandle, claude: &MockHandle, redis: &redis_support::RedisServer) -> Config {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/seeds_router.yaml");
    let yaml = std::fs::read_to_string(path).expect("the fixture");
    let env = |name: &str| {
        Some(match name {
            "AZURE_EAST_API_KEY" => "azure-key-east".to_owned(),
            "AZURE_WEST_API_KEY" => "azure-key-west".to_owned(),
            "OPENAI_API_KEY" => "sk-openai-key".to_owned(),
            "ANTHROPIC_API_KEY" => "sk-ant-seeds".to_owned(),
            "AZURE_EAST_API_BASE" | "AZURE_WEST_API_BASE" => openai_side.origin(),
            "OPENAI_API_BASE" => format!("{}/v1", openai_side.origin()),
            "ANTHROPIC_API_BASE" => claude.origin(),
            "REDIS_HOST" => "127.0.0.1".to_owned(),
            "REDIS_PORT" => redis.port().to_string(),
            _ => return None,
        })
    };
    Config::from_yaml_str_with_env(&yaml, &env).expect("the seeds' config loads")
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seeds_config_as_written_falls_back_from_a_failing_gpt_4o_to_claude() {
    let redis = redis_support::RedisServer::start();
    let openai_side = failing(StatusCode::INTERNAL_SERVER_ERROR);
    let claude = mock(MockProfile::healthy());
    let config = seeds_fixture(&openai_side, &claude, &redis);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let claude_id = config
        .deployments
        .iter()
        .find(|d| d.model.starts_with("anthropic/"))
        .map(|d| d.id.clone())
        .expect("the claude deployment");
    let router = router(&config);
    assert_eq!(router.store().backend_name(), "redis", "the seeds share state in Redis");
    tokio::time::timeout(PATIENCE, router.store().ready()).await.expect("Redis reachable");

    let answer = tokio::time::timeout(PATIENCE, router.chat(hello())).await.expect("in time").expect("claude serves");
    assert_eq!(&*answer.served.group, "claude");
    assert_eq!(answer.served.deployment, claude_id);
    assert_eq!(answer.served.hops, 1);
    assert_eq!(openai_side.requests(), 3, "num_retries: 2 inside gpt-4o");
    assert_eq!(claude.requests(), 1);
    let completion = serde_json::to_value(&answer.completion).expect("json");
    assert_eq!(completion["choices"][0]["message"]["content"], mock_text("claude-sonnet-4-5"));
    let sent = claude.last_request().expect("recorded");
    assert_eq!(sent.headers.get("x-api-key").map(|v| v.as_bytes()), Some(&b"sk-ant-seeds"[..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_stream_counts_its_real_tokens_in_the_deployments_tpm_window() {
    // Far from the router's estimate for "hello", so the window shows which one it counted.
    let claude = mock(MockProfile::builder().prompt_tokens(1234).build().expect("valid profile"));
    let config = Config::from_yaml_str(&format!(
        "model_list:\n  - model_name: claude\n    litellm_params: {{ model: anthropic/claude-sonnet-4-5, api_key: sk-ant-a, \
         api_base: \"{}\", tpm: 1000000 }}\n    model_info: {{ id: claude-1 }}\n",
        claude.origin()
    ))
    .expect("valid config");
    let router = router(&config);
    let id = switchyard::layers::DeploymentId::from("claude-1");

    // The client does not ask for the usage chunk: the window counts the real tokens anyway.
    let req = ChatRequest::new("claude", vec![ChatMessage::user("hello")]).streaming(true);
    let mut stream = tokio::time::timeout(PATIENCE, router.chat_stream(req)).await.expect("in time").expect("streams");
    let mut chunks = 0;
    while let Some(chunk) = tokio::time::timeout(PATIENCE, stream.next()).await.expect("chunk in time") {
        chunk.expect("no error mid-stream");
        chunks += 1;
    }
    drop(stream);
    assert!(chunks >= 8, "{chunks} chunks");

    router.store().flush().await;
    let window = router.store().usage(std::slice::from_ref(&id)).await[0];
    assert_eq!(window.requests, 1);
    // The mock's 1234 prompt tokens and its 8 chunks of one token each.
    assert_eq!(window.tokens, 1234 + 8, "reconciled to the stream's usage");
}

#[cfg(feature = "gateway")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateways_headers_trail_and_router_state_name_the_anthropic_deployment() {
    use axum::body::Body;
    use http_body_util::BodyExt;
    use switchyard::gateway::Gateway;
    use tower::ServiceExt;

    async fn send(gw: &Gateway, req: http::Request<Body>) -> (http::response::Parts, Value) {
        let resp = tokio::time::timeout(PATIENCE, gw.router().oneshot(req)).await.expect("in time").expect("answered");
        let (parts, body) = resp.into_parts();
        let body = tokio::time::timeout(PATIENCE, body.collect()).await.expect("body in time").expect("body");
        let json = serde_json::from_slice(&body.to_bytes()).expect("a JSON answer");
        (parts, json)
    }

    let openai_side = failing(StatusCode::INTERNAL_SERVER_ERROR);
    let claude = mock(MockProfile::healthy());
    let config = seeds_config(&openai_side, &claude, "");
    let provider = HttpProvider::new(ProviderConfig::default().timeout(Duration::from_secs(10))).expect("provider");
    let gw = Gateway::builder(config).provider(provider).seed(3).build().expect("gateway");

    let body = json!({ "model": "gpt-4o", "messages": [{ "role": "user", "content": "hello" }] });
    let req = http::Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .header("x-switchyard-trail", "1")
        .body(Body::from(body.to_string()))
        .expect("request");
    let (parts, answer) = send(&gw, req).await;
    assert_eq!(parts.status, StatusCode::OK, "{answer}");
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    assert_eq!(header("x-switchyard-model-group"), "claude");
    assert_eq!(header("x-switchyard-deployment-id"), "claude-1");
    assert_eq!(header("x-litellm-model-id"), "claude-1");
    assert_eq!(header("x-switchyard-attempted-fallbacks"), "1");
    // Three failed attempts in gpt-4o (num_retries: 2), then the one claude-1 served.
    let trail = header("x-switchyard-trail");
    let attempts: Vec<&str> = trail.split(", ").collect();
    assert_eq!(attempts.len(), 4, "{trail}");
    assert!(attempts[..3].iter().all(|a| a.starts_with("gpt-4o/") && a.contains(":server_error:")), "{trail}");
    assert!(attempts[3].starts_with("claude/claude-1:success:"), "{trail}");
    assert_eq!(answer["model"], "claude-sonnet-4-5");

    let req = http::Request::get("/router/state").body(Body::empty()).expect("request");
    let (parts, state) = send(&gw, req).await;
    assert_eq!(parts.status, StatusCode::OK, "{state}");
    let group = state["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|g| g["name"] == "claude")
        .unwrap_or_else(|| panic!("no claude group in {state}"));
    let deployment = group["deployments"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["id"] == "claude-1")
        .unwrap_or_else(|| panic!("no claude-1 in {group}"));
    assert_eq!(deployment["provider"], "anthropic", "{deployment}");
    assert_eq!(deployment["model"], "anthropic/claude-sonnet-4-5", "{deployment}");
    assert_eq!(deployment["state"], "healthy", "{deployment}");
    assert_eq!(deployment["rpm"]["used"], 1, "{deployment}");
    assert_eq!(deployment["window"]["attempts"], 1, "{deployment}");
}
