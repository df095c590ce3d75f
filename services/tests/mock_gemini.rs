//! The mock upstream's Gemini API over loopback HTTP: the key, request validation, whole answers,
//! function calls, streams (SSE and JSON array), embeddings, injected failures and in-stream
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
const MODEL: &str = "gemini-2.5-flash";

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

/// `POST /v1beta/models/{path}` with `headers` and a raw body.
async fn send(
    upstream: &MockHandle,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> http::Response<Incoming> {
    let mut req = http::Request::post(format!("{}/v1beta/models/{path}", upstream.origin()))
        .header("content-type", "application/json");
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let req = req.body(Full::new(body.into())).expect("a request");
    timeout(BOUND, client().request(req)).await.expect("answered in time").expect("an answer")
}

const KEY: &[(&str, &str)] = &[("x-goog-api-key", "AIza-test")];

/// `generateContent` (or another method) with the API key.
async fn post(upstream: &MockHandle, method: &str, body: &Value) -> http::Response<Incoming> {
    send(upstream, &format!("{MODEL}:{method}"), KEY, body.to_string()).await
}

fn ask(text: &str) -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": text}]}]})
}

async fn body_of(resp: http::Response<Incoming>) -> Bytes {
    timeout(BOUND, resp.into_body().collect()).await.expect("read in time").expect("a whole body").to_bytes()
}

async fn json_of(resp: http::Response<Incoming>) -> Value {
    serde_json::from_slice(&body_of(resp).await).expect("a JSON body")
}

/// The status and the `error` object of a Google error answer, checked to have its shape.
async fn error_of(resp: http::Response<Incoming>) -> (StatusCode, Value) {
    let status = resp.status();
    let body = json_of(resp).await;
    let error = body["error"].clone();
    assert_eq!(error["code"], status.as_u16(), "{body}");
    assert!(error["message"].is_string() && error["status"].is_string(), "{body}");
    (status, error)
}

/// The refusal of `body` sent to `generateContent` with a key: status, canonical code, message.
async fn refusal(body: Value) -> (StatusCode, String, String) {
    let upstream = start(profile());
    let (status, error) = error_of(post(&upstream, "generateContent", &body).await).await;
    let text = |v: &Value| v.as_str().expect("a string").to_owned();
    (status, text(&error["status"]), text(&error["message"]))
}

