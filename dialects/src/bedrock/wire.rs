//! Converse wire structs: the request body and the whole answer (their turns and content blocks
//! are in `blocks.rs`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value};

use super::blocks::{CachePoint, ContentBlock, Message};

/// A `POST /model/{modelId}/converse` (or `/converse-stream`) body. The model id is in the
/// URL, not here.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConverseRequest {
    /// The conversation: alternating `user` and `assistant` turns, a `user` turn first.
    pub messages: Vec<Message>,
    /// The system prompt: text blocks (and `cachePoint`s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<Vec<ContentBlock>>,
    /// `maxTokens`, `temperature`, `topP`, `stopSequences`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inference_config: Option<InferenceConfig>,
    /// Tools and the tool choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_config: Option<ToolConfig>,
    /// `{"guardrailIdentifier", "guardrailVersion", "trace"}`, as the client gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guardrail_config: Option<Value>,
    /// Model-specific parameters, sent to the model as they are (`top_k`, `thinking`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_model_request_fields: Option<Map<String, Value>>,
    /// Every other field (`performanceConfig`, `requestMetadata`, `serviceTier`,
    /// `outputConfig`, `promptVariables`, `additionalModelResponseFieldPaths`), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ConverseRequest {
    /// A request with `messages` and nothing else set.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            system: None,
            inference_config: None,
            tool_config: None,
            guardrail_config: None,
            additional_model_request_fields: None,
            extra: Map::new(),
        }
    }
}

/// `inferenceConfig`.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InferenceConfig {
    /// The limit on generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Number>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<Number>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InferenceConfig {
    /// Whether nothing is set (the body then leaves `inferenceConfig` out).
    pub fn is_empty(&self) -> bool {
        self.max_tokens.is_none()
            && self.temperature.is_none()
            && self.top_p.is_none()
            && self.stop_sequences.is_none()
            && self.extra.is_empty()
    }
}

/// `toolConfig`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolConfig {
    /// The tools.
    pub tools: Vec<Tool>,
    /// How the model must use them (absent: `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolConfig {
    /// `tools`, with no tool choice.
    pub fn new(tools: Vec<Tool>) -> Self {
        Self { tools, tool_choice: None, extra: Map::new() }
    }
}

/// One entry of `toolConfig.tools`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Tool {
    /// `{"toolSpec": {"name", "description", "inputSchema": {"json"}}}`.
    Spec(ToolSpec),
    /// `{"cachePoint": {"type": "default"}}` after the tools to cache.
    CachePoint(CachePoint),
    /// Any other entry (`systemTool`), as given.
    Other(Value),
}

/// A client tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolSpec {
    /// The tool's name (`[a-zA-Z0-9_-]{1,64}`).
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `{"json": <JSON Schema>}`.
    pub input_schema: InputSchema,
    /// Every other field (`strict`), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolSpec {
    /// A tool `name` taking input of `schema`.
    pub fn new(name: impl Into<String>, description: Option<String>, schema: Value) -> Self {
        Self {
            name: name.into(),
            description,
            input_schema: InputSchema { json: schema, extra: Map::new() },
            extra: Map::new(),
        }
    }
}

/// `inputSchema`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InputSchema {
    /// The JSON Schema of the input.
    pub json: Value,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Serialize for Tool {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut object = Map::with_capacity(1);
        match self {
            Self::Spec(spec) => {
                object.insert("toolSpec".to_owned(), serde_json::to_value(spec).map_err(serde::ser::Error::custom)?)
            }
            Self::CachePoint(point) => {
                object.insert("cachePoint".to_owned(), serde_json::to_value(point).map_err(serde::ser::Error::custom)?)
            }
            Self::Other(v) => return v.serialize(serializer),
        };
        object.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Tool {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let single = value.as_object().filter(|o| o.len() == 1).and_then(|o| o.iter().next());
        let tool = match single {
            Some((k, v)) if k == "toolSpec" => ToolSpec::deserialize(v).ok().map(Self::Spec),
            Some((k, v)) if k == "cachePoint" => CachePoint::deserialize(v).ok().map(Self::CachePoint),
            _ => None,
        };
        Ok(tool.unwrap_or(Self::Other(value)))
    }
}

/// `toolChoice`: `{"auto": {}}`, `{"any": {}}` or `{"tool": {"name"}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides.
    Auto(Map<String, Value>),
    /// The model must call some tool.
    Any(Map<String, Value>),
    /// The model must call this tool.
    Tool(SpecificTool),
}

impl ToolChoice {
    /// `{"auto": {}}`.
    pub fn auto() -> Self {
        Self::Auto(Map::new())
    }

    /// `{"any": {}}`.
    pub fn any() -> Self {
        Self::Any(Map::new())
    }

    /// `{"tool": {"name": name}}`.
    pub fn tool(name: impl Into<String>) -> Self {
        Self::Tool(SpecificTool { name: name.into(), extra: Map::new() })
    }
}

/// `toolChoice.tool`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SpecificTool {
    /// The tool to call.
    pub name: String,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A whole (non-streamed) Converse answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConverseResponse {
    /// `{"message": {...}}`.
    #[serde(default)]
    pub output: Output,
    /// `end_turn`, `tool_use`, `max_tokens`, `stop_sequence`, `guardrail_intervened`,
    /// `content_filtered`, `malformed_model_output`, `malformed_tool_use`,
    /// `model_context_window_exceeded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Token counts.
    #[serde(default)]
    pub usage: TokenUsage,
    /// Every other field (`metrics`, `additionalModelResponseFields`, `trace`, ...), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ConverseResponse {
    /// An answer of `message`, stopped for `stop_reason`.
    pub fn new(message: Message, stop_reason: impl Into<String>, usage: TokenUsage) -> Self {
        Self {
            output: Output { message: Some(message), extra: Map::new() },
            stop_reason: Some(stop_reason.into()),
            usage,
            extra: Map::new(),
        }
    }
}

/// `output`.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Output {
    /// The model's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Token counts, of an answer or of a stream's `metadata` event.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TokenUsage {
    /// Prompt tokens neither read from nor written to the cache.
    #[serde(default)]
    pub input_tokens: u64,
    /// Generated tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Bedrock's total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Prompt tokens read from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
    /// Prompt tokens written to the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_input_tokens: Option<u64>,
    /// Every other field (`cacheDetails`), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TokenUsage {
    /// `input` and `output` tokens, no cache.
    pub fn new(input: u64, output: u64) -> Self {
        Self {
            input_tokens: input,
            output_tokens: output,
            total_tokens: Some(input.saturating_add(output)),
            ..Self::default()
        }
    }

    /// Every prompt token: uncached, read from and written to the cache (as LiteLLM counts
    /// `prompt_tokens`).
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_input_tokens.unwrap_or(0))
            .saturating_add(self.cache_write_input_tokens.unwrap_or(0))
    }
}
