//! RPM / TPM: deployments already at a limit in the sliding 60 s window are skipped.
//!
//! One read (`StateStore::usage`) of the candidates that declare a limit. The check only skips;
//! the select layer reserves the request slot and the token estimate atomically on the chosen
//! deployment (a filter cannot: another request may take the last slot between the read and the
//! call), and moves on to the next pick if it lost that race. A deployment at its limit is never
//! cooled down: the limit is ours, not a failure of the deployment.

use std::sync::Arc;

use crate::{
    Candidates, Deployment, StateStore,
    rate_limits::{limited, limits},
};

/// Drops the candidates whose window has no room for one more request of `tokens`
/// (`requests >= rpm`, or `tokens_used + tokens > tpm`); returns the dropped ones.
pub(crate) async fn filter(store: &StateStore, list: &mut Candidates, tokens: u64) -> Vec<Arc<Deployment>> {
    let ids: Vec<_> = list.iter().filter(|d| limited(d)).map(|d| d.id.clone()).collect();
    let usage = store.usage(&ids).await;
    let mut full = Vec::new();
    let mut read = usage.into_iter();
    list.retain(|d| {
        if !limited(d) {
            return true;
        }
        let admits = read.next().is_none_or(|u| limits(d).admits(u, tokens));
        if !admits {
            full.push(d.clone());
        }
        admits
    });
    full
}