/// The raw body of a stream, and how it ended.
async fn stream_of(resp: http::Response<Incoming>) -> (Vec<u8>, Result<(), hyper::Error>) {
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

/// The `data:` of each event, as JSON.
fn chunks(raw: &[u8]) -> Vec<Value> {
    SseDecoder::new(1 << 20)
        .push(raw)
        .expect("valid SSE")
        .into_iter()
        .map(|e| {
            assert!(e.event.is_none(), "Gemini's events are unnamed: {e:?}");
            serde_json::from_str(&e.data).expect("JSON data")
        })
        .collect()
}

/// A `?alt=sse` stream of `body`: its chunks and how it ended.
async fn sse(upstream: &MockHandle, body: &Value) -> (Vec<Value>, Result<(), hyper::Error>) {
    let resp = post(upstream, "streamGenerateContent?alt=sse", body).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let (raw, end) = stream_of(resp).await;
    (chunks(&raw), end)
}

fn text_of(response: &Value) -> String {
    response["candidates"][0]["content"]["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

// === the key and the path ===

#[tokio::test]
async fn a_request_without_an_api_key_is_403_permission_denied() {
    let upstream = start(profile());
    let resp = send(&upstream, &format!("{MODEL}:generateContent"), &[], ask("hi").to_string()).await;
    let (status, error) = error_of(resp).await;
    assert_eq!((status, error["status"].as_str()), (StatusCode::FORBIDDEN, Some("PERMISSION_DENIED")));
    assert!(error["message"].as_str().is_some_and(|m| m.contains("unregistered callers")), "{error}");
    assert_eq!(upstream.stats().requests, 1, "a refused request is counted");
}

#[tokio::test]
async fn the_key_may_come_in_the_query() {
    let upstream = start(profile());
    let resp = send(&upstream, &format!("{MODEL}:generateContent?key=AIza-test"), &[], ask("hi").to_string()).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let recorded = upstream.last_request().expect("recorded");
    assert_eq!(recorded.path, format!("/v1beta/models/{MODEL}:generateContent"));
    assert_eq!(recorded.query.as_deref(), Some("key=AIza-test"));
    assert_eq!(recorded.json(), Some(ask("hi")));
}

#[tokio::test]
async fn an_unknown_method_is_404_not_found() {
    let upstream = start(profile());
    let (status, error) = error_of(post(&upstream, "predictLongRunning", &ask("hi")).await).await;
    assert_eq!((status, error["status"].as_str()), (StatusCode::NOT_FOUND, Some("NOT_FOUND")));
}

// === validation ===

#[tokio::test]
async fn contents_are_required() {
    let (status, code, message) = refusal(json!({})).await;
    assert_eq!((status, code.as_str()), (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"));
    assert_eq!(message, "* GenerateContentRequest.contents: contents is not specified\n");
    assert_eq!(refusal(json!({"contents": []})).await.2, message);
}

#[tokio::test]
async fn roles_are_user_or_model() {
    let body = json!({"contents": [{"role": "assistant", "parts": [{"text": "hi"}]}]});
    let (status, code, message) = refusal(body).await;
    assert_eq!((status, code.as_str()), (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"));
    assert_eq!(message, "Please use a valid role: user, model.");
    let roleless = json!({"contents": [{"parts": [{"text": "hi"}]}]});
    let upstream = start(profile());
    assert_eq!(post(&upstream, "generateContent", &roleless).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn parts_must_not_be_empty() {
    let body = json!({"contents": [{"role": "user", "parts": []}]});
    assert_eq!(
        refusal(body).await.2,
        "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.\n"
    );
}

#[tokio::test]
async fn a_part_holds_exactly_one_kind_of_data() {
    let empty = json!({"contents": [{"role": "user", "parts": [{"thought": true}]}]});
    assert_eq!(
        refusal(empty).await.2,
        "* GenerateContentRequest.contents[0].parts[0].data: required oneof field 'data' must have one initialized \
         field\n"
    );
    let both = json!({"contents": [{"role": "user", "parts": [
        {"text": "hi", "inlineData": {"mimeType": "image/png", "data": "AA=="}}
    ]}]});
    let message = refusal(both).await.2;
    assert!(message.starts_with("Invalid value at 'contents[0].parts[0]' (oneof)"), "{message}");
}

#[tokio::test]
async fn unknown_fields_are_refused_where_they_are() {
    let top = json!({"contents": ask("hi")["contents"], "temperature": 0.2});
    assert_eq!(refusal(top).await.2, "Invalid JSON payload received. Unknown name \"temperature\": Cannot find field.");
    let nested = json!({"contents": [{"role": "user", "parts": [{"text": "hi", "type": "text"}]}]});
    assert_eq!(
        refusal(nested).await.2,
        "Invalid JSON payload received. Unknown name \"type\" at 'contents[0].parts[0]': Cannot find field."
    );
}

#[tokio::test]
async fn snake_case_field_names_are_accepted() {
    let upstream = start(profile());
    let mut body = ask("hi");
    body["system_instruction"] = json!({"parts": [{"text": "be brief"}]});
    body["generation_config"] = json!({"max_output_tokens": 2});
    let answer = json_of(post(&upstream, "generateContent", &body).await).await;
    assert_eq!(answer["candidates"][0]["finishReason"], "MAX_TOKENS");
}

// === whole answers ===

#[tokio::test]
async fn a_whole_answer_has_every_field_the_sdk_reads() {
    let upstream = start(profile());
    let answer = json_of(post(&upstream, "generateContent", &ask("hello there")).await).await;
    let candidate = &answer["candidates"][0];
    assert_eq!(candidate["content"]["role"], "model");
    assert_eq!(candidate["finishReason"], "STOP");
    assert_eq!(candidate["index"], 0);
    assert_eq!(text_of(&answer), format!("Mock answer from `{MODEL}`. token1 token2"));
    // "hello there": 11 characters, 3 tokens; one candidate token per piece.
    let usage = &answer["usageMetadata"];
    assert_eq!((usage["promptTokenCount"].as_u64(), usage["candidatesTokenCount"].as_u64()), (Some(3), Some(3)));
    assert_eq!(usage["totalTokenCount"], 6);
    assert_eq!(answer["modelVersion"], MODEL);
    assert!(answer["responseId"].as_str().is_some_and(|id| !id.is_empty()), "{answer}");
}

#[tokio::test]
async fn a_stop_sequence_ends_the_text_with_stop() {
    let upstream = start(profile());
    let mut body = ask("hi");
    body["generationConfig"] = json!({"stopSequences": [" token2"]});
    let answer = json_of(post(&upstream, "generateContent", &body).await).await;
    assert_eq!(text_of(&answer), format!("Mock answer from `{MODEL}`. token1"));
    assert_eq!(answer["candidates"][0]["finishReason"], "STOP");
}

#[tokio::test]
async fn function_calling_mode_any_calls_the_allowed_function() {
    let upstream = start(profile());
    let mut body = ask("what's the weather?");
    body["tools"] = json!([{"functionDeclarations": [
        {"name": "get_time", "parameters": {"type": "object"}},
        {"name": "get_weather", "parameters": {"type": "object"}},
    ]}]);
    body["toolConfig"] = json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}});
    let answer = json_of(post(&upstream, "generateContent", &body).await).await;
    let parts = &answer["candidates"][0]["content"]["parts"];
    assert_eq!(parts, &json!([{"functionCall": {"name": "get_weather", "args": {"mock": true}}}]));
    assert_eq!(answer["candidates"][0]["finishReason"], "STOP");
}

#[tokio::test]
async fn asking_to_call_a_tool_calls_the_first_function_unless_mode_is_none() {
    let upstream = start(profile());
    let mut body = ask("Please call a tool.");
    body["tools"] = json!([{"function_declarations": [{"name": "lookup"}]}]);
    let answer = json_of(post(&upstream, "generateContent", &body).await).await;
    assert_eq!(answer["candidates"][0]["content"]["parts"][0]["functionCall"]["name"], "lookup");
    body["toolConfig"] = json!({"functionCallingConfig": {"mode": "NONE"}});
    let answer = json_of(post(&upstream, "generateContent", &body).await).await;
    assert!(answer["candidates"][0]["content"]["parts"][0]["text"].is_string(), "{answer}");
}

#[tokio::test]
async fn an_unknown_function_calling_mode_is_refused() {
    let mut body = ask("hi");
    body["tools"] = json!([{"functionDeclarations": [{"name": "f"}]}]);
    body["toolConfig"] = json!({"functionCallingConfig": {"mode": "REQUIRED"}});
    let (status, _, message) = refusal(body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(message.starts_with("Invalid value at 'tool_config.function_calling_config.mode'"), "{message}");
}

// === streams ===

#[tokio::test]
async fn an_sse_stream_sends_one_response_per_piece_and_finishes_in_the_last() {
    let upstream = start(profile());
    let resp = post(&upstream, "streamGenerateContent?alt=sse", &ask("hello there")).await;
    let (raw, end) = stream_of(resp).await;
    assert!(end.is_ok());
    let raw = String::from_utf8(raw).expect("UTF-8");
    assert!(raw.starts_with("data: {") && raw.ends_with("}\r\n\r\n") && !raw.contains("[DONE]"), "{raw}");
    let chunks = chunks(raw.as_bytes());
    assert_eq!(chunks.len(), 3);
    let texts: Vec<String> = chunks.iter().map(text_of).collect();
    assert_eq!(texts, [format!("Mock answer from `{MODEL}`."), " token1".into(), " token2".into()]);
    let reasons: Vec<&Value> = chunks.iter().map(|c| &c["candidates"][0]["finishReason"]).collect();
    assert_eq!(reasons, [&Value::Null, &Value::Null, &json!("STOP")]);
    let last = &chunks[2];
    assert_eq!(last["usageMetadata"]["candidatesTokenCount"], 3);
    assert_eq!(last["usageMetadata"]["totalTokenCount"], 6);
    let ids: Vec<&Value> = chunks.iter().map(|c| &c["responseId"]).collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "one response id: {ids:?}");
    assert_eq!(upstream.stats().streams, 1);
}

#[tokio::test]
async fn without_alt_sse_the_stream_is_one_json_array() {
    let upstream = start(profile());
    let resp = post(&upstream, "streamGenerateContent", &ask("hi")).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let (raw, end) = stream_of(resp).await;
    assert!(end.is_ok());
    let array: Vec<Value> = serde_json::from_slice(&raw).expect("a JSON array");
    assert_eq!(array.len(), 3);
    assert_eq!(array[2]["candidates"][0]["finishReason"], "STOP");
}

#[tokio::test]
async fn a_function_call_streams_as_one_chunk() {
    let upstream = start(profile());
    let mut body = ask("hi");
    body["tools"] = json!([{"functionDeclarations": [{"name": "get_weather"}]}]);
    body["toolConfig"] = json!({"functionCallingConfig": {"mode": "ANY"}});
    let (chunks, end) = sse(&upstream, &body).await;
    assert!(end.is_ok());
    assert_eq!(chunks.len(), 1);
    let candidate = &chunks[0]["candidates"][0];
    assert_eq!(candidate["content"]["parts"][0]["functionCall"]["name"], "get_weather");
    assert_eq!(candidate["finishReason"], "STOP");
}

#[tokio::test]
async fn a_cut_stream_closes_the_connection_after_its_chunks() {
    let upstream = start(
        MockProfile::builder().chunks(5).chunk_interval(Latency::ZERO).stream_cut(2, 1.0).build().expect("a profile"),
    );
    let (chunks, end) = sse(&upstream, &ask("hi")).await;
    assert!(end.is_err(), "the body must end in an error, not cleanly");
    assert_eq!(chunks.len(), 2);
    assert!(chunks.iter().all(|c| c["candidates"][0]["finishReason"].is_null()));
    assert_eq!(upstream.stats().stream_cuts, 1);
}

#[tokio::test]
async fn a_stream_error_is_an_unavailable_error_chunk_and_the_end() {
    let upstream = start(
        MockProfile::builder().chunks(4).chunk_interval(Latency::ZERO).stream_error(1, 1.0).build().expect("a profile"),
    );
    let (chunks, end) = sse(&upstream, &ask("hi")).await;
    assert!(end.is_ok());
    assert_eq!(chunks.len(), 2, "{chunks:?}");
    assert_eq!(
        chunks[1],
        json!({"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}})
    );
    assert_eq!(upstream.stats().stream_errors, 1);
}

#[tokio::test]
async fn a_malformed_chunk_is_a_truncated_data_line_then_the_stream_goes_on() {
    let upstream = start(
        MockProfile::builder()
            .chunks(3)
            .chunk_interval(Latency::ZERO)
            .malformed_chunk(1, 1.0)
            .build()
            .expect("a profile"),
    );
    let (raw, end) = stream_of(post(&upstream, "streamGenerateContent?alt=sse", &ask("hi")).await).await;
    assert!(end.is_ok());
    let events = SseDecoder::new(1 << 20).push(&raw).expect("valid SSE");
    let bad = events.iter().filter(|e| serde_json::from_str::<Value>(&e.data).is_err()).count();
    assert_eq!((events.len(), bad), (4, 1), "{events:?}");
}

// === embeddings ===

#[tokio::test]
async fn embed_content_answers_one_embedding_of_the_asked_dimensionality() {
    let upstream = start(profile());
    let body = json!({"content": {"parts": [{"text": "hello"}]}, "outputDimensionality": 4});
    let answer = json_of(post(&upstream, "embedContent", &body).await).await;
    let values = answer["embedding"]["values"].as_array().expect("values");
    assert_eq!(values.len(), 4);
    let norm: f64 = values.iter().map(|v| v.as_f64().expect("a number").powi(2)).sum();
    assert!((norm - 1.0).abs() < 1e-3, "a unit vector: {norm}");
}

#[tokio::test]
async fn batch_embed_contents_answers_one_embedding_per_request() {
    let upstream = start(profile());
    let request = |text: &str| json!({"model": format!("models/{MODEL}"), "content": {"parts": [{"text": text}]}});
    let body = json!({"requests": [request("a"), request("b"), request("c")]});
    let answer = json_of(post(&upstream, "batchEmbedContents", &body).await).await;
    let embeddings = answer["embeddings"].as_array().expect("embeddings");
    assert_eq!(embeddings.len(), 3);
    assert!(embeddings.iter().all(|e| e["values"].as_array().is_some_and(|v| v.len() == 8)), "{answer}");
}

#[tokio::test]
async fn batch_requests_need_a_model_name_and_content() {
    let upstream = start(profile());
    let body = json!({"requests": [{"content": {"parts": [{"text": "a"}]}}]});
    let (status, error) = error_of(post(&upstream, "batchEmbedContents", &body).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error["message"], "* BatchEmbedContentsRequest.requests[0].model: unexpected model name format\n");
    let body = json!({"requests": [{"model": format!("models/{MODEL}")}]});
    let (_, error) = error_of(post(&upstream, "batchEmbedContents", &body).await).await;
    assert_eq!(error["message"], "* BatchEmbedContentsRequest.requests[0].content: content is not specified\n");
}

// === injected failures ===

async fn failing(profile: MockProfile) -> (StatusCode, Value) {
    let upstream = start(profile);
    let resp = post(&upstream, "generateContent", &ask("hi")).await;
    assert!(resp.headers().get("retry-after").is_none(), "Google sends no Retry-After");
    let error = error_of(resp).await;
    assert_eq!(upstream.stats().failures, 1);
    error
}

#[tokio::test]
async fn each_injected_status_answers_its_canonical_code() {
    for (status, code) in [
        (400, "INVALID_ARGUMENT"),
        (401, "UNAUTHENTICATED"),
        (403, "PERMISSION_DENIED"),
        (404, "NOT_FOUND"),
        (500, "INTERNAL"),
        (503, "UNAVAILABLE"),
        (504, "DEADLINE_EXCEEDED"),
    ] {
        let status = StatusCode::from_u16(status).expect("a status");
        let (got, error) = failing(MockProfile::builder().fail_status(status, 1.0).build().expect("a profile")).await;
        assert_eq!((got, error["status"].as_str()), (status, Some(code)));
        assert!(error.get("details").is_none(), "{error}");
    }
}

#[tokio::test]
async fn a_429_is_resource_exhausted_with_retry_info() {
    let profile = MockProfile::builder()
        .fail(Failure::RateLimited, 1.0)
        .retry_after(Duration::from_secs(7))
        .build()
        .expect("a profile");
    let (status, error) = failing(profile).await;
    assert_eq!((status, error["status"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("RESOURCE_EXHAUSTED")));
    let details = error["details"].as_array().expect("details");
    let retry =
        details.iter().find(|d| d["@type"] == "type.googleapis.com/google.rpc.RetryInfo").expect("a RetryInfo detail");
    assert_eq!(retry["retryDelay"], "7s");
    assert!(details.iter().any(|d| d["@type"] == "type.googleapis.com/google.rpc.QuotaFailure"), "{error}");
}

#[tokio::test]
async fn a_fractional_retry_delay_keeps_its_milliseconds() {
    let profile = MockProfile::builder()
        .fail(Failure::RateLimited, 1.0)
        .retry_after(Duration::from_millis(1500))
        .build()
        .expect("a profile");
    let (_, error) = failing(profile).await;
    assert_eq!(error["details"][2]["retryDelay"], "1.500s");
}

#[tokio::test]
async fn context_length_exceeded_is_the_input_token_count_message() {
    let profile = MockProfile::builder().fail(Failure::ContextWindowExceeded, 1.0).build().expect("a profile");
    let (_, error) = failing(profile).await;
    assert_eq!(
        error["message"],
        "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576)."
    );
}

#[tokio::test]
async fn one_profile_draws_the_same_failures_as_the_openai_side() {
    let profile = MockProfile::builder().fail(Failure::Unavailable, 0.5).seed(11).build().expect("a profile");
    let (openai, gemini) = (start(profile.clone()), start(profile));
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
        let resp = post(&gemini, "generateContent", &ask("hi")).await;
        runs.1.push(resp.status());
        body_of(resp).await;
    }
    assert_eq!(runs.0, runs.1);
    assert!(runs.0.contains(&StatusCode::OK) && runs.0.contains(&StatusCode::SERVICE_UNAVAILABLE), "{:?}", runs.0);
}
