//! The mock's answers: whole completions, paced streams, embeddings, injected failures, stalls.

use std::{
    io,
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use axum::{body::Body, response::Response};
use bytes::Bytes;
use futures_util::stream;
use http::{HeaderValue, StatusCode, header};
use rand::{Rng, RngCore, rngs::SmallRng};
use serde_json::{Map, Value};
use tokio::sync::watch;

use super::MockProfile;
use crate::openai::wire::{sse, to_json};
use crate::openai::{
    ApiError, ChatChunk, ChatCompletion, ChatDelta, ChatMessage, ChunkChoice, Embedding, EmbeddingResponse,
    EmbeddingUsage, ErrorResponse, UsageBody,
};

/// The context window the mock's `context_length_exceeded` error names.
const CONTEXT_WINDOW: u64 = 8192;

/// What the mock serves at a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Api {
    Chat,
    Embeddings,
}

/// One request, read.
#[derive(Debug)]
pub(super) struct Call {
    api: Api,
    model: String,
    pub(super) stream: bool,
    include_usage: bool,
    prompt_tokens: u64,
    inputs: usize,
    id: String,
    created: u64,
}

impl Call {
    /// Reads the request body; what is wrong with it when it is not an OpenAI request (see
    /// [`invalid`]).
    pub(super) fn read(
        body: &[u8],
        api: Api,
        azure_deployment: Option<&str>,
        profile: &MockProfile,
        rng: &mut SmallRng,
    ) -> Result<Self, &'static str> {
        let Ok(Value::Object(req)) = serde_json::from_slice::<Value>(body) else {
            return Err("We could not parse the JSON body of your request (mock).");
        };
        let model = match (req.get("model").and_then(Value::as_str), azure_deployment) {
            (Some(m), _) if !m.is_empty() => m.to_owned(),
            (_, Some(d)) => d.to_owned(),
            _ => return Err("you must provide a model parameter (mock)"),
        };
        let stream = api == Api::Chat && req.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let include_usage =
            req.get("stream_options").and_then(|o| o.get("include_usage")).and_then(Value::as_bool).unwrap_or(false);
        let (chars, inputs) = match api {
            Api::Chat => (chat_chars(&req), 0),
            Api::Embeddings => embedding_inputs(req.get("input")),
        };
        let prompt_tokens = profile.prompt_tokens.unwrap_or_else(|| chars.div_ceil(4).max(1));
        let prefix = if api == Api::Chat { "chatcmpl" } else { "emb" };
        let id = format!("{prefix}-mock{:016x}", rng.next_u64());
        let created = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Ok(Self { api, model, stream, include_usage, prompt_tokens, inputs, id, created })
    }

    fn piece(&self, i: u32) -> String {
        piece(&self.model, i)
    }

    fn usage(&self, profile: &MockProfile) -> UsageBody {
        UsageBody::new(self.prompt_tokens, u64::from(profile.chunks))
    }

    fn chunk(&self) -> ChatChunk {
        ChatChunk::new(&self.id, &self.model, self.created)
    }
}

/// Content chunk `i` of an answer from `model` (both dialects): the first names the model asked
/// for, each later one is one more token.
pub(super) fn piece(model: &str, i: u32) -> String {
    if i == 0 { format!("Mock answer from `{model}`.") } else { format!(" token{i}") }
}

/// Characters of every message's text.
fn chat_chars(req: &Map<String, Value>) -> u64 {
    let Some(Value::Array(messages)) = req.get("messages") else {
        return 0;
    };
    let text_len = |content: &Value| -> usize {
        match content {
            Value::String(s) => s.chars().count(),
            Value::Array(parts) => {
                parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).map(|t| t.chars().count()).sum()
            }
            _ => 0,
        }
    };
    let chars: usize = messages.iter().filter_map(|m| m.get("content")).map(text_len).sum();
    u64::try_from(chars).unwrap_or(u64::MAX)
}

/// Characters (a token array counts four per token) and the number of inputs of an embeddings
/// request.
fn embedding_inputs(input: Option<&Value>) -> (u64, usize) {
    let len = |v: &Value| -> usize {
        match v {
            Value::String(s) => s.chars().count(),
            Value::Array(tokens) => tokens.len() * 4,
            _ => 0,
        }
    };
    let (chars, inputs) = match input {
        Some(Value::Array(items)) if items.iter().all(Value::is_number) => (items.len() * 4, 1),
        Some(Value::Array(items)) => (items.iter().map(len).sum(), items.len()),
        Some(other) => (len(other), 1),
        None => (0, 1),
    };
    (u64::try_from(chars).unwrap_or(u64::MAX), inputs)
}

