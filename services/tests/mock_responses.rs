//! The mock upstream's OpenAI Responses API over loopback HTTP: request validation, the whole
//! answer's shape, event streams, function calls, kept responses and follow-ups
//! (`previous_response_id`, GET, DELETE, cancel), injected failures and in-stream faults. Real
//! time, generous bounds, no sleeps for synchronisation.
#![cfg(feature = "mock")]

use std::time::Duration;

use bytes::Bytes;
use futures_util::{StreamExt, stream};
use http::{Method, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
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

/// `method` on `{base_url}{path}` with a raw body.
async fn send(upstream: &MockHandle, method: Method, path: &str, body: impl Into<Bytes>) -> http::Response<Incoming> {
    let req = http::Request::builder()
        .method(method)
        .uri(format!("{}{path}", upstream.base_url()))
        .header("content-type", "application/json")
        .header("authorization", "Bearer sk-test")
        .body(Full::new(body.into()))
        .expect("a request");
    timeout(BOUND, client().request(req)).await.expect("answered in time").expect("an answer")
}

/// `POST /v1/responses` with `body`.
async fn post(upstream: &MockHandle, body: &Value) -> http::Response<Incoming> {
    send(upstream, Method::POST, "/responses", body.to_string()).await
}

fn ask(model: &str, text: &str) -> Value {
    json!({"model": model, "input": text})
}

async fn body_of(resp: http::Response<Incoming>) -> Bytes {
    timeout(BOUND, resp.into_body().collect()).await.expect("read in time").expect("a whole body").to_bytes()
}

async fn json_of(resp: http::Response<Incoming>) -> Value {
    serde_json::from_slice(&body_of(resp).await).expect("a JSON body")
}

/// A whole answer, checked to be a `200`.
async fn answer(upstream: &MockHandle, body: &Value) -> Value {
    let resp = post(upstream, body).await;
    assert_eq!(resp.status(), StatusCode::OK);
    json_of(resp).await
}

/// The status and the `error` object of an OpenAI error answer, checked to have all four
/// members.
async fn error_of(resp: http::Response<Incoming>) -> (StatusCode, Value) {
    let status = resp.status();
    let body = json_of(resp).await;
    let error = body["error"].clone();
    let mut keys: Vec<&str> = error.as_object().expect("an error object").keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "message", "param", "type"], "{body}");
    (status, error)
}

/// The refusal of `body`: its status, message, param and code.
async fn refusal(body: Value) -> (StatusCode, String, Value, Value) {
    let upstream = start(profile());
    let (status, error) = error_of(post(&upstream, &body).await).await;
    assert_eq!(error["type"], "invalid_request_error");
    let message = error["message"].as_str().expect("a message").to_owned();
    (status, message, error["param"].clone(), error["code"].clone())
}

