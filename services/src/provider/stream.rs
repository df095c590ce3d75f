//! Streaming answers (SSE) and their commit point.
//!
//! [`commit`] reads the upstream's events until the first content chunk: every failure before it
//! is an ordinary `Err` of the attempt. The response body then replays what was read and passes
//! the rest through; a failure after the commit point ends the body with one OpenAI-style error
//! event (`data: {"error":{"message":..,"type":"upstream_error","code":<outcome>}}`) and then an
//! `Err` carrying a `RouteError`, never with a clean end.

use std::{collections::VecDeque, pin::Pin, time::Duration};

use bytes::Bytes;
use futures_util::stream;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, StreamBody};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use switchyard_layers::{BoxError, Outcome, RouteBody, RouteError, Usage, body::UsageSlot, outcome::classify};

use super::response::{AttemptInfo, UsageProbe, error_message, transport_error};
use crate::openai::{SseDecoder, SseEvent};

/// OpenAI's end-of-stream event.
const DONE: &[u8] = b"data: [DONE]\n\n";

/// How long the body waits, after `[DONE]`, for the upstream to end its body.
const DRAIN_LIMIT: Duration = Duration::from_secs(1);

/// The upstream half of a stream: its body, the SSE decoder and what was learnt so far.
struct Upstream<B> {
    body: Pin<Box<B>>,
    sse: SseDecoder,
    info: AttemptInfo,
    /// The latest usage seen (some servers report it on every chunk).
    usage: Option<Usage>,
    slot: UsageSlot,
}

/// What one event means.
enum Kind {
    /// A choice with a delta (role, content, tool calls, ...), text, or a finish reason.
    Content,
    /// Anything else to pass through (Azure's prompt-filter results, usage-only chunks).
    Other,
    Done,
    /// An error event, classified.
    Error(Outcome, String),
}

impl<B> Upstream<B>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    /// The events of the next data frame; `None` at the end of the body.
    async fn read(&mut self) -> Result<Option<Vec<SseEvent>>, RouteError> {
        loop {
            match self.body.frame().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(transport_error(&self.info, e.into())),
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else { continue };
                    return self
                        .sse
                        .push(&data)
                        .map(Some)
                        .map_err(|e| self.info.failure(Outcome::Transport, &format!("malformed stream: {e}")));
                }
            }
        }
    }

    fn inspect(&mut self, event: &SseEvent) -> Result<Kind, RouteError> {
        if event.is_done() {
            return Ok(Kind::Done);
        }
        let chunk: Chunk = match serde_json::from_str(&event.data) {
            Ok(c) => c,
            Err(_) if event.event.as_deref() == Some("error") => {
                return Ok(Kind::Error(Outcome::ServerError, self.info.message(&event.data)));
            }
            Err(e) => return Err(self.info.failure(Outcome::Transport, &format!("malformed stream event: {e}"))),
        };
        if chunk.error.as_ref().is_some_and(|e| !e.is_null()) || event.event.as_deref() == Some("error") {
            return Ok(self.classify_error(&chunk, event));
        }
        if let Some(usage) = chunk.usage.as_ref().and_then(UsageProbe::usage) {
            self.usage = Some(usage);
            if chunk.choices.is_empty() {
                // OpenAI's final usage chunk (`stream_options.include_usage`).
                self.slot.set(usage);
            }
        }
        Ok(if chunk.choices.iter().any(Choice::has_content) { Kind::Content } else { Kind::Other })
    }

    /// An in-stream error event, classified like an error answer: a numeric `error.code` in the
    /// 4xx/5xx range stands for the status, otherwise 500; body codes win as usual.
    fn classify_error(&self, chunk: &Chunk, event: &SseEvent) -> Kind {
        let status = chunk
            .error
            .as_ref()
            .and_then(|e| e.get("code"))
            .and_then(Value::as_u64)
            .and_then(|c| u16::try_from(c).ok())
            .and_then(|c| StatusCode::from_u16(c).ok())
            .filter(|s| s.is_client_error() || s.is_server_error())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let outcome = classify(status, &HeaderMap::new(), event.data.as_bytes()).outcome;
        let detail = error_message(event.data.as_bytes()).unwrap_or_else(|| event.data.clone());
        Kind::Error(outcome, self.info.message(&format!("upstream stream error: {detail}")))
    }

    /// Records the latest usage seen when the stream ends, however it ends.
    fn settle_usage(&self) {
        if let Some(usage) = self.usage {
            self.slot.set(usage);
        }
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<UsageProbe>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Map<String, Value>>,
    #[serde(default)]
    text: Option<Value>,
    #[serde(default)]
    finish_reason: Option<Value>,
}

