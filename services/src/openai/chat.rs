//! Chat completions: `POST /v1/chat/completions`, its answer and its stream chunks.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use switchyard_layers::Usage;

/// A chat completion request.
///
/// Only the fields routing reads are typed; every other field (`temperature`, `tools`,
/// `response_format`, ...) is kept in [`extra`](Self::extra) and written back unchanged.
///
/// ```
/// use switchyard_services::openai::{ChatMessage, ChatRequest};
///
/// let req = ChatRequest::new("gpt-4o", vec![ChatMessage::user("hi")]).streaming(true);
/// let json = serde_json::to_value(&req)?;
/// assert_eq!(json["stream"], true);
/// assert_eq!(json["messages"][0]["content"], "hi");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatRequest {
    /// The model (group) asked for.
    pub model: String,
    /// The conversation so far.
    pub messages: Vec<ChatMessage>,
    /// Whether the client wants server-sent events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatRequest {
    /// A request for `model` with `messages`.
    pub fn new(model: impl Into<String>, messages: Vec<ChatMessage>) -> Self {
        Self { model: model.into(), messages, stream: None, extra: Map::new() }
    }

    /// Sets `stream`.
    pub fn streaming(mut self, stream: bool) -> Self {
        self.stream = Some(stream);
        self
    }

    /// Sets any other field (`temperature`, `tools`, ...).
    pub fn param(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.extra.insert(key.into(), value.into());
        self
    }

    /// Whether the client asked for a stream.
    pub fn is_stream(&self) -> bool {
        self.stream.unwrap_or(false)
    }
}

/// One message of a conversation.
///
/// `content` is a string, an array of content parts (text, images, ...), or `null` (an
/// assistant message that only calls tools).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatMessage {
    /// `system`, `user`, `assistant`, `tool`, ...
    pub role: String,
    /// The content: a string or an array of parts.
    #[serde(default)]
    pub content: Value,
    /// Every other field (`name`, `tool_calls`, `tool_call_id`, ...), as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatMessage {
    /// A message with any role and content.
    pub fn new(role: impl Into<String>, content: impl Into<Value>) -> Self {
        Self { role: role.into(), content: content.into(), extra: Map::new() }
    }

    /// A `system` message.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new("system", text.into())
    }

    /// A `user` message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new("user", text.into())
    }

    /// An `assistant` message.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new("assistant", text.into())
    }

    /// The text of the message: the content string, or the `text` of every text part joined.
    ///
    /// ```
    /// use serde_json::json;
    /// use switchyard_services::openai::ChatMessage;
    ///
    /// let parts = ChatMessage::new("user", json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]));
    /// assert_eq!(parts.text(), "ab");
    /// assert_eq!(ChatMessage::user("hi").text(), "hi");
    /// ```
    pub fn text(&self) -> String {
        match &self.content {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
            _ => String::new(),
        }
    }
}

fn chat_completion_object() -> String {
    "chat.completion".to_owned()
}

fn chat_chunk_object() -> String {
    "chat.completion.chunk".to_owned()
}

/// The answer to a non-streaming chat request.
///
/// ```
/// use switchyard_services::openai::{ChatCompletion, ChatMessage, UsageBody};
///
/// let done = ChatCompletion::new("chatcmpl-1", "gpt-4o", 0)
///     .with_choice(ChatMessage::assistant("hello"), Some("stop".to_owned()))
///     .with_usage(UsageBody::new(5, 1));
/// let back: ChatCompletion = serde_json::from_slice(&serde_json::to_vec(&done)?)?;
/// assert_eq!(back.choices[0].message.text(), "hello");
/// assert_eq!(back.usage.map(|u| u.total_tokens), Some(6));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatCompletion {
    /// The completion id (`chatcmpl-...`).
    pub id: String,
    /// Always `chat.completion`.
    #[serde(default = "chat_completion_object")]
    pub object: String,
    /// Unix seconds.
    #[serde(default)]
    pub created: u64,
    /// The provider model that answered.
    pub model: String,
    /// The answers (one unless the request set `n`).
    pub choices: Vec<ChatChoice>,
    /// Token usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageBody>,
    /// Every other field (`system_fingerprint`, ...), as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatCompletion {
    /// A completion without choices or usage yet.
    pub fn new(id: impl Into<String>, model: impl Into<String>, created: u64) -> Self {
        Self {
            id: id.into(),
            object: chat_completion_object(),
            created,
            model: model.into(),
            choices: Vec::new(),
            usage: None,
            extra: Map::new(),
        }
    }

    /// Appends a choice (its index is its position).
    pub fn with_choice(mut self, message: ChatMessage, finish_reason: Option<String>) -> Self {
        let index = u32::try_from(self.choices.len()).unwrap_or(u32::MAX);
        self.choices.push(ChatChoice::new(index, message, finish_reason));
        self
    }

    /// Sets the usage.
    pub fn with_usage(mut self, usage: UsageBody) -> Self {
        self.usage = Some(usage);
        self
    }
}

/// One answer of a [`ChatCompletion`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatChoice {
    /// Position among the choices.
    pub index: u32,
    /// The assistant's message.
    pub message: ChatMessage,
    /// `stop`, `length`, `tool_calls`, `content_filter`, ...
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Every other field (`logprobs`, ...), as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatChoice {
    /// A choice.
    pub fn new(index: u32, message: ChatMessage, finish_reason: Option<String>) -> Self {
        Self { index, message, finish_reason, extra: Map::new() }
    }
}