/// The raw body of a stream, and how it ended.
async fn stream_of(resp: http::Response<Incoming>) -> (Vec<u8>, Result<(), hyper::Error>) {
    assert_eq!(resp.status(), StatusCode::OK);
    let content_type = resp.headers()["content-type"].to_str().expect("ASCII");
    assert!(content_type.starts_with("text/event-stream"), "{content_type}");
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

/// Sequence numbers count from 0 without a gap.
fn assert_numbered(events: &[(String, Value)]) {
    let numbers: Vec<u64> = events.iter().map(|(_, d)| d["sequence_number"].as_u64().expect("a number")).collect();
    let expected: Vec<u64> = (0..numbers.len() as u64).collect();
    assert_eq!(numbers, expected);
}

async fn stream(upstream: &MockHandle, mut body: Value) -> (Vec<(String, Value)>, Result<(), hyper::Error>) {
    body["stream"] = json!(true);
    let (raw, end) = stream_of(post(upstream, &body).await).await;
    (events(&raw), end)
}

fn weather_tool() -> Value {
    json!([{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}])
}

// === validation ===

#[tokio::test]
async fn a_body_that_is_not_json_is_400_with_openais_error_shape() {
    let upstream = start(profile());
    let (status, error) = error_of(send(&upstream, Method::POST, "/responses", "{\"model\":").await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        (error["type"].as_str(), &error["param"], &error["code"]),
        (Some("invalid_request_error"), &json!(null), &json!(null))
    );
    assert!(error["message"].as_str().is_some_and(|m| m.starts_with("We could not parse the JSON body")));
}

#[tokio::test]
async fn a_request_without_model_is_400_missing_required_parameter() {
    let refused = refusal(json!({"input": "hi"})).await;
    assert_eq!(
        refused,
        (
            StatusCode::BAD_REQUEST,
            "Missing required parameter: 'model'.".into(),
            json!("model"),
            json!("missing_required_parameter")
        )
    );
}

#[tokio::test]
async fn model_must_be_a_non_empty_string() {
    let (_, message, param, code) = refusal(json!({"model": 4, "input": "hi"})).await;
    assert_eq!(message, "Invalid type for 'model': expected a string, but got an integer instead.");
    assert_eq!((param, code), (json!("model"), json!("invalid_type")));
    let (_, _, param, code) = refusal(json!({"model": "", "input": "hi"})).await;
    assert_eq!((param, code), (json!("model"), json!("empty_string")));
}

#[tokio::test]
async fn a_request_without_input_is_400_missing_required_parameter() {
    let (status, message, param, _) = refusal(json!({"model": "m"})).await;
    assert_eq!(
        (status, message.as_str(), param),
        (StatusCode::BAD_REQUEST, "Missing required parameter: 'input'.", json!("input"))
    );
}

#[tokio::test]
async fn input_must_be_a_string_or_a_list_of_objects() {
    let (_, message, _, code) = refusal(json!({"model": "m", "input": {"role": "user"}})).await;
    assert_eq!(
        message,
        "Invalid type for 'input': expected one of an array of objects or string, but got an object instead."
    );
    assert_eq!(code, "invalid_type");
    let (_, _, param, _) = refusal(json!({"model": "m", "input": ["hi"]})).await;
    assert_eq!(param, "input[0]");
}

#[tokio::test]
async fn an_input_item_of_unknown_type_is_400_invalid_value() {
    let (_, message, param, code) = refusal(json!({"model": "m", "input": [{"type": "chat", "content": "hi"}]})).await;
    assert!(message.starts_with("Invalid value: 'chat'. Supported values are: 'message', "), "{message}");
    assert_eq!((param, code), (json!("input[0].type"), json!("invalid_value")));
}

#[tokio::test]
async fn a_message_needs_a_known_role_and_content() {
    let item = |item: Value| json!({"model": "m", "input": [item]});
    let (_, message, param, _) = refusal(item(json!({"role": "tool", "content": "x"}))).await;
    assert_eq!(message, "Invalid value: 'tool'. Supported values are: 'user', 'assistant', 'system', and 'developer'.");
    assert_eq!(param, "input[0].role");
    let (_, _, param, code) = refusal(item(json!({"type": "message", "content": "x"}))).await;
    assert_eq!((param, code), (json!("input[0].role"), json!("missing_required_parameter")));
    let (_, _, param, _) = refusal(item(json!({"role": "user"}))).await;
    assert_eq!(param, "input[0].content");
}

#[tokio::test]
async fn an_assistant_message_with_input_text_is_400_as_openai_answers() {
    let body = json!({"model": "m", "input": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "input_text", "text": "hello"}]},
    ]});
    let refused = refusal(body).await;
    assert_eq!(
        refused,
        (
            StatusCode::BAD_REQUEST,
            "Invalid value: 'input_text'. Supported values are: 'output_text' and 'refusal'.".into(),
            json!("input[1].content[0]"),
            json!("invalid_value")
        )
    );
}

#[tokio::test]
async fn function_call_items_need_their_ids_and_payloads() {
    let (_, message, param, _) =
        refusal(json!({"model": "m", "input": [{"type": "function_call_output", "output": "{}"}]})).await;
    assert_eq!(
        (message.as_str(), param),
        ("Missing required parameter: 'input[0].call_id'.", json!("input[0].call_id"))
    );
    let (_, _, param, code) = refusal(json!({"model": "m", "input": [
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": {"a": 1}}
    ]}))
    .await;
    assert_eq!((param, code), (json!("input[0].arguments"), json!("invalid_type")));
}

#[tokio::test]
async fn documented_item_kinds_are_accepted() {
    let upstream = start(profile());
    let body = json!({"model": "m", "instructions": "be brief", "input": [
        {"role": "developer", "content": "rules"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "look"},
            {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"},
        ]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok", "annotations": []}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {"type": "item_reference", "id": "msg_1"},
        {"id": "msg_2"},
    ]});
    assert_eq!(answer(&upstream, &body).await["status"], "completed");
}

#[tokio::test]
async fn an_unknown_top_level_field_is_400_unknown_parameter() {
    let mut body = ask("m", "hi");
    body["messages"] = json!([]);
    let refused = refusal(body).await;
    assert_eq!(
        refused,
        (
            StatusCode::BAD_REQUEST,
            "Unknown parameter: 'messages'.".into(),
            json!("messages"),
            json!("unknown_parameter")
        )
    );
}

