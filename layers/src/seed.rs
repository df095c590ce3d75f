//! Seeds for per-clone random number generators.
//!
//! Services are cloned per request (axum does), and a cloned RNG repeats its parent's draws. A
//! [`SeedSource`] hands every clone its own generator from a root seed plus a counter, mixed with
//! splitmix64: picks are independent in production and reproducible from a fixed root in tests.
//!
//! ```
//! use rand::RngCore;
//! use switchyard_layers::seed::SeedSource;
//!
//! let (a, b) = (SeedSource::new(7), SeedSource::new(7));
//! assert_eq!(a.rng().next_u64(), b.rng().next_u64());
//! assert_ne!(a.rng().next_u64(), a.rng().next_u64());
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

use rand::{RngCore, SeedableRng, rngs::SmallRng};

/// Hands out independent, reproducible RNGs; see the [module docs](self).
#[derive(Debug)]
pub struct SeedSource {
    root: u64,
    counter: AtomicU64,
}

impl SeedSource {
    /// A source with a fixed root (reproducible).
    pub const fn new(root: u64) -> Self {
        Self { root, counter: AtomicU64::new(0) }
    }

    /// A source seeded from the operating system.
    pub fn from_os() -> Self {
        Self::new(SmallRng::from_os_rng().next_u64())
    }

    /// The next generator.
    pub fn rng(&self) -> SmallRng {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        SmallRng::seed_from_u64(splitmix64(self.root.wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15))))
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
