//! RPM / TPM: deployments already at a limit in the sliding 60 s window are skipped.
//!
//! One read (`StateStore::usage`) of the candidates that declare a limit. The check only skips;
//! the select layer reserves the request slot and the token estimate atomically on the chosen
//! deployment (a filter cannot: another request may take the last slot between the read and the
//! call), and moves on to the next pick if it lost that race. A deployment at its limit is never
//! cooled down: the limit is ours, not a failure of the deployment.

use std::{sync::Arc, time::Duration};

use crate::{
    BoxError, Candidates, Deployment, Group, RouteError, RouteErrorKind, StateStore,
    state::{Limits, StoreError},
};

fn limits(d: &Deployment) -> Limits {
    Limits { rpm: d.rpm, tpm: d.tpm }
}

fn limited(d: &Deployment) -> bool {
    d.rpm.is_some() || d.tpm.is_some()
}

/// Drops the candidates whose window has no room for one more request of `tokens`
/// (`requests >= rpm`, or `tokens_used + tokens > tpm`); returns the dropped ones.
pub(crate) async fn filter(
    store: &StateStore,
    list: &mut Candidates,
    tokens: u64,
) -> Result<Vec<Arc<Deployment>>, StoreError> {
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
    Ok(full)
}

/// The soonest one of `full` has room for a request of `tokens` again. Reads each deployment's
/// window once more: this is the failure path only.
pub(crate) async fn soonest_room(
    store: &StateStore,
    full: &[Arc<Deployment>],
    tokens: u64,
) -> Result<Option<Duration>, StoreError> {
    let mut soonest: Option<Duration> = None;
    for d in full {
        let wait = store.room_in(&d.id, limits(d), tokens).await;
        soonest = Some(soonest.map_or(wait, |s| s.min(wait)));
    }
    Ok(soonest)
}

/// Every candidate is at a limit: [`RouteErrorKind::RateLimited`] with the time until the first
/// has room, when known (the general fallbacks take over; a gateway answers 429 with Retry-After).
pub(crate) fn all_limited(group: &Group, soonest: Option<Duration>) -> BoxError {
    let mut e = RouteError::new(
        RouteErrorKind::RateLimited,
        format!("every deployment of `{}` is at its RPM/TPM limit", group.name()),
    )
    .with_group(group.name().clone());
    if let Some(wait) = soonest {
        e = e.with_retry_after(wait);
    }
    e.into()
}
