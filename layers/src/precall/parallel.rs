//! Parallel requests: non-blocking admission against each deployment's `max_parallel_requests`
//! (else the router's `default_max_parallel_requests`), per replica.
//!
//! A deployment with as many requests in flight as its limit is skipped. The slot itself is taken
//! atomically by the select layer on the chosen deployment (`LocalState::try_begin`) and rides on
//! the response body, so it is held until the last streamed chunk and released when the body ends,
//! fails or is dropped. When every candidate is full, the layer fails fast, or waits up to
//! `wait_for_parallel_slot` for a slot: woken by the release of a slot (a `Notify` in the
//! guard's `Drop`), never by polling.

use std::{pin::Pin, sync::Arc, time::Duration};

use futures_util::future::select_all;
use tokio::time::Instant;

use crate::{
    BoxError, Candidates, Deployment, Group, RouteError, RouteErrorKind,
    state::{LocalState, SlotWatch},
};

/// `d`'s parallel-request limit.
pub(crate) fn limit(d: &Deployment, default: Option<u32>) -> Option<u64> {
    d.max_parallel_requests.or(default).map(u64::from)
}

/// Drops the candidates with `limit` requests in flight on this replica; returns them.
pub(crate) fn filter(local: &LocalState, list: &mut Candidates, default: Option<u32>) -> Vec<Arc<Deployment>> {
    let mut full = Vec::new();
    list.retain(|d| {
        let Some(limit) = limit(d, default) else { return true };
        let free = local.in_flight(&d.id) < limit;
        if !free {
            full.push(d.clone());
        }
        free
    });
    full
}

/// Waits until one of `full` has a free slot, or `until`. Returns the ones with a free slot
/// (empty when the wait ran out).
pub(crate) async fn wait_for_slot(
    local: &LocalState,
    full: Vec<Arc<Deployment>>,
    default: Option<u32>,
    until: Instant,
) -> Vec<Arc<Deployment>> {
    let watches: Vec<(Arc<Deployment>, u64, SlotWatch)> = full
        .into_iter()
        .filter_map(|d| {
            let limit = limit(&d, default)?;
            let watch = local.watch_slots(&d.id);
            Some((d, limit, watch))
        })
        .collect();
    loop {
        // Enable every wake-up before reading the counts: a slot released after the read wakes us.
        let mut freed: Vec<Pin<Box<tokio::sync::futures::Notified<'_>>>> =
            watches.iter().map(|(_, _, w)| Box::pin(w.notified())).collect();
        for f in &mut freed {
            f.as_mut().enable();
        }
        let free: Vec<Arc<Deployment>> =
            watches.iter().filter(|(_, limit, w)| w.in_flight() < *limit).map(|(d, _, _)| d.clone()).collect();
        if !free.is_empty() || freed.is_empty() {
            return free;
        }
        if tokio::time::timeout_at(until, select_all(freed)).await.is_err() {
            return Vec::new();
        }
    }
}

/// Every candidate is at its parallel-request limit: [`RouteErrorKind::RateLimited`], without
/// a Retry-After (nobody knows when a request in flight ends).
pub(crate) fn all_full(group: &Group, waited: Option<Duration>) -> BoxError {
    let waited = waited.map_or_else(String::new, |w| format!(" (waited {w:?} for a slot)"));
    RouteError::new(
        RouteErrorKind::RateLimited,
        format!("every deployment of `{}` is at its parallel-request limit{waited}", group.name()),
    )
    .with_group(group.name().clone())
    .into()
}
