//! OpenAI wire types: chat completions (whole and streamed), embeddings, errors, and the routing
//! facts of a request body.
//!
//! The types are minimal: they name the fields routing and the providers read, and keep every
//! other field in an `extra` map so a request or an answer passes through unchanged.
//!
//! ```
//! use switchyard_layers::ctx::Endpoint;
//! use switchyard_services::openai::{ChatMessage, ChatRequest, facts_from_json};
//!
//! let req = ChatRequest::new("gpt-4o", vec![ChatMessage::system("be brief"), ChatMessage::user("hi")])
//!     .param("temperature", 0.2);
//! let body = serde_json::to_vec(&req)?;
//! let (model, facts) = facts_from_json(&body, Endpoint::Chat)?;
//! assert_eq!(model, "gpt-4o");
//! assert!(!facts.stream);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod chat;
mod embedding;
mod error;
mod facts;
pub(crate) mod wire;

pub use chat::{ChatChoice, ChatChunk, ChatCompletion, ChatDelta, ChatMessage, ChatRequest, ChunkChoice, UsageBody};
pub use embedding::{Embedding, EmbeddingRequest, EmbeddingResponse, EmbeddingUsage};
pub use error::{ApiError, ErrorResponse};
pub use facts::{CLIENT_CREDENTIAL_KEYS, REQUIRED_PARAM_NAMES, facts_from_json};
pub(crate) use facts::{FactsError, client_credential_message, parse_quality_tier, read_facts};
pub use switchyard_dialects::sse::{SseDecoder, SseError, SseEvent};
