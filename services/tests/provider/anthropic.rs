//! Anthropic deployments on the wire: the request the provider sends, the answers and streams it
//! translates, the errors it classifies, and the keys it keeps to their own host.

use http::header;
use serde_json::{Value, json};
use switchyard_layers::{ApiKey, Deployment, Outcome, RequestFacts, ctx::Endpoint};
use switchyard_services::provider::ProviderConfig;

use super::support::{
    Reply, Server, Step, attempt, chat_body, data_events, drain, provider, route_error, send, streaming,
};

fn claude(server: &Server, key: &str) -> Deployment {
    Deployment::builder("claude", "anthropic/claude-sonnet-4-5")
        .api_base(server.base())
        .api_key(ApiKey::new(key))
        .build()
        .expect("valid deployment")
}

/// Anthropic's documented non-streaming answer.
fn message(text: &str) -> String {
    json!({
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{ "type": "text", "text": text }],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": { "input_tokens": 12, "output_tokens": 6, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 4 }
    })
    .to_string()
}

/// `event: <type>\ndata: <json>\n\n`, as Anthropic frames every event.
fn ev(json: Value) -> Step {
    let kind = json["type"].as_str().expect("a typed event").to_owned();
    Step::Chunk(format!("event: {kind}\ndata: {json}\n\n"))
}

fn message_start() -> Step {
    ev(json!({ "type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
        "stop_reason": null, "stop_sequence": null, "usage": { "input_tokens": 25, "output_tokens": 1 } } }))
}

fn text_block() -> Step {
    ev(json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } }))
}

fn text_delta(text: &str) -> Step {
    ev(json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": text } }))
}

fn overloaded() -> Step {
    ev(json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } }))
}

