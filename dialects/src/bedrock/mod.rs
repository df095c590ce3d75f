//! AWS Bedrock: the Converse and ConverseStream APIs for chat, the event-stream framing of their
//! streams, and `InvokeModel` bodies for Titan and Cohere embeddings, translated to and from the
//! chat hub (requests, whole answers, streams, errors, usage).
//!
//! An OpenAI client reaching a Bedrock model: [`request_from_chat`] builds the body of
//! `POST /model/{modelId}/converse` (or `/converse-stream`; the model id is in the URL, the
//! provider signs it), [`chat_from_response`] reads the answer, [`EventStreamDecoder`] and
//! [`ChunkTranslator`] re-frame a stream chunk by chunk, [`classify_error`] reads failures.
//!
//! Field by field, what maps, what is dropped and what is refused is in
//! `docs/dialects/bedrock.md`; the mapping follows LiteLLM 1.100 where that is sensible.
//!
//! ```
//! use switchyard_dialects::bedrock::{self, ConverseResponse, RequestOptions};
//! use switchyard_dialects::chat::{ChatRequest, Message};
//!
//! let req = ChatRequest::new("claude", vec![Message::system("Be terse."), Message::user("Hello")]);
//! let body = bedrock::request_from_chat(req, &RequestOptions::new("us.anthropic.claude-sonnet-4-20250514-v1:0"))?;
//! assert_eq!(serde_json::to_value(&body)?, serde_json::json!({
//!     "messages": [{"role": "user", "content": [{"text": "Hello"}]}],
//!     "system": [{"text": "Be terse."}],
//! }));
//!
//! let answer: ConverseResponse = serde_json::from_str(r#"{
//!     "output": {"message": {"role": "assistant", "content": [{"text": "Hi."}]}},
//!     "stopReason": "end_turn", "usage": {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15},
//!     "metrics": {"latencyMs": 300}}"#)?;
//! let chat = bedrock::chat_from_response(answer, "us.anthropic.claude-sonnet-4-20250514-v1:0", 1_700_000_000);
//! assert_eq!(chat.choices[0].message.content.as_deref(), Some("Hi."));
//! assert_eq!(chat.choices[0].finish_reason.as_deref(), Some("stop"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod blocks;
mod embed;
mod error;
mod eventstream;
mod request;
mod response;
mod stream;
mod wire;

pub use blocks::{
    CachePoint, ContentBlock, ImageBlock, ImageSource, Message, ReasoningContent, ReasoningText, Role, ToolResultBlock,
    ToolResultContent, ToolUseBlock,
};
pub use embed::{embed_request, openai_embeddings_from};
pub use error::{classify_error, error_message};
pub use eventstream::{Event, EventStreamDecoder};
pub use request::request_from_chat;
pub use response::{chat_from_response, chat_usage, finish_reason};
pub use stream::ChunkTranslator;
pub use wire::{
    ConverseRequest, ConverseResponse, InferenceConfig, InputSchema, Output, SpecificTool, TokenUsage, Tool,
    ToolChoice, ToolConfig, ToolSpec,
};

/// The tool LiteLLM forces for `response_format` (`RESPONSE_FORMAT_TOOL_NAME`): its input is the
/// answer. Reserved: a client tool of this name is refused when `response_format` is set, and a
/// call of it in an answer always becomes the message content.
pub const JSON_TOOL_NAME: &str = "json_tool_call";

/// How [`request_from_chat`] translates one request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestOptions {
    /// The Bedrock model id the request goes to (a foundation model id, a cross-region
    /// inference profile id such as `us.anthropic.claude-...`, or an ARN). It is not written in
    /// the body (it is in the URL); its family decides model-specific fields (`thinking` for
    /// Claude, `topK` for Nova, ...).
    pub model_id: String,
    /// Drop parameters Converse cannot honour instead of refusing them (LiteLLM's
    /// `drop_params`).
    pub drop_unsupported: bool,
}

impl RequestOptions {
    /// Options for `model_id`, refusing unsupported parameters.
    pub fn new(model_id: impl Into<String>) -> Self {
        Self { model_id: model_id.into(), drop_unsupported: false }
    }

    /// Drops unsupported parameters instead of refusing them.
    pub fn drop_unsupported(mut self, drop: bool) -> Self {
        self.drop_unsupported = drop;
        self
    }
}