#[tokio::test]
async fn a_chat_completions_shaped_function_tool_is_400_missing_name() {
    let mut body = ask("m", "hi");
    body["tools"] = json!([{"type": "function", "function": {"name": "f", "parameters": {}}}]);
    let (_, message, param, code) = refusal(body).await;
    assert_eq!(message, "Missing required parameter: 'tools[0].name'.");
    assert_eq!((param, code), (json!("tools[0].name"), json!("missing_required_parameter")));
}

#[tokio::test]
async fn a_tool_of_unknown_type_is_400_invalid_value() {
    let mut body = ask("m", "hi");
    body["tools"] = json!([{"type": "web_search"}, {"type": "retrieval"}]);
    let (_, message, param, code) = refusal(body).await;
    assert!(message.starts_with("Invalid value: 'retrieval'. Supported values are: 'function', "), "{message}");
    assert_eq!((param, code), (json!("tools[1].type"), json!("invalid_value")));
}

#[tokio::test]
async fn flags_must_be_booleans() {
    for key in ["stream", "store", "background"] {
        let mut body = ask("m", "hi");
        body[key] = json!("true");
        let (_, message, param, code) = refusal(body).await;
        assert_eq!(message, format!("Invalid type for '{key}': expected a boolean, but got a string instead."));
        assert_eq!((param, code), (json!(key), json!("invalid_type")));
    }
}

#[tokio::test]
async fn max_output_tokens_below_16_is_400() {
    let mut body = ask("m", "hi");
    body["max_output_tokens"] = json!(8);
    let (_, _, param, code) = refusal(body).await;
    assert_eq!((param, code), (json!("max_output_tokens"), json!("integer_below_min_value")));
}

// === whole answers ===

#[tokio::test]
async fn a_whole_answer_is_a_response_with_every_field_the_sdk_reads() {
    let upstream = start(profile());
    let answer = answer(&upstream, &ask("gpt-x", "12345678")).await;
    let id = answer["id"].as_str().expect("an id");
    assert!(id.starts_with("resp_") && id[5..].chars().all(|c| c.is_ascii_hexdigit()) && id.len() == 53, "{id}");
    assert_eq!(answer["object"], "response");
    assert!(answer["created_at"].is_u64());
    assert!(answer["completed_at"].as_u64() >= answer["created_at"].as_u64());
    assert_eq!(answer["status"], "completed");
    assert_eq!(answer["model"], "gpt-x");
    for null in ["error", "incomplete_details", "instructions", "previous_response_id", "max_output_tokens", "user"] {
        assert_eq!(answer[null], Value::Null, "{null}");
    }
    assert_eq!(answer["parallel_tool_calls"], true);
    assert_eq!(answer["tool_choice"], "auto");
    assert_eq!(answer["tools"], json!([]));
    assert_eq!(answer["store"], true);
    assert_eq!(answer["background"], false);
    assert_eq!(answer["metadata"], json!({}));
    assert_eq!(answer["temperature"], 1.0);
    assert_eq!(answer["top_p"], 1.0);
    assert_eq!(answer["text"], json!({"format": {"type": "text"}, "verbosity": "medium"}));
    assert_eq!(answer["truncation"], "disabled");

    let output = answer["output"].as_array().expect("output");
    assert_eq!(output.len(), 1);
    let message = &output[0];
    assert!(message["id"].as_str().is_some_and(|id| id.starts_with("msg_")));
    assert_eq!((message["type"].as_str(), message["role"].as_str()), (Some("message"), Some("assistant")));
    assert_eq!(message["status"], "completed");
    assert_eq!(
        message["content"],
        json!([{"type": "output_text", "annotations": [], "logprobs": [],
                "text": "Mock answer from `gpt-x`. token1 token2"}])
    );
    assert_eq!(
        answer["usage"],
        json!({
            "input_tokens": 2,
            "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
            "output_tokens": 3,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 5,
        })
    );
}

#[tokio::test]
async fn the_request_settings_are_echoed() {
    let upstream = start(profile());
    let mut body = ask("m", "hi");
    for (key, value) in [
        ("instructions", json!("be brief")),
        ("metadata", json!({"k": "v"})),
        ("temperature", json!(0.2)),
        ("tool_choice", json!("none")),
        ("max_output_tokens", json!(64)),
        ("user", json!("u1")),
    ] {
        body[key] = value;
    }
    body["tools"] = weather_tool();
    let answer = answer(&upstream, &body).await;
    for key in ["instructions", "metadata", "temperature", "tool_choice", "max_output_tokens", "user"] {
        assert_eq!(answer[key], body[key], "{key}");
    }
    assert_eq!(
        answer["tools"],
        json!([{"type": "function", "name": "get_weather", "description": null,
                "parameters": {"type": "object", "properties": {}}, "strict": true}])
    );
}

