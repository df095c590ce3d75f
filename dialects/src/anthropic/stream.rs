//! [`ChunkTranslator`]: an Anthropic stream re-framed as OpenAI chat completion chunks, event by
//! event.

use std::collections::HashMap;

use serde_json::json;

use super::JSON_TOOL_NAME;
use super::blocks::ContentBlock;
use super::events::{BlockDelta, StreamEvent};
use super::response::{chat_usage, finish_reason, json_tool_content};
use super::wire::Usage;
use crate::TranslateError;
use crate::chat::{ChatCompletionChunk, ChunkChoice, Delta, FunctionCallDelta, ToolCallDelta};
use crate::sse::SseEvent;

/// What one Anthropic event becomes.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Translated {
    /// A chunk to send to the client (as `data: <json>`).
    Chunk(ChatCompletionChunk),
    /// The upstream failed mid-stream (`kind` is Anthropic's `error.type`, for
    /// [`classify_error`](super::classify_error)).
    Error {
        /// `error.type`, such as `overloaded_error`.
        kind: String,
        /// `error.message`.
        message: String,
    },
    /// The answer is complete: send `data: [DONE]`.
    Done,
}

/// What a content block of the stream is, by its Anthropic index.
#[derive(Clone, Debug)]
enum Block {
    Text,
    /// A client tool call: its position among the message's tool calls.
    Tool(u32),
    /// The `json_tool_call` of `response_format`: its input is the answer's content.
    JsonTool(JsonInput),
    /// Thinking, with the text so far (the signature chunk repeats it, as LiteLLM does).
    Thinking(String),
    Other,
}

/// How the input of a `json_tool_call` is streamed as content. The whole answer unwraps an input
/// of the form `{"values": X}` to `X` ([`json_tool_content`]); for the stream to give the same
/// content, the input's first bytes are held back while they could still open that wrapper.
/// Anything else streams as it comes; a wrapper is held whole and sent unwrapped when its block
/// stops.
#[derive(Clone, Debug)]
enum JsonInput {
    /// Held back: could still be `{"values":`.
    Undecided(String),
    /// Not a wrapper: each delta is content as it comes.
    Streaming,
    /// A `{"values": ...` input, held until its block stops.
    Wrapped(String),
}

/// The opening of the wrapper [`json_tool_content`] unwraps, without whitespace.
const VALUES_OPENING: &str = "{\"values\":";

impl JsonInput {
    /// Takes one `partial_json`; gives what can be sent as content now.
    fn push(&mut self, partial: String) -> Option<String> {
        match self {
            Self::Streaming => Some(partial),
            Self::Wrapped(held) => {
                held.push_str(&partial);
                None
            }
            Self::Undecided(held) => {
                held.push_str(&partial);
                let squeezed: String = held.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                if VALUES_OPENING.starts_with(&squeezed) {
                    None
                } else if squeezed.starts_with(VALUES_OPENING) {
                    *self = Self::Wrapped(std::mem::take(held));
                    None
                } else {
                    let out = std::mem::take(held);
                    *self = Self::Streaming;
                    Some(out)
                }
            }
        }
    }

    /// The content still held when the block stops: the unwrapped value of a whole input (the
    /// held text as it is when it is not JSON, as LiteLLM sends it).
    fn finish(&mut self) -> Option<String> {
        let held = match std::mem::replace(self, Self::Streaming) {
            Self::Undecided(held) | Self::Wrapped(held) if !held.is_empty() => held,
            _ => return None,
        };
        Some(match serde_json::from_str(&held) {
            Ok(input) => json_tool_content(&input),
            Err(_) => held,
        })
    }
}

/// Re-frames an Anthropic stream as OpenAI chat completion chunks, one event at a time, keeping
/// only what later chunks need (the id, the model, the open blocks, the usage; and a
/// `json_tool_call` input shaped `{"values": ...}`, sent unwrapped when its block stops, as the
/// whole answer unwraps it).
///
/// ```
/// use switchyard_dialects::anthropic::{ChunkTranslator, Translated};
/// use switchyard_dialects::sse::SseDecoder;
///
/// let body = concat!(
///     "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",",
///     "\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,",
///     "\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n",
///     "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,",
///     "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
///     "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},",
///     "\"usage\":{\"output_tokens\":2}}\n\n",
///     "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
/// );
/// let mut sse = SseDecoder::new(1 << 20);
/// let mut chunks = ChunkTranslator::new(1_700_000_000, true);
/// let mut out = Vec::new();
/// for event in sse.push(body.as_bytes())? {
///     out.extend(chunks.push(&event)?);
/// }
/// let Translated::Chunk(text) = &out[1] else { panic!("a chunk") };
/// assert_eq!(text.choices[0].delta.content.as_deref(), Some("Hi"));
/// assert_eq!(out.last(), Some(&Translated::Done));
/// assert_eq!(chunks.usage(), Some((10, 2)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ChunkTranslator {
    created: u64,
    include_usage: bool,
    id: String,
    model: String,
    blocks: HashMap<u32, Block>,
    tool_calls: u32,
    json_tool: bool,
    usage: Option<Usage>,
    events: u64,
    done: bool,
}

