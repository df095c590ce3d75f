//! The mock's Google Gemini API: `POST /v1beta/models/{model}:generateContent`,
//! `:streamGenerateContent`, `:embedContent` and `:batchEmbedContents` (the deployment's
//! `api_base` is [`origin`](super::MockHandle::origin)), drawn from the same
//! [`MockProfile`](super::MockProfile) as the other routes, in the same order.
//!
//! Requests are read as Google reads them ([`request`]): an API key in `x-goog-api-key` or
//! `?key=` (without one, `403 PERMISSION_DENIED`), a method the model serves (else `404
//! NOT_FOUND`), and a body with only the documented fields (in either proto JSON spelling,
//! `toolConfig` or `tool_config`): non-empty `contents` of roles `user` or `model` (or none), each
//! with non-empty `parts`, each part holding exactly one of `text`, `inlineData`, `fileData`,
//! `functionCall`, `functionResponse`, `executableCode`, `codeExecutionResult`; function
//! declarations with names. Refusals, like injected failures, answer Google's
//! `{"error":{"code","message","status"}}` worded as Google words them.
//!
//! The answer is a `GenerateContentResponse`: one candidate (`content.parts`, `role: "model"`,
//! `finishReason`, `index`), `usageMetadata` (`promptTokenCount` about one per four characters of
//! `contents` and `systemInstruction`, one `candidatesTokenCount` per text piece,
//! `totalTokenCount`), `modelVersion` (the model asked for) and `responseId`. Its text is the other
//! routes' text, cut by `generationConfig.stopSequences` (`STOP`) or `maxOutputTokens`
//! (`MAX_TOKENS`). With function declarations it is one `functionCall` part (args
//! `{"mock":true}`) when `toolConfig.functionCallingConfig.mode` is `ANY` (the first of
//! `allowedFunctionNames`, else the first declared) or, unless the mode is `NONE`, when the last
//! user turn says "call a tool". `streamGenerateContent` sends one response per piece, paced by
//! the profile's interval, each with the usage so far and the last with `finishReason`: as
//! `data: {...}` events with `?alt=sse` (no `[DONE]`: Google sends none, so `missing_done`
//! changes nothing here), otherwise as one JSON array. A stream error drawn by the profile is a
//! `{"error":{"code":503,...,"status":"UNAVAILABLE"}}` chunk, then the end.
//!
//! Injected failures answer the profile's status with its canonical code (`INVALID_ARGUMENT`,
//! `PERMISSION_DENIED`, `NOT_FOUND`, `RESOURCE_EXHAUSTED`, `INTERNAL`, `UNAVAILABLE`,
//! `DEADLINE_EXCEEDED`, ...); a `429` carries `QuotaFailure`, `Help` and `RetryInfo` details,
//! `retryDelay` being the profile's `retry_after` (`"7s"`, `"1.500s"`) or a minute, and no
//! `Retry-After` header (Google sends none). The `context_length_exceeded` error code is Google's
//! `400` input-token-count message. Embeddings are unit vectors of `outputDimensionality` (or the
//! profile's length): `{"embedding":{"values":[...]}}`, `{"embeddings":[...]}` for a batch.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use bytes::Bytes;
//! use http_body_util::{BodyExt, Full};
//! use hyper_util::{client::legacy::Client, rt::TokioExecutor};
//! use serde_json::{Value, json};
//! use switchyard_services::mock::{MockProfile, MockUpstream};
//!
//! let upstream = MockUpstream::start(MockProfile::healthy())?;
//! let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
//! let body = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
//! let req = http::Request::post(format!("{}/v1beta/models/gemini-2.5-flash:generateContent", upstream.origin()))
//!     .header("content-type", "application/json")
//!     .header("x-goog-api-key", "AIza-test")
//!     .body(Full::new(Bytes::from(body.to_string())))?;
//! let answer: Value = serde_json::from_slice(&client.request(req).await?.into_body().collect().await?.to_bytes())?;
//! assert_eq!(answer["candidates"][0]["finishReason"], "STOP");
//! assert_eq!(answer["modelVersion"], "gemini-2.5-flash");
//! let recorded = upstream.last_request().expect("recorded");
//! assert_eq!(recorded.path, "/v1beta/models/gemini-2.5-flash:generateContent");
//! upstream.shutdown().await;
//! # Ok(()) }
//! ```

mod answer;
mod request;
mod stream;

pub(super) use answer::{error_response, failure_of, unit_vector};

use std::sync::{Arc, atomic::Ordering};

use axum::{
    extract::{Path, State},
    response::Response,
};
use bytes::Bytes;
use http::{HeaderMap, Method, Uri};

use self::{
    request::{Call, Framing},
    stream::StreamFaults,
};
use super::{
    answer::{pause, stalled},
    server::{MockState, RecordedRequest},
};

/// `POST /v1beta/models/{model}:{method}` (one path segment: the method follows the last `:`).
pub(super) async fn models(
    State(s): State<Arc<MockState>>,
    Path(model_and_method): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(&s, &model_and_method, RecordedRequest::new(method, &uri, headers, body), true).await
}

/// Answers one request for `{model}:{method}`; `keyed`: it must carry an API key (Vertex AI's
/// routes, which check a bearer token instead, pass `false`).
pub(super) async fn serve(s: &MockState, model_and_method: &str, req: RecordedRequest, keyed: bool) -> Response {
    let (request_headers, request, query) = (req.headers.clone(), req.body.clone(), req.query.clone());
    let (profile, draws, mut rng) = s.admit(req);
    let read = Call::read(model_and_method, query.as_deref(), (&request_headers, keyed), &request, &profile, &mut rng);
    let call = match read {
        Ok(call) => call,
        Err(refusal) => return refusal.into_response(),
    };
    let mut shutdown = s.shutdown.clone();
    pause(draws.latency, &mut shutdown).await;
    if draws.fail {
        s.counters.failures.fetch_add(1, Ordering::Relaxed);
        return answer::failure(&call, &profile);
    }
    let generate = match call {
        Call::Generate(generate) => generate,
        Call::Embed(embed) => {
            if draws.stall {
                s.counters.stalls.fetch_add(1, Ordering::Relaxed);
                return stalled(false, shutdown);
            }
            return answer::embeddings(&embed, &mut rng);
        }
    };
    if draws.stall {
        s.counters.stalls.fetch_add(1, Ordering::Relaxed);
        return stalled(generate.stream == Some(Framing::Sse), shutdown);
    }
    if let Some(framing) = generate.stream {
        s.count_stream(&draws);
        let faults = StreamFaults {
            cut_after: draws.cut.then_some(profile.cut_after),
            malformed_after: draws.malformed.then_some(profile.malformed_after),
            error_after: draws.stream_error.then_some(profile.stream_error_after),
        };
        return stream::streaming(&generate, framing, profile, rng, faults, shutdown);
    }
    if draws.malformed {
        return answer::truncated(&generate, &profile);
    }
    answer::whole(&generate, &profile)
}
