//! `GET /router/deployments`: every deployment with its limits, cooldown, load and latency; and
//! `POST` / `DELETE /router/deployments/{id}/cooldown` to bench or re-admit one by hand.

use std::{collections::HashMap, sync::Arc, time::Duration};

use axum::{
    Json,
    extract::{Path, State},
    response::{IntoResponse, Response},
};
use bytes::Bytes;
use http::StatusCode;
use serde::{Deserialize, Serialize};
use switchyard_layers::{
    Deployment, DeploymentId, Registry,
    redact::redact,
    state::{CooldownState, WindowUsage},
};
use tokio::time::Instant;

use crate::gateway::{
    GatewayState,
    error::{bad_request, json_error},
};

/// Longest manual cooldown: one week.
const MAX_BENCH: Duration = Duration::from_secs(7 * 24 * 3600);
/// Longest operator reason kept, in bytes.
const MAX_REASON: usize = 200;

#[derive(Serialize)]
pub(crate) struct Listing {
    deployments: Vec<Row>,
}

#[derive(Serialize)]
struct Row {
    id: String,
    group: String,
    model: String,
    provider: String,
    api_base: Option<String>,
    weight: Option<f64>,
    rpm: Option<u64>,
    tpm: Option<u64>,
    order: Option<u32>,
    max_parallel_requests: Option<u32>,
    blocked: bool,
    cooldown: CooldownView,
    in_flight: u64,
    rpm_used: u64,
    tpm_used: u64,
    mean_latency_seconds: Option<f64>,
    latency_samples: usize,
}

/// A deployment's cooldown state as JSON: `status` is `available`, `cooling_down` or `half_open`.
#[derive(Serialize)]
pub(crate) struct CooldownView {
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    until_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    http_status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    strikes: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    probing: Option<bool>,
}

impl CooldownView {
    /// The view of `state` at `now`.
    pub(crate) fn new(state: Option<&CooldownState>, now: Instant) -> Self {
        let mut view = Self {
            status: "available",
            until_seconds: None,
            reason: None,
            http_status: None,
            strikes: None,
            probing: None,
        };
        match state {
            Some(CooldownState::CoolingDown(c)) => {
                view.status = "cooling_down";
                view.until_seconds = Some(round_ms(c.until.saturating_duration_since(now)));
                view.reason = Some(c.reason.to_string());
                view.http_status = c.status;
                view.strikes = Some(c.strikes);
            }
            Some(CooldownState::HalfOpen { strikes, probing }) => {
                view.status = "half_open";
                view.strikes = Some(*strikes);
                view.probing = Some(*probing);
            }
            Some(_) | None => {}
        }
        view
    }
}

fn round_ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

/// What the state endpoints show of every registered deployment (config order): the live
/// registry they were read from, the deployments, their cooldown states by id and their window
/// usage (in the same order).
pub(crate) struct StoreView {
    pub(crate) registry: Arc<Registry>,
    pub(crate) deployments: Vec<Arc<Deployment>>,
    pub(crate) cooldowns: HashMap<DeploymentId, CooldownState>,
    pub(crate) usage: Vec<WindowUsage>,
}

impl StoreView {
    pub(crate) async fn read(shared: &GatewayState) -> Self {
        let router = &shared.router;
        let registry = router.registry();
        let deployments = registry.deployments();
        let ids: Vec<DeploymentId> = deployments.iter().map(|d| d.id.clone()).collect();
        let cooldowns = router.cooldowns().await;
        let usage = router.store().usage(&ids).await;
        let cooldowns = cooldowns.into_iter().map(|entry| (entry.deployment, entry.state)).collect();
        Self { registry, deployments, cooldowns, usage }
    }
}

/// Every registered deployment, in config order.
pub(crate) async fn list(State(shared): State<Arc<GatewayState>>) -> Response {
    let router = &shared.router;
    let StoreView { deployments, cooldowns, usage, .. } = StoreView::read(&shared).await;
    let now = Instant::now();
    let local = router.store().local();
    let rows = deployments
        .iter()
        .zip(usage)
        .map(|(d, used): (&Arc<Deployment>, WindowUsage)| Row {
            id: d.id.to_string(),
            group: d.group.to_string(),
            model: d.model.to_string(),
            provider: d.provider().to_owned(),
            api_base: d.api_base.as_deref().map(public_base),
            weight: d.weight,
            rpm: d.rpm,
            tpm: d.tpm,
            order: d.order,
            max_parallel_requests: d.max_parallel_requests,
            blocked: d.blocked,
            cooldown: CooldownView::new(cooldowns.get(&d.id), now),
            in_flight: local.in_flight(&d.id),
            rpm_used: used.requests,
            tpm_used: used.tokens,
            mean_latency_seconds: local.mean_latency(&d.id, false),
            latency_samples: local.samples(&d.id),
        })
        .collect();
    Json(Listing { deployments: rows }).into_response()
}

