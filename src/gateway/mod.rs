//! The OpenAI-compatible HTTP gateway (feature `gateway`): the routing stack behind axum, with
//! the LiteLLM proxy's endpoints, master key, routing headers, Prometheus metrics, a live
//! dashboard at `/ui` (`docs/observability.md`) and the operations a running gateway needs (bench
//! and re-admit deployments, reload the config, shut down gracefully).
//!
//! [`Gateway::builder`] takes a [`Config`] (a LiteLLM proxy `config.yaml`, unchanged) and a
//! provider; [`Gateway::router`] is the whole app as an [`axum::Router`] to mount or serve
//! yourself, [`Gateway::serve`] runs it on a listener until a shutdown signal. The endpoints,
//! headers and metrics are listed in `docs/gateway.md`; `examples/gateway.rs` is the binary.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use axum::body::Body;
//! use http_body_util::BodyExt;
//! use tower::ServiceExt;
//! use switchyard::{Config, gateway::Gateway, services::sim::SimProvider};
//!
//! let config = Config::from_yaml_str(r#"
//! model_list:
//!   - { model_name: gpt-4o, litellm_params: { model: azure/gpt-4o-eu }, model_info: { id: eu } }
//!   - { model_name: gpt-4o, litellm_params: { model: openai/gpt-4o }, model_info: { id: us } }
//! general_settings: { master_key: sk-gateway }
//! "#)?;
//! let gateway = Gateway::builder(config).provider(SimProvider::new(7)).build()?;
//!
//! let req = http::Request::post("/v1/chat/completions")
//!     .header("authorization", "Bearer sk-gateway")
//!     .header("content-type", "application/json")
//!     .body(Body::from(r#"{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}"#))?;
//! let resp = gateway.router().oneshot(req).await?;
//! assert_eq!(resp.status(), 200);
//! assert_eq!(resp.headers()["x-switchyard-model-group"], "gpt-4o");
//! assert!(resp.headers().contains_key("x-request-id"));
//! let body = resp.into_body().collect().await?.to_bytes();
//! assert!(std::str::from_utf8(&body)?.contains("chat.completion"));
//! // Serving it: gateway.serve(tokio::net::TcpListener::bind("127.0.0.1:4000").await?, shutdown_signal()).await?
//! # Ok(()) }
//! ```

mod app;
mod auth;
mod builder;
mod compress;
mod conn;
mod cutoff;
mod error;
mod feedback;
pub mod headers;
mod metrics;
mod observe;
mod origin;
mod panic;
mod reload;
mod request_id;
mod routes;
mod serve;
pub mod trail;
mod ui;

use std::{path::PathBuf, sync::Arc, time::Duration};

use arc_swap::ArcSwap;

pub use builder::{GatewayBuilder, GatewayError};
pub use conn::ConnectionLimits;
use metrics_exporter_prometheus::PrometheusHandle;
pub use reload::{ReloadError, ReloadSummary};
pub use serve::shutdown_signal;
use switchyard_layers::ApiKey;

use crate::{
    Config, Router,
    config::{Alias, EdgeSettings},
};
use reload::DeploymentCheck;

/// The gateway: the routing stack plus its HTTP endpoints. Cheap to clone (shared state).
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<GatewayState>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("router", &self.shared.router)
            .field("master_key", &self.shared.settings.load().master_key.is_some())
            .field("config_path", &self.shared.config_path)
            .field("max_body_bytes", &self.shared.max_body_bytes)
            .finish_non_exhaustive()
    }
}

