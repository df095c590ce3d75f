//! A ConverseStream body: one AWS event-stream message per event (`aws-smithy-eventstream` writes
//! the prelude, the headers and both CRC32s), and the profile's faults in it.

use std::{io, sync::Arc, time::Duration};

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue as FrameHeader, Message};
use axum::{body::Body, response::Response};
use bytes::Bytes;
use futures_util::stream;
use http::{HeaderValue, header};
use rand::rngs::SmallRng;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::{
    EVENT_STREAM,
    answer::{self, Block, Plan, TOOL_INPUT_PIECES, json_bytes},
    converse::Converse,
};
use crate::mock::{MockProfile, answer::pause};

/// The exception a mid-stream failure sends unless the profile's `error_code` names another.
const DEFAULT_STREAM_EXCEPTION: &str = "modelStreamErrorException";
/// The exceptions a ConverseStream body may carry (`ConverseStreamOutput`'s error members).
const STREAM_EXCEPTIONS: &[&str] = &[
    "internalServerException",
    "modelStreamErrorException",
    "validationException",
    "throttlingException",
    "serviceUnavailableException",
];

/// What goes wrong in one stream; each counts content deltas sent (0: right after
/// `messageStart`) and is clamped to the deltas the answer has.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct StreamFaults {
    /// Send half of the next frame, then close the connection, after this many deltas.
    pub(super) cut_after: Option<u32>,
    /// Send a frame with a wrong message CRC after this many deltas, then go on.
    pub(super) malformed_after: Option<u32>,
    /// Send an exception frame after this many deltas, and end.
    pub(super) error_after: Option<u32>,
    /// End after `messageStop`, without the `metadata` event.
    pub(super) no_metadata: bool,
}

/// One step of a stream.
#[derive(Debug)]
enum Item {
    Frame(Bytes),
    /// The profile's chunk interval.
    Gap,
    /// This many content deltas are sent: where faults happen.
    Mark(u32),
}

struct Streaming {
    items: Vec<Item>,
    next: usize,
    faults: StreamFaults,
    exception: Bytes,
    /// The half frame of a cut is sent: drop the connection.
    cut: bool,
    profile: Arc<MockProfile>,
    rng: SmallRng,
    shutdown: watch::Receiver<bool>,
}

/// The answer to `call` as an event stream, with `faults`.
#[allow(clippy::too_many_arguments)]
pub(super) fn streaming(
    call: &Converse,
    plan: &Plan,
    profile: Arc<MockProfile>,
    rng: SmallRng,
    mut faults: StreamFaults,
    latency: Duration,
    shutdown: watch::Receiver<bool>,
    request_id: &str,
) -> Response {
    let items = events(call, plan, latency, faults.no_metadata);
    let deltas = items.iter().filter(|i| matches!(i, Item::Mark(_))).count().saturating_sub(1);
    let deltas = u32::try_from(deltas).unwrap_or(u32::MAX);
    for fault in [&mut faults.cut_after, &mut faults.malformed_after, &mut faults.error_after] {
        *fault = fault.map(|k| k.min(deltas));
    }
    let kind = profile
        .error_code
        .as_deref()
        .and_then(|code| STREAM_EXCEPTIONS.iter().find(|k| k.eq_ignore_ascii_case(code)))
        .copied()
        .unwrap_or(DEFAULT_STREAM_EXCEPTION);
    let exception = exception_frame(kind, "The model stream was interrupted (mock). Retry your request.");
    let state = Streaming { items, next: 0, faults, exception, cut: false, profile, rng, shutdown };
    let mut resp = Response::new(Body::from_stream(stream::unfold(state, next_frame)));
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
    answer::insert_request_id(headers, request_id);
    resp
}

/// `message` in the event-stream framing.
fn encode(message: &Message) -> Bytes {
    let mut out = Vec::new();
    // Only a payload over 16 MiB or headers over 128 KiB fail to encode; the mock's are small.
    write_message_to(message, &mut out).expect("a mock event fits the event-stream limits");
    Bytes::from(out)
}

fn string(name: &'static str, value: &'static str) -> Header {
    Header::new(name, FrameHeader::String(value.into()))
}

