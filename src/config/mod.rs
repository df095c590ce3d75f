//! The LiteLLM proxy config reader: a `config.yaml` written for LiteLLM loads into a typed
//! [`Config`] that [`Router::from_config`](crate::Router::from_config) builds the stack from.
//!
//! The supported keys, their defaults, `os.environ/NAME` references, the keys that are ignored
//! with a warning and the validation rules are listed in `docs/config.md`. In short:
//! `model_list` becomes [`Config::deployments`] (config order, stable ids), `router_settings`
//! and the routing keys of `litellm_settings` become the strategy, fallback tables, aliases and
//! each layer's own config ([`Config::retry`], [`Config::cooldown`], [`Config::precall`]), built
//! once here (`router_settings` wins when both set a key),
//! `general_settings.master_key` becomes [`Config::master_key`] and `general_settings.edge`
//! (ours) the gateway's [`EdgeSettings`]. Every error names the path of the offending key.
//!
//! ```
//! use switchyard::config::Config;
//!
//! let config = Config::from_yaml_str_with_env(
//!     r#"
//! model_list:
//!   - model_name: gpt-4o
//!     litellm_params: { model: azure/gpt-4o-eu, api_key: os.environ/AZURE_KEY, rpm: 600 }
//!   - model_name: gpt-4o-mini
//!     litellm_params: { model: openai/gpt-4o-mini }
//! router_settings:
//!   routing_strategy: least-busy
//!   fallbacks: [{ gpt-4o: [gpt-4o-mini] }]
//! "#,
//!     &|name| (name == "AZURE_KEY").then(|| "sk-test".to_owned()),
//! )?;
//! assert_eq!(config.deployments.len(), 2);
//! assert_eq!(config.deployments[0].rpm, Some(600));
//! assert_eq!(config.fallbacks.general_for("gpt-4o"), ["gpt-4o-mini".to_owned()]);
//! # Ok::<(), switchyard::config::ConfigError>(())
//! ```

mod auto_router;
mod convert;
mod env;
mod error;
pub(crate) mod http_server;
mod include;
mod raw;
mod redis;
mod secret;
mod settings;
mod validate;

use std::{collections::BTreeMap, fmt, path::Path, time::Duration};

use switchyard_layers::{
    ApiKey, Deployment,
    cooldown::CooldownConfig,
    fallback::FallbackTables,
    precall::PreCallConfig,
    preroute::{adaptive::AdaptivePreferences, quality::RoutingPreferences},
    retry::RetryConfig,
    select::{RoutingGroups, RoutingStrategy, StrategyArgs},
    state::LatencyConfig,
};

pub use auto_router::{AdaptiveSettings, AutoRouter, PreRouterEntry};
pub use error::{ConfigError, ConfigErrorKind};
pub use http_server::EdgeSettings;
pub use redis::RedisSettings;

