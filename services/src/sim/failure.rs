//! Simulated failures as a real upstream sends them, classified by the real classifier.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use serde_json::json;
use switchyard_layers::{Outcome, RouteError, outcome::classify};

use super::reply::Attempt;
use crate::openai::{ApiError, ErrorResponse};
use crate::profile::Failure;

/// The context window the simulated context error names when the deployment declares none.
const DEFAULT_CONTEXT_WINDOW: u32 = 8192;

/// How a failing attempt ends.
#[derive(Debug)]
pub(crate) enum Failed {
    /// Never: the deployment hangs until the caller gives up.
    NoAnswer,
    /// With this error.
    Error(RouteError),
}

/// How an attempt failing with `kind` ends.
pub(crate) fn upstream_error(kind: Failure, attempt: &Attempt) -> Failed {
    let d = &attempt.deployment;
    let error = match kind {
        Failure::Hang => return Failed::NoAnswer,
        Failure::Connect => {
            return Failed::Error(RouteError::upstream(
                Outcome::Connect,
                d.id.clone(),
                format!("simulated: connection to deployment `{}` refused", d.id),
            ));
        }
        Failure::RateLimited => ApiError::new(format!(
            "Rate limit reached for requests on deployment `{}` (simulated). Please try again later.",
            d.id
        ))
        .with_type("requests")
        .with_code("rate_limit_exceeded"),
        Failure::InternalError => ApiError::new("The server had an error while processing your request (simulated).")
            .with_type("server_error"),
        Failure::Unavailable => {
            ApiError::new("The engine is currently overloaded, please try again later (simulated).")
                .with_type("server_error")
        }
        Failure::Unauthorized => ApiError::new("Incorrect API key provided (simulated).")
            .with_type("invalid_request_error")
            .with_code("invalid_api_key"),
        Failure::NotFound => ApiError::new(format!(
            "The model `{}` does not exist or you do not have access to it (simulated).",
            d.model
        ))
        .with_type("invalid_request_error")
        .with_code("model_not_found"),
        Failure::ContextWindowExceeded => ApiError::new(format!(
            "This model's maximum context length is {} tokens. However, your messages resulted in {} tokens \
             (simulated).",
            d.max_input_tokens.unwrap_or(DEFAULT_CONTEXT_WINDOW),
            attempt.prompt_tokens
        ))
        .with_type("invalid_request_error")
        .with_param("messages")
        .with_code("context_length_exceeded"),
        Failure::ContentFilter => {
            let mut e = ApiError::new(
                "The response was filtered due to the prompt triggering the content management policy (simulated).",
            )
            .with_param("prompt")
            .with_code("content_filter");
            e.extra.insert("innererror".to_owned(), json!({"code": "ResponsibleAIPolicyViolation"}));
            e
        }
    };
    let Some(status) = kind.status() else {
        unreachable!("every failure but a hang or a connection failure has a status")
    };
    let mut headers = HeaderMap::new();
    if kind == Failure::RateLimited
        && let Some(after) = attempt.profile.retry_after
    {
        if after.subsec_millis() == 0 && !after.is_zero() {
            headers.insert("retry-after", HeaderValue::from(after.as_secs()));
        } else {
            headers.insert("retry-after-ms", HeaderValue::from(u64::try_from(after.as_millis()).unwrap_or(u64::MAX)));
        }
    }
    let message = format!("simulated {status}: {}", error.message);
    let body = Bytes::from(serde_json::to_vec(&ErrorResponse::new(error)).unwrap_or_default());
    let classified = classify(status, &headers, &body);
    let mut err = RouteError::upstream(classified.outcome, d.id.clone(), message).with_upstream_response(status, body);
    if let Some(after) = classified.retry_after {
        err = err.with_retry_after(after);
    }
    Failed::Error(err)
}
