//! The live dashboard at `/ui`: one page (HTML, JS and CSS embedded in the binary, no build
//! step, nothing fetched from elsewhere) that polls the gateway's own `GET /router/state` and
//! `GET /router/events` once a second and draws every group and deployment (state, cooldown
//! countdown and reason, traffic share against weight, rates, errors by class, latency and TTFT
//! charts, RPM/TPM against limits), the routing event feed, and bench / re-admit buttons.
//!
//! The page is open (it holds no data); the endpoints it reads take the master key, which the
//! page asks for and keeps in `sessionStorage` only. Every string is put into the page as text,
//! never as markup, and the page is served with a strict content security policy (scripts and
//! styles from `/ui` only, requests to the gateway only). See `docs/observability.md`.
//!
//! [`Dashboard`] is what the gateway collects for it: per-deployment rolling windows
//! ([`stats`]) fed by the observer, and the event feed ([`feed`]) fed by the router's hooks.

pub(crate) mod feed;
pub(crate) mod preroute;
pub(crate) mod stats;

use std::sync::{
    Arc,
    atomic::{AtomicU32, Ordering},
};

use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue, header};
use switchyard_layers::{AttemptRecord, Deployment, Outcome, RouteBody, Served, body::BodyEndKind};
use tokio::time::Instant;

use self::{feed::Feed, stats::Stats};

/// What the dashboard reads besides the router's own state.
#[derive(Debug, Default)]
pub(crate) struct Dashboard {
    pub(crate) stats: Stats,
    pub(crate) feed: Feed,
    /// Pre-routing decisions by virtual name and group.
    pub(crate) pre_routes: preroute::PreRoutes,
    /// The router's `default_max_parallel_requests`, for deployments that set no limit; 0 for
    /// none (the config refuses 0). A reload sets it.
    default_max_parallel_requests: AtomicU32,
}

impl Dashboard {
    pub(crate) fn new(default_max_parallel_requests: Option<u32>) -> Arc<Self> {
        let dashboard = Self::default();
        dashboard.set_default_max_parallel_requests(default_max_parallel_requests);
        Arc::new(dashboard)
    }

    /// Follows a reload of `default_max_parallel_requests`.
    pub(crate) fn set_default_max_parallel_requests(&self, limit: Option<u32>) {
        self.default_max_parallel_requests.store(limit.unwrap_or(0), Ordering::Relaxed);
    }

    /// `d`'s parallel-request limit on this replica, if any.
    pub(crate) fn parallel_limit(&self, d: &Deployment) -> Option<u64> {
        let default = Some(self.default_max_parallel_requests.load(Ordering::Relaxed)).filter(|n| *n > 0);
        d.max_parallel_requests.or(default).map(u64::from)
    }

    /// Records a served call: its failed attempts, the serving attempt, its latency (for a
    /// stream: TTFT now and the whole stream's time when the body ends, with a failure mid-way
    /// counted against the deployment).
    pub(crate) fn record_served(self: &Arc<Self>, served: &Served, streaming: bool, body: &mut RouteBody) {
        self.record_trail(&served.failed, Some(&served.group));
        let id = &served.deployment;
        self.stats.attempt(id, Outcome::Success);
        if !streaming {
            self.stats.latency(id, served.upstream);
            return;
        }
        self.stats.ttft(id, served.upstream);
        let began = Instant::now().checked_sub(served.upstream).unwrap_or_else(Instant::now);
        let (this, id) = (self.clone(), id.clone());
        body.on_end(move |end| match end.kind {
            BodyEndKind::Complete => this.stats.latency(&id, end.at.saturating_duration_since(began)),
            BodyEndKind::Failed(outcome) => this.stats.late_failure(&id, outcome),
            _ => {}
        });
    }

    /// Records an answer whose deployment an affinity chose (conversation, session, prompt cache).
    /// A call for `name` a pre-router routed with `decision`.
    pub(crate) fn record_pre_route(&self, name: &str, decision: &switchyard_layers::ctx::PreRouteDecision) {
        self.pre_routes.record(name, decision);
    }

    pub(crate) fn record_affinity(&self, id: &switchyard_layers::DeploymentId) {
        self.stats.affinity(id);
    }

    /// Records a call that failed: every attempt in its trail.
    pub(crate) fn record_failed(&self, trail: &[AttemptRecord]) {
        self.record_trail(trail, None);
    }

    fn record_trail(&self, trail: &[AttemptRecord], served_group: Option<&str>) {
        for r in trail {
            self.stats.attempt(&r.deployment, r.outcome);
        }
        self.feed.retries(trail, served_group);
    }
}

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

/// Scripts, styles and requests from the gateway only; no inline script, no framing, no forms.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut resp = body.into_response();
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(HeaderName::from_static("cross-origin-opener-policy"), HeaderValue::from_static("same-origin"));
    resp
}

/// `GET /ui`: the page.
pub(crate) async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX_HTML)
}

/// `GET /ui/`: to `/ui`, where the page's relative links resolve (under any prefix it is nested at).
pub(crate) async fn to_index() -> Response {
    (http::StatusCode::PERMANENT_REDIRECT, [(header::LOCATION, "../ui")]).into_response()
}

/// `GET /ui/app.js`.
pub(crate) async fn script() -> Response {
    asset("text/javascript; charset=utf-8", APP_JS)
}

/// `GET /ui/app.css`.
pub(crate) async fn style() -> Response {
    asset("text/css; charset=utf-8", APP_CSS)
}
