//! The answer side of OpenAI Chat Completions: [`ChatCompletion`] and the streamed
//! [`ChatCompletionChunk`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ToolCall;

/// A whole (non-streamed) answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatCompletion {
    /// The answer's id.
    pub id: String,
    /// `chat.completion`.
    pub object: String,
    /// Unix seconds.
    pub created: u64,
    /// The model that answered.
    pub model: String,
    /// The choices (one per `n`).
    pub choices: Vec<Choice>,
    /// Token counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatCompletion {
    /// An answer `id` from `model` at `created` with `choices`.
    pub fn new(id: impl Into<String>, created: u64, model: impl Into<String>, choices: Vec<Choice>) -> Self {
        Self {
            id: id.into(),
            object: "chat.completion".to_owned(),
            created,
            model: model.into(),
            choices,
            usage: None,
            extra: Map::new(),
        }
    }
}

/// One choice of a whole answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Choice {
    /// Its position.
    pub index: u32,
    /// The message.
    pub message: ResponseMessage,
    /// `stop`, `length`, `tool_calls`, `content_filter`; always written (`null` when unknown),
    /// as OpenAI does.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Choice {
    /// Choice `index` with `message`, ended for `finish_reason`.
    pub fn new(index: u32, message: ResponseMessage, finish_reason: Option<String>) -> Self {
        Self { index, message, finish_reason, extra: Map::new() }
    }
}

/// The message of a whole answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResponseMessage {
    /// `assistant`.
    pub role: String,
    /// The text; always written (`null` for an answer of tool calls only), as OpenAI does.
    #[serde(default)]
    pub content: Option<String>,
    /// The model's reasoning (LiteLLM's field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// The reasoning as signed blocks a client sends back on its next turn (LiteLLM's field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_blocks: Option<Vec<Value>>,
    /// The tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResponseMessage {
    /// An assistant message with `content`.
    pub fn assistant(content: Option<String>) -> Self {
        Self {
            role: "assistant".to_owned(),
            content,
            reasoning_content: None,
            thinking_blocks: None,
            tool_calls: None,
            extra: Map::new(),
        }
    }
}

/// Token counts.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub prompt_tokens: u64,
    /// Generated tokens.
    pub completion_tokens: u64,
    /// Their sum.
    pub total_tokens: u64,
    /// Details of the prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// Prompt tokens written to the cache (LiteLLM's field, from Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    /// Prompt tokens read from the cache (LiteLLM's field, from Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Usage {
    /// `prompt` and `completion` tokens, and their sum.
    pub fn new(prompt: u64, completion: u64) -> Self {
        Self {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt.saturating_add(completion),
            ..Self::default()
        }
    }
}

/// `usage.prompt_tokens_details`.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptTokensDetails {
    /// Prompt tokens read from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PromptTokensDetails {
    /// `cached` tokens read from the cache.
    pub fn cached(cached: u64) -> Self {
        Self { cached_tokens: Some(cached), extra: Map::new() }
    }
}

/// One event of a streamed answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatCompletionChunk {
    /// The answer's id (the same in every chunk).
    pub id: String,
    /// `chat.completion.chunk`.
    pub object: String,
    /// Unix seconds.
    pub created: u64,
    /// The model that answers.
    pub model: String,
    /// The choices' deltas (empty in the final usage chunk).
    pub choices: Vec<ChunkChoice>,
    /// Token counts (the final chunk, when `stream_options.include_usage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatCompletionChunk {
    /// A chunk of answer `id` from `model` at `created` with `choices`.
    pub fn new(id: impl Into<String>, created: u64, model: impl Into<String>, choices: Vec<ChunkChoice>) -> Self {
        Self {
            id: id.into(),
            object: "chat.completion.chunk".to_owned(),
            created,
            model: model.into(),
            choices,
            usage: None,
            extra: Map::new(),
        }
    }
}

/// One choice's delta.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChunkChoice {
    /// Its position.
    pub index: u32,
    /// What is new.
    pub delta: Delta,
    /// Set on the choice's last chunk; always written (`null` before), as OpenAI does.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChunkChoice {
    /// Choice `index` with `delta`.
    pub fn new(index: u32, delta: Delta, finish_reason: Option<String>) -> Self {
        Self { index, delta, finish_reason, extra: Map::new() }
    }
}

/// What a chunk adds to a choice.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Delta {
    /// `assistant`, on the first chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// More text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// More reasoning (LiteLLM's field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Thinking blocks, with their signature once known (LiteLLM's field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_blocks: Option<Vec<Value>>,
    /// Tool call fragments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A fragment of a streamed tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCallDelta {
    /// Which call of the message (from 0), in every fragment.
    pub index: u32,
    /// The call's id, in its first fragment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `function`, in its first fragment.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The function's name (first fragment) and more of its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionCallDelta>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolCallDelta {
    /// A fragment of call `index`.
    pub fn new(index: u32, id: Option<String>, kind: Option<String>, function: Option<FunctionCallDelta>) -> Self {
        Self { index, id, kind, function, extra: Map::new() }
    }
}

/// The function part of a tool call fragment.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FunctionCallDelta {
    /// The function's name, in the call's first fragment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// More of the arguments' JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl FunctionCallDelta {
    /// A fragment naming `name` and carrying `arguments`.
    pub fn new(name: Option<String>, arguments: Option<String>) -> Self {
        Self { name, arguments, extra: Map::new() }
    }
}
