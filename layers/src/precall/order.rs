//! Order tiers: only the lowest `order` among the remaining candidates serves.
//!
//! Deployments without an `order` come after every ordered one: they serve only when no ordered
//! deployment is left (LiteLLM drops them whenever any deployment has an order). Run last, after
//! every other check, so a tier whose deployments are all cooling down, excluded after a failure,
//! at a limit or filtered out gives way to the next tier. Together with the retry layer's
//! exclusion of a failed deployment this fails over tier by tier inside the group, and never
//! picks the failed primary again in the same call.

use crate::Candidates;

/// Keeps the lowest tier.
pub(crate) fn filter(list: &mut Candidates) {
    let Some(lowest) = list.iter().filter_map(|d| d.order).min() else { return };
    if list.iter().any(|d| d.order != Some(lowest)) {
        list.retain(|d| d.order == Some(lowest));
    }
}