impl Choice {
    fn has_content(&self) -> bool {
        self.delta.as_ref().is_some_and(|d| d.values().any(|v| !v.is_null()))
            || self.text.as_ref().is_some_and(Value::is_string)
            || self.finish_reason.as_ref().is_some_and(|f| !f.is_null())
    }
}

/// Reads `body` up to its first content chunk and returns the streaming response; every failure
/// before that point is the attempt's `Err`. The caller bounds the time this takes.
pub(crate) async fn commit<B>(info: AttemptInfo, body: B) -> Result<http::Response<RouteBody>, RouteError>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let slot = UsageSlot::new();
    let sse = SseDecoder::new(info.max_bytes);
    let mut up = Upstream { body: Box::pin(body), sse, info, usage: None, slot: slot.clone() };
    let mut replay = VecDeque::new();
    let mut buffered = 0usize;
    let pending = 'commit: loop {
        let Some(events) = up.read().await? else {
            return Err(up.info.failure(Outcome::Transport, "stream ended before any content"));
        };
        let mut events = VecDeque::from(events);
        while let Some(event) = events.pop_front() {
            match up.inspect(&event)? {
                Kind::Error(outcome, message) => {
                    return Err(RouteError::upstream(outcome, up.info.id.clone(), message));
                }
                Kind::Done => {
                    return Err(up.info.failure(Outcome::Transport, "stream ended ([DONE]) before any content"));
                }
                kind => {
                    let bytes = encode(&event);
                    buffered += bytes.len();
                    replay.push_back(bytes);
                    if matches!(kind, Kind::Content) {
                        break 'commit events;
                    }
                    if buffered > up.info.max_bytes {
                        let text = format!("more than {} bytes before the first content chunk", up.info.max_bytes);
                        return Err(up.info.failure(Outcome::Transport, &text));
                    }
                }
            }
        }
    };
    let state = Passing { up, replay, pending, phase: Phase::Streaming };
    let body = RouteBody::new(StreamBody::new(stream::unfold(state, Passing::next))).with_usage_slot(slot);
    let mut resp = http::Response::new(body);
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(resp)
}

enum Phase {
    Streaming,
    /// `[DONE]` was sent: read the upstream to its end (so the connection can be reused), ignore
    /// what comes, then end cleanly.
    Draining,
    /// The error event is queued; this error follows it.
    Failing(RouteError),
    End,
}

/// The response body after the commit point.
struct Passing<B> {
    up: Upstream<B>,
    /// Encoded events to send before reading further.
    replay: VecDeque<Bytes>,
    /// Decoded events not yet inspected.
    pending: VecDeque<SseEvent>,
    phase: Phase,
}

