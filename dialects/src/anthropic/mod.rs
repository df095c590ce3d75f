//! Anthropic's Messages API: wire structs that keep unknown fields, and the translation to and
//! from the chat hub (requests, whole answers, streams, errors).
//!
//! Both directions: an OpenAI client reaching Anthropic ([`request_from_chat`],
//! [`chat_from_response`], [`ChunkTranslator`]), and an Anthropic client (the `/v1/messages`
//! front door) reaching an OpenAI-compatible deployment ([`chat_from_request`],
//! [`response_from_chat`], [`EventEncoder`], [`error_json`]).
//!
//! Field by field, what maps, what is dropped and what is refused is in
//! `docs/dialects/anthropic.md`; the mapping follows LiteLLM 1.100 where that is sensible.
//!
//! ```
//! use switchyard_dialects::anthropic::{self, MessagesResponse, RequestOptions};
//! use switchyard_dialects::chat::{ChatRequest, Message};
//!
//! let req = ChatRequest::new("claude", vec![Message::system("Be terse."), Message::user("Hello")]);
//! let body = anthropic::request_from_chat(req, &RequestOptions::new("claude-sonnet-4-5", 4096))?;
//! assert_eq!(serde_json::to_value(&body)?, serde_json::json!({
//!     "model": "claude-sonnet-4-5",
//!     "max_tokens": 4096,
//!     "system": "Be terse.",
//!     "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
//! }));
//!
//! let answer: MessagesResponse = serde_json::from_str(r#"{
//!     "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
//!     "content": [{"type": "text", "text": "Hi."}], "stop_reason": "end_turn",
//!     "usage": {"input_tokens": 12, "output_tokens": 3}}"#)?;
//! let chat = anthropic::chat_from_response(answer, 1_700_000_000);
//! assert_eq!(chat.choices[0].message.content.as_deref(), Some("Hi."));
//! assert_eq!(chat.choices[0].finish_reason.as_deref(), Some("stop"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod blocks;
mod encode;
mod error;
mod event_json;
mod events;
mod inbound;
mod reply;
mod request;
mod response;
mod stream;
mod wire;

pub use blocks::{
    ContentBlock, ImageBlock, ImageSource, Message, MessageContent, RedactedThinkingBlock, Role, TextBlock,
    ThinkingBlock, ToolResultBlock, ToolUseBlock,
};
pub use encode::EventEncoder;
pub use error::{ErrorBody, ErrorClass, ErrorResponse, classify_error, error_message, retry_after};
pub use events::{BlockDelta, DeltaUsage, MessageDeltaBody, StreamEvent};
pub use inbound::chat_from_request;
pub use reply::{error_json, error_type_for_status, response_from_chat};
pub use request::request_from_chat;
pub use response::{chat_from_response, chat_usage, finish_reason};
pub use stream::{ChunkTranslator, Translated};
pub use wire::{MessagesRequest, MessagesResponse, Metadata, System, Thinking, Tool, ToolChoice, Usage};

/// The `anthropic-version` header sent when the deployment does not set one.
pub const DEFAULT_VERSION: &str = "2023-06-01";

/// The tool LiteLLM forces for `response_format` (`RESPONSE_FORMAT_TOOL_NAME`): its input is the
/// answer. Reserved: a client tool of this name is refused when `response_format` is set, and a
/// call of it in an answer always becomes the message content.
pub const JSON_TOOL_NAME: &str = "json_tool_call";

/// How [`request_from_chat`] translates one request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestOptions {
    /// The Anthropic model name to send (the deployment's, not the client's group name).
    pub model: String,
    /// `max_tokens` when the client sets neither `max_tokens` nor `max_completion_tokens`
    /// (Anthropic requires one; the catalog knows the model's).
    pub default_max_tokens: u32,
    /// Drop parameters Anthropic cannot honour instead of refusing them (LiteLLM's
    /// `drop_params`).
    pub drop_unsupported: bool,
}

impl RequestOptions {
    /// Options for `model`, with `default_max_tokens`, refusing unsupported parameters.
    pub fn new(model: impl Into<String>, default_max_tokens: u32) -> Self {
        Self { model: model.into(), default_max_tokens, drop_unsupported: false }
    }

    /// Drops unsupported parameters instead of refusing them.
    pub fn drop_unsupported(mut self, drop: bool) -> Self {
        self.drop_unsupported = drop;
        self
    }
}
