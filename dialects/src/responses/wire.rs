//! The request side of the Responses API: [`ResponsesRequest`] and its tools, tool choice, text
//! format and reasoning settings (its input items are in `items.rs`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value};

use super::items::InputItem;
use crate::tagged::kind;

/// A `POST /v1/responses` body.
///
/// The fields are the ones the translation maps, drops or refuses; every other field is kept in
/// [`extra`](Self::extra), so a request read and written again is the same JSON (a known field
/// sent as `null` is read as absent and not written back).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResponsesRequest {
    /// The model (or model group) name.
    pub model: String,
    /// The conversation: a string (one user message) or items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Input>,
    /// A system message placed before the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// Which tool, if any, the model must call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// The answer's format (`text.format`) and verbosity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<TextConfig>,
    /// Reasoning effort and summary settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// The limit on generated tokens, reasoning included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Sampling temperature (kept as the client's number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Number>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<Number>,
    /// Whether the model may call several tools in one turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// The response this one continues (server-side conversation state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_response_id: Option<String>,
    /// The conversation this response belongs to (server-side conversation state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Value>,
    /// A stored prompt template and its variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<Value>,
    /// Whether the server stores the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    /// Whether to stream the answer as server-sent events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Streaming options (`include_obfuscation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<Value>,
    /// Key-value pairs stored with the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// An end-user id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Whether to run the response in the background (polled later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
    /// Extra output to include (`reasoning.encrypted_content`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include: Option<Vec<String>>,
    /// `auto` (the server drops old input to fit the context) or `disabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation: Option<String>,
    /// How many top log probabilities per token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u32>,
    /// The limit on calls of built-in tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u64>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResponsesRequest {
    /// A request for `model` with `input` and nothing else set.
    pub fn new(model: impl Into<String>, input: Input) -> Self {
        Self {
            model: model.into(),
            input: Some(input),
            instructions: None,
            tools: None,
            tool_choice: None,
            text: None,
            reasoning: None,
            max_output_tokens: None,
            temperature: None,
            top_p: None,
            parallel_tool_calls: None,
            previous_response_id: None,
            conversation: None,
            prompt: None,
            store: None,
            stream: None,
            stream_options: None,
            metadata: None,
            user: None,
            background: None,
            include: None,
            truncation: None,
            top_logprobs: None,
            max_tool_calls: None,
            extra: Map::new(),
        }
    }
}

/// `input`: a string or items.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Input {
    /// One user message of text.
    Text(String),
    /// Messages, function calls and their outputs, reasoning, ..., in order.
    Items(Vec<InputItem>),
}

/// A tool: a function (`{"type": "function", "name", "description", "parameters", "strict"}`,
/// flat, unlike chat's) or a built-in tool (`web_search`, `file_search`, `mcp`, ...; its settings
/// in `extra`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Tool {
    /// `function`, or a built-in tool's type.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its parameters, as a JSON Schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// Whether the arguments must follow the schema exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Tool {
    /// A function tool.
    pub fn function(name: impl Into<String>, description: Option<String>, parameters: Option<Value>) -> Self {
        Self {
            kind: "function".to_owned(),
            name: Some(name.into()),
            description,
            parameters,
            strict: None,
            extra: Map::new(),
        }
    }
}

/// `tool_choice`: a mode, one named function, or another shape (built-in tools, `allowed_tools`,
/// `mcp`, `custom`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// `"auto"`, `"none"` or `"required"`.
    Mode(String),
    /// `{"type": "function", "name"}`.
    Function(FunctionChoice),
    /// Any other shape, as sent.
    Other(Value),
}

impl Default for ToolChoice {
    /// `"auto"`.
    fn default() -> Self {
        Self::Mode("auto".to_owned())
    }
}

/// `{"type": "function", "name"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FunctionChoice {
    /// The function to call.
    pub name: String,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Serialize for ToolChoice {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            Function(&'a FunctionChoice),
        }
        match self {
            Self::Mode(mode) => mode.serialize(serializer),
            Self::Function(f) => Tagged::Function(f).serialize(serializer),
            Self::Other(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(match value {
            Value::String(mode) => Self::Mode(mode),
            value if kind(&value) == Some("function") => {
                crate::tagged::typed(value).map_or_else(Self::Other, Self::Function)
            }
            value => Self::Other(value),
        })
    }
}

/// `text`: `{"format", "verbosity"}`.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextConfig {
    /// The answer's format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<TextFormat>,
    /// `low`, `medium` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<String>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `text.format`: `{"type": "text" | "json_object" | "json_schema", "name", "schema", "strict",
/// "description"}` (the schema's fields are flat, unlike chat's `response_format`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextFormat {
    /// `text`, `json_object` or `json_schema`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The schema's name (`json_schema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The JSON Schema the answer must follow (`json_schema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// What the answer is for (`json_schema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the answer must follow the schema exactly (`json_schema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `reasoning`: `{"effort", "summary"}`.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Reasoning {
    /// `none`, `minimal`, `low`, `medium`, `high`, `xhigh`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// `auto`, `concise` or `detailed`: the summary the client wants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Every other field (`generate_summary`, ...), as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
