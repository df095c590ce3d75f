//! A Chat event stream, each event `event: <type>\ndata: <json with that "type">\n\n`:
//! `message-start`, then `content-start`, the `content-delta`s and `content-end` (or the
//! `tool-plan-delta`s, `tool-call-start`, the `tool-call-delta`s and `tool-call-end`), the deltas
//! paced by the profile's chunk interval, `message-end` with `finish_reason` and `usage`, and
//! `data: [DONE]` (the terminator Cohere's API definition declares). And the profile's faults.

use std::{io, sync::Arc};

use axum::{body::Body, response::Response};
use bytes::Bytes;
use futures_util::stream;
use http::{HeaderValue, header};
use rand::rngs::SmallRng;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::{
    answer::{ARGUMENT_PIECES, Output, tool_call},
    request::Chat,
};
use crate::mock::{MockProfile, answer::pause};

/// What goes wrong in one stream; each counts deltas sent (0: right after `message-start`) and
/// is clamped to the deltas the reply has.
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::mock) struct StreamFaults {
    /// Close the connection after this many deltas.
    pub(in crate::mock) cut_after: Option<u32>,
    /// Send a malformed event (truncated JSON) after this many deltas, then go on.
    pub(in crate::mock) malformed_after: Option<u32>,
    /// End with a `message-end` of `finish_reason: "ERROR"` after this many deltas.
    pub(in crate::mock) error_after: Option<u32>,
    /// End without `data: [DONE]`.
    pub(in crate::mock) no_done: bool,
}

/// One step of a stream.
#[derive(Debug)]
enum Item {
    Event(Bytes),
    /// The profile's chunk interval.
    Gap,
    /// This many deltas are sent: where faults happen.
    Mark(u32),
}

struct Streaming {
    items: Vec<Item>,
    next: usize,
    faults: StreamFaults,
    profile: Arc<MockProfile>,
    rng: SmallRng,
    shutdown: watch::Receiver<bool>,
}

/// The reply to `call` as an event stream, with `faults`.
pub(in crate::mock) fn streaming(
    call: &Chat,
    profile: Arc<MockProfile>,
    rng: SmallRng,
    mut faults: StreamFaults,
    shutdown: watch::Receiver<bool>,
) -> Response {
    let items = events(call, &profile, faults.no_done);
    let deltas = items.iter().filter(|i| matches!(i, Item::Mark(_))).count().saturating_sub(1);
    let deltas = u32::try_from(deltas).unwrap_or(u32::MAX);
    for fault in [&mut faults.cut_after, &mut faults.malformed_after, &mut faults.error_after] {
        *fault = fault.map(|k| k.min(deltas));
    }
    let state = Streaming { items, next: 0, faults, profile, rng, shutdown };
    let mut resp = Response::new(Body::from_stream(stream::unfold(state, next_event)));
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// `event: <type>\ndata: <data>\n\n`, the type read from the data.
fn event_bytes(data: &Value) -> Bytes {
    let kind = data["type"].as_str().unwrap_or_default();
    let mut out = format!("event: {kind}\ndata: ").into_bytes();
    // A `Value` always serializes.
    out.extend_from_slice(&serde_json::to_vec(data).unwrap_or_default());
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

fn event(data: &Value) -> Item {
    Item::Event(event_bytes(data))
}

/// Every step of the stream without faults. A gap comes before every delta but the first and
/// before the last block's end, as many as the OpenAI side's gaps for the same text.
fn events(call: &Chat, profile: &MockProfile, no_done: bool) -> Vec<Item> {
    let plan = call.plan(profile);
    let start = json!({
        "type": "message-start",
        "id": call.reply_id(),
        "delta": {"message": {"role": "assistant"}},
    });
    let mut items = vec![event(&start), Item::Mark(0)];
    let mut sent = 0u32;
    let mut delta = |items: &mut Vec<Item>, data: Value| {
        if sent > 0 {
            items.push(Item::Gap);
        }
        items.push(event(&data));
        sent += 1;
        items.push(Item::Mark(sent));
    };
    match &plan.output {
        Output::Text(pieces) => {
            let start = json!({"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}});
            items.push(event(&start));
            for piece in pieces {
                let data =
                    json!({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": piece}}}});
                delta(&mut items, data);
            }
            if !pieces.is_empty() {
                items.push(Item::Gap);
            }
            items.push(event(&json!({"type": "content-end", "index": 0})));
        }
        Output::ToolCall { plan, id, name } => {
            for piece in plan {
                delta(&mut items, json!({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": piece}}}));
            }
            let start = json!({
                "type": "tool-call-start",
                "index": 0,
                "delta": {"message": {"tool_calls": tool_call(id, name, "")}},
            });
            items.push(event(&start));
            for piece in ARGUMENT_PIECES {
                let data = json!({
                    "type": "tool-call-delta",
                    "index": 0,
                    "delta": {"message": {"tool_calls": {"function": {"arguments": piece}}}},
                });
                delta(&mut items, data);
            }
            items.push(Item::Gap);
            items.push(event(&json!({"type": "tool-call-end", "index": 0})));
        }
    }
    let end = json!({
        "type": "message-end",
        "delta": {"finish_reason": plan.finish_reason, "usage": call.usage(plan.output_tokens())},
    });
    items.push(event(&end));
    if !no_done {
        items.push(Item::Event(Bytes::from_static(b"data: [DONE]\n\n")));
    }
    items
}

async fn next_event(mut st: Streaming) -> Option<(Result<Bytes, io::Error>, Streaming)> {
    loop {
        match st.items.get(st.next)? {
            Item::Event(bytes) => {
                let bytes = bytes.clone();
                st.next += 1;
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
                    let cut = io::Error::new(io::ErrorKind::ConnectionAborted, "mock upstream cut the stream");
                    return Some((Err(cut), st));
                }
                if st.faults.malformed_after == Some(sent) {
                    // Sent once; the stream then goes on from here.
                    st.faults.malformed_after = None;
                    let event = "event: content-delta\ndata: {\"type\":\"content-delta\",\"index\":0,\"delta\":\
                                 {\"message\":{\"content\":{\"text\":\"tok\n\n";
                    return Some((Ok(Bytes::from_static(event.as_bytes())), st));
                }
                if st.faults.error_after == Some(sent) {
                    // The reply ends here, its last event saying why; the terminator follows.
                    st.faults.error_after = None;
                    st.items.truncate(st.next + 1);
                    if !st.faults.no_done {
                        st.items.push(Item::Event(Bytes::from_static(b"data: [DONE]\n\n")));
                    }
                    let error = json!({
                        "type": "message-end",
                        "delta": {
                            "error": "internal server error, this has been reported to our developers",
                            "finish_reason": "ERROR",
                        },
                    });
                    st.next += 1;
                    return Some((Ok(event_bytes(&error)), st));
                }
                st.next += 1;
            }
        }
    }
}
