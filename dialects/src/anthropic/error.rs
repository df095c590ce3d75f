//! Anthropic's errors: the `{"type": "error", "error": {...}}` body, its classification into the
//! routing classes, and how long a rate-limited client should wait.

use std::time::{Duration, SystemTime};

use http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The longest wait a response may ask for: one day.
const MAX_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

/// The reset headers of Anthropic's rate limits, each an RFC 3339 instant.
const RESET_HEADERS: [&str; 4] = [
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-output-tokens-reset",
];

/// `{"type": "error", "error": {"type", "message"}}`: an error answer, or the data of an
/// in-stream `error` event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ErrorResponse {
    /// `error`.
    #[serde(rename = "type", default = "error_kind")]
    pub kind: String,
    /// The error.
    pub error: ErrorBody,
    /// Every other field (`request_id`), as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn error_kind() -> String {
    "error".to_owned()
}

impl ErrorResponse {
    /// An error of type `kind` saying `message`.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self { kind: error_kind(), error: ErrorBody::new(kind, message), extra: Map::new() }
    }
}

/// `error` of an [`ErrorResponse`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ErrorBody {
    /// `invalid_request_error`, `authentication_error`, `permission_error`, `not_found_error`,
    /// `request_too_large`, `rate_limit_error`, `api_error`, `overloaded_error`, ...
    #[serde(rename = "type", default)]
    pub kind: String,
    /// What went wrong.
    #[serde(default)]
    pub message: String,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ErrorBody {
    /// An error of type `kind` saying `message`.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self { kind: kind.into(), message: message.into(), extra: Map::new() }
    }
}

pub use crate::class::ErrorClass;

/// The error's `error.type` and `error.message` when `body` is an Anthropic error object.
fn read(body: &[u8]) -> Option<ErrorBody> {
    // Only a JSON object is an error envelope (serde would read a struct from an array too).
    let value: Value = serde_json::from_slice(body).ok()?;
    let error = value.as_object()?.get("error")?;
    error.as_object()?;
    ErrorBody::deserialize(error).ok()
}

/// The message of an Anthropic error body (`error.message`), when it has one.
pub fn error_message(body: &[u8]) -> Option<String> {
    read(body).map(|e| e.message).filter(|m| !m.is_empty())
}

/// Phrases of Anthropic's (and LiteLLM's) context-window refusals.
const CONTEXT_PHRASES: [&str; 4] =
    ["prompt is too long", "exceed context limit", "exceeds the context window", "context length"];

/// Phrases of content-policy refusals.
const POLICY_PHRASES: [&str; 4] =
    ["content filtering", "content policy", "usage policy", "output blocked by content filtering policy"];

/// Classifies an Anthropic error answer from its HTTP `status` and body (`error.type`, and
/// phrases of `error.message` for the context window and content policies). For an in-stream
/// `error` event pass status `0`: the class then comes from `error.type` alone.
///
/// ```
/// use switchyard_dialects::anthropic::{ErrorClass, classify_error};
///
/// let body = br#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
/// assert_eq!(classify_error(400, body), ErrorClass::ContextWindowExceeded);
/// let event = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
/// assert_eq!(classify_error(0, event), ErrorClass::Overloaded);
/// ```
pub fn classify_error(status: u16, body: &[u8]) -> ErrorClass {
    let error = read(body);
    let kind = error.as_ref().map_or("", |e| e.kind.as_str());
    let message = error.as_ref().map(|e| e.message.to_ascii_lowercase()).unwrap_or_default();
    if matches!(status, 0 | 400 | 413) || kind == "invalid_request_error" {
        if CONTEXT_PHRASES.iter().any(|p| message.contains(p)) {
            return ErrorClass::ContextWindowExceeded;
        }
        if POLICY_PHRASES.iter().any(|p| message.contains(p)) {
            return ErrorClass::ContentPolicy;
        }
    }
    match status {
        401 | 403 => ErrorClass::Auth,
        404 => ErrorClass::NotFound,
        413 => ErrorClass::RequestTooLarge,
        429 => ErrorClass::RateLimited,
        529 => ErrorClass::Overloaded,
        408 | 504 => ErrorClass::Timeout,
        500..=599 => ErrorClass::ServerError,
        400..=499 => ErrorClass::BadRequest,
        // No status (a stream's error event) or one that is not an error: the body decides.
        _ => from_kind(kind, status),
    }
}

/// The class of an `error.type`, when the status says nothing.
fn from_kind(kind: &str, status: u16) -> ErrorClass {
    match kind {
        "rate_limit_error" => ErrorClass::RateLimited,
        "authentication_error" | "permission_error" => ErrorClass::Auth,
        "not_found_error" => ErrorClass::NotFound,
        "request_too_large" => ErrorClass::RequestTooLarge,
        "overloaded_error" => ErrorClass::Overloaded,
        "timeout_error" => ErrorClass::Timeout,
        "invalid_request_error" | "billing_error" => ErrorClass::BadRequest,
        "api_error" => ErrorClass::ServerError,
        // An unknown error in a stream is the upstream's failure; an unknown 1xx-3xx likewise.
        _ if status == 0 || status < 400 => ErrorClass::ServerError,
        _ => ErrorClass::BadRequest,
    }
}

/// How long to wait before retrying, from Anthropic's headers: `retry-after` (seconds) when
/// present, else the latest `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-reset`
/// instant (RFC 3339) minus `now`. Capped at one day; `None` when no header says.
///
/// ```
/// use std::time::{Duration, SystemTime, UNIX_EPOCH};
/// use http::HeaderMap;
/// use switchyard_dialects::anthropic::retry_after;
///
/// let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000); // 2023-11-14T22:13:20Z
/// let mut headers = HeaderMap::new();
/// headers.insert("anthropic-ratelimit-tokens-reset", "2023-11-14T22:13:50Z".parse()?);
/// assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(30)));
/// headers.insert("retry-after", "7".parse()?);
/// assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(7)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let seconds = headers
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0);
    if let Some(seconds) = seconds {
        return Some(Duration::try_from_secs_f64(seconds).map_or(MAX_WAIT, |d| d.min(MAX_WAIT)));
    }
    RESET_HEADERS
        .iter()
        .filter_map(|name| headers.get(*name)?.to_str().ok())
        .filter_map(|v| humantime::parse_rfc3339_weak(v.trim()).ok())
        .max()
        .map(|reset| reset.duration_since(now).unwrap_or(Duration::ZERO).min(MAX_WAIT))
}