/// A router configuration, read from a LiteLLM proxy config or built in code.
///
/// `Debug` never shows a credential: API keys, the master key, the Redis password and
/// credential-like provider parameters are masked.
#[derive(Clone)]
#[non_exhaustive]
pub struct Config {
    /// The deployments, in `model_list` order. Ids come from `model_info.id`, else are derived
    /// from the group and the provider parameters
    /// ([`DeploymentBuilder::build`](switchyard_layers::DeploymentBuilder::build)).
    pub deployments: Vec<Deployment>,
    /// `model_group_alias`: other names for model groups.
    pub aliases: Vec<Alias>,
    /// The `model_list` entries whose `litellm_params.model` is `auto_router/...`: virtual model
    /// names a pre-router routes to a real group per request, in config order
    /// ([`build_pre_routers`](Self::build_pre_routers)).
    pub pre_routers: Vec<PreRouterEntry>,
    /// The quality router's preferences of each model group
    /// (`model_info.litellm_routing_preferences`, or `model_info.quality_tier`), merged over the
    /// group's deployments.
    pub routing_preferences: BTreeMap<String, RoutingPreferences>,
    /// The adaptive router's preferences of each model group
    /// (`model_info.adaptive_router_preferences`: quality tier and strengths, which set its
    /// priors); a group without them gets LiteLLM's default (tier 2).
    pub adaptive_preferences: BTreeMap<String, AdaptivePreferences>,
    /// `routing_strategy` (default `simple-shuffle`).
    pub routing_strategy: RoutingStrategy,
    /// `routing_strategy_args.lowest_latency_buffer`.
    pub strategy_args: StrategyArgs,
    /// `routing_strategy_args.ttl` (seconds) and `max_latency_list_size`.
    pub latency: LatencyConfig,
    /// `routing_groups`: a strategy per set of model groups.
    pub routing_groups: RoutingGroups,
    /// `fallbacks`, `context_window_fallbacks`, `content_policy_fallbacks`,
    /// `default_fallbacks` (and a `*` entry of `fallbacks`), `max_fallbacks` (default 5).
    pub fallbacks: FallbackTables,
    /// The retry layer's settings: `num_retries`, `retry_after`, `retry_policy`,
    /// `model_group_retry_policy` and `retry_budget` (ours).
    pub retry: RetryConfig,
    /// The cooldown layer's settings: `cooldown_time`, `disable_cooldowns`, `allowed_fails`,
    /// `allowed_fails_policy`, `cooldown_probe` and `wait_for_cooldown` (ours). The router
    /// attaches its builder's event hook.
    pub cooldown: CooldownConfig,
    /// The pre-call layer's settings: `enable_pre_call_checks`, `enable_tag_filtering`,
    /// `tag_filtering_match_any`, `default_max_parallel_requests`, `provider_budget_config`,
    /// affinity and the rest of Switchyard's own pre-call keys.
    pub precall: PreCallConfig,
    /// One deadline for a whole call: retries, backoffs and fallbacks together (`deadline`,
    /// seconds, ours).
    pub deadline: Option<Duration>,
    /// Mid-stream continuation of chat completion streams (`stream_continuation`, ours; off by
    /// default).
    pub continuation: switchyard_layers::continuation::ContinuationConfig,
    /// Per-attempt timeout (`router_settings.timeout`, `litellm_settings.request_timeout`);
    /// `None` when not set (attempts then get the provider's default, 600 s).
    pub timeout: Option<Duration>,
    /// Per-attempt timeout for streaming requests (first content chunk, then between chunks);
    /// `None` when not set (streams then get `timeout`, else the provider's default, 60 s).
    pub stream_timeout: Option<Duration>,
    /// The Redis state backend (`redis_*` keys): cooldowns, usage, spend and affinity shared
    /// between replicas. `None`: state lives in memory, per replica.
    pub redis: Option<RedisSettings>,
    /// `general_settings.master_key`: the key gateway clients present.
    pub master_key: Option<ApiKey>,
    /// `general_settings.edge` (ours): the gateway's connection limits and browser rules.
    pub edge: EdgeSettings,
    /// `general_settings.count_tokens: upstream` (ours): `/v1/messages/count_tokens` asks an
    /// Anthropic deployment of the group for the exact count; `estimate` (default) counts
    /// locally.
    pub count_tokens_upstream: bool,
    /// One entry per key that was ignored (also logged once with `tracing::warn!` at load).
    pub warnings: Vec<String>,
    /// `router_settings.seed` (not a LiteLLM key): seeds every random pick, for reproducible
    /// routing in tests and demos.
    pub seed: Option<u64>,
    /// Health-check routing and the background probes (`enable_health_check_routing`,
    /// `background_health_checks`, `health_check_interval`, ...; `docs/health.md`).
    pub health: crate::health::HealthSettings,
    /// The response cache (`litellm_settings.cache: true` with `cache_params`, or
    /// `router_settings.cache_responses`; `router_settings.caching_groups`); `None`: no cache
    /// (`docs/caching.md`).
    pub cache: Option<crate::cache::CacheSettings>,
}

impl Default for Config {
    fn default() -> Self {
        let mut fallbacks = FallbackTables::default();
        fallbacks.max_fallbacks = FallbackTables::DEFAULT_MAX_FALLBACKS;
        Self {
            deployments: Vec::new(),
            aliases: Vec::new(),
            pre_routers: Vec::new(),
            routing_preferences: BTreeMap::new(),
            adaptive_preferences: BTreeMap::new(),
            routing_strategy: RoutingStrategy::default(),
            strategy_args: StrategyArgs::default(),
            latency: LatencyConfig::default(),
            routing_groups: RoutingGroups::default(),
            fallbacks,
            retry: RetryConfig::default(),
            cooldown: CooldownConfig::default(),
            precall: PreCallConfig::default(),
            deadline: None,
            continuation: switchyard_layers::continuation::ContinuationConfig::default(),
            timeout: None,
            stream_timeout: None,
            redis: None,
            master_key: None,
            edge: EdgeSettings::default(),
            count_tokens_upstream: false,
            warnings: Vec::new(),
            seed: None,
            health: crate::health::HealthSettings::default(),
            cache: None,
        }
    }
}

