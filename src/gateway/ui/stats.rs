//! Rolling per-deployment windows for the dashboard: attempts, errors by class, latency and TTFT,
//! in one-second buckets over the last [`WINDOW_SECONDS`].
//!
//! Memory is bounded: a ring of [`WINDOW_SECONDS`] buckets per deployment, a bucket's
//! histograms hold at most 256 entries (one per log-scale bucket hit), and at most [`MAX_TRACKED`]
//! deployments are tracked (the ones the registry no longer lists are dropped at every read).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError, RwLock},
    time::Duration,
};

use switchyard_layers::{DeploymentId, Outcome};
use tokio::time::Instant;

/// Seconds of history kept per deployment.
pub(crate) const WINDOW_SECONDS: usize = 60;
/// Seconds `requests_per_second` averages over (complete seconds only).
pub(crate) const RATE_SECONDS: u64 = 10;
/// Deployments tracked at most; a registry larger than this leaves the rest untracked.
pub(crate) const MAX_TRACKED: usize = 4096;
/// Outcome classes, indexed like [`Outcome::ALL`].
const CLASSES: usize = Outcome::ALL.len();

/// Durations in log-scale buckets: 8 per doubling (about 9 % wide), from 1 µs to about an hour.
/// Sparse: only buckets that were hit take memory.
#[derive(Clone, Debug, Default)]
pub(crate) struct Histogram {
    /// (bucket, count), sorted by bucket.
    buckets: Vec<(u8, u32)>,
}

impl Histogram {
    fn bucket(d: Duration) -> u8 {
        let us = d.as_secs_f64() * 1e6;
        if us <= 1.0 {
            return 0;
        }
        // Saturating float-to-int cast: anything past the last bucket lands in it.
        (us.log2() * 8.0).round().min(255.0) as u8
    }

    /// The duration a bucket stands for, in milliseconds.
    fn value_ms(bucket: u8) -> f64 {
        2f64.powf(f64::from(bucket) / 8.0) / 1000.0
    }

    pub(crate) fn record(&mut self, d: Duration) {
        let b = Self::bucket(d);
        match self.buckets.binary_search_by_key(&b, |(k, _)| *k) {
            Ok(i) => self.buckets[i].1 = self.buckets[i].1.saturating_add(1),
            Err(i) => self.buckets.insert(i, (b, 1)),
        }
    }

    fn merge(&mut self, other: &Self) {
        for &(b, n) in &other.buckets {
            match self.buckets.binary_search_by_key(&b, |(k, _)| *k) {
                Ok(i) => self.buckets[i].1 = self.buckets[i].1.saturating_add(n),
                Err(i) => self.buckets.insert(i, (b, n)),
            }
        }
    }

    fn count(&self) -> u64 {
        self.buckets.iter().map(|(_, n)| u64::from(*n)).sum()
    }

    /// The `q` quantile (0..=1) in milliseconds, rounded to 0.01 ms; `None` without samples.
    pub(crate) fn quantile_ms(&self, q: f64) -> Option<f64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for &(b, n) in &self.buckets {
            seen += u64::from(n);
            if seen >= rank {
                return Some((Self::value_ms(b) * 100.0).round() / 100.0);
            }
        }
        None
    }

    fn clear(&mut self) {
        self.buckets.clear();
    }
}

/// One second of one deployment.
#[derive(Clone, Debug, Default)]
struct Second {
    /// Which second since the start this bucket holds; a stale bucket is reset before use.
    at: u64,
    attempts: u32,
    errors: [u32; CLASSES],
    /// Answers whose deployment an affinity chose.
    affinity: u32,
    latency: Histogram,
    ttft: Histogram,
}

impl Second {
    fn reset(&mut self, at: u64) {
        self.at = at;
        self.attempts = 0;
        self.errors = [0; CLASSES];
        self.affinity = 0;
        self.latency.clear();
        self.ttft.clear();
    }
}

/// The ring of one deployment.
#[derive(Debug)]
struct Window {
    seconds: Vec<Second>,
}

impl Window {
    fn new() -> Self {
        Self { seconds: vec![Second::default(); WINDOW_SECONDS] }
    }

    fn at(&mut self, second: u64) -> &mut Second {
        let slot = &mut self.seconds[(second % WINDOW_SECONDS as u64) as usize];
        if slot.at != second {
            slot.reset(second);
        }
        slot
    }
}

