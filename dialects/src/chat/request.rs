//! The request side of OpenAI Chat Completions: [`ChatRequest`] and its tools (its messages are
//! in `message.rs`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::Message;

/// A `POST /v1/chat/completions` body.
///
/// The fields are the ones some dialect maps, drops or refuses; every other field is kept in
/// [`extra`](Self::extra), so a request read and written again is the same JSON (a known field
/// sent as `null` is read as absent and not written back).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatRequest {
    /// The model (or model group) name.
    pub model: String,
    /// The conversation.
    pub messages: Vec<Message>,
    /// The legacy limit on generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The limit on generated tokens, reasoning included (wins over `max_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u64>,
    /// Sampling temperature (kept as the client's number, so `1` stays `1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Number>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<Number>,
    /// Stop sequences: one string or several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    /// Whether to stream the answer as server-sent events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Streaming options (`include_usage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    /// An end-user id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// Which tool, if any, the model must call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Structured output: `{"type": "text" | "json_object" | "json_schema", ...}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Reasoning effort: `minimal`, `low`, `medium`, `high` (and `none`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// How many choices to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<u32>,
    /// Whether to return log probabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<bool>,
    /// How many top log probabilities per token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u32>,
    /// Token id to bias.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logit_bias: Option<Map<String, Value>>,
    /// Presence penalty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<Number>,
    /// Frequency penalty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<Number>,
    /// Sampling seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Output modalities (`["text", "audio"]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modalities: Option<Vec<String>>,
    /// Audio output parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<Value>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatRequest {
    /// A request for `model` with `messages` and nothing else set.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Self {
            model: model.into(),
            messages,
            max_tokens: None,
            max_completion_tokens: None,
            temperature: None,
            top_p: None,
            stop: None,
            stream: None,
            stream_options: None,
            user: None,
            tools: None,
            tool_choice: None,
            parallel_tool_calls: None,
            response_format: None,
            reasoning_effort: None,
            n: None,
            logprobs: None,
            top_logprobs: None,
            logit_bias: None,
            presence_penalty: None,
            frequency_penalty: None,
            seed: None,
            modalities: None,
            audio: None,
            extra: Map::new(),
        }
    }
}

/// `stop`: one sequence or several.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Stop {
    /// `"stop": "\n"`.
    One(String),
    /// `"stop": ["\n", "END"]`.
    Many(Vec<String>),
}

impl Stop {
    /// The sequences, in order.
    pub fn into_vec(self) -> Vec<String> {
        match self {
            Self::One(s) => vec![s],
            Self::Many(v) => v,
        }
    }
}

/// `stream_options`.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StreamOptions {
    /// Whether the stream ends with a chunk carrying the usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_usage: Option<bool>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `response_format`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResponseFormat {
    /// `text`, `json_object` or `json_schema`.
    #[serde(rename = "type")]
    pub kind: String,
    /// For `json_schema`: `{"name", "schema", "strict"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<JsonSchema>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResponseFormat {
    /// A format of kind `kind` (`json_object`, `text`) without a schema.
    pub fn new(kind: impl Into<String>) -> Self {
        Self { kind: kind.into(), json_schema: None, extra: Map::new() }
    }
}

/// `response_format.json_schema`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JsonSchema {
    /// The schema's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The JSON Schema the answer must follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Every other field (`strict`, `description`), as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl JsonSchema {
    /// A schema named `name`.
    pub fn new(name: impl Into<String>, schema: Value) -> Self {
        Self { name: Some(name.into()), schema: Some(schema), extra: Map::new() }
    }
}

/// A tool the model may call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Tool {
    /// `function` (the only kind Chat Completions defines for tools a client runs).
    #[serde(rename = "type")]
    pub kind: String,
    /// The function, for `function` tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionDef>,
    /// Prompt caching (LiteLLM's extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Value>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Tool {
    /// A function tool.
    pub fn function(name: impl Into<String>, description: Option<String>, parameters: Option<Value>) -> Self {
        Self {
            kind: "function".to_owned(),
            function: Some(FunctionDef { name: name.into(), description, parameters, extra: Map::new() }),
            cache_control: None,
            extra: Map::new(),
        }
    }
}

/// A function definition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FunctionDef {
    /// The function's name.
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its parameters, as a JSON Schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// Every other field (`strict`), as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `tool_choice`: a mode or one named function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ToolChoice {
    /// `"auto"`, `"none"` or `"required"`.
    Mode(String),
    /// `{"type": "function", "function": {"name": ...}}`.
    Named(NamedToolChoice),
    /// Any other shape, as sent.
    Other(Value),
}

/// `{"type": "function", "function": {"name": ...}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NamedToolChoice {
    /// `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function to call.
    pub function: FunctionName,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl NamedToolChoice {
    /// Forces the function `name`.
    pub fn function(name: impl Into<String>) -> Self {
        Self {
            kind: "function".to_owned(),
            function: FunctionName { name: name.into(), extra: Map::new() },
            extra: Map::new(),
        }
    }
}

/// `{"name": ...}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FunctionName {
    /// The function's name.
    pub name: String,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
