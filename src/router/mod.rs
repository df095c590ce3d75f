//! [`Router`]: the default routing stack built from a [`Config`], with a typed in-process API.
//!
//! The stack is a plain tower service over `http::Request<Bytes>` (with a
//! [`RouteCtx`](crate::RouteCtx) in the extensions) returning `http::Response<RouteBody>`; take it
//! with [`Router::service`] to embed it in axum or another gateway, or call it through
//! [`Router::chat`], [`Router::chat_stream`] and [`Router::embed`] without an HTTP hop. Both go
//! through the same layers.
//!
//! [`Router::reload`] rebuilds the stack and its registry from a new config over the same store
//! (cooldowns, usage windows and spend carry over) and swaps them in with one atomic store: calls
//! that started keep the stack and deployments they started on, new calls take the new ones.

mod client;
mod live;

use std::{fmt, sync::Arc};

use bytes::Bytes;
pub use client::{ChatResponse, ChatStream, EmbedResponse};
pub use live::RouterService;
use live::{Live, Parts, RestartOnly, Stack};
use switchyard_layers::precall::Tokenizer;
use switchyard_layers::state::StoreError;
use switchyard_layers::{
    BoxError, Deployment, DeploymentId, Registry, RouteBody, StateStore,
    cooldown::{CooldownEntry, CooldownEvent, CooldownHook},
    deployment::RegistryError,
    fallback::FallbackEvent,
    health::{HealthCheckError, HealthChecker},
    select::SelectConfigError,
    state::HealthRecord,
    state::StoreConfig,
};
use switchyard_services::provider::{HttpProvider, ProviderConfig, ProviderError};
use tower::{Layer, Service, ServiceExt, util::BoxCloneSyncService};

use crate::{Config, ConfigError, config::RedisSettings};

/// The routing stack plus the registry and store it routes with.
///
/// Clones share everything, the live stack included: a [reload](Router::reload) through one
/// clone is seen by all of them and by every [`service`](Router::service) handed out.
#[derive(Clone)]
pub struct Router {
    store: Arc<StateStore>,
    live: Arc<Live>,
    /// Dispatches each call to the live stack.
    service: RouterService,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Router").field("registry", &self.registry()).finish_non_exhaustive()
    }
}

/// Why a router could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum RouterError {
    /// The config is invalid.
    Config(ConfigError),
    /// A deployment or alias was refused by the registry.
    Registry(RegistryError),
    /// The strategy settings are invalid.
    Select(SelectConfigError),
    /// The HTTP provider could not be built (CA bundle, proxy).
    Provider(ProviderError),
    /// The Redis state backend the config selects could not start: settings it refused, or no
    /// Tokio runtime to run its background tasks on (build the router inside one). An
    /// unreachable Redis is not an error: the backend starts degraded and connects later.
    Store(StoreError),
    /// The config runs background health checks, which need a Tokio runtime: build the router
    /// inside one.
    Health(HealthCheckError),
}

impl fmt::Display for RouterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => e.fmt(f),
            Self::Registry(e) => e.fmt(f),
            Self::Select(e) => e.fmt(f),
            Self::Provider(e) => e.fmt(f),
            Self::Store(e) => e.fmt(f),
            Self::Health(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for RouterError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(e) => Some(e),
            Self::Registry(e) => Some(e),
            Self::Select(e) => Some(e),
            Self::Provider(e) => Some(e),
            Self::Store(e) => Some(e),
            Self::Health(e) => Some(e),
        }
    }
}

impl From<ConfigError> for RouterError {
    fn from(e: ConfigError) -> Self {
        Self::Config(e)
    }
}

impl From<RegistryError> for RouterError {
    fn from(e: RegistryError) -> Self {
        Self::Registry(e)
    }
}

/// A stack built for a reload, not yet live ([`Router::prepare`]).
pub(crate) struct Prepared {
    stack: Stack,
    /// The new config (its health checks start when it is installed).
    config: Box<Config>,
    /// The keys the new config changes that only a restart applies.
    restart: Vec<String>,
}

/// Receives fallback events.
type FallbackHook = Arc<dyn Fn(&FallbackEvent) + Send + Sync>;

/// Builds a [`Router`]; see [`Router::builder`].
pub struct RouterBuilder<'a> {
    config: &'a Config,
    store: Option<Arc<StateStore>>,
    seed: Option<u64>,
    on_cooldown: Option<CooldownHook>,
    on_fallback: Option<FallbackHook>,
}

