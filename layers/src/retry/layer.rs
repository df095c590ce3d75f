use std::{collections::BTreeMap, fmt, sync::Arc, time::Duration};

use tower_layer::Layer;

use super::{Retry, RetryBudget, RetryPolicy};
use crate::{Registry, StateStore, seed::SeedSource};

/// Settings of the retry layer. `Default` is LiteLLM's: 2 retries, no minimum backoff, no retry
/// policies, no budget.
///
/// Two things the layer reads from the request's context rather than from here: the call's
/// deadline (set by a [`DeadlineLayer`](crate::deadline::DeadlineLayer) above, or by the caller),
/// and the fallback tables of a fallback layer above
/// ([`FallbackHint`](crate::fallback_tables::FallbackHint)), so that a failure that layer will take
/// is not retried here first.
///
/// ```
/// use std::time::Duration;
/// use switchyard_layers::retry::{RetryBudget, RetryConfig, RetryPolicy};
///
/// let config = RetryConfig::default()
///     .num_retries(3)
///     .retry_policy(RetryPolicy::new().authentication(0))
///     .group_retry_policy("gpt-4o", RetryPolicy::new().rate_limit(5))
///     .budget(RetryBudget::new(0.2, 10)?)
///     .retry_after(Duration::from_millis(100));
/// assert_eq!(config.num_retries, 3);
/// # Ok::<(), switchyard_layers::retry::RetryBudgetError>(())
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RetryConfig {
    /// Retries after a failure when nothing more specific applies (`num_retries`, default 2).
    pub num_retries: u32,
    /// Minimum wait before a retry that is not instant (`retry_after`, default 0). Not capped.
    pub retry_after: Duration,
    /// Retries per error class for every group (`retry_policy`).
    pub retry_policy: Option<RetryPolicy>,
    /// Retries per error class for one group, replacing `retry_policy` for it
    /// (`model_group_retry_policy`).
    pub group_retry_policies: BTreeMap<String, RetryPolicy>,
    /// A retry budget shared by every call through the layer (none by default).
    pub budget: Option<Arc<RetryBudget>>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            num_retries: Self::DEFAULT_NUM_RETRIES,
            retry_after: Duration::ZERO,
            retry_policy: None,
            group_retry_policies: BTreeMap::new(),
            budget: None,
        }
    }
}

impl RetryConfig {
    /// LiteLLM's default `num_retries`.
    pub const DEFAULT_NUM_RETRIES: u32 = 2;

    /// Sets the router's `num_retries`.
    pub fn num_retries(mut self, n: u32) -> Self {
        self.num_retries = n;
        self
    }

    /// Sets the minimum wait before a retry that is not instant (the router's `retry_after`).
    pub fn retry_after(mut self, min_backoff: Duration) -> Self {
        self.retry_after = min_backoff;
        self
    }

    /// Sets the retry policy for every group.
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry_policy = Some(policy);
        self
    }

    /// Sets the retry policy of one group (replacing the router's policy for that group).
    pub fn group_retry_policy(mut self, group: impl Into<String>, policy: RetryPolicy) -> Self {
        self.group_retry_policies.insert(group.into(), policy);
        self
    }

    /// Shares a retry budget across every call through the layer.
    pub fn budget(mut self, budget: impl Into<Arc<RetryBudget>>) -> Self {
        self.budget = Some(budget.into());
        self
    }

    /// The policy that applies to `names` (the group, then the name the hop targeted): the group's
    /// own policy, else the router's.
    pub(crate) fn policy_for(&self, names: [&str; 2]) -> Option<&RetryPolicy> {
        names.iter().find_map(|n| self.group_retry_policies.get(*n)).or(self.retry_policy.as_ref())
    }
}

/// The layer's settings and what the retry decisions read (the registry to resolve a group, the
/// store for cooldowns), shared by every clone of the layer and its services.
#[derive(Debug)]
pub(crate) struct RetrySetup {
    pub(crate) registry: Arc<Registry>,
    pub(crate) store: Arc<StateStore>,
    pub(crate) config: RetryConfig,
}

/// Applies [`Retry`]: retries failed attempts within the request's model group. See the
/// [module docs](super).
#[derive(Clone)]
pub struct RetryLayer {
    pub(crate) shared: Arc<RetrySetup>,
    pub(crate) seeds: Arc<SeedSource>,
}

impl fmt::Debug for RetryLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryLayer").field("config", &self.shared.config).finish_non_exhaustive()
    }
}

impl RetryLayer {
    /// Retries over `registry`'s groups, reading cooldowns from `store`, with jitter seeded from
    /// the OS.
    pub fn new(registry: Arc<Registry>, store: Arc<StateStore>, config: RetryConfig) -> Self {
        Self { shared: Arc::new(RetrySetup { registry, store, config }), seeds: Arc::new(SeedSource::from_os()) }
    }

    /// Makes the jitter reproducible from `seed` (for tests and simulations).
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seeds = Arc::new(SeedSource::new(seed));
        self
    }

    /// The settings.
    pub fn config(&self) -> &RetryConfig {
        &self.shared.config
    }
}

impl<S: Clone> Layer<S> for RetryLayer {
    type Service = Retry<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Retry::new(inner, self.clone())
    }
}
