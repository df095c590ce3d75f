//! [`ChunkTranslator`]: a ConverseStream re-framed as OpenAI chat completion chunks, event by
//! event.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::JSON_TOOL_NAME;
use super::error::{classify_error, error_message};
use super::eventstream::Event;
use super::response::{answer_id, chat_usage, finish_reason};
use super::wire::TokenUsage;
use crate::chat::{ChatCompletionChunk, ChunkChoice, Delta, FunctionCallDelta, ToolCallDelta};
use crate::{StreamItem, TranslateError};

/// `contentBlockStart`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockStart {
    content_block_index: u32,
    #[serde(default)]
    start: Start,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Start {
    tool_use: Option<ToolUseStart>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolUseStart {
    tool_use_id: String,
    name: String,
}

/// `contentBlockDelta`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockDelta {
    content_block_index: u32,
    #[serde(default)]
    delta: DeltaBody,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeltaBody {
    text: Option<String>,
    tool_use: Option<ToolUseDelta>,
    reasoning_content: Option<ReasoningDelta>,
}

#[derive(Deserialize)]
struct ToolUseDelta {
    #[serde(default)]
    input: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReasoningDelta {
    text: Option<String>,
    signature: Option<String>,
    redacted_content: Option<String>,
}

/// `messageStop`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageStop {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// `metadata`.
#[derive(Deserialize)]
struct Metadata {
    #[serde(default)]
    usage: TokenUsage,
}

/// What a content block of the stream is, by its `contentBlockIndex`.
#[derive(Clone, Debug)]
enum Block {
    /// A client tool call: its position among the message's tool calls.
    Tool(u32),
    /// The `json_tool_call` of `response_format`: its input is the answer's content.
    JsonTool,
    /// Reasoning, with the text so far (the signature chunk repeats it, as LiteLLM does).
    Thinking(String),
}

/// Re-frames a ConverseStream as OpenAI chat completion chunks, one [`Event`] at a time (from
/// [`EventStreamDecoder`](super::EventStreamDecoder)), keeping only what later chunks need: the
/// open blocks, the tool calls' positions, the usage.
///
/// `messageStart` gives the role chunk; text, tool-use input and reasoning deltas give one chunk
/// each (a `toolUse` start gives the call's id and name); `messageStop` gives the chunk with the
/// `finish_reason`; `metadata` gives the usage chunk (with `include_usage`). The answer ends with
/// [`StreamItem::Done`] once both `messageStop` and `metadata` have arrived (Bedrock sends
/// `metadata` last); when the body ends first, call [`finish`](Self::finish). An exception
/// message becomes one [`StreamItem::Error`], classified by [`classify_error`], and ends the
/// answer.
///
/// ```
/// use switchyard_dialects::StreamItem;
/// use switchyard_dialects::bedrock::{ChunkTranslator, Event};
///
/// let events = [
///     Event::new("messageStart", r#"{"role":"assistant"}"#),
///     Event::new("contentBlockDelta", r#"{"contentBlockIndex":0,"delta":{"text":"Hi"}}"#),
///     Event::new("contentBlockStop", r#"{"contentBlockIndex":0}"#),
///     Event::new("messageStop", r#"{"stopReason":"end_turn"}"#),
///     Event::new("metadata", r#"{"usage":{"inputTokens":10,"outputTokens":2,"totalTokens":12},"metrics":{"latencyMs":80}}"#),
/// ];
/// let mut chunks = ChunkTranslator::new("anthropic.claude-3-haiku-20240307-v1:0", 1_700_000_000, true);
/// let mut out = Vec::new();
/// for event in &events {
///     out.extend(chunks.push(event)?);
/// }
/// let StreamItem::Chunk(text) = &out[1] else { panic!("a chunk") };
/// assert_eq!(text.choices[0].delta.content.as_deref(), Some("Hi"));
/// let StreamItem::Chunk(usage) = &out[3] else { panic!("a chunk") };
/// assert_eq!(usage.usage.as_ref().map(|u| u.total_tokens), Some(12));
/// assert_eq!(out.last(), Some(&StreamItem::Done));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ChunkTranslator {
    id: String,
    model: String,
    created: u64,
    include_usage: bool,
    blocks: HashMap<u32, Block>,
    tool_calls: u32,
    json_tool: bool,
    usage: Option<TokenUsage>,
    stopped: bool,
    events: u64,
    done: bool,
}

impl ChunkTranslator {
    /// A translator for an answer of `model` created at `created` (Unix seconds); with
    /// `include_usage` (the client's `stream_options.include_usage`) the answer ends with a usage
    /// chunk. The chunks' id is `chatcmpl-bedrock-<created>` (see [`with_id`](Self::with_id)).
    pub fn new(model: impl Into<String>, created: u64, include_usage: bool) -> Self {
        Self {
            id: answer_id(created),
            model: model.into(),
            created,
            include_usage,
            blocks: HashMap::new(),
            tool_calls: 0,
            json_tool: false,
            usage: None,
            stopped: false,
            events: 0,
            done: false,
        }
    }

    /// Sets the chunks' id (ConverseStream sends none; the provider may use the request id).
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// Prompt tokens (cached ones included) and generated tokens; `None` before `metadata`.
    pub fn usage(&self) -> Option<(u64, u64)> {
        self.usage.as_ref().map(|u| (u.prompt_tokens(), u.output_tokens))
    }

    /// Whether the answer is complete (or failed): later events give nothing.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Translates one message. Events after the end and unknown event types give nothing; a
    /// known event whose payload does not fit its shape is an error naming it
    /// (`events[n].payload`).
    pub fn push(&mut self, event: &Event) -> Result<Vec<StreamItem>, TranslateError> {
        let n = self.events;
        self.events += 1;
        if self.done {
            return Ok(Vec::new());
        }
        if event.is_error() {
            self.done = true;
            let message = error_message(&event.payload).unwrap_or_else(|| event.event_type.clone());
            let class = classify_error(0, Some(&event.event_type), &event.payload);
            return Ok(vec![StreamItem::Error { class, message, retry_after: None }]);
        }
        let invalid = |e: serde_json::Error| {
            TranslateError::new(
                format!("events[{n}].payload"),
                format!("not a ConverseStream {} event: {e}", event.event_type),
            )
        };
        Ok(match event.event_type.as_str() {
            "messageStart" => {
                let delta =
                    Delta { role: Some("assistant".to_owned()), content: Some(String::new()), ..Delta::default() };
                vec![self.chunk(delta, None)]
            }
            "contentBlockStart" => {
                let start: BlockStart = serde_json::from_slice(&event.payload).map_err(invalid)?;
                self.block_start(start)
            }
            "contentBlockDelta" => {
                let delta: BlockDelta = serde_json::from_slice(&event.payload).map_err(invalid)?;
                self.block_delta(delta)
            }
            "messageStop" => {
                let stop: MessageStop = serde_json::from_slice(&event.payload).map_err(invalid)?;
                self.stopped = true;
                let mut finish = stop.stop_reason.as_deref().map_or("stop", finish_reason);
                // The answer of `response_format` came as the forced tool's input: it is content.
                if finish == "tool_calls" && self.json_tool && self.tool_calls == 0 {
                    finish = "stop";
                }
                let mut out = vec![self.chunk(Delta::default(), Some(finish.to_owned()))];
                if self.usage.is_some() {
                    out.extend(self.end());
                }
                out
            }
            "metadata" => {
                let metadata: Metadata = serde_json::from_slice(&event.payload).map_err(invalid)?;
                self.usage = Some(metadata.usage);
                if self.stopped { self.end() } else { Vec::new() }
            }
            // contentBlockStop, and event types newer than this code.
            _ => Vec::new(),
        })
    }

    /// The body ended. After `messageStop` without `metadata`, the answer ends (its usage chunk
    /// counts nothing); before `messageStop`, the upstream failed: one [`StreamItem::Error`]
    /// (`ServerError`). Nothing once the answer ended.
    pub fn finish(&mut self) -> Vec<StreamItem> {
        if self.done {
            return Vec::new();
        }
        if self.stopped {
            return self.end();
        }
        self.done = true;
        vec![StreamItem::Error {
            class: crate::ErrorClass::ServerError,
            message: "the Bedrock stream ended before messageStop".to_owned(),
            retry_after: None,
        }]
    }

    fn end(&mut self) -> Vec<StreamItem> {
        self.done = true;
        let mut out = Vec::with_capacity(2);
        if self.include_usage {
            let mut chunk = ChatCompletionChunk::new(self.id.clone(), self.created, self.model.clone(), Vec::new());
            chunk.usage = Some(chat_usage(self.usage.as_ref().unwrap_or(&TokenUsage::default())));
            out.push(StreamItem::Chunk(chunk));
        }
        out.push(StreamItem::Done);
        out
    }

    fn chunk(&self, delta: Delta, finish_reason: Option<String>) -> StreamItem {
        let choice = ChunkChoice::new(0, delta, finish_reason);
        StreamItem::Chunk(ChatCompletionChunk::new(self.id.clone(), self.created, self.model.clone(), vec![choice]))
    }

    fn block_start(&mut self, start: BlockStart) -> Vec<StreamItem> {
        let Some(tool) = start.start.tool_use else { return Vec::new() };
        if tool.name == JSON_TOOL_NAME {
            self.json_tool = true;
            self.blocks.insert(start.content_block_index, Block::JsonTool);
            return Vec::new();
        }
        let position = self.tool_calls;
        self.tool_calls += 1;
        self.blocks.insert(start.content_block_index, Block::Tool(position));
        let function = FunctionCallDelta::new(Some(tool.name), Some(String::new()));
        let call = ToolCallDelta::new(position, Some(tool.tool_use_id), Some("function".to_owned()), Some(function));
        vec![self.chunk(Delta { tool_calls: Some(vec![call]), ..Delta::default() }, None)]
    }

    fn block_delta(&mut self, delta: BlockDelta) -> Vec<StreamItem> {
        let index = delta.content_block_index;
        let DeltaBody { text, tool_use, reasoning_content } = delta.delta;
        let out = if let Some(text) = text {
            if text.is_empty() {
                return Vec::new();
            }
            Delta { content: Some(text), ..Delta::default() }
        } else if let Some(tool_use) = tool_use {
            match self.blocks.get(&index) {
                Some(Block::JsonTool) if !tool_use.input.is_empty() => {
                    Delta { content: Some(tool_use.input), ..Delta::default() }
                }
                Some(Block::Tool(position)) if !tool_use.input.is_empty() => {
                    let function = FunctionCallDelta::new(None, Some(tool_use.input));
                    Delta {
                        tool_calls: Some(vec![ToolCallDelta::new(*position, None, None, Some(function))]),
                        ..Delta::default()
                    }
                }
                // Input for a block that did not start as a tool call.
                _ => return Vec::new(),
            }
        } else if let Some(reasoning) = reasoning_content {
            match self.reasoning(index, reasoning) {
                Some(delta) => delta,
                None => return Vec::new(),
            }
        } else {
            // Deltas of newer kinds (citations, tool results of server tools, images).
            return Vec::new();
        };
        vec![self.chunk(out, None)]
    }

    fn reasoning(&mut self, index: u32, reasoning: ReasoningDelta) -> Option<Delta> {
        let block = self.blocks.entry(index).or_insert_with(|| Block::Thinking(String::new()));
        if let Some(text) = reasoning.text {
            if let Block::Thinking(so_far) = block {
                so_far.push_str(&text);
            }
            let blocks = vec![json!({"type": "thinking", "thinking": text})];
            return Some(Delta { reasoning_content: Some(text), thinking_blocks: Some(blocks), ..Delta::default() });
        }
        let blocks: Vec<Value> = if let Some(signature) = reasoning.signature {
            let thinking = match block {
                Block::Thinking(so_far) => so_far.clone(),
                _ => String::new(),
            };
            vec![json!({"type": "thinking", "thinking": thinking, "signature": signature})]
        } else if let Some(data) = reasoning.redacted_content {
            vec![json!({"type": "redacted_thinking", "data": data})]
        } else {
            return None;
        };
        Some(Delta { reasoning_content: Some(String::new()), thinking_blocks: Some(blocks), ..Delta::default() })
    }
}
