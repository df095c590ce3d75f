//! OpenAI's Responses API (`POST /v1/responses`): wire structs that keep unknown fields, and the
//! translation to and from the chat hub for deployments that only serve Chat Completions.
//!
//! A Responses request for an OpenAI or Azure deployment passes through byte-faithfully; for any
//! other deployment [`chat_from_request`] translates it to a chat request, and the answer comes
//! back with [`response_from_chat`] (whole) or an [`EventEncoder`] (streamed). For passthrough,
//! [`inspect_event`] and [`usage_of`] read the upstream's own events and responses. Field by
//! field, what maps, what is dropped and what is refused is in `docs/dialects/responses.md`.
//!
//! ```
//! use switchyard_dialects::chat::{ChatCompletion, Choice, ResponseMessage};
//! use switchyard_dialects::responses::{self, ResponsesRequest};
//!
//! let req: ResponsesRequest = serde_json::from_str(r#"{
//!     "model": "llama", "input": [{"role": "user", "content": "What is 2+2?"}]
//! }"#)?;
//! let chat = responses::chat_from_request(req)?;
//! assert_eq!(serde_json::to_value(&chat.messages)?,
//!     serde_json::json!([{"role": "user", "content": "What is 2+2?"}]));
//!
//! let answer = ChatCompletion::new("chatcmpl-1", 1_700_000_000, "llama",
//!     vec![Choice::new(0, ResponseMessage::assistant(Some("4".to_owned())), Some("stop".to_owned()))]);
//! let resp = responses::response_from_chat(answer, "resp_1", 1_700_000_000);
//! assert_eq!(resp.output_text(), "4");
//! assert_eq!(serde_json::to_value(&resp)?["output"][0]["id"], "msg_1_0");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod events;
mod inspect;
mod items;
mod request;
mod response;
mod stream;
mod wire;

pub use events::StreamEvent;
pub use inspect::{EventFacts, inspect_event, usage_of};
pub use items::{
    ContentPart, FunctionCallItem, FunctionCallOutputItem, InputFile, InputImage, InputItem, InputMessage, InputRole,
    ItemReference, MessageContent, OutputContent, OutputItem, OutputMessage, OutputText, ReasoningItem, Refusal,
    SummaryText, TextContent,
};
pub use request::chat_from_request;
pub use response::{
    IncompleteDetails, InputTokensDetails, OutputTokensDetails, Response, ResponseError, ResponseStatus, ResponseUsage,
    response_from_chat,
};
pub use stream::EventEncoder;
pub use wire::{FunctionChoice, Input, Reasoning, ResponsesRequest, TextConfig, TextFormat, Tool, ToolChoice};
