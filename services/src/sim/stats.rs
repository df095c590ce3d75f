//! [`SimStats`]: what the simulator did, per deployment, for tests to read.

use std::{collections::HashMap, sync::Arc};

use parking_lot::Mutex;
use switchyard_layers::{DeploymentId, Outcome};

/// Counters of one simulated deployment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeploymentStats {
    /// Attempts sent to the deployment.
    pub calls: u64,
    /// How the simulator decided each answered attempt would end, by outcome; a stream that later
    /// breaks counts as a success here and in [`mid_stream_failures`](Self::mid_stream_failures).
    pub outcomes: HashMap<Outcome, u64>,
    /// Streams that broke after their first chunk.
    pub mid_stream_failures: u64,
    /// Attempts that were never answered ([`Failure::Hang`](crate::profile::Failure::Hang)).
    pub hangs: u64,
    /// Attempts in progress now (a stream counts until its body ends or is dropped).
    pub in_flight: u64,
    /// The most attempts that were in progress at once.
    pub max_in_flight: u64,
}

impl DeploymentStats {
    /// Attempts that ended (or, for streams, started) with `outcome`.
    pub fn count(&self, outcome: Outcome) -> u64 {
        self.outcomes.get(&outcome).copied().unwrap_or(0)
    }
}

/// Per-deployment counters shared by every clone of a [`SimProvider`](super::SimProvider).
///
/// A cheap handle: clone it out of the provider before the provider moves into a stack.
#[derive(Clone, Debug, Default)]
pub struct SimStats {
    inner: Arc<Mutex<HashMap<DeploymentId, DeploymentStats>>>,
}

impl SimStats {
    /// The counters of deployment `id` (all zero if it was never called).
    pub fn deployment(&self, id: &str) -> DeploymentStats {
        self.inner.lock().get(id).cloned().unwrap_or_default()
    }

    /// Attempts sent to deployment `id`.
    pub fn calls(&self, id: &str) -> u64 {
        self.inner.lock().get(id).map_or(0, |s| s.calls)
    }

    /// Attempts sent to any deployment.
    pub fn total_calls(&self) -> u64 {
        self.inner.lock().values().map(|s| s.calls).sum()
    }

    /// The counters of every deployment called so far.
    pub fn snapshot(&self) -> HashMap<DeploymentId, DeploymentStats> {
        self.inner.lock().clone()
    }

    /// Zeroes every counter except the attempts in progress.
    pub fn reset(&self) {
        for s in self.inner.lock().values_mut() {
            *s = DeploymentStats { in_flight: s.in_flight, max_in_flight: s.in_flight, ..DeploymentStats::default() };
        }
    }

    /// Counts a new attempt on `id`; the guard ends it when dropped.
    pub(crate) fn begin(&self, id: &DeploymentId) -> InFlight {
        self.with(id, |s| {
            s.calls += 1;
            s.in_flight += 1;
            s.max_in_flight = s.max_in_flight.max(s.in_flight);
        });
        InFlight { stats: self.clone(), id: id.clone() }
    }

    pub(crate) fn record(&self, id: &DeploymentId, outcome: Outcome) {
        self.with(id, |s| *s.outcomes.entry(outcome).or_default() += 1);
    }

    pub(crate) fn record_mid_stream(&self, id: &DeploymentId) {
        self.with(id, |s| s.mid_stream_failures += 1);
    }

    pub(crate) fn record_hang(&self, id: &DeploymentId) {
        self.with(id, |s| s.hangs += 1);
    }

    fn with(&self, id: &DeploymentId, f: impl FnOnce(&mut DeploymentStats)) {
        let mut map = self.inner.lock();
        match map.get_mut(id.as_str()) {
            Some(s) => f(s),
            None => f(map.entry(id.clone()).or_default()),
        }
    }
}

/// One attempt in progress; ends when dropped.
#[derive(Debug)]
pub(crate) struct InFlight {
    stats: SimStats,
    id: DeploymentId,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.stats.with(&self.id, |s| s.in_flight = s.in_flight.saturating_sub(1));
    }
}