#[tokio::test]
async fn the_unversioned_and_versioned_paths_are_both_served() {
    let upstream = start(profile());
    let body = ask("m", "hi").to_string();
    let resp = send(&upstream, Method::POST, "/responses", body.clone()).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let req = http::Request::post(format!("{}/responses", upstream.origin()))
        .body(Full::new(Bytes::from(body)))
        .expect("a request");
    let resp = timeout(BOUND, client().request(req)).await.expect("in time").expect("an answer");
    assert_eq!(json_of(resp).await["object"], "response");
    assert_eq!(upstream.last_request().map(|r| r.path).as_deref(), Some("/responses"));
}

#[tokio::test]
async fn max_output_tokens_below_the_chunks_makes_an_incomplete_response() {
    let upstream = start(MockProfile::builder().chunks(20).build().expect("a profile"));
    let mut body = ask("m", "hi");
    body["max_output_tokens"] = json!(16);
    let answer = answer(&upstream, &body).await;
    assert_eq!(answer["status"], "incomplete");
    assert_eq!(answer["incomplete_details"], json!({"reason": "max_output_tokens"}));
    assert_eq!(answer["output"][0]["status"], "incomplete");
    assert_eq!(answer["usage"]["output_tokens"], 16);
    assert_eq!(answer["completed_at"], Value::Null);
}

#[tokio::test]
async fn the_recorded_body_is_the_bytes_sent() {
    let upstream = start(profile());
    let body = "{\"model\":\"m\",  \"input\":\"hi\"}";
    let answer = json_of(send(&upstream, Method::POST, "/responses", body).await).await;
    let recorded = upstream.last_request().expect("a request");
    assert_eq!((recorded.method, recorded.path.as_str()), (Method::POST, "/v1/responses"));
    assert_eq!(recorded.body, body.as_bytes());
    let id = answer["id"].as_str().expect("an id");
    assert_eq!(upstream.stored_response(id).expect("kept").request, body.as_bytes());
}

// === function calls ===

#[tokio::test]
async fn tool_choice_required_answers_a_function_call_of_the_first_function() {
    let upstream = start(profile());
    let mut body = ask("m", "weather?");
    body["tools"] = json!([{"type": "web_search"}, weather_tool()[0], {"type": "function", "name": "other"}]);
    body["tool_choice"] = json!("required");
    let answer = answer(&upstream, &body).await;
    let call = &answer["output"][0];
    assert_eq!((call["type"].as_str(), call["name"].as_str()), (Some("function_call"), Some("get_weather")));
    assert!(call["id"].as_str().is_some_and(|id| id.starts_with("fc_")));
    assert!(call["call_id"].as_str().is_some_and(|id| id.starts_with("call_")));
    assert_eq!((call["arguments"].as_str(), call["status"].as_str()), (Some("{\"mock\":true}"), Some("completed")));
    assert_eq!(answer["usage"]["output_tokens"], 2);
}

#[tokio::test]
async fn tool_choice_naming_a_function_calls_it() {
    let upstream = start(profile());
    let mut body = ask("m", "hi");
    body["tools"] = json!([weather_tool()[0], {"type": "function", "name": "lookup"}]);
    body["tool_choice"] = json!({"type": "function", "name": "lookup"});
    assert_eq!(answer(&upstream, &body).await["output"][0]["name"], "lookup");
}

#[tokio::test]
async fn a_user_asking_to_call_a_tool_gets_a_function_call_under_auto_and_text_under_none() {
    let upstream = start(profile());
    let mut body = json!({"model": "m", "tools": weather_tool(), "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Please call a tool now"}]}
    ]});
    assert_eq!(answer(&upstream, &body).await["output"][0]["type"], "function_call");
    body["tool_choice"] = json!("none");
    assert_eq!(answer(&upstream, &body).await["output"][0]["type"], "message");
    body["tools"] = json!([]);
    body["tool_choice"] = json!("auto");
    assert_eq!(answer(&upstream, &body).await["output"][0]["type"], "message", "no function to call");
}