/// What the dashboard shows of one deployment's window; series run oldest to newest and end
/// with the current (partial) second.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub(crate) struct WindowView {
    /// Attempts in the window (successful and failed).
    pub(crate) attempts: u64,
    /// Failed attempts in the window (mid-stream failures included).
    pub(crate) errors: u64,
    /// Failed attempts by outcome class; classes without failures are left out.
    pub(crate) errors_by_class: std::collections::BTreeMap<&'static str, u64>,
    /// Answers in the window whose deployment an affinity chose (a continued conversation, a
    /// sticky session, a warm prompt cache).
    pub(crate) affinity_hits: u64,
    /// Attempts per second over the last [`RATE_SECONDS`] complete seconds.
    pub(crate) requests_per_second: f64,
    /// Latency of successful attempts over the window, in ms.
    pub(crate) latency_ms: Quantiles,
    /// Time to the first streamed chunk over the window, in ms.
    pub(crate) ttft_ms: Quantiles,
    /// Per-second series.
    pub(crate) series: Series,
}

/// p50 and p99, `null` without samples.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub(crate) struct Quantiles {
    pub(crate) p50: Option<f64>,
    pub(crate) p99: Option<f64>,
}

impl Quantiles {
    fn of(h: &Histogram) -> Self {
        Self { p50: h.quantile_ms(0.5), p99: h.quantile_ms(0.99) }
    }
}

/// Per-second series over the window, [`WINDOW_SECONDS`] entries each.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub(crate) struct Series {
    pub(crate) attempts: Vec<u32>,
    pub(crate) errors: Vec<u32>,
    pub(crate) latency_p50_ms: Vec<Option<f64>>,
    pub(crate) latency_p99_ms: Vec<Option<f64>>,
    pub(crate) ttft_p50_ms: Vec<Option<f64>>,
    pub(crate) ttft_p99_ms: Vec<Option<f64>>,
}

/// Every tracked deployment's window; see the [module docs](self).
#[derive(Debug)]
pub(crate) struct Stats {
    start: Instant,
    windows: RwLock<HashMap<DeploymentId, Arc<Mutex<Window>>>>,
}

impl Default for Stats {
    fn default() -> Self {
        Self { start: Instant::now(), windows: RwLock::default() }
    }
}

impl Stats {
    fn second(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.start).as_secs()
    }

    /// Runs `f` on the current second of `id`'s window, creating the window if there is room.
    fn with_second(&self, id: &DeploymentId, f: impl FnOnce(&mut Second)) {
        let second = self.second(Instant::now());
        let found = self.windows.read().unwrap_or_else(PoisonError::into_inner).get(id).cloned();
        let window = match found {
            Some(w) => w,
            None => {
                let mut windows = self.windows.write().unwrap_or_else(PoisonError::into_inner);
                if windows.len() >= MAX_TRACKED && !windows.contains_key(id) {
                    return;
                }
                windows.entry(id.clone()).or_insert_with(|| Arc::new(Mutex::new(Window::new()))).clone()
            }
        };
        let mut window = window.lock().unwrap_or_else(PoisonError::into_inner);
        f(window.at(second));
    }

    /// Counts one attempt of `id` that ended with `outcome`.
    pub(crate) fn attempt(&self, id: &DeploymentId, outcome: Outcome) {
        self.with_second(id, |s| {
            s.attempts = s.attempts.saturating_add(1);
            if outcome != Outcome::Success {
                add_error(s, outcome);
            }
        });
    }

    /// Counts an answer of `id` that an affinity chose.
    pub(crate) fn affinity(&self, id: &DeploymentId) {
        self.with_second(id, |s| s.affinity = s.affinity.saturating_add(1));
    }

    /// Counts a failure of an attempt already counted (a stream that broke after it started).
    pub(crate) fn late_failure(&self, id: &DeploymentId, outcome: Outcome) {
        self.with_second(id, |s| add_error(s, outcome));
    }

    /// Records a successful attempt's latency.
    pub(crate) fn latency(&self, id: &DeploymentId, d: Duration) {
        self.with_second(id, |s| s.latency.record(d));
    }

    /// Records a streamed attempt's time to its first chunk.
    pub(crate) fn ttft(&self, id: &DeploymentId, d: Duration) {
        self.with_second(id, |s| s.ttft.record(d));
    }

    /// Forgets the deployments `keep` rejects (no longer registered).
    pub(crate) fn retain(&self, keep: impl Fn(&DeploymentId) -> bool) {
        self.windows.write().unwrap_or_else(PoisonError::into_inner).retain(|id, _| keep(id));
    }

    /// `id`'s window as of now; an empty view for a deployment without traffic.
    pub(crate) fn view(&self, id: &DeploymentId) -> WindowView {
        let now = self.second(Instant::now());
        let found = self.windows.read().unwrap_or_else(PoisonError::into_inner).get(id).cloned();
        let mut view = WindowView {
            series: Series {
                attempts: vec![0; WINDOW_SECONDS],
                errors: vec![0; WINDOW_SECONDS],
                latency_p50_ms: vec![None; WINDOW_SECONDS],
                latency_p99_ms: vec![None; WINDOW_SECONDS],
                ttft_p50_ms: vec![None; WINDOW_SECONDS],
                ttft_p99_ms: vec![None; WINDOW_SECONDS],
            },
            ..WindowView::default()
        };
        let Some(window) = found else { return view };
        let window = window.lock().unwrap_or_else(PoisonError::into_inner);
        let (mut latency, mut ttft) = (Histogram::default(), Histogram::default());
        let mut by_class = [0u64; CLASSES];
        let mut recent = 0u64;
        for (i, age) in (0..WINDOW_SECONDS as u64).rev().enumerate() {
            let Some(second) = now.checked_sub(age) else { continue };
            let slot = &window.seconds[(second % WINDOW_SECONDS as u64) as usize];
            if slot.at != second {
                continue;
            }
            let errors: u32 = slot.errors.iter().sum();
            view.attempts += u64::from(slot.attempts);
            view.affinity_hits += u64::from(slot.affinity);
            view.errors += u64::from(errors);
            for (total, n) in by_class.iter_mut().zip(slot.errors) {
                *total += u64::from(n);
            }
            if (1..=RATE_SECONDS).contains(&age) {
                recent += u64::from(slot.attempts);
            }
            latency.merge(&slot.latency);
            ttft.merge(&slot.ttft);
            view.series.attempts[i] = slot.attempts;
            view.series.errors[i] = errors;
            view.series.latency_p50_ms[i] = slot.latency.quantile_ms(0.5);
            view.series.latency_p99_ms[i] = slot.latency.quantile_ms(0.99);
            view.series.ttft_p50_ms[i] = slot.ttft.quantile_ms(0.5);
            view.series.ttft_p99_ms[i] = slot.ttft.quantile_ms(0.99);
        }
        view.errors_by_class =
            Outcome::ALL.iter().zip(by_class).filter(|(_, n)| *n > 0).map(|(o, n)| (o.as_str(), n)).collect();
        view.requests_per_second = recent as f64 / RATE_SECONDS as f64;
        view.latency_ms = Quantiles::of(&latency);
        view.ttft_ms = Quantiles::of(&ttft);
        view
    }
}

