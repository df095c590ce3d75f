//! The turns of an Anthropic conversation and their content blocks, whose unknown kinds survive
//! as raw JSON.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::tagged::{kind, typed};

/// One turn of the conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Message {
    /// `user` or `assistant`.
    pub role: Role,
    /// Its content.
    pub content: MessageContent,
}

impl Message {
    /// A turn of `role` made of `blocks`.
    pub fn new(role: Role, blocks: Vec<ContentBlock>) -> Self {
        Self { role, content: MessageContent::Blocks(blocks) }
    }
}

/// Who wrote a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Role {
    /// The user (and tool results).
    User,
    /// The model.
    Assistant,
}

/// A turn's content: a string or blocks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum MessageContent {
    /// Plain text.
    Text(String),
    /// Content blocks.
    Blocks(Vec<ContentBlock>),
}

/// A content block. A block of a kind this crate does not model (`document`, `server_tool_use`,
/// `web_search_tool_result`, ...), or one that does not fit its kind, is kept as raw JSON: decoding
/// never fails on it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ContentBlock {
    /// `text`.
    Text(TextBlock),
    /// `image`.
    Image(ImageBlock),
    /// `tool_use`: the model calls a tool.
    ToolUse(ToolUseBlock),
    /// `tool_result`: a tool's answer, in a user turn.
    ToolResult(ToolResultBlock),
    /// `thinking`: the model's reasoning, signed.
    Thinking(ThinkingBlock),
    /// `redacted_thinking`: reasoning the safety systems encrypted.
    RedactedThinking(RedactedThinkingBlock),
    /// Any other block, as given.
    Other(Value),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextBlock::new(text))
    }
}

/// `{"type": "text", "text"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextBlock {
    /// The text.
    pub text: String,
    /// Prompt caching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Value>,
    /// Every other field (`citations`), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TextBlock {
    /// A block of `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self { text: text.into(), cache_control: None, extra: Map::new() }
    }
}

/// `{"type": "image", "source"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ImageBlock {
    /// Where the image is.
    pub source: ImageSource,
    /// Prompt caching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Value>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ImageBlock {
    /// An image from `source`.
    pub fn new(source: ImageSource) -> Self {
        Self { source, cache_control: None, extra: Map::new() }
    }
}

/// An image's source.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ImageSource {
    /// `{"type": "base64", "media_type", "data"}`.
    Base64 {
        /// `image/png`, `image/jpeg`, `image/gif`, `image/webp`.
        media_type: String,
        /// The image, base64.
        data: String,
    },
    /// `{"type": "url", "url"}`.
    Url {
        /// An http(s) URL Anthropic fetches.
        url: String,
    },
    /// Any other source (`file`), as given.
    Other(Value),
}

/// `{"type": "tool_use", "id", "name", "input"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolUseBlock {
    /// The call's id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Its input (a JSON object).
    #[serde(default)]
    pub input: Value,
    /// Prompt caching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Value>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolUseBlock {
    /// A call `id` of `name` with `input`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self { id: id.into(), name: name.into(), input, cache_control: None, extra: Map::new() }
    }
}

/// `{"type": "tool_result", "tool_use_id", "content", "is_error"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolResultBlock {
    /// The call it answers.
    pub tool_use_id: String,
    /// The result: text or blocks (text, image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<MessageContent>,
    /// Whether the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Prompt caching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Value>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolResultBlock {
    /// The result `content` of call `tool_use_id`.
    pub fn new(tool_use_id: impl Into<String>, content: Option<MessageContent>) -> Self {
        Self { tool_use_id: tool_use_id.into(), content, is_error: None, cache_control: None, extra: Map::new() }
    }
}

/// `{"type": "thinking", "thinking", "signature"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ThinkingBlock {
    /// The reasoning.
    pub thinking: String,
    /// Anthropic's signature over it (required when sent back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `{"type": "redacted_thinking", "data"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RedactedThinkingBlock {
    /// The encrypted reasoning.
    pub data: String,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            Text(&'a TextBlock),
            Image(&'a ImageBlock),
            ToolUse(&'a ToolUseBlock),
            ToolResult(&'a ToolResultBlock),
            Thinking(&'a ThinkingBlock),
            RedactedThinking(&'a RedactedThinkingBlock),
        }
        match self {
            Self::Text(b) => Tagged::Text(b).serialize(serializer),
            Self::Image(b) => Tagged::Image(b).serialize(serializer),
            Self::ToolUse(b) => Tagged::ToolUse(b).serialize(serializer),
            Self::ToolResult(b) => Tagged::ToolResult(b).serialize(serializer),
            Self::Thinking(b) => Tagged::Thinking(b).serialize(serializer),
            Self::RedactedThinking(b) => Tagged::RedactedThinking(b).serialize(serializer),
            Self::Other(v) => v.serialize(serializer),
        }
    }
}

impl ContentBlock {
    /// Reads a block from JSON; unknown or malformed blocks become [`ContentBlock::Other`].
    pub fn from_value(value: Value) -> Self {
        let block = match kind(&value) {
            Some("text") => typed(value).map(Self::Text),
            Some("image") => typed(value).map(Self::Image),
            Some("tool_use") => typed(value).map(Self::ToolUse),
            Some("tool_result") => typed(value).map(Self::ToolResult),
            Some("thinking") => typed(value).map(Self::Thinking),
            Some("redacted_thinking") => typed(value).map(Self::RedactedThinking),
            _ => Err(value),
        };
        block.unwrap_or_else(Self::Other)
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::from_value)
    }
}

#[derive(Serialize, Deserialize)]
struct Base64Source {
    media_type: String,
    data: String,
}

#[derive(Serialize, Deserialize)]
struct UrlSource {
    url: String,
}

impl Serialize for ImageSource {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            Base64 { media_type: &'a str, data: &'a str },
            Url { url: &'a str },
        }
        match self {
            Self::Base64 { media_type, data } => Tagged::Base64 { media_type, data }.serialize(serializer),
            Self::Url { url } => Tagged::Url { url }.serialize(serializer),
            Self::Other(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ImageSource {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        // A source with fields beyond the modelled ones stays raw, so nothing is lost.
        let len = value.as_object().map_or(0, Map::len);
        let source = match kind(&value) {
            Some("base64") if len == 3 => {
                typed::<Base64Source>(value).map(|s| Self::Base64 { media_type: s.media_type, data: s.data })
            }
            Some("url") if len == 2 => typed::<UrlSource>(value).map(|s| Self::Url { url: s.url }),
            _ => Err(value),
        };
        Ok(source.unwrap_or_else(Self::Other))
    }
}