#[tokio::test]
async fn a_function_call_stream_sends_argument_deltas_then_done() {
    let upstream = start(profile());
    let mut body = ask("m", "call a tool");
    body["tools"] = weather_tool();
    let (events, end) = stream(&upstream, body).await;
    assert!(end.is_ok());
    assert_numbered(&events);
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let added = &events[2].1["item"];
    assert_eq!((added["type"].as_str(), added["status"].as_str()), (Some("function_call"), Some("in_progress")));
    assert_eq!((added["arguments"].as_str(), added["name"].as_str()), (Some(""), Some("get_weather")));
    let item_id = added["id"].as_str().expect("an id");
    let arguments: String = events[3..5]
        .iter()
        .map(|(_, d)| {
            assert_eq!((d["item_id"].as_str(), d["output_index"].as_u64()), (Some(item_id), Some(0)));
            d["delta"].as_str().expect("a delta").to_owned()
        })
        .collect();
    assert_eq!(serde_json::from_str::<Value>(&arguments).expect("whole JSON"), json!({"mock": true}));
    assert_eq!(events[5].1["arguments"], arguments.as_str());
    assert_eq!(events[5].1["name"], "get_weather");
    assert_eq!(events[6].1["item"]["status"], "completed");
    assert_eq!(events[7].1["response"]["output"][0]["call_id"], added["call_id"]);
}

// === streams ===

#[tokio::test]
async fn a_stream_sends_the_documented_event_sequence_with_increasing_sequence_numbers() {
    let interval = Duration::from_millis(30);
    let upstream =
        start(MockProfile::builder().chunks(3).chunk_interval(Latency::fixed(interval)).build().expect("a profile"));
    let mut body = ask("gpt-x", "12345678");
    body["stream"] = json!(true);
    let started = tokio::time::Instant::now();
    let (raw, end) = stream_of(post(&upstream, &body).await).await;
    assert!(end.is_ok(), "a clean end: {end:?}");
    assert!(started.elapsed() >= interval * 3 - Duration::from_millis(5), "paced: {:?}", started.elapsed());
    let raw = String::from_utf8(raw).expect("UTF-8");
    assert!(raw.starts_with("event: response.created\ndata: {"), "{raw}");
    assert!(!raw.contains("[DONE]"));

    let events = events(raw.as_bytes());
    assert_numbered(&events);
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let created = &events[0].1["response"];
    assert_eq!(
        (created["status"].as_str(), &created["output"], &created["usage"]),
        (Some("in_progress"), &json!([]), &Value::Null)
    );
    assert_eq!(created["model"], "gpt-x");
    let item = &events[2].1["item"];
    assert_eq!(item["status"], "in_progress");
    assert_eq!(item["content"], json!([]));
    let item_id = item["id"].as_str().expect("an id");
    assert_eq!(
        (events[3].1["item_id"].as_str(), &events[3].1["part"]),
        (Some(item_id), &json!({"type": "output_text", "annotations": [], "logprobs": [], "text": ""}))
    );
    let text: String = events[4..7]
        .iter()
        .map(|(_, d)| {
            assert_eq!(
                (d["item_id"].as_str(), d["output_index"].as_u64(), d["content_index"].as_u64()),
                (Some(item_id), Some(0), Some(0))
            );
            assert_eq!(d["logprobs"], json!([]));
            assert!(d["obfuscation"].is_string(), "obfuscated by default: {d}");
            d["delta"].as_str().expect("text").to_owned()
        })
        .collect();
    assert_eq!(text, "Mock answer from `gpt-x`. token1 token2");
    assert_eq!(events[7].1["text"], text.as_str());
    assert_eq!(events[8].1["part"]["text"], text.as_str());
    assert_eq!(events[9].1["item"]["status"], "completed");
    let completed = &events[10].1["response"];
    assert_eq!(completed["id"], created["id"]);
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"][0]["content"][0]["text"], text.as_str());
    assert_eq!(completed["usage"]["input_tokens"], 2);
    assert_eq!(completed["usage"]["output_tokens"], 3);
    assert_eq!(completed["usage"]["total_tokens"], 5);
    assert_eq!(upstream.stats().streams, 1);
}

#[tokio::test]
async fn include_obfuscation_false_leaves_deltas_bare() {
    let upstream = start(profile());
    let mut body = ask("m", "hi");
    body["stream_options"] = json!({"include_obfuscation": false});
    let (events, _) = stream(&upstream, body).await;
    let deltas: Vec<_> = events.iter().filter(|(n, _)| n == "response.output_text.delta").collect();
    assert_eq!(deltas.len(), 3);
    assert!(deltas.iter().all(|(_, d)| d.get("obfuscation").is_none()));
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
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
        ]
    );
    assert_eq!(upstream.stats().stream_cuts, 1);
}

