//! Bandit evidence: what an adaptive pre-router learned about each (request class, model group)
//! cell, shared by every replica through the store.
//!
//! The store keeps the **evidence** of each cell (pseudo-successes and pseudo-failures beyond the
//! router's prior), discounted toward zero with a half-life and scaled down to a cap, so the
//! posterior (prior + evidence) drifts back to the prior when nothing new is learned and never
//! grows so confident that it stops learning. [`BanditEvidence::add`] is that rule; the memory
//! backend applies it under a shard lock, the Redis backend in one Lua script on the server's
//! clock.

use std::{sync::Arc, time::Duration};

use dashmap::DashMap;
use tokio::time::Instant;

/// Most cells the memory backend keeps (every router's, together); a write to a new cell beyond
/// it is dropped. The adaptive router's own cap is far below (classes × groups per router).
pub(crate) const MAX_CELLS: usize = 65_536;

/// How a cell's evidence is discounted: by half every `half_life` (none when zero), and scaled
/// down so that successes + failures never exceed `cap` (none when not positive).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct BanditDecay {
    /// The evidence halves over this time; zero keeps it forever.
    pub half_life: Duration,
    /// The most evidence (successes + failures) a cell holds; more is scaled down to it.
    pub cap: f64,
}

impl BanditDecay {
    /// Halves every `half_life`, at most `cap` in all.
    pub const fn new(half_life: Duration, cap: f64) -> Self {
        Self { half_life, cap }
    }

    /// How long the shared record is kept after its last write: ten half-lives (the evidence is
    /// then below 0.1% of what it was), and 30 days without decay.
    pub fn ttl(&self) -> Duration {
        if self.half_life.is_zero() {
            Duration::from_secs(30 * 24 * 3600)
        } else {
            self.half_life.saturating_mul(10).max(Duration::from_secs(60))
        }
    }

    /// The factor evidence `age` old is multiplied by.
    pub fn factor(&self, age: Duration) -> f64 {
        if self.half_life.is_zero() {
            return 1.0;
        }
        0.5f64.powf(age.as_secs_f64() / self.half_life.as_secs_f64())
    }
}

/// One cell's evidence: pseudo-successes and pseudo-failures beyond the prior, and how long ago
/// it was last written (the reader discounts it to now).
///
/// ```
/// use std::time::Duration;
/// use switchyard_layers::state::{BanditDecay, BanditEvidence};
///
/// let decay = BanditDecay::new(Duration::from_secs(3600), 100.0);
/// let e = BanditEvidence::default().add(8.0, 2.0, Duration::ZERO, decay);
/// // An hour later, half of it is left; the cap scales, keeping the ratio.
/// let e = e.add(0.0, 0.0, Duration::from_secs(3600), decay);
/// assert_eq!((e.successes, e.failures), (4.0, 1.0));
/// let e = e.add(200.0, 0.0, Duration::ZERO, decay);
/// assert!((e.successes + e.failures - 100.0).abs() < 1e-9);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct BanditEvidence {
    /// Pseudo-successes (added to the prior's alpha).
    pub successes: f64,
    /// Pseudo-failures (added to the prior's beta).
    pub failures: f64,
    /// Time since the last write.
    pub age: Duration,
}

impl BanditEvidence {
    /// `successes` and `failures`, written just now.
    pub const fn new(successes: f64, failures: f64) -> Self {
        Self { successes, failures, age: Duration::ZERO }
    }

    /// This evidence, `age` old, discounted to now.
    pub fn decayed(self, decay: BanditDecay) -> Self {
        let k = decay.factor(self.age);
        Self { successes: self.successes * k, failures: self.failures * k, age: Duration::ZERO }
    }

    /// This evidence (last written `age` ago) discounted to now, plus `successes` and
    /// `failures`, capped. Negative or non-finite deltas count as zero.
    pub fn add(self, successes: f64, failures: f64, age: Duration, decay: BanditDecay) -> Self {
        let clean = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
        let now = Self { age, ..self }.decayed(decay);
        let (mut s, mut f) = (now.successes + clean(successes), now.failures + clean(failures));
        if decay.cap > 0.0 && s + f > decay.cap {
            let r = decay.cap / (s + f);
            s *= r;
            f *= r;
        }
        Self::new(s, f)
    }
}

/// The evidence of every cell, in memory: the memory backend's, and the Redis backend's while
/// Redis is unreachable.
#[derive(Debug, Default)]
pub(crate) struct BanditState {
    cells: DashMap<CellKey, Stored>,
}

/// (router, cell).
type CellKey = (Arc<str>, Arc<str>);

/// Successes, failures, and when they were written.
type Stored = (f64, f64, Instant);

impl BanditState {
    /// Adds to `cell` of `router` (a cell beyond [`MAX_CELLS`] is not created).
    pub(crate) fn add(&self, router: &str, cell: &str, successes: f64, failures: f64, decay: BanditDecay) {
        let now = Instant::now();
        let key: (Arc<str>, Arc<str>) = (router.into(), cell.into());
        if !self.cells.contains_key(&key) && self.cells.len() >= MAX_CELLS {
            return;
        }
        let mut entry = self.cells.entry(key).or_insert((0.0, 0.0, now));
        let (s, f, at) = *entry;
        let e = BanditEvidence::new(s, f).add(successes, failures, now.saturating_duration_since(at), decay);
        *entry = (e.successes, e.failures, now);
    }

    /// Every cell of `router`.
    pub(crate) fn cells(&self, router: &str) -> Vec<(String, BanditEvidence)> {
        let now = Instant::now();
        self.cells
            .iter()
            .filter(|e| &*e.key().0 == router)
            .map(|e| {
                let (s, f, at) = *e.value();
                (
                    e.key().1.to_string(),
                    BanditEvidence { successes: s, failures: f, age: now.saturating_duration_since(at) },
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn evidence_halves_each_half_life_on_a_paused_clock() {
        let state = BanditState::default();
        let decay = BanditDecay::new(Duration::from_secs(60), 0.0);
        state.add("r", "c", 8.0, 4.0, decay);
        tokio::time::advance(Duration::from_secs(120)).await;
        let [(cell, e)] = <[_; 1]>::try_from(state.cells("r")).expect("one cell");
        assert_eq!(cell, "c");
        let e = e.decayed(decay);
        assert!((e.successes - 2.0).abs() < 1e-9 && (e.failures - 1.0).abs() < 1e-9, "{e:?}");
        state.add("r", "c", 1.0, 0.0, decay);
        let e = state.cells("r")[0].1;
        assert!((e.successes - 3.0).abs() < 1e-9 && (e.failures - 1.0).abs() < 1e-9, "{e:?}");
        assert!(state.cells("other").is_empty());
    }

    #[test]
    fn bad_deltas_count_as_nothing() {
        let decay = BanditDecay::new(Duration::ZERO, 0.0);
        let e = BanditEvidence::new(1.0, 1.0).add(f64::NAN, -3.0, Duration::from_secs(9), decay);
        assert_eq!((e.successes, e.failures), (1.0, 1.0));
    }
}
