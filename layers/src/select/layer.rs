use std::{
    fmt,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use rand::{RngCore, SeedableRng, rngs::SmallRng};
use tower_layer::Layer;

use super::{Select, Strategies};
use crate::{Registry, StateStore};

/// Hands out RNG seeds: a root seed plus a counter, mixed. Every service clone gets its own
/// stream (a cloned RNG would repeat its parent's picks), and a fixed root makes runs reproducible.
#[derive(Debug)]
pub(crate) struct SeedSource {
    root: u64,
    counter: AtomicU64,
}

impl SeedSource {
    pub(crate) fn new(root: u64) -> Self {
        Self { root, counter: AtomicU64::new(0) }
    }

    pub(crate) fn rng(&self) -> SmallRng {
        // splitmix64 of root + n: well-spread seeds for consecutive n.
        let mut z =
            self.root.wrapping_add(self.counter.fetch_add(1, Ordering::Relaxed).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        SmallRng::seed_from_u64(z ^ (z >> 31))
    }
}

/// Applies [`Select`]: picks the deployment of each attempt. See the [module docs](super).
#[derive(Clone)]
pub struct SelectLayer {
    pub(crate) registry: Arc<Registry>,
    pub(crate) store: Arc<StateStore>,
    pub(crate) strategies: Arc<Strategies>,
    pub(crate) seeds: Arc<SeedSource>,
}

impl fmt::Debug for SelectLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelectLayer").field("strategies", &self.strategies).finish_non_exhaustive()
    }
}

impl SelectLayer {
    /// Selection over `registry`'s groups with state in `store`, seeded from the OS.
    pub fn new(registry: Arc<Registry>, store: Arc<StateStore>, strategies: impl Into<Strategies>) -> Self {
        Self {
            registry,
            store,
            strategies: Arc::new(strategies.into()),
            seeds: Arc::new(SeedSource::new(SmallRng::from_os_rng().next_u64())),
        }
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
