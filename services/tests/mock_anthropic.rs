//! The mock upstream's Anthropic Messages API over loopback HTTP: request validation, whole
//! answers, event streams, injected failures and in-stream faults. Real time, generous bounds, no
//! sleeps for synchronisation.
#![cfg(feature = "mock")]

use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use serde_json::{Value, json};
use switchyard_services::{
    mock::{MockHandle, MockProfile, MockUpstream},
    openai::SseDecoder,
    profile::{Failure, Latency},
};
use tokio::time::timeout;

/// Far above anything a loopback answer needs: only a broken server hits it.
const BOUND: Duration = Duration::from_secs(10);

type HttpClient = Client<HttpConnector, Full<Bytes>>;

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

fn start(profile: MockProfile) -> MockHandle {
    MockUpstream::start(profile).expect("a loopback port")
}

fn profile() -> MockProfile {
    MockProfile::builder().chunks(3).chunk_interval(Latency::ZERO).build().expect("a profile")
}

/// `/v1/messages` with `headers` and a raw body.
async fn send(upstream: &MockHandle, headers: &[(&str, &str)], body: impl Into<Bytes>) -> http::Response<Incoming> {
    let mut req =
        http::Request::post(format!("{}/v1/messages", upstream.origin())).header("content-type", "application/json");
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let req = req.body(Full::new(body.into())).expect("a request");
    timeout(BOUND, client().request(req)).await.expect("answered in time").expect("an answer")
}

const HEADERS: &[(&str, &str)] = &[("x-api-key", "sk-ant-test"), ("anthropic-version", "2023-06-01")];

/// A request with Anthropic's headers.
async fn post(upstream: &MockHandle, body: Value) -> http::Response<Incoming> {
    send(upstream, HEADERS, body.to_string()).await
}

fn ask(model: &str, text: &str) -> Value {
    json!({"model": model, "max_tokens": 256, "messages": [{"role": "user", "content": text}]})
}

async fn body_of(resp: http::Response<Incoming>) -> Bytes {
    timeout(BOUND, resp.into_body().collect()).await.expect("read in time").expect("a whole body").to_bytes()
}

async fn json_of(resp: http::Response<Incoming>) -> Value {
    serde_json::from_slice(&body_of(resp).await).expect("a JSON body")
}

/// The status, the error type and the message of an Anthropic error answer.
async fn error_of(resp: http::Response<Incoming>) -> (StatusCode, String, String) {
    let status = resp.status();
    let body = json_of(resp).await;
    assert_eq!(body["type"], "error", "{body}");
    let error = &body["error"];
    let text = |v: &Value| v.as_str().expect("a string").to_owned();
    (status, text(&error["type"]), text(&error["message"]))
}

/// The refusal of `body` sent with Anthropic's headers.
async fn refusal(body: Value) -> (StatusCode, String, String) {
    let upstream = start(profile());
    error_of(post(&upstream, body).await).await
}

/// The raw body of a stream, and how it ended.
async fn stream_of(resp: http::Response<Incoming>) -> (Vec<u8>, Result<(), hyper::Error>) {
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut body = resp.into_body();
    let mut raw = Vec::new();
    loop {
        match timeout(BOUND, body.frame()).await.expect("a frame in time") {
            None => return (raw, Ok(())),
            Some(Err(e)) => return (raw, Err(e)),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    raw.extend_from_slice(&data);
                }
            }
        }
    }
}

/// The events of a stream: each one's name and data, checked to agree (`event: x` names data of
/// `"type": "x"`).
fn events(raw: &[u8]) -> Vec<(String, Value)> {
    let mut sse = SseDecoder::new(1 << 20);
    sse.push(raw)
        .expect("valid SSE")
        .into_iter()
        .map(|e| {
            let name = e.event.expect("a named event");
            let data: Value = serde_json::from_str(&e.data).expect("JSON data");
            assert_eq!(data["type"], name.as_str(), "{data}");
            (name, data)
        })
        .collect()
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(name, _)| name.as_str()).collect()
}

