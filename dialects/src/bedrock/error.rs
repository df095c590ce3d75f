//! Bedrock's errors: the error type (from the `x-amzn-errortype` header, the body's `__type`,
//! or an exception message's `:exception-type`), its classification into the routing classes,
//! and the message.

use serde_json::Value;

use crate::ErrorClass;

/// Phrases of Bedrock's (and its models') context-window refusals, lowercase.
const CONTEXT_PHRASES: [&str; 7] = [
    "input is too long",
    "too many input tokens",
    "prompt is too long",
    "exceeds the context window",
    "exceed context limit",
    "context length",
    "maximum context length",
];

/// The object of an error body, when it is one.
fn object(body: &[u8]) -> Option<serde_json::Map<String, Value>> {
    match serde_json::from_slice(body).ok()? {
        Value::Object(object) => Some(object),
        _ => None,
    }
}

/// The message of a Bedrock error body (`message`, or `Message` as some AWS services write it),
/// when it has one.
///
/// ```
/// use switchyard_dialects::bedrock::error_message;
///
/// assert_eq!(error_message(br#"{"message":"Too many requests, please wait."}"#).as_deref(),
///     Some("Too many requests, please wait."));
/// assert_eq!(error_message(b"<html>"), None);
/// ```
pub fn error_message(body: &[u8]) -> Option<String> {
    let object = object(body)?;
    ["message", "Message"]
        .iter()
        .find_map(|key| object.get(*key)?.as_str())
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
}

/// The bare name of an error type: `ValidationException` from
/// `ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/` (the header's
/// form), `com.amazon.coral.validate#ValidationException` (`__type`'s) or `validationException`
/// (an exception message's), lowercase.
fn bare(error_type: &str) -> String {
    let name = error_type.split(':').next().unwrap_or_default();
    let name = name.rsplit('#').next().unwrap_or_default();
    name.trim().to_ascii_lowercase()
}

/// Classifies a Bedrock error from its HTTP `status`, its error type (the `x-amzn-errortype`
/// header, or the `:exception-type` of an in-stream exception) and its body (whose `__type` is
/// read when `error_type` is `None`). For an in-stream exception pass status `0`: the class then
/// comes from the type alone.
///
/// The type decides first, since Bedrock's statuses are ambiguous (`ModelNotReadyException` is a
/// 429, `ServiceQuotaExceededException` a 400): throttling and quotas are `RateLimited`,
/// `ServiceUnavailableException` and `ModelNotReadyException` `Overloaded`, a
/// `ValidationException` whose message says the input is too long `ContextWindowExceeded` (any
/// other `BadRequest`), access and credential errors `Auth`, `ResourceNotFoundException`
/// `NotFound`, `ModelTimeoutException` `Timeout`, model and internal errors `ServerError`; an
/// unknown type falls back to the status.
///
/// ```
/// use switchyard_dialects::{ErrorClass, bedrock::classify_error};
///
/// let body = br#"{"message":"Input is too long for requested model."}"#;
/// assert_eq!(classify_error(400, Some("ValidationException"), body), ErrorClass::ContextWindowExceeded);
/// assert_eq!(classify_error(429, Some("ModelNotReadyException"), b"{}"), ErrorClass::Overloaded);
/// assert_eq!(classify_error(0, Some("throttlingException"), b"{}"), ErrorClass::RateLimited);
/// assert_eq!(classify_error(503, None, b""), ErrorClass::Overloaded);
/// ```
pub fn classify_error(status: u16, error_type: Option<&str>, body: &[u8]) -> ErrorClass {
    let object = object(body);
    let body_type = object.as_ref().and_then(|o| o.get("__type")?.as_str().map(str::to_owned));
    let kind = error_type.map(bare).or_else(|| body_type.as_deref().map(bare)).unwrap_or_default();
    let message = object
        .as_ref()
        .and_then(|o| ["message", "Message"].iter().find_map(|k| o.get(*k)?.as_str()))
        .unwrap_or_default()
        .to_ascii_lowercase();
    let too_long = CONTEXT_PHRASES.iter().any(|p| message.contains(p));
    match kind.as_str() {
        "throttlingexception" | "servicequotaexceededexception" | "toomanyrequestsexception" => ErrorClass::RateLimited,
        "serviceunavailableexception" | "modelnotreadyexception" => ErrorClass::Overloaded,
        "validationexception" if too_long => ErrorClass::ContextWindowExceeded,
        "validationexception" | "conflictexception" => ErrorClass::BadRequest,
        "accessdeniedexception"
        | "unrecognizedclientexception"
        | "expiredtokenexception"
        | "invalidsignatureexception"
        | "incompletesignatureexception"
        | "missingauthenticationtokenexception" => ErrorClass::Auth,
        "resourcenotfoundexception" => ErrorClass::NotFound,
        "modeltimeoutexception" => ErrorClass::Timeout,
        "modelerrorexception" | "modelstreamerrorexception" | "internalserverexception" => ErrorClass::ServerError,
        _ => from_status(status, too_long),
    }
}

/// The class of an error whose type says nothing.
fn from_status(status: u16, too_long: bool) -> ErrorClass {
    match status {
        400 | 413 if too_long => ErrorClass::ContextWindowExceeded,
        401 | 403 => ErrorClass::Auth,
        404 => ErrorClass::NotFound,
        408 | 504 => ErrorClass::Timeout,
        413 => ErrorClass::RequestTooLarge,
        429 => ErrorClass::RateLimited,
        503 => ErrorClass::Overloaded,
        // A model's own failure (ModelErrorException's status).
        424 => ErrorClass::ServerError,
        400..=499 => ErrorClass::BadRequest,
        // 5xx, and no status (an exception of an unknown type in a stream): the upstream failed.
        _ => ErrorClass::ServerError,
    }
}