#[tokio::test]
async fn a_stream_error_is_an_error_event_then_response_failed() {
    let upstream = start(
        MockProfile::builder().chunks(4).chunk_interval(Latency::ZERO).stream_error(1, 1.0).build().expect("a profile"),
    );
    let (events, end) = stream(&upstream, ask("m", "hi")).await;
    assert!(end.is_ok(), "the body ends cleanly after the failure");
    assert_numbered(&events);
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "error",
            "response.failed",
        ]
    );
    let error = &events[5].1;
    assert_eq!((error["code"].as_str(), &error["param"]), (Some("server_error"), &Value::Null));
    assert!(error["message"].is_string());
    let failed = &events[6].1["response"];
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["code"], "server_error");
    let id = failed["id"].as_str().expect("an id");
    assert_eq!(upstream.stored_response(id).expect("kept").response["status"], "failed");
    assert_eq!(upstream.stats().stream_errors, 1);
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
    let (raw, end) = stream_of(post(&upstream, &body).await).await;
    assert!(end.is_ok());
    let events = SseDecoder::new(1 << 20).push(&raw).expect("valid SSE");
    let bad: Vec<_> = events.iter().filter(|e| serde_json::from_str::<Value>(&e.data).is_err()).collect();
    assert_eq!(bad.len(), 1, "{events:?}");
    assert_eq!(bad[0].event.as_deref(), Some("response.output_text.delta"));
    assert_eq!(events.last().and_then(|e| e.event.as_deref()), Some("response.completed"));
}

#[tokio::test]
async fn a_stalled_stream_sends_headers_then_nothing() {
    let upstream = start(MockProfile::builder().stall(1.0).build().expect("a profile"));
    let mut body = ask("m", "hi");
    body["stream"] = json!(true);
    let resp = post(&upstream, &body).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    assert!(timeout(Duration::from_millis(300), body.frame()).await.is_err(), "the client gives up waiting");
    assert_eq!(upstream.stats().stalls, 1);
    timeout(BOUND, upstream.shutdown()).await.expect("shut down in time");
}

// === kept responses and follow-ups ===

#[tokio::test]
async fn a_follow_up_naming_a_kept_response_continues_the_conversation_here() {
    let upstream = start(profile());
    let first = answer(&upstream, &ask("m", "12345678")).await;
    let first_id = first["id"].as_str().expect("an id");
    assert_eq!(upstream.stats().response_continuations, 0);

    let follow_up =
        json!({"model": "m", "input": [{"role": "user", "content": "1234"}], "previous_response_id": first_id});
    let second = answer(&upstream, &follow_up).await;
    assert_eq!(second["previous_response_id"], first_id);
    // The first turn (2 in, 3 out) is input again, as OpenAI counts it.
    assert_eq!(second["usage"]["input_tokens"], 1 + 5);
    assert_eq!(upstream.stats().response_continuations, 1);

    let second_id = second["id"].as_str().expect("an id");
    assert_eq!(upstream.stored_response_ids(), [first_id, second_id]);
    let kept = upstream.stored_response(second_id).expect("kept");
    assert_eq!(kept.previous_response_id.as_deref(), Some(first_id));
    assert_eq!(kept.input, [json!({"role": "user", "content": "1234"})]);
    assert_eq!(kept.output(), second["output"].as_array().expect("output").as_slice());
    assert_eq!(
        upstream.stored_response(first_id).expect("kept").input,
        [json!({"role": "user", "content": "12345678"})],
        "a string input is kept as one user message"
    );
}

#[tokio::test]
async fn an_unknown_previous_response_id_is_400_previous_response_not_found() {
    let mut body = ask("m", "hi");
    body["previous_response_id"] = json!("resp_nowhere");
    let refused = refusal(body).await;
    assert_eq!(
        refused,
        (
            StatusCode::BAD_REQUEST,
            "Previous response with id 'resp_nowhere' not found.".into(),
            json!("previous_response_id"),
            json!("previous_response_not_found")
        )
    );
}

#[tokio::test]
async fn a_response_is_known_only_to_the_server_that_created_it() {
    let (here, there) = (start(profile()), start(profile()));
    let first = answer(&here, &ask("m", "hi")).await;
    let mut follow_up = ask("m", "more");
    follow_up["previous_response_id"] = first["id"].clone();
    let (status, error) = error_of(post(&there, &follow_up).await).await;
    assert_eq!((status, error["code"].as_str()), (StatusCode::BAD_REQUEST, Some("previous_response_not_found")));
    assert_eq!(post(&here, &follow_up).await.status(), StatusCode::OK);
    assert_eq!((here.stats().response_continuations, there.stats().response_continuations), (1, 0));
}

