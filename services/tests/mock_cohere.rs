//! The mock upstream's Cohere v2 API over loopback HTTP: the bearer key, request validation,
//! whole replies, tool calls, event streams, embeddings by type, injected failures and in-stream
//! faults. Real time, generous bounds, no sleeps for synchronisation.
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
const MODEL: &str = "command-a-03-2025";

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

/// `POST {path}` with `headers` and a raw body.
async fn send(upstream: &MockHandle, path: &str, headers: &[(&str, &str)], body: &Value) -> http::Response<Incoming> {
    let mut req =
        http::Request::post(format!("{}{path}", upstream.origin())).header("content-type", "application/json");
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let req = req.body(Full::new(Bytes::from(body.to_string()))).expect("a request");
    timeout(BOUND, client().request(req)).await.expect("answered in time").expect("an answer")
}

const KEY: &[(&str, &str)] = &[("authorization", "Bearer co-test")];

async fn chat(upstream: &MockHandle, body: &Value) -> http::Response<Incoming> {
    send(upstream, "/v2/chat", KEY, body).await
}

async fn embed(upstream: &MockHandle, body: &Value) -> http::Response<Incoming> {
    send(upstream, "/v2/embed", KEY, body).await
}

fn ask(text: &str) -> Value {
    json!({"model": MODEL, "messages": [{"role": "user", "content": text}]})
}

async fn body_of(resp: http::Response<Incoming>) -> Bytes {
    timeout(BOUND, resp.into_body().collect()).await.expect("read in time").expect("a whole body").to_bytes()
}

async fn json_of(resp: http::Response<Incoming>) -> Value {
    serde_json::from_slice(&body_of(resp).await).expect("a JSON body")
}

/// The status and message of a Cohere error answer, checked to have its shape.
async fn error_of(resp: http::Response<Incoming>) -> (StatusCode, String) {
    let status = resp.status();
    let body = json_of(resp).await;
    assert!(body["id"].is_string(), "{body}");
    (status, body["message"].as_str().expect("a message").to_owned())
}

async fn refusal(body: Value) -> (StatusCode, String) {
    let upstream = start(profile());
    error_of(chat(&upstream, &body).await).await
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

/// The named events of a stream (each one's name agreeing with its data's `type`), and whether
/// `data: [DONE]` ended it.
fn events(raw: &[u8]) -> (Vec<(String, Value)>, bool) {
    let decoded = SseDecoder::new(1 << 20).push(raw).expect("valid SSE");
    let done = decoded.last().is_some_and(|e| e.is_done());
    let events = decoded
        .into_iter()
        .filter(|e| !e.is_done())
        .map(|e| {
            let name = e.event.expect("a named event");
            let data: Value = serde_json::from_str(&e.data).expect("JSON data");
            assert_eq!(data["type"], name.as_str(), "{data}");
            (name, data)
        })
        .collect();
    (events, done)
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(name, _)| name.as_str()).collect()
}

async fn stream(upstream: &MockHandle, mut body: Value) -> (Vec<(String, Value)>, bool, Result<(), hyper::Error>) {
    body["stream"] = json!(true);
    let (raw, end) = stream_of(chat(upstream, &body).await).await;
    let (events, done) = events(&raw);
    (events, done, end)
}

fn with_tools(mut body: Value) -> Value {
    body["tools"] = json!([
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "get_time"}},
    ]);
    body
}

// === the key and validation ===

