//! Converse messages and their content blocks: unions written as single-member objects
//! (`{"text": ...}`, `{"toolUse": {...}}`), with kinds this crate does not model kept as raw JSON.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Who wrote a Converse message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Role {
    /// The end user (tool results included).
    User,
    /// The model.
    Assistant,
}

/// One turn of the conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its content blocks.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Message {
    /// A turn of `role` with `content`.
    pub fn new(role: Role, content: Vec<ContentBlock>) -> Self {
        Self { role, content, extra: Map::new() }
    }
}

/// A content block (of a message, or of the `system` list).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ContentBlock {
    /// `{"text": ...}`.
    Text(String),
    /// `{"image": {"format", "source": {"bytes"}}}`.
    Image(ImageBlock),
    /// `{"toolUse": {"toolUseId", "name", "input"}}`.
    ToolUse(ToolUseBlock),
    /// `{"toolResult": {"toolUseId", "content", "status"}}`.
    ToolResult(ToolResultBlock),
    /// `{"reasoningContent": {"reasoningText": {"text", "signature"}} | {"redactedContent"}}`.
    ReasoningContent(ReasoningContent),
    /// `{"cachePoint": {"type": "default"}}`: a prompt-caching breakpoint after the block before.
    CachePoint(CachePoint),
    /// Any other block (`document`, `video`, `guardContent`, `citationsContent`, ...), as given.
    Other(Value),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }
}

/// The one member of a union object, when it has exactly one.
fn member(value: &Value) -> Option<(&str, &Value)> {
    let object = value.as_object()?;
    if object.len() != 1 {
        return None;
    }
    object.iter().next().map(|(k, v)| (k.as_str(), v))
}

/// Reads the member `value` as `T`, or gives the whole union back.
fn typed<T: DeserializeOwned>(union: &Value, value: &Value) -> Result<T, Value> {
    T::deserialize(value).map_err(|_| union.clone())
}

/// `{name: value}`.
fn single(name: &str, value: Value) -> Value {
    let mut object = Map::with_capacity(1);
    object.insert(name.to_owned(), value);
    Value::Object(object)
}

fn to_value<T: Serialize, E: serde::ser::Error>(value: &T) -> Result<Value, E> {
    serde_json::to_value(value).map_err(E::custom)
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value = match self {
            Self::Text(text) => single("text", Value::String(text.clone())),
            Self::Image(b) => single("image", to_value(b)?),
            Self::ToolUse(b) => single("toolUse", to_value(b)?),
            Self::ToolResult(b) => single("toolResult", to_value(b)?),
            Self::ReasoningContent(b) => single("reasoningContent", to_value(b)?),
            Self::CachePoint(b) => single("cachePoint", to_value(b)?),
            Self::Other(v) => return v.serialize(serializer),
        };
        value.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let block = match member(&value) {
            Some(("text", Value::String(text))) => Ok(Self::Text(text.clone())),
            Some(("image", v)) => typed(&value, v).map(Self::Image),
            Some(("toolUse", v)) => typed(&value, v).map(Self::ToolUse),
            Some(("toolResult", v)) => typed(&value, v).map(Self::ToolResult),
            Some(("reasoningContent", v)) => typed(&value, v).map(Self::ReasoningContent),
            Some(("cachePoint", v)) => typed(&value, v).map(Self::CachePoint),
            _ => Err(value.clone()),
        };
        Ok(block.unwrap_or_else(Self::Other))
    }
}

/// An image, inline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ImageBlock {
    /// `png`, `jpeg`, `gif` or `webp`.
    pub format: String,
    /// Where the image is.
    pub source: ImageSource,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ImageBlock {
    /// An image of `format` from base64 `bytes`.
    pub fn bytes(format: impl Into<String>, bytes: impl Into<String>) -> Self {
        Self {
            format: format.into(),
            source: ImageSource { bytes: Some(bytes.into()), extra: Map::new() },
            extra: Map::new(),
        }
    }
}

/// `image.source`: base64 `bytes` (or an `s3Location`, kept in `extra`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ImageSource {
    /// The image's bytes, base64 (how the JSON protocol writes a blob).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A tool call of the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolUseBlock {
    /// The call's id, which the result repeats.
    pub tool_use_id: String,
    /// The tool's name.
    pub name: String,
    /// Its input, a JSON object.
    #[serde(default)]
    pub input: Value,
    /// Every other field (`type` of server tools), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolUseBlock {
    /// A call `tool_use_id` of `name` with `input`.
    pub fn new(tool_use_id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self { tool_use_id: tool_use_id.into(), name: name.into(), input, extra: Map::new() }
    }
}

/// A tool's result, in a user turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolResultBlock {
    /// The call it answers.
    pub tool_use_id: String,
    /// What the tool returned.
    #[serde(default)]
    pub content: Vec<ToolResultContent>,
    /// `success` or `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolResultBlock {
    /// The result of call `tool_use_id`.
    pub fn new(tool_use_id: impl Into<String>, content: Vec<ToolResultContent>) -> Self {
        Self { tool_use_id: tool_use_id.into(), content, status: None, extra: Map::new() }
    }
}

/// One block of a tool result.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ToolResultContent {
    /// `{"text": ...}`.
    Text(String),
    /// `{"json": ...}`.
    Json(Value),
    /// `{"image": {...}}`.
    Image(ImageBlock),
    /// Any other block, as given.
    Other(Value),
}

impl Serialize for ToolResultContent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value = match self {
            Self::Text(text) => single("text", Value::String(text.clone())),
            Self::Json(v) => single("json", v.clone()),
            Self::Image(b) => single("image", to_value(b)?),
            Self::Other(v) => return v.serialize(serializer),
        };
        value.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolResultContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let block = match member(&value) {
            Some(("text", Value::String(text))) => Ok(Self::Text(text.clone())),
            Some(("json", v)) => Ok(Self::Json(v.clone())),
            Some(("image", v)) => typed(&value, v).map(Self::Image),
            _ => Err(value.clone()),
        };
        Ok(block.unwrap_or_else(Self::Other))
    }
}

/// The model's reasoning.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ReasoningContent {
    /// `{"reasoningText": {"text", "signature"}}`.
    Text(ReasoningText),
    /// `{"redactedContent": <base64>}`: reasoning the provider encrypted.
    Redacted(String),
    /// Any other kind, as given.
    Other(Value),
}

/// `reasoningText`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReasoningText {
    /// The reasoning.
    #[serde(default)]
    pub text: String,
    /// The signature a later turn must send back with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ReasoningText {
    /// Reasoning `text`, signed with `signature`.
    pub fn new(text: impl Into<String>, signature: Option<String>) -> Self {
        Self { text: text.into(), signature, extra: Map::new() }
    }
}

impl Serialize for ReasoningContent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value = match self {
            Self::Text(t) => single("reasoningText", to_value(t)?),
            Self::Redacted(data) => single("redactedContent", Value::String(data.clone())),
            Self::Other(v) => return v.serialize(serializer),
        };
        value.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ReasoningContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let block = match member(&value) {
            Some(("reasoningText", v)) => typed(&value, v).map(Self::Text),
            Some(("redactedContent", Value::String(data))) => Ok(Self::Redacted(data.clone())),
            _ => Err(value.clone()),
        };
        Ok(block.unwrap_or_else(Self::Other))
    }
}

/// `cachePoint`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CachePoint {
    /// `default`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Every other field (`ttl`), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CachePoint {
    /// The `default` breakpoint.
    pub fn default_point() -> Self {
        Self { kind: "default".to_owned(), extra: Map::new() }
    }
}