impl<B> Passing<B>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    async fn next(mut self) -> Option<(Result<Frame<Bytes>, BoxError>, Self)> {
        loop {
            if let Some(bytes) = self.replay.pop_front() {
                return Some((Ok(Frame::data(bytes)), self));
            }
            match std::mem::replace(&mut self.phase, Phase::End) {
                Phase::End => return None,
                Phase::Failing(err) => {
                    // One turn for the server to write out the error event first: hyper drops
                    // the data it buffered when the body fails in the same poll, and the client
                    // would see the connection break without the event.
                    tokio::task::yield_now().await;
                    return Some((Err(err.into()), self));
                }
                Phase::Draining => {
                    let limit = self.up.info.gap.map_or(DRAIN_LIMIT, |gap| gap.min(DRAIN_LIMIT));
                    if let Ok(Ok(Some(_))) = within(Some(limit), self.up.read()).await {
                        self.phase = Phase::Draining;
                    }
                }
                Phase::Streaming => {
                    self.phase = Phase::Streaming;
                    if let Some(event) = self.pending.pop_front() {
                        self.handle(event);
                        continue;
                    }
                    match within(self.up.info.gap, self.up.read()).await {
                        Err(gap) => {
                            let text = format!("no chunk from the upstream for {gap:?}");
                            self.fail(self.up.info.failure(Outcome::Timeout, &text));
                        }
                        Ok(Err(err)) => self.fail(err),
                        Ok(Ok(None)) => {
                            self.fail(self.up.info.failure(Outcome::Transport, "stream ended without [DONE]"))
                        }
                        Ok(Ok(Some(events))) => self.pending.extend(events),
                    }
                }
            }
        }
    }

    fn handle(&mut self, event: SseEvent) {
        match self.up.inspect(&event) {
            Ok(Kind::Done) => {
                self.up.settle_usage();
                self.replay.push_back(Bytes::from_static(DONE));
                self.phase = Phase::Draining;
            }
            Ok(Kind::Error(outcome, message)) => {
                self.fail(RouteError::upstream(outcome, self.up.info.id.clone(), message))
            }
            Ok(Kind::Content | Kind::Other) => self.replay.push_back(encode(&event)),
            Err(err) => self.fail(err),
        }
    }

    /// Queues the error event, then the error itself, and stops reading the upstream.
    fn fail(&mut self, err: RouteError) {
        self.up.settle_usage();
        let outcome = err.outcome().unwrap_or(Outcome::Transport);
        self.replay.push_back(error_event(err.message(), outcome));
        self.pending.clear();
        self.phase = Phase::Failing(err);
    }
}

/// `fut`, bounded by `limit` when there is one; `Err(limit)` when it expired.
async fn within<F: Future>(limit: Option<Duration>, fut: F) -> Result<F::Output, Duration> {
    match limit {
        Some(limit) => tokio::time::timeout(limit, fut).await.map_err(|_| limit),
        None => Ok(fut.await),
    }
}

/// One event in canonical form: `event:` when named, one `data:` line per line, a blank line.
fn encode(event: &SseEvent) -> Bytes {
    let mut out = String::with_capacity(event.data.len() + 16);
    if let Some(name) = &event.event {
        out.push_str("event: ");
        out.push_str(name);
        out.push('\n');
    }
    for line in event.data.split('\n') {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

/// The error event that ends a stream broken after its commit point.
pub(crate) fn error_event(message: &str, outcome: Outcome) -> Bytes {
    let body = json!({"error": {"message": message, "type": "upstream_error", "code": outcome.as_str()}});
    Bytes::from(format!("data: {body}\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_re_encoded_line_by_line() {
        let mut sse = SseDecoder::new(1024);
        let events = sse.push(b"event: x\ndata: a\ndata: b\n\n").expect("decodes");
        assert_eq!(&encode(&events[0])[..], b"event: x\ndata: a\ndata: b\n\n");
    }

    #[test]
    fn content_is_a_delta_text_or_finish_reason() {
        let has = |raw: &str| {
            let c: Chunk = serde_json::from_str(raw).expect("chunk");
            c.choices.iter().any(Choice::has_content)
        };
        assert!(has(r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#));
        assert!(has(r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#));
        assert!(has(r#"{"choices":[{"text":"hi"}]}"#));
        assert!(has(r#"{"choices":[{"delta":{},"finish_reason":"content_filter"}]}"#));
        assert!(!has(r#"{"choices":[],"prompt_filter_results":[]}"#));
        assert!(!has(r#"{"choices":[{"delta":{"content":null}}]}"#));
    }

    #[test]
    fn the_error_event_is_openai_shaped() {
        let raw = error_event("cut", Outcome::Transport);
        let text = std::str::from_utf8(&raw).expect("utf-8");
        let json: Value = serde_json::from_str(text.trim().trim_start_matches("data: ")).expect("json");
        assert_eq!(json["error"]["type"], "upstream_error");
        assert_eq!(json["error"]["code"], "transport");
    }
}
