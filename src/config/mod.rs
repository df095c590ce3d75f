//! The LiteLLM proxy config reader: a `config.yaml` written for LiteLLM loads into a typed
//! [`Config`] that [`Router::from_config`](crate::Router::from_config) builds the stack from.
//!
//! The supported keys, their defaults, `os.environ/NAME` references, the keys that are ignored
//! with a warning and the validation rules are listed in `docs/config.md`. In short:
//! `model_list` becomes [`Config::deployments`] (config order, stable ids), `router_settings`
//! and the routing keys of `litellm_settings` become the strategy, fallback tables, aliases and
//! [`RouterSettings`] (`router_settings` wins when both set a key),
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

use switchyard_layers::cooldown::{ALLOWED_FAILS_POLICY_FIELDS, ProbeConfig};
use switchyard_layers::retry::RETRY_POLICY_FIELDS;
use switchyard_layers::{
    ApiKey, Deployment,
    fallback::FallbackTables,
    precall::{AffinityConfig, BudgetConfig, PreCallConfig},
    select::{RoutingGroups, RoutingStrategy, StrategyArgs},
    state::LatencyConfig,
};

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
    /// Retries, timeouts, cooldowns, pre-call checks and Redis.
    pub settings: RouterSettings,
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
}

impl Default for Config {
    fn default() -> Self {
        let mut fallbacks = FallbackTables::default();
        fallbacks.max_fallbacks = FallbackTables::DEFAULT_MAX_FALLBACKS;
        Self {
            deployments: Vec::new(),
            aliases: Vec::new(),
            routing_strategy: RoutingStrategy::default(),
            strategy_args: StrategyArgs::default(),
            latency: LatencyConfig::default(),
            routing_groups: RoutingGroups::default(),
            fallbacks,
            settings: RouterSettings::default(),
            master_key: None,
            edge: EdgeSettings::default(),
            count_tokens_upstream: false,
            warnings: Vec::new(),
            seed: None,
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

/// Router-wide settings; the defaults are LiteLLM's.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RouterSettings {
    /// Retries within a group after a failed attempt (default 2).
    pub num_retries: u32,
    /// Per-attempt timeout (`router_settings.timeout`, `litellm_settings.request_timeout`);
    /// `None` when not set (attempts then get the provider's default, 600 s).
    pub timeout: Option<Duration>,
    /// Per-attempt timeout for streaming requests (first content chunk, then between chunks);
    /// `None` when not set (streams then get `timeout`, else the provider's default, 60 s).
    pub stream_timeout: Option<Duration>,
    /// Minimum backoff before a retry (default 0).
    pub retry_after: Duration,
    /// Failures per minute before a deployment is cooled down; `None` when not set, which
    /// selects LiteLLM's rate-based rule.
    pub allowed_fails: Option<u32>,
    /// `allowed_fails` per error class, by LiteLLM field name (`RateLimitErrorAllowedFails`,
    /// ...; see [`RouterSettings::ALLOWED_FAILS_POLICY_FIELDS`]).
    pub allowed_fails_policy: Option<BTreeMap<String, u32>>,
    /// `num_retries` per error class, by LiteLLM field name (`RateLimitErrorRetries`, ...; see
    /// [`RouterSettings::RETRY_POLICY_FIELDS`]).
    pub retry_policy: Option<BTreeMap<String, u32>>,
    /// `model_group_retry_policy`: a `retry_policy` per model group, replacing the router's for
    /// that group.
    pub group_retry_policies: BTreeMap<String, BTreeMap<String, u32>>,
    /// A retry budget shared by all requests (`retry_budget: {ratio, min_per_sec}`, ours):
    /// retries as a fraction of traffic, plus a floor per second.
    pub retry_budget: Option<(f64, u32)>,
    /// How long a deployment is benched (default 5 s; `0` is kept as zero).
    pub cooldown_time: Duration,
    /// Never cool deployments down.
    pub disable_cooldowns: bool,
    /// Check context windows, regions and required parameters before each attempt (RPM/TPM and
    /// parallel limits, blocked deployments and order tiers are always checked).
    pub enable_pre_call_checks: bool,
    /// Route by request tags.
    pub enable_tag_filtering: bool,
    /// Tag routing matches a deployment carrying any of the request's tags (default `true`);
    /// `false`: all of them.
    pub tag_filtering_match_any: bool,
    /// Parallel-request limit for deployments that set none (>= 1).
    pub default_max_parallel_requests: Option<u32>,
    /// When every deployment of a group is at its parallel-request limit, wait up to this long
    /// for a slot instead of failing (`wait_for_parallel_slot`, seconds, ours).
    pub wait_for_parallel_slot: Option<Duration>,
    /// The Redis state backend (`redis_*` keys): cooldowns, usage, spend and affinity shared
    /// between replicas. `None`: state lives in memory, per replica.
    pub redis: Option<RedisSettings>,
    /// Half-open recovery (`cooldown_probe`, ours): `None` when off.
    pub cooldown_probe: Option<ProbeConfig>,
    /// When every deployment of a group is cooling down, wait up to this long for the first to
    /// return instead of failing (`wait_for_cooldown`, seconds, ours).
    pub wait_for_cooldown: Option<Duration>,
    /// One deadline for a whole call: retries, backoffs and fallbacks together (`deadline`,
    /// seconds, ours).
    pub deadline: Option<Duration>,
    /// `provider_budget_config`: spend limits per provider (deployment budgets are on each
    /// deployment: `max_budget` with `budget_duration`).
    pub budgets: BudgetConfig,
    /// Sticky routing (`deployment_affinity`, ours; or LiteLLM's `optional_pre_call_checks`
    /// `session_affinity` / `deployment_affinity` with `deployment_affinity_ttl_seconds`); `None`
    /// when off.
    pub affinity: Option<AffinityConfig>,
    /// Prompt-cache affinity (`prompt_cache_affinity_ttl`, seconds, ours; 0 turns it off):
    /// requests sharing a cacheable prefix prefer the deployment that served it last.
    pub prompt_cache_affinity: Option<Duration>,
    /// How long the deployment holding a Responses API conversation is remembered
    /// (`conversation_ttl`, seconds, ours).
    pub conversation_ttl: Duration,
    /// `conversation_fallback` (ours): a continued conversation whose deployment cannot serve is
    /// routed as a new one instead of refused.
    pub conversation_fallback: bool,
}

impl RouterSettings {
    /// Default `num_retries` (LiteLLM uses the OpenAI SDK's default, 2).
    pub const DEFAULT_NUM_RETRIES: u32 = 2;
    /// Default `cooldown_time` (LiteLLM's `DEFAULT_COOLDOWN_TIME_SECONDS`).
    pub const DEFAULT_COOLDOWN_TIME: Duration = Duration::from_secs(5);
    /// The field names `retry_policy` accepts.
    pub const RETRY_POLICY_FIELDS: [&'static str; 6] = RETRY_POLICY_FIELDS;
    /// The field names `allowed_fails_policy` accepts.
    pub const ALLOWED_FAILS_POLICY_FIELDS: [&'static str; 9] = ALLOWED_FAILS_POLICY_FIELDS;
}

impl Default for RouterSettings {
    fn default() -> Self {
        Self {
            num_retries: Self::DEFAULT_NUM_RETRIES,
            timeout: None,
            stream_timeout: None,
            retry_after: Duration::ZERO,
            allowed_fails: None,
            allowed_fails_policy: None,
            retry_policy: None,
            group_retry_policies: BTreeMap::new(),
            retry_budget: None,
            cooldown_time: Self::DEFAULT_COOLDOWN_TIME,
            disable_cooldowns: false,
            enable_pre_call_checks: false,
            enable_tag_filtering: false,
            tag_filtering_match_any: true,
            default_max_parallel_requests: None,
            wait_for_parallel_slot: None,
            redis: None,
            cooldown_probe: None,
            wait_for_cooldown: None,
            deadline: None,
            budgets: BudgetConfig::default(),
            affinity: None,
            prompt_cache_affinity: Some(PreCallConfig::DEFAULT_PROMPT_CACHE_TTL),
            conversation_ttl: PreCallConfig::DEFAULT_CONVERSATION_TTL,
            conversation_fallback: false,
        }
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
    /// an alias, or a name a wildcard `model_name` matches; `*` as a key), strategy arguments
    /// and policy field names in range. Loading runs them too, naming YAML paths; here paths
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
            .field("routing_strategy", &self.routing_strategy)
            .field("strategy_args", &self.strategy_args)
            .field("latency", &self.latency)
            .field("routing_groups", &self.routing_groups)
            .field("fallbacks", &self.fallbacks)
            .field("settings", &self.settings)
            .field("master_key", &self.master_key)
            .field("edge", &self.edge)
            .field("warnings", &self.warnings)
            .field("seed", &self.seed)
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
        assert_eq!(c.settings.num_retries, 2);
        assert_eq!(c.settings.cooldown_time, Duration::from_secs(5));
        assert_eq!(c.routing_strategy, RoutingStrategy::SimpleShuffle);
        assert!(c.validate().is_ok());
    }
}
