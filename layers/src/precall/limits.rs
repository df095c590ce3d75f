//! RPM / TPM: deployments already at an enforced limit in the sliding 60 s window are skipped.
//!
//! Which limits are enforced is LiteLLM's reading ([`EnforcedLimits`]): `rpm` with the pre-call
//! checks, both with `enforce_rate_limits`; otherwise the check does not run. One read
//! (`StateStore::usage`) of the candidates that declare an enforced limit. The check only skips;
//! the select layer reserves the request slot and the token estimate atomically on the chosen
//! deployment (a filter cannot: another request may take the last slot between the read and the
//! call), and moves on to the next pick if it lost that race. A deployment at its limit is never
//! cooled down: the limit is ours, not a failure of the deployment.

use std::sync::Arc;

use crate::{
    Candidates, Deployment, StateStore,
    rate_limits::{limited, limits},
    state::EnforcedLimits,
};

/// Drops the candidates whose window has no room for one more request of `tokens` under their
/// `enforced` limits (`requests >= rpm`, or `tokens_used + tokens > tpm`); returns the dropped ones.
pub(crate) async fn filter(
    store: &StateStore,
    list: &mut Candidates,
    tokens: u64,
    enforced: EnforcedLimits,
) -> Vec<Arc<Deployment>> {
    let enforced_on = |d: &Deployment| limited(d, enforced);
    let ids: Vec<_> = list.iter().filter(|d| enforced_on(d)).map(|d| d.id.clone()).collect();
    let usage = store.usage(&ids).await;
    let mut full = Vec::new();
    let mut read = usage.into_iter();
    list.retain(|d| {
        if !enforced_on(d) {
            return true;
        }
        let admits = read.next().is_none_or(|u| limits(d, enforced).admits(u, tokens));
        if !admits {
            full.push(d.clone());
        }
        admits
    });
    full
}