/// An endpoint as operators may see it: scheme, host, port and path; credentials in the
/// authority and the query string are left out.
pub(crate) fn public_base(base: &str) -> String {
    match base.parse::<http::Uri>() {
        Ok(uri) if uri.host().is_some() => {
            let scheme = uri.scheme_str().map(|s| format!("{s}://")).unwrap_or_default();
            let host = uri.host().unwrap_or_default();
            let port = uri.port_u16().map(|p| format!(":{p}")).unwrap_or_default();
            let path = uri.path().trim_end_matches('/');
            format!("{scheme}{host}{port}{path}")
        }
        _ => redact(base.split(['?', '#']).next().unwrap_or_default(), &[], 200),
    }
}

/// The body of a manual bench; both fields optional.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct BenchRequest {
    seconds: Option<f64>,
    reason: Option<String>,
}

#[derive(Serialize)]
struct CooldownAnswer {
    id: String,
    group: String,
    cooldown: CooldownView,
    #[serde(skip_serializing_if = "Option::is_none")]
    was_cooling_down: Option<bool>,
}

/// Benches a deployment for `seconds` (default: the router's `cooldown_time`). A cooldown that
/// already runs longer is kept: benching extends, never shortens.
pub(crate) async fn bench(
    State(shared): State<Arc<GatewayState>>,
    Path(id): Path<String>,
    headers: http::HeaderMap,
    body: Bytes,
) -> Response {
    let id = DeploymentId::from(id);
    let empty = body.iter().all(u8::is_ascii_whitespace);
    if !empty && !crate::gateway::origin::is_json(&headers) {
        return json_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request_error",
            "unsupported_media_type",
            "the body must be JSON: send `content-type: application/json`",
        );
    }
    let Some(deployment) = shared.router.registry().deployment(&id) else {
        return unknown(&id);
    };
    let req: BenchRequest = if empty {
        BenchRequest::default()
    } else {
        match serde_json::from_slice(&body) {
            Ok(req) => req,
            Err(e) => {
                return bad_request(
                    "invalid_request",
                    format!("body must be {{\"seconds\": N, \"reason\": \"...\"}}: {e}"),
                );
            }
        }
    };
    let ttl = match req.seconds {
        None => shared.settings.load().cooldown_time,
        Some(s) if s.is_finite() && s > 0.0 && s <= MAX_BENCH.as_secs_f64() => Duration::from_secs_f64(s),
        Some(s) => {
            return bad_request(
                "invalid_request",
                format!("`seconds` must be in (0, {}], got {s}", MAX_BENCH.as_secs()),
            );
        }
    };
    if ttl.is_zero() {
        return bad_request("invalid_request", "the router's cooldown_time is 0: give `seconds`");
    }
    let reason = req.reason.map_or_else(|| "benched by an operator".to_owned(), |r| redact(&r, &[], MAX_REASON));
    let cooldown = shared.router.store().bench(&id, ttl, reason.into(), None, None).await;
    tracing::warn!(deployment = %id, group = %deployment.group, seconds = ttl.as_secs_f64(), "deployment benched by hand");
    let state = CooldownState::CoolingDown(cooldown);
    Json(CooldownAnswer {
        id: id.to_string(),
        group: deployment.group.to_string(),
        cooldown: CooldownView::new(Some(&state), Instant::now()),
        was_cooling_down: None,
    })
    .into_response()
}

/// Ends a deployment's cooldown (or half-open state) now.
pub(crate) async fn readmit(State(shared): State<Arc<GatewayState>>, Path(id): Path<String>) -> Response {
    let id = DeploymentId::from(id);
    let Some(deployment) = shared.router.registry().deployment(&id) else {
        return unknown(&id);
    };
    let was = shared.router.store().clear_cooldown(&id).await;
    tracing::info!(deployment = %id, group = %deployment.group, was_cooling_down = was, "deployment re-admitted by hand");
    Json(CooldownAnswer {
        id: id.to_string(),
        group: deployment.group.to_string(),
        cooldown: CooldownView::new(None, Instant::now()),
        was_cooling_down: Some(was),
    })
    .into_response()
}

fn unknown(id: &DeploymentId) -> Response {
    let shown: String = id.as_str().chars().filter(|c| !c.is_control()).take(200).collect();
    json_error(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        "deployment_not_found",
        format!("no deployment `{shown}`; GET /router/deployments lists them"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_bases_lose_credentials_and_queries() {
        assert_eq!(public_base("https://user:pw@eu.example.com:8443/v1/?key=sk"), "https://eu.example.com:8443/v1");
        assert_eq!(public_base("http://localhost:11434"), "http://localhost:11434");
        assert_eq!(public_base("not a url ?key=sk-abcdef"), "not a url ");
    }
}
