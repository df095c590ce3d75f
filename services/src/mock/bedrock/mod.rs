//! The mock's AWS Bedrock Runtime API, written from AWS's API reference (botocore's
//! `bedrock-runtime` model, the Converse / ConverseStream / InvokeModel pages and the event stream
//! encoding), not from the gateway's dialect code, so that it checks that code independently.
//!
//! Routes (the deployment's `api_base` is [`MockHandle::origin`](super::MockHandle::origin)):
//!
//! - `POST /model/{modelId}/converse`: a `ConverseResponse`
//!   (`{"output":{"message":{...}},"stopReason":...,"usage":{...},"metrics":{"latencyMs":...}}`).
//! - `POST /model/{modelId}/converse-stream`: the same answer as an
//!   `application/vnd.amazon.eventstream` body, one binary frame per event (prelude, headers
//!   `:event-type`, `:content-type`, `:message-type`, JSON payload, CRC32s): `messageStart`,
//!   `contentBlockStart` (tool use blocks only: a text block starts with its first delta, as
//!   Bedrock does), `contentBlockDelta`s paced by the profile's chunk interval, `contentBlockStop`,
//!   `messageStop`, `metadata` (usage and metrics).
//! - `POST /model/{modelId}/invoke`: Titan text embeddings (`amazon.titan-embed-*`:
//!   `{"inputText"}` → `{"embedding","inputTextTokenCount"}`) and Cohere embeddings
//!   (`cohere.embed-*`: `{"texts","input_type"}` → `{"embeddings","id","response_type","texts"}`).
//!
//! The model id is one path segment, percent-decoded: ARNs and inference profile ids
//! (`us.anthropic.claude-3-5-sonnet-20241022-v2:0`) arrive URL-encoded. Every request must be
//! signed with SigV4 (an `Authorization: AWS4-HMAC-SHA256 Credential=.../bedrock/aws4_request,
//! SignedHeaders=..., Signature=...` header and `x-amz-date`; the shape, the scope's service, date
//! and region are checked, and the signature is recomputed once the secret key is known, see
//! [`BedrockAuth`]) or carry a Bedrock API key
//! (`Authorization: Bearer ...`); otherwise `403`. Errors are AWS's restJson1 errors: the status,
//! `x-amzn-errortype: <Exception>:<namespace URL>` (clients keep what precedes the first `:`) and
//! `{"message": ...}`; injected failures take the type of their status (`429`
//! ThrottlingException, `400` ValidationException, `403` AccessDeniedException, `404`
//! ResourceNotFoundException, `408` ModelTimeoutException, `424` ModelErrorException, `500`
//! InternalServerException, `503` ServiceUnavailableException), and the profile's
//! [`error_code`](super::MockProfileBuilder::error_code) `context_length_exceeded` makes a
//! ValidationException saying the input is too long. No `Retry-After`: Bedrock sends none.
//!
//! In a stream, the profile's `stream_error` draw sends an exception frame (`:message-type`
//! `exception`, `:exception-type` `modelStreamErrorException`, or the one the profile's
//! `error_code` names: `throttlingException`, `internalServerException`,
//! `serviceUnavailableException`, `validationException`) and ends the body; a cut sends half of the
//! next frame and drops the connection; a malformed draw sends a frame with a wrong message CRC,
//! then goes on; a `missing_done` draw ends the stream after `messageStop`, without `metadata`.
//!
//! The answer's text is the OpenAI side's (one output token per piece), cut by
//! `inferenceConfig.maxTokens` (`max_tokens`) or `stopSequences` (`stop_sequence`); a `toolUse`
//! block with input `{"mock":true}` answers a `toolChoice` of `any` (the first tool) or `tool`, or
//! a last user text asking to "call a tool" when tools are given (`stopReason` `tool_use`).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use bytes::Bytes;
//! use http_body_util::{BodyExt, Full};
//! use hyper_util::{client::legacy::Client, rt::TokioExecutor};
//! use switchyard_services::mock::{MockProfile, MockUpstream};
//!
//! let upstream = MockUpstream::start(MockProfile::healthy())?;
//! let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
//! let model = "us.anthropic.claude-3-5-sonnet-20241022-v2%3A0";
//! let req = http::Request::post(format!("{}/model/{model}/converse", upstream.origin()))
//!     .header("content-type", "application/json")
//!     .header("authorization", "Bearer bedrock-api-key-test")
//!     .body(Full::new(Bytes::from_static(br#"{"messages":[{"role":"user","content":[{"text":"hi"}]}]}"#)))?;
//! let body = client.request(req).await?.into_body().collect().await?.to_bytes();
//! let answer: serde_json::Value = serde_json::from_slice(&body)?;
//! assert_eq!(answer["stopReason"], "end_turn");
//! assert_eq!(answer["output"]["message"]["role"], "assistant");
//! upstream.shutdown().await;
//! # Ok(()) }
//! ```

