//! Anthropic's stream events, read from the JSON of each server-sent event's `data:` line.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::blocks::ContentBlock;
use super::error::ErrorBody;
use super::wire::MessagesResponse;
use crate::tagged::{kind, typed};

/// One event of an Anthropic stream (the JSON of its `data:` line).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// `message_start`: the answer, with no content yet.
    MessageStart {
        /// The answer so far (id, model, input usage).
        message: MessagesResponse,
    },
    /// `content_block_start`: a block begins (a `tool_use` with its id and name).
    ContentBlockStart {
        /// The block's position in the answer.
        index: u32,
        /// The block, empty.
        content_block: ContentBlock,
    },
    /// `content_block_delta`: more of a block.
    ContentBlockDelta {
        /// The block's position.
        index: u32,
        /// What is new.
        delta: BlockDelta,
    },
    /// `content_block_stop`: a block is complete.
    ContentBlockStop {
        /// The block's position.
        index: u32,
    },
    /// `message_delta`: the stop reason and the cumulative usage.
    MessageDelta {
        /// `stop_reason`, `stop_sequence`.
        delta: MessageDeltaBody,
        /// Cumulative token counts.
        usage: Option<DeltaUsage>,
    },
    /// `message_stop`: the end.
    MessageStop,
    /// `ping`: keep-alive.
    Ping,
    /// `error`: the stream failed (`overloaded_error`, ...).
    Error {
        /// The error.
        error: ErrorBody,
    },
    /// An event type this crate does not know, as given (ignored, for forward compatibility).
    Unknown(Value),
}

/// The `delta` of a `content_block_delta`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BlockDelta {
    /// `text_delta`.
    Text(String),
    /// `input_json_delta`: more of a tool input's JSON text.
    InputJson(String),
    /// `thinking_delta`.
    Thinking(String),
    /// `signature_delta`: the signature of a thinking block.
    Signature(String),
    /// Any other delta (`citations_delta`), as given.
    Other(Value),
}

/// The `delta` of a `message_delta`.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MessageDeltaBody {
    /// Why the model stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The stop sequence that matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequence: Option<String>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `usage` of a `message_delta`: cumulative counts (input ones only from newer API versions).
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeltaUsage {
    /// Generated tokens so far.
    #[serde(default)]
    pub output_tokens: u64,
    /// Uncached prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Prompt tokens written to the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    /// Prompt tokens read from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Deserialize)]
struct StartBody {
    message: MessagesResponse,
}

#[derive(Deserialize)]
struct BlockStartBody {
    index: u32,
    content_block: ContentBlock,
}

#[derive(Deserialize)]
struct BlockDeltaBody {
    index: u32,
    delta: Value,
}

#[derive(Deserialize)]
struct BlockStopBody {
    index: u32,
}

#[derive(Deserialize)]
struct MessageDeltaEvent {
    #[serde(default)]
    delta: MessageDeltaBody,
    #[serde(default)]
    usage: Option<DeltaUsage>,
}

#[derive(Deserialize)]
struct ErrorEvent {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct TextDelta {
    text: String,
}

#[derive(Deserialize)]
struct JsonDelta {
    partial_json: String,
}

#[derive(Deserialize)]
struct ThinkingDelta {
    thinking: String,
}

#[derive(Deserialize)]
struct SignatureDelta {
    signature: String,
}

impl StreamEvent {
    /// Reads the JSON of an event's `data:` line. An unknown `type` is [`StreamEvent::Unknown`];
    /// a known one that does not fit its shape is an error naming what is wrong.
    pub fn from_json(data: &str) -> Result<Self, serde_json::Error> {
        let value: Value = serde_json::from_str(data)?;
        let fit = |e: Value| serde_json::Error::io(std::io::Error::other(format!("malformed event: {e}")));
        Ok(match kind(&value) {
            Some("message_start") => Self::MessageStart { message: typed::<StartBody>(value).map_err(fit)?.message },
            Some("content_block_start") => {
                let b = typed::<BlockStartBody>(value).map_err(fit)?;
                Self::ContentBlockStart { index: b.index, content_block: b.content_block }
            }
            Some("content_block_delta") => {
                let b = typed::<BlockDeltaBody>(value).map_err(fit)?;
                let delta = match kind(&b.delta) {
                    Some("text_delta") => typed::<TextDelta>(b.delta).map(|d| BlockDelta::Text(d.text)),
                    Some("input_json_delta") => {
                        typed::<JsonDelta>(b.delta).map(|d| BlockDelta::InputJson(d.partial_json))
                    }
                    Some("thinking_delta") => typed::<ThinkingDelta>(b.delta).map(|d| BlockDelta::Thinking(d.thinking)),
                    Some("signature_delta") => {
                        typed::<SignatureDelta>(b.delta).map(|d| BlockDelta::Signature(d.signature))
                    }
                    _ => Ok(BlockDelta::Other(b.delta)),
                };
                Self::ContentBlockDelta { index: b.index, delta: delta.map_err(fit)? }
            }
            Some("content_block_stop") => {
                Self::ContentBlockStop { index: typed::<BlockStopBody>(value).map_err(fit)?.index }
            }
            Some("message_delta") => {
                let b = typed::<MessageDeltaEvent>(value).map_err(fit)?;
                Self::MessageDelta { delta: b.delta, usage: b.usage }
            }
            Some("message_stop") => Self::MessageStop,
            Some("ping") => Self::Ping,
            Some("error") => Self::Error { error: typed::<ErrorEvent>(value).map_err(fit)?.error },
            _ => Self::Unknown(value),
        })
    }
}
