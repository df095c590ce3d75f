//! [`HealthConfig`]: what the health filter reads.

use std::{collections::HashSet, sync::Arc, time::Duration};

/// The health filter's settings.
///
/// ```
/// use std::time::Duration;
/// use switchyard_layers::health::HealthConfig;
///
/// let config = HealthConfig::new().staleness(Duration::from_secs(120)).groups(["gpt-4o"]);
/// assert!(config.filters("gpt-4o"));
/// assert!(!config.filters("claude"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HealthConfig {
    /// The filter runs (`enable_health_check_routing`); off, calls pass through untouched.
    pub enabled: bool,
    /// A record older than this says nothing (the deployment routes as healthy): LiteLLM's
    /// `health_check_staleness_threshold`, by default twice the default interval (600 s).
    pub staleness: Duration,
    /// Only these model groups are filtered (LiteLLM's `background_health_check_model_groups`);
    /// `None`: every group.
    pub groups: Option<Arc<HashSet<Arc<str>>>>,
}

impl Default for HealthConfig {
    fn default() -> Self {
        Self { enabled: true, staleness: Self::DEFAULT_STALENESS, groups: None }
    }
}

impl HealthConfig {
    /// LiteLLM's default staleness threshold: the default interval (300 s) times 2.
    pub const DEFAULT_STALENESS: Duration = Duration::from_secs(600);

    /// The filter on, with the defaults: staleness 600 s, every group.
    pub fn new() -> Self {
        Self::default()
    }

    /// The filter off: every call passes through (the routing stack's default).
    pub fn disabled() -> Self {
        Self { enabled: false, ..Self::default() }
    }

    /// Turns the filter on or off.
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Sets the staleness threshold.
    pub fn staleness(mut self, staleness: Duration) -> Self {
        self.staleness = staleness;
        self
    }

    /// Filters only these model groups.
    pub fn groups<I: IntoIterator<Item = S>, S: Into<Arc<str>>>(mut self, groups: I) -> Self {
        self.groups = Some(Arc::new(groups.into_iter().map(Into::into).collect()));
        self
    }

    /// Whether the filter applies to `group`.
    pub fn filters(&self, group: &str) -> bool {
        self.enabled && self.groups.as_ref().is_none_or(|g| g.contains(group))
    }
}