/// Another name for a model group (`model_group_alias`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Alias {
    /// The name callers use.
    pub alias: String,
    /// The model group it stands for.
    pub target: String,
    /// A hidden alias resolves but is not listed.
    pub hidden: bool,
}

impl Alias {
    /// `alias` stands for the model group `target`.
    pub fn new(alias: impl Into<String>, target: impl Into<String>, hidden: bool) -> Self {
        Self { alias: alias.into(), target: target.into(), hidden }
    }
}

impl Config {
    /// Reads a LiteLLM proxy config; `os.environ/NAME` references resolve from the process
    /// environment.
    pub fn from_yaml_str(yaml: &str) -> Result<Config, ConfigError> {
        Self::from_yaml_str_with_env(yaml, &|name| std::env::var(name).ok())
    }

    /// Reads a LiteLLM proxy config; `os.environ/NAME` references resolve through `env`
    /// (after the config's own `environment_variables`).
    pub fn from_yaml_str_with_env(yaml: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        Self::load(yaml, None, env)
    }

    fn load(yaml: &str, base: Option<&Path>, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let (config, warnings) = settings::load(yaml, base, env)?;
        for warning in &warnings {
            tracing::warn!(target: "switchyard::config", "{warning}");
        }
        Ok(Config { warnings, ..config })
    }

    /// Reads the LiteLLM proxy config file at `path`; `os.environ/NAME` references resolve
    /// from the process environment. The files a top-level `include:` lists are read relative
    /// to `path`'s directory and merged in as LiteLLM merges them (`docs/config.md`).
    pub fn from_path(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let path = path.as_ref();
        let yaml = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::new(ConfigErrorKind::Io, "", format!("cannot read `{}`: {e}", path.display())).with_source(e)
        })?;
        let base = path.parent().map(|dir| if dir.as_os_str().is_empty() { Path::new(".") } else { dir });
        Self::load(&yaml, base, &|name| std::env::var(name).ok())
    }

    /// The checks that also apply to a config built in code: unique deployment ids, alias
    /// targets that are model groups, fallback tables that name known groups (a model group,
    /// an alias, or a name a wildcard `model_name` matches; `*` as a key), pre-routers whose
    /// virtual names are their own and whose targets are known groups, and strategy arguments
    /// in range (the layer configs are typed: a policy cannot name an unknown field). Loading runs them too, naming YAML paths; here paths
    /// name [`Config`] fields (`deployments[3]`, `fallbacks.general.gpt-4o[1]`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        validate::validate(self, &validate::Sources::default())
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let deployments: Vec<Deployment> = self.deployments.iter().map(validate::masked).collect();
        f.debug_struct("Config")
            .field("deployments", &deployments)
            .field("aliases", &self.aliases)
            .field("pre_routers", &self.pre_routers)
            .field("routing_preferences", &self.routing_preferences)
            .field("adaptive_preferences", &self.adaptive_preferences)
            .field("routing_strategy", &self.routing_strategy)
            .field("strategy_args", &self.strategy_args)
            .field("latency", &self.latency)
            .field("routing_groups", &self.routing_groups)
            .field("fallbacks", &self.fallbacks)
            .field("retry", &self.retry)
            .field("cooldown", &self.cooldown)
            .field("precall", &self.precall)
            .field("deadline", &self.deadline)
            .field("timeout", &self.timeout)
            .field("stream_timeout", &self.stream_timeout)
            .field("redis", &self.redis)
            .field("master_key", &self.master_key)
            .field("edge", &self.edge)
            .field("warnings", &self.warnings)
            .field("seed", &self.seed)
            .field("health", &self.health)
            .field("cache", &self.cache)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_litellm_defaults() {
        let c = Config::default();
        assert_eq!(c.fallbacks.max_fallbacks, 5);
        assert_eq!(c.retry.num_retries, 2);
        assert_eq!(c.cooldown.cooldown_time, Duration::from_secs(5));
        assert!(c.precall.tag_match_any && !c.precall.context_window && !c.cooldown.disabled);
        assert_eq!(c.routing_strategy, RoutingStrategy::SimpleShuffle);
        assert!(c.validate().is_ok());
    }
}
