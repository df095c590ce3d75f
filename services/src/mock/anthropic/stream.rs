//! A Messages event stream: `message_start`, each content block (`content_block_start`, its
//! deltas paced by the profile's chunk interval, `content_block_stop`), `message_delta`,
//! `message_stop`, each as `event: <type>\ndata: <json>\n\n`; and the profile's faults in it.

use std::{io, sync::Arc};

use axum::{body::Body, response::Response};
use bytes::Bytes;
use futures_util::stream;
use http::{HeaderValue, header};
use rand::rngs::SmallRng;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::{
    Call,
    answer::{Block, TOOL_INPUT_PIECES, error_body},
};
use crate::mock::{MockProfile, answer::pause};

/// What goes wrong in one stream; each counts content deltas sent (0: right after
/// `message_start`) and is clamped to the deltas the answer has.
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::mock) struct StreamFaults {
    /// Close the connection after this many deltas.
    pub(in crate::mock) cut_after: Option<u32>,
    /// Send a malformed event (truncated JSON) after this many deltas, then go on.
    pub(in crate::mock) malformed_after: Option<u32>,
    /// Send an `overloaded_error` `error` event after this many deltas, and end.
    pub(in crate::mock) error_after: Option<u32>,
}

/// One step of a stream.
#[derive(Debug)]
enum Item {
    Event(Bytes),
    /// The profile's chunk interval.
    Gap,
    /// This many content deltas are sent: where faults happen.
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

/// The answer to `call` as an event stream, with `faults`.
pub(in crate::mock) fn streaming(
    call: &Call,
    profile: Arc<MockProfile>,
    rng: SmallRng,
    mut faults: StreamFaults,
    shutdown: watch::Receiver<bool>,
) -> Response {
    let items = events(call, &profile);
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

/// `event: <kind>\ndata: <data>\n\n`.
fn event_bytes(kind: &str, data: &Value) -> Bytes {
    let mut out = format!("event: {kind}\ndata: ").into_bytes();
    // A `Value` always serializes.
    out.extend_from_slice(&serde_json::to_vec(data).unwrap_or_default());
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

fn event(kind: &str, data: &Value) -> Item {
    Item::Event(event_bytes(kind, data))
}

/// Every step of the stream without faults. A gap comes before every delta but the first and
/// before the last block's end, as many as the OpenAI side's gaps for the same text.
fn events(call: &Call, profile: &MockProfile) -> Vec<Item> {
    let plan = call.plan(profile);
    let mut items =
        vec![event("message_start", &json!({"type": "message_start", "message": call.message(Vec::new(), None, 1)}))];
    items.push(Item::Mark(0));
    if plan.blocks.is_empty() {
        items.push(event("ping", &json!({"type": "ping"})));
    }
    let mut sent = 0u32;
    let last = plan.blocks.len().saturating_sub(1);
    for (index, block) in plan.blocks.iter().enumerate() {
        let (start, deltas) = match block {
            Block::Thinking { thinking, signature } => (
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                vec![
                    json!({"type": "thinking_delta", "thinking": thinking}),
                    json!({"type": "signature_delta", "signature": signature}),
                ],
            ),
            Block::Text(pieces) => (
                json!({"type": "text", "text": ""}),
                pieces.iter().map(|p| json!({"type": "text_delta", "text": p})).collect(),
            ),
            Block::ToolUse { id, name } => (
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                TOOL_INPUT_PIECES.iter().map(|p| json!({"type": "input_json_delta", "partial_json": p})).collect(),
            ),
        };
        items.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        if index == 0 {
            items.push(event("ping", &json!({"type": "ping"})));
        }
        for delta in deltas {
            if sent > 0 {
                items.push(Item::Gap);
            }
            items.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
            sent += 1;
            items.push(Item::Mark(sent));
        }
        if index == last && sent > 0 {
            items.push(Item::Gap);
        }
        items.push(event("content_block_stop", &json!({"type": "content_block_stop", "index": index})));
    }
    let delta = json!({
        "type": "message_delta",
        "delta": {"stop_reason": plan.stop_reason, "stop_sequence": plan.stop_sequence},
        "usage": {"output_tokens": plan.output_tokens()},
    });
    items.push(event("message_delta", &delta));
    items.push(event("message_stop", &json!({"type": "message_stop"})));
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
                    let event = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\
                                 \"delta\":{\"type\":\"text_delta\",\"text\":\"tok\n\n";
                    return Some((Ok(Bytes::from_static(event.as_bytes())), st));
                }
                if st.faults.error_after == Some(sent) {
                    st.next = st.items.len();
                    let error = event_bytes("error", &error_body("overloaded_error", "Overloaded"));
                    return Some((Ok(error), st));
                }
                st.next += 1;
            }
        }
    }
}
