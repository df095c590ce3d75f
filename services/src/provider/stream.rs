//! Streaming answers (SSE) and their commit point.
//!
//! [`commit`] reads the upstream's events until the first content: every failure before it is an
//! ordinary `Err` of the attempt. The response body then replays what was read and passes the
//! rest on; a failure after the commit point ends the body with one error event in the client's
//! dialect and then an `Err` carrying a `RouteError`, never with a clean end.
//!
//! Every upstream event is read in the hub (chat completion chunks: an Anthropic event through
//! the dialect's translator, a Responses API event through its inspector) to find the commit
//! point, the usage and errors; what the client receives is the upstream's own event when the
//! dialects match (passthrough), or the hub chunk encoded in the client's dialect.

use std::{
    collections::VecDeque,
    pin::Pin,
    time::{Duration, SystemTime},
};

use bytes::Bytes;
use futures_util::stream;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, StreamBody};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use switchyard_layers::{
    BoxError, Outcome, ResponseId, RouteBody, RouteError, Usage, body::UsageSlot, outcome::classify,
};

use super::{
    catalog::Wire,
    response::{AttemptInfo, Mask, UsageProbe, class_outcome, envelope_status, error_message, transport_error},
};
use crate::openai::{SseDecoder, SseEvent};
use switchyard_dialects::{
    StreamItem,
    anthropic::{self, Translated},
    bedrock,
    chat::ChatCompletionChunk,
    cohere, gemini, responses,
};

/// OpenAI's end-of-stream event.
const DONE: &[u8] = b"data: [DONE]\n\n";

/// How long the body waits, after the end of the answer, for the upstream to end its body.
const DRAIN_LIMIT: Duration = Duration::from_secs(1);

/// The upstream half of a stream: its body, the SSE decoder and what was learnt so far.
struct Upstream<B> {
    body: Pin<Box<B>>,
    sse: SseDecoder,
    info: AttemptInfo,
    /// The deployment's secrets, masked out of every event that leaves.
    mask: Mask,
    /// The latest usage seen (some servers report it on every chunk).
    usage: Option<Usage>,
    slot: UsageSlot,
    /// For an Anthropic deployment: its events read as hub chunks.
    translator: Option<anthropic::ChunkTranslator>,
    /// For a Gemini or Cohere deployment: its events read as hub items.
    hub: Hub,
    /// The client's dialect, when it is not the hub's and the answer is translated.
    encoder: Encoder,
    /// A Responses API stream's id (`response.created`).
    response_id: Option<String>,
}

/// The translator of a deployment whose stream is read event by event into [`StreamItem`]s.
enum Hub {
    None,
    Gemini(Box<gemini::ChunkTranslator>),
    Cohere(Box<cohere::ChunkTranslator>),
    /// Bedrock's ConverseStream: AWS event-stream frames, not server-sent events.
    Bedrock(Box<bedrock::EventStreamDecoder>, Box<bedrock::ChunkTranslator>),
    /// The body ended and the translator's last items were taken.
    Finished,
}

/// How hub chunks reach a client that speaks another dialect.
enum Encoder {
    /// The client speaks the hub's dialect, or the upstream's (passthrough).
    None,
    Anthropic(Box<anthropic::EventEncoder>),
    Responses(Box<responses::EventEncoder>),
}

/// What one event means.
enum Kind {
    /// A choice with a delta (role, content, tool calls, ...), text, or a finish reason.
    Content,
    /// Anything else to pass on (Azure's prompt-filter results, usage-only chunks, pings).
    Other,
    /// The answer is complete.
    Done,
    /// An error event, classified.
    Error(Outcome, String),
}

/// One event read from the upstream: what it means, and the bytes the client receives for it.
struct Step {
    kind: Kind,
    out: Vec<Bytes>,
}

