use std::{fmt, sync::Arc};

use tower_layer::Layer;

use super::{Cooldown, CooldownConfig, CooldownEntry};
use crate::{Registry, StateStore};

/// Applies [`Cooldown`]; see the [module docs](super).
#[derive(Clone)]
pub struct CooldownLayer {
    pub(crate) registry: Arc<Registry>,
    pub(crate) store: Arc<StateStore>,
    pub(crate) config: Arc<CooldownConfig>,
}

impl fmt::Debug for CooldownLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CooldownLayer").field("config", &self.config).finish_non_exhaustive()
    }
}

impl CooldownLayer {
    /// Cooldowns for `registry`'s deployments, kept in `store`.
    pub fn new(registry: Arc<Registry>, store: Arc<StateStore>, config: CooldownConfig) -> Self {
        Self { registry, store, config: Arc::new(config) }
    }

    /// Every deployment cooling down or half-open, with its group: the cooldown state operators
    /// want to see (soonest deadline first).
    pub async fn list(&self) -> Vec<CooldownEntry> {
        list(&self.registry, &self.store).await
    }
}

/// Every deployment cooling down or half-open in `store`, with its group from `registry`.
pub async fn list(registry: &Registry, store: &StateStore) -> Vec<CooldownEntry> {
    store
        .all_cooldowns()
        .await
        .into_iter()
        .map(|(deployment, state)| CooldownEntry {
            group: registry.deployment(&deployment).map(|d| d.group.clone()),
            deployment,
            state,
        })
        .collect()
}

impl<S> Layer<S> for CooldownLayer {
    type Service = Cooldown<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Cooldown { inner, layer: Arc::new(self.clone()) }
    }
}
