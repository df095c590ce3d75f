//! Errors as HTTP answers: every failure of the stack as an OpenAI-style JSON answer with the right status.
//!
//! [`error_response`] turns any error a Switchyard stack returns into
//! `{"error": {"message", "type", "param", "code"}}` with a status a client can act on, and an
//! `x-switchyard-error` header naming the kind. The [ingress](crate::ingress) uses it for every
//! failure, so a stack behind it never fails; users with their own stacks call it from axum's
//! `HandleErrorLayer` (or use [`into_error_response`], which also keeps the error for logs).
//!
//! | failure | status | `type` / `code` |
//! |---|---|---|
//! | unknown model group | 404 | `invalid_request_error` / `model_not_found`, the known groups in the message |
//! | malformed request | 400 | `invalid_request_error` / `invalid_request` |
//! | body too large, not JSON, wrong method or path | 413, 415, 405, 404 | `invalid_request_error` / see [`IngressError`] |
//! | `api_key`, `api_base` or `base_url` in the body | 400 | `invalid_request_error` / `client_credentials_not_allowed`, the field in the message |
//! | prompt fits no context window | 400 | `invalid_request_error` / `context_length_exceeded` |
//! | all deployments cooling down | 429 + `Retry-After` | `rate_limit_error` / `all_deployments_cooling_down` |
//! | all deployments at their limits | 429 + `Retry-After` | `rate_limit_error` / `rate_limit_exceeded` |
//! | budget spent | 429 | `budget_exceeded` / `budget_exceeded` |
//! | request tags allow no deployment (tag routing) | 403 | `permission_error` / `not_allowed`, the tags in the message |
//! | no deployment left | 503 | `server_error` / `no_deployments_available` |
//! | no routing context (a stack built wrong) | 500 | `server_error` / `internal_error`, no details |
//! | upstream timeout | 504 | `timeout_error` / `upstream_timeout` |
//! | upstream unreachable, connection broken | 502 | `upstream_error` / `upstream_connect_error`, `upstream_transport_error` |
//! | upstream 5xx | 502, or 503 when it said 503 | `upstream_error` / `upstream_server_error`, `upstream_unavailable` |
//! | upstream 401 / 403 | 502 | `upstream_error` / `upstream_auth_error` |
//! | upstream 404 | 502 | `upstream_error` / `upstream_not_found` |
//! | upstream 429 | 429 + `Retry-After` | the provider's error, sanitized |
//! | upstream 400, 409, 413, 422 (context window, content filter, ...) | the upstream's | the provider's error, sanitized |
//! | anything else | 500 | `server_error` / `internal_error`, no details |
//!
//! Why upstream 401, 403 and 404 become 502: the client authenticated with the gateway and asked
//! for a group that exists; an upstream refusing *our* deployment's key or not knowing *our*
//! deployment's model is a server-side misconfiguration. Passing a 401 on would make clients
//! believe their own key is wrong. Quota errors (`insufficient_quota`) are classified as rate
//! limits and answer 429.
//!
//! Nothing internal leaves: no stack traces, no deployment ids, no upstream URLs. Messages of
//! 5xx-class failures are fixed texts naming only the model group; the provider's error on a
//! passed-through 4xx keeps only `message`, `type`, `param` and `code`, with the message run
//! through [`redact`] and every field capped in size.
//!
//! ```
//! use std::time::Duration;
//! use http::StatusCode;
//! use switchyard_layers::{BoxError, RouteError, RouteErrorKind};
//! use switchyard_services::http_error::error_response;
//!
//! let err: BoxError = RouteError::new(RouteErrorKind::AllCoolingDown, "every deployment of `gpt-4o` is cooling down")
//!     .with_retry_after(Duration::from_millis(1200))
//!     .into();
//! let resp = error_response(&err);
//! assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
//! assert_eq!(resp.headers()["retry-after"], "2");
//! assert_eq!(resp.headers()["retry-after-ms"], "1200");
//! assert_eq!(resp.headers()["x-switchyard-error"], "all_cooling_down");
//! ```

mod upstream;

#[cfg(test)]
mod tests;

use std::{error::Error as StdError, fmt, sync::Arc, time::Duration};

use http::{HeaderName, HeaderValue, StatusCode, header};
use switchyard_layers::{BoxError, RouteBody, RouteError, RouteErrorKind, ctx::Endpoint, redact::redact};

use crate::{
    ingress::IngressError,
    openai::{ApiError, ErrorResponse},
};

/// The response header naming the kind of failure (`unknown_group`, `upstream`,
/// `body_too_large`, ...).
pub const ERROR_KIND_HEADER: &str = "x-switchyard-error";

/// Longest message an error answer carries, in bytes.
const MAX_MESSAGE: usize = 1000;
/// Longest `type`, `param` or `code` passed on from an upstream, in bytes.
const MAX_FIELD: usize = 64;

