//! `GET /health/liveliness` (the process answers) and `GET /health/readiness` (it can route),
//! both open without the master key; and `GET /metrics`.

use std::{collections::HashSet, sync::Arc};

use axum::{
    Json,
    extract::State,
    response::{IntoResponse, Response},
};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;

use crate::gateway::{GatewayState, error::json_error};

/// LiteLLM's answer, kept so existing probes match it.
pub(crate) async fn liveliness() -> Json<&'static str> {
    Json("I'm alive!")
}

#[derive(Serialize)]
pub(crate) struct Readiness {
    status: &'static str,
    deployments: usize,
    model_groups: usize,
    cooling_down: usize,
    state: StateStatus,
    health_checks: HealthChecks,
}

/// What the background health checks found: deployments unhealthy, not the gateway (it stays
/// ready while any deployment is registered).
#[derive(Serialize)]
pub(crate) struct HealthChecks {
    /// The probes run on this replica.
    enabled: bool,
    /// Unhealthy deployments are filtered before the cooldown filter.
    routing: bool,
    /// Deployments whose latest fresh probe failed.
    unhealthy: Vec<String>,
}

/// Where routing state lives, and whether this replica is on its own for now.
#[derive(Serialize)]
pub(crate) struct StateStatus {
    backend: &'static str,
    /// Redis is unreachable: routing continues on this replica's local state.
    degraded: bool,
}

/// 200 when at least one deployment is registered, else 503; with counts and the state backend
/// either way (a degraded Redis backend keeps the gateway ready: routing continues on local state).
pub(crate) async fn readiness(State(shared): State<Arc<GatewayState>>) -> (StatusCode, Json<Readiness>) {
    let deployments = shared.router.registry().deployments();
    let model_groups = deployments.iter().map(|d| &d.group).collect::<HashSet<_>>().len();
    let cooling_down = shared.router.cooldowns().await.len();
    let settings = shared.router.health_settings();
    let now = tokio::time::Instant::now();
    let unhealthy = shared
        .router
        .health()
        .await
        .into_iter()
        .filter(|(_, _, r)| !r.healthy && r.is_fresh(settings.check.staleness, now))
        .map(|(id, _, _)| id.to_string())
        .collect();
    let ready = !deployments.is_empty();
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let body = Readiness {
        status: if ready { "ready" } else { "no deployments" },
        deployments: deployments.len(),
        model_groups,
        cooling_down,
        state: StateStatus {
            backend: shared.router.store().backend_name(),
            degraded: shared.router.store().is_degraded(),
        },
        health_checks: HealthChecks {
            enabled: shared.router.health_checks_running(),
            routing: settings.routing,
            unhealthy,
        },
    };
    (status, Json(body))
}

/// The Prometheus text exposition of every metric recorded in this process.
pub(crate) async fn metrics(State(shared): State<Arc<GatewayState>>) -> Response {
    let Some(handle) = &shared.prometheus else {
        return json_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "metrics_unavailable",
            "another metrics recorder is installed in this process; give the gateway its Prometheus handle",
        );
    };
    let mut resp = handle.render().into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4"));
    resp
}
