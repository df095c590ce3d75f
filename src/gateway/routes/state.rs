//! The dashboard's data: `GET /router/state` (every group and deployment: state, limits, traffic
//! and latency windows), `GET /router/events` (the routing event feed, paged by `seq`) and
//! `GET /router/events/stream` (the same feed as server-sent events). The JSON shapes are in
//! `docs/observability.md`.

use std::{
    collections::HashMap,
    convert::Infallible,
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use axum::{
    Json,
    extract::{Path, Query, Request, State},
    middleware::Next,
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
};
use futures_util::stream;
use http::Method;
use serde::{Deserialize, Serialize};
use switchyard_layers::{
    Deployment, DeploymentId,
    deployment::WeightBasis,
    state::{CooldownState, HealthRecord, LocalState, WindowUsage},
};
use tokio::{sync::broadcast::error::RecvError, time::Instant};

use super::deployments::{CooldownView, StoreView};
use crate::gateway::{
    GatewayState,
    ui::{
        Dashboard,
        feed::{FEED_CAPACITY, FeedPage},
        stats::{RATE_SECONDS, WINDOW_SECONDS, WindowView},
    },
};

/// What `GET /router/state` answers.
#[derive(Serialize)]
pub(crate) struct Snapshot {
    generated_at_ms: u64,
    window_seconds: usize,
    rate_seconds: u64,
    backend: &'static str,
    degraded: bool,
    master_key: bool,
    cooldown_time_seconds: f64,
    last_event_seq: u64,
    /// `enable_health_check_routing`: unhealthy deployments are filtered.
    health_routing: bool,
    /// The background probes run on this replica.
    health_checks: bool,
    groups: Vec<GroupView>,
    /// Pre-routing: decisions per virtual name and group, and each adaptive router's posteriors.
    pre_routing: PreRoutingView,
}

#[derive(Serialize)]
struct PreRoutingView {
    /// Every virtual name of the live config (sorted).
    names: Vec<String>,
    /// Calls routed per virtual name and group since the gateway started.
    decisions: Vec<crate::gateway::ui::preroute::NameView>,
    /// The adaptive routers' snapshots.
    adaptive: Vec<switchyard_layers::preroute::adaptive::AdaptiveSnapshot>,
}

#[derive(Serialize)]
struct GroupView {
    name: String,
    /// The field simple-shuffle weighs by: `weight`, `rpm`, `tpm` or `uniform`.
    weight_basis: &'static str,
    attempts: u64,
    requests_per_second: f64,
    deployments: Vec<DeploymentView>,
}

#[derive(Serialize)]
struct DeploymentView {
    id: String,
    model: String,
    provider: String,
    /// `blocked`, `unhealthy` (a fresh health probe failed), `cooling_down`, `half_open`,
    /// `at_limit` or `healthy`, first that applies.
    state: &'static str,
    cooldown: CooldownView,
    /// Which limits are reached: `rpm`, `tpm`, `parallel`.
    limits_reached: Vec<&'static str>,
    blocked: bool,
    /// The deployment's weight under the group's basis (0 when it does not set that field).
    weight: f64,
    /// Its share of the group's weight (0 when blocked).
    weight_share: f64,
    /// Its share of the group's attempts over the window; `null` without traffic.
    traffic_share: Option<f64>,
    rpm: Limit,
    tpm: Limit,
    parallel: Limit,
    window: WindowView,
    /// The latest health probe's verdict; `null` when never probed.
    health: Option<HealthView>,
}

/// A health probe's verdict, as the dashboard shows it.
#[derive(Serialize)]
struct HealthView {
    healthy: bool,
    /// Older than the staleness threshold: the filter ignores it.
    stale: bool,
    age_seconds: f64,
    latency_ms: f64,
    status: Option<u16>,
    reason: String,
}

impl HealthView {
    fn new(r: &HealthRecord, staleness: Duration, now: Instant) -> Self {
        Self {
            healthy: r.healthy,
            stale: !r.is_fresh(staleness, now),
            age_seconds: (r.age(now).as_secs_f64() * 10.0).round() / 10.0,
            latency_ms: (r.latency.as_secs_f64() * 10_000.0).round() / 10.0,
            status: r.status,
            reason: r.reason.to_string(),
        }
    }
}

/// The health records and what makes them stale.
struct HealthRead {
    records: HashMap<DeploymentId, HealthRecord>,
    staleness: Duration,
}

#[derive(Serialize)]
struct Limit {
    used: u64,
    limit: Option<u64>,
}

impl Limit {
    fn reached(&self) -> bool {
        self.limit.is_some_and(|l| self.used >= l)
    }
}

fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis().try_into().unwrap_or(u64::MAX))
}

