use rand::RngCore;

use super::{Selection, Strategy, min_by_key_random_tie};

/// `least-busy`: the candidate with the fewest requests in flight on this replica, ties broken
/// at random. Counts are held by drop guards on the response body, so errors, cancellations and
/// abandoned streams can never make them drift.
#[derive(Clone, Copy, Debug, Default)]
pub struct LeastBusy;

impl Strategy for LeastBusy {
    fn name(&self) -> &'static str {
        "least-busy"
    }

    fn pick(&self, s: &Selection<'_>, rng: &mut dyn RngCore) -> Option<usize> {
        min_by_key_random_tie(s.candidates.len(), rng, |i| Some(s.local.in_flight(&s.candidates[i].id) as f64))
    }
}
