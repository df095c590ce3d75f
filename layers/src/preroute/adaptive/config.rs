//! The adaptive router's settings: LiteLLM's `adaptive_router_config` (with Switchyard's decay
//! and sync keys), each group's `model_info.adaptive_router_preferences`, and the candidates the
//! router is built over.

use std::{collections::BTreeMap, error::Error, fmt, time::Duration};

use serde::Deserialize;

use super::RequestClass;

/// LiteLLM's `COLD_START_MASS`: alpha + beta of a cell's prior.
pub const COLD_START_MASS: f64 = 10.0;
/// LiteLLM's `SAMPLE_CAP`: the most alpha + beta a cell reaches (prior included).
pub const SAMPLE_CAP: f64 = 200.0;
/// Most cells (classes × groups) one router keeps.
pub const MAX_CELLS: usize = 1024;

/// An adaptive-router setting that cannot be used; the message names the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdaptiveConfigError {
    message: String,
}

impl AdaptiveConfigError {
    pub(super) fn new(message: impl Into<String>) -> Self {
        Self { message: message.into() }
    }

    /// What is wrong, starting with the key inside `adaptive_router_config` (`weights: ...`).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for AdaptiveConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "adaptive_router_config: {}", self.message)
    }
}

impl Error for AdaptiveConfigError {}

/// How quality and cost weigh in a group's score (LiteLLM's `weights`: each in 0..=1, summing
/// to 1).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Weights {
    /// The weight of the sampled quality (0.7).
    pub quality: f64,
    /// The weight of the normalized cost, cheapest 1 (0.3).
    pub cost: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Self { quality: 0.7, cost: 0.3 }
    }
}

impl Weights {
    /// `quality` and `cost` (checked by [`AdaptiveRouter::new`](super::AdaptiveRouter::new)).
    pub const fn new(quality: f64, cost: f64) -> Self {
        Self { quality, cost }
    }
}

/// LiteLLM's `adaptive_router_config`, with its key names and defaults, plus Switchyard's decay
/// and sync keys. Keys neither knows are kept in [`other`](Self::other) for a warning (LiteLLM
/// ignores them too).
///
/// ```
/// use switchyard_layers::preroute::adaptive::AdaptiveRouterConfig;
///
/// let config: AdaptiveRouterConfig = serde_json::from_str(
///     r#"{"available_models": ["gpt-4o", "gpt-4o-mini"], "weights": {"quality": 0.8, "cost": 0.2}}"#,
/// )?;
/// assert_eq!(config.weights.quality, 0.8);
/// assert_eq!(config.decay_half_life, 86_400.0);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct AdaptiveRouterConfig {
    /// The model groups the router chooses among (required, not empty).
    pub available_models: Vec<String>,
    /// Quality against cost.
    pub weights: Weights,
    /// Switchyard's: seconds over which a cell's evidence halves, drifting back to the prior
    /// (86,400: a day; 0 keeps it forever). LiteLLM does not decay.
    pub decay_half_life: f64,
    /// Switchyard's: the most alpha + beta a cell reaches, prior included (LiteLLM's 200); more
    /// is scaled down to it, keeping the mean (LiteLLM drops the update).
    pub sample_cap: f64,
    /// Switchyard's: seconds between two reads of the shared posteriors (1).
    pub sync_interval: f64,
    /// Keys Switchyard does not read.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

impl Default for AdaptiveRouterConfig {
    fn default() -> Self {
        Self {
            available_models: Vec::new(),
            weights: Weights::default(),
            decay_half_life: 86_400.0,
            sample_cap: SAMPLE_CAP,
            sync_interval: 1.0,
            other: BTreeMap::new(),
        }
    }
}

impl AdaptiveRouterConfig {
    /// The default settings over `available_models`.
    pub fn new(available_models: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self { available_models: available_models.into_iter().map(Into::into).collect(), ..Self::default() }
    }

    /// With `weights`.
    pub fn with_weights(mut self, weights: Weights) -> Self {
        self.weights = weights;
        self
    }

    /// With the half-life of the evidence (zero: no decay).
    pub fn with_decay_half_life(mut self, half_life: Duration) -> Self {
        self.decay_half_life = half_life.as_secs_f64();
        self
    }

