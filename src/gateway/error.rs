//! OpenAI-style JSON answers for the gateway's own refusals (authentication, unknown routes,
//! operations endpoints); routing failures go through `switchyard_services::http_error`.

use axum::{
    Json,
    response::{IntoResponse, Response},
};
use http::{HeaderValue, StatusCode};
use switchyard_services::{
    http_error::ERROR_KIND_HEADER,
    openai::{ApiError, ErrorResponse},
};

/// `{"error": {"message", "type", "code"}}` with `status`, and `x-switchyard-error: code`.
pub(crate) fn json_error(status: StatusCode, kind: &str, code: &'static str, message: impl Into<String>) -> Response {
    let body = ErrorResponse::new(ApiError::new(message).with_type(kind).with_code(code));
    let mut resp = (status, Json(body)).into_response();
    resp.headers_mut().insert(ERROR_KIND_HEADER, HeaderValue::from_static(code));
    resp
}

/// A 400 `invalid_request_error` naming the problem.
pub(crate) fn bad_request(code: &'static str, message: impl Into<String>) -> Response {
    json_error(StatusCode::BAD_REQUEST, "invalid_request_error", code, message)
}

/// The answer for a path no route serves.
pub(crate) async fn not_found(uri: http::Uri) -> Response {
    let shown: String = uri.path().chars().filter(|c| !c.is_control()).take(200).collect();
    json_error(StatusCode::NOT_FOUND, "invalid_request_error", "unknown_endpoint", format!("no endpoint at `{shown}`"))
}

/// The answer for a known path asked with a method it does not serve.
pub(crate) async fn method_not_allowed(method: http::Method, uri: http::Uri) -> Response {
    let shown: String = uri.path().chars().filter(|c| !c.is_control()).take(200).collect();
    // axum adds the `Allow` header to this answer.
    json_error(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request_error",
        "method_not_allowed",
        format!("method {method} not allowed on `{shown}`"),
    )
}
