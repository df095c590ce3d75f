//! [`ChunkTranslator`]: a Cohere v2 chat stream re-framed as OpenAI chat completion chunks, event
//! by event.

use std::collections::HashMap;

use serde_json::json;

use super::events::StreamEvent;
use super::response::{chat_usage, finish_error, finish_reason};
use super::wire::Usage;
use crate::chat::{ChatCompletionChunk, ChunkChoice, Delta, FunctionCallDelta, ToolCallDelta};
use crate::sse::SseEvent;
use crate::{ErrorClass, StreamItem, TranslateError};

/// Re-frames a Cohere v2 chat stream as OpenAI chat completion chunks, one server-sent event at a
/// time, keeping only what later chunks need (the id, which Cohere index is which tool call, the
/// usage).
///
/// ```
/// use switchyard_dialects::StreamItem;
/// use switchyard_dialects::cohere::ChunkTranslator;
/// use switchyard_dialects::sse::SseDecoder;
///
/// let body = concat!(
///     "event: message-start\ndata: {\"type\":\"message-start\",\"id\":\"29f14a5a\",",
///     "\"delta\":{\"message\":{\"role\":\"assistant\",\"content\":[],\"tool_plan\":\"\",\"tool_calls\":[],\"citations\":[]}}}\n\n",
///     "event: content-delta\ndata: {\"type\":\"content-delta\",\"index\":0,",
///     "\"delta\":{\"message\":{\"content\":{\"text\":\"Hi\"}}}}\n\n",
///     "event: message-end\ndata: {\"type\":\"message-end\",\"delta\":{\"finish_reason\":\"COMPLETE\",",
///     "\"usage\":{\"tokens\":{\"input_tokens\":10,\"output_tokens\":2}}}}\n\n",
/// );
/// let mut sse = SseDecoder::new(1 << 20);
/// let mut chunks = ChunkTranslator::new("command-a-03-2025", 1_700_000_000, true);
/// let mut out = Vec::new();
/// for event in sse.push(body.as_bytes())? {
///     out.extend(chunks.push(&event)?);
/// }
/// let StreamItem::Chunk(text) = &out[1] else { panic!("a chunk") };
/// assert_eq!(text.choices[0].delta.content.as_deref(), Some("Hi"));
/// let StreamItem::Chunk(finish) = &out[2] else { panic!("a chunk") };
/// assert_eq!(finish.choices[0].finish_reason.as_deref(), Some("stop"));
/// assert_eq!(out.last(), Some(&StreamItem::Done));
/// assert_eq!(chunks.usage(), Some((10, 2)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ChunkTranslator {
    model: String,
    created: u64,
    include_usage: bool,
    id: String,
    /// Cohere's index of each started tool call → its position among the message's calls.
    tool_calls: HashMap<u32, u32>,
    /// How many tool calls have started.
    started: u32,
    usage: Option<Usage>,
    events: u64,
    done: bool,
}

impl ChunkTranslator {
    /// A translator for a stream from `model` (Cohere's events do not name it) created at
    /// `created` (Unix seconds); with `include_usage` (the client's
    /// `stream_options.include_usage`) the stream ends with a usage chunk.
    pub fn new(model: impl Into<String>, created: u64, include_usage: bool) -> Self {
        Self {
            model: model.into(),
            created,
            include_usage,
            id: String::new(),
            tool_calls: HashMap::new(),
            started: 0,
            usage: None,
            events: 0,
            done: false,
        }
    }

    /// Prompt and generated tokens, once `message-end` gave them.
    pub fn usage(&self) -> Option<(u64, u64)> {
        self.usage.as_ref().map(|u| (u.input_tokens(), u.output_tokens()))
    }

    /// Translates one server-sent event. Events after `message-end`, `data: [DONE]`, the `*-end`
    /// events, `debug` and unknown types give nothing; data that is not a JSON object, or a known
    /// event whose fields have the wrong types, is an error naming `events[n].data`.
    pub fn push(&mut self, event: &SseEvent) -> Result<Vec<StreamItem>, TranslateError> {
        let n = self.events;
        self.events += 1;
        if self.done || event.is_done() {
            return Ok(Vec::new());
        }
        let parsed = StreamEvent::from_json(&event.data, event.event.as_deref())
            .map_err(|e| TranslateError::new(format!("events[{n}].data"), format!("not a Cohere stream event: {e}")))?;
        Ok(parsed.into_iter().flat_map(|e| self.translate(e)).collect())
    }

