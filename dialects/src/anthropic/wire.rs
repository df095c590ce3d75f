//! Anthropic Messages API wire structs: the request and the answer (their turns and content
//! blocks are in `blocks.rs`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::blocks::{ContentBlock, Message};

/// A `POST /v1/messages` body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MessagesRequest {
    /// The model.
    pub model: String,
    /// The conversation: alternating `user` and `assistant` turns.
    pub messages: Vec<Message>,
    /// The limit on generated tokens (required by Anthropic).
    pub max_tokens: u64,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<System>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Number>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<Number>,
    /// Top-k sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u64>,
    /// Whether to stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// `{"user_id"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model must use the tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Extended thinking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    /// Every other field (`service_tier`, `mcp_servers`, `container`, ...), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl MessagesRequest {
    /// A request for `model` with `messages`, generating at most `max_tokens`.
    pub fn new(model: impl Into<String>, messages: Vec<Message>, max_tokens: u64) -> Self {
        Self {
            model: model.into(),
            messages,
            max_tokens,
            system: None,
            stop_sequences: None,
            temperature: None,
            top_p: None,
            top_k: None,
            stream: None,
            metadata: None,
            tools: None,
            tool_choice: None,
            thinking: None,
            extra: Map::new(),
        }
    }
}

/// The system prompt: a string, or text blocks (which can carry `cache_control`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum System {
    /// Plain text.
    Text(String),
    /// Text blocks.
    Blocks(Vec<ContentBlock>),
}

/// `metadata`.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Metadata {
    /// An opaque end-user id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Metadata {
    /// Metadata naming the end user.
    pub fn user(user_id: impl Into<String>) -> Self {
        Self { user_id: Some(user_id.into()), extra: Map::new() }
    }
}

/// A tool definition: a client tool (`name`, `description`, `input_schema`) or a server tool
/// (`type`, `name`, its own settings in `extra`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Tool {
    /// The tool's name.
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its input, as a JSON Schema (client tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// Prompt caching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Value>,
    /// Every other field (`type` of server tools), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Tool {
    /// A client tool.
    pub fn new(name: impl Into<String>, description: Option<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            description,
            input_schema: Some(input_schema),
            cache_control: None,
            extra: Map::new(),
        }
    }
}

/// `tool_choice`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolChoice {
    /// `auto`, `any`, `tool` or `none`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The tool to call, for `tool`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// At most one tool call per turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_parallel_tool_use: Option<bool>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolChoice {
    /// A choice of kind `kind` (`auto`, `any`, `none`).
    pub fn new(kind: impl Into<String>) -> Self {
        Self { kind: kind.into(), name: None, disable_parallel_tool_use: None, extra: Map::new() }
    }

    /// Forces the tool `name`.
    pub fn tool(name: impl Into<String>) -> Self {
        Self { name: Some(name.into()), ..Self::new("tool") }
    }
}

/// `thinking`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Thinking {
    /// `enabled` (or `disabled`, `adaptive`).
    #[serde(rename = "type")]
    pub kind: String,
    /// Tokens the model may spend thinking (below `max_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Thinking {
    /// Thinking enabled with `budget_tokens`.
    pub fn enabled(budget_tokens: u64) -> Self {
        Self { kind: "enabled".to_owned(), budget_tokens: Some(budget_tokens), extra: Map::new() }
    }
}

/// A whole (non-streamed) answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MessagesResponse {
    /// The answer's id (`msg_...`).
    pub id: String,
    /// `message`.
    #[serde(rename = "type", default = "message_kind")]
    pub kind: String,
    /// `assistant`.
    #[serde(default = "assistant_role")]
    pub role: String,
    /// The model that answered.
    pub model: String,
    /// The content blocks.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// `end_turn`, `max_tokens`, `stop_sequence`, `tool_use`, `pause_turn`, `refusal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The stop sequence that matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequence: Option<String>,
    /// Token counts.
    #[serde(default)]
    pub usage: Usage,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn message_kind() -> String {
    "message".to_owned()
}

fn assistant_role() -> String {
    "assistant".to_owned()
}

impl MessagesResponse {
    /// An answer `id` from `model` with `content`.
    pub fn new(id: impl Into<String>, model: impl Into<String>, content: Vec<ContentBlock>, usage: Usage) -> Self {
        Self {
            id: id.into(),
            kind: message_kind(),
            role: assistant_role(),
            model: model.into(),
            content,
            stop_reason: None,
            stop_sequence: None,
            usage,
            extra: Map::new(),
        }
    }
}

/// Token counts of an answer.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Prompt tokens neither read from nor written to the cache.
    #[serde(default)]
    pub input_tokens: u64,
    /// Generated tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens written to the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    /// Prompt tokens read from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
    /// Every other field (`service_tier`, `server_tool_use`), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Usage {
    /// `input` and `output` tokens, no cache.
    pub fn new(input: u64, output: u64) -> Self {
        Self { input_tokens: input, output_tokens: output, ..Self::default() }
    }

    /// Every prompt token: uncached, written to and read from the cache (as LiteLLM counts
    /// `prompt_tokens`).
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_creation_input_tokens.unwrap_or(0))
            .saturating_add(self.cache_read_input_tokens.unwrap_or(0))
    }
}
