//! The items of a Responses conversation: what a request's `input` holds and what a response's
//! `output` holds, with their content parts. Unknown kinds (hosted tool calls, `custom_tool_call`,
//! `compaction`, ...) and items that do not fit their kind survive as raw JSON.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::tagged::{kind, typed};

/// One item of a request's `input`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum InputItem {
    /// A message (`type` `message`, or no `type` and a `role`).
    Message(InputMessage),
    /// `function_call`: a call the model made on an earlier turn.
    FunctionCall(FunctionCallItem),
    /// `function_call_output`: the client's result of a call.
    FunctionCallOutput(FunctionCallOutputItem),
    /// `reasoning`: the model's reasoning on an earlier turn.
    Reasoning(ReasoningItem),
    /// `item_reference` (or an object with only an `id`): an item stored by the server.
    ItemReference(ItemReference),
    /// Any other item, as sent.
    Other(Value),
}

impl InputItem {
    /// The item's `type` as sent (`message` for a message without one).
    pub fn kind(&self) -> Option<&str> {
        match self {
            Self::Message(_) => Some("message"),
            Self::FunctionCall(_) => Some("function_call"),
            Self::FunctionCallOutput(_) => Some("function_call_output"),
            Self::Reasoning(_) => Some("reasoning"),
            Self::ItemReference(_) => Some("item_reference"),
            Self::Other(value) => kind(value),
        }
    }
}

/// Who wrote an input message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum InputRole {
    /// The end user.
    User,
    /// The model, on an earlier turn.
    Assistant,
    /// Instructions from the application.
    System,
    /// Instructions from the application (the newer name of `system`).
    Developer,
}

/// A message of `input`: `{"role", "content", "type"?: "message", "id"?, "status"?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InputMessage {
    /// `message`, or absent (the "easy" message shape).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Who wrote it.
    pub role: InputRole,
    /// Its content: a string or parts.
    pub content: MessageContent,
    /// Every other field (`id`, `status`, `phase`), as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InputMessage {
    /// A message from `role` of `text`.
    pub fn text(role: InputRole, text: impl Into<String>) -> Self {
        Self { kind: Some("message".to_owned()), role, content: MessageContent::Text(text.into()), extra: Map::new() }
    }
}

/// An input message's content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum MessageContent {
    /// Plain text.
    Text(String),
    /// Content parts.
    Parts(Vec<ContentPart>),
}

/// One part of an input message's content.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ContentPart {
    /// `input_text`.
    InputText(TextContent),
    /// `input_image`: by `image_url` (a URL or a `data:` URL) or by `file_id`.
    InputImage(InputImage),
    /// `input_file`: inline `file_data`, a `file_url` or a `file_id`.
    InputFile(InputFile),
    /// `output_text`: the model's text, in an assistant message of the history.
    OutputText(OutputText),
    /// `refusal`: the model's refusal, in an assistant message of the history.
    Refusal(Refusal),
    /// Any other part, as sent.
    Other(Value),
}

/// `{"type": "input_text", "text"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TextContent {
    /// A part of `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self { text: text.into(), extra: Map::new() }
    }
}

/// `{"type": "input_image", "image_url"?, "file_id"?, "detail"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InputImage {
    /// An http(s) URL or a `data:` URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_url: Option<String>,
    /// A file uploaded to OpenAI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    /// `auto`, `low`, `high` (or `original`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `{"type": "input_file", "file_data"?, "file_url"?, "file_id"?, "filename"?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InputFile {
    /// The file's content, base64 (or a `data:` URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_data: Option<String>,
    /// A URL OpenAI would fetch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_url: Option<String>,
    /// A file uploaded to OpenAI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    /// The file's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `{"type": "output_text", "text", "annotations": [...]}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OutputText {
    /// The text.
    pub text: String,
    /// Citations (always written; empty on a translated answer).
    #[serde(default)]
    pub annotations: Vec<Value>,
    /// Token log probabilities (empty on a translated answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<Value>>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl OutputText {
    /// A part of `text`, without annotations.
    pub fn new(text: impl Into<String>) -> Self {
        Self { text: text.into(), annotations: Vec::new(), logprobs: Some(Vec::new()), extra: Map::new() }
    }
}

