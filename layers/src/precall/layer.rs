use std::{fmt, sync::Arc};

use tower_layer::Layer;

use super::{PreCall, PreCallConfig};
use crate::{Registry, StateStore};

/// Applies [`PreCall`]: drops the candidates an attempt cannot use. See the [module docs](super).
#[derive(Clone)]
pub struct PreCallLayer {
    pub(crate) registry: Arc<Registry>,
    pub(crate) store: Arc<StateStore>,
    pub(crate) config: Arc<PreCallConfig>,
}

impl fmt::Debug for PreCallLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreCallLayer").field("config", &self.config).finish_non_exhaustive()
    }
}

impl PreCallLayer {
    /// Pre-call checks for `registry`'s groups, reading limits usage from `store`.
    pub fn new(registry: Arc<Registry>, store: Arc<StateStore>, config: PreCallConfig) -> Self {
        Self { registry, store, config: Arc::new(config) }
    }

    /// The settings.
    pub fn config(&self) -> &PreCallConfig {
        &self.config
    }
}

impl<S> Layer<S> for PreCallLayer {
    type Service = PreCall<S>;

    fn layer(&self, inner: S) -> Self::Service {
        PreCall { inner, layer: Arc::new(self.clone()) }
    }
}
