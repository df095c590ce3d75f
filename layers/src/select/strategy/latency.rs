use rand::{Rng, RngCore};

use super::{Selection, Strategy};

/// `latency-based-routing`: the lowest mean of the last N latency samples (TTFT samples for
/// streaming requests), among candidates under their limits; every candidate within
/// `lowest × (1 + lowest_latency_buffer)` shares the traffic at random.
///
/// A deployment with no live sample is explored: it is picked while it has no request in flight
/// (so it gets its first sample), and otherwise counts as the mean of the others, so it is
/// neither starved nor favoured forever.
#[derive(Clone, Copy, Debug)]
pub struct LatencyBased {
    buffer: f64,
}

impl LatencyBased {
    /// With `lowest_latency_buffer` (0 = only the fastest).
    pub fn new(lowest_latency_buffer: f64) -> Self {
        Self { buffer: lowest_latency_buffer.max(0.0) }
    }
}

impl Default for LatencyBased {
    fn default() -> Self {
        Self::new(0.0)
    }
}

impl Strategy for LatencyBased {
    fn name(&self) -> &'static str {
        "latency-based-routing"
    }

    fn needs_usage(&self) -> bool {
        true
    }

    fn pick(&self, s: &Selection<'_>, rng: &mut dyn RngCore) -> Option<usize> {
        let n = s.candidates.len();
        let ttft = s.facts.stream;
        // (index, mean latency or None when unseen), for the eligible ones.
        let mut seen_sum = 0.0;
        let mut seen_n = 0u32;
        let mut unexplored = 0u32;
        let mut pick_unexplored = None;
        let mut means: Vec<(usize, Option<f64>)> = Vec::with_capacity(n);
        let now = tokio::time::Instant::now();
        for i in 0..n {
            if !s.under_limits(i) {
                continue;
            }
            let (m, in_flight) = s.local.latency_at(&s.candidates[i].id, ttft, now);
            match m {
                Some(v) => {
                    seen_sum += v;
                    seen_n += 1;
                }
                None if in_flight == 0 => {
                    unexplored += 1;
                    if rng.random_range(0..unexplored) == 0 {
                        pick_unexplored = Some(i);
                    }
                }
                None => {}
            }
            means.push((i, m));
        }
        if pick_unexplored.is_some() {
            return pick_unexplored;
        }
        if means.is_empty() {
            return None;
        }
        let fill = if seen_n > 0 { seen_sum / f64::from(seen_n) } else { 0.0 };
        let lowest = means.iter().map(|(_, m)| m.unwrap_or(fill)).fold(f64::INFINITY, f64::min);
        let cutoff = lowest * (1.0 + self.buffer);
        let mut chosen = None;
        let mut within = 0u32;
        for (i, m) in means {
            if m.unwrap_or(fill) <= cutoff {
                within += 1;
                if rng.random_range(0..within) == 0 {
                    chosen = Some(i);
                }
            }
        }
        chosen
    }
}
