//! The hub: typed OpenAI Chat Completions wire structs, requests and answers (whole and
//! streamed).
//!
//! Every dialect translates to and from these types, so N dialects need N codecs, not N². Each
//! struct keeps the fields it does not name in an `extra` map, so a body read and written again
//! is the same JSON.
//!
//! ```
//! use switchyard_dialects::chat::{ChatRequest, Content, Role};
//!
//! let body = r#"{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "store": true}"#;
//! let req: ChatRequest = serde_json::from_str(body)?;
//! assert_eq!(req.messages[0].role, Role::User);
//! assert_eq!(req.messages[0].content, Some(Content::Text("hi".to_owned())));
//! assert_eq!(req.extra["store"], true);
//! assert_eq!(serde_json::to_value(&req)?, serde_json::from_str::<serde_json::Value>(body)?);
//! # Ok::<(), serde_json::Error>(())
//! ```

mod message;
mod request;
mod response;

pub use message::{Content, ContentPart, FunctionCall, ImageUrl, ImageUrlPart, Message, Role, TextPart, ToolCall};
pub use request::{
    ChatRequest, FunctionDef, FunctionName, JsonSchema, NamedToolChoice, ResponseFormat, Stop, StreamOptions, Tool,
    ToolChoice,
};
pub use response::{
    ChatCompletion, ChatCompletionChunk, Choice, ChunkChoice, Delta, FunctionCallDelta, PromptTokensDetails,
    ResponseMessage, ToolCallDelta, Usage,
};
