//! [`EventEncoder`]: a hub stream (OpenAI chat completion chunks) re-framed as Anthropic stream
//! events, chunk by chunk, for the `/v1/messages` front door.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::blocks::{ContentBlock, TextBlock, ThinkingBlock, ToolUseBlock};
use super::events::{BlockDelta, DeltaUsage, MessageDeltaBody, StreamEvent};
use super::reply::{anthropic_usage, stop_reason};
use super::wire::{MessagesResponse, Usage};
use crate::chat::{self, ChatCompletionChunk, Delta};

/// The kind of the content block being written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Thinking,
    Text,
    /// A tool call, by its hub index (`tool_calls[].index`).
    Tool(u32),
}

/// Re-frames a hub stream as Anthropic's event sequence, one chunk at a time, keeping only what
/// later events need (the open block, the tool calls' ids and names, the finish reason, the
/// usage).
///
/// The first chunk gives `message_start` (its id and model, empty content, zero usage unless the
/// chunk carries one). Reasoning (`reasoning_content`), text and each tool call (by its hub
/// `index`) are content blocks: a block starts (`content_block_start`; a `tool_use` with its id,
/// name and `input: {}`) whenever the kind or the tool changes, closing the one before
/// (`content_block_stop`), and its deltas are `thinking_delta`, `text_delta` and
/// `input_json_delta`. Only the hub's choice 0 is read. [`finish`](Self::finish), called at the
/// hub's `[DONE]`, closes the open block and writes `message_delta` (the stop reason of the last
/// `finish_reason`; the usage of the hub's usage chunk, which OpenAI sends after the finish
/// reason) and `message_stop`.
///
/// ```
/// use switchyard_dialects::anthropic::EventEncoder;
/// use switchyard_dialects::chat::ChatCompletionChunk;
///
/// let chunks = [
///     r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
///     r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#,
///     r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
///     r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}"#,
/// ];
/// let mut encoder = EventEncoder::new();
/// let mut events = Vec::new();
/// for chunk in chunks {
///     events.extend(encoder.push(&serde_json::from_str::<ChatCompletionChunk>(chunk)?));
/// }
/// events.extend(encoder.finish());
/// let names: Vec<&str> = events.iter().map(|e| e.name()).collect();
/// assert_eq!(names, ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
///     "message_delta", "message_stop"]);
/// assert_eq!(events[4].to_json(), r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2,"input_tokens":9}}"#);
/// assert_eq!(encoder.usage(), Some((9, 2)));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct EventEncoder {
    started: bool,
    finished: bool,
    /// The open block: its Anthropic index and kind.
    open: Option<(u32, Kind)>,
    /// The index of the next block.
    next_index: u32,
    /// The id and name of each tool call, by hub index (a call's later fragments carry neither).
    tools: HashMap<u32, (String, String)>,
    finish_reason: Option<String>,
    usage: Option<chat::Usage>,
}

impl EventEncoder {
    /// An encoder for one stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Prompt tokens (cached ones included, as [`ChunkTranslator::usage`](super::ChunkTranslator::usage)
    /// counts them) and generated tokens, once the hub's usage chunk was seen.
    pub fn usage(&self) -> Option<(u64, u64)> {
        self.usage.as_ref().map(|u| (u.prompt_tokens, u.completion_tokens))
    }

    /// The events of one hub chunk; nothing after [`finish`](Self::finish).
    pub fn push(&mut self, chunk: &ChatCompletionChunk) -> Vec<StreamEvent> {
        if self.finished {
            return Vec::new();
        }
        let mut out = Vec::new();
        if let Some(usage) = &chunk.usage {
            self.usage = Some(usage.clone());
        }
        if !self.started {
            out.push(self.message_start(&chunk.id, &chunk.model));
        }
        let Some(choice) = chunk.choices.iter().find(|c| c.index == 0) else { return out };
        self.delta(&choice.delta, &mut out);
        if let Some(reason) = &choice.finish_reason {
            self.finish_reason = Some(reason.clone());
        }
        out
    }

