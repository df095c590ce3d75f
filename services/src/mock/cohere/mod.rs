//! The mock's Cohere v2 API: `POST /v2/chat` and `POST /v2/embed` (the deployment's `api_base`
//! is [`origin`](super::MockHandle::origin)), drawn from the same
//! [`MockProfile`](super::MockProfile) as the other routes, in the same order.
//!
//! Requests need `Authorization: Bearer <key>` (else `401 "no api key supplied"`). A Chat body
//! needs `model` and non-empty `messages` of roles `user`, `system` (non-empty content: a string
//! or `text` items), `assistant` (content or `tool_calls`) and `tool` (with `tool_call_id`);
//! `tools` of `{"type":"function","function":{"name",...}}`; `tool_choice` `REQUIRED` (only with
//! tools) or `NONE`; `temperature` in `0..=1`; at most five `stop_sequences`. An Embed body needs
//! `model`, a known `input_type`, and one of `texts` (at most 96), `images` or `inputs`. Refusals,
//! like injected failures, answer Cohere's `{"id","message"}` (messages worded as Cohere's error
//! reference words them: `invalid request: ...`, `invalid api token`, the trial key's rate
//! limit, ...); a failure sends `Retry-After` when the profile sets a delay.
//!
//! The reply is `{id, finish_reason, message, usage}`: the other routes' text as one `text`
//! content item, cut by `stop_sequences` (`STOP_SEQUENCE`) or `max_tokens` (`MAX_TOKENS`), else
//! `COMPLETE`; or, when `tool_choice` is `REQUIRED` (the first tool) or the last user turn says
//! "call a tool" (unless `NONE`), a `tool_plan` and one `tool_calls` entry (arguments
//! `{"mock":true}`) with `TOOL_CALL`. `usage` has `billed_units` and `tokens`, input tokens about
//! one per four characters of the messages' text. A stream (`"stream": true`) sends Cohere's
//! events, each `event: <type>` with data of that `type`: `message-start` (the id, the
//! assistant role), `content-start`, the `content-delta`s, `content-end` (or `tool-plan-delta`s,
//! `tool-call-start`, `tool-call-delta`s, `tool-call-end`), `message-end` with `finish_reason`
//! and `usage`, then `data: [DONE]` (the profile's `missing_done` leaves it out). A stream error
//! drawn by the profile is a `message-end` with `finish_reason: "ERROR"` and `error`, the way the
//! API reports a failure after its `200`. Embeddings are unit vectors (`output_dimension` or the
//! profile's length) in every requested `embedding_types` (`float` by default; `int8`, `uint8`,
//! `binary`, `ubinary` packed eight signs to a byte, `base64` of the little-endian floats).
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
//! let body = json!({"model": "command-a-03-2025", "messages": [{"role": "user", "content": "hi"}]});
//! let req = http::Request::post(format!("{}/v2/chat", upstream.origin()))
//!     .header("content-type", "application/json")
//!     .header("authorization", "Bearer co-test")
//!     .body(Full::new(Bytes::from(body.to_string())))?;
//! let reply: Value = serde_json::from_slice(&client.request(req).await?.into_body().collect().await?.to_bytes())?;
//! assert_eq!(reply["finish_reason"], "COMPLETE");
//! assert_eq!(reply["message"]["content"][0]["type"], "text");
//! assert_eq!(upstream.last_request().map(|r| r.path).as_deref(), Some("/v2/chat"));
//! upstream.shutdown().await;
//! # Ok(()) }
//! ```

mod answer;
mod request;
mod stream;

use std::sync::{Arc, atomic::Ordering};

use axum::{extract::State, response::Response};
use bytes::Bytes;
use http::{HeaderMap, Method, Uri};

use self::{
    request::{Chat, Embed},
    stream::StreamFaults,
};
use super::{
    answer::{pause, stalled},
    server::{MockState, RecordedRequest},
};

/// `POST /v2/chat`: answers as the current profile says.
pub(super) async fn chat(
    State(s): State<Arc<MockState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (request_headers, request) = (headers.clone(), body.clone());
    let (profile, draws, mut rng) = s.admit(RecordedRequest::new(method, &uri, headers, body));
    let (id, auth) = request::admit(&request_headers, &mut rng);
    let call = match auth.and_then(|()| Chat::read(&request, id, &profile)) {
        Ok(call) => call,
        Err(refusal) => return refusal.into_response(id),
    };
    let mut shutdown = s.shutdown.clone();
    pause(draws.latency, &mut shutdown).await;
    if draws.fail {
        s.counters.failures.fetch_add(1, Ordering::Relaxed);
        return answer::failure(&call.model, call.input_tokens, id, &profile);
    }
    if draws.stall {
        s.counters.stalls.fetch_add(1, Ordering::Relaxed);
        return stalled(call.stream, shutdown);
    }
    if call.stream {
        s.count_stream(&draws);
        let faults = StreamFaults {
            cut_after: draws.cut.then_some(profile.cut_after),
            malformed_after: draws.malformed.then_some(profile.malformed_after),
            error_after: draws.stream_error.then_some(profile.stream_error_after),
            no_done: draws.no_done,
        };
        return stream::streaming(&call, profile, rng, faults, shutdown);
    }
    if draws.malformed {
        return answer::truncated(&call, &profile);
    }
    answer::whole(&call, &profile)
}

/// `POST /v2/embed`: embeddings by type, as the current profile says.
pub(super) async fn embed(
    State(s): State<Arc<MockState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (request_headers, request) = (headers.clone(), body.clone());
    let (profile, draws, mut rng) = s.admit(RecordedRequest::new(method, &uri, headers, body));
    let (id, auth) = request::admit(&request_headers, &mut rng);
    let call = match auth.and_then(|()| Embed::read(&request, id, &profile)) {
        Ok(call) => call,
        Err(refusal) => return refusal.into_response(id),
    };
    let mut shutdown = s.shutdown.clone();
    pause(draws.latency, &mut shutdown).await;
    if draws.fail {
        s.counters.failures.fetch_add(1, Ordering::Relaxed);
        return answer::failure(&call.model, call.input_tokens, id, &profile);
    }
    if draws.stall {
        s.counters.stalls.fetch_add(1, Ordering::Relaxed);
        return stalled(false, shutdown);
    }
    answer::embeddings(&call, &mut rng)
}