fn basis_name(basis: WeightBasis) -> &'static str {
    match basis {
        WeightBasis::Weight => "weight",
        WeightBasis::Rpm => "rpm",
        WeightBasis::Tpm => "tpm",
        _ => "uniform",
    }
}

fn share(part: f64, total: f64) -> f64 {
    if total > 0.0 { (part / total * 1000.0).round() / 1000.0 } else { 0.0 }
}

/// Every model group and its deployments, in config order.
pub(crate) async fn state(State(shared): State<Arc<GatewayState>>) -> Response {
    let router = &shared.router;
    let dashboard = &shared.dashboard;
    let settings = shared.settings.load_full();
    let StoreView { registry, deployments, cooldowns, usage } = StoreView::read(&shared).await;
    dashboard.stats.retain(|id| registry.deployment(id).is_some());
    dashboard.feed.sweep();
    let health_settings = router.health_settings();
    let health = HealthRead {
        records: router.store().all_health().await.into_iter().collect(),
        staleness: health_settings.check.staleness,
    };

    let now = Instant::now();
    let mut order: Vec<Arc<str>> = Vec::new();
    let mut members: HashMap<Arc<str>, Vec<(&Arc<Deployment>, WindowUsage)>> = HashMap::new();
    for (d, used) in deployments.iter().zip(usage) {
        let entry = members.entry(d.group.clone()).or_default();
        if entry.is_empty() {
            order.push(d.group.clone());
        }
        entry.push((d, used));
    }
    let groups = order
        .into_iter()
        .map(|name| {
            let rows = members.remove(&name).unwrap_or_default();
            let group = registry.group(&name);
            let basis = group.map(|g| g.weight_basis());
            group_view(&name, basis, &rows, &cooldowns, &health, dashboard, router.store().local(), now)
        })
        .collect();
    Json(Snapshot {
        generated_at_ms: unix_ms(),
        window_seconds: WINDOW_SECONDS,
        rate_seconds: RATE_SECONDS,
        backend: router.store().backend_name(),
        degraded: router.store().is_degraded(),
        master_key: settings.master_key.is_some(),
        cooldown_time_seconds: settings.cooldown_time.as_secs_f64(),
        last_event_seq: dashboard.feed.last_seq(),
        health_routing: health_settings.routing,
        health_checks: router.health_checks_running(),
        groups,
        pre_routing: PreRoutingView {
            names: router.pre_routed_names(),
            decisions: dashboard.pre_routes.view(),
            adaptive: router.adaptive_routers().iter().map(|r| r.snapshot()).collect(),
        },
    })
    .into_response()
}

// Everything one group's rows are made of; a struct would only rename these.
#[allow(clippy::too_many_arguments)]
fn group_view(
    name: &str,
    basis: Option<WeightBasis>,
    rows: &[(&Arc<Deployment>, WindowUsage)],
    cooldowns: &HashMap<DeploymentId, CooldownState>,
    health: &HealthRead,
    dashboard: &Dashboard,
    local: &LocalState,
    now: Instant,
) -> GroupView {
    let basis = basis.unwrap_or(WeightBasis::Uniform);
    let windows: Vec<WindowView> = rows.iter().map(|(d, _)| dashboard.stats.view(&d.id)).collect();
    let attempts: u64 = windows.iter().map(|w| w.attempts).sum();
    let total_weight: f64 = rows.iter().filter(|(d, _)| !d.blocked).map(|(d, _)| basis.weight(d)).sum();
    let requests_per_second = windows.iter().map(|w| w.requests_per_second).sum();
    let deployments = rows
        .iter()
        .zip(windows)
        .map(|((d, used), window)| {
            let rpm = Limit { used: used.requests, limit: d.rpm };
            let tpm = Limit { used: used.tokens, limit: d.tpm };
            let parallel = Limit { used: local.in_flight(&d.id), limit: dashboard.parallel_limit(d) };
            let limits_reached: Vec<&'static str> = [("rpm", &rpm), ("tpm", &tpm), ("parallel", &parallel)]
                .into_iter()
                .filter(|(_, l)| l.reached())
                .map(|(n, _)| n)
                .collect();
            let cooldown = cooldowns.get(&d.id);
            let probe = health.records.get(&d.id).map(|r| HealthView::new(r, health.staleness, now));
            let state = match cooldown {
                _ if d.blocked => "blocked",
                _ if probe.as_ref().is_some_and(|h| !h.healthy && !h.stale) => "unhealthy",
                Some(CooldownState::CoolingDown(_)) => "cooling_down",
                Some(CooldownState::HalfOpen { .. }) => "half_open",
                _ if !limits_reached.is_empty() => "at_limit",
                _ => "healthy",
            };
            let weight = basis.weight(d);
            DeploymentView {
                id: d.id.to_string(),
                model: d.model.to_string(),
                provider: d.provider().to_owned(),
                state,
                cooldown: CooldownView::new(cooldown, now),
                limits_reached,
                blocked: d.blocked,
                weight,
                weight_share: if d.blocked { 0.0 } else { share(weight, total_weight) },
                traffic_share: (attempts > 0).then(|| share(window.attempts as f64, attempts as f64)),
                rpm,
                tpm,
                parallel,
                window,
                health: probe,
            }
        })
        .collect();
    GroupView { name: name.to_owned(), weight_basis: basis_name(basis), attempts, requests_per_second, deployments }
}