impl<B> Upstream<B>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    /// The events of the next data frame; `None` at the end of the body.
    async fn read(&mut self) -> Result<Option<Vec<Step>>, RouteError> {
        loop {
            match self.body.frame().await {
                None => {
                    // A dialect without an end-of-stream event (Gemini) ends its answer when its
                    // body ends: its translator's last items (usage, the end, or the failure of
                    // an answer cut short).
                    let last = match std::mem::replace(&mut self.hub, Hub::Finished) {
                        Hub::Gemini(mut t) => t.finish(),
                        Hub::Bedrock(frames, mut t) => {
                            frames.finish().map_err(|e| {
                                self.info.failure(Outcome::Transport, &format!("stream cut inside a frame: {e}"))
                            })?;
                            t.finish()
                        }
                        _ => return Ok(None),
                    };
                    let mut steps = Vec::new();
                    self.items(last, &mut steps)?;
                    return Ok(Some(steps));
                }
                Some(Err(e)) => return Err(transport_error(&self.info, e.into())),
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else { continue };
                    if let Hub::Bedrock(frames, translator) = &mut self.hub {
                        let fail = |e: switchyard_dialects::TranslateError| format!("malformed event stream: {e}");
                        let mut items = Vec::new();
                        let events = frames.push(&data).map_err(|e| self.info.failure(Outcome::Transport, &fail(e)))?;
                        for event in &events {
                            let more =
                                translator.push(event).map_err(|e| self.info.failure(Outcome::Transport, &fail(e)))?;
                            items.extend(more);
                        }
                        let mut steps = Vec::with_capacity(items.len());
                        self.items(items, &mut steps)?;
                        return Ok(Some(steps));
                    }
                    let events = self
                        .sse
                        .push(&data)
                        .map_err(|e| self.info.failure(Outcome::Transport, &format!("malformed stream: {e}")))?;
                    let mut steps = Vec::with_capacity(events.len());
                    for event in events {
                        self.steps(event, &mut steps)?;
                    }
                    return Ok(Some(steps));
                }
            }
        }
    }

    /// What one upstream event means and what the client receives for it.
    fn steps(&mut self, event: SseEvent, out: &mut Vec<Step>) -> Result<(), RouteError> {
        let passthrough = self.info.route.is_passthrough();
        match self.info.route.egress {
            Wire::OpenAi => {
                let kind = self.inspect(&event)?;
                let bytes = self.emit(&event, &kind)?;
                out.push(Step { kind, out: bytes });
            }
            Wire::Anthropic => {
                let Some(translator) = self.translator.as_mut() else {
                    return Err(self.info.failure(Outcome::Transport, "no translator for an Anthropic stream"));
                };
                let translated = translator.push(&event).map_err(|e| {
                    self.info.failure(Outcome::Transport, &format!("malformed Anthropic stream event: {e}"))
                })?;
                let mut strongest: Option<Kind> = None;
                for item in translated {
                    let (kind, hub) = match item {
                        Translated::Chunk(chunk) => (self.chunk_kind(&chunk), Some(chunk)),
                        Translated::Error { kind, message } => {
                            let data = anthropic::error_json(&kind, &message);
                            let outcome = class_outcome(anthropic::classify_error(0, data.as_bytes()));
                            let text = self.info.message(&format!("upstream stream error: {message}"));
                            (Kind::Error(outcome, text), None)
                        }
                        Translated::Done => (Kind::Done, None),
                        _ => continue,
                    };
                    if passthrough {
                        strongest = Some(match strongest {
                            Some(seen) if rank(&seen) >= rank(&kind) => seen,
                            _ => kind,
                        });
                    } else {
                        let bytes = match hub {
                            Some(chunk) => self.emit_chunk(chunk, &kind)?,
                            None => self.emit_end(&kind),
                        };
                        out.push(Step { kind, out: bytes });
                    }
                }
                if passthrough {
                    // The client receives the upstream's own event, whatever it meant.
                    let kind = strongest.unwrap_or(Kind::Other);
                    let bytes = match kind {
                        Kind::Error(..) => Vec::new(),
                        _ => vec![encode(&event, &self.mask)],
                    };
                    out.push(Step { kind, out: bytes });
                }
            }
            Wire::Gemini | Wire::Cohere | Wire::Bedrock => {
                let items = match &mut self.hub {
                    Hub::Gemini(t) => t.push(&event),
                    Hub::Cohere(t) => t.push(&event),
                    // Bedrock's frames are read in `read`, never as server-sent events.
                    Hub::Bedrock(..) | Hub::None | Hub::Finished => Ok(Vec::new()),
                }
                .map_err(|e| self.info.failure(Outcome::Transport, &format!("malformed stream event: {e}")))?;
                self.items(items, out)?;
            }
            Wire::Responses => {
                let facts = responses::inspect_event(&event.data);
                if let Some(id) = facts.response_id.clone() {
                    self.response_id = Some(id);
                }
                if let Some((input, output)) = facts.usage {
                    self.usage = Some(Usage::new(input, output));
                }
                let kind = if let Some((code, message)) = facts.error {
                    let status = envelope_status(&json!({ "code": code }));
                    let outcome = classify(status, &HeaderMap::new(), event.data.as_bytes()).outcome;
                    Kind::Error(outcome, self.info.message(&format!("upstream stream error: {message}")))
                } else if facts.done {
                    Kind::Done
                } else if facts.content {
                    Kind::Content
                } else {
                    Kind::Other
                };
                let bytes = match kind {
                    Kind::Error(..) => Vec::new(),
                    _ => vec![encode(&event, &self.mask)],
                };
                out.push(Step { kind, out: bytes });
            }
        }
        Ok(())
    }

    /// What a translator's hub items mean and what the client receives for them.
    fn items(&mut self, items: Vec<StreamItem>, out: &mut Vec<Step>) -> Result<(), RouteError> {
        for item in items {
            let (kind, bytes) = match item {
                StreamItem::Chunk(chunk) => {
                    let kind = self.chunk_kind(&chunk);
                    let bytes = self.emit_chunk(chunk, &kind)?;
                    (kind, bytes)
                }
                StreamItem::Error { class, message, .. } => {
                    let text = self.info.message(&format!("upstream stream error: {message}"));
                    (Kind::Error(class_outcome(class), text), Vec::new())
                }
                StreamItem::Done => (Kind::Done, self.emit_end(&Kind::Done)),
                _ => continue,
            };
            out.push(Step { kind, out: bytes });
        }
        Ok(())
    }

    /// The bytes a client receives for the hub event `event` of kind `kind`.
    fn emit(&mut self, event: &SseEvent, kind: &Kind) -> Result<Vec<Bytes>, RouteError> {
        if matches!(kind, Kind::Done | Kind::Error(..)) {
            return Ok(self.emit_end(kind));
        }
        if let Encoder::None = self.encoder {
            if !self.info.include_usage && self.info.route.ingress == Wire::OpenAi && is_usage_only(event) {
                // Recorded (inspect did), not sent: the client did not ask for it.
                return Ok(Vec::new());
            }
            return Ok(vec![encode(event, &self.mask)]);
        }
        let chunk = serde_json::from_str::<ChatCompletionChunk>(&event.data)
            .map_err(|e| self.info.failure(Outcome::Transport, &format!("malformed stream event: {e}")))?;
        self.emit_chunk(chunk, kind)
    }

    /// The bytes a client receives for a hub chunk made by a translator (typed: never written
    /// and read back to be inspected).
    fn emit_chunk(&mut self, chunk: ChatCompletionChunk, kind: &Kind) -> Result<Vec<Bytes>, RouteError> {
        if matches!(kind, Kind::Done | Kind::Error(..)) {
            return Ok(self.emit_end(kind));
        }
        let events: Vec<(String, String)> = match &mut self.encoder {
            Encoder::None => {
                let usage_only = chunk.choices.is_empty() && chunk.usage.is_some();
                if usage_only && !self.info.include_usage && self.info.route.ingress == Wire::OpenAi {
                    return Ok(Vec::new());
                }
                let data = serde_json::to_string(&chunk)
                    .map_err(|e| self.info.failure(Outcome::Transport, &format!("cannot encode a chunk: {e}")))?;
                return Ok(vec![encode(&SseEvent::new(None, data), &self.mask)]);
            }
            Encoder::Anthropic(enc) => {
                enc.push(&chunk).into_iter().map(|e| (e.name().to_owned(), e.to_json())).collect()
            }
            Encoder::Responses(enc) => {
                enc.push(&chunk).into_iter().map(|e| (e.name().to_owned(), e.to_json())).collect()
            }
        };
        Ok(events.into_iter().map(|(name, data)| encode(&SseEvent::new(Some(name), data), &self.mask)).collect())
    }

    /// A translator's hub chunk read for the commit point and usage, typed. Its commit point is
    /// the first text, tool call, thinking or finish reason (a translated stream's first chunk
    /// only names the role), so an error right after the upstream's opening event still falls
    /// back invisibly.
    fn chunk_kind(&mut self, chunk: &ChatCompletionChunk) -> Kind {
        if let Some(u) = &chunk.usage {
            let usage = Usage::new(u.prompt_tokens, u.completion_tokens);
            self.usage = Some(usage);
            if chunk.choices.is_empty() {
                self.slot.set(usage);
            }
        }
        let filled = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.is_empty());
        let substance = chunk.choices.iter().any(|c| {
            let d = &c.delta;
            c.finish_reason.is_some()
                || filled(&d.content)
                || filled(&d.reasoning_content)
                || d.tool_calls.as_ref().is_some_and(|t| !t.is_empty())
                || d.thinking_blocks.as_ref().is_some_and(|t| !t.is_empty())
                || d.extra.values().any(|v| !v.is_null())
        });
        if substance { Kind::Content } else { Kind::Other }
    }

    /// The bytes that end a translated answer (`Done`); nothing for an error (see
    /// [`Passing::fail`]).
    fn emit_end(&mut self, kind: &Kind) -> Vec<Bytes> {
        if !matches!(kind, Kind::Done) {
            return Vec::new();
        }
        let events: Vec<(String, String)> = match &mut self.encoder {
            Encoder::None => return vec![Bytes::from_static(DONE)],
            Encoder::Anthropic(enc) => enc.finish().into_iter().map(|e| (e.name().to_owned(), e.to_json())).collect(),
            Encoder::Responses(enc) => enc.finish().into_iter().map(|e| (e.name().to_owned(), e.to_json())).collect(),
        };
        events.into_iter().map(|(name, data)| encode(&SseEvent::new(Some(name), data), &self.mask)).collect()
    }

    /// The event that ends a stream broken after its commit point, in the client's dialect.
    fn error_event(&mut self, message: &str, outcome: Outcome) -> Bytes {
        match (self.info.route.ingress, &mut self.encoder) {
            // No client speaks Gemini or Cohere to the gateway.
            (Wire::OpenAi | Wire::Gemini | Wire::Cohere | Wire::Bedrock, _) => error_event(message, outcome),
            (Wire::Anthropic, _) => {
                let kind = anthropic::error_type_for_status(outcome_status(outcome));
                let data = anthropic::error_json(kind, message);
                encode(&SseEvent::new(Some("error".to_owned()), data), &self.mask)
            }
            (Wire::Responses, Encoder::Responses(enc)) => {
                let events = enc.failed(outcome.as_str(), message);
                let mut out = Vec::new();
                for e in events {
                    out.extend_from_slice(&encode(&SseEvent::new(Some(e.name().to_owned()), e.to_json()), &self.mask));
                }
                Bytes::from(out)
            }
            (Wire::Responses, _) => {
                let data = json!({"type": "error", "code": outcome.as_str(), "message": message, "param": null});
                encode(&SseEvent::new(Some("error".to_owned()), data.to_string()), &self.mask)
            }
        }
    }

    /// A hub chunk (or an OpenAI upstream's event) read for the commit point, usage and errors.
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
        // Only an OpenAI upstream's events are read here; translators' chunks go to `chunk_kind`.
        let content = chunk.choices.iter().any(Choice::has_content);
        Ok(if content { Kind::Content } else { Kind::Other })
    }

    /// An in-stream error event of an OpenAI upstream, classified like an error answer under the
    /// status its envelope stands for ([`envelope_status`]: a 4xx/5xx `error.code`, a
    /// well-known code or type word, otherwise 500); body codes win as usual.
    fn classify_error(&self, chunk: &Chunk, event: &SseEvent) -> Kind {
        let status = chunk.error.as_ref().map_or(StatusCode::INTERNAL_SERVER_ERROR, envelope_status);
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

/// How strongly an event's meaning counts when one upstream event stands for several hub
/// chunks: an error wins, then the end, then content.
fn rank(kind: &Kind) -> u8 {
    match kind {
        Kind::Other => 0,
        Kind::Content => 1,
        Kind::Done => 2,
        Kind::Error(..) => 3,
    }
}

/// The HTTP status that an outcome stands for, for an error event's type.
fn outcome_status(outcome: Outcome) -> u16 {
    match outcome {
        Outcome::RateLimited => 429,
        Outcome::ContextWindowExceeded | Outcome::ContentPolicy | Outcome::BadRequest => 400,
        Outcome::Auth => 401,
        Outcome::NotFound => 404,
        Outcome::Timeout => 504,
        _ => 500,
    }
}

/// A chunk with no choices and a usage: the final usage chunk of `stream_options.include_usage`.
fn is_usage_only(event: &SseEvent) -> bool {
    serde_json::from_str::<Chunk>(&event.data).is_ok_and(|c| c.choices.is_empty() && c.usage.is_some())
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
    let mask = info.mask();
    let created = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let route = info.route;
    let translator = (route.egress == Wire::Anthropic).then(|| {
        // The hub's usage chunk is always made: usage is recorded whether or not the client
        // asked for it (a chat client that did not is not sent it).
        anthropic::ChunkTranslator::new(created, true)
    });
    let model = match route.egress {
        Wire::Bedrock => super::url::bedrock_model_id(&info.deployment.model).to_owned(),
        _ => info.deployment.model.split_once('/').map_or(&*info.deployment.model, |(_, m)| m).to_owned(),
    };
    let hub = match route.egress {
        Wire::Gemini => Hub::Gemini(Box::new(gemini::ChunkTranslator::new(model, created, true))),
        Wire::Cohere => Hub::Cohere(Box::new(cohere::ChunkTranslator::new(model, created, true))),
        Wire::Bedrock => Hub::Bedrock(
            Box::new(bedrock::EventStreamDecoder::new(info.max_bytes)),
            Box::new(bedrock::ChunkTranslator::new(model, created, true)),
        ),
        _ => Hub::None,
    };
    let encoder = match (route.ingress, route.is_passthrough()) {
        (Wire::Anthropic, false) => Encoder::Anthropic(Box::new(anthropic::EventEncoder::new())),
        (Wire::Responses, false) => {
            let id = info.response_id.clone().unwrap_or_else(|| "resp_switchyard".to_owned());
            let model = info.deployment.model.rsplit('/').next().unwrap_or_default().to_owned();
            Encoder::Responses(Box::new(responses::EventEncoder::new(id, model, created)))
        }
        _ => Encoder::None,
    };
    let response_id = match route.ingress {
        Wire::Responses if !route.is_passthrough() => info.response_id.clone(),
        _ => None,
    };
    let mut up = Upstream {
        body: Box::pin(body),
        sse,
        info,
        mask,
        usage: None,
        slot: slot.clone(),
        translator,
        hub,
        encoder,
        response_id,
    };
    let mut replay = VecDeque::new();
    let mut buffered = 0usize;
    let pending = 'commit: loop {
        let Some(steps) = up.read().await? else {
            return Err(up.info.failure(Outcome::Transport, "stream ended before any content"));
        };
        let mut steps = VecDeque::from(steps);
        while let Some(step) = steps.pop_front() {
            match step.kind {
                Kind::Error(outcome, message) => {
                    return Err(RouteError::upstream(outcome, up.info.id.clone(), message));
                }
                Kind::Done => {
                    return Err(up.info.failure(Outcome::Transport, "stream ended before any content"));
                }
                kind => {
                    buffered += step.out.iter().map(Bytes::len).sum::<usize>();
                    replay.extend(step.out);
                    if matches!(kind, Kind::Content) {
                        break 'commit steps;
                    }
                    if buffered > up.info.max_bytes {
                        let text = format!("more than {} bytes before the first content chunk", up.info.max_bytes);
                        return Err(up.info.failure(Outcome::Transport, &text));
                    }
                }
            }
        }
    };
    let response_id = up.response_id.clone();
    let state = Passing { up, replay, pending, phase: Phase::Streaming };
    let body = RouteBody::new(StreamBody::new(stream::unfold(state, Passing::next))).with_usage_slot(slot);
    let mut resp = http::Response::new(body);
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Some(id) = response_id {
        resp.extensions_mut().insert(ResponseId::new(id));
    }
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
    /// Events read but not yet passed on.
    pending: VecDeque<Step>,
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
                    if let Some(step) = self.pending.pop_front() {
                        self.handle(step);
                        continue;
                    }
                    match within(self.up.info.gap, self.up.read()).await {
                        Err(gap) => {
                            let text = format!("no chunk from the upstream for {gap:?}");
                            self.fail(self.up.info.failure(Outcome::Timeout, &text));
                        }
                        Ok(Err(err)) => self.fail(err),
                        Ok(Ok(None)) => self.fail(
                            self.up.info.failure(Outcome::Transport, "stream ended before the answer was complete"),
                        ),
                        Ok(Ok(Some(steps))) => self.pending.extend(steps),
                    }
                }
            }
        }
    }

    fn handle(&mut self, step: Step) {
        match step.kind {
            Kind::Done => {
                self.up.settle_usage();
                self.replay.extend(step.out);
                self.phase = Phase::Draining;
            }
            Kind::Error(outcome, message) => self.fail(RouteError::upstream(outcome, self.up.info.id.clone(), message)),
            Kind::Content | Kind::Other => self.replay.extend(step.out),
        }
    }

    /// Queues the error event, then the error itself, and stops reading the upstream.
    fn fail(&mut self, err: RouteError) {
        self.up.settle_usage();
        let outcome = err.outcome().unwrap_or(Outcome::Transport);
        let event = self.up.error_event(err.message(), outcome);
        self.replay.push_back(event);
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

/// One event in canonical form (`event:` when named, one `data:` line per line, a blank line)
/// with the deployment's secrets masked: in the data's JSON strings however escaped, and raw in
/// every line. Nothing else of the upstream's event is re-emitted (`id:`, `retry:` and comments
/// are dropped by the decoder).
fn encode(event: &SseEvent, mask: &Mask) -> Bytes {
    let data = mask.json_text(&event.data);
    let mut out = String::with_capacity(data.len() + 16);
    if let Some(name) = &event.event {
        out.push_str("event: ");
        out.push_str(name);
        out.push('\n');
    }
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    mask.raw(Bytes::from(out))
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
        assert_eq!(&encode(&events[0], &Mask::none())[..], b"event: x\ndata: a\ndata: b\n\n");
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
