use rand::{Rng, RngCore};

use super::{Selection, Strategy};
use crate::deployment::WeightBasis;

/// `simple-shuffle`: weighted random choice.
///
/// The weight field is decided once for the whole group ([`WeightBasis`]: `weight` if any
/// deployment sets it, else `rpm`, else `tpm`), never from whichever candidate happens to be
/// first. A deployment without the field weighs 0 and is never picked while a positive weight
/// remains; when every remaining weight is 0, the pick is uniform.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimpleShuffle;

impl Strategy for SimpleShuffle {
    fn name(&self) -> &'static str {
        "simple-shuffle"
    }

    fn pick(&self, s: &Selection<'_>, rng: &mut dyn RngCore) -> Option<usize> {
        let n = s.candidates.len();
        if n <= 1 {
            return (n == 1).then_some(0);
        }
        let basis = s.group.weight_basis();
        if basis == WeightBasis::Uniform {
            return Some(rng.random_range(0..n));
        }
        let total: f64 = s.candidates.iter().map(|d| basis.weight(d)).sum();
        if !(total > 0.0 && total.is_finite()) {
            return Some(rng.random_range(0..n));
        }
        let mut point = rng.random::<f64>() * total;
        let mut last_positive = 0;
        for (i, d) in s.candidates.iter().enumerate() {
            let w = basis.weight(d);
            if w > 0.0 {
                if point < w {
                    return Some(i);
                }
                point -= w;
                last_positive = i;
            }
        }
        // Rounding left the point just past the end: the last positive weight owns it.
        Some(last_positive)
    }
}
