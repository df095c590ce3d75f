//! A Responses event stream: `response.created`, `response.in_progress`, the output item
//! (`response.output_item.added`, for a message `response.content_part.added`, its deltas paced
//! by the profile's chunk interval, the `.done` events), then `response.completed` (or
//! `response.incomplete`), each as `event: <type>\ndata: <json>\n\n` with an increasing
//! `sequence_number`; and the profile's faults in it.

use std::{io, sync::Arc};

use axum::{body::Body, response::Response};
use bytes::Bytes;
use futures_util::stream;
use http::{HeaderValue, header};
use rand::{Rng, rngs::SmallRng};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::{
    answer::{Plan, SERVER_ERROR, output_text},
    request::Call,
};
use crate::mock::{MockProfile, answer::pause};

/// What goes wrong in one stream; each counts deltas sent (0: right after the output item's
/// first events) and is clamped to the deltas the answer has.
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::mock) struct StreamFaults {
    /// Close the connection after this many deltas.
    pub(in crate::mock) cut_after: Option<u32>,
    /// Send a malformed event (truncated JSON) after this many deltas, then go on.
    pub(in crate::mock) malformed_after: Option<u32>,
    /// Send an `error` event and `response.failed` after this many deltas, and end.
    pub(in crate::mock) error_after: Option<u32>,
}

/// One step of a stream.
#[derive(Debug)]
enum Item {
    Event(Bytes),
    /// The profile's chunk interval.
    Gap,
    /// This many deltas are sent, and the next event's sequence number: where faults happen.
    Mark {
        sent: u32,
        next: u64,
    },
}

struct Streaming {
    items: Vec<Item>,
    next: usize,
    faults: StreamFaults,
    /// The response `response.failed` carries.
    failed: Value,
    item_id: String,
    profile: Arc<MockProfile>,
    rng: SmallRng,
    shutdown: watch::Receiver<bool>,
}