#[tokio::test]
async fn store_false_keeps_nothing() {
    let upstream = start(profile());
    let mut body = ask("m", "hi");
    body["store"] = json!(false);
    let answer = answer(&upstream, &body).await;
    assert_eq!(answer["store"], false);
    assert!(upstream.stored_response_ids().is_empty());
    let path = format!("/responses/{}", answer["id"].as_str().expect("an id"));
    assert_eq!(send(&upstream, Method::GET, &path, Bytes::new()).await.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn get_answers_the_kept_response_and_404_for_an_unknown_one() {
    let upstream = start(profile());
    let created = answer(&upstream, &ask("m", "hi")).await;
    let path = format!("/responses/{}", created["id"].as_str().expect("an id"));
    let got = send(&upstream, Method::GET, &path, Bytes::new()).await;
    assert_eq!(got.status(), StatusCode::OK);
    assert_eq!(json_of(got).await, created);

    let (status, error) = error_of(send(&upstream, Method::GET, "/responses/resp_nowhere", Bytes::new()).await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        error,
        json!({
            "message": "Response with id 'resp_nowhere' not found.",
            "type": "invalid_request_error",
            "param": null,
            "code": null,
        })
    );
}

#[tokio::test]
async fn delete_forgets_the_response() {
    let upstream = start(profile());
    let created = answer(&upstream, &ask("m", "hi")).await;
    let id = created["id"].as_str().expect("an id");
    let path = format!("/responses/{id}");
    let deleted = send(&upstream, Method::DELETE, &path, Bytes::new()).await;
    assert_eq!(deleted.status(), StatusCode::OK);
    assert_eq!(json_of(deleted).await, json!({"id": id, "object": "response", "deleted": true}));
    assert!(upstream.stored_response(id).is_none());
    assert_eq!(send(&upstream, Method::GET, &path, Bytes::new()).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(send(&upstream, Method::DELETE, &path, Bytes::new()).await.status(), StatusCode::NOT_FOUND);
    let mut follow_up = ask("m", "more");
    follow_up["previous_response_id"] = json!(id);
    assert_eq!(post(&upstream, &follow_up).await.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn cancelling_a_synchronous_response_is_400() {
    let upstream = start(profile());
    let created = answer(&upstream, &ask("m", "hi")).await;
    let path = format!("/responses/{}/cancel", created["id"].as_str().expect("an id"));
    let (status, error) = error_of(send(&upstream, Method::POST, &path, Bytes::new()).await).await;
    assert_eq!(
        (status, error["message"].as_str()),
        (StatusCode::BAD_REQUEST, Some("Cannot cancel a synchronous response."))
    );
    let (status, _) =
        error_of(send(&upstream, Method::POST, "/responses/resp_nowhere/cancel", Bytes::new()).await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_background_response_is_queued_then_completed_and_cancel_makes_it_cancelled() {
    let upstream = start(profile());
    let mut body = ask("m", "hi");
    body["background"] = json!(true);
    let queued = answer(&upstream, &body).await;
    assert_eq!((queued["status"].as_str(), queued["background"].as_bool()), (Some("queued"), Some(true)));
    assert_eq!((&queued["output"], &queued["usage"]), (&json!([]), &Value::Null));
    let id = queued["id"].as_str().expect("an id");

    let got = json_of(send(&upstream, Method::GET, &format!("/responses/{id}"), Bytes::new()).await).await;
    assert_eq!(got["status"], "completed");
    let cancelled = send(&upstream, Method::POST, &format!("/responses/{id}/cancel"), Bytes::new()).await;
    assert_eq!(cancelled.status(), StatusCode::OK);
    let cancelled = json_of(cancelled).await;
    assert_eq!((cancelled["id"].as_str(), cancelled["status"].as_str()), (Some(id), Some("cancelled")));
    let got = json_of(send(&upstream, Method::GET, &format!("/responses/{id}"), Bytes::new()).await).await;
    assert_eq!(got["status"], "cancelled");
}

#[tokio::test]
async fn at_most_ten_thousand_responses_are_kept_the_oldest_forgotten_first() {
    let upstream = start(MockProfile::healthy());
    let client = client();
    let url = format!("{}/responses", upstream.base_url());
    let body = Bytes::from(ask("m", "hi").to_string());
    let ids: Vec<String> = stream::iter(0..10_001)
        .map(|_| {
            let req = http::Request::post(&url).body(Full::new(body.clone())).expect("a request");
            let client = client.clone();
            async move {
                let resp = timeout(BOUND, client.request(req)).await.expect("in time").expect("an answer");
                json_of(resp).await["id"].as_str().expect("an id").to_owned()
            }
        })
        .buffered(16)
        .collect()
        .await;
    let kept = upstream.stored_response_ids();
    assert_eq!(kept.len(), 10_000);
    assert!(upstream.stored_response(&ids[0]).is_none(), "the oldest is forgotten");
    assert!(upstream.stored_response(&ids[10_000]).is_some());
    let mut follow_up = ask("m", "more");
    follow_up["previous_response_id"] = json!(ids[0]);
    assert_eq!(post(&upstream, &follow_up).await.status(), StatusCode::BAD_REQUEST);
}

// === injected failures ===

async fn failing(status: u16, code: Option<&str>) -> (MockHandle, http::Response<Incoming>) {
    let status = StatusCode::from_u16(status).expect("a status");
    let mut profile = MockProfile::builder().fail_status(status, 1.0);
    if let Some(code) = code {
        profile = profile.error_code(code);
    }
    let upstream = start(profile.build().expect("a profile"));
    let resp = post(&upstream, &ask("gpt-x", "hi")).await;
    (upstream, resp)
}

#[tokio::test]
async fn each_injected_status_answers_an_openai_error_body() {
    for (status, kind, code) in [
        (400, "invalid_request_error", None),
        (401, "invalid_request_error", Some("invalid_api_key")),
        (404, "invalid_request_error", Some("model_not_found")),
        (500, "server_error", None),
        (503, "server_error", None),
    ] {
        let (upstream, resp) = failing(status, None).await;
        let (got, error) = error_of(resp).await;
        assert_eq!((got.as_u16(), error["type"].as_str(), error["code"].as_str()), (status, Some(kind), code));
        assert_eq!(upstream.stats().failures, 1);
        assert!(upstream.stored_response_ids().is_empty(), "a failed request keeps nothing");
    }
}

#[tokio::test]
async fn context_length_exceeded_names_the_input() {
    let (_, resp) = failing(400, Some("context_length_exceeded")).await;
    let (_, error) = error_of(resp).await;
    assert_eq!((error["param"].as_str(), error["code"].as_str()), (Some("input"), Some("context_length_exceeded")));
}

#[tokio::test]
async fn a_429_sends_retry_after_and_the_request_rate_limit_headers() {
    let profile = MockProfile::builder()
        .fail(Failure::RateLimited, 1.0)
        .retry_after(Duration::from_millis(1500))
        .build()
        .expect("a profile");
    let upstream = start(profile);
    let resp = post(&upstream, &ask("m", "hi")).await;
    let headers = resp.headers().clone();
    let (status, error) = error_of(resp).await;
    assert_eq!((status, error["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("rate_limit_exceeded")));
    assert_eq!(headers["retry-after"], "2");
    assert_eq!(headers["retry-after-ms"], "1500");
    assert_eq!(headers["x-ratelimit-remaining-requests"], "0");
    assert_eq!(headers["x-ratelimit-reset-requests"], "1.5s");
}

#[tokio::test]
async fn follow_ups_draw_injected_failures_too() {
    let upstream = start(profile());
    let created = answer(&upstream, &ask("m", "hi")).await;
    upstream.set_profile(MockProfile::builder().fail(Failure::Unavailable, 1.0).build().expect("a profile"));
    let path = format!("/responses/{}", created["id"].as_str().expect("an id"));
    let (status, error) = error_of(send(&upstream, Method::GET, &path, Bytes::new()).await).await;
    assert_eq!((status, error["type"].as_str()), (StatusCode::SERVICE_UNAVAILABLE, Some("server_error")));
}

#[tokio::test]
async fn one_profile_draws_the_same_failures_as_the_chat_route() {
    let profile = MockProfile::builder().fail(Failure::Unavailable, 0.5).seed(11).build().expect("a profile");
    let (chat, responses) = (start(profile.clone()), start(profile));
    let mut runs = (Vec::new(), Vec::new());
    for _ in 0..24 {
        let chat_body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).to_string();
        let resp = send(&chat, Method::POST, "/chat/completions", chat_body).await;
        runs.0.push(resp.status());
        body_of(resp).await;
        let resp = post(&responses, &ask("m", "hi")).await;
        runs.1.push(resp.status());
        body_of(resp).await;
    }
    assert_eq!(runs.0, runs.1);
    assert!(runs.0.contains(&StatusCode::OK) && runs.0.contains(&StatusCode::SERVICE_UNAVAILABLE), "{:?}", runs.0);
}

#[tokio::test]
async fn a_get_needs_no_body() {
    let upstream = start(profile());
    let created = answer(&upstream, &ask("m", "hi")).await;
    let req =
        http::Request::get(format!("{}/responses/{}", upstream.base_url(), created["id"].as_str().expect("an id")))
            .body(Empty::<Bytes>::new())
            .expect("a request");
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let resp = timeout(BOUND, client.request(req)).await.expect("in time").expect("an answer");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(upstream.last_request().map(|r| r.method), Some(Method::GET));
}
