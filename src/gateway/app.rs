//! The axum app: the OpenAI and Anthropic endpoints (the routing stack behind the ingress), the
//! gateway's own endpoints, and the layers every request goes through.
//!
//! Outermost first: the request id (tower-http's `SetRequestId` and `PropagateRequestId`, after
//! [`request_id::keep_acceptable`]); the span and request metrics (every answer, 404s and
//! panics included); response compression for large JSON answers ([`compress`]); the panic
//! catcher ([`panic`]); CORS when origins are configured; the origin and host checks
//! (`origin`); the master key (every route but the health probes and the dashboard's static
//! page); then either a handler or, for the OpenAI endpoints, the ingress (body limit, JSON,
//! errors as OpenAI answers), the observer (routing headers, attempt metrics, the dashboard's
//! windows), the response cache ([`crate::cache`]) and the routing stack.

use std::sync::Arc;

use axum::{
    middleware,
    routing::{get, post, post_service},
};
use switchyard_services::ingress::IngressLayer;
use tower::{ServiceBuilder, util::MapRequestLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};

use super::{
    GatewayState, auth, compress, error,
    headers::REQUEST_ID,
    observe::{ObserveLayer, RoutingState},
    origin, panic, request_id,
    routes::{cache, deployments, feedback, health, models, probes, reload, responses, state},
    ui,
};
use crate::cache::CacheLayer;

/// Paths of the routed endpoints; the ingress reads the endpoint from the end of the path.
const ROUTED: [&str; 14] = [
    "/v1/chat/completions",
    "/chat/completions",
    "/v1/completions",
    "/completions",
    "/v1/embeddings",
    "/embeddings",
    "/openai/deployments/{deployment}/chat/completions",
    "/openai/deployments/{deployment}/completions",
    "/openai/deployments/{deployment}/embeddings",
    // Anthropic's Messages API (Claude Code, the `anthropic` SDKs).
    "/v1/messages",
    "/anthropic/v1/messages",
    // OpenAI's Responses API (Codex, the Agents SDK).
    "/v1/responses",
    "/responses",
    "/openai/v1/responses",
];

pub(crate) fn build(shared: Arc<GatewayState>) -> axum::Router {
    let routing = ServiceBuilder::new()
        .layer(IngressLayer::new(shared.max_body_bytes))
        .layer(ObserveLayer::new(
            shared.dashboard.clone(),
            shared.litellm.clone(),
            shared.routing_trail,
            RoutingState { router: shared.router.clone(), feedback: shared.feedback.clone() },
        ))
        // Below the observer (which reports hits), above the routing stack (which a hit skips).
        .layer(CacheLayer::new(shared.cache.clone(), shared.router.clone()))
        .service(shared.router.service());
    let mut protected = axum::Router::new();
    for path in ROUTED {
        protected = protected.route(path, post_service(routing.clone()));
    }
    let protected = protected
        .route("/v1/messages/count_tokens", post(responses::count_tokens))
        .route("/anthropic/v1/messages/count_tokens", post(responses::count_tokens))
        .route("/v1/responses/{id}", get(responses::get).delete(responses::delete))
        .route("/responses/{id}", get(responses::get).delete(responses::delete))
        .route("/v1/responses/{id}/cancel", post(responses::cancel))
        .route("/responses/{id}/cancel", post(responses::cancel))
        .route("/v1/models", get(models::list))
        .route("/models", get(models::list))
        .route("/metrics", get(health::metrics))
        .route("/health", get(probes::health))
        .route("/router/deployments", get(deployments::list))
        .route(
            "/router/deployments/{id}/cooldown",
            post(deployments::bench)
                .delete(deployments::readmit)
                .route_layer(middleware::from_fn_with_state(shared.clone(), state::record_operator)),
        )
        .route("/router/state", get(state::state))
        .route("/router/events", get(state::events))
        .route("/router/events/stream", get(state::stream))
        .route("/router/reload", post(reload::reload))
        .route("/router/feedback", post(feedback::feedback))
        .route("/adaptive_router/state", get(feedback::adaptive_state))
        .route("/cache/ping", get(cache::ping))
        .route("/cache/delete", post(cache::delete))
        .route_layer(middleware::from_fn_with_state(shared.clone(), auth::require_key));
    let open = axum::Router::new()
        .route("/health/liveliness", get(health::liveliness))
        .route("/health/liveness", get(health::liveliness))
        .route("/health/readiness", get(health::readiness))
        // The page and its assets hold no data: the endpoints they read take the key.
        .route("/ui", get(ui::index))
        .route("/ui/", get(ui::to_index))
        .route("/ui/app.js", get(ui::script))
        .route("/ui/app.css", get(ui::style));
    let cors = shared.origins.cors();
    let app = protected
        .merge(open)
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .layer(middleware::from_fn_with_state(shared.clone(), origin::check));
    // CORS outside the origin check: a preflight from an allowed origin is answered here.
    let app = match cors {
        Some(cors) => app.layer(cors),
        None => app,
    };
    // `Router::layer` wraps what is already there: the last layer added is the outermost.
    app.layer(panic::layer())
        .layer(compress::layer())
        .layer(middleware::from_fn(request_id::track))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .layer(MapRequestLayer::new(request_id::keep_acceptable::<axum::body::Body>))
        .with_state(shared)
}
