//! Per-replica state: in-flight counts, latency samples and peak-EWMA load.
//!
//! These are properties of the path from this replica to a deployment, so they are never shared
//! across replicas, whatever the backend.

use std::{
    collections::VecDeque,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use parking_lot::Mutex;
use tokio::{
    sync::{Notify, futures::Notified},
    time::Instant,
};

use crate::DeploymentId;

/// How latency samples are kept; see `routing_strategy_args` in `docs/strategies.md`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct LatencyConfig {
    /// Samples kept per deployment (LiteLLM `max_latency_list_size`, default 10).
    pub max_samples: usize,
    /// Samples older than this are ignored (LiteLLM `ttl`, default 1 h).
    pub sample_ttl: Duration,
    /// Peak-EWMA decay time constant (default 10 s).
    pub ewma_decay: Duration,
    /// Peak-EWMA estimate for a deployment with no sample yet (default 1 s).
    pub default_rtt: Duration,
}

impl Default for LatencyConfig {
    fn default() -> Self {
        Self {
            max_samples: 10,
            sample_ttl: Duration::from_secs(3600),
            ewma_decay: Duration::from_secs(10),
            default_rtt: Duration::from_secs(1),
        }
    }
}

#[derive(Debug, Default)]
struct Samples {
    /// `(when, seconds)`, oldest first, at most `max_samples`.
    latency: VecDeque<(Instant, f64)>,
    ttft: VecDeque<(Instant, f64)>,
    /// Peak-EWMA estimate in seconds and when it was last updated.
    ewma: Option<(f64, Instant)>,
    /// Rate-limited until then (429 with Retry-After).
    penalty_until: Option<Instant>,
}

#[derive(Debug, Default)]
struct Stats {
    in_flight: AtomicU64,
    /// [`SlotWatch`]es alive on this deployment: a released guard wakes them only when some exist.
    watchers: AtomicU64,
    /// Notified when a guard is released while some [`SlotWatch`] exists.
    freed: Notify,
    samples: Mutex<Samples>,
}

/// Per-replica statistics for each deployment.
#[derive(Debug, Default)]
pub struct LocalState {
    config: LatencyConfig,
    stats: super::IdMap<Arc<Stats>>,
}

/// Holds one in-flight request on a deployment; dropping it releases the count, so errors and
/// cancellation can never make the count drift.
#[derive(Debug)]
pub struct InFlightGuard {
    stats: Arc<Stats>,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        // SeqCst pairs with `SlotWatch`: either the watcher sees the lower count, or this sees the
        // watcher and wakes it.
        self.stats.in_flight.fetch_sub(1, Ordering::SeqCst);
        if self.stats.watchers.load(Ordering::SeqCst) > 0 {
            self.stats.freed.notify_waiters();
        }
    }
}

/// Watches one deployment's in-flight count go down, to wait for a parallel-request slot without
/// polling; see [`LocalState::watch_slots`].
///
/// Create the [`notified`](Self::notified) future and `enable` it *before* reading
/// [`in_flight`](Self::in_flight): a guard released after the read then always wakes it.
#[derive(Debug)]
pub struct SlotWatch {
    stats: Arc<Stats>,
}

impl SlotWatch {
    /// Requests in flight on the deployment now.
    pub fn in_flight(&self) -> u64 {
        self.stats.in_flight.load(Ordering::SeqCst)
    }

    /// Completes when an in-flight guard of the deployment is released after this future was
    /// enabled (or first polled).
    pub fn notified(&self) -> Notified<'_> {
        self.stats.freed.notified()
    }
}

