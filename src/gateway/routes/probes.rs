//! `GET /health` (behind the master key): LiteLLM's endpoint that reports the health of every
//! deployment. With background health checks running it answers from their latest fresh results
//! (as LiteLLM does); otherwise it probes every deployment now, through the provider, bounded in
//! concurrency. `?model=<group>` or `?model_id=<id>` narrows it to one group or deployment; a
//! narrowed answer with no healthy endpoint is a 503.

use std::sync::Arc;

use axum::{
    Json,
    extract::{Query, State},
};
use http::StatusCode;
use serde::{Deserialize, Serialize};
use switchyard_layers::{Deployment, redact::mask_url_credentials, state::HealthRecord};
use tokio::time::Instant;

use crate::gateway::GatewayState;

/// The query of `GET /health`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HealthQuery {
    /// A model group.
    model: Option<String>,
    /// A deployment id.
    model_id: Option<String>,
}

/// LiteLLM's answer shape.
#[derive(Serialize)]
pub(crate) struct HealthAnswer {
    healthy_endpoints: Vec<Endpoint>,
    unhealthy_endpoints: Vec<Endpoint>,
    healthy_count: usize,
    unhealthy_count: usize,
}

/// One deployment's verdict, without credentials.
#[derive(Serialize)]
struct Endpoint {
    model: String,
    model_name: String,
    model_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    api_base: Option<String>,
    latency_ms: u64,
    /// Seconds since the probe (0 for an on-demand probe).
    age_seconds: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exception_status: Option<u16>,
}

impl Endpoint {
    fn new(d: &Deployment, r: &HealthRecord, now: Instant) -> Self {
        Self {
            model: d.model.to_string(),
            model_name: d.group.to_string(),
            model_id: d.id.to_string(),
            api_base: d.api_base.as_deref().map(mask_url_credentials),
            latency_ms: u64::try_from(r.latency.as_millis()).unwrap_or(u64::MAX),
            age_seconds: r.age(now).as_secs(),
            error: (!r.healthy).then(|| r.reason.to_string()),
            exception_status: if r.healthy { None } else { r.status },
        }
    }
}

pub(crate) async fn health(
    State(shared): State<Arc<GatewayState>>,
    Query(q): Query<HealthQuery>,
) -> (StatusCode, Json<HealthAnswer>) {
    let router = &shared.router;
    let wanted = |d: &Deployment| {
        q.model.as_deref().is_none_or(|m| &*d.group == m) && q.model_id.as_deref().is_none_or(|id| d.id.as_str() == id)
    };
    let settings = router.health_settings();
    let now = Instant::now();
    let results: Vec<(Arc<Deployment>, HealthRecord)> = if router.health_checks_running() {
        let registry = router.registry();
        router
            .health()
            .await
            .into_iter()
            .filter(|(_, _, r)| r.is_fresh(settings.check.staleness, now))
            .filter_map(|(id, _, r)| registry.deployment(&id).map(|d| (d, r)))
            .filter(|(d, _)| wanted(d))
            .collect()
    } else {
        router.probe_now(q.model.as_deref()).await.into_iter().filter(|(d, _)| wanted(d)).collect()
    };
    let (mut healthy, mut unhealthy) = (Vec::new(), Vec::new());
    for (d, r) in &results {
        let e = Endpoint::new(d, r, now);
        if r.healthy { healthy.push(e) } else { unhealthy.push(e) }
    }
    let targeted = q.model.is_some() || q.model_id.is_some();
    let status = if targeted && healthy.is_empty() { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK };
    let answer = HealthAnswer {
        healthy_count: healthy.len(),
        unhealthy_count: unhealthy.len(),
        healthy_endpoints: healthy,
        unhealthy_endpoints: unhealthy,
    };
    (status, Json(answer))
}