/// The `usage` object of a completion or of the last stream chunk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UsageBody {
    /// Input tokens.
    pub prompt_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Input plus output tokens.
    #[serde(default)]
    pub total_tokens: u64,
    /// Every other field (`prompt_tokens_details`, ...), as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl UsageBody {
    /// Usage of `prompt` input and `completion` output tokens.
    pub fn new(prompt: u64, completion: u64) -> Self {
        Self {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt.saturating_add(completion),
            extra: Map::new(),
        }
    }
}

impl From<Usage> for UsageBody {
    fn from(u: Usage) -> Self {
        Self::new(u.prompt_tokens, u.completion_tokens)
    }
}

impl From<&UsageBody> for Usage {
    fn from(u: &UsageBody) -> Self {
        Usage::new(u.prompt_tokens, u.completion_tokens)
    }
}

impl From<UsageBody> for Usage {
    fn from(u: UsageBody) -> Self {
        Usage::from(&u)
    }
}

/// One server-sent event of a streaming chat answer (`data: {...}`).
///
/// The last chunk before `[DONE]` carries `usage` and no choices when the request asked for
/// `stream_options.include_usage`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatChunk {
    /// The completion id, the same in every chunk.
    pub id: String,
    /// Always `chat.completion.chunk`.
    #[serde(default = "chat_chunk_object")]
    pub object: String,
    /// Unix seconds.
    #[serde(default)]
    pub created: u64,
    /// The provider model that answers.
    pub model: String,
    /// The deltas of this chunk.
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    /// Token usage (usually only in the last chunk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageBody>,
    /// Every other field, as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatChunk {
    /// A chunk without choices or usage yet.
    pub fn new(id: impl Into<String>, model: impl Into<String>, created: u64) -> Self {
        Self {
            id: id.into(),
            object: chat_chunk_object(),
            created,
            model: model.into(),
            choices: Vec::new(),
            usage: None,
            extra: Map::new(),
        }
    }

    /// Appends a choice delta.
    pub fn with_choice(mut self, choice: ChunkChoice) -> Self {
        self.choices.push(choice);
        self
    }

    /// Sets the usage.
    pub fn with_usage(mut self, usage: UsageBody) -> Self {
        self.usage = Some(usage);
        self
    }
}

/// One choice's delta in a [`ChatChunk`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChunkChoice {
    /// Which choice this delta extends.
    pub index: u32,
    /// What to append.
    pub delta: ChatDelta,
    /// Set on the choice's last chunk.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Every other field (`logprobs`, ...), as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChunkChoice {
    /// A choice delta.
    pub fn new(index: u32, delta: ChatDelta, finish_reason: Option<String>) -> Self {
        Self { index, delta, finish_reason, extra: Map::new() }
    }
}

/// What a stream chunk appends to a message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatDelta {
    /// Set in the first chunk of a choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Text to append.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Every other field (`tool_calls`, `refusal`, ...), as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatDelta {
    /// An empty delta (the last chunk of a choice).
    pub fn new() -> Self {
        Self::default()
    }

    /// A delta appending `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Self { content: Some(text.into()), ..Self::default() }
    }

    /// Sets the role (first chunk of a choice).
    pub fn with_role(mut self, role: impl Into<String>) -> Self {
        self.role = Some(role.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let raw = json!({
            "model": "gpt-4o",
            "messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "t1"}]}],
            "temperature": 0.2,
            "response_format": {"type": "json_object"}
        });
        let req: ChatRequest = serde_json::from_value(raw.clone()).expect("valid request");
        assert_eq!(req.extra["temperature"], json!(0.2));
        assert_eq!(req.messages[0].extra["tool_calls"][0]["id"], "t1");
        assert!(!req.is_stream());
        assert_eq!(serde_json::to_value(&req).expect("serializes"), raw);
    }

    #[test]
    fn a_real_openai_completion_parses() {
        let raw = br#"{"id":"chatcmpl-abc","object":"chat.completion","created":1700000000,
            "model":"gpt-4o-2024-08-06","system_fingerprint":"fp_1",
            "choices":[{"index":0,"message":{"role":"assistant","content":"Hi","refusal":null},
            "logprobs":null,"finish_reason":"stop"}],
            "usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10,
            "prompt_tokens_details":{"cached_tokens":0}}}"#;
        let c: ChatCompletion = serde_json::from_slice(raw).expect("valid completion");
        assert_eq!(c.choices[0].message.text(), "Hi");
        assert_eq!(c.choices[0].finish_reason.as_deref(), Some("stop"));
        assert_eq!(c.extra["system_fingerprint"], "fp_1");
        let usage = Usage::from(c.usage.expect("usage"));
        assert_eq!(usage, Usage::new(9, 1));
    }

    #[test]
    fn chunks_skip_absent_delta_fields() {
        let chunk = ChatChunk::new("c1", "m", 1).with_choice(ChunkChoice::new(0, ChatDelta::text("x"), None));
        let v = serde_json::to_value(&chunk).expect("serializes");
        assert_eq!(v["object"], "chat.completion.chunk");
        assert_eq!(v["choices"][0]["delta"], json!({"content": "x"}));
        assert!(v.get("usage").is_none());
    }
}