#[tokio::test]
async fn a_request_without_a_bearer_key_is_401() {
    let upstream = start(profile());
    let resp = send(&upstream, "/v2/chat", &[], &ask("hi")).await;
    assert_eq!(error_of(resp).await, (StatusCode::UNAUTHORIZED, "no api key supplied".into()));
    let resp = send(&upstream, "/v2/embed", &[("authorization", "Bearer ")], &json!({})).await;
    assert_eq!(error_of(resp).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(upstream.stats().requests, 2, "refused requests are counted");
}

#[tokio::test]
async fn model_and_messages_are_required() {
    let (status, message) = refusal(json!({"messages": [{"role": "user", "content": "hi"}]})).await;
    assert_eq!((status, message.as_str()), (StatusCode::BAD_REQUEST, "invalid request: model is required"));
    let (status, _) = refusal(json!({"model": MODEL, "messages": []})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn roles_are_user_assistant_system_or_tool() {
    let body = json!({"model": MODEL, "messages": [{"role": "chatbot", "content": "hi"}]});
    let (status, message) = refusal(body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(message.contains("Role must be one of the following: user, assistant, system, tool"), "{message}");
}

#[tokio::test]
async fn an_empty_turn_is_refused() {
    let body = json!({"model": MODEL, "messages": [{"role": "user", "content": ""}]});
    assert_eq!(refusal(body).await, (StatusCode::BAD_REQUEST, "message must not be empty in a turn".into()));
}

#[tokio::test]
async fn a_tool_turn_needs_its_tool_call_id() {
    let body = json!({"model": MODEL, "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "content": [{"type": "document", "document": {"data": "sunny"}}]},
    ]});
    let (status, message) = refusal(body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(message.contains("tool_call_id"), "{message}");
}

#[tokio::test]
async fn a_whole_conversation_with_tool_results_is_accepted() {
    let upstream = start(profile());
    let body = with_tools(json!({"model": MODEL, "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
        {"role": "assistant", "tool_plan": "I will look.", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]}));
    let resp = chat(&upstream, &body).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(upstream.last_request().and_then(|r| r.json()), Some(body));
}

#[tokio::test]
async fn tool_choice_required_needs_tools_and_temperature_stays_in_range() {
    let mut body = ask("hi");
    body["tool_choice"] = json!("REQUIRED");
    assert_eq!(refusal(body).await.0, StatusCode::BAD_REQUEST);
    let mut body = ask("hi");
    body["temperature"] = json!(1.5);
    assert_eq!(
        refusal(body).await,
        (StatusCode::BAD_REQUEST, "invalid request: temperature must be between 0 and 1.0 inclusive.".into())
    );
}

// === whole replies ===

#[tokio::test]
async fn a_whole_reply_has_every_field_the_sdk_reads() {
    let upstream = start(profile());
    let reply = json_of(chat(&upstream, &ask("hello there")).await).await;
    let id = reply["id"].as_str().expect("an id");
    assert_eq!(id.len(), 36, "a UUID: {id}");
    assert_eq!(reply["finish_reason"], "COMPLETE");
    assert_eq!(reply["message"]["role"], "assistant");
    assert_eq!(
        reply["message"]["content"],
        json!([{"type": "text", "text": format!("Mock answer from `{MODEL}`. token1 token2")}])
    );
    let tokens = json!({"input_tokens": 3, "output_tokens": 3});
    assert_eq!(reply["usage"], json!({"billed_units": tokens, "tokens": tokens}));
}

#[tokio::test]
async fn max_tokens_and_stop_sequences_end_the_text() {
    let upstream = start(profile());
    let mut body = ask("hi");
    body["max_tokens"] = json!(2);
    let reply = json_of(chat(&upstream, &body).await).await;
    assert_eq!(reply["finish_reason"], "MAX_TOKENS");
    assert_eq!(reply["usage"]["tokens"]["output_tokens"], 2);
    let mut body = ask("hi");
    body["stop_sequences"] = json!([" token1"]);
    let reply = json_of(chat(&upstream, &body).await).await;
    assert_eq!(reply["finish_reason"], "STOP_SEQUENCE");
    assert_eq!(reply["message"]["content"][0]["text"], format!("Mock answer from `{MODEL}`."));
}

#[tokio::test]
async fn tool_choice_required_answers_a_tool_plan_and_a_call_of_the_first_tool() {
    let upstream = start(profile());
    let mut body = with_tools(ask("weather in Oslo?"));
    body["tool_choice"] = json!("REQUIRED");
    let reply = json_of(chat(&upstream, &body).await).await;
    assert_eq!(reply["finish_reason"], "TOOL_CALL");
    let message = &reply["message"];
    assert_eq!(message["tool_plan"], "I will call get_weather.");
    let call = &message["tool_calls"][0];
    assert_eq!((call["type"].as_str(), call["function"]["name"].as_str()), (Some("function"), Some("get_weather")));
    assert!(call["id"].as_str().is_some_and(|id| id.starts_with("get_weather_")), "{call}");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().expect("a string")).expect("JSON");
    assert_eq!(arguments, json!({"mock": true}));
}

#[tokio::test]
async fn asking_to_call_a_tool_calls_one_unless_tool_choice_is_none() {
    let upstream = start(profile());
    let body = with_tools(ask("Please call a tool."));
    assert_eq!(json_of(chat(&upstream, &body).await).await["finish_reason"], "TOOL_CALL");
    let mut body = body;
    body["tool_choice"] = json!("NONE");
    assert_eq!(json_of(chat(&upstream, &body).await).await["finish_reason"], "COMPLETE");
}

// === streams ===

#[tokio::test]
async fn a_stream_sends_cohere_events_in_order_then_done() {
    let upstream = start(profile());
    let (events, done, end) = stream(&upstream, ask("hello there")).await;
    assert!(end.is_ok() && done);
    assert_eq!(
        names(&events),
        [
            "message-start",
            "content-start",
            "content-delta",
            "content-delta",
            "content-delta",
            "content-end",
            "message-end"
        ]
    );
    let start = &events[0].1;
    assert_eq!(start["delta"], json!({"message": {"role": "assistant"}}));
    assert_eq!(start["id"].as_str().map(str::len), Some(36));
    assert_eq!(
        events[1].1,
        json!({"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}})
    );
    let text: String =
        events[2..5].iter().map(|(_, d)| d["delta"]["message"]["content"]["text"].as_str().expect("text")).collect();
    assert_eq!(text, format!("Mock answer from `{MODEL}`. token1 token2"));
    assert_eq!(events[5].1, json!({"type": "content-end", "index": 0}));
    let tokens = json!({"input_tokens": 3, "output_tokens": 3});
    assert_eq!(
        events[6].1,
        json!({"type": "message-end", "delta": {"finish_reason": "COMPLETE", "usage": {"billed_units": tokens, "tokens": tokens}}})
    );
    assert_eq!(upstream.stats().streams, 1);
}

#[tokio::test]
async fn a_tool_call_stream_sends_the_plan_then_the_call_in_pieces() {
    let upstream = start(profile());
    let mut body = with_tools(ask("weather?"));
    body["tool_choice"] = json!("REQUIRED");
    let (events, done, end) = stream(&upstream, body).await;
    assert!(end.is_ok() && done);
    assert_eq!(
        names(&events),
        [
            "message-start",
            "tool-plan-delta",
            "tool-plan-delta",
            "tool-call-start",
            "tool-call-delta",
            "tool-call-delta",
            "tool-call-end",
            "message-end"
        ]
    );
    let plan: String =
        events[1..3].iter().map(|(_, d)| d["delta"]["message"]["tool_plan"].as_str().expect("plan")).collect();
    assert_eq!(plan, "I will call get_weather.");
    let call = &events[3].1["delta"]["message"]["tool_calls"];
    assert_eq!(
        (call["function"]["name"].as_str(), call["function"]["arguments"].as_str()),
        (Some("get_weather"), Some(""))
    );
    let arguments: String = events[4..6]
        .iter()
        .map(|(_, d)| d["delta"]["message"]["tool_calls"]["function"]["arguments"].as_str().expect("arguments"))
        .collect();
    assert_eq!(serde_json::from_str::<Value>(&arguments).expect("JSON"), json!({"mock": true}));
    assert_eq!(events[7].1["delta"]["finish_reason"], "TOOL_CALL");
    assert_eq!(events[7].1["delta"]["usage"]["tokens"]["output_tokens"], 4);
}

#[tokio::test]
async fn a_cut_stream_closes_the_connection_after_its_deltas() {
    let upstream = start(
        MockProfile::builder().chunks(5).chunk_interval(Latency::ZERO).stream_cut(2, 1.0).build().expect("a profile"),
    );
    let (events, done, end) = stream(&upstream, ask("hi")).await;
    assert!(end.is_err() && !done, "the body must end in an error, not cleanly");
    assert_eq!(names(&events), ["message-start", "content-start", "content-delta", "content-delta"]);
    assert_eq!(upstream.stats().stream_cuts, 1);
}

#[tokio::test]
async fn a_stream_error_is_a_message_end_with_finish_reason_error() {
    let upstream = start(
        MockProfile::builder().chunks(4).chunk_interval(Latency::ZERO).stream_error(2, 1.0).build().expect("a profile"),
    );
    let (events, done, end) = stream(&upstream, ask("hi")).await;
    assert!(end.is_ok() && done);
    assert_eq!(names(&events), ["message-start", "content-start", "content-delta", "content-delta", "message-end"]);
    let delta = &events[4].1["delta"];
    assert_eq!(delta["finish_reason"], "ERROR");
    assert!(delta["error"].as_str().is_some_and(|e| !e.is_empty()), "{delta}");
    assert_eq!(upstream.stats().stream_errors, 1);
}

#[tokio::test]
async fn missing_done_leaves_out_the_terminator() {
    let upstream = start(
        MockProfile::builder().chunks(2).chunk_interval(Latency::ZERO).missing_done(1.0).build().expect("a profile"),
    );
    let (events, done, end) = stream(&upstream, ask("hi")).await;
    assert!(end.is_ok() && !done);
    assert_eq!(events.last().map(|(n, _)| n.as_str()), Some("message-end"));
}

#[tokio::test]
async fn a_stalled_stream_sends_headers_then_nothing_until_shutdown() {
    let upstream = start(MockProfile::builder().stall(1.0).build().expect("a profile"));
    let mut body = ask("hi");
    body["stream"] = json!(true);
    let resp = chat(&upstream, &body).await;
    assert_eq!(
        (resp.status(), &resp.headers()["content-type"]),
        (StatusCode::OK, &"text/event-stream".parse().expect("a header"))
    );
    let mut body = resp.into_body();
    assert!(timeout(Duration::from_millis(300), body.frame()).await.is_err(), "the client gives up waiting");
    assert_eq!(upstream.stats().stalls, 1);
    timeout(BOUND, upstream.shutdown()).await.expect("shut down in time");
}

// === embeddings ===

#[tokio::test]
async fn embed_answers_every_requested_type_for_every_text() {
    let upstream = start(profile());
    let body = json!({
        "model": "embed-v4.0",
        "input_type": "search_document",
        "texts": ["hello", "goodbye"],
        "embedding_types": ["float", "int8", "ubinary", "base64"],
        "output_dimension": 16,
    });
    let answer = json_of(embed(&upstream, &body).await).await;
    assert_eq!(answer["response_type"], "embeddings_by_type");
    assert_eq!(answer["texts"], json!(["hello", "goodbye"]));
    assert_eq!(answer["meta"]["api_version"]["version"], "2");
    assert_eq!(answer["meta"]["billed_units"]["input_tokens"], 3);
    let e = &answer["embeddings"];
    let lens = |kind: &str| {
        e[kind].as_array().expect("a list").iter().map(|v| v.as_array().map_or(0, Vec::len)).collect::<Vec<_>>()
    };
    assert_eq!(lens("float"), [16, 16]);
    assert_eq!(lens("int8"), [16, 16]);
    assert_eq!(lens("ubinary"), [2, 2], "eight signs to a byte");
    assert_eq!(e["base64"].as_array().map(Vec::len), Some(2));
    assert!(e.get("uint8").is_none(), "only the requested types: {e}");
}

#[tokio::test]
async fn embed_defaults_to_floats_and_needs_an_input_type() {
    let upstream = start(profile());
    let body = json!({"model": "embed-v4.0", "input_type": "search_query", "texts": ["q"]});
    let answer = json_of(embed(&upstream, &body).await).await;
    assert_eq!(
        answer["embeddings"].as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["float".to_owned()])
    );
    let body = json!({"model": "embed-v4.0", "texts": ["q"]});
    assert_eq!(
        error_of(embed(&upstream, &body).await).await,
        (StatusCode::BAD_REQUEST, "invalid request: valid input_type must be provided with the provided model".into())
    );
}

#[tokio::test]
async fn embed_takes_at_most_96_texts() {
    let upstream = start(profile());
    let texts: Vec<String> = (0..104).map(|i| format!("t{i}")).collect();
    let body = json!({"model": "embed-v4.0", "input_type": "classification", "texts": texts});
    assert_eq!(
        error_of(embed(&upstream, &body).await).await,
        (StatusCode::BAD_REQUEST, "invalid request: total number of texts must be at most 96 - received 104".into())
    );
}

// === injected failures ===

async fn failing(profile: MockProfile) -> (StatusCode, String, http::HeaderMap) {
    let upstream = start(profile);
    let resp = chat(&upstream, &ask("hi")).await;
    let headers = resp.headers().clone();
    let (status, message) = error_of(resp).await;
    assert_eq!(upstream.stats().failures, 1);
    (status, message, headers)
}

#[tokio::test]
async fn each_injected_status_answers_cohere_s_error_body() {
    for (status, message) in [
        (400, None),
        (401, Some("invalid api token".to_owned())),
        (
            404,
            Some(format!(
                "model '{MODEL}' not found, make sure the correct model ID was used and that you have access to the model."
            )),
        ),
        (500, Some("internal server error, this has been reported to our developers".to_owned())),
        (503, None),
    ] {
        let status = StatusCode::from_u16(status).expect("a status");
        let (got, got_message, _) =
            failing(MockProfile::builder().fail_status(status, 1.0).build().expect("a profile")).await;
        assert_eq!(got, status);
        if let Some(message) = message {
            assert_eq!(got_message, message);
        }
    }
}

#[tokio::test]
async fn a_429_is_the_trial_key_limit_with_retry_after() {
    let profile = MockProfile::builder()
        .fail(Failure::RateLimited, 1.0)
        .retry_after(Duration::from_secs(3))
        .build()
        .expect("a profile");
    let (status, message, headers) = failing(profile).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert!(message.starts_with("You are using a Trial key"), "{message}");
    assert_eq!(headers["retry-after"], "3");
}

#[tokio::test]
async fn context_length_exceeded_is_too_many_tokens() {
    let profile = MockProfile::builder().fail(Failure::ContextWindowExceeded, 1.0).build().expect("a profile");
    let (_, message, _) = failing(profile).await;
    assert!(message.starts_with("too many tokens: total number of tokens in the prompt cannot exceed"), "{message}");
}