#[tokio::test]
async fn the_request_is_anthropics_with_its_own_key_and_version() {
    let server = Server::start().await;
    server.reply(Reply::json(200, message("Hi there")));
    let body = json!({ "model": "claude", "max_tokens": 100, "stop": "END", "user": "u-1", "messages": [
        { "role": "system", "content": "Be brief." },
        { "role": "user", "content": "hi" },
    ]});
    let mut req = attempt(claude(&server, "sk-ant-own"), RequestFacts::new(), &body);
    req.headers_mut().insert(header::AUTHORIZATION, "Bearer sk-client".parse().expect("header"));
    req.headers_mut().insert("x-api-key", "sk-client-ant".parse().expect("header"));
    let resp = send(&provider(ProviderConfig::default()), req).await.expect("a 200 answer");
    let (text, error, _) = drain(resp.into_body()).await;
    assert!(error.is_none());

    let seen = server.request().await;
    assert_eq!(seen.target, "/v1/messages");
    assert_eq!(seen.header("x-api-key"), Some("sk-ant-own"));
    assert_eq!(seen.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(seen.header("authorization"), None, "the client's key is not forwarded");
    let raw = format!("{:?} {}", seen.headers, String::from_utf8_lossy(&seen.body));
    assert!(!raw.contains("sk-client"), "a client key leaked: {raw}");
    let sent = seen.json();
    assert_eq!(sent["model"], "claude-sonnet-4-5");
    assert_eq!(sent["system"], "Be brief.");
    assert_eq!(sent["max_tokens"], 100);
    assert_eq!(sent["stop_sequences"], json!(["END"]));
    assert_eq!(sent["metadata"], json!({ "user_id": "u-1" }));
    assert_eq!(sent["messages"], json!([{ "role": "user", "content": [{ "type": "text", "text": "hi" }] }]));

    let answer: Value = serde_json::from_str(&text).expect("a JSON answer");
    assert_eq!(answer["object"], "chat.completion");
    assert_eq!(answer["choices"][0]["message"]["content"], "Hi there");
    assert_eq!(answer["choices"][0]["finish_reason"], "stop");
    assert_eq!(answer["usage"]["prompt_tokens"], 16, "input plus cache reads: {answer}");
    assert_eq!(answer["usage"]["completion_tokens"], 6);
    assert_eq!(answer["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
}

#[tokio::test]
async fn anthropic_version_and_beta_from_extra_headers_reach_anthropic() {
    let server = Server::start().await;
    server.reply(Reply::json(200, message("ok")));
    let deployment = Deployment::builder("claude", "anthropic/claude-sonnet-4-5")
        .api_base(server.base())
        .api_key(ApiKey::new("sk-ant-own"))
        .param(
            "extra_headers",
            json!({ "anthropic-version": "2024-10-22", "anthropic-beta": "output-128k-2025-02-19,context-1m-2025-08-07" }),
        )
        .build()
        .expect("valid deployment");
    let req = attempt(deployment, RequestFacts::new(), &chat_body());
    send(&provider(ProviderConfig::default()), req).await.expect("a 200 answer");

    let seen = server.request().await;
    assert_eq!(seen.header("anthropic-version"), Some("2024-10-22"), "the deployment's version replaces the default");
    assert_eq!(seen.header("anthropic-beta"), Some("output-128k-2025-02-19,context-1m-2025-08-07"));
    for name in ["anthropic-version", "anthropic-beta"] {
        assert_eq!(seen.headers.iter().filter(|(k, _)| k == name).count(), 1, "one {name}: {:?}", seen.headers);
    }
    assert_eq!(seen.header("x-api-key"), Some("sk-ant-own"));
    assert!(seen.json().get("extra_headers").is_none(), "headers, not body members");
}

#[tokio::test]
async fn max_tokens_defaults_to_the_catalogs_output_limit() {
    let server = Server::start().await;
    server.reply(Reply::json(200, message("ok")));
    let req = attempt(claude(&server, "sk-ant-own"), RequestFacts::new(), &chat_body());
    send(&provider(ProviderConfig::default()), req).await.expect("a 200 answer");
    let sent = server.request().await.json();
    let catalog = switchyard_layers::catalog::lookup("anthropic/claude-sonnet-4-5").and_then(|f| f.max_output_tokens);
    let expected = catalog.unwrap_or(switchyard_services::provider::ANTHROPIC_DEFAULT_MAX_TOKENS);
    assert_eq!(sent["max_tokens"], expected, "{sent}");
}

#[tokio::test]
async fn an_error_answer_echoing_the_key_is_classified_and_masked() {
    let server = Server::start().await;
    let body = json!({ "type": "error", "error": { "type": "authentication_error",
        "message": "invalid x-api-key: sk-ant-own-secret-123" } });
    server.reply(Reply::json(401, body.to_string()));
    let req = attempt(claude(&server, "sk-ant-own-secret-123"), RequestFacts::new(), &chat_body());
    let err = route_error(send(&provider(ProviderConfig::default()), req).await);
    assert_eq!(err.outcome(), Some(Outcome::Auth));
    assert!(!err.to_string().contains("sk-ant-own-secret-123"), "{err}");
    let kept = String::from_utf8_lossy(err.upstream_body().expect("the body is kept")).into_owned();
    assert!(!kept.contains("sk-ant-own-secret-123"), "{kept}");
}

#[tokio::test]
async fn a_rate_limit_waits_for_the_reset_anthropic_names() {
    let server = Server::start().await;
    let reset = humantime::format_rfc3339_seconds(std::time::SystemTime::now() + std::time::Duration::from_secs(30));
    server.reply(Reply::Json {
        status: 429,
        headers: vec![
            ("anthropic-ratelimit-requests-remaining", "0".to_owned()),
            ("anthropic-ratelimit-requests-reset", reset.to_string()),
        ],
        body: json!({ "type": "error", "error": { "type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit" } }).to_string(),
    });
    let req = attempt(claude(&server, "sk-ant-own"), RequestFacts::new(), &chat_body());
    let err = route_error(send(&provider(ProviderConfig::default()), req).await);
    assert_eq!(err.outcome(), Some(Outcome::RateLimited));
    let wait = err.retry_after().expect("a wait");
    assert!(wait > std::time::Duration::from_secs(25) && wait <= std::time::Duration::from_secs(30), "{wait:?}");
}

#[tokio::test]
async fn a_prompt_too_long_is_a_context_window_error() {
    let server = Server::start().await;
    let body = json!({ "type": "error", "error": { "type": "invalid_request_error",
        "message": "prompt is too long: 210000 tokens > 200000 maximum" } });
    server.reply(Reply::json(400, body.to_string()));
    let req = attempt(claude(&server, "sk-ant-own"), RequestFacts::new(), &chat_body());
    let err = route_error(send(&provider(ProviderConfig::default()), req).await);
    assert_eq!(err.outcome(), Some(Outcome::ContextWindowExceeded));
}

#[tokio::test]
async fn an_error_envelope_with_a_200_is_the_failure_it_describes() {
    let server = Server::start().await;
    let body = json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } });
    server.reply(Reply::json(200, body.to_string()));
    let req = attempt(claude(&server, "sk-ant-own"), RequestFacts::new(), &chat_body());
    let err = route_error(send(&provider(ProviderConfig::default()), req).await);
    assert_eq!(err.outcome(), Some(Outcome::ServerError));
}

#[tokio::test]
async fn overloaded_right_after_message_start_fails_the_attempt_before_the_commit_point() {
    let server = Server::start().await;
    server.reply(Reply::Sse(vec![message_start(), overloaded(), Step::End]));
    let req = attempt(claude(&server, "sk-ant-own"), streaming(), &chat_body());
    let err = route_error(send(&provider(ProviderConfig::default()), req).await);
    assert_eq!(err.outcome(), Some(Outcome::ServerError), "{err}");
    assert!(server.request().await.json()["stream"] == true);
}

