use std::{fmt, sync::Arc};

use tower_layer::Layer;

use super::{Health, HealthConfig};
use crate::{Registry, StateStore};

/// Applies [`Health`]: drops the candidates a fresh health probe found unhealthy, failing open
/// when that would drop them all; see the [module docs](super).
#[derive(Clone)]
pub struct HealthLayer {
    pub(crate) registry: Arc<Registry>,
    pub(crate) store: Arc<StateStore>,
    pub(crate) config: Arc<HealthConfig>,
}

impl fmt::Debug for HealthLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthLayer").field("config", &self.config).finish_non_exhaustive()
    }
}

impl HealthLayer {
    /// The health filter for `registry`'s groups, reading the probe records in `store`.
    pub fn new(registry: Arc<Registry>, store: Arc<StateStore>, config: HealthConfig) -> Self {
        Self { registry, store, config: Arc::new(config) }
    }

    /// The settings.
    pub fn config(&self) -> &HealthConfig {
        &self.config
    }
}

impl<S> Layer<S> for HealthLayer {
    type Service = Health<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Health { inner, layer: Arc::new(self.clone()) }
    }
}