impl fmt::Debug for RouterBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RouterBuilder").field("seed", &self.seed).finish_non_exhaustive()
    }
}

impl RouterBuilder<'_> {
    /// Routes with this store instead of the one the config selects (a fresh in-memory one, or
    /// the Redis backend when `router_settings` sets `redis_*` keys): share it between routers,
    /// or inspect it in tests.
    pub fn store(mut self, store: Arc<StateStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Seeds every random pick (overrides the config's `seed`).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Calls `hook` for every cooldown event (benched, probe started, recovered, all cooling down).
    pub fn on_cooldown(mut self, hook: impl Fn(&CooldownEvent) + Send + Sync + 'static) -> Self {
        self.on_cooldown = Some(Arc::new(hook));
        self
    }

    /// Calls `hook` for every fallback event (hop, skipped target, success, failure).
    pub fn on_fallback(mut self, hook: impl Fn(&FallbackEvent) + Send + Sync + 'static) -> Self {
        self.on_fallback = Some(Arc::new(hook));
        self
    }

    /// Builds the default stack around the HTTP provider (OpenAI-compatible and Azure APIs over
    /// hyper + rustls), with the config's `timeout` and `stream_timeout`.
    pub fn build_http(self) -> Result<Router, RouterError> {
        let mut provider_config = ProviderConfig::new();
        if let Some(t) = self.config.timeout {
            provider_config = provider_config.timeout(t);
        }
        if let Some(t) = self.config.stream_timeout {
            provider_config = provider_config.stream_timeout(t);
        }
        let provider = HttpProvider::new(provider_config).map_err(RouterError::Provider)?;
        self.build(provider)
    }

    /// Builds the default stack around `provider`.
    ///
    /// When the config sets `redis_*` keys (and no [`store`](Self::store) was given), the state
    /// lives in Redis: call this inside a Tokio runtime, which runs the backend's background
    /// tasks; outside one it returns [`RouterError::Store`]. Without the `redis` feature such a
    /// config is refused with [`RouterError::Config`].
    pub fn build<P>(self, provider: P) -> Result<Router, RouterError>
    where
        P: Service<http::Request<Bytes>, Response = http::Response<RouteBody>, Error = BoxError>
            + Clone
            + Send
            + Sync
            + 'static,
        P::Future: Send + 'static,
    {
        let config = self.config;
        config.validate()?;
        let store = match self.store {
            Some(store) => store,
            None => default_store(config)?,
        };
        // The stack holds the provider unboxed; the health probes get a boxed clone of it.
        let probes = BoxCloneSyncService::new(provider.clone());
        let wrap: live::Wrap = Arc::new(move |stack| BoxCloneSyncService::new(stack.layer(provider.clone())));
        let parts = Parts {
            wrap,
            provider: probes,
            seed: self.seed,
            on_cooldown: self.on_cooldown,
            on_fallback: self.on_fallback,
        };
        let first = parts.stack(config, &store, None)?;
        let health = parts.health(config, &first.registry, &store).map_err(RouterError::Health)?;
        let live = Arc::new(Live::new(parts, RestartOnly::of(config), first, health));
        let service = RouterService::new(live.clone());
        Ok(Router { store, live, service })
    }
}

/// The store the config selects: Redis when `router_settings` sets `redis_*` keys, else memory.
fn default_store(config: &Config) -> Result<Arc<StateStore>, RouterError> {
    let mut store_config = StoreConfig::default();
    store_config.latency = config.latency;
    match &config.redis {
        Some(redis) => redis_store(redis, store_config).map(Arc::new),
        None => {
            tracing::info!(target: "switchyard::router", backend = "memory", "state store: in memory, per replica");
            Ok(Arc::new(StateStore::memory_with(store_config)))
        }
    }
}

#[cfg(feature = "redis")]
fn redis_store(redis: &RedisSettings, store_config: StoreConfig) -> Result<StateStore, RouterError> {
    let redis_config = redis.to_redis_config()?;
    let server = redis.check().map(|t| t.masked()).unwrap_or_default();
    tracing::info!(
        target: "switchyard::router",
        backend = "redis",
        namespace = %redis_config.namespace,
        server = %server,
        "state store: Redis, shared between replicas"
    );
    StateStore::redis_with(redis_config, store_config).map_err(RouterError::Store)
}

#[cfg(not(feature = "redis"))]
fn redis_store(redis: &RedisSettings, _: StoreConfig) -> Result<StateStore, RouterError> {
    Err(RouterError::Config(ConfigError::invalid(
        redis.path(),
        "this build has no Redis support; enable the `redis` feature of switchyard",
    )))
}

/// Loads the tokenizers the pre-call checks will need (a TPM limit or a context window) on a
/// background thread, so the first request does not pay for loading a vocabulary (about 0.2 s
/// for o200k in a release build).
fn warm_tokenizers(config: &Config) {
    let mut needed: Vec<Tokenizer> = config
        .deployments
        .iter()
        .filter(|d| d.tpm.is_some() || d.max_input_tokens.is_some())
        .map(|d| Tokenizer::for_model(&d.model))
        .filter(|t| t.is_exact())
        .collect();
    needed.sort_by_key(|t| t.as_str());
    needed.dedup();
    if needed.is_empty() {
        return;
    }
    let spawned = std::thread::Builder::new().name("switchyard-tokenizers".into()).spawn(move || {
        for t in needed {
            t.count("warm up");
        }
    });
    if let Err(e) = spawned {
        tracing::debug!(error = %e, "could not warm the tokenizers up; the first request will load them");
    }
}

impl Router {
    /// The default stack for `config` over the HTTP provider: what a gateway runs.
    pub fn from_config_http(config: &Config) -> Result<Self, RouterError> {
        Self::builder(config).build_http()
    }

    /// The default stack for `config` around `provider`.
    pub fn from_config<P>(config: &Config, provider: P) -> Result<Self, RouterError>
    where
        P: Service<http::Request<Bytes>, Response = http::Response<RouteBody>, Error = BoxError>
            + Clone
            + Send
            + Sync
            + 'static,
        P::Future: Send + 'static,
    {
        Self::builder(config).build(provider)
    }

    /// A builder for the default stack, to set the store or the seed.
    pub fn builder(config: &Config) -> RouterBuilder<'_> {
        RouterBuilder { config, store: None, seed: None, on_cooldown: None, on_fallback: None }
    }

    /// The deployments, groups and aliases of the live stack; change them at runtime without a
    /// restart. A [reload](Self::reload) installs a new registry built from its config, so take
    /// this again after one (changes made here are replaced by the reloaded config's).
    pub fn registry(&self) -> Arc<Registry> {
        self.live.stack.load().registry.clone()
    }

    /// The shared routing state.
    pub fn store(&self) -> &Arc<StateStore> {
        &self.store
    }

    /// Every deployment cooling down or half-open: deployment, group, deadline, status and reason.
    pub async fn cooldowns(&self) -> Vec<CooldownEntry> {
        let cooldown = self.live.stack.load().cooldown.clone();
        cooldown.list().await
    }

    /// The virtual model names the live stack's pre-routers answer for (the config's
    /// `auto_router/...` entries), sorted: names a client may ask for beside the registry's.
    pub fn pre_routed_names(&self) -> Vec<String> {
        self.live.stack.load().pre_routed.clone()
    }

    /// Whether `name` is a pre-router's virtual name in the live config.
    pub fn is_pre_routed(&self, name: &str) -> bool {
        self.live.stack.load().pre_routed.iter().any(|n| n == name)
    }

    /// The group the live config's pre-router for `name` would route a request with `facts` to,
    /// without routing it (no draw counted, nothing learned: [`PreRouter::preview`]); `None`
    /// when `name` is not a pre-routed name or its router leaves the request alone.
    ///
    /// [`PreRouter::preview`]: switchyard_layers::preroute::PreRouter::preview
    pub fn preview_pre_route(
        &self,
        name: &str,
        facts: &switchyard_layers::RequestFacts,
    ) -> Option<switchyard_layers::ctx::PreRouteDecision> {
        use switchyard_layers::preroute::{PreRouteInput, PreRouter};
        let stack = self.live.stack.load();
        stack.pre_routers.get(name)?.preview(&PreRouteInput::new(name, facts))
    }

    /// The live stack's adaptive pre-routers (`auto_router/adaptive_router` entries), in config
    /// order: for [feedback](switchyard_layers::preroute::adaptive::AdaptiveRouter::feedback)
    /// and their [snapshots](switchyard_layers::preroute::adaptive::AdaptiveRouter::snapshot).
    /// A reload builds new ones over the same store, so what they learned carries over.
    pub fn adaptive_routers(&self) -> Vec<switchyard_layers::preroute::adaptive::AdaptiveRouter> {
        self.live.stack.load().adaptive.clone()
    }

    /// The health-check settings of the live config.
    pub fn health_settings(&self) -> Arc<crate::health::HealthSettings> {
        self.live.health.lock().settings.clone()
    }

    /// Stops the background health checks (the gateway does on shutdown); a reload starts them
    /// again if its config runs them.
    pub fn stop_health_checks(&self) {
        self.live.health.lock().checker = None;
    }

    /// Whether a background health-check task is running.
    pub fn health_checks_running(&self) -> bool {
        self.live.health.lock().checker.as_ref().is_some_and(|c| !c.is_finished())
    }

    /// The latest health-probe record of every deployment that has one (this replica's and,
    /// with Redis, the others'), with its group; stale records included (see
    /// [`HealthRecord::is_fresh`] with [`health_settings`](Self::health_settings)'s staleness).
    pub async fn health(&self) -> Vec<(DeploymentId, Option<Arc<str>>, HealthRecord)> {
        let registry = self.registry();
        self.store
            .all_health()
            .await
            .into_iter()
            .map(|(id, record)| {
                let group = registry.deployment(&id).map(|d| d.group.clone());
                (id, group, record)
            })
            .collect()
    }

    /// Probes every deployment (of `group`, if given) now, as LiteLLM's `/health` endpoint does:
    /// through the provider, with the configured probes, bounded in concurrency, each under its
    /// timeout. Nothing is stored and no lease is taken.
    pub async fn probe_now(&self, group: Option<&str>) -> Vec<(Arc<Deployment>, HealthRecord)> {
        let (settings, prober) = {
            let h = self.live.health.lock();
            (h.settings.clone(), h.prober.clone())
        };
        HealthChecker::probe_now(&self.registry(), &settings.check, &*prober, group).await
    }

    /// The stack as a tower service, to embed in axum or another gateway. Each call runs on the
    /// stack that is live when it starts, so the service follows [reloads](Self::reload).
    pub fn service(&self) -> RouterService {
        self.service.clone()
    }

    /// Applies `config` to the running router: a stack rebuilt from its settings (strategy,
    /// retries, fallback tables, cooldown rules, pre-call checks, limits, budgets, tags, deadline,
    /// seed) with a registry of its deployments and aliases replaces the live one in one atomic
    /// swap. The store stays, so cooldowns, usage windows and spend carry over (and the retry
    /// budget's balance, if its settings did not change); calls in flight finish on the stack and
    /// deployments they started on.
    ///
    /// Everything is checked before anything changes: an invalid config returns an error and
    /// changes nothing. The settings the store and the provider were built with (the Redis
    /// connection and namespace, the latency windows, `timeout`, `stream_timeout`) stay as they
    /// were; the returned lines name each one `config` changes
    /// (`router_settings.redis_namespace changed: restart to apply`).
    pub fn reload(&self, config: &Config) -> Result<Vec<String>, RouterError> {
        let prepared = self.prepare(config)?;
        Ok(self.install(prepared))
    }

    /// Builds the stack for `config` without installing it: the step of a reload that can fail.
    pub(crate) fn prepare(&self, config: &Config) -> Result<Prepared, RouterError> {
        config.validate()?;
        let stack = self.live.parts.stack(config, &self.store, Some(&self.live.stack.load()))?;
        Ok(Prepared { stack, config: Box::new(config.clone()), restart: self.live.restart_only.changed_in(config) })
    }

    /// Makes a prepared stack the live one; returns the settings it could not apply.
    pub(crate) fn install(&self, prepared: Prepared) -> Vec<String> {
        let stack = Arc::new(prepared.stack);
        let registry = stack.registry.clone();
        self.live.stack.store(stack);
        // The health checks restart with the new settings and deployments (the old task stops
        // when dropped).
        match self.live.parts.health(&prepared.config, &registry, &self.store) {
            Ok(health) => *self.live.health.lock() = health,
            Err(e) => tracing::warn!(target: "switchyard::router", error = %e, "health checks not restarted"),
        }
        for line in &prepared.restart {
            tracing::warn!(target: "switchyard::router", "{line}");
        }
        prepared.restart
    }

    /// Sends one prepared request through the stack.
    pub async fn call(&self, req: http::Request<Bytes>) -> Result<http::Response<RouteBody>, BoxError> {
        self.service.clone().oneshot(req).await
    }
}