    /// Translates one parsed event.
    pub fn translate(&mut self, event: StreamEvent) -> Vec<StreamItem> {
        if self.done {
            return Vec::new();
        }
        let delta = match event {
            StreamEvent::MessageStart { id } => {
                self.id = id.unwrap_or_default();
                Delta { role: Some("assistant".to_owned()), content: Some(String::new()), ..Delta::default() }
            }
            StreamEvent::Content { text, thinking, .. } => {
                let text = text.filter(|t| !t.is_empty());
                let thinking = thinking.filter(|t| !t.is_empty());
                if text.is_none() && thinking.is_none() {
                    return Vec::new();
                }
                Delta { content: text, reasoning_content: thinking, ..Delta::default() }
            }
            StreamEvent::ToolPlan(plan) if plan.is_empty() => return Vec::new(),
            StreamEvent::ToolPlan(plan) => Delta { reasoning_content: Some(plan), ..Delta::default() },
            StreamEvent::ToolCallStart { index, call } => {
                // Every start is a new call, even one that reuses an index.
                let position = self.started;
                self.started = self.started.saturating_add(1);
                self.tool_calls.insert(index, position);
                let function = call.function.unwrap_or_default();
                let function = FunctionCallDelta::new(
                    Some(function.name.unwrap_or_default()),
                    Some(function.arguments.unwrap_or_default()),
                );
                let call = ToolCallDelta::new(position, Some(call.id), Some("function".to_owned()), Some(function));
                Delta { tool_calls: Some(vec![call]), ..Delta::default() }
            }
            StreamEvent::ToolCallDelta { index, arguments } => {
                // A fragment of a call that never started has nowhere to go.
                let Some(&position) = self.tool_calls.get(&index) else { return Vec::new() };
                if arguments.is_empty() {
                    return Vec::new();
                }
                let function = FunctionCallDelta::new(None, Some(arguments));
                Delta {
                    tool_calls: Some(vec![ToolCallDelta::new(position, None, None, Some(function))]),
                    ..Delta::default()
                }
            }
            StreamEvent::Citation(citation) => {
                let mut delta = Delta::default();
                delta.extra.insert("provider_specific_fields".to_owned(), json!({ "citations": [citation] }));
                delta
            }
            StreamEvent::MessageEnd { finish_reason: reason, usage, error } => {
                return self.end(reason, usage, error);
            }
            StreamEvent::Other(_) => return Vec::new(),
        };
        vec![self.chunk(delta, None)]
    }

    fn end(&mut self, reason: Option<String>, usage: Option<Usage>, error: Option<String>) -> Vec<StreamItem> {
        self.done = true;
        if usage.is_some() {
            self.usage = usage;
        }
        let class = reason.as_deref().and_then(finish_error);
        let error = error.filter(|e| !e.is_empty());
        if class.is_some() || error.is_some() {
            let message = error.unwrap_or_else(|| {
                format!("Cohere finished the generation with {}", reason.as_deref().unwrap_or("an error"))
            });
            return vec![StreamItem::Error {
                class: class.unwrap_or(ErrorClass::ServerError),
                message,
                retry_after: None,
            }];
        }
        let finish = reason.as_deref().map_or("stop", finish_reason);
        let mut out = vec![self.chunk(Delta::default(), Some(finish.to_owned()))];
        if self.include_usage {
            let mut chunk = ChatCompletionChunk::new(self.id.clone(), self.created, self.model.clone(), Vec::new());
            chunk.usage = Some(chat_usage(self.usage.as_ref().unwrap_or(&Usage::default())));
            out.push(StreamItem::Chunk(chunk));
        }
        out.push(StreamItem::Done);
        out
    }

    fn chunk(&self, delta: Delta, finish_reason: Option<String>) -> StreamItem {
        let choice = ChunkChoice::new(0, delta, finish_reason);
        StreamItem::Chunk(ChatCompletionChunk::new(self.id.clone(), self.created, self.model.clone(), vec![choice]))
    }
}