const INVALID_REQUEST: &str = "invalid_request_error";
const RATE_LIMIT: &str = "rate_limit_error";
const SERVER_ERROR: &str = "server_error";
const INTERNAL_MESSAGE: &str = "internal error";

/// The answer for any error a Switchyard stack (or the ingress) returns.
///
/// Looks through the error's source chain for an [`IngressError`] or a [`RouteError`], whatever
/// layers wrapped it; a Tokio timeout answers 504; anything else is a 500 without details. See
/// the [module docs](self) for every mapping.
///
/// With axum: `HandleErrorLayer::new(|err: BoxError| async move { error_response(&err) })`.
pub fn error_response(err: &BoxError) -> http::Response<RouteBody> {
    let mut cur: Option<&(dyn StdError + 'static)> = Some(&**err);
    while let Some(e) = cur {
        if let Some(ingress) = e.downcast_ref::<IngressError>() {
            return ingress_error_response(ingress);
        }
        if let Some(route) = e.downcast_ref::<RouteError>() {
            return route_error_response(route);
        }
        if e.is::<tokio::time::error::Elapsed>() {
            let error = ApiError::new("the request timed out").with_type("timeout_error").with_code("timeout");
            return respond(StatusCode::GATEWAY_TIMEOUT, "timeout", error, None);
        }
        cur = e.source();
    }
    internal_error("internal")
}

/// [`error_response`], keeping the error in the response's extensions as an [`ErrorCause`] so an
/// outer layer (logging, metrics) can still read it.
pub fn into_error_response(err: BoxError) -> http::Response<RouteBody> {
    let mut resp = error_response(&err);
    resp.extensions_mut().insert(ErrorCause::new(err));
    resp
}

/// The answer for a [`RouteError`]; see the [module docs](self) for every mapping.
pub fn route_error_response(err: &RouteError) -> http::Response<RouteBody> {
    let kind = err.kind();
    let name = kind.as_str();
    let message = || safe_message(err.message());
    match kind {
        RouteErrorKind::UnknownGroup => {
            let error =
                ApiError::new(message()).with_type(INVALID_REQUEST).with_param("model").with_code("model_not_found");
            respond(StatusCode::NOT_FOUND, name, error, None)
        }
        RouteErrorKind::InvalidRequest => {
            let error = ApiError::new(message()).with_type(INVALID_REQUEST).with_code("invalid_request");
            respond(StatusCode::BAD_REQUEST, name, error, None)
        }
        RouteErrorKind::ContextWindowExceeded => {
            let error = ApiError::new(message())
                .with_type(INVALID_REQUEST)
                .with_param("messages")
                .with_code("context_length_exceeded");
            respond(StatusCode::BAD_REQUEST, name, error, None)
        }
        RouteErrorKind::AllCoolingDown => {
            let error = ApiError::new(message()).with_type(RATE_LIMIT).with_code("all_deployments_cooling_down");
            respond(StatusCode::TOO_MANY_REQUESTS, name, error, err.retry_after())
        }
        RouteErrorKind::RateLimited => {
            let error = ApiError::new(message()).with_type(RATE_LIMIT).with_code("rate_limit_exceeded");
            respond(StatusCode::TOO_MANY_REQUESTS, name, error, err.retry_after())
        }
        RouteErrorKind::BudgetExceeded => {
            let error = ApiError::new(message()).with_type("budget_exceeded").with_code("budget_exceeded");
            respond(StatusCode::TOO_MANY_REQUESTS, name, error, err.retry_after())
        }
        RouteErrorKind::NotAllowed => {
            let error = ApiError::new(message()).with_type("permission_error").with_code("not_allowed");
            respond(StatusCode::FORBIDDEN, name, error, None)
        }
        RouteErrorKind::NoCandidates => {
            let error = ApiError::new(message()).with_type(SERVER_ERROR).with_code("no_deployments_available");
            respond(StatusCode::SERVICE_UNAVAILABLE, name, error, err.retry_after())
        }
        RouteErrorKind::MissingContext => internal_error(name),
        RouteErrorKind::Upstream => upstream::response(err),
        // A kind added after this table was written: its own status, a type by class.
        _ => {
            let status = err.http_status();
            let kind = if status.is_client_error() { INVALID_REQUEST } else { SERVER_ERROR };
            respond(status, name, ApiError::new(message()).with_type(kind).with_code(name), err.retry_after())
        }
    }
}

/// The answer for an [`IngressError`]: its [status](IngressError::status), type
/// `invalid_request_error`, its [name](IngressError::as_str) as the code (405 answers also carry
/// `Allow: POST`).
pub(crate) fn ingress_error_response(err: &IngressError) -> http::Response<RouteBody> {
    let error = ApiError::new(safe_message(err.message())).with_type(INVALID_REQUEST).with_code(err.as_str());
    let mut resp = respond(err.status(), err.as_str(), error, None);
    if err.is_method_not_allowed() {
        resp.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
    }
    resp
}

/// The error of an error answer, kept in its extensions so the answer can be written again in
/// another dialect ([`in_dialect`]).
#[derive(Clone, Debug)]
struct ErrorBody(ApiError);

/// An answer in the dialect of the endpoint the client called: an error answer of this module
/// (OpenAI's `{"error": {...}}`) becomes Anthropic's `{"type": "error", "error": {"type",
/// "message"}}` for [`Endpoint::Messages`], with the same status and headers, its `type` chosen
/// by the status as Anthropic's API does (`invalid_request_error`, `authentication_error`,
/// `permission_error`, `not_found_error`, `request_too_large`, `rate_limit_error`, `api_error`,
/// `overloaded_error`). Every other answer, and every answer to another endpoint (the Responses
/// API shares OpenAI's error shape), is returned as it is.
///
/// ```
/// use switchyard_layers::{BoxError, RouteError, RouteErrorKind, ctx::Endpoint};
/// use switchyard_services::http_error::{error_response, in_dialect};
///
/// let err: BoxError = RouteError::new(RouteErrorKind::InvalidRequest, "`max_tokens` is required").into();
/// let resp = in_dialect(error_response(&err), Endpoint::Messages);
/// assert_eq!(resp.status(), 400);
/// ```
pub fn in_dialect(resp: http::Response<RouteBody>, endpoint: Endpoint) -> http::Response<RouteBody> {
    if endpoint != Endpoint::Messages {
        return resp;
    }
    let Some(ErrorBody(error)) = resp.extensions().get::<ErrorBody>().cloned() else {
        return resp;
    };
    let (mut parts, _) = resp.into_parts();
    let kind = switchyard_dialects::anthropic::error_type_for_status(parts.status.as_u16());
    let body = switchyard_dialects::anthropic::error_json(kind, &error.message);
    parts.headers.remove(header::CONTENT_LENGTH);
    http::Response::from_parts(parts, RouteBody::from(body))
}

/// The failed call behind an error answer, kept in the answer's extensions by the
/// [ingress](crate::ingress) and by [`into_error_response`], for logs and metrics (the trail of
/// attempts, the deployment, the unredacted message). Never sent to the client.
#[derive(Clone)]
pub struct ErrorCause(Arc<BoxError>);

impl ErrorCause {
    /// Keeps `err`.
    pub fn new(err: BoxError) -> Self {
        Self(Arc::new(err))
    }

    /// The error.
    pub fn error(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &**self.0
    }

    /// The [`RouteError`] in the error's source chain, if any.
    pub fn route_error(&self) -> Option<&RouteError> {
        RouteError::find(&**self.0)
    }

    /// The [`IngressError`] in the error's source chain, if any.
    pub fn ingress_error(&self) -> Option<&IngressError> {
        let mut cur: Option<&(dyn StdError + 'static)> = Some(&**self.0);
        while let Some(e) = cur {
            if let Some(found) = e.downcast_ref::<IngressError>() {
                return Some(found);
            }
            cur = e.source();
        }
        None
    }
}

impl fmt::Debug for ErrorCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ErrorCause").field(&self.0).finish()
    }
}

