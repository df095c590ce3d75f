//! Seeds for per-clone random number generators.

use std::sync::atomic::{AtomicU64, Ordering};

use rand::{SeedableRng, rngs::SmallRng};

/// Hands out RNGs: a root seed plus a counter, mixed with splitmix64. Every service clone gets
/// its own sequence (a cloned RNG would repeat its parent's draws), and a fixed root makes a run
/// reproducible as long as clones are made in the same order.
#[derive(Debug)]
pub(crate) struct SeedSource {
    root: u64,
    counter: AtomicU64,
}

impl SeedSource {
    pub(crate) const fn new(root: u64) -> Self {
        Self { root, counter: AtomicU64::new(0) }
    }

    pub(crate) fn rng(&self) -> SmallRng {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        SmallRng::seed_from_u64(splitmix64(self.root.wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15))))
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use rand::RngCore;

    use super::*;

    #[test]
    fn consecutive_rngs_differ_and_roots_reproduce() {
        let a = SeedSource::new(1);
        let b = SeedSource::new(1);
        let (a0, a1) = (a.rng().next_u64(), a.rng().next_u64());
        assert_ne!(a0, a1);
        assert_eq!((a0, a1), (b.rng().next_u64(), b.rng().next_u64()));
    }
}
