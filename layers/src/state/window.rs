//! A sliding-window log at a fixed resolution: exact counts over the last `span`, bounded memory.

use std::{collections::VecDeque, time::Duration};

use tokio::time::Instant;

/// The two counters a window keeps per tick: for usage, requests and tokens; for outcomes,
/// successes and failures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) first: u64,
    pub(crate) second: u64,
}

/// Events over the last `span`, merged per `resolution` tick.
///
/// An event's tick is rounded *up* and the current time's *down*, so an event counts for at least
/// the full span (at most one resolution longer when the span is a whole number of resolutions,
/// two otherwise: the span is rounded up to whole ticks): a limit enforced on this window is never
/// exceeded in any real window of `span`. Memory is at most `span / resolution` entries whatever
/// the rate.
#[derive(Debug)]
pub(crate) struct SlidingWindow {
    base: Instant,
    resolution_ms: u64,
    span_ticks: u64,
    entries: VecDeque<(u64, Counts)>,
    total: Counts,
}

impl SlidingWindow {
    pub(crate) fn new(base: Instant, span: Duration, resolution: Duration) -> Self {
        let resolution_ms = resolution.as_millis().max(1) as u64;
        let span_ticks = (span.as_millis() as u64).div_ceil(resolution_ms).max(1);
        Self { base, resolution_ms, span_ticks, entries: VecDeque::new(), total: Counts::default() }
    }

    /// The tick an event at `now` is recorded at (rounded up).
    fn tick(&self, now: Instant) -> u64 {
        self.nanos(now).div_ceil(self.resolution_ms * 1_000_000)
    }

    /// The last tick fully passed at `now` (rounded down): an event leaves once `span` ticks
    /// have fully passed since its own (rounding `now` up too would drop it up to one
    /// resolution early).
    fn passed(&self, now: Instant) -> u64 {
        self.nanos(now) / (self.resolution_ms * 1_000_000)
    }

    /// Time since `base` in nanoseconds (whole milliseconds would round an event's time down).
    fn nanos(&self, now: Instant) -> u64 {
        u64::try_from(now.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }

    fn prune(&mut self, now_tick: u64) {
        while let Some(&(tick, counts)) = self.entries.front() {
            if tick + self.span_ticks > now_tick {
                break;
            }
            self.total.first -= counts.first;
            self.total.second -= counts.second;
            self.entries.pop_front();
        }
    }

    /// Totals over the window ending at `now`.
    pub(crate) fn totals(&mut self, now: Instant) -> Counts {
        self.prune(self.passed(now));
        self.total
    }

    /// Adds an event at `now`; returns its tick (to adjust it later).
    pub(crate) fn add(&mut self, now: Instant, first: u64, second: u64) -> u64 {
        let t = self.tick(now);
        self.prune(self.passed(now));
        match self.entries.back_mut() {
            Some((tick, counts)) if *tick == t => {
                counts.first += first;
                counts.second += second;
            }
            _ => self.entries.push_back((t, Counts { first, second })),
        }
        self.total.first += first;
        self.total.second += second;
        t
    }

    /// Changes the second counter of the event recorded at `tick` by `delta` (no-op once it left the
    /// window). Never goes below zero.
    pub(crate) fn adjust_second(&mut self, tick: u64, delta: i64) {
        if let Ok(i) = self.entries.binary_search_by_key(&tick, |(t, _)| *t) {
            let counts = &mut self.entries[i].1;
            let new = (counts.second as i64).saturating_add(delta).max(0) as u64;
            self.total.second = self.total.second - counts.second + new;
            counts.second = new;
        }
    }

    /// How long until the first total drops to at most `target` (zero when it already is).
    pub(crate) fn until_first_at_most(&mut self, now: Instant, target: u64) -> Duration {
        let t = self.tick(now);
        self.prune(self.passed(now));
        let mut excess = self.total.first.saturating_sub(target);
        if excess == 0 {
            return Duration::ZERO;
        }
        for &(tick, counts) in &self.entries {
            excess = excess.saturating_sub(counts.first);
            if excess == 0 {
                return self.until_tick_leaves(now, tick);
            }
        }
        self.until_tick_leaves(now, t)
    }

    /// How long until the second total drops to at most `target`.
    pub(crate) fn until_second_at_most(&mut self, now: Instant, target: u64) -> Duration {
        let t = self.tick(now);
        self.prune(self.passed(now));
        let mut excess = self.total.second.saturating_sub(target);
        if excess == 0 {
            return Duration::ZERO;
        }
        for &(tick, counts) in &self.entries {
            excess = excess.saturating_sub(counts.second);
            if excess == 0 {
                return self.until_tick_leaves(now, tick);
            }
        }
        self.until_tick_leaves(now, t)
    }

    fn until_tick_leaves(&self, now: Instant, tick: u64) -> Duration {
        let leaves = self.base + Duration::from_millis((tick + self.span_ticks) * self.resolution_ms);
        leaves.saturating_duration_since(now)
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn events_leave_exactly_one_span_later() {
        let base = Instant::now();
        let mut w = SlidingWindow::new(base, Duration::from_secs(60), Duration::from_millis(10));
        w.add(base, 1, 100);
        tokio::time::advance(Duration::from_secs(30)).await;
        w.add(Instant::now(), 1, 50);
        assert_eq!(w.totals(Instant::now()), Counts { first: 2, second: 150 });
        tokio::time::advance(Duration::from_millis(29_990)).await;
        assert_eq!(w.totals(Instant::now()).first, 2, "not yet 60 s after the first event");
        tokio::time::advance(Duration::from_millis(10)).await;
        assert_eq!(w.totals(Instant::now()), Counts { first: 1, second: 50 });
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(w.totals(Instant::now()), Counts::default());
        assert!(w.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn memory_is_bounded_by_resolution_not_rate() {
        let base = Instant::now();
        let mut w = SlidingWindow::new(base, Duration::from_secs(1), Duration::from_millis(100));
        for _ in 0..10_000 {
            w.add(Instant::now(), 1, 1);
            tokio::time::advance(Duration::from_micros(500)).await;
        }
        assert!(w.entries.len() <= 11, "{} entries", w.entries.len());
    }

    #[tokio::test(start_paused = true)]
    async fn time_until_slots_free() {
        let base = Instant::now();
        let mut w = SlidingWindow::new(base, Duration::from_secs(60), Duration::from_millis(10));
        w.add(base, 2, 0);
        tokio::time::advance(Duration::from_secs(20)).await;
        w.add(Instant::now(), 1, 0);
        assert_eq!(w.until_first_at_most(Instant::now(), 3), Duration::ZERO);
        assert_eq!(w.until_first_at_most(Instant::now(), 1), Duration::from_secs(40));
        assert_eq!(w.until_first_at_most(Instant::now(), 0), Duration::from_secs(60));
    }

    #[tokio::test(start_paused = true)]
    async fn adjusting_tokens_never_goes_negative() {
        let base = Instant::now();
        let mut w = SlidingWindow::new(base, Duration::from_secs(60), Duration::from_millis(10));
        let t = w.add(base, 1, 100);
        w.adjust_second(t, 40);
        assert_eq!(w.totals(base).second, 140);
        w.adjust_second(t, -1_000);
        assert_eq!(w.totals(base).second, 0);
    }
}