/// A whole answer: a chat completion or embeddings, echoing the model asked for.
pub(super) fn whole(call: &Call, profile: &MockProfile, rng: &mut SmallRng) -> Response {
    let body = match call.api {
        Api::Chat => {
            let mut text: String = (0..profile.chunks).map(|i| call.piece(i)).collect();
            if let Some(bytes) = profile.huge_bytes {
                let pad = bytes.saturating_sub(text.len());
                text.extend(std::iter::repeat_n('x', pad));
            }
            to_json(
                &ChatCompletion::new(&call.id, &call.model, call.created)
                    .with_choice(ChatMessage::assistant(text), Some("stop".to_owned()))
                    .with_usage(call.usage(profile)),
            )
        }
        Api::Embeddings => {
            let data = (0..call.inputs)
                .map(|i| Embedding::new(u32::try_from(i).unwrap_or(u32::MAX), vector(profile.embedding_dims, rng)))
                .collect();
            let answer = EmbeddingResponse::new(&call.model, data).with_usage(EmbeddingUsage::new(call.prompt_tokens));
            to_json(&answer)
        }
    };
    json_response(StatusCode::OK, body)
}

/// A `200` whose JSON body is cut in the middle (a malformed answer).
pub(super) fn truncated(call: &Call) -> Response {
    let body = to_json(
        &ChatCompletion::new(&call.id, &call.model, call.created)
            .with_choice(ChatMessage::assistant(call.piece(0)), Some("stop".to_owned())),
    );
    json_response(StatusCode::OK, body.slice(..body.len() / 2))
}

/// A unit vector of `dims` random components.
fn vector(dims: usize, rng: &mut SmallRng) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dims).map(|_| rng.random_range(-1.0..1.0)).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// The injected failure: the profile's status, an OpenAI error body, `Retry-After`.
pub(super) fn failure(call: &Call, profile: &MockProfile) -> Response {
    let status = profile.fail_status;
    let code = profile.error_code.as_deref();
    let error = match (status.as_u16(), code) {
        (_, Some("context_length_exceeded")) => ApiError::new(format!(
            "This model's maximum context length is {CONTEXT_WINDOW} tokens. However, your messages resulted in {} \
             tokens (mock).",
            call.prompt_tokens.max(CONTEXT_WINDOW + 1)
        ))
        .with_type("invalid_request_error")
        .with_param("messages"),
        (_, Some("content_filter")) => ApiError::new(
            "The response was filtered due to the prompt triggering the content management policy (mock).",
        )
        .with_type("invalid_request_error")
        .with_param("prompt"),
        (429, _) => ApiError::new(format!("Rate limit reached for {} (mock). Please try again later.", call.model))
            .with_type("requests")
            .with_code("rate_limit_exceeded"),
        (401, _) => ApiError::new("Incorrect API key provided (mock).")
            .with_type("invalid_request_error")
            .with_code("invalid_api_key"),
        (404, _) => ApiError::new(format!("The model `{}` does not exist (mock).", call.model))
            .with_type("invalid_request_error")
            .with_code("model_not_found"),
        (503, _) => ApiError::new("The engine is currently overloaded, please try again later (mock).")
            .with_type("server_error"),
        (500..=599, _) => {
            ApiError::new("The server had an error while processing your request (mock).").with_type("server_error")
        }
        _ => ApiError::new(format!("mock failure {}", status.as_u16())).with_type("invalid_request_error"),
    };
    let error = match code {
        Some(code) => error.with_code(code),
        None => error,
    };
    let mut resp = json_response(status, to_json(&ErrorResponse::new(error)));
    retry_after(resp.headers_mut(), profile);
    resp
}

/// `Retry-After` (whole seconds, rounded up) and `retry-after-ms` when the profile sets a delay
/// that is not a whole number of seconds.
pub(super) fn retry_after(headers: &mut http::HeaderMap, profile: &MockProfile) {
    if let Some(after) = profile.retry_after {
        let millis = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
        headers.insert(header::RETRY_AFTER, HeaderValue::from(millis.div_ceil(1000)));
        if after.subsec_nanos() != 0 {
            headers.insert("retry-after-ms", HeaderValue::from(millis));
        }
    }
}

/// An answer refusing a malformed request.
pub(super) fn invalid(message: &str) -> Response {
    let error = ApiError::new(message).with_type("invalid_request_error");
    json_response(StatusCode::BAD_REQUEST, to_json(&ErrorResponse::new(error)))
}

/// OpenAI's answer to an unknown path.
pub(super) fn not_found(method: &http::Method, path: &str) -> Response {
    let error = ApiError::new(format!("Invalid URL ({method} {path})")).with_type("invalid_request_error");
    json_response(StatusCode::NOT_FOUND, to_json(&ErrorResponse::new(error)))
}