impl ChunkTranslator {
    /// A translator for a stream created at `created` (Unix seconds); with `include_usage` (the
    /// client's `stream_options.include_usage`) the stream ends with a usage chunk.
    pub fn new(created: u64, include_usage: bool) -> Self {
        Self {
            created,
            include_usage,
            id: String::new(),
            model: String::new(),
            blocks: HashMap::new(),
            tool_calls: 0,
            json_tool: false,
            usage: None,
            events: 0,
            done: false,
        }
    }

    /// Prompt tokens (cached ones included) and generated tokens so far; `None` before
    /// `message_start`.
    pub fn usage(&self) -> Option<(u64, u64)> {
        self.usage.as_ref().map(|u| (u.prompt_tokens(), u.output_tokens))
    }

    /// Translates one server-sent event. Events after `message_stop`, `ping` and unknown event
    /// types give nothing; an event whose data is not valid JSON, or a known event that does not
    /// fit its shape, is an error.
    pub fn push(&mut self, event: &SseEvent) -> Result<Vec<Translated>, TranslateError> {
        let n = self.events;
        self.events += 1;
        if self.done {
            return Ok(Vec::new());
        }
        let parsed = StreamEvent::from_json(&event.data).map_err(|e| {
            TranslateError::new(format!("events[{n}].data"), format!("not an Anthropic stream event: {e}"))
        })?;
        Ok(self.translate(parsed))
    }

    /// Translates one parsed event.
    pub fn translate(&mut self, event: StreamEvent) -> Vec<Translated> {
        if self.done {
            return Vec::new();
        }
        match event {
            StreamEvent::MessageStart { message } => {
                self.id = message.id;
                self.model = message.model;
                self.usage = Some(message.usage);
                let delta =
                    Delta { role: Some("assistant".to_owned()), content: Some(String::new()), ..Delta::default() };
                vec![self.chunk(delta, None)]
            }
            StreamEvent::ContentBlockStart { index, content_block } => self.block_start(index, content_block),
            StreamEvent::ContentBlockDelta { index, delta } => self.block_delta(index, delta),
            StreamEvent::ContentBlockStop { index } => self.finish_json(Some(index)),
            StreamEvent::Ping | StreamEvent::Unknown(_) => Vec::new(),
            StreamEvent::MessageDelta { delta, usage } => {
                // A block Anthropic did not stop still gives its content before the finish.
                let mut out = self.finish_json(None);
                if let Some(u) = usage {
                    let total = self.usage.get_or_insert_with(Usage::default);
                    total.output_tokens = u.output_tokens;
                    if let Some(input) = u.input_tokens {
                        total.input_tokens = input;
                    }
                    if u.cache_creation_input_tokens.is_some() {
                        total.cache_creation_input_tokens = u.cache_creation_input_tokens;
                    }
                    if u.cache_read_input_tokens.is_some() {
                        total.cache_read_input_tokens = u.cache_read_input_tokens;
                    }
                }
                let Some(reason) = delta.stop_reason else { return out };
                let mut finish = finish_reason(&reason);
                // The answer of `response_format` came as the forced tool's input: it is content.
                if finish == "tool_calls" && self.json_tool && self.tool_calls == 0 {
                    finish = "stop";
                }
                out.push(self.chunk(Delta::default(), Some(finish.to_owned())));
                out
            }
            StreamEvent::MessageStop => {
                self.done = true;
                let mut out = Vec::with_capacity(2);
                if self.include_usage {
                    let mut chunk =
                        ChatCompletionChunk::new(self.id.clone(), self.created, self.model.clone(), Vec::new());
                    chunk.usage = Some(chat_usage(self.usage.as_ref().unwrap_or(&Usage::default())));
                    out.push(Translated::Chunk(chunk));
                }
                out.push(Translated::Done);
                out
            }
            StreamEvent::Error { error } => vec![Translated::Error { kind: error.kind, message: error.message }],
        }
    }

