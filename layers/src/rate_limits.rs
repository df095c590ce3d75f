//! RPM / TPM arithmetic shared by the pre-call check (which skips deployments at an enforced
//! limit) and the select layer (which reserves atomically and may find every pick full): which
//! limits are enforced, when a full deployment has room again, and the error that says every one
//! is full.

use std::{sync::Arc, time::Duration};

use crate::{
    BoxError, Deployment, Group, RouteError, RouteErrorKind, StateStore,
    state::{EnforcedLimits, Limits},
};

/// The limits `d` declares that `enforced` enforces.
pub(crate) fn limits(d: &Deployment, enforced: EnforcedLimits) -> Limits {
    enforced.limits(d.rpm, d.tpm)
}

/// Whether `d` declares an RPM or TPM limit that `enforced` enforces.
pub(crate) fn limited(d: &Deployment, enforced: EnforcedLimits) -> bool {
    let l = limits(d, enforced);
    l.rpm.is_some() || l.tpm.is_some()
}

/// The soonest one of `full` has room for a request of `tokens` again under its `enforced`
/// limits. Reads each deployment's window once more: this is the failure path only.
pub(crate) async fn soonest_room(
    store: &StateStore,
    full: &[Arc<Deployment>],
    tokens: u64,
    enforced: EnforcedLimits,
) -> Option<Duration> {
    let mut soonest: Option<Duration> = None;
    for d in full.iter().filter(|d| limited(d, enforced)) {
        let wait = store.room_in(&d.id, limits(d, enforced), tokens).await;
        soonest = Some(soonest.map_or(wait, |s| s.min(wait)));
    }
    soonest
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