/// `{"type": "refusal", "refusal"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Refusal {
    /// Why the model refused.
    pub refusal: String,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Refusal {
    /// A refusal explained by `refusal`.
    pub fn new(refusal: impl Into<String>) -> Self {
        Self { refusal: refusal.into(), extra: Map::new() }
    }
}

/// A `function_call` item: `{"call_id", "name", "arguments", "id"?, "status"?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FunctionCallItem {
    /// The item's id (`fc_...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The call's id, which the `function_call_output` answering it repeats.
    pub call_id: String,
    /// The function's name.
    pub name: String,
    /// Its arguments: a JSON text.
    pub arguments: String,
    /// `in_progress`, `completed` or `incomplete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl FunctionCallItem {
    /// A call `call_id` of `name` with `arguments` (a JSON text).
    pub fn new(call_id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            id: None,
            call_id: call_id.into(),
            name: name.into(),
            arguments: arguments.into(),
            status: None,
            extra: Map::new(),
        }
    }
}

/// A `function_call_output` item: `{"call_id", "output"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FunctionCallOutputItem {
    /// The call answered.
    pub call_id: String,
    /// The result: a string or content parts (`input_text`, `input_image`, `input_file`).
    pub output: MessageContent,
    /// Every other field (`id`, `status`), as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl FunctionCallOutputItem {
    /// The result `output` of call `call_id`.
    pub fn new(call_id: impl Into<String>, output: impl Into<String>) -> Self {
        Self { call_id: call_id.into(), output: MessageContent::Text(output.into()), extra: Map::new() }
    }
}

/// A `reasoning` item: `{"id", "summary": [...], "content"?, "encrypted_content"?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReasoningItem {
    /// The item's id (`rs_...`).
    #[serde(default)]
    pub id: String,
    /// The reasoning's summary parts (always written).
    #[serde(default)]
    pub summary: Vec<SummaryText>,
    /// The raw reasoning text parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<Value>>,
    /// The reasoning, encrypted by OpenAI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    /// `in_progress`, `completed` or `incomplete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ReasoningItem {
    /// A reasoning item `id` with no summary yet.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            summary: Vec::new(),
            content: None,
            encrypted_content: None,
            status: None,
            extra: Map::new(),
        }
    }
}

/// `{"type": "summary_text", "text"}`: one part of a reasoning summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SummaryText {
    /// `summary_text`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The text.
    pub text: String,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SummaryText {
    /// A summary part of `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self { kind: "summary_text".to_owned(), text: text.into(), extra: Map::new() }
    }
}

/// `{"type"?: "item_reference", "id"}`: an item the server stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ItemReference {
    /// `item_reference`, or absent.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The stored item's id.
    pub id: String,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One item of a response's `output`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum OutputItem {
    /// `message`: the model's text.
    Message(OutputMessage),
    /// `function_call`: a call the client runs.
    FunctionCall(FunctionCallItem),
    /// `reasoning`: the model's reasoning.
    Reasoning(ReasoningItem),
    /// Any other item (hosted tool calls, ...), as given.
    Other(Value),
}

impl OutputItem {
    /// The item's `id`, when it has one.
    pub fn id(&self) -> Option<&str> {
        match self {
            Self::Message(m) => Some(&m.id),
            Self::FunctionCall(c) => c.id.as_deref(),
            Self::Reasoning(r) => Some(&r.id),
            Self::Other(v) => v.get("id").and_then(Value::as_str),
        }
    }
}

/// `{"type": "message", "id", "role": "assistant", "status", "content": [...]}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OutputMessage {
    /// The item's id (`msg_...`).
    pub id: String,
    /// `assistant`.
    pub role: String,
    /// `in_progress`, `completed` or `incomplete`.
    pub status: String,
    /// Its parts: `output_text` and `refusal`.
    pub content: Vec<OutputContent>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl OutputMessage {
    /// An assistant message `id` with `status` and `content`.
    pub fn new(id: impl Into<String>, status: impl Into<String>, content: Vec<OutputContent>) -> Self {
        Self { id: id.into(), role: "assistant".to_owned(), status: status.into(), content, extra: Map::new() }
    }
}

/// One part of an output message.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum OutputContent {
    /// `output_text`.
    OutputText(OutputText),
    /// `refusal`.
    Refusal(Refusal),
    /// Any other part, as given.
    Other(Value),
}