async fn stream(upstream: &MockHandle, mut body: Value) -> (Vec<(String, Value)>, Result<(), hyper::Error>) {
    body["stream"] = json!(true);
    let (raw, end) = stream_of(post(upstream, body).await).await;
    (events(&raw), end)
}

// === validation ===

#[tokio::test]
async fn a_request_without_x_api_key_is_401_authentication_error() {
    let upstream = start(profile());
    let resp = send(&upstream, &[("anthropic-version", "2023-06-01")], ask("m", "hi").to_string()).await;
    let error = error_of(resp).await;
    assert_eq!(error, (StatusCode::UNAUTHORIZED, "authentication_error".into(), "x-api-key header is required".into()));
}

#[tokio::test]
async fn a_request_without_anthropic_version_is_400() {
    let upstream = start(profile());
    let (status, kind, message) =
        error_of(send(&upstream, &[("x-api-key", "k")], ask("m", "hi").to_string()).await).await;
    assert_eq!((status, kind.as_str()), (StatusCode::BAD_REQUEST, "invalid_request_error"));
    assert!(message.contains("anthropic-version"), "{message}");
}

#[tokio::test]
async fn a_body_that_is_not_json_is_400_invalid_request_error() {
    let upstream = start(profile());
    let (status, kind, _) = error_of(send(&upstream, HEADERS, "{\"model\":").await).await;
    assert_eq!((status, kind.as_str()), (StatusCode::BAD_REQUEST, "invalid_request_error"));
}

#[tokio::test]
async fn a_request_without_model_is_400() {
    let (status, _, message) = refusal(json!({"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]})).await;
    assert_eq!((status, message.as_str()), (StatusCode::BAD_REQUEST, "model: Field required"));
}

#[tokio::test]
async fn a_request_without_max_tokens_is_400() {
    let (status, _, message) = refusal(json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]})).await;
    assert_eq!((status, message.as_str()), (StatusCode::BAD_REQUEST, "max_tokens: Field required"));
}

#[tokio::test]
async fn max_tokens_must_be_a_non_negative_integer() {
    for bad in [json!("64"), json!(1.5), json!(-1)] {
        let mut body = ask("m", "hi");
        body["max_tokens"] = bad.clone();
        let (status, kind, message) = refusal(body).await;
        assert_eq!((status, kind.as_str()), (StatusCode::BAD_REQUEST, "invalid_request_error"), "{bad}");
        assert!(message.starts_with("max_tokens: "), "{bad}: {message}");
    }
}

#[tokio::test]
async fn max_tokens_zero_is_accepted_with_no_content() {
    let upstream = start(profile());
    let mut body = ask("m", "hi");
    body["max_tokens"] = json!(0);
    let answer = json_of(post(&upstream, body).await).await;
    assert_eq!(answer["content"], json!([]));
    assert_eq!(answer["stop_reason"], "max_tokens");
    assert_eq!(answer["usage"]["output_tokens"], 0);
}

#[tokio::test]
async fn messages_must_be_present_and_not_empty() {
    let (status, _, message) = refusal(json!({"model": "m", "max_tokens": 8})).await;
    assert_eq!((status, message.as_str()), (StatusCode::BAD_REQUEST, "messages: Field required"));
    let (status, _, message) = refusal(json!({"model": "m", "max_tokens": 8, "messages": []})).await;
    assert_eq!((status, message.as_str()), (StatusCode::BAD_REQUEST, "messages: at least one message is required"));
}