/// The query of `GET /router/events`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventsQuery {
    /// Events with a greater `seq` (default 0: everything kept).
    #[serde(default)]
    after: u64,
    /// At most this many (default and cap: the ring's capacity).
    limit: Option<usize>,
}

/// The feed after `after`, oldest first.
pub(crate) async fn events(State(shared): State<Arc<GatewayState>>, Query(q): Query<EventsQuery>) -> Json<FeedPage> {
    let limit = q.limit.unwrap_or(FEED_CAPACITY).min(FEED_CAPACITY);
    Json(shared.dashboard.feed.page(q.after, limit))
}

/// How often an open stream sweeps for passed cooldown deadlines.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// The feed as server-sent events (`event: routing`, `id:` the `seq`, `data:` the event JSON),
/// from now on; a subscriber that falls behind gets an `event: lagged` with how many it missed
/// and can page the rest from `GET /router/events`.
pub(crate) async fn stream(State(shared): State<Arc<GatewayState>>) -> impl IntoResponse {
    let rx = shared.dashboard.feed.subscribe();
    let stop = shared.stopping.subscribe();
    let mut tick = tokio::time::interval(SWEEP_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let events = stream::unfold((rx, stop, tick, shared), |(mut rx, mut stop, mut tick, shared)| async move {
        loop {
            let received = tokio::select! {
                // The gateway is shutting down: end the stream so the connection can close.
                _ = stop.wait_for(|stopping| *stopping) => return None,
                received = rx.recv() => received,
                _ = tick.tick() => {
                    shared.dashboard.feed.sweep();
                    continue;
                }
            };
            let event = match received {
                Ok(e) => Event::default()
                    .event("routing")
                    .id(e.seq.to_string())
                    .json_data(&*e)
                    .unwrap_or_else(|_| Event::default().comment("unserializable event")),
                Err(RecvError::Lagged(n)) => Event::default().event("lagged").data(n.to_string()),
                Err(RecvError::Closed) => return None,
            };
            return Some((Ok::<_, Infallible>(event), (rx, stop, tick, shared)));
        }
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}

/// Wraps `POST` / `DELETE /router/deployments/{id}/cooldown`: a bench or re-admission that
/// succeeded goes into the event feed, with the deadline and reason the store now holds.
pub(crate) async fn record_operator(
    State(shared): State<Arc<GatewayState>>,
    Path(id): Path<String>,
    req: Request,
    next: Next,
) -> Response {
    let method = req.method().clone();
    let resp = next.run(req).await;
    if !resp.status().is_success() {
        return resp;
    }
    let id = DeploymentId::from(id);
    let Some(deployment) = shared.router.registry().deployment(&id) else { return resp };
    let feed = &shared.dashboard.feed;
    if method == Method::DELETE {
        feed.readmitted_by_operator(&id, &deployment.group);
    } else if let Some(CooldownState::CoolingDown(c)) =
        shared.router.store().cooldown_states(std::slice::from_ref(&id)).await.first()
    {
        feed.benched_by_operator(&id, &deployment.group, c.until, &c.reason);
    }
    resp
}
