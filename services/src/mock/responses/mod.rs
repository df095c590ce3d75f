//! The mock's OpenAI Responses API: `POST /v1/responses` (and `/responses`), `GET` and `DELETE
//! /v1/responses/{id}`, `POST /v1/responses/{id}/cancel`, drawn from the same
//! [`MockProfile`](super::MockProfile) as the chat and Anthropic routes, with the responses it
//! answered kept per server so follow-ups (`previous_response_id`, retrieval, deletion,
//! cancellation) only work on the server that created them.
//!
//! Requests are read as strictly as OpenAI reads them ([`request`]): `model` (a non-empty
//! string), `input` (a string, or items of known `type`s: messages of roles `user`, `assistant`,
//! `system`, `developer` with content parts of their role's kinds, function calls and their
//! outputs, ...), `tools` of known types with function tools in the flat shape (`name` at the
//! top), only the documented body fields; the first problem is a `400`
//! `{"error":{"message","type":"invalid_request_error","param","code"}}` worded as OpenAI words
//! it. A `previous_response_id` this server does not keep (never created here, `store: false`,
//! deleted, or evicted past [`CAPACITY`](store::CAPACITY) responses) is `400`
//! `previous_response_not_found`.
//!
//! The answer is a `response` object with every field OpenAI's SDK reads, echoing the request's
//! settings: a `message` with one `output_text` (the chat side's text, one output token per
//! chunk; cut by `max_output_tokens` into an `incomplete` response), or a `function_call` of
//! the function `tool_choice` forces (`"required"`: the first) or, under `"auto"`, of the first
//! function when the last input item is a user message saying "call a tool"; its arguments are
//! `{"mock":true}`. Input tokens are about one per four characters of `instructions` and the
//! input, plus the previous response's total tokens. A stream sends `response.created`,
//! `response.in_progress`, `response.output_item.added`, `response.content_part.added`, the
//! `response.output_text.delta`s (or `response.function_call_arguments.delta`s) paced by the
//! profile's interval, the matching `.done` events, `response.output_item.done` and
//! `response.completed`, each `event: <type>` with a `data:` of that `type` and an increasing
//! `sequence_number`, and no `[DONE]` (OpenAI sends none, so the profile's `missing_done` changes
//! nothing here). A stream error drawn by the profile is an `error` event (`server_error`) then
//! `response.failed`, and the kept response is `failed`. Injected failures answer OpenAI's error
//! bodies, a `429` with `x-ratelimit-remaining-requests: 0` and `x-ratelimit-reset-requests`.
//!
//! `background: true` answers at once with the response `queued`; the mock finishes it at once,
//! so a `GET` finds it `completed`, and `cancel` (only for background responses: otherwise `400
//! Cannot cancel a synchronous response.`) answers it `cancelled` and keeps it so. Retrieval,
//! deletion and cancellation draw latency and injected failures from the profile like any
//! request; an unknown id is `404`. `GET ...?stream=true` (replaying a stream) and `GET
//! .../input_items` are not served.
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
//! let ask = |body: Value| {
//!     http::Request::post(format!("{}/responses", upstream.base_url()))
//!         .header("content-type", "application/json")
//!         .body(Full::new(Bytes::from(body.to_string())))
//! };
//! let first = client.request(ask(json!({"model": "gpt-4o", "input": "hi"}))?).await?;
//! let first: Value = serde_json::from_slice(&first.into_body().collect().await?.to_bytes())?;
//! assert_eq!((first["object"].as_str(), first["status"].as_str()), (Some("response"), Some("completed")));
//!
//! let follow_up = json!({"model": "gpt-4o", "input": "and then?", "previous_response_id": first["id"]});
//! let second = client.request(ask(follow_up)?).await?;
//! assert_eq!(second.status(), 200);
//! assert_eq!(upstream.stats().response_continuations, 1);
//! assert_eq!(upstream.stored_response_ids().len(), 2);
//! upstream.shutdown().await;
//! # Ok(()) }
//! ```

mod answer;
mod input;
mod request;
mod store;
mod stream;

use std::sync::{Arc, atomic::Ordering};

use axum::{
    extract::{Path, State},
    response::Response,
};
use bytes::Bytes;
use http::{HeaderMap, Method, Uri};
use serde_json::json;

pub(super) use store::Store;
pub use store::StoredResponse;

use self::{
    answer::Plan,
    request::{Call, Refusal},
    stream::StreamFaults,
};
use super::{
    MockHandle,
    answer::{pause, stalled},
    server::{MockState, RecordedRequest},
};

