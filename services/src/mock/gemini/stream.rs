//! A `streamGenerateContent` answer: one `GenerateContentResponse` per text piece (or one with
//! the function call), paced by the profile's chunk interval, usage counted so far in each and
//! `finishReason` in the last; as `data:` events with `?alt=sse` (no `[DONE]`), else as the
//! elements of one JSON array. And the profile's faults in it.

use std::{io, sync::Arc};

use axum::{body::Body, response::Response};
use bytes::Bytes;
use futures_util::stream;
use http::{HeaderValue, StatusCode, header};
use rand::rngs::SmallRng;
use serde_json::Value;
use tokio::sync::watch;

use super::{
    answer::{Output, error_body, function_call_part, json_bytes, text_part},
    request::{Framing, Generate},
};
use crate::mock::{MockProfile, answer::pause};

/// What goes wrong in one stream; each counts chunks sent (0: before the first) and is clamped
/// to the chunks the answer has.
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::mock) struct StreamFaults {
    /// Close the connection after this many chunks.
    pub(in crate::mock) cut_after: Option<u32>,
    /// Send a malformed chunk (truncated JSON) after this many chunks, then go on.
    pub(in crate::mock) malformed_after: Option<u32>,
    /// Send an `UNAVAILABLE` error after this many chunks, and end.
    pub(in crate::mock) error_after: Option<u32>,
}

/// One step of a stream.
#[derive(Debug)]
enum Item {
    Chunk(Value),
    /// The profile's chunk interval.
    Gap,
    /// This many chunks are sent: where faults happen.
    Mark(u32),
}

struct Streaming {
    items: Vec<Item>,
    next: usize,
    framing: Framing,
    /// Whether an array element was sent (the next one needs a comma).
    started: bool,
    /// Whether the JSON array is closed.
    closed: bool,
    faults: StreamFaults,
    profile: Arc<MockProfile>,
    rng: SmallRng,
    shutdown: watch::Receiver<bool>,
}

/// The answer to `call` as a stream framed as `framing`, with `faults`.
pub(in crate::mock) fn streaming(
    call: &Generate,
    framing: Framing,
    profile: Arc<MockProfile>,
    rng: SmallRng,
    mut faults: StreamFaults,
    shutdown: watch::Receiver<bool>,
) -> Response {
    let items = chunks(call, &profile);
    let sent = items.iter().filter(|i| matches!(i, Item::Chunk(_))).count();
    let sent = u32::try_from(sent).unwrap_or(u32::MAX);
    for fault in [&mut faults.cut_after, &mut faults.malformed_after, &mut faults.error_after] {
        *fault = fault.map(|k| k.min(sent));
    }
    let state = Streaming { items, next: 0, framing, started: false, closed: false, faults, profile, rng, shutdown };
    let mut resp = Response::new(Body::from_stream(stream::unfold(state, next_bytes)));
    let content_type = match framing {
        Framing::Sse => "text/event-stream",
        Framing::JsonArray => "application/json; charset=UTF-8",
    };
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// Every chunk of the answer, a gap between two.
fn chunks(call: &Generate, profile: &MockProfile) -> Vec<Item> {
    let plan = call.plan(profile);
    let parts: Vec<Value> = match &plan.output {
        Output::Text(pieces) if pieces.is_empty() => vec![text_part("")],
        Output::Text(pieces) => pieces.iter().map(|p| text_part(p)).collect(),
        Output::FunctionCall(name) => vec![function_call_part(name)],
    };
    let last = parts.len() - 1;
    let mut items = vec![Item::Mark(0)];
    for (i, part) in parts.into_iter().enumerate() {
        if i > 0 {
            items.push(Item::Gap);
        }
        let finish = (i == last).then_some(plan.finish_reason);
        let tokens = if i == last { plan.candidates_tokens() } else { u64::try_from(i + 1).unwrap_or(u64::MAX) };
        items.push(Item::Chunk(call.response(vec![part], finish, tokens)));
        items.push(Item::Mark(u32::try_from(i + 1).unwrap_or(u32::MAX)));
    }
    items
}

impl Streaming {
    /// `value` framed: a `data:` event, or the next array element.
    fn frame(&mut self, json: &[u8]) -> Bytes {
        let mut out = Vec::with_capacity(json.len() + 8);
        match self.framing {
            Framing::Sse => {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(json);
                out.extend_from_slice(b"\r\n\r\n");
            }
            Framing::JsonArray => {
                out.extend_from_slice(if self.started { b",\r\n" } else { b"[" });
                out.extend_from_slice(json);
            }
        }
        self.started = true;
        Bytes::from(out)
    }

    /// The end of the body: `]` closing the array, nothing for events.
    fn close(&mut self) -> Option<Bytes> {
        if self.framing == Framing::Sse || self.closed {
            return None;
        }
        self.closed = true;
        Some(Bytes::from_static(if self.started { b"]" } else { b"[]" }))
    }
}

async fn next_bytes(mut st: Streaming) -> Option<(Result<Bytes, io::Error>, Streaming)> {
    loop {
        let Some(item) = st.items.get(st.next) else {
            return st.close().map(|end| (Ok(end), st));
        };
        match item {
            Item::Chunk(value) => {
                let json = json_bytes(value);
                st.next += 1;
                let bytes = st.frame(&json);
                return Some((Ok(bytes), st));
            }
            Item::Gap => {
                st.next += 1;
                let gap = st.profile.chunk_interval.sample(&mut st.rng);
                pause(gap, &mut st.shutdown).await;
            }
            &Item::Mark(sent) => {
                if st.faults.cut_after == Some(sent) {
                    // Let the server flush what was sent before the connection drops.
                    tokio::task::yield_now().await;
                    st.next = st.items.len();
                    st.closed = true;
                    let cut = io::Error::new(io::ErrorKind::ConnectionAborted, "mock upstream cut the stream");
                    return Some((Err(cut), st));
                }
                if st.faults.malformed_after == Some(sent) {
                    // Sent once; the stream then goes on from here.
                    st.faults.malformed_after = None;
                    let bytes = st.frame(br#"{"candidates": [{"content": {"parts": [{"text": "tok"#);
                    return Some((Ok(bytes), st));
                }
                if st.faults.error_after == Some(sent) {
                    st.next = st.items.len();
                    let error = error_body(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "The model is overloaded. Please try again later.",
                        Vec::new(),
                    );
                    let bytes = st.frame(&json_bytes(&error));
                    return Some((Ok(bytes), st));
                }
                st.next += 1;
            }
        }
    }
}