    /// The checks LiteLLM's pydantic model makes, and Switchyard's own (what
    /// [`AdaptiveRouter::new`](super::AdaptiveRouter::new) checks first).
    ///
    /// ```
    /// use switchyard_layers::preroute::adaptive::{AdaptiveRouterConfig, Weights};
    ///
    /// let err = AdaptiveRouterConfig::new(["a"]).with_weights(Weights::new(0.9, 0.3)).check().unwrap_err();
    /// assert!(err.to_string().contains("weights: must sum to 1.0"));
    /// ```
    pub fn check(&self) -> Result<(), AdaptiveConfigError> {
        if self.available_models.is_empty() {
            return Err(AdaptiveConfigError::new("available_models: must name at least one model group"));
        }
        if let Some(blank) = self.available_models.iter().position(|m| m.trim().is_empty()) {
            return Err(AdaptiveConfigError::new(format!("available_models[{blank}]: must not be empty")));
        }
        for (i, m) in self.available_models.iter().enumerate() {
            if self.available_models[..i].contains(m) {
                return Err(AdaptiveConfigError::new(format!("available_models[{i}]: `{m}` is listed twice")));
            }
        }
        let cells = self.available_models.len().saturating_mul(RequestClass::ALL.len());
        if cells > MAX_CELLS {
            return Err(AdaptiveConfigError::new(format!(
                "available_models: {} groups × {} request classes is {cells} posteriors, above the limit of {MAX_CELLS}",
                self.available_models.len(),
                RequestClass::ALL.len()
            )));
        }
        let Weights { quality, cost } = self.weights;
        for (key, v) in [("weights.quality", quality), ("weights.cost", cost)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(AdaptiveConfigError::new(format!("{key}: must be between 0 and 1, got {v}")));
            }
        }
        if (quality + cost - 1.0).abs() > 0.001 {
            return Err(AdaptiveConfigError::new(format!(
                "weights: must sum to 1.0, got quality={quality} + cost={cost} = {}",
                quality + cost
            )));
        }
        if !self.decay_half_life.is_finite() || self.decay_half_life < 0.0 || self.decay_half_life > 1e9 {
            return Err(AdaptiveConfigError::new(format!(
                "decay_half_life: must be a number of seconds >= 0, got {}",
                self.decay_half_life
            )));
        }
        if !self.sample_cap.is_finite() || self.sample_cap <= COLD_START_MASS {
            return Err(AdaptiveConfigError::new(format!(
                "sample_cap: must be above the prior's mass ({COLD_START_MASS}), got {}",
                self.sample_cap
            )));
        }
        if !self.sync_interval.is_finite() || !(0.01..=3600.0).contains(&self.sync_interval) {
            return Err(AdaptiveConfigError::new(format!(
                "sync_interval: must be between 0.01 and 3600 seconds, got {}",
                self.sync_interval
            )));
        }
        Ok(())
    }
}

/// LiteLLM's `model_info.adaptive_router_preferences` of a group: its quality tier (1 to 3) and
/// the request classes it is strong at, which set its prior.
///
/// ```
/// use switchyard_layers::preroute::adaptive::{AdaptivePreferences, RequestClass};
///
/// let prefs: AdaptivePreferences = serde_json::from_str(r#"{"quality_tier": 3, "strengths": ["code_generation"]}"#)?;
/// assert_eq!(prefs.strengths, [RequestClass::CodeGeneration]);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct AdaptivePreferences {
    /// 1, 2 or 3 (prior means 0.3, 0.5, 0.7).
    pub quality_tier: u8,
    /// Classes whose prior mean gets LiteLLM's bonus of 0.3 (capped at 0.95).
    #[serde(default)]
    pub strengths: Vec<RequestClass>,
    /// Keys Switchyard does not read.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

impl Default for AdaptivePreferences {
    /// LiteLLM's default for a group without preferences: tier 2, no strengths.
    fn default() -> Self {
        Self::new(2)
    }
}

impl AdaptivePreferences {
    /// A group of `quality_tier` without strengths.
    pub fn new(quality_tier: u8) -> Self {
        Self { quality_tier, strengths: Vec::new(), other: BTreeMap::new() }
    }

    /// With the classes the group is strong at.
    pub fn with_strengths(mut self, strengths: impl IntoIterator<Item = RequestClass>) -> Self {
        self.strengths = strengths.into_iter().collect();
        self
    }

    /// The prior mean for `class` (LiteLLM's `initial_cell`), `None` for a tier outside 1..=3.
    pub fn prior_mean(&self, class: RequestClass) -> Option<f64> {
        let base = match self.quality_tier {
            1 => 0.3,
            2 => 0.5,
            3 => 0.7,
            _ => return None,
        };
        let bonus = if self.strengths.contains(&class) { 0.3 } else { 0.0 };
        Some(f64::min(0.95, base + bonus))
    }
}

/// A group the adaptive router may choose: its preferences and its input price.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AdaptiveCandidate {
    /// The model group.
    pub group: String,
    /// Its preferences (LiteLLM's default, tier 2, when it declares none).
    pub preferences: AdaptivePreferences,
    /// USD per input token (the cheapest deployment's); `None` when unknown.
    pub input_cost_per_token: Option<f64>,
}

impl AdaptiveCandidate {
    /// `group` with `preferences`, price unknown.
    pub fn new(group: impl Into<String>, preferences: AdaptivePreferences) -> Self {
        Self { group: group.into(), preferences, input_cost_per_token: None }
    }

    /// With its input price.
    pub fn with_input_cost(mut self, cost: Option<f64>) -> Self {
        self.input_cost_per_token = cost;
        self
    }
}