/// `POST /v1/responses`: answers as the current profile says.
pub(super) async fn create(
    State(s): State<Arc<MockState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = body.clone();
    let (profile, draws, mut rng) = s.admit(RecordedRequest::new(method, &uri, headers, body));
    let call = match Call::read(&request, &s.responses, &profile, &mut rng) {
        Ok(call) => call,
        Err(refusal) => return refusal.into_response(),
    };
    if call.previous.is_some() {
        s.counters.response_continuations.fetch_add(1, Ordering::Relaxed);
    }
    let mut shutdown = s.shutdown.clone();
    pause(draws.latency, &mut shutdown).await;
    if draws.fail {
        s.counters.failures.fetch_add(1, Ordering::Relaxed);
        return answer::failure(&call.model, call.input_tokens, &profile);
    }
    if draws.stall {
        s.counters.stalls.fetch_add(1, Ordering::Relaxed);
        return stalled(call.stream, shutdown);
    }
    let plan = Plan::of(&call, &profile);
    if call.stream {
        s.count_stream(&draws);
        let faults = StreamFaults {
            cut_after: draws.cut.then_some(profile.cut_after),
            malformed_after: draws.malformed.then_some(profile.malformed_after),
            error_after: draws.stream_error.then_some(profile.stream_error_after),
        };
        let failed = call.finished(&plan, true, None);
        if call.store {
            let kept = if draws.stream_error { failed.clone() } else { call.finished(&plan, false, None) };
            s.responses.insert(call.stored(kept, request));
        }
        return stream::streaming(&call, &plan, failed, profile, rng, faults, shutdown);
    }
    let finished = call.finished(&plan, false, profile.huge_bytes);
    if call.store {
        s.responses.insert(call.stored(finished.clone(), request));
    }
    let answer = if call.background { call.response("queued", Vec::new(), serde_json::Value::Null) } else { finished };
    if draws.malformed {
        return answer::truncated(&answer);
    }
    answer::ok(&answer)
}

/// `GET /v1/responses/{id}`: the kept response.
pub(super) async fn retrieve(
    State(s): State<Arc<MockState>>,
    Path(id): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    follow_up(&s, &id, RecordedRequest::new(method, &uri, headers, Bytes::new()), |s, id| {
        s.responses.get(id).map(|kept| answer::ok(&kept.response))
    })
    .await
}

/// `DELETE /v1/responses/{id}`: forgets the response.
pub(super) async fn delete(
    State(s): State<Arc<MockState>>,
    Path(id): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    follow_up(&s, &id, RecordedRequest::new(method, &uri, headers, Bytes::new()), |s, id| {
        s.responses.remove(id).then(|| answer::ok(&json!({"id": id, "object": "response", "deleted": true})))
    })
    .await
}

/// `POST /v1/responses/{id}/cancel`: a background response, `cancelled`.
pub(super) async fn cancel(
    State(s): State<Arc<MockState>>,
    Path(id): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    follow_up(&s, &id, RecordedRequest::new(method, &uri, headers, body), |s, id| {
        let kept = s.responses.get(id)?;
        if !kept.background() {
            return Some(Refusal::not_background().into_response());
        }
        let cancelled = s.responses.update(id, |response| {
            response["status"] = json!("cancelled");
            response["completed_at"] = json!(null);
        })?;
        Some(answer::ok(&cancelled))
    })
    .await
}

/// A request about response `id`: counted and recorded, paused and failed as the profile draws,
/// then answered by `answer`, or `404` when `id` is not kept.
async fn follow_up(
    s: &MockState,
    id: &str,
    req: RecordedRequest,
    answer: impl FnOnce(&MockState, &str) -> Option<Response>,
) -> Response {
    let (profile, draws, _) = s.admit(req);
    let mut shutdown = s.shutdown.clone();
    pause(draws.latency, &mut shutdown).await;
    if draws.fail {
        s.counters.failures.fetch_add(1, Ordering::Relaxed);
        let model = s.responses.get(id).and_then(|k| k.response.get("model")?.as_str().map(str::to_owned));
        return answer::failure(model.as_deref().unwrap_or("unknown"), 1, &profile);
    }
    answer(s, id).unwrap_or_else(|| Refusal::not_found(id).into_response())
}

impl MockHandle {
    /// The ids of the Responses API responses this server keeps, oldest first (at most
    /// 10,000: past that the oldest are forgotten).
    pub fn stored_response_ids(&self) -> Vec<String> {
        self.shared.responses.ids()
    }

    /// A response this server keeps, with the input and body of the request that created it.
    pub fn stored_response(&self, id: &str) -> Option<StoredResponse> {
        self.shared.responses.get(id).map(|kept| StoredResponse::clone(&kept))
    }
}
