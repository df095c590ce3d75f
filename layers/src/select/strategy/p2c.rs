use rand::{Rng, RngCore};

use super::{Selection, Strategy};

/// `p2c-peak-ewma` (beyond LiteLLM): power of two choices. Two distinct candidates are drawn at
/// random and the one with the lower load wins, where load is the peak-EWMA latency estimate
/// times (in flight + 1), plus a large penalty while a 429's Retry-After runs. O(1) per pick and
/// robust to stale information (Mitzenmacher; tower's and linkerd's balancers).
#[derive(Clone, Copy, Debug, Default)]
pub struct P2cPeakEwma;

impl Strategy for P2cPeakEwma {
    fn name(&self) -> &'static str {
        "p2c-peak-ewma"
    }

    fn pick(&self, s: &Selection<'_>, rng: &mut dyn RngCore) -> Option<usize> {
        let n = s.candidates.len();
        if n <= 1 {
            return (n == 1).then_some(0);
        }
        let a = rng.random_range(0..n);
        let mut b = rng.random_range(0..n - 1);
        if b >= a {
            b += 1;
        }
        let load = |i: usize| s.local.peak_ewma_load(&s.candidates[i].id);
        Some(if load(b) < load(a) { b } else { a })
    }
}
