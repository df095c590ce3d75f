//! The mock upstream's AWS Bedrock Runtime API over loopback HTTP: authentication, Converse
//! validation, whole answers, ConverseStream's event-stream frames (decoded with AWS's own
//! decoder, which checks both CRCs), tool use, Titan and Cohere embeddings, injected failures and
//! in-stream faults. Real time, generous bounds, no sleeps for synchronisation.
#![cfg(feature = "mock")]

use std::time::Duration;

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder, write_message_to};
use aws_smithy_types::event_stream::Message;
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
    mock::{BedrockAuth, MockHandle, MockProfile, MockUpstream},
    profile::{Failure, Latency},
};
use tokio::time::timeout;

/// Far above anything a loopback answer needs: only a broken server hits it.
const BOUND: Duration = Duration::from_secs(10);

/// A cross-region inference profile id, URL-encoded as a client sends it.
const PROFILE_ID: &str = "us.anthropic.claude-3-5-sonnet-20241022-v2%3A0";
const SIGNATURE: &str = "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024";

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

/// SigV4-shaped headers for `key_id` in `region`, scoped to `service`.
fn sigv4(key_id: &str, region: &str, service: &str) -> Vec<(String, String)> {
    vec![
        (
            "authorization".to_owned(),
            format!(
                "AWS4-HMAC-SHA256 Credential={key_id}/20250101/{region}/{service}/aws4_request, \
                 SignedHeaders=content-type;host;x-amz-date, Signature={SIGNATURE}"
            ),
        ),
        ("x-amz-date".to_owned(), "20250101T120000Z".to_owned()),
    ]
}

fn signed() -> Vec<(String, String)> {
    sigv4("AKIDEXAMPLE", "us-east-1", "bedrock")
}

/// `POST {path}` with `headers` and a raw body.
async fn send(
    upstream: &MockHandle,
    path: &str,
    headers: &[(String, String)],
    body: impl Into<Bytes>,
) -> http::Response<Incoming> {
    let mut req =
        http::Request::post(format!("{}{path}", upstream.origin())).header("content-type", "application/json");
    for (name, value) in headers {
        req = req.header(name.as_str(), value.as_str());
    }
    let req = req.body(Full::new(body.into())).expect("a request");
    timeout(BOUND, client().request(req)).await.expect("answered in time").expect("an answer")
}

async fn converse(upstream: &MockHandle, body: Value) -> http::Response<Incoming> {
    send(upstream, &format!("/model/{PROFILE_ID}/converse"), &signed(), body.to_string()).await
}

fn ask(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": [{"text": text}]}]})
}

async fn body_of(resp: http::Response<Incoming>) -> Bytes {
    timeout(BOUND, resp.into_body().collect()).await.expect("read in time").expect("a whole body").to_bytes()
}

async fn json_of(resp: http::Response<Incoming>) -> Value {
    serde_json::from_slice(&body_of(resp).await).expect("a JSON body")
}

/// The status, the exception name (`x-amzn-errortype` up to its first `:`) and the message.
async fn error_of(resp: http::Response<Incoming>) -> (StatusCode, String, String) {
    let status = resp.status();
    let kind = resp.headers().get("x-amzn-errortype").expect("x-amzn-errortype").to_str().expect("ASCII");
    let kind = kind.split(':').next().unwrap_or_default().to_owned();
    let body = json_of(resp).await;
    (status, kind, body["message"].as_str().expect("a message").to_owned())
}

async fn refusal(body: Value) -> (StatusCode, String, String) {
    let upstream = start(profile());
    error_of(converse(&upstream, body).await).await
}

