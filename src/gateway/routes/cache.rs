//! LiteLLM's cache endpoints, behind the master key: `GET /cache/ping` (is the response cache's
//! backend answering) and `POST /cache/delete` (remove answers by their `x-litellm-cache-key`).

use std::sync::Arc;

use axum::{
    Json,
    extract::State,
    response::{IntoResponse, Response},
};
use http::StatusCode;
use serde::Deserialize;
use serde_json::json;

use crate::gateway::{
    GatewayState,
    error::{bad_request, json_error},
};

/// The answer when no cache is configured (LiteLLM answers 503 too).
fn not_configured() -> Response {
    json_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "service_unavailable",
        "cache_not_configured",
        "no response cache is configured (`litellm_settings.cache: true`)",
    )
}

/// `{"status": "healthy", "cache_type": "local" | "redis"}`, or 503 naming what failed.
pub(crate) async fn ping(State(shared): State<Arc<GatewayState>>) -> Response {
    let Some(cache) = shared.cache.load() else { return not_configured() };
    match cache.ping().await {
        Ok(()) => Json(json!({ "status": "healthy", "cache_type": cache.backend_name() })).into_response(),
        Err(e) => json_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "service_unavailable",
            "cache_unhealthy",
            format!("the {} response cache does not answer: {e}", cache.backend_name()),
        ),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeleteRequest {
    keys: Vec<String>,
}

/// `{"keys": ["<x-litellm-cache-key>", ...]}` → `{"status": "success", "deleted": n}`.
pub(crate) async fn delete(
    State(shared): State<Arc<GatewayState>>,
    body: Result<Json<DeleteRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Some(cache) = shared.cache.load() else { return not_configured() };
    let Ok(Json(request)) = body else {
        return bad_request("invalid_cache_keys", "the body must be `{\"keys\": [\"<x-litellm-cache-key>\", ...]}`");
    };
    if request.keys.len() > 1000 {
        return bad_request("too_many_cache_keys", "at most 1000 keys per request");
    }
    match cache.delete(&request.keys).await {
        Ok(deleted) => Json(json!({ "status": "success", "deleted": deleted })).into_response(),
        Err(e) => json_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "service_unavailable",
            "cache_unhealthy",
            format!("cache delete failed: {e}"),
        ),
    }
}