impl Serialize for InputItem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            FunctionCall(&'a FunctionCallItem),
            FunctionCallOutput(&'a FunctionCallOutputItem),
            Reasoning(&'a ReasoningItem),
        }
        match self {
            Self::Message(m) => m.serialize(serializer),
            Self::FunctionCall(c) => Tagged::FunctionCall(c).serialize(serializer),
            Self::FunctionCallOutput(o) => Tagged::FunctionCallOutput(o).serialize(serializer),
            Self::Reasoning(r) => Tagged::Reasoning(r).serialize(serializer),
            Self::ItemReference(r) => r.serialize(serializer),
            Self::Other(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for InputItem {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let has = |key: &str| value.as_object().is_some_and(|m| m.contains_key(key));
        let item = match kind(&value) {
            Some("message") => InputMessage::deserialize(&value).map(Self::Message).ok(),
            None if has("role") => InputMessage::deserialize(&value).map(Self::Message).ok(),
            Some("item_reference") => ItemReference::deserialize(&value).map(Self::ItemReference).ok(),
            None if has("id") && value.get("type").is_none_or(Value::is_null) => {
                ItemReference::deserialize(&value).map(Self::ItemReference).ok()
            }
            Some("function_call") => return Ok(typed(value).map_or_else(Self::Other, Self::FunctionCall)),
            Some("function_call_output") => {
                return Ok(typed(value).map_or_else(Self::Other, Self::FunctionCallOutput));
            }
            Some("reasoning") => return Ok(typed(value).map_or_else(Self::Other, Self::Reasoning)),
            _ => None,
        };
        Ok(item.unwrap_or(Self::Other(value)))
    }
}

impl Serialize for ContentPart {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            InputText(&'a TextContent),
            InputImage(&'a InputImage),
            InputFile(&'a InputFile),
            OutputText(&'a OutputText),
            Refusal(&'a Refusal),
        }
        match self {
            Self::InputText(p) => Tagged::InputText(p).serialize(serializer),
            Self::InputImage(p) => Tagged::InputImage(p).serialize(serializer),
            Self::InputFile(p) => Tagged::InputFile(p).serialize(serializer),
            Self::OutputText(p) => Tagged::OutputText(p).serialize(serializer),
            Self::Refusal(p) => Tagged::Refusal(p).serialize(serializer),
            Self::Other(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ContentPart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let part = match kind(&value) {
            Some("input_text") => typed(value).map(Self::InputText),
            Some("input_image") => typed(value).map(Self::InputImage),
            Some("input_file") => typed(value).map(Self::InputFile),
            Some("output_text") => typed(value).map(Self::OutputText),
            Some("refusal") => typed(value).map(Self::Refusal),
            _ => Err(value),
        };
        Ok(part.unwrap_or_else(Self::Other))
    }
}

impl Serialize for OutputItem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            Message(&'a OutputMessage),
            FunctionCall(&'a FunctionCallItem),
            Reasoning(&'a ReasoningItem),
        }
        match self {
            Self::Message(m) => Tagged::Message(m).serialize(serializer),
            Self::FunctionCall(c) => Tagged::FunctionCall(c).serialize(serializer),
            Self::Reasoning(r) => Tagged::Reasoning(r).serialize(serializer),
            Self::Other(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for OutputItem {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let item = match kind(&value) {
            Some("message") => typed(value).map(Self::Message),
            Some("function_call") => typed(value).map(Self::FunctionCall),
            Some("reasoning") => typed(value).map(Self::Reasoning),
            _ => Err(value),
        };
        Ok(item.unwrap_or_else(Self::Other))
    }
}

impl Serialize for OutputContent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            OutputText(&'a OutputText),
            Refusal(&'a Refusal),
        }
        match self {
            Self::OutputText(p) => Tagged::OutputText(p).serialize(serializer),
            Self::Refusal(p) => Tagged::Refusal(p).serialize(serializer),
            Self::Other(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for OutputContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let part = match kind(&value) {
            Some("output_text") => typed(value).map(Self::OutputText),
            Some("refusal") => typed(value).map(Self::Refusal),
            _ => Err(value),
        };
        Ok(part.unwrap_or_else(Self::Other))
    }
}