/// The raw body of a stream, and how it ended.
async fn stream_of(resp: http::Response<Incoming>) -> (Vec<u8>, Result<(), hyper::Error>) {
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/vnd.amazon.eventstream");
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

/// The messages of an event-stream body (each one's CRCs checked by the decoder), and the bytes
/// left over that make no whole message.
fn decode(raw: &[u8]) -> (Vec<Message>, usize) {
    let mut decoder = MessageFrameDecoder::new();
    let mut buf = Bytes::copy_from_slice(raw);
    let mut messages = Vec::new();
    while let DecodedFrame::Complete(message) = decoder.decode_frame(&mut buf).expect("valid frames") {
        messages.push(message);
    }
    let whole: usize = messages
        .iter()
        .map(|m| {
            let mut out = Vec::new();
            write_message_to(m, &mut out).expect("re-encodes");
            out.len()
        })
        .sum();
    (messages, raw.len() - whole)
}

fn header(message: &Message, name: &str) -> Option<String> {
    let header = message.headers().iter().find(|h| h.name().as_str() == name)?;
    header.value().as_string().ok().map(|s| s.as_str().to_owned())
}

/// A decoded event: its `:event-type` and JSON payload, its other headers checked.
fn event(message: &Message) -> (String, Value) {
    assert_eq!(header(message, ":message-type").as_deref(), Some("event"));
    assert_eq!(header(message, ":content-type").as_deref(), Some("application/json"));
    let kind = header(message, ":event-type").expect(":event-type");
    (kind, serde_json::from_slice(message.payload()).expect("a JSON payload"))
}

async fn stream(upstream: &MockHandle, body: Value) -> (Vec<u8>, Result<(), hyper::Error>) {
    let resp = send(upstream, &format!("/model/{PROFILE_ID}/converse-stream"), &signed(), body.to_string()).await;
    stream_of(resp).await
}

// === authentication ===

#[tokio::test]
async fn a_request_without_authorization_is_403_missing_authentication_token() {
    let upstream = start(profile());
    let resp = send(&upstream, &format!("/model/{PROFILE_ID}/converse"), &[], ask("hi").to_string()).await;
    let (status, kind, message) = error_of(resp).await;
    assert_eq!(
        (status, kind.as_str(), message.as_str()),
        (StatusCode::FORBIDDEN, "MissingAuthenticationTokenException", "Missing Authentication Token")
    );
}

#[tokio::test]
async fn a_signature_scoped_to_another_service_is_403_invalid_signature() {
    let upstream = start(profile());
    let resp = send(
        &upstream,
        &format!("/model/{PROFILE_ID}/converse"),
        &sigv4("AKID", "us-east-1", "s3"),
        ask("hi").to_string(),
    )
    .await;
    let (status, kind, message) = error_of(resp).await;
    assert_eq!((status, kind.as_str()), (StatusCode::FORBIDDEN, "InvalidSignatureException"));
    assert!(message.contains("'bedrock'"), "{message}");
}

#[tokio::test]
async fn a_signature_without_x_amz_date_is_403_incomplete_signature() {
    let upstream = start(profile());
    let headers: Vec<_> = signed().into_iter().filter(|(name, _)| name != "x-amz-date").collect();
    let resp = send(&upstream, &format!("/model/{PROFILE_ID}/converse"), &headers, ask("hi").to_string()).await;
    let (status, kind, _) = error_of(resp).await;
    assert_eq!((status, kind.as_str()), (StatusCode::FORBIDDEN, "IncompleteSignatureException"));
}

#[tokio::test]
async fn configured_credentials_refuse_another_key_id_and_region() {
    let upstream = start(profile());
    upstream.set_bedrock_auth(BedrockAuth::new().access_key_id("AKIDEXAMPLE").region("us-east-1").api_key("br-key"));
    let path = format!("/model/{PROFILE_ID}/converse");
    let ok = send(&upstream, &path, &signed(), ask("hi").to_string()).await;
    assert_eq!(ok.status(), StatusCode::OK);
    let other_key = send(&upstream, &path, &sigv4("AKIDOTHER", "us-east-1", "bedrock"), ask("hi").to_string()).await;
    assert_eq!(error_of(other_key).await.1, "UnrecognizedClientException");
    let other_region =
        send(&upstream, &path, &sigv4("AKIDEXAMPLE", "eu-west-3", "bedrock"), ask("hi").to_string()).await;
    assert_eq!(error_of(other_region).await.1, "InvalidSignatureException");
    let bearer = |key: &str| vec![("authorization".to_owned(), format!("Bearer {key}"))];
    assert_eq!(send(&upstream, &path, &bearer("br-key"), ask("hi").to_string()).await.status(), StatusCode::OK);
    let wrong = send(&upstream, &path, &bearer("other"), ask("hi").to_string()).await;
    assert_eq!(error_of(wrong).await.1, "UnrecognizedClientException");
}

/// A request to `path` signed by AWS's own signer with `secret`, its body then replaced by
/// `sent` (a tampered body when it differs from `body`).
async fn send_signed(
    upstream: &MockHandle,
    path: &str,
    secret: &str,
    body: &str,
    sent: &str,
) -> http::Response<Incoming> {
    use aws_credential_types::Credentials;
    use aws_sigv4::{
        http_request::{SignableBody, SignableRequest, SigningSettings, sign},
        sign::v4,
    };
    use aws_smithy_runtime_api::client::identity::Identity;

    let url = format!("{}{path}", upstream.origin());
    let identity: Identity = Credentials::new("AKIDEXAMPLE", secret, None, None, "test").into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region("us-east-1")
        .name("bedrock")
        .time(std::time::SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .expect("signing params")
        .into();
    let headers = [("content-type", "application/json")];
    let signable = SignableRequest::new("POST", &url, headers.into_iter(), SignableBody::Bytes(body.as_bytes()))
        .expect("a signable request");
    let (instructions, _) = sign(signable, &params).expect("signed").into_parts();
    let mut req = http::Request::post(&url).header("content-type", "application/json");
    for (name, value) in instructions.headers() {
        req = req.header(name, value);
    }
    let req = req.body(Full::new(Bytes::copy_from_slice(sent.as_bytes()))).expect("a request");
    timeout(BOUND, client().request(req)).await.expect("answered in time").expect("an answer")
}

#[tokio::test]
async fn a_signature_is_recomputed_when_the_secret_key_is_known() {
    let upstream = start(profile());
    let secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    upstream.set_bedrock_auth(
        BedrockAuth::new().access_key_id("AKIDEXAMPLE").secret_access_key(secret).region("us-east-1"),
    );
    let path = format!("/model/{PROFILE_ID}/converse");
    let body = ask("hi").to_string();
    assert_eq!(send_signed(&upstream, &path, secret, &body, &body).await.status(), StatusCode::OK);
    let tampered = send_signed(&upstream, &path, secret, &body, &ask("bye").to_string()).await;
    assert_eq!(error_of(tampered).await.1, "InvalidSignatureException");
    let wrong_secret = send_signed(&upstream, &path, "not-the-secret", &body, &body).await;
    assert_eq!(error_of(wrong_secret).await.1, "InvalidSignatureException");
    // The shape-only signature of the other tests cannot pass a recomputation.
    assert_eq!(error_of(converse(&upstream, ask("hi")).await).await.1, "InvalidSignatureException");
}

// === validation ===

#[tokio::test]
async fn messages_are_required() {
    let (status, kind, message) = refusal(json!({"system": [{"text": "be brief"}]})).await;
    assert_eq!((status, kind.as_str()), (StatusCode::BAD_REQUEST, "ValidationException"));
    assert!(message.contains("'messages'") && message.contains("must not be null"), "{message}");
}

#[tokio::test]
async fn a_conversation_must_start_with_user_and_alternate() {
    let (_, kind, message) = refusal(json!({"messages": [{"role": "assistant", "content": [{"text": "hi"}]}]})).await;
    assert_eq!(kind, "ValidationException");
    assert!(message.starts_with("A conversation must start with a user message"), "{message}");
    let twice = json!({"messages": [{"role": "user", "content": [{"text": "a"}]}, {"role": "user", "content": [{"text": "b"}]}]});
    let (_, _, message) = refusal(twice).await;
    assert!(message.starts_with("A conversation must alternate between user and assistant roles"), "{message}");
}

#[tokio::test]
async fn a_role_other_than_user_or_assistant_is_refused() {
    let (status, _, message) = refusal(json!({"messages": [{"role": "system", "content": [{"text": "x"}]}]})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(message.contains("'messages.1.member.role'") && message.contains("[user, assistant]"), "{message}");
}

#[tokio::test]
async fn empty_content_and_blocks_without_one_member_are_refused() {
    let (_, _, message) = refusal(json!({"messages": [{"role": "user", "content": []}]})).await;
    assert!(message.contains("messages.0 is empty"), "{message}");
    let (status, kind, _) =
        refusal(json!({"messages": [{"role": "user", "content": [{"text": "a", "image": {}}]}]})).await;
    assert_eq!((status, kind.as_str()), (StatusCode::BAD_REQUEST, "ValidationException"));
}

#[tokio::test]
async fn inference_config_bounds_are_checked() {
    let mut body = ask("hi");
    body["inferenceConfig"] = json!({"maxTokens": 0});
    assert!(refusal(body.clone()).await.2.contains("inferenceConfig.maxTokens"));
    body["inferenceConfig"] = json!({"temperature": 1.5});
    assert!(refusal(body).await.2.contains("inferenceConfig.temperature"));
}

#[tokio::test]
async fn tool_results_need_a_tool_config() {
    let body = json!({"messages": [
        {"role": "user", "content": [{"text": "weather?"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "w", "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "sunny"}]}}]},
    ]});
    let (_, _, message) = refusal(body).await;
    assert!(message.starts_with("The toolConfig field must be defined"), "{message}");
}

// === whole answers ===

#[tokio::test]
async fn a_whole_answer_has_the_documented_shape() {
    let upstream = start(profile());
    let resp = converse(&upstream, ask("hello there")).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers().contains_key("x-amzn-requestid"));
    let answer = json_of(resp).await;
    let message = &answer["output"]["message"];
    assert_eq!(message["role"], "assistant");
    let text = message["content"][0]["text"].as_str().expect("a text block");
    assert_eq!(text, "Mock answer from `us.anthropic.claude-3-5-sonnet-20241022-v2:0`. token1 token2");
    assert_eq!(answer["stopReason"], "end_turn");
    assert_eq!(answer["usage"], json!({"inputTokens": 3, "outputTokens": 3, "totalTokens": 6}));
    assert!(answer["metrics"]["latencyMs"].is_u64());
    let recorded = upstream.last_request().expect("recorded");
    assert_eq!(recorded.path, format!("/model/{PROFILE_ID}/converse"));
    assert_eq!(upstream.stats().requests, 1);
}

#[tokio::test]
async fn an_arn_model_id_is_served_too() {
    let upstream = start(profile());
    let arn =
        "arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.meta.llama3-1-8b-instruct-v1%3A0";
    let answer =
        json_of(send(&upstream, &format!("/model/{arn}/converse"), &signed(), ask("hi").to_string()).await).await;
    let text = answer["output"]["message"]["content"][0]["text"].as_str().expect("text");
    assert!(
        text.contains("arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.meta.llama3-1-8b-instruct-v1:0"),
        "{text}"
    );
}

#[tokio::test]
async fn max_tokens_and_stop_sequences_cut_the_answer() {
    let upstream = start(profile());
    let mut body = ask("hi");
    body["inferenceConfig"] = json!({"maxTokens": 2});
    let answer = json_of(converse(&upstream, body.clone()).await).await;
    assert_eq!(
        (answer["stopReason"].as_str(), answer["usage"]["outputTokens"].as_u64()),
        (Some("max_tokens"), Some(2))
    );
    body["inferenceConfig"] = json!({"stopSequences": ["token2"]});
    let answer = json_of(converse(&upstream, body).await).await;
    assert_eq!(answer["stopReason"], "stop_sequence");
    assert!(!answer["output"]["message"]["content"][0]["text"].as_str().expect("text").contains("token2"));
}

fn with_tools(mut body: Value, choice: Option<Value>) -> Value {
    let spec = |name: &str| json!({"toolSpec": {"name": name, "inputSchema": {"json": {"type": "object"}}}});
    body["toolConfig"] = json!({"tools": [spec("get_weather"), spec("get_time")]});
    if let Some(choice) = choice {
        body["toolConfig"]["toolChoice"] = choice;
    }
    body
}

#[tokio::test]
async fn tool_choice_any_or_tool_answers_a_tool_use() {
    let upstream = start(profile());
    let answer = json_of(converse(&upstream, with_tools(ask("hi"), Some(json!({"any": {}})))).await).await;
    assert_eq!(answer["stopReason"], "tool_use");
    let tool_use = &answer["output"]["message"]["content"][0]["toolUse"];
    assert_eq!((tool_use["name"].as_str(), &tool_use["input"]), (Some("get_weather"), &json!({"mock": true})));
    assert!(tool_use["toolUseId"].as_str().is_some_and(|id| !id.is_empty()));
    let named =
        json_of(converse(&upstream, with_tools(ask("hi"), Some(json!({"tool": {"name": "get_time"}})))).await).await;
    assert_eq!(named["output"]["message"]["content"][0]["toolUse"]["name"], "get_time");
    let auto = json_of(converse(&upstream, with_tools(ask("hi"), Some(json!({"auto": {}})))).await).await;
    assert_eq!(auto["stopReason"], "end_turn");
}

#[tokio::test]
async fn a_user_asking_to_call_a_tool_gets_a_tool_use() {
    let upstream = start(profile());
    let answer = json_of(converse(&upstream, with_tools(ask("Please call a tool."), None)).await).await;
    assert_eq!(answer["stopReason"], "tool_use");
    assert_eq!(answer["output"]["message"]["content"][0]["toolUse"]["name"], "get_weather");
}

// === streams ===

#[tokio::test]
async fn a_stream_sends_the_documented_events_in_valid_frames() {
    let upstream = start(profile());
    let (raw, end) = stream(&upstream, ask("hello there")).await;
    assert!(end.is_ok());
    let (messages, left) = decode(&raw);
    assert_eq!(left, 0);
    let events: Vec<(String, Value)> = messages.iter().map(event).collect();
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "messageStart",
            "contentBlockDelta",
            "contentBlockDelta",
            "contentBlockDelta",
            "contentBlockStop",
            "messageStop",
            "metadata"
        ]
    );
    assert_eq!(events[0].1, json!({"role": "assistant"}));
    let text: String = events[1..4]
        .iter()
        .map(|(_, e)| {
            assert_eq!(e["contentBlockIndex"], 0);
            e["delta"]["text"].as_str().expect("text").to_owned()
        })
        .collect();
    assert_eq!(text, "Mock answer from `us.anthropic.claude-3-5-sonnet-20241022-v2:0`. token1 token2");
    assert_eq!(events[4].1, json!({"contentBlockIndex": 0}));
    assert_eq!(events[5].1, json!({"stopReason": "end_turn"}));
    assert_eq!(events[6].1["usage"], json!({"inputTokens": 3, "outputTokens": 3, "totalTokens": 6}));
    assert!(events[6].1["metrics"]["latencyMs"].is_u64());
    assert_eq!(upstream.stats().streams, 1);
}

#[tokio::test]
async fn a_tool_use_stream_starts_its_block_and_streams_the_input() {
    let upstream = start(profile());
    let (raw, _) = stream(&upstream, with_tools(ask("hi"), Some(json!({"any": {}})))).await;
    let events: Vec<(String, Value)> = decode(&raw).0.iter().map(event).collect();
    let start = events.iter().find(|(k, _)| k == "contentBlockStart").expect("contentBlockStart");
    assert_eq!(start.1["start"]["toolUse"]["name"], "get_weather");
    assert_eq!(start.1["contentBlockIndex"], 0);
    let input: String = events
        .iter()
        .filter(|(k, _)| k == "contentBlockDelta")
        .map(|(_, e)| e["delta"]["toolUse"]["input"].as_str().expect("input piece").to_owned())
        .collect();
    assert_eq!(serde_json::from_str::<Value>(&input).expect("JSON input"), json!({"mock": true}));
    let stop = events.iter().find(|(k, _)| k == "messageStop").expect("messageStop");
    assert_eq!(stop.1["stopReason"], "tool_use");
}

#[tokio::test]
async fn a_stream_error_is_an_exception_frame_that_ends_the_body() {
    let stream_error = |code: Option<&str>| {
        let b = MockProfile::builder().chunks(4).chunk_interval(Latency::ZERO).stream_error(2, 1.0);
        match code {
            Some(code) => b.error_code(code),
            None => b,
        }
        .build()
        .expect("a profile")
    };
    for (code, expected) in [(None, "modelStreamErrorException"), (Some("throttlingException"), "throttlingException")]
    {
        let upstream = start(stream_error(code));
        let (raw, end) = stream(&upstream, ask("hi")).await;
        assert!(end.is_ok(), "the body ends cleanly");
        let (messages, left) = decode(&raw);
        assert_eq!(left, 0);
        let last = messages.last().expect("frames");
        assert_eq!(header(last, ":message-type").as_deref(), Some("exception"));
        assert_eq!(header(last, ":exception-type").as_deref(), Some(expected));
        assert_eq!(header(last, ":content-type").as_deref(), Some("application/json"));
        let payload: Value = serde_json::from_slice(last.payload()).expect("JSON");
        assert!(payload["message"].is_string());
        let deltas =
            messages.iter().filter(|m| header(m, ":event-type").as_deref() == Some("contentBlockDelta")).count();
        assert_eq!(deltas, 2);
        assert_eq!(upstream.stats().stream_errors, 1);
    }
}

#[tokio::test]
async fn a_cut_stream_ends_mid_frame() {
    let profile =
        MockProfile::builder().chunks(5).chunk_interval(Latency::ZERO).stream_cut(2, 1.0).build().expect("a profile");
    let upstream = start(profile);
    let (raw, end) = stream(&upstream, ask("hi")).await;
    assert!(end.is_err(), "the connection drops");
    let (messages, left) = decode(&raw);
    assert!(left > 0, "half a frame is left over");
    let kinds: Vec<String> = messages.iter().map(|m| event(m).0).collect();
    assert_eq!(kinds, ["messageStart", "contentBlockDelta", "contentBlockDelta"]);
    assert_eq!(upstream.stats().stream_cuts, 1);
}

#[tokio::test]
async fn a_malformed_frame_fails_its_crc() {
    let profile = MockProfile::builder()
        .chunks(3)
        .chunk_interval(Latency::ZERO)
        .malformed_chunk(1, 1.0)
        .build()
        .expect("a profile");
    let upstream = start(profile);
    let (raw, _) = stream(&upstream, ask("hi")).await;
    let mut decoder = MessageFrameDecoder::new();
    let mut buf = Bytes::from(raw);
    let mut failed = false;
    while !failed {
        match decoder.decode_frame(&mut buf) {
            Ok(DecodedFrame::Complete(_)) => {}
            Ok(DecodedFrame::Incomplete) => break,
            Err(_) => failed = true,
        }
    }
    assert!(failed, "a frame with a wrong CRC");
}

// === embeddings ===

#[tokio::test]
async fn titan_embeds_input_text() {
    let upstream = start(MockProfile::builder().embedding_dims(4).build().expect("a profile"));
    let path = "/model/amazon.titan-embed-text-v2%3A0/invoke";
    let resp = send(&upstream, path, &signed(), json!({"inputText": "hello world!"}).to_string()).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["x-amzn-bedrock-input-token-count"], "3");
    let answer = json_of(resp).await;
    assert_eq!(answer["embedding"].as_array().map(Vec::len), Some(4));
    assert_eq!(answer["inputTextTokenCount"], 3);
    let sized =
        json_of(send(&upstream, path, &signed(), json!({"inputText": "x", "dimensions": 256}).to_string()).await).await;
    assert_eq!(sized["embedding"].as_array().map(Vec::len), Some(256));
    let (status, kind, message) =
        error_of(send(&upstream, path, &signed(), json!({"text": "x"}).to_string()).await).await;
    assert_eq!((status, kind.as_str()), (StatusCode::BAD_REQUEST, "ValidationException"));
    assert!(message.starts_with("Malformed input request: #: "), "{message}");
}

#[tokio::test]
async fn cohere_embeds_texts() {
    let upstream = start(MockProfile::builder().embedding_dims(4).build().expect("a profile"));
    let path = "/model/cohere.embed-english-v3/invoke";
    let body = json!({"texts": ["a", "b"], "input_type": "search_document"});
    let answer = json_of(send(&upstream, path, &signed(), body.to_string()).await).await;
    let embeddings = answer["embeddings"].as_array().expect("a list of vectors");
    assert_eq!(embeddings.len(), 2);
    assert_eq!(embeddings[0].as_array().map(Vec::len), Some(4));
    assert_eq!(answer["texts"], json!(["a", "b"]));
    assert_eq!(answer["response_type"], "embeddings_floats");
    assert!(answer["id"].is_string());
    let (_, _, message) = error_of(send(&upstream, path, &signed(), json!({"texts": ["a"]}).to_string()).await).await;
    assert_eq!(
        message,
        "Malformed input request: #: required key [input_type] not found, please reformat your input and try again."
    );
}

// === injected failures ===

#[tokio::test]
async fn injected_failures_carry_bedrock_exception_types() {
    let cases = [
        (429, "ThrottlingException"),
        (400, "ValidationException"),
        (403, "AccessDeniedException"),
        (404, "ResourceNotFoundException"),
        (408, "ModelTimeoutException"),
        (424, "ModelErrorException"),
        (500, "InternalServerException"),
        (503, "ServiceUnavailableException"),
    ];
    for (status, expected) in cases {
        let status = StatusCode::from_u16(status).expect("a status");
        let upstream = start(MockProfile::builder().fail_status(status, 1.0).build().expect("a profile"));
        let (got, kind, message) = error_of(converse(&upstream, ask("hi")).await).await;
        assert_eq!((got, kind.as_str()), (status, expected));
        assert!(!message.is_empty());
        assert_eq!(upstream.stats().failures, 1);
    }
}

#[tokio::test]
async fn a_context_length_failure_says_the_input_is_too_long() {
    let profile = MockProfile::builder().fail(Failure::ContextWindowExceeded, 1.0).build().expect("a profile");
    let upstream = start(profile);
    let (status, kind, message) = error_of(converse(&upstream, ask("hi")).await).await;
    assert_eq!((status, kind.as_str()), (StatusCode::BAD_REQUEST, "ValidationException"));
    assert_eq!(message, "Input is too long for requested model.");
}

#[tokio::test]
async fn a_failed_stream_request_is_an_http_error_not_a_frame() {
    let upstream = start(MockProfile::builder().fail(Failure::RateLimited, 1.0).build().expect("a profile"));
    let resp = send(&upstream, &format!("/model/{PROFILE_ID}/converse-stream"), &signed(), ask("hi").to_string()).await;
    assert_eq!(error_of(resp).await.1, "ThrottlingException");
}
