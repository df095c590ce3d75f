//! Seeds for per-clone random number generators.
//!
//! Services are cloned per request (axum does), and a cloned RNG repeats its parent's draws. A
//! [`SeedSource`] hands every clone its own generator. From a fixed root ([`SeedSource::new`]) it
//! counts the generators and mixes root and count with splitmix64: reproducible in tests and
//! simulations. Seeded from the operating system ([`SeedSource::from_os`], the default) it draws
//! each seed from a generator per thread (itself seeded from the OS once per thread), so handing
//! out a generator touches no memory shared between threads: the counter would be an atomic
//! increment on one cache line for every call on every core.
//!
//! ```
//! use rand::RngCore;
//! use switchyard_layers::seed::SeedSource;
//!
//! let (a, b) = (SeedSource::new(7), SeedSource::new(7));
//! assert_eq!(a.rng().next_u64(), b.rng().next_u64());
//! assert_ne!(a.rng().next_u64(), a.rng().next_u64());
//! ```

use std::{
    cell::RefCell,
    sync::atomic::{AtomicU64, Ordering},
};

use rand::{RngCore, SeedableRng, rngs::SmallRng};

thread_local! {
    /// The per-thread generator [`SeedSource::from_os`] draws seeds from.
    static THREAD_SEEDS: RefCell<SmallRng> = RefCell::new(SmallRng::from_os_rng());
}

/// Hands out independent, reproducible RNGs; see the [module docs](self).
#[derive(Debug)]
pub struct SeedSource {
    root: u64,
    counter: AtomicU64,
    /// Seeds come from the per-thread generator (not reproducible) instead of the counter.
    per_thread: bool,
}

impl SeedSource {
    /// A source with a fixed root (reproducible).
    pub const fn new(root: u64) -> Self {
        Self { root, counter: AtomicU64::new(0), per_thread: false }
    }

    /// A source seeded from the operating system.
    pub fn from_os() -> Self {
        Self { per_thread: true, ..Self::new(SmallRng::from_os_rng().next_u64()) }
    }

    /// The next generator.
    pub fn rng(&self) -> SmallRng {
        // The per-thread generator is gone while the thread's locals are torn down: the counter
        // serves then.
        if self.per_thread
            && let Ok(seed) = THREAD_SEEDS.try_with(|g| g.borrow_mut().next_u64())
        {
            return SmallRng::seed_from_u64(seed ^ self.root);
        }
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
    use std::collections::HashSet;

    use super::*;

    /// The first draw of each of `n` generators from `source`.
    fn first_draws(source: &SeedSource, n: usize) -> Vec<u64> {
        (0..n).map(|_| source.rng().next_u64()).collect()
    }

    #[test]
    fn os_seeded_generators_differ_within_and_across_threads() {
        let source = std::sync::Arc::new(SeedSource::from_os());
        let mut seen: HashSet<u64> = first_draws(&source, 1_000).into_iter().collect();
        assert_eq!(seen.len(), 1_000, "every generator on one thread is its own");
        let other = {
            let source = source.clone();
            std::thread::spawn(move || first_draws(&source, 1_000)).join().expect("no panic")
        };
        seen.extend(other);
        assert_eq!(seen.len(), 2_000, "another thread draws other generators");
    }

    #[test]
    fn fixed_roots_repeat_and_other_roots_differ() {
        assert_eq!(first_draws(&SeedSource::new(7), 100), first_draws(&SeedSource::new(7), 100));
        assert_ne!(first_draws(&SeedSource::new(7), 100), first_draws(&SeedSource::new(8), 100));
    }
}