#[tokio::test]
async fn a_stream_arrives_as_openai_chunks_with_usage_then_done() {
    let server = Server::start().await;
    server.reply(Reply::Sse(vec![
        message_start(),
        text_block(),
        ev(json!({ "type": "ping" })),
        text_delta("Hello"),
        text_delta(" world"),
        ev(json!({ "type": "content_block_stop", "index": 0 })),
        ev(json!({ "type": "message_delta", "delta": { "stop_reason": "end_turn", "stop_sequence": null },
            "usage": { "output_tokens": 15 } })),
        ev(json!({ "type": "message_stop" })),
        Step::End,
    ]));
    // The client asks for the usage chunk, as OpenAI requires.
    let mut body = chat_body();
    body["stream_options"] = json!({ "include_usage": true });
    let req = attempt(claude(&server, "sk-ant-own"), streaming(), &body);
    let resp = send(&provider(ProviderConfig::default()), req).await.expect("committed");
    let (text, error, _) = drain(resp.into_body()).await;
    assert!(error.is_none(), "{error:?}");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    assert!(!text.contains("event:"), "OpenAI chunks carry no event names: {text}");
    let events = data_events(&text);
    let content: String =
        events.iter().filter_map(|e| e["choices"][0]["delta"]["content"].as_str()).collect::<Vec<_>>().concat();
    assert_eq!(content, "Hello world");
    assert!(events.iter().all(|e| e["object"] == "chat.completion.chunk"), "{events:?}");
    assert!(events.iter().any(|e| e["choices"][0]["finish_reason"] == "stop"), "{events:?}");
    let usage = events.iter().rev().find(|e| e["usage"].is_object()).expect("a usage chunk");
    assert_eq!(usage["usage"]["prompt_tokens"], 25);
    assert_eq!(usage["usage"]["completion_tokens"], 15);
}

#[tokio::test]
async fn an_error_event_after_the_commit_point_ends_the_stream_with_one_openai_error_event() {
    let server = Server::start().await;
    server.reply(Reply::Sse(vec![message_start(), text_block(), text_delta("Hel"), overloaded(), Step::End]));
    let req = attempt(claude(&server, "sk-ant-own"), streaming(), &chat_body());
    let resp = send(&provider(ProviderConfig::default()), req).await.expect("committed at the first text");
    let (text, error, _) = drain(resp.into_body()).await;
    let error = error.expect("the body ends with an error");
    assert_eq!(error.outcome(), Some(Outcome::ServerError));
    let events = data_events(&text);
    let last = events.last().expect("events");
    assert_eq!(last["error"]["type"], "upstream_error", "{text}");
    assert!(!text.contains("[DONE]"));
}

#[tokio::test]
async fn embeddings_and_completions_to_anthropic_are_refused_without_a_call() {
    let server = Server::start().await;
    for endpoint in [Endpoint::Embedding, Endpoint::Completion] {
        let body = json!({ "model": "claude", "input": "hi", "prompt": "hi" });
        let req = attempt(claude(&server, "sk-ant-own"), RequestFacts::new().endpoint(endpoint), &body);
        let err = route_error(send(&provider(ProviderConfig::default()), req).await);
        assert_eq!(err.http_status(), http::StatusCode::BAD_REQUEST, "{err}");
        assert!(err.to_string().contains("anthropic"), "{err}");
    }
    assert!(server.requests_so_far().await.is_empty());
}

#[tokio::test]
async fn a_parameter_anthropic_cannot_take_is_refused_or_dropped_with_drop_params() {
    let server = Server::start().await;
    let body = json!({ "model": "claude", "seed": 7, "messages": [{ "role": "user", "content": "hi" }] });
    let req = attempt(claude(&server, "sk-ant-own"), RequestFacts::new(), &body);
    let err = route_error(send(&provider(ProviderConfig::default()), req).await);
    assert_eq!(err.http_status(), http::StatusCode::BAD_REQUEST);
    assert!(err.to_string().contains("seed"), "{err}");
    assert!(server.requests_so_far().await.is_empty());

    server.reply(Reply::json(200, message("ok")));
    let dropping = claude(&server, "sk-ant-own").to_builder().param("drop_params", true.into()).build();
    let req = attempt(dropping.expect("valid deployment"), RequestFacts::new(), &body);
    send(&provider(ProviderConfig::default()), req).await.expect("dropped, then sent");
    let sent = server.request().await.json();
    assert!(sent.get("seed").is_none() && sent.get("drop_params").is_none(), "{sent}");
}
