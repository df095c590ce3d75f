//! The live stack: what a [`Router`](super::Router) routes each call with, rebuilt from a new
//! config and swapped in by a reload.
//!
//! Every call loads the current [`Stack`] once and runs on it to its end, retries, fallbacks and
//! streamed body included, so a reload never changes the rules under a call in flight. The stack
//! holds the registry it resolves names with, so a reload is one swap: a call sees the old
//! deployments with the old rules or the new ones with the new rules, never a mix. The store is
//! not part of the stack: a rebuilt stack routes over the same one (the state is keyed by
//! deployment id), so cooldowns, usage windows, in-flight counts and spend carry over, and so
//! does the retry budget's balance when its settings did not change.

use std::{
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use arc_swap::{ArcSwap, Guard};
use bytes::Bytes;
use switchyard_layers::{
    BoxError, Registry, RouteBody, StateStore,
    cooldown::{CooldownHook, CooldownLayer},
    fallback::FallbackConfig,
    health::{HealthCheckError, HealthChecker},
    preroute::{PreRouters, adaptive::AdaptiveRouter},
    retry::RetryBudget,
    select::Strategies,
    stack::RoutingStack,
    state::LatencyConfig,
};
use tower::{Service, util::BoxCloneSyncService};

use super::{FallbackHook, RouterError, warm_tokenizers};
use crate::{
    Config,
    config::RedisSettings,
    health::{HealthSettings, ProviderProber, prober::CooldownFeed},
};

/// A whole routing stack around the provider, type-erased.
pub(super) type StackService = BoxCloneSyncService<http::Request<Bytes>, http::Response<RouteBody>, BoxError>;

/// Puts a built [`RoutingStack`] around the provider: the provider stays its own type inside
/// the stack (no boxed future per attempt), and the whole stack is boxed once.
pub(super) type Wrap = Arc<dyn Fn(&RoutingStack) -> StackService + Send + Sync>;

/// One routing stack, built from one config.
pub(super) struct Stack {
    /// The deployments and aliases this stack resolves names with.
    pub(super) registry: Arc<Registry>,
    /// The cooldown layer, for [`Router::cooldowns`](super::Router::cooldowns).
    pub(super) cooldown: CooldownLayer,
    /// The virtual model names the pre-route layer answers for, sorted.
    pub(super) pre_routed: Vec<String>,
    /// The adaptive pre-routers among them (feedback, the dashboard).
    pub(super) adaptive: Vec<AdaptiveRouter>,
    /// The pre-routers themselves (shared with the stack's layer), for previews.
    pub(super) pre_routers: PreRouters,
    /// The retry budget, handed to the next stack if its settings stay the same.
    budget: Option<Arc<RetryBudget>>,
    pub(super) service: StackService,
}

/// What a stack is built from besides the config: kept to build the next one on reload.
pub(super) struct Parts {
    pub(super) wrap: Wrap,
    /// The provider, boxed, for the health probes (which go straight to it).
    pub(super) provider: StackService,
    /// The builder's seed, which overrides the config's.
    pub(super) seed: Option<u64>,
    pub(super) on_cooldown: Option<CooldownHook>,
    pub(super) on_fallback: Option<FallbackHook>,
}

impl Parts {
    /// The default stack for `config` over `store`, around the provider, with a registry of the
    /// config's deployments and aliases (the step that can fail). The config holds each layer's
    /// settings as loading built and checked them; the router adds what is its own: the event
    /// hooks, the seed it was given and the retry budget, `previous`'s when the settings match.
    /// The pre-routers are built afresh from the config's `auto_router/...` entries (which fails
    /// only for a config built in code that [`Config::validate`] would refuse).
    pub(super) fn stack(
        &self,
        config: &Config,
        store: &Arc<StateStore>,
        previous: Option<&Stack>,
    ) -> Result<Stack, RouterError> {
        let (pre_routers, adaptive) = config.build_pre_routers_over(store)?;
        let pre_routed = pre_routers.names().map(str::to_owned).collect();
        let registry = Arc::new(Registry::new());
        for d in &config.deployments {
            registry.add(d.clone())?;
        }
        for a in &config.aliases {
            registry.set_alias(a.alias.as_str(), a.target.as_str(), a.hidden)?;
        }
        let mut cooldown = config.cooldown.clone();
        if let Some(hook) = &self.on_cooldown {
            cooldown.hook = Some(hook.clone());
        }
        let mut retry = config.retry.clone();
        // A budget is state: a router spends its own, not one shared with every router built from
        // the same config, and keeps it across reloads that keep its settings.
        retry.budget = retry.budget.map(|b| match previous.and_then(|p| p.budget.as_ref()) {
            Some(kept) if kept.same_settings(&b) => kept.clone(),
            _ => Arc::new(b.fresh()),
        });
        let budget = retry.budget.clone();
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
            .precall(config.precall.clone())
            .pre_routers(pre_routers.clone())
            .continuation(config.continuation.clone());
        if let Some(seed) = self.seed.or(config.seed) {
            stack = stack.seed(seed);
        }
        if let Some(hook) = self.on_fallback.clone() {
            stack = stack.on_fallback(move |e| hook(e));
        }
        let stack = stack.build();
        let cooldown = stack.cooldown.clone();
        let service = (self.wrap)(&stack);
        Ok(Stack { registry, cooldown, pre_routed, adaptive, pre_routers, budget, service })
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

/// The router as a tower service: each call runs on the stack that is live when it is made
/// ready, to its end (retries, fallbacks and a streamed body included), so it follows
/// [reloads](super::Router::reload).
///
/// It keeps a clone of the live stack's service and checks, when made ready, whether a reload
/// installed another one (one atomic load); readiness is the stack's own. Cloning it clones the
/// stack's service, as cloning the stack itself would, and a call costs what the stack's does.
#[derive(Clone)]
pub struct RouterService {
    live: Arc<Live>,
    /// The stack `inner` belongs to.
    current: Arc<Stack>,
    inner: StackService,
}

impl std::fmt::Debug for RouterService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouterService").finish_non_exhaustive()
    }
}

impl RouterService {
    pub(super) fn new(live: Arc<Live>) -> Self {
        let current = live.stack.load_full();
        let inner = current.service.clone();
        Self { live, current, inner }
    }
}

impl Service<http::Request<Bytes>> for RouterService {
    type Response = http::Response<RouteBody>;
    type Error = BoxError;
    type Future = <StackService as Service<http::Request<Bytes>>>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        let live = self.live.stack.load();
        if !Arc::ptr_eq(&live, &self.current) {
            self.current = Guard::into_inner(live);
            self.inner = self.current.service.clone();
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Bytes>) -> Self::Future {
        self.inner.call(req)
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

#[cfg(test)]
mod tests {
    use switchyard_services::sim::SimProvider;

    use crate::{Config, Router};

    fn config(budget: &str) -> Config {
        let yaml = format!(
            "model_list:\n  - {{ model_name: g, litellm_params: {{ model: openai/g }} }}\n\
             router_settings: {{ num_retries: 1{budget} }}\n"
        );
        Config::from_yaml_str(&yaml).expect("valid config")
    }

    fn budget_of(router: &Router) -> Option<std::sync::Arc<switchyard_layers::retry::RetryBudget>> {
        router.live.stack.load().budget.clone()
    }

    #[tokio::test]
    async fn a_reload_keeps_the_retry_budget_while_its_settings_stay() {
        let with = config(", retry_budget: { ratio: 0.1, min_per_sec: 2 }");
        let router = Router::from_config(&with, SimProvider::new(1)).expect("router");
        let first = budget_of(&router).expect("a budget");
        assert!(first.withdraw() && first.withdraw(), "the floor's two retries");
        let spent = first.balance();

        router.reload(&config(", retry_budget: { ratio: 0.1, min_per_sec: 2 }, allowed_fails: 9")).expect("reload");
        let kept = budget_of(&router).expect("a budget");
        assert!(std::sync::Arc::ptr_eq(&first, &kept), "same settings: the same budget");
        assert!(kept.balance() <= spent + 0.5, "its spending kept: {} vs {spent}", kept.balance());

        router.reload(&config(", retry_budget: { ratio: 0.5, min_per_sec: 2 }")).expect("reload");
        let other = budget_of(&router).expect("a budget");
        assert!(!std::sync::Arc::ptr_eq(&first, &other), "new settings: a new budget");

        router.reload(&config("")).expect("reload");
        assert!(budget_of(&router).is_none(), "no budget in the config, none in the stack");
    }

    #[tokio::test]
    async fn two_routers_from_one_config_never_share_a_budget() {
        let with = config(", retry_budget: { ratio: 0.1, min_per_sec: 2 }");
        let a = Router::from_config(&with, SimProvider::new(1)).expect("router");
        let b = Router::from_config(&with, SimProvider::new(1)).expect("router");
        let (a, b) = (budget_of(&a).expect("budget"), budget_of(&b).expect("budget"));
        assert!(!std::sync::Arc::ptr_eq(&a, &b));
    }
}
