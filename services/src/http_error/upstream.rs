//! Answers for attempts that reached a deployment and failed ([`RouteErrorKind::Upstream`]).
//!
//! [`RouteErrorKind::Upstream`]: switchyard_layers::RouteErrorKind::Upstream

use http::StatusCode;
use serde_json::Value;
use switchyard_layers::{Outcome, RouteBody, RouteError, redact::redact};

use super::{INVALID_REQUEST, MAX_FIELD, RATE_LIMIT, respond, safe_message};
use crate::openai::{ApiError, ErrorResponse};

const KIND: &str = "upstream";
const UPSTREAM_ERROR: &str = "upstream_error";

/// The answer for an upstream failure, by its outcome (never by its message).
pub(super) fn response(err: &RouteError) -> http::Response<RouteBody> {
    let outcome = err.outcome();
    let about = match err.group() {
        Some(g) => format!(" for model group `{g}`"),
        None => String::new(),
    };
    let fixed = |status: StatusCode, kind: &str, code: &str, message: String| {
        respond(status, KIND, ApiError::new(safe_message(&message)).with_type(kind).with_code(code), err.retry_after())
    };
    match outcome {
        Some(Outcome::Timeout) => fixed(
            StatusCode::GATEWAY_TIMEOUT,
            "timeout_error",
            "upstream_timeout",
            format!("the upstream deployment{about} did not answer in time"),
        ),
        Some(Outcome::Connect) => fixed(
            StatusCode::BAD_GATEWAY,
            UPSTREAM_ERROR,
            "upstream_connect_error",
            format!("could not connect to the upstream deployment{about}"),
        ),
        Some(Outcome::Transport) => fixed(
            StatusCode::BAD_GATEWAY,
            UPSTREAM_ERROR,
            "upstream_transport_error",
            format!("the connection to the upstream deployment{about} broke"),
        ),
        Some(Outcome::ServerError) => {
            let said = err.upstream_status().filter(|s| s.is_server_error());
            let message = match said {
                Some(s) => format!("the upstream deployment{about} failed with HTTP {}", s.as_u16()),
                None => format!("the upstream deployment{about} failed"),
            };
            if said == Some(StatusCode::SERVICE_UNAVAILABLE) {
                fixed(StatusCode::SERVICE_UNAVAILABLE, UPSTREAM_ERROR, "upstream_unavailable", message)
            } else {
                fixed(StatusCode::BAD_GATEWAY, UPSTREAM_ERROR, "upstream_server_error", message)
            }
        }
        // The deployment's credentials or model are wrong: our configuration, not the client's.
        Some(Outcome::Auth) => fixed(
            StatusCode::BAD_GATEWAY,
            UPSTREAM_ERROR,
            "upstream_auth_error",
            format!("the upstream rejected the credentials of the deployment{about}"),
        ),
        Some(Outcome::NotFound) => fixed(
            StatusCode::BAD_GATEWAY,
            UPSTREAM_ERROR,
            "upstream_not_found",
            format!("the upstream does not know the model or endpoint of the deployment{about}"),
        ),
        Some(
            o @ (Outcome::RateLimited | Outcome::ContextWindowExceeded | Outcome::ContentPolicy | Outcome::BadRequest),
        ) => pass_through(err, o),
        _ => fixed(
            StatusCode::BAD_GATEWAY,
            UPSTREAM_ERROR,
            "upstream_error",
            format!("the upstream deployment{about} failed"),
        ),
    }
}

/// A client-side failure the upstream reported: its status (429 for any rate limit) and its
/// OpenAI error, sanitized.
fn pass_through(err: &RouteError, outcome: Outcome) -> http::Response<RouteBody> {
    let status = match outcome {
        Outcome::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        _ => err.upstream_status().filter(StatusCode::is_client_error).unwrap_or_else(|| outcome.http_status()),
    };
    let (kind, code) = match outcome {
        Outcome::RateLimited => (RATE_LIMIT, Some("rate_limit_exceeded")),
        Outcome::ContextWindowExceeded => (INVALID_REQUEST, Some("context_length_exceeded")),
        Outcome::ContentPolicy => (INVALID_REQUEST, Some("content_filter")),
        _ => (INVALID_REQUEST, None),
    };
    let upstream = err.upstream_body().and_then(|b| serde_json::from_slice::<ErrorResponse>(b).ok()).map(|r| r.error);
    let error = match upstream {
        Some(theirs) => sanitize(theirs, err, kind, code),
        None => {
            let mut e = ApiError::new(safe_message(err.message())).with_type(kind);
            e.code = code.map(|c| Value::String(c.to_owned()));
            e
        }
    };
    respond(status, KIND, error, err.retry_after())
}

/// Keeps the provider's `message`, `type`, `param` and `code` (redacted and capped) and nothing
/// else: other fields may carry anything.
fn sanitize(theirs: ApiError, err: &RouteError, kind: &str, code: Option<&str>) -> ApiError {
    let message = if theirs.message.trim().is_empty() { err.message() } else { theirs.message.as_str() };
    let mut e = ApiError::new(safe_message(message));
    e.kind = Some(theirs.kind.filter(|k| !k.is_empty()).map_or_else(|| kind.to_owned(), |k| field(&k)));
    e.param = theirs.param.map(|p| field(&p));
    e.code = match theirs.code {
        Some(Value::String(c)) if !c.is_empty() => Some(Value::String(field(&c))),
        Some(Value::Number(n)) => Some(Value::Number(n)),
        _ => code.map(|c| Value::String(c.to_owned())),
    };
    e
}

fn field(s: &str) -> String {
    redact(s, &[], MAX_FIELD)
}
