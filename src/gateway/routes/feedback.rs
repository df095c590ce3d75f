//! `POST /router/feedback`: explicit quality feedback on a call an adaptive pre-router routed,
//! keyed by the call's request id (the `x-request-id` / `x-litellm-call-id` of its answer), and
//! `GET /adaptive_router/state` (LiteLLM's): every adaptive router's posteriors.
//!
//! The body is `{"request_id": "...", "score": 0.0..=1.0}` or `{"request_id": "...", "signal":
//! "satisfaction"}` (one of LiteLLM's per-turn signals). The answer names what was learned: the
//! virtual name, the request class, the group, and the alpha and beta added.

use std::sync::Arc;

use axum::{
    Json,
    extract::State,
    response::{IntoResponse, Response},
};
use bytes::Bytes;
use http::StatusCode;
use serde::{Deserialize, Serialize};
use switchyard_layers::preroute::adaptive::{AdaptiveSnapshot, Feedback, Signal};

use crate::gateway::{
    GatewayState,
    error::{bad_request, json_error},
    feedback::Lookup,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FeedbackRequest {
    request_id: Option<String>,
    score: Option<f64>,
    signal: Option<String>,
    /// Free text for the caller's own records; not stored.
    #[serde(default)]
    #[allow(dead_code)]
    comment: Option<serde_json::Value>,
}

#[derive(Serialize)]
struct Applied {
    request_id: String,
    model: String,
    request_type: &'static str,
    routed_model: String,
    alpha_delta: f64,
    beta_delta: f64,
}

fn invalid(message: impl Into<String>) -> Response {
    bad_request("invalid_feedback", message)
}

/// `POST /router/feedback`.
pub(crate) async fn feedback(
    State(shared): State<Arc<GatewayState>>,
    headers: http::HeaderMap,
    body: Bytes,
) -> Response {
    if !crate::gateway::origin::is_json(&headers) {
        return json_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request_error",
            "unsupported_media_type",
            "the body must be JSON: send `content-type: application/json`",
        );
    }
    let de = &mut serde_json::Deserializer::from_slice(&body);
    let req: FeedbackRequest = match serde_path_to_error::deserialize(de) {
        Ok(req) => req,
        Err(e) => {
            let path = e.path().to_string();
            let at = if path == "." { String::new() } else { format!("`{path}`: ") };
            return invalid(format!(
                "{at}{}; the body is {{\"request_id\": \"...\", \"score\": 0..1}} or {{\"request_id\": \"...\", \"signal\": \
                 \"satisfaction\"}}",
                e.inner()
            ));
        }
    };
    let Some(id) = req.request_id.filter(|id| !id.trim().is_empty()) else {
        return invalid("`request_id` is required: the `x-request-id` (or `x-litellm-call-id`) of the answer");
    };
    let feedback = match (req.score, req.signal.as_deref()) {
        (Some(_), Some(_)) => return invalid("give one of `score` and `signal`, not both"),
        (None, None) => return invalid("one of `score` (0 to 1) or `signal` is required"),
        (Some(score), None) if (0.0..=1.0).contains(&score) => Feedback::Score(score),
        (Some(score), None) => return invalid(format!("`score` must be from 0 to 1, got {score}")),
        (None, Some(signal)) => match signal.parse::<Signal>() {
            Ok(signal) => Feedback::Signal(signal),
            Err(()) => {
                let known: Vec<&str> = Signal::ALL.iter().map(|s| s.as_str()).collect();
                let shown: String = signal.chars().filter(|c| !c.is_control()).take(64).collect();
                return invalid(format!("`signal` `{shown}` is not one of {}", known.join(", ")));
            }
        },
    };
    let unknown = || {
        json_error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "unknown_request_id",
            "no answered call of an adaptive router has this request id (or it is older than an hour)",
        )
    };
    let decided = match shared.feedback.take(&id) {
        Lookup::Unknown => return unknown(),
        Lookup::Applied => {
            return json_error(
                StatusCode::CONFLICT,
                "invalid_request_error",
                "feedback_already_applied",
                "this call has had its feedback already",
            );
        }
        Lookup::Found(decided) => decided,
    };
    let router = shared.router.adaptive_routers().into_iter().find(|r| r.name() == &*decided.router);
    let applied = router.map(|r| r.feedback(decided.class, &decided.group, feedback));
    match applied {
        Some(Ok((alpha_delta, beta_delta))) => Json(Applied {
            request_id: id,
            model: decided.router.to_string(),
            request_type: decided.class.as_str(),
            routed_model: decided.group.to_string(),
            alpha_delta,
            beta_delta,
        })
        .into_response(),
        // A reload removed the router or the group since the call.
        _ => {
            shared.feedback.reopen(&id);
            unknown()
        }
    }
}

#[derive(Serialize)]
struct Routers {
    routers: Vec<AdaptiveSnapshot>,
}

/// `GET /adaptive_router/state` (LiteLLM's): every adaptive router's snapshot; 404 when none is
/// configured.
pub(crate) async fn adaptive_state(State(shared): State<Arc<GatewayState>>) -> Response {
    let routers: Vec<AdaptiveSnapshot> = shared.router.adaptive_routers().iter().map(|r| r.snapshot()).collect();
    if routers.is_empty() {
        return json_error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "no_adaptive_router",
            "No adaptive_router is configured on this proxy.",
        );
    }
    Json(Routers { routers }).into_response()
}
