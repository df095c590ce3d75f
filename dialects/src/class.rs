//! [`ErrorClass`]: what a provider's error means for routing, the same classes for every dialect.
//!
//! Each dialect classifies its provider's error answers (and in-stream error events) into these
//! classes exactly once; the provider service maps each class to the routing stack's shared
//! `Outcome`, so cooldown, retry and fallback work the same across vendors.
//!
//! ```
//! use switchyard_dialects::{ErrorClass, anthropic};
//!
//! let body = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
//! assert_eq!(anthropic::classify_error(529, body), ErrorClass::Overloaded);
//! ```

use std::time::Duration;

use crate::chat::ChatCompletionChunk;

/// What a provider's error means for routing: the class of the shared `Outcome` it maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// 429 and quota errors: try another deployment, cool this one.
    RateLimited,
    /// The prompt (and the requested output) does not fit the model's context window.
    ContextWindowExceeded,
    /// Refused by a content policy (a safety filter, a guardrail).
    ContentPolicy,
    /// Any other request the upstream refuses (400 and other 4xx).
    BadRequest,
    /// 401 and 403: the deployment's credentials.
    Auth,
    /// 404 (an unknown model or endpoint).
    NotFound,
    /// 413: the request is too large.
    RequestTooLarge,
    /// Overloaded or unavailable (Anthropic's 529, a 503, Bedrock's `ServiceUnavailableException`).
    Overloaded,
    /// 500 and other 5xx.
    ServerError,
    /// 408, 504, a model timeout.
    Timeout,
}

/// What one upstream stream event becomes in the hub, for dialects whose streams are translated
/// event by event (Gemini, Bedrock, Cohere).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant, reason = "nearly every item is a chunk: boxing would only add an allocation")]
pub enum StreamItem {
    /// A chat completion chunk.
    Chunk(ChatCompletionChunk),
    /// The upstream failed mid-stream.
    Error {
        /// What the failure means for routing.
        class: ErrorClass,
        /// The upstream's message.
        message: String,
        /// How long the upstream asked to wait, when it said.
        retry_after: Option<Duration>,
    },
    /// The answer is complete.
    Done,
}