/// The gateway's state, shared by every handler: the router, the settings a reload replaces,
/// and the ones fixed when the gateway was built.
pub(crate) struct GatewayState {
    pub(crate) router: Router,
    /// What the config sets for the gateway itself; a reload swaps in the new config's.
    pub(crate) settings: ArcSwap<GatewaySettings>,
    /// `general_settings.edge` as the gateway was built: connection limits and origins are
    /// applied when connections are accepted and are not reloaded.
    pub(crate) edge: EdgeSettings,
    pub(crate) max_body_bytes: usize,
    pub(crate) shutdown_grace: Duration,
    /// What [`Gateway::serve`] applies to every connection.
    pub(crate) limits: ConnectionLimits,
    /// Which origins and host names browsers may use.
    pub(crate) origins: origin::Origins,
    pub(crate) config_path: Option<PathBuf>,
    pub(crate) prometheus: Option<PrometheusHandle>,
    pub(crate) check: Option<DeploymentCheck>,
    /// The aliases the last (re)load set; the lock also serializes reloads.
    pub(crate) aliases: tokio::sync::Mutex<Vec<Alias>>,
    /// What the `/ui` dashboard shows besides the router's state: traffic windows, the event feed.
    pub(crate) dashboard: Arc<ui::Dashboard>,
    /// The adaptive pre-routers' recent decisions by request id, for `POST /router/feedback`.
    pub(crate) feedback: Arc<feedback::FeedbackLog>,
    /// LiteLLM's Prometheus metrics, with the labels of the current config's deployments.
    pub(crate) litellm: Arc<metrics::litellm::LiteLlmMetrics>,
    /// Every routed answer carries `x-switchyard-trail` ([`GatewayBuilder::routing_trail`]).
    pub(crate) routing_trail: bool,
    /// Set when [`Gateway::serve`] starts shutting down: open event streams end, so they do not
    /// hold the graceful shutdown for its whole grace period.
    pub(crate) stopping: tokio::sync::watch::Sender<bool>,
    /// The response cache (`litellm_settings.cache`); a reload that changes its settings swaps it.
    pub(crate) cache: crate::cache::LiveCache,
}

/// The config's settings for the gateway's own handlers, replaced as a whole by a reload.
#[derive(Debug)]
pub(crate) struct GatewaySettings {
    pub(crate) master_key: Option<ApiKey>,
    /// The router's `cooldown_time`: the default length of a manual bench.
    pub(crate) cooldown_time: Duration,
    /// `/v1/messages/count_tokens` asks an Anthropic deployment (`general_settings.count_tokens`).
    pub(crate) count_tokens_upstream: bool,
}

impl GatewaySettings {
    pub(crate) fn of(config: &Config) -> Self {
        Self {
            master_key: config.master_key.clone(),
            cooldown_time: config.cooldown.cooldown_time,
            count_tokens_upstream: config.count_tokens_upstream,
        }
    }
}

impl Gateway {
    /// Starts a gateway for `config`; give it a provider with [`GatewayBuilder::provider`].
    pub fn builder(config: Config) -> GatewayBuilder {
        GatewayBuilder::new(config)
    }

    /// The whole app: OpenAI endpoints, health, metrics and operations, with the master key
    /// check, request ids, routing headers and request metrics. Serve it, or nest or merge it
    /// into your own axum app.
    pub fn router(&self) -> axum::Router {
        app::build(self.shared.clone())
    }

    /// The routing stack the gateway serves: its registry, store and cooldowns.
    pub fn routing(&self) -> &Router {
        &self.shared.router
    }

    /// Applies `config` to the running gateway: its deployments and aliases (new ones added,
    /// changed ones replaced in place, the ones no longer listed removed), a routing stack
    /// rebuilt from its router settings ([`Router::reload`]) and the master key. Requests in
    /// flight finish with the deployments and the stack they started with; cooldowns, usage and
    /// spend carry over. An invalid config changes nothing.
    ///
    /// What needs a restart (the Redis connection and namespace, `timeout`, `stream_timeout`,
    /// `general_settings.edge`) stays as it was, and [`ReloadSummary::warnings`] names each such
    /// key the new config changes; see `docs/gateway.md`.
    pub async fn reload(&self, config: Config) -> Result<ReloadSummary, ReloadError> {
        let mut aliases = self.shared.aliases.lock().await;
        let result = reload::apply(&self.shared, &mut aliases, &config).await;
        metrics::record_reload(result.is_ok());
        match &result {
            Ok(summary) => tracing::info!(%summary, "config reloaded"),
            Err(e) => tracing::error!(error = %e, "config reload refused; nothing changed"),
        }
        result
    }

    /// Re-reads the config file the gateway was built with
    /// ([`GatewayBuilder::config_path`]) and [reloads](Self::reload) it.
    pub async fn reload_from_file(&self) -> Result<ReloadSummary, ReloadError> {
        let Some(path) = self.shared.config_path.clone() else {
            return Err(ReloadError::NoConfigPath);
        };
        let read = tokio::task::spawn_blocking(move || Config::from_path(path)).await;
        match read {
            Ok(Ok(config)) => self.reload(config).await,
            Ok(Err(e)) => {
                metrics::record_reload(false);
                tracing::error!(error = %e, "config reload refused; nothing changed");
                Err(ReloadError::Config(e))
            }
            Err(join) => {
                metrics::record_reload(false);
                Err(ReloadError::Config(crate::ConfigError::new(
                    crate::config::ConfigErrorKind::Io,
                    "",
                    format!("reading the config failed: {join}"),
                )))
            }
        }
    }
}
