//! Cohere's v2 Chat and Embed APIs: wire structs that keep unknown fields, and the translation
//! from and to the chat hub (requests, whole answers, streams, errors, embeddings).
//!
//! An OpenAI client reaching Cohere: [`request_from_chat`] builds the `POST /v2/chat` body,
//! [`chat_from_response`] (after [`response_error`]) and [`ChunkTranslator`] turn the answer
//! back, [`classify_error`] reads failures; [`embed_request_from_openai`] and
//! [`openai_embeddings_from`] do the same for `POST /v2/embed`. Field by field, what maps, what is
//! dropped and what is refused is in `docs/dialects/cohere.md`, with the differences from
//! LiteLLM 1.100.
//!
//! ```
//! use switchyard_dialects::chat::{ChatRequest, Message, Tool};
//! use switchyard_dialects::cohere::{self, ChatV2Response, RequestOptions};
//!
//! let mut req = ChatRequest::new("command", vec![Message::user("Weather in Madrid?")]);
//! req.tools = Some(vec![Tool::function("get_weather", None, Some(serde_json::json!({"type": "object"})))]);
//! let body = cohere::request_from_chat(req, &RequestOptions::new("command-a-03-2025"))?;
//! assert_eq!(serde_json::to_value(&body)?, serde_json::json!({
//!     "model": "command-a-03-2025",
//!     "messages": [{"role": "user", "content": "Weather in Madrid?"}],
//!     "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
//! }));
//!
//! let answer: ChatV2Response = serde_json::from_str(r#"{
//!     "id": "7f1b", "finish_reason": "TOOL_CALL",
//!     "message": {"role": "assistant", "tool_plan": "I will look up the weather.",
//!         "tool_calls": [{"id": "get_weather_0", "type": "function",
//!             "function": {"name": "get_weather", "arguments": "{\"location\":\"Madrid\"}"}}]},
//!     "usage": {"tokens": {"input_tokens": 30, "output_tokens": 12}}}"#)?;
//! let chat = cohere::chat_from_response(answer, 1_700_000_000);
//! let message = &chat.choices[0].message;
//! assert_eq!(message.tool_calls.as_ref().map(|c| c[0].function.arguments.as_str()), Some("{\"location\":\"Madrid\"}"));
//! assert_eq!(message.reasoning_content.as_deref(), Some("I will look up the weather."));
//! assert_eq!(chat.choices[0].finish_reason.as_deref(), Some("tool_calls"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod content;
mod embed;
mod error;
mod events;
mod request;
mod response;
mod stream;
mod wire;

pub use content::{Content, ContentItem, ImageUrl};
pub use embed::{DEFAULT_INPUT_TYPE, EmbedRequest, EmbedResponse, embed_request_from_openai, openai_embeddings_from};
pub use error::{classify_error, error_message};
pub use events::StreamEvent;
pub use request::request_from_chat;
pub use response::{chat_from_response, chat_usage, finish_error, finish_reason, response_error};
pub use stream::ChunkTranslator;
pub use wire::{
    ChatV2Request, ChatV2Response, Message, ResponseFormat, ResponseMessage, Role, Thinking, TokenCounts, Tool,
    ToolCall, ToolCallFunction, ToolFunction, Usage, count,
};

/// How [`request_from_chat`] translates one request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestOptions {
    /// The Cohere model name to send (the deployment's, not the client's group name).
    pub model: String,
    /// Drop parameters Cohere cannot honour instead of refusing them (LiteLLM's `drop_params`).
    pub drop_unsupported: bool,
}

impl RequestOptions {
    /// Options for `model`, refusing unsupported parameters.
    pub fn new(model: impl Into<String>) -> Self {
        Self { model: model.into(), drop_unsupported: false }
    }

    /// Drops unsupported parameters instead of refusing them.
    pub fn drop_unsupported(mut self, drop: bool) -> Self {
        self.drop_unsupported = drop;
        self
    }
}
