//! The content of Cohere v2 messages: a string, or typed items (text, thinking, images).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::tagged::{kind, typed};

/// A message's content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Content items.
    Items(Vec<ContentItem>),
}

/// One content item. Kinds this crate does not model, and items that do not fit their kind, are
/// kept as raw JSON.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ContentItem {
    /// `{"type": "text", "text"}`.
    Text {
        /// The text.
        text: String,
    },
    /// `{"type": "thinking", "thinking"}` (an assistant's reasoning).
    Thinking {
        /// The reasoning.
        thinking: String,
    },
    /// `{"type": "image_url", "image_url": {"url", "detail"}}`.
    ImageUrl {
        /// Where the image is.
        image_url: ImageUrl,
    },
    /// Any other item (`document` of a tool result, ...), as given.
    Other(Value),
}

impl ContentItem {
    /// A text item.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }
}

/// `image_url` of an image item.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ImageUrl {
    /// A `data:` URI or a web URL.
    pub url: String,
    /// `auto`, `low` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ImageUrl {
    /// The image at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into(), detail: None, extra: Map::new() }
    }
}

#[derive(Serialize, Deserialize)]
struct TextItem {
    text: String,
}

#[derive(Serialize, Deserialize)]
struct ThinkingItem {
    thinking: String,
}

#[derive(Serialize, Deserialize)]
struct ImageItem {
    image_url: ImageUrl,
}

impl Serialize for ContentItem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            Text { text: &'a str },
            Thinking { thinking: &'a str },
            ImageUrl { image_url: &'a ImageUrl },
        }
        match self {
            Self::Text { text } => Tagged::Text { text }.serialize(serializer),
            Self::Thinking { thinking } => Tagged::Thinking { thinking }.serialize(serializer),
            Self::ImageUrl { image_url } => Tagged::ImageUrl { image_url }.serialize(serializer),
            Self::Other(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ContentItem {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let item = match kind(&value) {
            Some("text") => typed::<TextItem>(value).map(|t| Self::Text { text: t.text }),
            Some("thinking") => typed::<ThinkingItem>(value).map(|t| Self::Thinking { thinking: t.thinking }),
            Some("image_url") => typed::<ImageItem>(value).map(|i| Self::ImageUrl { image_url: i.image_url }),
            _ => Err(value),
        };
        Ok(item.unwrap_or_else(Self::Other))
    }
}