/// An event: `:event-type`, `:content-type: application/json`, `:message-type: event`, and the
/// event's JSON as the payload.
fn event_frame(kind: &'static str, payload: &Value) -> Bytes {
    let headers = vec![
        string(":event-type", kind),
        string(":content-type", "application/json"),
        string(":message-type", "event"),
    ];
    encode(&Message::new_from_parts(headers, json_bytes(payload)))
}

/// An exception: `:exception-type`, `:content-type: application/json`,
/// `:message-type: exception`, and `{"message": ...}`.
fn exception_frame(kind: &'static str, message: &str) -> Bytes {
    let headers = vec![
        string(":exception-type", kind),
        string(":content-type", "application/json"),
        string(":message-type", "exception"),
    ];
    encode(&Message::new_from_parts(headers, json_bytes(&json!({ "message": message }))))
}

fn event(kind: &'static str, payload: &Value) -> Item {
    Item::Frame(event_frame(kind, payload))
}

/// Every step of the stream without faults. A gap comes before every delta but the first and
/// before the last block's end, as many as the other dialects' gaps for the same text.
fn events(call: &Converse, plan: &Plan, latency: Duration, no_metadata: bool) -> Vec<Item> {
    let mut items = vec![event("messageStart", &json!({"role": "assistant"})), Item::Mark(0)];
    let mut sent = 0u32;
    let last = plan.blocks.len().saturating_sub(1);
    for (index, block) in plan.blocks.iter().enumerate() {
        let deltas: Vec<Value> = match block {
            Block::Text(pieces) => pieces.iter().map(|p| json!({"text": p})).collect(),
            Block::ToolUse { id, name } => {
                let start = json!({"toolUse": {"toolUseId": id, "name": name}});
                items.push(event("contentBlockStart", &json!({"start": start, "contentBlockIndex": index})));
                TOOL_INPUT_PIECES.iter().map(|p| json!({"toolUse": {"input": p}})).collect()
            }
        };
        for delta in deltas {
            if sent > 0 {
                items.push(Item::Gap);
            }
            items.push(event("contentBlockDelta", &json!({"delta": delta, "contentBlockIndex": index})));
            sent += 1;
            items.push(Item::Mark(sent));
        }
        if index == last && sent > 0 {
            items.push(Item::Gap);
        }
        items.push(event("contentBlockStop", &json!({"contentBlockIndex": index})));
    }
    items.push(event("messageStop", &json!({"stopReason": plan.stop_reason})));
    if !no_metadata {
        let metadata = json!({"usage": call.usage(plan.output_tokens()), "metrics": answer::metrics(latency)});
        items.push(event("metadata", &metadata));
    }
    items
}

async fn next_frame(mut st: Streaming) -> Option<(Result<Bytes, io::Error>, Streaming)> {
    if st.cut {
        st.cut = false;
        // Let the server flush what was sent before the connection drops.
        tokio::task::yield_now().await;
        let cut = io::Error::new(io::ErrorKind::ConnectionAborted, "mock upstream cut the stream");
        return Some((Err(cut), st));
    }
    loop {
        match st.items.get(st.next)? {
            Item::Frame(bytes) => {
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
                    // Half of the next frame, then the connection drops: the client holds a
                    // frame it cannot finish.
                    let half = st.items[st.next..].iter().find_map(|i| match i {
                        Item::Frame(b) => Some(b.slice(..b.len() / 2)),
                        _ => None,
                    });
                    st.items.truncate(st.next);
                    st.cut = true;
                    return Some((Ok(half.unwrap_or_default()), st));
                }
                if st.faults.malformed_after == Some(sent) {
                    // Sent once; the stream then goes on from here.
                    st.faults.malformed_after = None;
                    let mut frame =
                        event_frame("contentBlockDelta", &json!({"delta": {"text": "tok"}, "contentBlockIndex": 0}))
                            .to_vec();
                    if let Some(crc) = frame.last_mut() {
                        *crc ^= 0xff;
                    }
                    return Some((Ok(Bytes::from(frame)), st));
                }
                if st.faults.error_after == Some(sent) {
                    st.next = st.items.len();
                    return Some((Ok(st.exception.clone()), st));
                }
                st.next += 1;
            }
        }
    }
}
