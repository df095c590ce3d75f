//! [`GatewayBuilder`]: the config, the provider and the gateway's own settings.

use std::{fmt, path::PathBuf, sync::Arc, time::Duration};

use arc_swap::ArcSwap;
use bytes::Bytes;
use metrics_exporter_prometheus::PrometheusHandle;
use switchyard_layers::{BoxError, Deployment, RouteBody, StateStore};
use switchyard_services::ingress::IngressLayer;
use tower::{Service, util::BoxCloneSyncService};

use super::{
    ConnectionLimits, Gateway, GatewaySettings, GatewayState, metrics,
    origin::Origins,
    reload::{self, DeploymentCheck, ReloadError},
    ui,
};
use crate::{
    Config, Router, RouterError,
    config::http_server::{normalize_host, normalize_origin},
};

type Provider = BoxCloneSyncService<http::Request<Bytes>, http::Response<RouteBody>, BoxError>;

/// Builds a [`Gateway`]; see [`Gateway::builder`].
pub struct GatewayBuilder {
    config: Config,
    provider: Option<Provider>,
    config_path: Option<PathBuf>,
    store: Option<Arc<StateStore>>,
    seed: Option<u64>,
    max_body_bytes: usize,
    shutdown_grace: Duration,
    limits: ConnectionLimits,
    origins: Origins,
    prometheus: Option<PrometheusHandle>,
    check: Option<DeploymentCheck>,
    routing_trail: bool,
}

impl fmt::Debug for GatewayBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatewayBuilder")
            .field("config", &self.config)
            .field("provider", &self.provider.is_some())
            .field("config_path", &self.config_path)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("limits", &self.limits)
            .field("origins", &self.origins)
            .finish_non_exhaustive()
    }
}

impl GatewayBuilder {
    /// Largest request body by default: 8 MiB (413 beyond).
    pub const DEFAULT_MAX_BODY_BYTES: usize = IngressLayer::DEFAULT_MAX_BODY_BYTES;
    /// How long a graceful shutdown waits for requests in flight by default: 30 s.
    pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

    pub(super) fn new(config: Config) -> Self {
        Self {
            provider: None,
            config_path: None,
            store: None,
            seed: None,
            max_body_bytes: Self::DEFAULT_MAX_BODY_BYTES,
            shutdown_grace: Self::DEFAULT_SHUTDOWN_GRACE,
            limits: ConnectionLimits::configured(&config.edge),
            origins: Origins::configured(&config.edge),
            prometheus: None,
            check: None,
            routing_trail: false,
            config,
        }
    }

    /// The provider every attempt goes to: `HttpProvider` for real upstreams, `SimProvider` for
    /// tests and demos, or your own service.
    pub fn provider<P>(mut self, provider: P) -> Self
    where
        P: Service<http::Request<Bytes>, Response = http::Response<RouteBody>, Error = BoxError>
            + Clone
            + Send
            + Sync
            + 'static,
        P::Future: Send + 'static,
    {
        self.provider = Some(BoxCloneSyncService::new(provider));
        self
    }

