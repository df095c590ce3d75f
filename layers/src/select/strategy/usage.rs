use rand::RngCore;

use super::{Selection, Strategy, min_by_key_random_tie};

/// `usage-based-routing` (also `usage-based-routing-v2`): the lowest TPM in the sliding window
/// among candidates with room under their RPM/TPM limits (the limit-th request passes, the next
/// does not), ties broken at random. `None` when every candidate is at a limit.
#[derive(Clone, Copy, Debug, Default)]
pub struct UsageBased;

impl Strategy for UsageBased {
    fn name(&self) -> &'static str {
        "usage-based-routing"
    }

    fn needs_usage(&self) -> bool {
        true
    }

    fn pick(&self, s: &Selection<'_>, rng: &mut dyn RngCore) -> Option<usize> {
        let usage = s.usage?;
        min_by_key_random_tie(s.candidates.len(), rng, |i| s.under_limits(i).then(|| usage[i].tokens as f64))
    }
}