/// The answer to `call` as an event stream, with `faults`; `failed` is the response a stream
/// error ends with.
pub(super) fn streaming(
    call: &Call,
    plan: &Plan,
    failed: Value,
    profile: Arc<MockProfile>,
    mut rng: SmallRng,
    mut faults: StreamFaults,
    shutdown: watch::Receiver<bool>,
) -> Response {
    let items = events(call, plan, &mut rng);
    let deltas = u32::try_from(plan.pieces().len()).unwrap_or(u32::MAX);
    for fault in [&mut faults.cut_after, &mut faults.malformed_after, &mut faults.error_after] {
        *fault = fault.map(|k| k.min(deltas));
    }
    let item_id = call.item_id(plan);
    let state = Streaming { items, next: 0, faults, failed, item_id, profile, rng, shutdown };
    let mut resp = Response::new(Body::from_stream(stream::unfold(state, next_event)));
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// `event: <type>\ndata: <data>\n\n`.
fn event_bytes(data: &Value) -> Bytes {
    let kind = data.get("type").and_then(Value::as_str).unwrap_or_default();
    let mut out = format!("event: {kind}\ndata: ").into_bytes();
    // A `Value` always serializes.
    out.extend_from_slice(&serde_json::to_vec(data).unwrap_or_default());
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// Numbers events as they are added.
struct Events {
    items: Vec<Item>,
    seq: u64,
}

impl Events {
    fn push(&mut self, kind: &str, mut data: Value) {
        if let Value::Object(fields) = &mut data {
            fields.insert("type".to_owned(), json!(kind));
            fields.insert("sequence_number".to_owned(), json!(self.seq));
        }
        self.seq += 1;
        self.items.push(Item::Event(event_bytes(&data)));
    }

    fn mark(&mut self, sent: u32) {
        self.items.push(Item::Mark { sent, next: self.seq });
    }
}

/// Random characters that pad a delta event, as OpenAI's stream obfuscation does.
fn obfuscation(rng: &mut SmallRng, delta: &str) -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let len = 16usize.saturating_sub(delta.len()).max(2);
    (0..len).map(|_| char::from(CHARS[rng.random_range(0..CHARS.len())])).collect()
}

/// Every step of the stream without faults. A gap comes before every delta but the first and
/// before the item's end, as many as the chat side's gaps for the same text.
fn events(call: &Call, plan: &Plan, rng: &mut SmallRng) -> Vec<Item> {
    let mut ev = Events { items: Vec::new(), seq: 0 };
    let started = call.response("in_progress", Vec::new(), Value::Null);
    ev.push("response.created", json!({"response": started}));
    ev.push("response.in_progress", json!({"response": started}));
    let item_id = call.item_id(plan);
    ev.push("response.output_item.added", json!({"output_index": 0, "item": call.item(plan, false, "")}));
    let text_part = matches!(plan, Plan::Text { .. });
    if text_part {
        ev.push(
            "response.content_part.added",
            json!({"item_id": item_id, "output_index": 0, "content_index": 0, "part": output_text("")}),
        );
    }
    ev.mark(0);
    let pieces = plan.pieces();
    for (n, piece) in pieces.iter().enumerate() {
        if n > 0 {
            ev.items.push(Item::Gap);
        }
        let mut delta = if text_part {
            json!({"item_id": item_id, "output_index": 0, "content_index": 0, "delta": piece, "logprobs": []})
        } else {
            json!({"item_id": item_id, "output_index": 0, "delta": piece})
        };
        if call.obfuscate {
            delta["obfuscation"] = json!(obfuscation(rng, piece));
        }
        let kind = if text_part { "response.output_text.delta" } else { "response.function_call_arguments.delta" };
        ev.push(kind, delta);
        ev.mark(u32::try_from(n + 1).unwrap_or(u32::MAX));
    }
    if !pieces.is_empty() {
        ev.items.push(Item::Gap);
    }
    let text = pieces.concat();
    match plan {
        Plan::Text { .. } => {
            ev.push(
                "response.output_text.done",
                json!({"item_id": item_id, "output_index": 0, "content_index": 0, "text": text, "logprobs": []}),
            );
            ev.push(
                "response.content_part.done",
                json!({"item_id": item_id, "output_index": 0, "content_index": 0, "part": output_text(&text)}),
            );
        }
        Plan::FunctionCall { name } => ev.push(
            "response.function_call_arguments.done",
            json!({"item_id": item_id, "output_index": 0, "arguments": text, "name": name}),
        ),
    }
    ev.push("response.output_item.done", json!({"output_index": 0, "item": call.item(plan, true, &text)}));
    let finished = call.finished(plan, false, None);
    let last = if plan.complete() { "response.completed" } else { "response.incomplete" };
    ev.push(last, json!({"response": finished}));
    ev.items
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
            &Item::Mark { sent, next } => {
                if st.faults.cut_after == Some(sent) {
                    // Let the server flush what was sent before the connection drops.
                    tokio::task::yield_now().await;
                    st.next = st.items.len();
                    let cut = io::Error::new(io::ErrorKind::ConnectionAborted, "mock upstream cut the stream");
                    return Some((Err(cut), st));
                }
                if st.faults.malformed_after == Some(sent) {
                    // Sent once, numbered as nothing; the stream then goes on from here.
                    st.faults.malformed_after = None;
                    let event = format!(
                        "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\
                         \"item_id\":\"{}\",\"delta\":\"tok\n\n",
                        st.item_id
                    );
                    return Some((Ok(Bytes::from(event)), st));
                }
                if st.faults.error_after == Some(sent) {
                    st.next = st.items.len();
                    let error = json!({
                        "type": "error",
                        "code": "server_error",
                        "message": SERVER_ERROR,
                        "param": null,
                        "sequence_number": next,
                    });
                    let failed = json!({
                        "type": "response.failed",
                        "response": st.failed,
                        "sequence_number": next + 1,
                    });
                    let mut both = event_bytes(&error).to_vec();
                    both.extend_from_slice(&event_bytes(&failed));
                    return Some((Ok(Bytes::from(both)), st));
                }
                st.next += 1;
            }
        }
    }
}