    /// The file the config came from: `POST /router/reload` and `SIGHUP` re-read it.
    pub fn config_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.config_path = Some(path.into());
        self
    }

    /// Routes with this store instead of a fresh in-memory one.
    pub fn store(mut self, store: Arc<StateStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Seeds every random pick (overrides the config's `seed`).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Largest request body accepted (413 beyond); default 8 MiB.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// How long [`Gateway::serve`] waits for requests in flight (streams included) after the
    /// shutdown signal before closing their connections; default 30 s.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// The limits [`Gateway::serve`] applies to every connection (header-read and idle timeouts,
    /// the connection cap, the head size, HTTP/2 keep-alive), replacing the config's: without
    /// this call, [`ConnectionLimits::default`] with what `general_settings.edge` sets
    /// ([`EdgeSettings`](crate::config::EdgeSettings)). Not applied when you serve
    /// [`Gateway::router`] yourself.
    pub fn connection_limits(mut self, limits: ConnectionLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Origins whose pages may call the gateway from a browser, besides the gateway's own:
    /// `https://app.example.com` (scheme, host and port as the browser sends `Origin`), or `*`
    /// for any. A request from any other origin is refused with 403 `origin_not_allowed`. With
    /// at least one, CORS answers (preflights included) are sent for them; with none (the
    /// default), no CORS header is ever sent. Replaces `general_settings.edge.allowed_origins`.
    ///
    /// ```
    /// use switchyard::{Config, gateway::Gateway, services::sim::SimProvider};
    /// let config = Config::from_yaml_str("model_list: []")?;
    /// let gateway = Gateway::builder(config)
    ///     .provider(SimProvider::new(1))
    ///     .allowed_origins(["https://chat.example.com"])
    ///     .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.origins.allowed_origins = origins.into_iter().map(|o| normalize_origin(&o.into())).collect();
        self
    }

    /// Host names clients may send in `Host` when no master key is set, besides `localhost`,
    /// `*.localhost` and IP addresses (`gateway.internal`, without a port; `*` for any). Other
    /// names are refused with 403 `host_not_allowed`: without a key, a page on a DNS-rebinding
    /// name could otherwise read the gateway's answers. With a master key, every host is served.
    /// Replaces `general_settings.edge.allowed_hosts`.
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.origins.allowed_hosts = hosts.into_iter().map(|h| normalize_host(&h.into())).collect();
        self
    }

    /// Renders `/metrics` from this handle: for a program that installed its own Prometheus
    /// recorder before building the gateway. By default the first gateway of the process installs
    /// one.
    pub fn prometheus(mut self, handle: PrometheusHandle) -> Self {
        self.prometheus = Some(handle);
        self
    }

    /// Refuses deployments `check` rejects, at build and at every reload (which then changes
    /// nothing): a rule of your own on top of the config's validation (which already refuses
    /// providers Switchyard does not serve).
    ///
    /// ```
    /// use switchyard::{Config, gateway::Gateway, services::sim::SimProvider};
    ///
    /// let config = Config::from_yaml_str("model_list: [{ model_name: gpt-4o, litellm_params: { model: openai/gpt-4o } }]")?;
    /// let refused = Gateway::builder(config)
    ///     .provider(SimProvider::new(1))
    ///     .check_deployment(|d| match d.api_base {
    ///         Some(_) => Ok(()),
    ///         None => Err("every deployment must name its endpoint (`api_base`)".to_owned()),
    ///     })
    ///     .build();
    /// assert!(refused.is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_deployment(
        mut self,
        check: impl Fn(&Deployment) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.check = Some(Arc::new(check));
        self
    }

    /// Sends the routing trail (`x-switchyard-trail`: every attempt's group, deployment, outcome
    /// and duration) on every routed answer, not only to clients that ask for it with
    /// `x-switchyard-trail: 1`; see [`trail`](super::trail). Off by default, which spares the
    /// bytes on answers nobody reads.
    pub fn routing_trail(mut self, always: bool) -> Self {
        self.routing_trail = always;
        self
    }

    /// Builds the routing stack and the gateway around it.
    pub fn build(self) -> Result<Gateway, GatewayError> {
        let provider = self.provider.ok_or(GatewayError::MissingProvider)?;
        self.limits.check().map_err(GatewayError::Limits)?;
        reload::check_all(&self.config, self.check.as_ref()).map_err(GatewayError::Deployment)?;
        let dashboard = ui::Dashboard::new(self.config.precall.default_max_parallel_requests);
        // The recorder first: gauges set before it is installed would be lost.
        let prometheus = self.prometheus.or_else(metrics::process_handle);
        let litellm = Arc::new(metrics::litellm::LiteLlmMetrics::default());
        litellm.set_deployments(&self.config.deployments);
        let (on_fallback, on_cooldown, litellm_cooldown) = (dashboard.clone(), dashboard.clone(), litellm.clone());
        let mut router = Router::builder(&self.config)
            .on_fallback(move |e| {
                metrics::record_fallback(e);
                on_fallback.feed.fallback(e);
            })
            .on_cooldown(move |e| {
                litellm_cooldown.cooldown(e);
                on_cooldown.feed.cooldown(e);
            });
        if let Some(store) = self.store {
            router = router.store(store);
        }
        if let Some(seed) = self.seed {
            router = router.seed(seed);
        }
        let router = router.build(provider).map_err(GatewayError::Router)?;
        let cache = crate::cache::LiveCache::new(self.config.cache.as_ref()).map_err(GatewayError::Cache)?;
        let shared = GatewayState {
            router,
            settings: ArcSwap::from_pointee(GatewaySettings::of(&self.config)),
            edge: self.config.edge.clone(),
            max_body_bytes: self.max_body_bytes,
            shutdown_grace: self.shutdown_grace,
            limits: self.limits,
            origins: self.origins,
            config_path: self.config_path,
            prometheus,
            check: self.check,
            aliases: tokio::sync::Mutex::new(self.config.aliases.clone()),
            dashboard,
            feedback: Arc::default(),
            litellm,
            routing_trail: self.routing_trail,
            stopping: tokio::sync::watch::Sender::new(false),
            cache,
        };
        Ok(Gateway { shared: Arc::new(shared) })
    }
}

/// Why a gateway could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum GatewayError {
    /// [`GatewayBuilder::provider`] was not called.
    MissingProvider,
    /// The routing stack could not be built from the config.
    Router(RouterError),
    /// A deployment was refused by [`GatewayBuilder::check_deployment`].
    Deployment(ReloadError),
    /// [`GatewayBuilder::connection_limits`] cannot be served (a zero timeout or cap, a head
    /// limit under 8 KiB); the text names the limit.
    Limits(String),
    /// The response cache could not be built (`litellm_settings.cache_params`).
    Cache(crate::ConfigError),
}

impl fmt::Display for GatewayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingProvider => f.write_str("the gateway needs a provider: call GatewayBuilder::provider"),
            Self::Router(e) => e.fmt(f),
            Self::Deployment(e) => e.fmt(f),
            Self::Limits(e) => f.write_str(e),
            Self::Cache(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for GatewayError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::MissingProvider | Self::Limits(_) => None,
            Self::Router(e) => Some(e),
            Self::Deployment(e) => Some(e),
            Self::Cache(e) => Some(e),
        }
    }
}
