//! The OpenAI error body: `{"error": {"message", "type", "param", "code"}}`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An OpenAI-style error answer.
///
/// ```
/// use switchyard_services::openai::{ApiError, ErrorResponse};
///
/// let body = ErrorResponse::new(
///     ApiError::new("too long").with_type("invalid_request_error").with_code("context_length_exceeded"),
/// );
/// let json = serde_json::to_value(&body)?;
/// assert_eq!(json["error"]["code"], "context_length_exceeded");
/// assert!(json["error"]["param"].is_null());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ErrorResponse {
    /// The error.
    pub error: ApiError,
}

impl ErrorResponse {
    /// Wraps `error`.
    pub fn new(error: ApiError) -> Self {
        Self { error }
    }
}

/// The `error` object of an [`ErrorResponse`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ApiError {
    /// Human-readable message.
    pub message: String,
    /// `invalid_request_error`, `server_error`, `requests`, ...
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// The request parameter at fault.
    #[serde(default)]
    pub param: Option<String>,
    /// A machine-readable code (`context_length_exceeded`, `content_filter`, ...); usually a
    /// string, a number for some providers.
    #[serde(default)]
    pub code: Option<Value>,
    /// Every other field (Azure's `innererror`, ...), as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ApiError {
    /// An error with `message` and nothing else.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), kind: None, param: None, code: None, extra: Map::new() }
    }

    /// Sets `type`.
    pub fn with_type(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// Sets `param`.
    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// Sets `code`.
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(Value::String(code.into()));
        self
    }
}
