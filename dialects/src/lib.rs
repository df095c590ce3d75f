//! Switchyard's dialects: the wire formats of LLM APIs and the translation between them, as pure
//! code (no I/O, no async runtime).
//!
//! Routing never depends on a wire format. When a client and an upstream speak the same dialect
//! the body passes through; when they differ, it is translated through one hub representation,
//! OpenAI Chat Completions ([`chat`]), so N dialects need N codecs (to and from the hub), not N²
//! pairwise ones. Each dialect module has typed wire structs that keep unknown fields, request
//! encoding, answer and stream decoding, usage mapping and error classification. A field that
//! cannot cross is mapped, dropped with a documented reason, or refused with a
//! [`TranslateError`] naming it.
//!
//! - [`chat`]: the hub, OpenAI Chat Completions requests, answers and chunks.
//! - [`anthropic`]: Anthropic's Messages API.
//! - [`bedrock`]: AWS Bedrock's Converse and ConverseStream, and Titan and Cohere embeddings.
//! - [`cohere`]: Cohere's v2 Chat and Embed APIs.
//! - [`gemini`]: Google's Gemini API (and Vertex AI's Gemini models), chat and embeddings.
//! - [`responses`]: OpenAI's Responses API, to and from the hub, and passthrough inspection.
//! - [`sse`]: a bounded decoder of server-sent events, for any dialect's streams.
//!
//! ```
//! use switchyard_dialects::anthropic::{RequestOptions, request_from_chat};
//! use switchyard_dialects::chat::ChatRequest;
//!
//! let req: ChatRequest = serde_json::from_str(r#"{
//!     "model": "smart",
//!     "messages": [
//!         {"role": "system", "content": "You are terse."},
//!         {"role": "user", "content": "What is 2+2?"}
//!     ],
//!     "max_completion_tokens": 64,
//!     "stop": "\n",
//!     "top_k": 5
//! }"#)?;
//! let body = request_from_chat(req, &RequestOptions::new("claude-sonnet-4-5", 4096))?;
//! assert_eq!(body.max_tokens, 64);
//! assert_eq!(body.stop_sequences, Some(vec!["\n".to_owned()]));
//! assert_eq!(body.top_k, Some(5));
//!
//! let refused: ChatRequest = serde_json::from_str(r#"{"model": "smart", "n": 2,
//!     "messages": [{"role": "user", "content": "hi"}]}"#)?;
//! let err = request_from_chat(refused, &RequestOptions::new("claude-sonnet-4-5", 4096)).unwrap_err();
//! assert_eq!(err.field, "n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

pub mod anthropic;
pub mod bedrock;
pub mod chat;
mod class;
pub mod cohere;
pub mod error;
pub mod gemini;
pub mod responses;
pub mod sse;
mod tagged;

pub use class::{ErrorClass, StreamItem};
pub use error::TranslateError;