/// Headers, then nothing until the server shuts down (then the connection closes).
pub(super) fn stalled(stream: bool, mut shutdown: watch::Receiver<bool>) -> Response {
    let never = stream::once(async move {
        let _ = shutdown.wait_for(|down| *down).await;
        Err::<Bytes, _>(io::Error::new(io::ErrorKind::ConnectionAborted, "mock upstream shut down"))
    });
    let mut resp = Response::new(Body::from_stream(never));
    let content_type = if stream { "text/event-stream" } else { "application/json" };
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// What a stream sends next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Content chunk `n`; past the last one, the finish chunk.
    Content(u32),
    Usage,
    Done,
    End,
}

/// What goes wrong in one stream.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct StreamFaults {
    /// Close the connection after this many content chunks.
    pub(super) cut_after: Option<u32>,
    /// Send a malformed event after this many content chunks.
    pub(super) malformed_after: Option<u32>,
    /// End without `[DONE]`.
    pub(super) no_done: bool,
    /// Send an error chunk after this many content chunks, and end.
    pub(super) error_after: Option<u32>,
}

struct Streaming {
    call: Call,
    profile: Arc<MockProfile>,
    rng: SmallRng,
    next: Step,
    faults: StreamFaults,
    shutdown: watch::Receiver<bool>,
}

/// A server-sent-event stream: content chunks paced by the profile's interval, the finish chunk,
/// the usage chunk when the request asked for it, `[DONE]`. With `faults.cut_after`, the
/// connection closes after that many content chunks instead; with `faults.malformed_after`, a
/// truncated JSON event comes before that content chunk; with `faults.error_after`, an error
/// chunk (`data: {"error":{...}}`) comes instead of that content chunk and the body ends; with
/// `faults.no_done`, the body ends without `[DONE]`.
pub(super) fn streaming(
    call: Call,
    profile: Arc<MockProfile>,
    rng: SmallRng,
    mut faults: StreamFaults,
    shutdown: watch::Receiver<bool>,
) -> Response {
    faults.cut_after = faults.cut_after.map(|k| k.min(profile.chunks));
    faults.error_after = faults.error_after.map(|k| k.min(profile.chunks));
    let state = Streaming { call, profile, rng, next: Step::Content(0), faults, shutdown };
    let mut resp = Response::new(Body::from_stream(stream::unfold(state, next_event)));
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

async fn next_event(mut st: Streaming) -> Option<(Result<Bytes, io::Error>, Streaming)> {
    let event = match st.next {
        Step::Content(n) => {
            if n > 0 {
                let gap = st.profile.chunk_interval.sample(&mut st.rng);
                pause(gap, &mut st.shutdown).await;
            }
            if st.faults.cut_after == Some(n) {
                // Give the server one turn to flush the headers and the chunks already sent, so
                // the client sees them before the connection drops (as with a real cut).
                tokio::task::yield_now().await;
                st.next = Step::End;
                let cut = io::Error::new(io::ErrorKind::ConnectionAborted, "mock upstream cut the stream");
                return Some((Err(cut), st));
            }
            if st.faults.malformed_after == Some(n) {
                // Sent once, in place of nothing: the stream then goes on from chunk `n`.
                st.faults.malformed_after = None;
                let event =
                    format!("data: {{\"id\":\"{}\",\"choices\":[{{\"delta\":{{\"content\":\"tok\n\n", st.call.id);
                return Some((Ok(Bytes::from(event)), st));
            }
            if st.faults.error_after == Some(n) {
                st.next = Step::End;
                let error = ApiError::new("The server had an error while processing your request (mock).")
                    .with_type("server_error");
                return Some((Ok(sse(&ErrorResponse::new(error))), st));
            }
            if n < st.profile.chunks {
                st.next = Step::Content(n + 1);
                let mut delta = ChatDelta::text(st.call.piece(n));
                if n == 0 {
                    delta = delta.with_role("assistant");
                }
                sse(&st.call.chunk().with_choice(ChunkChoice::new(0, delta, None)))
            } else {
                st.next = match (st.call.include_usage, st.faults.no_done) {
                    (true, _) => Step::Usage,
                    (false, true) => Step::End,
                    (false, false) => Step::Done,
                };
                sse(&st.call.chunk().with_choice(ChunkChoice::new(0, ChatDelta::new(), Some("stop".to_owned()))))
            }
        }
        Step::Usage => {
            st.next = if st.faults.no_done { Step::End } else { Step::Done };
            sse(&st.call.chunk().with_usage(st.call.usage(&st.profile)))
        }
        Step::Done => {
            st.next = Step::End;
            Bytes::from_static(b"data: [DONE]\n\n")
        }
        Step::End => return None,
    };
    Some((Ok(event), st))
}

/// Waits `d`, or less if the server shuts down meanwhile.
pub(super) async fn pause(d: Duration, shutdown: &mut watch::Receiver<bool>) {
    if d.is_zero() {
        return;
    }
    tokio::select! {
        () = tokio::time::sleep(d) => {}
        _ = shutdown.wait_for(|down| *down) => {}
    }
}

pub(super) fn json_response(status: StatusCode, body: Bytes) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}
