use std::{fmt, sync::Arc};

use tower_layer::Layer;

use super::{Select, Strategies};
use crate::{Registry, StateStore, seed::SeedSource};

/// Applies [`Select`]: picks the deployment of each attempt. See the [module docs](super).
#[derive(Clone)]
pub struct SelectLayer {
    pub(crate) registry: Arc<Registry>,
    pub(crate) store: Arc<StateStore>,
    pub(crate) strategies: Arc<Strategies>,
    pub(crate) seeds: Arc<SeedSource>,
    /// Declared `rpm` / `tpm` limits refuse requests under every strategy.
    pub(crate) enforce_rate_limits: bool,
}

impl fmt::Debug for SelectLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelectLayer")
            .field("strategies", &self.strategies)
            .field("enforce_rate_limits", &self.enforce_rate_limits)
            .finish_non_exhaustive()
    }
}

impl SelectLayer {
    /// Selection over `registry`'s groups with state in `store`, seeded from the OS.
    pub fn new(registry: Arc<Registry>, store: Arc<StateStore>, strategies: impl Into<Strategies>) -> Self {
        Self {
            registry,
            store,
            strategies: Arc::new(strategies.into()),
            seeds: Arc::new(SeedSource::from_os()),
            enforce_rate_limits: false,
        }
    }

    /// `enforce_rate_limits`: reserve every pick against its declared `rpm` and `tpm` limits,
    /// whatever the strategy (default off: as LiteLLM, only the strategies that read usage
    /// enforce them, plus what a pre-call layer above enforces,
    /// [`RouteCtx::enforced_limits`](crate::RouteCtx::enforced_limits)).
    pub fn enforce_rate_limits(mut self, on: bool) -> Self {
        self.enforce_rate_limits = on;
        self
    }

    /// Makes every pick reproducible from `seed` (for tests, benchmarks and simulations).
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seeds = Arc::new(SeedSource::new(seed));
        self
    }
}

impl<S> Layer<S> for SelectLayer {
    type Service = Select<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Select::new(inner, self.clone())
    }
}
