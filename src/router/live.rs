//! The live stack: what a [`Router`](super::Router) routes each call with, rebuilt from a new
//! config and swapped in by a reload.
//!
//! Every call loads the current [`Stack`] once and runs on it to its end, retries, fallbacks and
//! streamed body included, so a reload never changes the rules under a call in flight. The
//! registry and the store are not part of the stack: a rebuilt stack routes over the same ones,
//! so cooldowns, usage windows, in-flight counts and spend carry over.

use std::{
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use arc_swap::ArcSwap;
use bytes::Bytes;
use switchyard_layers::{
    BoxError, Registry, RouteBody, StateStore,
    cooldown::{CooldownHook, CooldownLayer},
    fallback::FallbackConfig,
    health::{HealthCheckError, HealthChecker},
    select::Strategies,
    stack::RoutingStack,
    state::LatencyConfig,
};
use tower::{Layer, Service, ServiceExt, util::BoxCloneSyncService, util::Oneshot};

use super::{FallbackHook, RouterService, warm_tokenizers};
use crate::{
    Config,
    config::RedisSettings,
    health::{HealthSettings, ProviderProber, prober::CooldownFeed},
};

/// One routing stack, built from one config.
pub(super) struct Stack {
    /// The cooldown layer, for [`Router::cooldowns`](super::Router::cooldowns).
    pub(super) cooldown: CooldownLayer,
    pub(super) service: RouterService,
}

/// What a stack is built from besides the config: kept to build the next one on reload.
pub(super) struct Parts {
    pub(super) provider: RouterService,
    /// The builder's seed, which overrides the config's.
    pub(super) seed: Option<u64>,
    pub(super) on_cooldown: Option<CooldownHook>,
    pub(super) on_fallback: Option<FallbackHook>,
}

impl Parts {
    /// The default stack for `config` over `registry` and `store`, around the provider. The
    /// config holds each layer's settings as loading built and checked them; the router adds
    /// what is its own: the event hooks, the seed it was given and a fresh retry budget.
    pub(super) fn stack(&self, config: &Config, registry: &Arc<Registry>, store: &Arc<StateStore>) -> Stack {
        let mut cooldown = config.cooldown.clone();
        if let Some(hook) = &self.on_cooldown {
            cooldown.hook = Some(hook.clone());
        }
        let mut retry = config.retry.clone();
        // A budget is state: a stack spends its own, not one shared with every stack built from
        // the same config.
        retry.budget = retry.budget.map(|b| Arc::new(b.fresh()));
        warm_tokenizers(config);
        let strategies = Strategies::from_routing_groups(
            config.routing_strategy.build_with(&config.strategy_args),
            &config.routing_groups,
            &config.strategy_args,
        );
        let mut stack = RoutingStack::builder(registry.clone(), store.clone())
            .strategies(strategies)
            .deadline(config.deadline)
            .fallback(FallbackConfig::new().tables(config.fallbacks.clone()))
            .cooldown(cooldown)
            .retry(retry)
            .health(config.health.filter(config.cooldown.allowed_fails_policy.is_some()))
            .precall(config.precall.clone());
        if let Some(seed) = self.seed.or(config.seed) {
            stack = stack.seed(seed);
        }
        if let Some(hook) = self.on_fallback.clone() {
            stack = stack.on_fallback(move |e| hook(e));
        }
        let stack = stack.build();
        let cooldown = stack.cooldown.clone();
        let service = BoxCloneSyncService::new(stack.layer(self.provider.clone()));
        Stack { cooldown, service }
    }
}

/// The health checks of the live config: their settings, the prober (also used for on-demand
/// probes) and the background task, when one runs.
pub(super) struct Health {
    pub(super) settings: Arc<HealthSettings>,
    pub(super) prober: Arc<ProviderProber>,
    /// Dropping it stops the task.
    pub(super) checker: Option<HealthChecker>,
}

impl Parts {
    /// The health checks for `config`: the prober, and the background task when the config
    /// runs the probes (`background_health_checks` or `enable_health_check_routing`).
    pub(super) fn health(
        &self,
        config: &Config,
        registry: &Arc<Registry>,
        store: &Arc<StateStore>,
    ) -> Result<Health, HealthCheckError> {
        let settings = Arc::new(config.health.clone());
        // LiteLLM's `allowed_fails_policy` interaction: with health routing on and a policy set,
        // failed probes feed the cooldown counts (the policy decides when they bench).
        let feed =
            (settings.routing).then_some(config.cooldown.allowed_fails_policy).flatten().map(|policy| CooldownFeed {
                store: store.clone(),
                policy,
                allowed_fails: config.cooldown.allowed_fails,
                cooldown_time: config.cooldown.cooldown_time,
            });
        let prober = Arc::new(ProviderProber::new(self.provider.clone(), settings.clone()).feeding(feed));
        let mut check = settings.check.clone();
        if let Some(seed) = self.seed.or(config.seed) {
            check = check.seed(seed.wrapping_add(2));
        }
        let checker = if settings.probes_run() {
            let task_prober: Arc<dyn switchyard_layers::health::Prober> = prober.clone();
            Some(HealthChecker::spawn(registry.clone(), store.clone(), check, task_prober)?)
        } else {
            None
        };
        Ok(Health { settings, prober, checker })
    }
}

/// The live stack and what rebuilds it.
pub(super) struct Live {
    pub(super) parts: Parts,
    /// The settings only a restart applies, as the router was built.
    pub(super) restart_only: RestartOnly,
    pub(super) stack: ArcSwap<Stack>,
    pub(super) health: parking_lot::Mutex<Health>,
}

impl Live {
    pub(super) fn new(parts: Parts, restart_only: RestartOnly, stack: Stack, health: Health) -> Self {
        Self { parts, restart_only, stack: ArcSwap::from_pointee(stack), health: parking_lot::Mutex::new(health) }
    }
}

/// The router's service: each call runs on the stack that is live when it starts.
#[derive(Clone)]
pub(super) struct CurrentStack {
    live: Arc<Live>,
}

impl CurrentStack {
    pub(super) const fn new(live: Arc<Live>) -> Self {
        Self { live }
    }
}

impl Service<http::Request<Bytes>> for CurrentStack {
    type Response = http::Response<RouteBody>;
    type Error = BoxError;
    type Future = Oneshot<RouterService, http::Request<Bytes>>;

    /// Always ready: the stack's own readiness is awaited per call, on the stack the call runs on.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Bytes>) -> Self::Future {
        self.live.stack.load().service.clone().oneshot(req)
    }
}

