//! Health-probe results and probe leases: what a background health check found about each
//! deployment ([`HealthRecord`]), and the lease that makes one replica probe a deployment per
//! interval. The memory backend keeps them in [`HealthState`]; the Redis backend keeps a mirror
//! of the shared records in one too.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering::Relaxed},
    },
    time::Duration,
};

use tokio::time::Instant;

use crate::DeploymentId;

/// A health probe's verdict on one deployment, with when it was made.
///
/// A record older than the staleness threshold says nothing: readers treat the deployment as of
/// unknown health (and route to it), LiteLLM's rule.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HealthRecord {
    /// The probe succeeded.
    pub healthy: bool,
    /// When the probe ended (on this replica's clock; a record read from Redis is placed by its
    /// age on the server's clock).
    pub checked_at: Instant,
    /// How long the probe took.
    pub latency: Duration,
    /// The upstream status of a failed probe, if it got one.
    pub status: Option<u16>,
    /// Why the probe failed (redacted, never a secret); empty when healthy.
    pub reason: Arc<str>,
}

impl HealthRecord {
    /// A verdict made now.
    pub fn new(healthy: bool, latency: Duration, status: Option<u16>, reason: impl Into<Arc<str>>) -> Self {
        Self { healthy, checked_at: Instant::now(), latency, status, reason: reason.into() }
    }

    /// A verdict made at `checked_at`.
    pub fn at(mut self, checked_at: Instant) -> Self {
        self.checked_at = checked_at;
        self
    }

    /// How old the verdict is at `now`.
    pub fn age(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.checked_at)
    }

    /// Whether the verdict still counts at `now`: younger than `staleness`.
    pub fn is_fresh(&self, staleness: Duration, now: Instant) -> bool {
        self.age(now) < staleness
    }
}

#[derive(Debug)]
struct Entry {
    record: HealthRecord,
    /// Dropped when read after this (the shared record's TTL).
    expires: Instant,
}

/// Health records and probe leases in memory: one entry per deployment probed (bounded by the
/// deployments of the config), expired entries dropped when read.
#[derive(Debug, Default)]
pub(crate) struct HealthState {
    records: super::IdMap<Entry>,
    leases: super::IdMap<Instant>,
    /// Records that say "unhealthy" (fresh or not): the filter skips its read when none does.
    unhealthy: AtomicUsize,
}

impl HealthState {
    pub(crate) fn may_have_unhealthy(&self) -> bool {
        self.unhealthy.load(Relaxed) > 0
    }

    pub(crate) fn health(&self, ids: &[DeploymentId]) -> Vec<Option<HealthRecord>> {
        let now = Instant::now();
        ids.iter()
            .map(|id| {
                let found = self.records.get(id).map(|e| (e.expires > now).then(|| e.record.clone()));
                match found {
                    Some(Some(record)) => Some(record),
                    Some(None) => {
                        if let Some((_, e)) = self.records.remove_if(id, |_, e| e.expires <= now)
                            && !e.record.healthy
                        {
                            self.unhealthy.fetch_sub(1, Relaxed);
                        }
                        None
                    }
                    None => None,
                }
            })
            .collect()
    }

    /// Every record not expired, by deployment id.
    pub(crate) fn all(&self) -> Vec<(DeploymentId, HealthRecord)> {
        let now = Instant::now();
        let mut all: Vec<_> =
            self.records.iter().filter(|e| e.expires > now).map(|e| (e.key().clone(), e.record.clone())).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Stores `record` unless a newer one is already there; kept for `ttl` from now.
    pub(crate) fn put(&self, id: &DeploymentId, record: HealthRecord, ttl: Duration) {
        let expires = Instant::now() + ttl;
        let healthy = record.healthy;
        let mut was_unhealthy = None;
        match self.records.entry(id.clone()) {
            dashmap::mapref::entry::Entry::Occupied(mut e) => {
                if e.get().record.checked_at > record.checked_at {
                    return;
                }
                was_unhealthy = Some(!e.get().record.healthy);
                e.insert(Entry { record, expires });
            }
            dashmap::mapref::entry::Entry::Vacant(e) => {
                e.insert(Entry { record, expires });
            }
        }
        match (was_unhealthy, healthy) {
            (None | Some(false), false) => {
                self.unhealthy.fetch_add(1, Relaxed);
            }
            (Some(true), true) => {
                self.unhealthy.fetch_sub(1, Relaxed);
            }
            _ => {}
        }
    }

    /// Takes the probe lease of `id` for `hold` unless another holder's lease runs.
    pub(crate) fn claim_lease(&self, id: &DeploymentId, hold: Duration) -> bool {
        let now = Instant::now();
        let mut lease = self.leases.entry(id.clone()).or_insert(now);
        if *lease > now {
            return false;
        }
        *lease = now + hold;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn records_expire_and_the_unhealthy_count_follows() {
        let state = HealthState::default();
        let id = DeploymentId::from("a");
        let ids = std::slice::from_ref(&id);
        state.put(&id, HealthRecord::new(false, Duration::from_millis(5), Some(500), "boom"), Duration::from_secs(10));
        assert!(state.may_have_unhealthy());
        assert!(!state.health(ids)[0].as_ref().unwrap().healthy);
        tokio::time::advance(Duration::from_secs(1)).await;
        state.put(&id, HealthRecord::new(true, Duration::from_millis(5), None, ""), Duration::from_secs(10));
        assert!(!state.may_have_unhealthy());
        state.put(&id, HealthRecord::new(false, Duration::ZERO, None, "x"), Duration::from_secs(10));
        assert!(state.may_have_unhealthy());
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(state.health(ids), vec![None]);
        assert!(!state.may_have_unhealthy(), "an expired record is dropped when read");
    }

    #[tokio::test(start_paused = true)]
    async fn an_older_record_never_replaces_a_newer_one() {
        let state = HealthState::default();
        let id = DeploymentId::from("a");
        let old = HealthRecord::new(false, Duration::ZERO, None, "old");
        tokio::time::advance(Duration::from_secs(1)).await;
        state.put(&id, HealthRecord::new(true, Duration::ZERO, None, ""), Duration::from_secs(60));
        state.put(&id, old, Duration::from_secs(60));
        assert!(state.health(std::slice::from_ref(&id))[0].as_ref().unwrap().healthy);
        assert!(!state.may_have_unhealthy());
    }

    #[tokio::test(start_paused = true)]
    async fn one_lease_per_hold() {
        let state = HealthState::default();
        let id = DeploymentId::from("a");
        assert!(state.claim_lease(&id, Duration::from_secs(30)));
        assert!(!state.claim_lease(&id, Duration::from_secs(30)));
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(state.claim_lease(&id, Duration::from_secs(30)));
    }
}
