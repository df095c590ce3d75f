//! [`HealthSettings`]: the health-check keys of a config, and [`ProbeSpec`], one deployment's
//! probe.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use switchyard_layers::{
    DeploymentId,
    health::{HealthCheckConfig, HealthConfig},
};

/// The health-check settings of a config (`docs/health.md` lists the keys).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct HealthSettings {
    /// `router_settings.enable_health_check_routing`: unhealthy deployments are filtered before
    /// the cooldown filter (and the probes run even without `background_health_checks`).
    pub routing: bool,
    /// `general_settings.background_health_checks`: the probes run (results in `/router/state`,
    /// the metrics and `/health/readiness`), whether or not routing reads them.
    pub background: bool,
    /// The probe task's settings: `health_check_interval`, `health_check_staleness_threshold`,
    /// `health_check_concurrency`, `background_health_check_model_groups`,
    /// `health_check_ignore_transient_errors`, and per deployment
    /// `model_info.health_check_timeout` and `model_info.disable_background_health_check`.
    pub check: HealthCheckConfig,
    /// The probe of each deployment that is not the default one-token chat completion.
    pub probes: BTreeMap<DeploymentId, ProbeSpec>,
}

impl Default for HealthSettings {
    fn default() -> Self {
        Self { routing: false, background: false, check: HealthCheckConfig::new(), probes: BTreeMap::new() }
    }
}

impl HealthSettings {
    /// Whether the router runs the background probes.
    pub fn probes_run(&self) -> bool {
        self.routing || self.background
    }

    /// The filter the routing stack runs: on with `enable_health_check_routing`, unless an
    /// `allowed_fails_policy` makes the cooldown rules the one exclusion mechanism (LiteLLM's rule:
    /// then failed probes feed the cooldown counts instead, and the filter only runs for the
    /// groups `background_health_check_model_groups` lists).
    pub fn filter(&self, allowed_fails_policy: bool) -> HealthConfig {
        let enabled = self.routing && (!allowed_fails_policy || self.check.groups.is_some());
        let mut filter = HealthConfig::new().enabled(enabled).staleness(self.check.staleness);
        filter.groups = self.check.groups.clone();
        filter
    }

    /// The probe of `id` (the default one unless the config set one).
    pub fn probe_of(&self, id: &DeploymentId) -> ProbeSpec {
        self.probes.get(id).cloned().unwrap_or_default()
    }
}

/// What a deployment's probe sends (`model_info.mode`, `health_check_model`,
/// `health_check_max_tokens`, `health_check_params`).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ProbeSpec {
    /// The kind of request.
    pub mode: ProbeMode,
    /// Probe this provider model instead of the deployment's own (`health_check_model`).
    pub model: Option<String>,
    /// `max_tokens` of a chat or completion probe (`health_check_max_tokens`, default 1).
    pub max_tokens: Option<u32>,
    /// Send no `max_tokens` (`health_check_supports_max_tokens: false`).
    pub omit_max_tokens: bool,
    /// Members merged into the probe's body (`health_check_params`), after the defaults.
    pub params: Map<String, Value>,
}

/// The kind of request a probe sends: the cheapest the deployment's API allows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProbeMode {
    /// A one-token chat completion (`mode: chat`, and every mode without a cheaper probe).
    #[default]
    Chat,
    /// A one-token text completion (`mode: completion`).
    Completion,
    /// An embeddings call for one short input (`mode: embedding`).
    Embedding,
}

impl ProbeMode {
    /// The mode for LiteLLM's `model_info.mode`: `embedding` and `completion` have their own
    /// probe; every other mode is probed with a chat completion.
    pub fn from_litellm(mode: &str) -> Self {
        match mode {
            "embedding" => Self::Embedding,
            "completion" => Self::Completion,
            _ => Self::Chat,
        }
    }
}