mod answer;
mod auth;
mod converse;
mod embed;
mod stream;

use std::sync::{Arc, atomic::Ordering};

use axum::{
    extract::{Path, State},
    response::Response,
};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Uri, header};
use rand::RngCore;

pub use auth::BedrockAuth;
pub(super) use auth::Keys;

use self::{converse::Converse, stream::StreamFaults};
use super::{
    answer as common,
    server::{MockState, RecordedRequest},
};

/// The event-stream media type of ConverseStream.
pub(super) const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

/// `POST /model/{modelId}/converse`.
pub(super) async fn converse(
    State(s): State<Arc<MockState>>,
    Path(model): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let req = RecordedRequest::new(method, &uri, headers, body);
    serve_converse(&s, model, false, uri, req).await
}

/// `POST /model/{modelId}/converse-stream`.
pub(super) async fn converse_stream(
    State(s): State<Arc<MockState>>,
    Path(model): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let req = RecordedRequest::new(method, &uri, headers, body);
    serve_converse(&s, model, true, uri, req).await
}

/// `POST /model/{modelId}/invoke`: the embedding models.
pub(super) async fn invoke(
    State(s): State<Arc<MockState>>,
    Path(model): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let req = RecordedRequest::new(method, &uri, headers, body);
    let (method, headers, body) = (req.method.clone(), req.headers.clone(), req.body.clone());
    let (profile, draws, mut rng) = s.admit(req);
    let request_id = answer::request_id(&mut rng);
    if let Err(refusal) = s.bedrock.check(&method, &uri, &headers, &body) {
        return refusal.into_response(&request_id);
    }
    let call = match embed::Embed::read(&model, &body, &profile) {
        Ok(call) => call,
        Err(refusal) => return refusal.into_response(&request_id),
    };
    let mut shutdown = s.shutdown.clone();
    common::pause(draws.latency, &mut shutdown).await;
    if draws.fail {
        s.counters.failures.fetch_add(1, Ordering::Relaxed);
        return answer::failure(&profile).into_response(&request_id);
    }
    if draws.stall {
        s.counters.stalls.fetch_add(1, Ordering::Relaxed);
        return common::stalled(false, shutdown);
    }
    call.answer(&profile, &mut rng, draws.latency, &request_id)
}

/// Answers one Converse or ConverseStream request as the current profile says, with the same
/// draws as the other dialects.
async fn serve_converse(s: &MockState, model: String, stream: bool, uri: Uri, req: RecordedRequest) -> Response {
    let (method, headers, body) = (req.method.clone(), req.headers.clone(), req.body.clone());
    let (profile, draws, mut rng) = s.admit(req);
    let request_id = answer::request_id(&mut rng);
    if let Err(refusal) = s.bedrock.check(&method, &uri, &headers, &body) {
        return refusal.into_response(&request_id);
    }
    let call = match Converse::read(model, &body, &profile, rng.next_u64()) {
        Ok(call) => call,
        Err(refusal) => return refusal.into_response(&request_id),
    };
    let mut shutdown = s.shutdown.clone();
    common::pause(draws.latency, &mut shutdown).await;
    if draws.fail {
        s.counters.failures.fetch_add(1, Ordering::Relaxed);
        return answer::failure(&profile).into_response(&request_id);
    }
    if draws.stall {
        s.counters.stalls.fetch_add(1, Ordering::Relaxed);
        let mut resp = common::stalled(stream, shutdown);
        if stream {
            resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
        }
        return resp;
    }
    let plan = call.plan(&profile);
    if stream {
        s.count_stream(&draws);
        let faults = StreamFaults {
            cut_after: draws.cut.then_some(profile.cut_after),
            malformed_after: draws.malformed.then_some(profile.malformed_after),
            error_after: draws.stream_error.then_some(profile.stream_error_after),
            no_metadata: draws.no_done,
        };
        return stream::streaming(&call, &plan, profile, rng, faults, draws.latency, shutdown, &request_id);
    }
    answer::whole(&call, &plan, &profile, draws.latency, draws.malformed, &request_id)
}