fn add_error(s: &mut Second, outcome: Outcome) {
    if let Some(i) = Outcome::ALL.iter().position(|o| *o == outcome) {
        s.errors[i] = s.errors[i].saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_within_a_bucket_of_the_truth() {
        let mut h = Histogram::default();
        for ms in 1..=100u64 {
            h.record(Duration::from_millis(ms));
        }
        let p50 = h.quantile_ms(0.5).expect("samples");
        let p99 = h.quantile_ms(0.99).expect("samples");
        assert!((46.0..=55.0).contains(&p50), "{p50}");
        assert!((90.0..=109.0).contains(&p99), "{p99}");
        assert!(h.buckets.len() <= 256);
        assert_eq!(Histogram::default().quantile_ms(0.5), None);
    }

    #[test]
    fn extreme_durations_land_in_the_edge_buckets() {
        let mut h = Histogram::default();
        h.record(Duration::ZERO);
        h.record(Duration::from_secs(1_000_000));
        assert_eq!(h.buckets.first().map(|b| b.0), Some(0));
        assert_eq!(h.buckets.last().map(|b| b.0), Some(255));
    }

    #[tokio::test(start_paused = true)]
    async fn the_window_forgets_what_is_older_than_a_minute() {
        let stats = Stats::default();
        let id = DeploymentId::from("a");
        stats.attempt(&id, Outcome::Success);
        stats.attempt(&id, Outcome::RateLimited);
        stats.latency(&id, Duration::from_millis(20));
        tokio::time::advance(Duration::from_secs(1)).await;
        let view = stats.view(&id);
        assert_eq!((view.attempts, view.errors), (2, 1));
        assert_eq!(view.errors_by_class.get("rate_limited"), Some(&1));
        assert_eq!(view.series.attempts[WINDOW_SECONDS - 2], 2);
        assert!((view.requests_per_second - 0.2).abs() < 1e-9);
        assert!(view.latency_ms.p50.is_some());

        tokio::time::advance(Duration::from_secs(WINDOW_SECONDS as u64)).await;
        let view = stats.view(&id);
        assert_eq!((view.attempts, view.errors), (0, 0));
        assert!(view.latency_ms.p50.is_none());
    }

    #[test]
    fn untracked_deployments_are_dropped_and_the_count_is_bounded() {
        let stats = Stats::default();
        for i in 0..MAX_TRACKED + 10 {
            stats.attempt(&DeploymentId::from(format!("d{i}")), Outcome::Success);
        }
        assert_eq!(stats.windows.read().expect("lock").len(), MAX_TRACKED);
        stats.retain(|id| id.as_str() == "d1");
        assert_eq!(stats.windows.read().expect("lock").len(), 1);
    }
}
