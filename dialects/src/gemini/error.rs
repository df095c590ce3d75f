//! Gemini's errors: Google's `{"error": {"code", "message", "status", "details"}}` body (also
//! wrapped in an array, as Vertex AI's non-SSE streams send it), its classification into the
//! routing classes, and the wait `google.rpc.RetryInfo` asks for.

use std::time::Duration;

use serde_json::Value;

use crate::ErrorClass;

/// The longest wait a response may ask for: one day.
const MAX_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

/// Phrases of Gemini's (and Vertex AI's) context-window refusals: "The input token count
/// (1200000) exceeds the maximum number of tokens allowed (1048576)."
const CONTEXT_PHRASES: [&str; 4] =
    ["exceeds the maximum number of tokens", "input token count", "context window", "maximum context length"];

/// The `error` object of a Google error body.
fn error_object(body: &[u8]) -> Option<Value> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let value = match value {
        Value::Array(mut items) if !items.is_empty() => items.swap_remove(0),
        other => other,
    };
    let error = value.as_object()?.get("error")?;
    error.is_object().then(|| error.clone())
}

/// The message of a Google error body (`error.message`), when it has one.
///
/// ```
/// use switchyard_dialects::gemini::error_message;
///
/// let body = br#"{"error": {"code": 404, "message": "models/gemini-9 is not found", "status": "NOT_FOUND"}}"#;
/// assert_eq!(error_message(body).as_deref(), Some("models/gemini-9 is not found"));
/// ```
pub fn error_message(body: &[u8]) -> Option<String> {
    let error = error_object(body)?;
    error.get("message")?.as_str().filter(|m| !m.is_empty()).map(str::to_owned)
}

/// Whether the details name an invalid API key (`ErrorInfo.reason` `API_KEY_INVALID`): the
/// Gemini API answers a bad key with 400 `INVALID_ARGUMENT`, which is an auth failure.
fn api_key_invalid(error: &Value) -> bool {
    let details = error.get("details").and_then(Value::as_array);
    details.into_iter().flatten().any(|d| d.get("reason").and_then(Value::as_str) == Some("API_KEY_INVALID"))
}

/// Classifies a Gemini (or Vertex AI) error answer from its HTTP `status` and body: the status
/// first, else (`0`, for an error inside a stream) the body's `error.code`, else its
/// `error.status` (`RESOURCE_EXHAUSTED`, `UNAVAILABLE`, ...). A 400 whose message says the
/// input has too many tokens is [`ErrorClass::ContextWindowExceeded`]; one for an invalid API key
/// is [`ErrorClass::Auth`].
///
/// ```
/// use switchyard_dialects::{ErrorClass, gemini::classify_error};
///
/// let body = br#"{"error": {"code": 400, "status": "INVALID_ARGUMENT",
///     "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."}}"#;
/// assert_eq!(classify_error(400, body), ErrorClass::ContextWindowExceeded);
/// let body = br#"{"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}"#;
/// assert_eq!(classify_error(0, body), ErrorClass::Overloaded);
/// ```
pub fn classify_error(status: u16, body: &[u8]) -> ErrorClass {
    let error = error_object(body);
    let field = |name: &str| error.as_ref().and_then(|e| e.get(name)).cloned();
    let code = match status {
        0 => field("code").and_then(|c| c.as_u64()).and_then(|c| u16::try_from(c).ok()).unwrap_or(0),
        s => s,
    };
    let kind = field("status").and_then(|s| s.as_str().map(str::to_owned)).unwrap_or_default();
    let message = field("message").and_then(|m| m.as_str().map(str::to_ascii_lowercase)).unwrap_or_default();
    if code == 400 || kind == "INVALID_ARGUMENT" {
        if error.as_ref().is_some_and(api_key_invalid) {
            return ErrorClass::Auth;
        }
        if CONTEXT_PHRASES.iter().any(|p| message.contains(p)) {
            return ErrorClass::ContextWindowExceeded;
        }
    }
    match code {
        401 | 403 => ErrorClass::Auth,
        404 => ErrorClass::NotFound,
        413 => ErrorClass::RequestTooLarge,
        429 => ErrorClass::RateLimited,
        503 => ErrorClass::Overloaded,
        408 | 504 => ErrorClass::Timeout,
        500..=599 => ErrorClass::ServerError,
        400..=499 => ErrorClass::BadRequest,
        _ => from_status(&kind),
    }
}

/// The class of a `google.rpc.Code` name, when no HTTP code says.
fn from_status(kind: &str) -> ErrorClass {
    match kind {
        "RESOURCE_EXHAUSTED" => ErrorClass::RateLimited,
        "UNAUTHENTICATED" | "PERMISSION_DENIED" => ErrorClass::Auth,
        "NOT_FOUND" => ErrorClass::NotFound,
        "UNAVAILABLE" => ErrorClass::Overloaded,
        "DEADLINE_EXCEEDED" | "CANCELLED" => ErrorClass::Timeout,
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" | "ALREADY_EXISTS" | "ABORTED" => {
            ErrorClass::BadRequest
        }
        // INTERNAL, UNKNOWN, DATA_LOSS, and an error without a status.
        _ => ErrorClass::ServerError,
    }
}

/// How long Google asks to wait: the `retryDelay` of the `google.rpc.RetryInfo` entry of
/// `error.details` (a protobuf `Duration` in JSON: `"30s"`, `"1.5s"`), capped at one day.
///
/// ```
/// use std::time::Duration;
/// use switchyard_dialects::gemini::retry_after;
///
/// let body = br#"{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota",
///     "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "30s"}]}}"#;
/// assert_eq!(retry_after(body), Some(Duration::from_secs(30)));
/// ```
pub fn retry_after(body: &[u8]) -> Option<Duration> {
    let error = error_object(body)?;
    let details = error.get("details")?.as_array()?;
    details
        .iter()
        .filter(|d| d.get("@type").and_then(Value::as_str).is_some_and(|t| t.ends_with("google.rpc.RetryInfo")))
        .find_map(|d| parse_duration(d.get("retryDelay")?.as_str()?))
}

/// A protobuf `Duration` in JSON: decimal seconds with the suffix `s`.
fn parse_duration(text: &str) -> Option<Duration> {
    let seconds: f64 = text.trim().strip_suffix('s')?.parse().ok()?;
    if !seconds.is_finite() || seconds < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(seconds).map_or(MAX_WAIT, |d| d.min(MAX_WAIT)))
}