impl Drop for SlotWatch {
    fn drop(&mut self) {
        self.stats.watchers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Which series a sample goes to: a latency (seconds, per completion token when known) or the
/// round trip itself as a time to first token.
enum Sample {
    Latency(f64),
    Ttft,
}

fn push_bounded(q: &mut VecDeque<(Instant, f64)>, max: usize, sample: (Instant, f64)) {
    while q.len() >= max.max(1) {
        q.pop_front();
    }
    q.push_back(sample);
}

fn mean(q: &VecDeque<(Instant, f64)>, now: Instant, ttl: Duration) -> Option<f64> {
    let (sum, n) = q
        .iter()
        .filter(|(at, _)| now.saturating_duration_since(*at) < ttl)
        .fold((0.0, 0u32), |(s, n), (_, v)| (s + v, n + 1));
    (n > 0).then(|| sum / f64::from(n))
}

impl LocalState {
    /// Local state with the given latency settings.
    pub fn new(config: LatencyConfig) -> Self {
        Self { config, stats: super::IdMap::default() }
    }

    /// The latency settings.
    pub fn config(&self) -> &LatencyConfig {
        &self.config
    }

    fn stats(&self, id: &DeploymentId) -> Arc<Stats> {
        if let Some(s) = self.stats.get(id) {
            return s.clone();
        }
        self.stats.entry(id.clone()).or_default().clone()
    }

    /// Requests this replica has in flight on `id`.
    pub fn in_flight(&self, id: &DeploymentId) -> u64 {
        self.stats.get(id).map_or(0, |s| s.in_flight.load(Ordering::Acquire))
    }

    /// Counts one request in flight on `id` until the guard is dropped.
    pub fn begin(&self, id: &DeploymentId) -> InFlightGuard {
        let stats = self.stats(id);
        stats.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlightGuard { stats }
    }

    /// Counts one request in flight on `id` if fewer than `limit` are: the parallel-request slot,
    /// taken atomically (a compare-and-swap loop, so concurrent callers never overshoot). `None`
    /// when the deployment is full.
    pub fn try_begin(&self, id: &DeploymentId, limit: u64) -> Option<InFlightGuard> {
        let stats = self.stats(id);
        let mut current = stats.in_flight.load(Ordering::Acquire);
        loop {
            if current >= limit {
                return None;
            }
            match stats.in_flight.compare_exchange_weak(current, current + 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(InFlightGuard { stats }),
                Err(actual) => current = actual,
            }
        }
    }

    /// Watches `id`'s in-flight count, to wait for a slot to free (see [`SlotWatch`]).
    pub fn watch_slots(&self, id: &DeploymentId) -> SlotWatch {
        let stats = self.stats(id);
        stats.watchers.fetch_add(1, Ordering::SeqCst);
        SlotWatch { stats }
    }

    /// Records a latency sample (seconds; per completion token when known) and, for peak-EWMA,
    /// the raw round trip.
    pub fn record_latency(&self, id: &DeploymentId, sample: f64, rtt: Duration) {
        self.record(&self.stats(id), Sample::Latency(sample), rtt, Instant::now());
    }

    /// [`LocalState::record_latency`] for the attempt holding `guard`, at `now` (the attempt's own
    /// clock reading): no lookup of the deployment.
    pub fn record_latency_held(&self, guard: &InFlightGuard, sample: f64, rtt: Duration, now: Instant) {
        self.record(&guard.stats, Sample::Latency(sample), rtt, now);
    }

    /// Records a time-to-first-token sample for the attempt holding `guard`, at `now` (what
    /// latency-based routing ranks streams by).
    pub fn record_ttft_held(&self, guard: &InFlightGuard, ttft: Duration, now: Instant) {
        self.record(&guard.stats, Sample::Ttft, ttft, now);
    }

    fn record(&self, stats: &Stats, sample: Sample, rtt: Duration, now: Instant) {
        let mut s = stats.samples.lock();
        match sample {
            Sample::Latency(v) => push_bounded(&mut s.latency, self.config.max_samples, (now, v)),
            Sample::Ttft => push_bounded(&mut s.ttft, self.config.max_samples, (now, rtt.as_secs_f64())),
        }
        self.update_ewma(&mut s, now, rtt.as_secs_f64());
    }

    fn update_ewma(&self, s: &mut Samples, now: Instant, rtt: f64) {
        let tau = self.config.ewma_decay.as_secs_f64().max(1e-3);
        s.ewma = Some(match s.ewma {
            // Peak: jump up at once, decay down slowly.
            Some((cost, _)) if rtt > cost => (rtt, now),
            Some((cost, at)) => {
                let elapsed = now.saturating_duration_since(at).as_secs_f64();
                let w = (-elapsed / tau).exp();
                (cost * w + rtt * (1.0 - w), now)
            }
            None => (rtt, now),
        });
    }

    /// Marks `id` as rate limited for `for_` (a 429's Retry-After): peak-EWMA avoids it meanwhile.
    pub fn penalize(&self, id: &DeploymentId, for_: Duration) {
        let until = Instant::now() + for_;
        let stats = self.stats(id);
        let mut s = stats.samples.lock();
        s.penalty_until = Some(s.penalty_until.map_or(until, |u| u.max(until)));
    }

    /// Mean latency sample of `id` over the live samples (TTFT samples when `ttft` and any exist).
    pub fn mean_latency(&self, id: &DeploymentId, ttft: bool) -> Option<f64> {
        self.latency_at(id, ttft, Instant::now()).0
    }

    /// [`LocalState::mean_latency`] at `now`, and the requests in flight: what latency-based
    /// routing reads per candidate, in one lookup and with one clock read for the whole pick.
    pub(crate) fn latency_at(&self, id: &DeploymentId, ttft: bool, now: Instant) -> (Option<f64>, u64) {
        let Some(stats) = self.stats.get(id) else { return (None, 0) };
        let in_flight = stats.in_flight.load(Ordering::Acquire);
        let s = stats.samples.lock();
        let ttft_mean = if ttft { mean(&s.ttft, now, self.config.sample_ttl) } else { None };
        (ttft_mean.or_else(|| mean(&s.latency, now, self.config.sample_ttl)), in_flight)
    }

    /// Number of live latency samples for `id`.
    pub fn samples(&self, id: &DeploymentId) -> usize {
        self.stats.get(id).map_or(0, |s| s.samples.lock().latency.len())
    }

    /// Peak-EWMA load of `id`: the decayed latency estimate times (in-flight + 1), plus a large
    /// penalty while it is rate limited.
    pub fn peak_ewma_load(&self, id: &DeploymentId) -> f64 {
        const PENALTY: f64 = 1.0e6;
        let now = Instant::now();
        let Some(stats) = self.stats.get(id).map(|s| s.clone()) else {
            return self.config.default_rtt.as_secs_f64();
        };
        let in_flight = stats.in_flight.load(Ordering::Acquire) as f64;
        let s = stats.samples.lock();
        let tau = self.config.ewma_decay.as_secs_f64().max(1e-3);
        let cost = match s.ewma {
            Some((cost, at)) => {
                // Decay toward the default while no sample arrives, so a once-slow deployment is
                // tried again eventually.
                let w = (-now.saturating_duration_since(at).as_secs_f64() / tau).exp();
                cost * w + self.config.default_rtt.as_secs_f64() * (1.0 - w)
            }
            None => self.config.default_rtt.as_secs_f64(),
        };
        let penalty = if s.penalty_until.is_some_and(|u| u > now) { PENALTY } else { 0.0 };
        cost * (in_flight + 1.0) + penalty
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn in_flight_returns_to_zero_when_guards_drop() {
        let local = LocalState::default();
        let id = DeploymentId::from("a");
        let g1 = local.begin(&id);
        let g2 = local.begin(&id);
        assert_eq!(local.in_flight(&id), 2);
        drop(g1);
        drop(g2);
        assert_eq!(local.in_flight(&id), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn try_begin_admits_up_to_the_limit_and_frees_on_drop() {
        let local = LocalState::default();
        let id = DeploymentId::from("a");
        let g1 = local.try_begin(&id, 2).expect("first slot");
        let _g2 = local.try_begin(&id, 2).expect("second slot");
        assert!(local.try_begin(&id, 2).is_none(), "the limit-th + 1 is refused");
        let watch = local.watch_slots(&id);
        let freed = watch.notified();
        tokio::pin!(freed);
        freed.as_mut().enable();
        drop(g1);
        freed.await;
        assert_eq!(watch.in_flight(), 1);
        assert!(local.try_begin(&id, 2).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn latency_keeps_a_true_sliding_window_of_the_last_n() {
        let local = LocalState::new(LatencyConfig { max_samples: 3, ..LatencyConfig::default() });
        let id = DeploymentId::from("a");
        for v in [10.0, 10.0, 10.0, 1.0, 1.0, 1.0] {
            local.record_latency(&id, v, Duration::from_secs_f64(v));
        }
        assert_eq!(local.samples(&id), 3);
        assert_eq!(local.mean_latency(&id, false), Some(1.0), "old samples slid out");
    }

    #[tokio::test(start_paused = true)]
    async fn samples_expire_after_their_ttl() {
        let local = LocalState::new(LatencyConfig { sample_ttl: Duration::from_secs(5), ..LatencyConfig::default() });
        let id = DeploymentId::from("a");
        local.record_latency(&id, 2.0, Duration::from_secs(2));
        tokio::time::advance(Duration::from_secs(6)).await;
        assert_eq!(local.mean_latency(&id, false), None);
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limit_penalty_dominates_peak_ewma_until_it_expires() {
        let local = LocalState::default();
        let id = DeploymentId::from("a");
        local.record_latency(&id, 0.1, Duration::from_millis(100));
        let before = local.peak_ewma_load(&id);
        local.penalize(&id, Duration::from_secs(2));
        assert!(local.peak_ewma_load(&id) > 1000.0);
        tokio::time::advance(Duration::from_secs(3)).await;
        assert!(local.peak_ewma_load(&id) < 1000.0 && before < 1.0);
    }
}