    fn chunk(&self, delta: Delta, finish_reason: Option<String>) -> Translated {
        let choice = ChunkChoice::new(0, delta, finish_reason);
        Translated::Chunk(ChatCompletionChunk::new(self.id.clone(), self.created, self.model.clone(), vec![choice]))
    }

    fn block_start(&mut self, index: u32, block: ContentBlock) -> Vec<Translated> {
        let (kind, delta) = match block {
            ContentBlock::Text(t) => {
                let delta = (!t.text.is_empty()).then(|| Delta { content: Some(t.text), ..Delta::default() });
                (Block::Text, delta)
            }
            ContentBlock::ToolUse(t) if t.name == JSON_TOOL_NAME => {
                self.json_tool = true;
                (Block::JsonTool(JsonInput::Undecided(String::new())), None)
            }
            ContentBlock::ToolUse(t) => {
                let position = self.tool_calls;
                self.tool_calls += 1;
                let function = FunctionCallDelta::new(Some(t.name), Some(String::new()));
                let call = ToolCallDelta::new(position, Some(t.id), Some("function".to_owned()), Some(function));
                (Block::Tool(position), Some(Delta { tool_calls: Some(vec![call]), ..Delta::default() }))
            }
            ContentBlock::Thinking(t) => {
                let delta = (!t.thinking.is_empty())
                    .then(|| Delta { reasoning_content: Some(t.thinking.clone()), ..Delta::default() });
                (Block::Thinking(t.thinking), delta)
            }
            ContentBlock::RedactedThinking(t) => {
                let blocks = vec![json!({"type": "redacted_thinking", "data": t.data})];
                (Block::Other, Some(Delta { thinking_blocks: Some(blocks), ..Delta::default() }))
            }
            _ => (Block::Other, None),
        };
        self.blocks.insert(index, kind);
        delta.map(|d| vec![self.chunk(d, None)]).unwrap_or_default()
    }

    /// The held content of the `json_tool_call` block at `index` (of every one for `None`).
    fn finish_json(&mut self, index: Option<u32>) -> Vec<Translated> {
        let mut held: Vec<(u32, String)> = self
            .blocks
            .iter_mut()
            .filter(|(i, _)| index.is_none_or(|index| **i == index))
            .filter_map(|(i, block)| match block {
                Block::JsonTool(input) => input.finish().map(|content| (*i, content)),
                _ => None,
            })
            .collect();
        held.sort_unstable_by_key(|(i, _)| *i);
        held.into_iter()
            .map(|(_, content)| self.chunk(Delta { content: Some(content), ..Delta::default() }, None))
            .collect()
    }

    fn block_delta(&mut self, index: u32, delta: BlockDelta) -> Vec<Translated> {
        let block = self.blocks.get_mut(&index);
        let out = match (delta, block) {
            (BlockDelta::Text(text), _) => Delta { content: Some(text), ..Delta::default() },
            (BlockDelta::InputJson(json), Some(Block::JsonTool(input))) => match input.push(json) {
                Some(content) => Delta { content: Some(content), ..Delta::default() },
                None => return Vec::new(),
            },
            (BlockDelta::InputJson(json), Some(Block::Tool(position))) => {
                let function = FunctionCallDelta::new(None, Some(json));
                Delta {
                    tool_calls: Some(vec![ToolCallDelta::new(*position, None, None, Some(function))]),
                    ..Delta::default()
                }
            }
            (BlockDelta::Thinking(text), block) => {
                if let Some(Block::Thinking(so_far)) = block {
                    so_far.push_str(&text);
                }
                let blocks = vec![json!({"type": "thinking", "thinking": text})];
                Delta { reasoning_content: Some(text), thinking_blocks: Some(blocks), ..Delta::default() }
            }
            (BlockDelta::Signature(signature), block) => {
                let thinking = match block {
                    Some(Block::Thinking(so_far)) => so_far.clone(),
                    _ => String::new(),
                };
                let blocks = vec![json!({"type": "thinking", "thinking": thinking, "signature": signature})];
                Delta { reasoning_content: Some(String::new()), thinking_blocks: Some(blocks), ..Delta::default() }
            }
            // JSON for a block that is not a tool call, citations, and deltas of newer kinds.
            _ => return Vec::new(),
        };
        vec![self.chunk(out, None)]
    }
}
