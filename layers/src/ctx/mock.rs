//! LiteLLM's testing hooks ([`MockHooks`]): request keys that make the router fail or answer on
//! purpose, so that retry and fallback configs can be tested in staging without a failing
//! upstream. Read once at the edge; each layer acts on the hook that is its own.
//!
//! The hooks, and which layer acts on each, are listed on [`MockHooks`].
//!
//! ```
//! use switchyard_layers::ctx::{MockFailure, MockHooks};
//!
//! let hooks = MockHooks::default().fail_first_group(MockFailure::ContextWindow);
//! assert_eq!(hooks.fallbacks, Some(MockFailure::ContextWindow));
//! assert!(!hooks.is_empty());
//! ```

use bytes::Bytes;

use crate::Outcome;

/// The failure a `mock_testing_*fallbacks` key makes the first group fail with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MockFailure {
    /// `mock_testing_fallbacks`: an internal server error (general fallbacks).
    General,
    /// `mock_testing_context_fallbacks`: the prompt does not fit (context-window fallbacks).
    ContextWindow,
    /// `mock_testing_content_policy_fallbacks`: a content filter refused (content-policy
    /// fallbacks).
    ContentPolicy,
}

impl MockFailure {
    /// The outcome of the mocked failure.
    pub const fn outcome(self) -> Outcome {
        match self {
            Self::General => Outcome::ServerError,
            Self::ContextWindow => Outcome::ContextWindowExceeded,
            Self::ContentPolicy => Outcome::ContentPolicy,
        }
    }

    /// The request key that asks for it.
    pub const fn key(self) -> &'static str {
        match self {
            Self::General => "mock_testing_fallbacks",
            Self::ContextWindow => "mock_testing_context_fallbacks",
            Self::ContentPolicy => "mock_testing_content_policy_fallbacks",
        }
    }
}

/// A `mock_response`: the answer an attempt gives without calling the upstream.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MockResponse {
    /// A string: the assistant's content, or one of LiteLLM's error strings
    /// (`litellm.RateLimitError`, `litellm.ContextWindowExceededError`,
    /// `litellm.InternalServerError`, `Exception: content_filter_policy...`,
    /// `Exception: mock_streaming_error`).
    Text(String),
    /// A JSON object: the whole answer (for chat, LiteLLM's `ModelResponse(**mock_response)`),
    /// as the raw JSON text.
    Object(Bytes),
    /// A JSON array: an embeddings request's vector (LiteLLM's `mock_embedding`), as the raw
    /// JSON text.
    List(Bytes),
}

/// LiteLLM's testing hooks a request carries, each acted on by one layer:
///
/// | hook | where | what (as LiteLLM 1.100 does it) |
/// |---|---|---|
/// | `mock_testing_fallbacks` | fallback layer, first group only | the group fails with an internal server error before any attempt: the general fallbacks apply |
/// | `mock_testing_context_fallbacks` | same | a context-window error: the context-window fallbacks apply |
/// | `mock_testing_content_policy_fallbacks` | same | a content-policy error: the content-policy fallbacks apply |
/// | `mock_testing_rate_limit_error` | retry layer, first attempt of every group | a rate-limit error that no deployment made: the retries (and then the fallbacks) apply |
/// | `mock_timeout` | provider, every attempt of the first group | the attempt waits its whole timeout, then times out |
/// | `mock_response` | provider, every attempt | the answer, built without calling the upstream |
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MockHooks {
    /// `mock_response`: every attempt answers this without calling the upstream.
    pub response: Option<MockResponse>,
    /// `mock_testing_fallbacks` / `_context_fallbacks` / `_content_policy_fallbacks` (the first
    /// one set, in that order, as LiteLLM checks them).
    pub fallbacks: Option<MockFailure>,
    /// `mock_testing_rate_limit_error`.
    pub rate_limit_error: bool,
    /// `mock_timeout`.
    pub timeout: bool,
}

impl MockHooks {
    /// No hook set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Sets `mock_response`.
    pub fn respond(mut self, response: MockResponse) -> Self {
        self.response = Some(response);
        self
    }

    /// Makes the first group fail with `failure` (a `mock_testing_*fallbacks` key).
    pub fn fail_first_group(mut self, failure: MockFailure) -> Self {
        self.fallbacks = Some(failure);
        self
    }

    /// Sets `mock_testing_rate_limit_error`.
    pub fn rate_limit_error(mut self, on: bool) -> Self {
        self.rate_limit_error = on;
        self
    }

    /// Sets `mock_timeout`.
    pub fn timeout(mut self, on: bool) -> Self {
        self.timeout = on;
        self
    }
}
