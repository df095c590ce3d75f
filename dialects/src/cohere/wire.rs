//! Cohere v2 Chat API wire structs: the request (`POST /v2/chat`), its messages and tools, and the
//! whole answer (their content items are in `content.rs`). Every struct keeps the fields it does
//! not name in `extra`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::content::{Content, ContentItem};

/// A `POST /v2/chat` body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatV2Request {
    /// The model.
    pub model: String,
    /// The conversation, in order.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// Tool calls must follow the tool definitions strictly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict_tools: Option<bool>,
    /// `{"type": "text"}` or `{"type": "json_object", "json_schema": ...}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// The limit on generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Up to five stop sequences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Number>,
    /// Best-effort deterministic sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Frequency penalty (0 to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<Number>,
    /// Presence penalty (0 to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<Number>,
    /// Top-k sampling (0 disables it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<u64>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<Number>,
    /// `REQUIRED` or `NONE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<String>,
    /// Reasoning: `{"type": "enabled" | "disabled", "token_budget"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    /// Whether to stream the answer as server-sent events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Every other field (`documents`, `citation_options`, `safety_mode`, `priority`, ...), as
    /// given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatV2Request {
    /// A request for `model` with `messages` and nothing else set.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Self {
            model: model.into(),
            messages,
            tools: None,
            strict_tools: None,
            response_format: None,
            max_tokens: None,
            stop_sequences: None,
            temperature: None,
            seed: None,
            frequency_penalty: None,
            presence_penalty: None,
            k: None,
            p: None,
            tool_choice: None,
            thinking: None,
            stream: None,
            extra: Map::new(),
        }
    }
}

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Role {
    /// Instructions from the application.
    System,
    /// The end user.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
}

/// One message of the conversation (the fields of every role; Cohere reads those of `role`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// A string or content items (required but for an assistant turn of tool calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// The tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// The plan an assistant message wrote before its tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_plan: Option<String>,
    /// The call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Every other field (`citations` of an assistant message), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Message {
    /// A message from `role` with `content`.
    pub fn new(role: Role, content: Option<Content>) -> Self {
        Self { role, content, tool_calls: None, tool_plan: None, tool_call_id: None, extra: Map::new() }
    }
}

/// A tool call of an assistant message (in a request's history or in an answer).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// The call's id, which the `tool` message answering it repeats.
    #[serde(default)]
    pub id: String,
    /// `function`.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    /// The function called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<ToolCallFunction>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn function_kind() -> String {
    "function".to_owned()
}

impl ToolCall {
    /// A call `id` of the function `name` with `arguments` (a JSON text).
    pub fn function(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind: function_kind(),
            function: Some(ToolCallFunction {
                name: Some(name.into()),
                arguments: Some(arguments.into()),
                extra: Map::new(),
            }),
            extra: Map::new(),
        }
    }
}

/// The function of a tool call.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCallFunction {
    /// The function's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its arguments: a JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A tool the model may call: `{"type": "function", "function": {name, description, parameters}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Tool {
    /// `function`.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    /// The function.
    pub function: ToolFunction,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Tool {
    /// A function tool.
    pub fn function(name: impl Into<String>, description: Option<String>, parameters: Value) -> Self {
        Self {
            kind: function_kind(),
            function: ToolFunction { name: name.into(), description, parameters, extra: Map::new() },
            extra: Map::new(),
        }
    }
}

/// The function of a [`Tool`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolFunction {
    /// The function's name.
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its parameters, as a JSON Schema (required by Cohere).
    pub parameters: Value,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `response_format`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResponseFormat {
    /// `text` or `json_object`.
    #[serde(rename = "type")]
    pub kind: String,
    /// For `json_object`: the JSON Schema the answer must follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<Value>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResponseFormat {
    /// A format of kind `kind` with an optional schema.
    pub fn new(kind: impl Into<String>, json_schema: Option<Value>) -> Self {
        Self { kind: kind.into(), json_schema, extra: Map::new() }
    }
}

/// `thinking`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Thinking {
    /// `enabled` or `disabled`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Tokens the model may spend thinking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Thinking {
    /// Thinking enabled with `token_budget`.
    pub fn enabled(token_budget: u64) -> Self {
        Self { kind: "enabled".to_owned(), token_budget: Some(token_budget), extra: Map::new() }
    }

    /// Thinking disabled.
    pub fn disabled() -> Self {
        Self { kind: "disabled".to_owned(), token_budget: None, extra: Map::new() }
    }
}

/// A whole (non-streamed) answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatV2Response {
    /// The answer's id.
    pub id: String,
    /// `COMPLETE`, `STOP_SEQUENCE`, `MAX_TOKENS`, `TOOL_CALL`, `ERROR`, `TIMEOUT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The assistant's message.
    #[serde(default)]
    pub message: ResponseMessage,
    /// Token counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Every other field (`logprobs`), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The message of a whole answer.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResponseMessage {
    /// `assistant`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Text and thinking items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ContentItem>>,
    /// The tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// The plan the model wrote before its tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_plan: Option<String>,
    /// Spans of the text grounded in documents or tool results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citations: Option<Vec<Value>>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `usage` of an answer (and of a stream's `message-end`). Counts are JSON numbers (the SDK
/// types them as floats), read with [`count`].
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// What is billed: `input_tokens`, `output_tokens`, `search_units`, `classifications`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billed_units: Option<TokenCounts>,
    /// What the model read and wrote: `input_tokens`, `output_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenCounts>,
    /// Prompt tokens that hit the inference cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<Number>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Usage {
    /// Prompt tokens: `tokens.input_tokens`, else `billed_units.input_tokens`, else 0.
    pub fn input_tokens(&self) -> u64 {
        self.pick(|c| c.input_tokens.as_ref())
    }

    /// Generated tokens: `tokens.output_tokens`, else `billed_units.output_tokens`, else 0.
    pub fn output_tokens(&self) -> u64 {
        self.pick(|c| c.output_tokens.as_ref())
    }

    fn pick(&self, field: impl Fn(&TokenCounts) -> Option<&Number>) -> u64 {
        [&self.tokens, &self.billed_units].into_iter().flatten().find_map(|c| field(c).and_then(count)).unwrap_or(0)
    }
}

/// `input_tokens` and `output_tokens` of [`Usage::tokens`] or [`Usage::billed_units`].
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TokenCounts {
    /// Input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<Number>,
    /// Output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<Number>,
    /// Every other field (`search_units`, `classifications`, `images`, `image_tokens`), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TokenCounts {
    /// `input` and `output` tokens.
    pub fn new(input: u64, output: u64) -> Self {
        Self { input_tokens: Some(input.into()), output_tokens: Some(output.into()), extra: Map::new() }
    }
}

/// A count from a JSON number: a non-negative integer, or a non-negative float truncated (`12.0`
/// is 12); `None` for a negative or non-finite one.
pub fn count(n: &Number) -> Option<u64> {
    n.as_u64().or_else(|| {
        let f = n.as_f64()?;
        // `as` saturates at u64::MAX for floats beyond it.
        (f.is_finite() && f >= 0.0).then_some(f as u64)
    })
}
