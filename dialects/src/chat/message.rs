//! The messages of a chat request: roles, content (text, parts) and tool calls.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::tagged::{kind, typed};

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Role {
    /// Instructions from the application.
    System,
    /// Instructions from the application (the newer name of `system`).
    Developer,
    /// The end user.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
    /// A function's result (deprecated by OpenAI in favour of `tool`).
    Function,
}

/// One message of the conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its content: a string, an array of parts, or absent or `null` (an assistant turn of tool
    /// calls; `null` is kept as [`Content::Null`] so the message is written back as it came).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// A participant name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// The call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// An assistant's reasoning, as a chat answer returned it (LiteLLM's field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// An assistant's signed thinking blocks, as a chat answer returned them (LiteLLM's field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_blocks: Option<Vec<Value>>,
    /// Prompt caching on the whole message (LiteLLM's extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Value>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Message {
    /// A message from `role` with `content` (`None` for none).
    pub fn new(role: Role, content: Option<Content>) -> Self {
        Self {
            role,
            content,
            name: None,
            tool_calls: None,
            tool_call_id: None,
            reasoning_content: None,
            thinking_blocks: None,
            cache_control: None,
            extra: Map::new(),
        }
    }

    /// A system message of text.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, Some(Content::Text(text.into())))
    }

    /// A user message of text.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, Some(Content::Text(text.into())))
    }

    /// An assistant message of text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, Some(Content::Text(text.into())))
    }

    /// An assistant message calling tools.
    pub fn tool_calls(calls: Vec<ToolCall>) -> Self {
        Self { tool_calls: Some(calls), ..Self::new(Role::Assistant, None) }
    }

    /// A tool's result for the call `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self { tool_call_id: Some(tool_call_id.into()), ..Self::new(Role::Tool, Some(Content::Text(text.into()))) }
    }
}

/// A message's content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text(String),
    /// An array of parts.
    Parts(Vec<ContentPart>),
    /// `"content": null`, as sent: no content, like an absent one.
    Null,
}

/// A field that is present, even as `null` (which [`Content::Null`] keeps).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Content>, D::Error> {
    Content::deserialize(deserializer).map(Some)
}

/// One part of a message's content. Kinds this crate does not model (`input_audio`, `file`,
/// `refusal`, ...) and parts that do not fit their kind are kept as raw JSON.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ContentPart {
    /// `{"type": "text", "text": ...}`.
    Text(TextPart),
    /// `{"type": "image_url", "image_url": {"url", "detail"}}`.
    ImageUrl(ImageUrlPart),
    /// Any other part, as sent.
    Other(Value),
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextPart::new(text))
    }

    /// An image part for `url` (a `data:` URL or an http(s) one).
    pub fn image_url(url: impl Into<String>) -> Self {
        Self::ImageUrl(ImageUrlPart::new(url))
    }
}

/// A text part.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextPart {
    /// The text.
    pub text: String,
    /// Prompt caching (Anthropic's `cache_control`, carried by LiteLLM clients).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Value>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TextPart {
    /// A part of `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self { text: text.into(), cache_control: None, extra: Map::new() }
    }
}

/// An image part.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ImageUrlPart {
    /// Where the image is.
    pub image_url: ImageUrl,
    /// Prompt caching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Value>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ImageUrlPart {
    /// A part for the image at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            image_url: ImageUrl { url: url.into(), detail: None, extra: Map::new() },
            cache_control: None,
            extra: Map::new(),
        }
    }
}

/// `image_url` of an image part.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ImageUrl {
    /// A `data:<media type>;base64,<data>` URL or an http(s) URL.
    pub url: String,
    /// `auto`, `low` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Serialize for ContentPart {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            Text(&'a TextPart),
            ImageUrl(&'a ImageUrlPart),
        }
        match self {
            Self::Text(p) => Tagged::Text(p).serialize(serializer),
            Self::ImageUrl(p) => Tagged::ImageUrl(p).serialize(serializer),
            Self::Other(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ContentPart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let part = match kind(&value) {
            Some("text") => typed(value).map(Self::Text),
            Some("image_url") => typed(value).map(Self::ImageUrl),
            _ => Err(value),
        };
        Ok(part.unwrap_or_else(Self::Other))
    }
}

/// A tool call of an assistant message (in a request's history or in an answer).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// The call's id, which the `tool` message answering it repeats.
    pub id: String,
    /// `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function called.
    pub function: FunctionCall,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolCall {
    /// A call `id` of the function `name` with `arguments` (a JSON text).
    pub fn function(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind: "function".to_owned(),
            function: FunctionCall { name: name.into(), arguments: arguments.into(), extra: Map::new() },
            extra: Map::new(),
        }
    }
}

/// The function of a tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FunctionCall {
    /// The function's name.
    pub name: String,
    /// Its arguments: a JSON text (OpenAI sends a string, not an object).
    pub arguments: String,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