#[tokio::test]
async fn a_system_message_is_refused_in_favour_of_the_top_level_system_parameter() {
    let body = json!({"model": "m", "max_tokens": 8, "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]});
    let (status, kind, message) = refusal(body).await;
    assert_eq!((status, kind.as_str()), (StatusCode::BAD_REQUEST, "invalid_request_error"));
    assert!(message.contains("top-level `system` parameter"), "{message}");
}

#[tokio::test]
async fn a_role_other_than_user_or_assistant_is_400() {
    let body = json!({"model": "m", "max_tokens": 8, "messages": [{"role": "tool", "content": "42"}]});
    let (status, _, message) = refusal(body).await;
    assert_eq!(
        (status, message.as_str()),
        (StatusCode::BAD_REQUEST, "messages.0.role: Input should be 'user' or 'assistant'")
    );
}

#[tokio::test]
async fn an_empty_message_other_than_a_final_assistant_one_is_400() {
    let body = json!({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": ""}]});
    let (status, _, message) = refusal(body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(message.starts_with("messages.0: all messages must have non-empty content"), "{message}");

    let upstream = start(profile());
    let prefill = json!({"model": "m", "max_tokens": 8, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": ""},
    ]});
    assert_eq!(post(&upstream, prefill).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn consecutive_same_role_turns_and_an_assistant_first_turn_are_accepted_as_the_api_does() {
    let upstream = start(profile());
    let body = json!({"model": "m", "max_tokens": 8, "messages": [
        {"role": "assistant", "content": "How can I help?"},
        {"role": "user", "content": "one"},
        {"role": "user", "content": [{"type": "text", "text": "two"}]},
    ]});
    let resp = post(&upstream, body).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(json_of(resp).await["type"], "message");
}

#[tokio::test]
async fn an_unknown_top_level_field_is_400_extra_inputs_are_not_permitted() {
    let mut body = ask("m", "hi");
    body["stream_options"] = json!({"include_usage": true});
    let (status, kind, message) = refusal(body).await;
    assert_eq!((status, kind.as_str()), (StatusCode::BAD_REQUEST, "invalid_request_error"));
    assert_eq!(message, "stream_options: Extra inputs are not permitted");
}

#[tokio::test]
async fn beta_fields_are_accepted_only_with_an_anthropic_beta_header() {
    let upstream = start(profile());
    let mut body = ask("m", "hi");
    body["context_management"] = json!({"edits": []});
    let (status, _, message) = error_of(post(&upstream, body.clone()).await).await;
    assert_eq!(
        (status, message.as_str()),
        (StatusCode::BAD_REQUEST, "context_management: Extra inputs are not permitted")
    );

    let beta = [HEADERS[0], HEADERS[1], ("anthropic-beta", "context-management-2025-06-27")];
    assert_eq!(send(&upstream, &beta, body.to_string()).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn every_documented_field_is_accepted() {
    let upstream = start(profile());
    let body = json!({
        "model": "m", "max_tokens": 2048, "messages": [{"role": "user", "content": "hi"}],
        "system": [{"type": "text", "text": "be brief"}], "metadata": {"user_id": "u"},
        "stop_sequences": ["never"], "stream": false, "temperature": 0.5, "top_p": 0.9, "top_k": 5,
        "tools": [{"name": "t", "input_schema": {"type": "object"}}], "tool_choice": {"type": "auto"},
        "thinking": {"type": "disabled"}, "service_tier": "auto", "container": null,
        "cache_control": {"type": "ephemeral"}, "inference_geo": null, "output_config": {},
    });
    let resp = post(&upstream, body).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(json_of(resp).await["stop_reason"], "end_turn");
}

#[tokio::test]
async fn a_thinking_budget_must_be_under_max_tokens() {
    let mut body = ask("m", "hi");
    body["thinking"] = json!({"type": "enabled", "budget_tokens": 1024});
    let (status, _, message) = refusal(body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(message.contains("thinking.budget_tokens"), "{message}");
}

// === whole answers ===

#[tokio::test]
async fn a_whole_answer_is_a_message_with_the_openai_text_and_usage() {
    let upstream = start(profile());
    let body = json!({"model": "claude-x", "max_tokens": 64, "system": "abcd",
        "messages": [{"role": "user", "content": "12345678"}]});
    let resp = post(&upstream, body).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let mut answer = json_of(resp).await;
    let id = answer["id"].take();
    assert!(id.as_str().is_some_and(|id| id.starts_with("msg_mock")), "{id}");
    assert_eq!(
        answer,
        json!({
            "id": null, "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": "Mock answer from `claude-x`. token1 token2"}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 3, "output_tokens": 3, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        })
    );
    let seen = upstream.last_request().expect("recorded");
    assert_eq!(seen.path, "/v1/messages");
    assert_eq!(seen.headers["x-api-key"], "sk-ant-test");
    assert_eq!(seen.json().expect("JSON")["system"], "abcd");
}

#[tokio::test]
async fn the_unversioned_path_is_served_too() {
    let upstream = start(profile());
    let req = http::Request::post(format!("{}/messages", upstream.origin()))
        .header("x-api-key", "k")
        .header("anthropic-version", "2023-06-01")
        .body(Full::new(Bytes::from(ask("m", "hi").to_string())))
        .expect("a request");
    let resp = timeout(BOUND, client().request(req)).await.expect("in time").expect("an answer");
    assert_eq!(json_of(resp).await["type"], "message");
}

#[tokio::test]
async fn the_profile_prompt_tokens_are_the_input_tokens() {
    let upstream = start(MockProfile::builder().prompt_tokens(777).build().expect("a profile"));
    assert_eq!(json_of(post(&upstream, ask("m", "hi")).await).await["usage"]["input_tokens"], 777);
}

#[tokio::test]
async fn tool_choice_any_answers_a_tool_use_of_the_first_tool() {
    let upstream = start(profile());
    let mut body = ask("m", "weather?");
    body["tools"] =
        json!([{"name": "get_weather", "input_schema": {"type": "object"}}, {"name": "other", "input_schema": {}}]);
    body["tool_choice"] = json!({"type": "any"});
    let answer = json_of(post(&upstream, body).await).await;
    assert_eq!(answer["stop_reason"], "tool_use");
    let content = answer["content"].as_array().expect("content");
    assert_eq!(content.len(), 1, "{answer}");
    let block = &content[0];
    assert_eq!((block["type"].as_str(), block["name"].as_str()), (Some("tool_use"), Some("get_weather")));
    assert!(block["id"].as_str().is_some_and(|id| id.starts_with("toolu_mock")), "{block}");
    assert_eq!(block["input"], json!({"mock": true}));
}

#[tokio::test]
async fn tool_choice_tool_answers_a_tool_use_of_the_named_tool() {
    let upstream = start(profile());
    let mut body = ask("m", "weather?");
    body["tools"] = json!([{"name": "a", "input_schema": {}}, {"name": "b", "input_schema": {}}]);
    body["tool_choice"] = json!({"type": "tool", "name": "b"});
    let answer = json_of(post(&upstream, body).await).await;
    assert_eq!(answer["content"][0]["name"], "b");
    assert_eq!(answer["stop_reason"], "tool_use");
}

#[tokio::test]
async fn tool_choice_auto_answers_text() {
    let upstream = start(profile());
    let mut body = ask("m", "hi");
    body["tools"] = json!([{"name": "a", "input_schema": {}}]);
    body["tool_choice"] = json!({"type": "auto"});
    let answer = json_of(post(&upstream, body).await).await;
    assert_eq!(answer["content"][0]["type"], "text");
}

#[tokio::test]
async fn enabled_thinking_starts_the_answer_with_a_thinking_block() {
    let upstream = start(profile());
    let mut body = ask("m", "hi");
    body["max_tokens"] = json!(2048);
    body["thinking"] = json!({"type": "enabled", "budget_tokens": 1024});
    let answer = json_of(post(&upstream, body).await).await;
    let content = answer["content"].as_array().expect("content");
    assert_eq!(content.len(), 2, "{answer}");
    assert_eq!(content[0]["type"], "thinking");
    assert!(content[0]["thinking"].as_str().is_some_and(|t| !t.is_empty()));
    assert!(content[0]["signature"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(content[1]["type"], "text");
    assert_eq!(answer["usage"]["output_tokens"], 4, "three text pieces and the thinking");
}

#[tokio::test]
async fn max_tokens_below_the_chunks_truncates_with_stop_reason_max_tokens() {
    let upstream = start(profile());
    let mut body = ask("m", "hi");
    body["max_tokens"] = json!(2);
    let answer = json_of(post(&upstream, body).await).await;
    assert_eq!(answer["content"][0]["text"], "Mock answer from `m`. token1");
    assert_eq!(answer["stop_reason"], "max_tokens");
    assert_eq!(answer["stop_sequence"], Value::Null);
    assert_eq!(answer["usage"]["output_tokens"], 2);
}

#[tokio::test]
async fn a_stop_sequence_in_the_text_cuts_it_with_stop_reason_stop_sequence() {
    let upstream = start(profile());
    let mut body = ask("m", "hi");
    body["stop_sequences"] = json!(["absent", "en2"]);
    let answer = json_of(post(&upstream, body).await).await;
    assert_eq!(answer["content"][0]["text"], "Mock answer from `m`. token1 tok");
    assert_eq!(answer["stop_reason"], "stop_sequence");
    assert_eq!(answer["stop_sequence"], "en2");
}

#[tokio::test]
async fn max_tokens_wins_over_a_stop_sequence_past_it() {
    let upstream = start(profile());
    let mut body = ask("m", "hi");
    body["stop_sequences"] = json!(["token2"]);
    body["max_tokens"] = json!(1);
    let answer = json_of(post(&upstream, body).await).await;
    assert_eq!(answer["stop_reason"], "max_tokens");
    assert_eq!(answer["content"][0]["text"], "Mock answer from `m`.");
}

#[tokio::test]
async fn a_huge_response_pads_the_text() {
    let upstream = start(MockProfile::builder().huge_response(100_000).build().expect("a profile"));
    let answer = json_of(post(&upstream, ask("m", "hi")).await).await;
    assert_eq!(answer["content"][0]["text"].as_str().map(str::len), Some(100_000));
}

#[tokio::test]
async fn a_malformed_whole_answer_is_a_200_with_truncated_json() {
    let upstream = start(MockProfile::builder().malformed_chunk(0, 1.0).build().expect("a profile"));
    let resp = post(&upstream, ask("m", "hi")).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(serde_json::from_slice::<Value>(&body_of(resp).await).is_err());
}

// === streams ===

#[tokio::test]
async fn a_stream_sends_the_documented_event_sequence_in_order() {
    let interval = Duration::from_millis(30);
    let upstream =
        start(MockProfile::builder().chunks(3).chunk_interval(Latency::fixed(interval)).build().expect("a profile"));
    let mut body = ask("claude-x", "12345678");
    body["stream"] = json!(true);
    let started = tokio::time::Instant::now();
    let (raw, end) = stream_of(post(&upstream, body).await).await;
    assert!(end.is_ok(), "a clean end: {end:?}");
    assert!(started.elapsed() >= interval * 3 - Duration::from_millis(5), "paced: {:?}", started.elapsed());
    let raw = String::from_utf8(raw).expect("UTF-8");
    assert!(raw.starts_with("event: message_start\ndata: {"), "{raw}");
    assert!(raw.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"), "{raw}");

    let events = events(raw.as_bytes());
    assert_eq!(
        names(&events),
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let message = &events[0].1["message"];
    assert!(message["id"].as_str().is_some_and(|id| id.starts_with("msg_mock")));
    assert_eq!(message["model"], "claude-x");
    assert_eq!(message["content"], json!([]));
    assert_eq!(message["stop_reason"], Value::Null);
    assert_eq!(message["usage"]["input_tokens"], 2);
    assert_eq!(message["usage"]["output_tokens"], 1);
    assert_eq!(
        events[1].1,
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    );
    let text: String = events[3..6]
        .iter()
        .map(|(_, d)| {
            assert_eq!((d["index"].as_u64(), d["delta"]["type"].as_str()), (Some(0), Some("text_delta")));
            d["delta"]["text"].as_str().expect("text").to_owned()
        })
        .collect();
    assert_eq!(text, "Mock answer from `claude-x`. token1 token2");
    assert_eq!(events[6].1, json!({"type": "content_block_stop", "index": 0}));
    assert_eq!(
        events[7].1,
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 3}})
    );
    assert_eq!(upstream.stats().streams, 1);
}

#[tokio::test]
async fn a_tool_use_stream_sends_input_json_deltas() {
    let upstream = start(profile());
    let mut body = ask("m", "weather?");
    body["tools"] = json!([{"name": "get_weather", "input_schema": {"type": "object"}}]);
    body["tool_choice"] = json!({"type": "any"});
    let (events, end) = stream(&upstream, body).await;
    assert!(end.is_ok());
    assert_eq!(
        names(&events),
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let block = &events[1].1["content_block"];
    assert_eq!((block["type"].as_str(), block["name"].as_str()), (Some("tool_use"), Some("get_weather")));
    assert_eq!(block["input"], json!({}));
    let json: String = events[3..5]
        .iter()
        .map(|(_, d)| {
            assert_eq!(d["delta"]["type"], "input_json_delta");
            d["delta"]["partial_json"].as_str().expect("partial JSON").to_owned()
        })
        .collect();
    assert_eq!(serde_json::from_str::<Value>(&json).expect("whole JSON"), json!({"mock": true}));
    assert_eq!(events[6].1["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn a_thinking_stream_sends_thinking_then_signature_deltas_before_the_text() {
    let upstream = start(profile());
    let mut body = ask("m", "hi");
    body["max_tokens"] = json!(2048);
    body["thinking"] = json!({"type": "adaptive"});
    let (events, end) = stream(&upstream, body).await;
    assert!(end.is_ok());
    let shape: Vec<(&str, Option<&str>)> = events
        .iter()
        .map(|(n, d)| (n.as_str(), d["delta"]["type"].as_str().or(d["content_block"]["type"].as_str())))
        .collect();
    assert_eq!(
        shape,
        [
            ("message_start", None),
            ("content_block_start", Some("thinking")),
            ("ping", None),
            ("content_block_delta", Some("thinking_delta")),
            ("content_block_delta", Some("signature_delta")),
            ("content_block_stop", None),
            ("content_block_start", Some("text")),
            ("content_block_delta", Some("text_delta")),
            ("content_block_delta", Some("text_delta")),
            ("content_block_delta", Some("text_delta")),
            ("content_block_stop", None),
            ("message_delta", None),
            ("message_stop", None),
        ]
    );
    assert_eq!(events[6].1["index"], 1);
    assert_eq!(events[11].1["usage"]["output_tokens"], 4);
}

#[tokio::test]
async fn a_stream_stops_at_a_stop_sequence() {
    let upstream = start(profile());
    let mut body = ask("m", "hi");
    body["stop_sequences"] = json!([" token2"]);
    let (events, _) = stream(&upstream, body).await;
    let deltas = events.iter().filter(|(n, _)| n == "content_block_delta").count();
    assert_eq!(deltas, 2);
    let delta = &events.iter().find(|(n, _)| n == "message_delta").expect("message_delta").1;
    assert_eq!(delta["delta"], json!({"stop_reason": "stop_sequence", "stop_sequence": " token2"}));
    assert_eq!(delta["usage"]["output_tokens"], 2);
}

#[tokio::test]
async fn a_cut_stream_closes_the_connection_after_its_deltas() {
    let upstream = start(
        MockProfile::builder().chunks(5).chunk_interval(Latency::ZERO).stream_cut(2, 1.0).build().expect("a profile"),
    );
    let (events, end) = stream(&upstream, ask("m", "hi")).await;
    assert!(end.is_err(), "the body must end in an error, not cleanly");
    assert_eq!(
        names(&events),
        ["message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta"]
    );
    assert_eq!(upstream.stats().stream_cuts, 1);
}

#[tokio::test]
async fn a_stream_error_after_zero_chunks_follows_message_start() {
    let upstream = start(
        MockProfile::builder().chunks(3).chunk_interval(Latency::ZERO).stream_error(0, 1.0).build().expect("a profile"),
    );
    let mut body = ask("m", "hi");
    body["stream"] = json!(true);
    let (raw, end) = stream_of(post(&upstream, body).await).await;
    assert!(end.is_ok(), "the body ends cleanly after the error event");
    let raw = String::from_utf8(raw).expect("UTF-8");
    assert!(raw.contains("\n\nevent: error\ndata: {") && raw.ends_with("}\n\n"), "{raw}");
    let events = events(raw.as_bytes());
    assert_eq!(names(&events), ["message_start", "error"]);
    assert_eq!(events[1].1, json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
    assert_eq!(upstream.stats().stream_errors, 1);
}

#[tokio::test]
async fn a_stream_error_after_two_chunks_follows_two_deltas() {
    let upstream = start(
        MockProfile::builder().chunks(4).chunk_interval(Latency::ZERO).stream_error(2, 1.0).build().expect("a profile"),
    );
    let (events, end) = stream(&upstream, ask("m", "hi")).await;
    assert!(end.is_ok());
    assert_eq!(
        names(&events),
        ["message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta", "error"]
    );
}

#[tokio::test]
async fn an_openai_stream_error_is_an_error_chunk_and_the_end() {
    let upstream = start(
        MockProfile::builder().chunks(4).chunk_interval(Latency::ZERO).stream_error(1, 1.0).build().expect("a profile"),
    );
    let req = http::Request::post(format!("{}/chat/completions", upstream.base_url()))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(
            json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}).to_string(),
        )))
        .expect("a request");
    let resp = timeout(BOUND, client().request(req)).await.expect("in time").expect("an answer");
    let (raw, end) = stream_of(resp).await;
    assert!(end.is_ok());
    let events = SseDecoder::new(1 << 20).push(&raw).expect("valid SSE");
    assert_eq!(events.len(), 2, "one content chunk, then the error: {events:?}");
    let error: Value = serde_json::from_str(&events[1].data).expect("JSON");
    assert_eq!(error["error"]["type"], "server_error");
    assert!(events.iter().all(|e| !e.is_done()));
}

#[tokio::test]
async fn a_malformed_event_is_a_truncated_data_line_then_the_stream_goes_on() {
    let upstream = start(
        MockProfile::builder()
            .chunks(3)
            .chunk_interval(Latency::ZERO)
            .malformed_chunk(1, 1.0)
            .build()
            .expect("a profile"),
    );
    let mut body = ask("m", "hi");
    body["stream"] = json!(true);
    let (raw, end) = stream_of(post(&upstream, body).await).await;
    assert!(end.is_ok());
    let events = SseDecoder::new(1 << 20).push(&raw).expect("valid SSE");
    let bad: Vec<_> = events.iter().filter(|e| serde_json::from_str::<Value>(&e.data).is_err()).collect();
    assert_eq!(bad.len(), 1, "{events:?}");
    assert_eq!(bad[0].event.as_deref(), Some("content_block_delta"));
    assert_eq!(events.last().and_then(|e| e.event.as_deref()), Some("message_stop"));
}

#[tokio::test]
async fn a_stalled_stream_sends_headers_then_nothing_until_shutdown() {
    let upstream = start(MockProfile::builder().stall(1.0).build().expect("a profile"));
    let mut body = ask("m", "hi");
    body["stream"] = json!(true);
    let resp = post(&upstream, body).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut body = resp.into_body();
    assert!(timeout(Duration::from_millis(300), body.frame()).await.is_err(), "the client gives up waiting");
    assert_eq!(upstream.stats().stalls, 1);
    timeout(BOUND, upstream.shutdown()).await.expect("shut down in time");
    let end = timeout(BOUND, body.frame()).await.expect("the stalled body ends");
    assert!(!matches!(end, Some(Ok(_))), "no data after a stall: {end:?}");
}

// === injected failures ===

async fn failing(status: u16, code: Option<&str>) -> http::Response<Incoming> {
    let status = StatusCode::from_u16(status).expect("a status");
    let mut profile = MockProfile::builder().fail_status(status, 1.0);
    if let Some(code) = code {
        profile = profile.error_code(code);
    }
    let upstream = start(profile.build().expect("a profile"));
    post(&upstream, ask("claude-x", "hi")).await
}

#[tokio::test]
async fn each_injected_status_answers_its_anthropic_error_type() {
    for (status, kind, message) in [
        (400, "invalid_request_error", None),
        (401, "authentication_error", Some("invalid x-api-key")),
        (403, "permission_error", None),
        (404, "not_found_error", Some("model: claude-x")),
        (413, "request_too_large", None),
        (500, "api_error", None),
        (503, "api_error", None),
    ] {
        let (got, got_kind, got_message) = error_of(failing(status, None).await).await;
        assert_eq!((got.as_u16(), got_kind.as_str()), (status, kind));
        if let Some(message) = message {
            assert_eq!(got_message, message);
        }
    }
}

#[tokio::test]
async fn an_injected_529_is_overloaded_error() {
    let error = error_of(failing(529, None).await).await;
    assert_eq!(error, (StatusCode::from_u16(529).expect("529"), "overloaded_error".into(), "Overloaded".into()));
}

#[tokio::test]
async fn context_length_exceeded_is_prompt_is_too_long() {
    let error = error_of(failing(400, Some("context_length_exceeded")).await).await;
    assert_eq!(
        error,
        (
            StatusCode::BAD_REQUEST,
            "invalid_request_error".into(),
            "prompt is too long: 210000 tokens > 200000 maximum".into()
        )
    );
}

#[tokio::test]
async fn a_429_sends_retry_after_and_the_request_rate_limit_headers() {
    let profile = MockProfile::builder()
        .fail(Failure::RateLimited, 1.0)
        .retry_after(Duration::from_millis(1500))
        .build()
        .expect("a profile");
    let upstream = start(profile);
    let resp = post(&upstream, ask("m", "hi")).await;
    let headers = resp.headers().clone();
    let (status, kind, _) = error_of(resp).await;
    assert_eq!((status, kind.as_str()), (StatusCode::TOO_MANY_REQUESTS, "rate_limit_error"));
    assert_eq!(headers["retry-after"], "2");
    assert_eq!(headers["retry-after-ms"], "1500");
    assert_eq!(headers["anthropic-ratelimit-requests-remaining"], "0");
    let reset = headers["anthropic-ratelimit-requests-reset"].to_str().expect("ASCII");
    // An RFC 3339 instant in UTC: `YYYY-MM-DDTHH:MM:SSZ`.
    let shape: String = reset.chars().map(|c| if c.is_ascii_digit() { 'd' } else { c }).collect();
    assert_eq!(shape, "dddd-dd-ddTdd:dd:ddZ", "{reset}");
    assert!(reset.as_bytes() >= b"2025".as_slice(), "{reset}");
    assert_eq!(upstream.stats().failures, 1);
}

#[tokio::test]
async fn one_profile_draws_the_same_failures_in_both_dialects() {
    let profile = MockProfile::builder().fail(Failure::Unavailable, 0.5).seed(11).build().expect("a profile");
    let (openai, anthropic) = (start(profile.clone()), start(profile));
    let client = client();
    let mut runs = (Vec::new(), Vec::new());
    for _ in 0..24 {
        let req = http::Request::post(format!("{}/chat/completions", openai.base_url()))
            .body(Full::new(Bytes::from(
                json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).to_string(),
            )))
            .expect("a request");
        let resp = timeout(BOUND, client.request(req)).await.expect("in time").expect("an answer");
        runs.0.push(resp.status());
        body_of(resp).await;
        let resp = post(&anthropic, ask("m", "hi")).await;
        runs.1.push(resp.status());
        body_of(resp).await;
    }
    assert_eq!(runs.0, runs.1);
    assert!(runs.0.contains(&StatusCode::OK) && runs.0.contains(&StatusCode::SERVICE_UNAVAILABLE), "{:?}", runs.0);
}