/// A 500 that says nothing about the cause.
fn internal_error(kind: &'static str) -> http::Response<RouteBody> {
    let error = ApiError::new(INTERNAL_MESSAGE).with_type(SERVER_ERROR).with_code("internal_error");
    respond(StatusCode::INTERNAL_SERVER_ERROR, kind, error, None)
}

/// A message fit for a client: credentials masked, size capped.
fn safe_message(message: &str) -> String {
    redact(message, &[], MAX_MESSAGE)
}

/// Builds the JSON answer with its headers; `retry_after` adds `Retry-After` (whole seconds,
/// rounded up, at least 1) and `retry-after-ms`.
fn respond(
    status: StatusCode,
    kind: &'static str,
    error: ApiError,
    retry_after: Option<Duration>,
) -> http::Response<RouteBody> {
    // Our own wire type holds strings and JSON values only: serializing cannot fail.
    let body = serde_json::to_vec(&ErrorResponse::new(error.clone())).unwrap_or_default();
    let mut resp = http::Response::new(RouteBody::from(body));
    *resp.status_mut() = status;
    resp.extensions_mut().insert(ErrorBody(error));
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(ERROR_KIND_HEADER, HeaderValue::from_static(kind));
    if let Some(after) = retry_after {
        let millis = u64::try_from(after.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX);
        let secs = millis.div_ceil(1000).max(1);
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        headers.insert(HeaderName::from_static("retry-after-ms"), HeaderValue::from(millis));
    }
    resp
}
