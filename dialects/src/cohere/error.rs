//! Cohere's errors: the `{"message": ...}` body and its classification into the routing classes.

use serde_json::Value;

use crate::ErrorClass;

/// The message of a Cohere error body: `message` (Cohere's shape, `{"id", "message"}`), else
/// `error.message` or a string `error` (proxies in front of Cohere); `None` when the body is not
/// a JSON object or has none.
///
/// ```
/// use switchyard_dialects::cohere::error_message;
///
/// assert_eq!(error_message(br#"{"id": "5f1a", "message": "invalid api token"}"#).as_deref(), Some("invalid api token"));
/// assert_eq!(error_message(b"<html>bad gateway</html>"), None);
/// ```
pub fn error_message(body: &[u8]) -> Option<String> {
    // Only a JSON object is an error envelope.
    let value: Value = serde_json::from_slice(body).ok()?;
    let object = value.as_object()?;
    let message = match (object.get("message"), object.get("error")) {
        (Some(Value::String(m)), _) => m,
        (_, Some(Value::String(m))) => m,
        (_, Some(Value::Object(error))) => error.get("message")?.as_str()?,
        _ => return None,
    };
    (!message.is_empty()).then(|| message.to_owned())
}

/// Phrases of Cohere's (and LiteLLM's) context-window refusals, lowercase.
const CONTEXT_PHRASES: [&str; 5] =
    ["too many tokens", "prompt is too long", "context length", "context window", "maximum context"];

/// Phrases of a refused credential (LiteLLM's for Cohere), lowercase.
const AUTH_PHRASES: [&str; 2] = ["invalid api token", "no api key provided"];

/// Classifies a Cohere error answer from its HTTP `status` and body (phrases of its message for
/// the context window and credentials). For an in-stream failure pass status `0`: the message
/// alone decides, and anything it does not name is a [`ServerError`](ErrorClass::ServerError).
///
/// Cohere's own statuses: 498 (invalid token) is [`Auth`](ErrorClass::Auth); 499 (client closed
/// request; the gateway never reads the answer of a request it cancelled, so something between
/// cancelled it) is [`Timeout`](ErrorClass::Timeout); 422 and 501 (a feature the model does not
/// have) are [`BadRequest`](ErrorClass::BadRequest).
///
/// ```
/// use switchyard_dialects::ErrorClass;
/// use switchyard_dialects::cohere::classify_error;
///
/// let body = br#"{"message":"too many tokens: total number of tokens in the prompt cannot exceed 128000 - received 131072"}"#;
/// assert_eq!(classify_error(400, body), ErrorClass::ContextWindowExceeded);
/// assert_eq!(classify_error(429, br#"{"message":"rate limited"}"#), ErrorClass::RateLimited);
/// assert_eq!(classify_error(498, br#"{"message":"invalid api token"}"#), ErrorClass::Auth);
/// ```
pub fn classify_error(status: u16, body: &[u8]) -> ErrorClass {
    let message = error_message(body).map(|m| m.to_ascii_lowercase()).unwrap_or_default();
    if matches!(status, 0 | 400 | 413 | 422) && CONTEXT_PHRASES.iter().any(|p| message.contains(p)) {
        return ErrorClass::ContextWindowExceeded;
    }
    if matches!(status, 0 | 400..=499) && AUTH_PHRASES.iter().any(|p| message.contains(p)) {
        return ErrorClass::Auth;
    }
    match status {
        401 | 403 | 498 => ErrorClass::Auth,
        404 => ErrorClass::NotFound,
        413 => ErrorClass::RequestTooLarge,
        429 => ErrorClass::RateLimited,
        408 | 499 | 504 => ErrorClass::Timeout,
        503 => ErrorClass::Overloaded,
        501 => ErrorClass::BadRequest,
        500..=599 => ErrorClass::ServerError,
        400..=499 => ErrorClass::BadRequest,
        // No status (an in-stream failure) or one that is not an error.
        _ => ErrorClass::ServerError,
    }
}