/// The settings a running router keeps until a restart: the state store is built from them
/// (Redis connection and namespace, latency sample windows), and the HTTP provider the caller
/// built holds the timeouts.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct RestartOnly {
    redis: Option<RedisSettings>,
    latency: LatencyConfig,
    timeout: Option<Duration>,
    stream_timeout: Option<Duration>,
}

impl RestartOnly {
    pub(super) fn of(config: &Config) -> Self {
        Self {
            redis: config.redis.clone(),
            latency: config.latency,
            timeout: config.timeout,
            stream_timeout: config.stream_timeout,
        }
    }

    /// One line per key `config` changes that a reload cannot apply:
    /// `router_settings.redis_namespace changed: restart to apply`.
    pub(super) fn changed_in(&self, config: &Config) -> Vec<String> {
        let new = Self::of(config);
        let mut keys: Vec<&str> = Vec::new();
        match (&self.redis, &new.redis) {
            (None, None) => {}
            (Some(_), None) | (None, Some(_)) => keys.push("router_settings.redis_*"),
            (Some(a), Some(b)) => {
                let fields: [(&str, bool); 9] = [
                    ("router_settings.redis_url", a.url == b.url),
                    ("router_settings.redis_host", a.host == b.host),
                    ("router_settings.redis_port", a.port == b.port),
                    ("router_settings.redis_password", a.password == b.password),
                    ("router_settings.redis_startup_nodes", a.startup_nodes == b.startup_nodes),
                    ("router_settings.redis_ssl", a.ssl == b.ssl && a.ca_certs == b.ca_certs),
                    ("router_settings.redis_namespace", a.namespace == b.namespace),
                    ("router_settings.redis_budgets_fail_closed", a.budgets_fail_closed == b.budgets_fail_closed),
                    ("router_settings.redis_response_timeout", a.response_timeout == b.response_timeout),
                ];
                keys.extend(fields.iter().filter(|(_, same)| !same).map(|(key, _)| *key));
            }
        }
        if self.latency != new.latency {
            keys.push("router_settings.routing_strategy_args (ttl, max_latency_list_size)");
        }
        if self.timeout != new.timeout {
            keys.push("router_settings.timeout");
        }
        if self.stream_timeout != new.stream_timeout {
            keys.push("router_settings.stream_timeout");
        }
        keys.into_iter().map(|key| format!("{key} changed: restart to apply")).collect()
    }
}