    /// Closes the stream: the open block's `content_block_stop`, `message_delta`, `message_stop`
    /// (a `message_start` first when no chunk came). Nothing when called again.
    pub fn finish(&mut self) -> Vec<StreamEvent> {
        if self.finished {
            return Vec::new();
        }
        let mut out = Vec::with_capacity(4);
        if !self.started {
            out.push(self.message_start("", ""));
        }
        self.close(&mut out);
        self.finished = true;
        let delta = MessageDeltaBody {
            stop_reason: self.finish_reason.as_deref().map(stop_reason).map(str::to_owned),
            ..MessageDeltaBody::default()
        };
        let usage = match &self.usage {
            Some(u) => {
                let u = anthropic_usage(u);
                DeltaUsage {
                    output_tokens: u.output_tokens,
                    input_tokens: Some(u.input_tokens),
                    cache_creation_input_tokens: u.cache_creation_input_tokens,
                    cache_read_input_tokens: u.cache_read_input_tokens,
                    extra: Map::new(),
                }
            }
            None => DeltaUsage::default(),
        };
        out.push(StreamEvent::MessageDelta { delta, usage: Some(usage) });
        out.push(StreamEvent::MessageStop);
        out
    }

    fn message_start(&mut self, id: &str, model: &str) -> StreamEvent {
        self.started = true;
        let usage = self.usage.as_ref().map(anthropic_usage).unwrap_or_else(|| Usage::new(0, 0));
        StreamEvent::MessageStart { message: MessagesResponse::new(id, model, Vec::new(), usage) }
    }

    fn delta(&mut self, delta: &Delta, out: &mut Vec<StreamEvent>) {
        if let Some(reasoning) = delta.reasoning_content.as_deref().filter(|r| !r.is_empty()) {
            let index = self.open_block(Kind::Thinking, out);
            out.push(StreamEvent::ContentBlockDelta { index, delta: BlockDelta::Thinking(reasoning.to_owned()) });
        }
        // A signature the hub carries (from an Anthropic upstream, in LiteLLM's `thinking_blocks`)
        // ends the thinking block it signs.
        for signature in signatures(delta) {
            if let Some((index, Kind::Thinking)) = self.open {
                out.push(StreamEvent::ContentBlockDelta { index, delta: BlockDelta::Signature(signature.to_owned()) });
            }
        }
        if let Some(text) = delta.content.as_deref().filter(|t| !t.is_empty()) {
            let index = self.open_block(Kind::Text, out);
            out.push(StreamEvent::ContentBlockDelta { index, delta: BlockDelta::Text(text.to_owned()) });
        }
        for call in delta.tool_calls.iter().flatten() {
            let function = call.function.as_ref();
            let known = self.tools.entry(call.index).or_default();
            if let Some(id) = call.id.as_deref().filter(|id| !id.is_empty()) {
                id.clone_into(&mut known.0);
            }
            if let Some(name) = function.and_then(|f| f.name.as_deref()).filter(|n| !n.is_empty()) {
                name.clone_into(&mut known.1);
            }
            let index = self.open_block(Kind::Tool(call.index), out);
            if let Some(arguments) = function.and_then(|f| f.arguments.as_deref()).filter(|a| !a.is_empty()) {
                out.push(StreamEvent::ContentBlockDelta { index, delta: BlockDelta::InputJson(arguments.to_owned()) });
            }
        }
    }

    /// The index of the open block of `kind`, starting it (and closing the one before) when the
    /// open block is of another kind or tool.
    fn open_block(&mut self, kind: Kind, out: &mut Vec<StreamEvent>) -> u32 {
        if let Some((index, open)) = self.open
            && open == kind
        {
            return index;
        }
        self.close(out);
        let index = self.next_index;
        self.next_index = self.next_index.saturating_add(1);
        let content_block = match kind {
            Kind::Text => ContentBlock::Text(TextBlock::new("")),
            Kind::Thinking => ContentBlock::Thinking(ThinkingBlock {
                thinking: String::new(),
                signature: Some(String::new()),
                extra: Map::new(),
            }),
            Kind::Tool(k) => {
                let (id, name) = self.tools.get(&k).cloned().unwrap_or_default();
                // Anthropic clients need an id to answer the call with; an upstream that sent none
                // gets one from the block's position.
                let id = if id.is_empty() { format!("toolu_{index}") } else { id };
                ContentBlock::ToolUse(ToolUseBlock::new(id, name, json!({})))
            }
        };
        out.push(StreamEvent::ContentBlockStart { index, content_block });
        self.open = Some((index, kind));
        index
    }

    fn close(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some((index, _)) = self.open.take() {
            out.push(StreamEvent::ContentBlockStop { index });
        }
    }
}

/// The non-empty signatures of the delta's thinking blocks.
fn signatures(delta: &Delta) -> impl Iterator<Item = &str> {
    delta
        .thinking_blocks
        .iter()
        .flatten()
        .filter(|b| crate::tagged::kind(b) == Some("thinking"))
        .filter_map(|b| b.get("signature").and_then(Value::as_str))
        .filter(|s| !s.is_empty())
}
