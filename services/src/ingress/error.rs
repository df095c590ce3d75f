//! [`IngressError`]: the HTTP-level refusals of the ingress.

use std::{error::Error as StdError, fmt};

use http::{Method, StatusCode};
use switchyard_layers::BoxError;

/// A request the ingress refused before routing: wrong method, no OpenAI endpoint at the path, a
/// body that is not JSON by its content type, too large, unreadable, or carrying client-side
/// credentials (`api_key`, `api_base`, `base_url`).
///
/// Malformed JSON is not an `IngressError`: it is the [`RouteError`](switchyard_layers::RouteError)
/// of kind `InvalidRequest` that [`facts_from_json`](crate::openai::facts_from_json) returns.
/// Opaque with predicates (hyper-util style); [`status`](Self::status) is the HTTP status the edge
/// answers with, and [`http_error::error_response`](crate::http_error::error_response) understands it.
///
/// ```
/// use http::StatusCode;
/// use switchyard_services::ingress::IngressError;
///
/// let err = IngressError::body_too_large(1024);
/// assert!(err.is_body_too_large());
/// assert_eq!(err.status(), StatusCode::PAYLOAD_TOO_LARGE);
/// assert_eq!(err.to_string(), "request body larger than 1024 bytes");
/// ```
pub struct IngressError {
    kind: Kind,
    message: String,
    source: Option<BoxError>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    MethodNotAllowed,
    UnknownEndpoint,
    UnsupportedMediaType,
    BodyTooLarge,
    BodyRead,
    ClientCredentials,
}

impl IngressError {
    /// The body is longer than `limit` bytes (413).
    pub fn body_too_large(limit: usize) -> Self {
        Self::new(Kind::BodyTooLarge, format!("request body larger than {limit} bytes"))
    }

    /// The content type is not JSON (415); `content_type` is what the client sent.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        // The header is the client's own text; keep a bounded, printable excerpt of it.
        let shown: String = content_type.chars().filter(|c| !c.is_control()).take(100).collect();
        Self::new(Kind::UnsupportedMediaType, format!("unsupported content type `{shown}`; send `application/json`"))
    }

    /// The method is not `POST` (405).
    pub fn method_not_allowed(method: &Method) -> Self {
        Self::new(Kind::MethodNotAllowed, format!("method {method} not allowed; use POST"))
    }

    /// No OpenAI endpoint at `path` (404).
    pub fn unknown_endpoint(path: &str) -> Self {
        let shown: String = path.chars().take(200).collect();
        Self::new(
            Kind::UnknownEndpoint,
            format!(
                "no endpoint at `{shown}`; use /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/messages \
                 or /v1/responses"
            ),
        )
    }

    /// Reading the body failed (400): the client went away or sent a broken transfer.
    pub fn body_read(source: impl Into<BoxError>) -> Self {
        let source = source.into();
        let mut e = Self::new(Kind::BodyRead, format!("could not read the request body: {source}"));
        e.source = Some(source);
        e
    }

    /// The body sets `field`, one of LiteLLM's client-side credential keys
    /// ([`CLIENT_CREDENTIAL_KEYS`](crate::openai::CLIENT_CREDENTIAL_KEYS)), which would let a
    /// client send an attempt to a host of its choosing or with a key of its own (400).
    /// Switchyard never takes them from a request.
    pub fn client_credentials(field: &str) -> Self {
        Self::new(Kind::ClientCredentials, crate::openai::client_credential_message(field))
    }

    fn new(kind: Kind, message: String) -> Self {
        Self { kind, message, source: None }
    }

    /// The status an HTTP edge answers with: 405, 404, 415, 413 or 400.
    pub fn status(&self) -> StatusCode {
        match self.kind {
            Kind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Kind::UnknownEndpoint => StatusCode::NOT_FOUND,
            Kind::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Kind::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Kind::BodyRead | Kind::ClientCredentials => StatusCode::BAD_REQUEST,
        }
    }

    /// A short stable name (`body_too_large`, ...), used as the `code` of the error answer and
    /// in the `x-switchyard-error` header.
    pub fn as_str(&self) -> &'static str {
        match self.kind {
            Kind::MethodNotAllowed => "method_not_allowed",
            Kind::UnknownEndpoint => "unknown_endpoint",
            Kind::UnsupportedMediaType => "unsupported_media_type",
            Kind::BodyTooLarge => "body_too_large",
            Kind::BodyRead => "body_read",
            Kind::ClientCredentials => "client_credentials_not_allowed",
        }
    }

    /// The body was longer than the limit.
    pub fn is_body_too_large(&self) -> bool {
        self.kind == Kind::BodyTooLarge
    }

    /// The content type was not JSON.
    pub fn is_unsupported_media_type(&self) -> bool {
        self.kind == Kind::UnsupportedMediaType
    }

    /// The method was not `POST`.
    pub fn is_method_not_allowed(&self) -> bool {
        self.kind == Kind::MethodNotAllowed
    }

    /// The path named no OpenAI endpoint.
    pub fn is_unknown_endpoint(&self) -> bool {
        self.kind == Kind::UnknownEndpoint
    }

    /// The body could not be read.
    pub fn is_body_read(&self) -> bool {
        self.kind == Kind::BodyRead
    }

    /// The body carried a client-side credential key.
    pub fn is_client_credentials(&self) -> bool {
        self.kind == Kind::ClientCredentials
    }

    /// The message, naming the problem.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Debug for IngressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IngressError").field("kind", &self.kind).field("message", &self.message).finish()
    }
}

impl fmt::Display for IngressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for IngressError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn StdError + 'static))
    }
}
