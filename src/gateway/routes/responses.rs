//! The Responses API's operations on stored responses (`GET` and `DELETE /v1/responses/{id}`,
//! `POST /v1/responses/{id}/cancel`), and Anthropic's `POST /v1/messages/count_tokens`.
//!
//! A stored response lives on the deployment that created it. The pre-call layer remembers which
//! one (in the shared store, so every replica knows), and an operation goes through the routing
//! stack pinned to it: the provider builds the URL and credentials as for any attempt, and a
//! response the gateway never saw (or forgot) is a 404 without an upstream call.

use std::sync::Arc;

use axum::{
    body::Body,
    extract::{Path, Request, State},
    response::{IntoResponse, Response},
};
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use serde_json::json;
use switchyard_layers::{
    RequestFacts, RouteCtx,
    ctx::{Endpoint, PreRouteDecision, ResponseOp},
    precall::{Tokenizer, conversation_key, count_input_tokens},
    preroute::ROUTED_MODEL_HEADER,
};
use switchyard_services::{
    http_error::{in_dialect, into_error_response},
    ingress::{IngressError, is_json_content_type},
    openai::facts_from_json,
    provider::has_token_counter,
};
use tower::ServiceExt;

use crate::gateway::{GatewayState, error::json_error};

/// Headers an operation passes on (the provider forwards only its own list of them anyway).
const PASSED: [&str; 3] = ["x-request-id", "traceparent", "tracestate"];

/// `GET /v1/responses/{id}`.
pub(crate) async fn get(
    State(shared): State<Arc<GatewayState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    operation(&shared, id, ResponseOp::Get, &headers).await
}

/// `DELETE /v1/responses/{id}`.
pub(crate) async fn delete(
    State(shared): State<Arc<GatewayState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    operation(&shared, id, ResponseOp::Delete, &headers).await
}

/// `POST /v1/responses/{id}/cancel`.
pub(crate) async fn cancel(
    State(shared): State<Arc<GatewayState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    operation(&shared, id, ResponseOp::Cancel, &headers).await
}

async fn operation(shared: &GatewayState, id: String, op: ResponseOp, headers: &HeaderMap) -> Response {
    let holder = shared.router.store().affinity(&conversation_key(&id)).await;
    let Some(holder) = holder else {
        let shown: String = id.chars().filter(|c| !c.is_control()).take(100).collect();
        return json_error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "response_not_found",
            format!("no response `{shown}` is known to this gateway (never created through it, or forgotten)"),
        );
    };
    let mut facts = RequestFacts::new().endpoint(Endpoint::ResponseOp(op)).disable_fallbacks(true);
    facts.previous_response = Some(id);
    let mut req = http::Request::new(Bytes::new());
    for name in PASSED {
        if let Some(value) = headers.get(name) {
            req.headers_mut().insert(name, value.clone());
        }
    }
    // The deployment's id is a name the registry routes to exactly that deployment.
    req.extensions_mut().insert(RouteCtx::with_facts(holder.as_str(), facts));
    let answer = match shared.router.service().oneshot(req).await {
        Ok(resp) => resp,
        Err(e) => into_error_response(e),
    };
    answer.map(Body::new)
}

/// `POST /v1/messages/count_tokens`: the input tokens of an Anthropic Messages request, counted
/// locally with the estimator the pre-call checks use (the tokenizer of the group's first
/// deployment when it is an OpenAI model, else about one token per four bytes), so an estimate:
/// Anthropic's own tokenizer is not public. The model must name a group, alias or pattern.
/// With `general_settings.count_tokens: upstream`, a group with a deployment that has a token
/// counter (Anthropic; Claude or a Gemini model on Vertex AI: `has_token_counter`) asks the first
/// such deployment for the exact count instead (through the routing stack, pinned to it).
pub(crate) async fn count_tokens(State(shared): State<Arc<GatewayState>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let headers = parts.headers.clone();
    let fail = |err: switchyard_layers::BoxError| in_dialect(into_error_response(err), Endpoint::Messages);
    if !is_json_content_type(&parts.headers) {
        let shown = parts.headers.get(http::header::CONTENT_TYPE).map(|v| String::from_utf8_lossy(v.as_bytes()));
        return fail(IngressError::unsupported_media_type(&shown.unwrap_or_default()).into()).map(Body::new);
    }
    let body = match axum::body::to_bytes(body, shared.max_body_bytes).await {
        Ok(body) => body,
        Err(_) => return fail(IngressError::body_too_large(shared.max_body_bytes).into()).map(Body::new),
    };
    let (model, facts) = match facts_from_json(&body, Endpoint::Messages) {
        Ok(read) => read,
        Err(e) => return fail(e.into()).map(Body::new),
    };
    // A virtual name (`smart-router`) counts as the group its pre-router would pick for this
    // request: Claude Code sizes its context with the model that will answer.
    let routed = shared.router.preview_pre_route(&model, &facts.with_body(body.clone()));
    let model = routed.as_ref().map_or(model, |d| d.target.to_string());
    let resolved = match shared.router.registry().resolve(&model) {
        Ok(resolved) => resolved,
        Err(e) => return fail(e.into()).map(Body::new),
    };
    if shared.settings.load().count_tokens_upstream
        && let Some(d) = resolved.group.deployments().iter().find(|d| has_token_counter(&d.model))
    {
        let facts = RequestFacts::new().endpoint(Endpoint::CountTokens).disable_fallbacks(true);
        let (parts, _) = http::Request::new(()).into_parts();
        let mut req = http::Request::from_parts(parts, body);
        for name in PASSED.iter().chain(&["anthropic-version", "anthropic-beta"]) {
            if let Some(value) = headers.get(*name) {
                req.headers_mut().insert(*name, value.clone());
            }
        }
        req.extensions_mut().insert(RouteCtx::with_facts(d.id.as_str(), facts));
        let answer = match shared.router.service().oneshot(req).await {
            Ok(resp) => resp,
            Err(e) => fail(e),
        };
        return name_routed(answer.map(Body::new), routed.as_ref());
    }
    let tokenizer =
        resolved.group.deployments().first().map_or(Tokenizer::Estimate, |d| Tokenizer::for_model(&d.model));
    let tokens = count_input_tokens(&body, tokenizer).unwrap_or(0);
    name_routed((StatusCode::OK, axum::Json(json!({ "input_tokens": tokens }))).into_response(), routed.as_ref())
}

/// Names the group a virtual name was counted as (`x-switchyard-routed-model`).
fn name_routed(mut resp: Response, routed: Option<&PreRouteDecision>) -> Response {
    if let Some(value) = routed.and_then(|d| http::HeaderValue::from_str(&d.target).ok()) {
        resp.headers_mut().insert(ROUTED_MODEL_HEADER, value);
    }
    resp
}
