//! Routing strategies: how one deployment is picked among an attempt's candidates.
//!
//! A [`Strategy`] looks at a [`Selection`] (the candidates, their usage in the window when it
//! asked for it, per-replica latency and in-flight counts) and picks one. It is called again
//! without the deployment it picked when that one loses the race for its limits, so it never has
//! to rank everything. Every strategy is O(candidates) and draws randomness only from the RNG it
//! is handed, so a seeded router is reproducible.

mod cost;
mod latency;
mod least_busy;
mod p2c;
mod shuffle;
mod usage;

use std::{fmt, sync::Arc};

pub use cost::CostBased;
pub use latency::LatencyBased;
pub use least_busy::LeastBusy;
pub use p2c::P2cPeakEwma;
use rand::{Rng, RngCore};
pub use shuffle::SimpleShuffle;
pub use usage::UsageBased;

use crate::{
    Deployment, Group, RequestFacts,
    state::{Limits, LocalState, WindowUsage},
};

/// What a strategy sees for one pick.
#[derive(Debug)]
#[non_exhaustive]
pub struct Selection<'a> {
    /// The group of the attempt.
    pub group: &'a Group,
    /// The candidates still in the running (non-empty).
    pub candidates: &'a [Arc<Deployment>],
    /// Their usage in the current window, aligned with `candidates`, when
    /// [`Strategy::needs_usage`] is true.
    pub usage: Option<&'a [WindowUsage]>,
    /// Per-replica state (in flight, latency samples).
    pub local: &'a LocalState,
    /// The request's facts.
    pub facts: &'a RequestFacts,
    /// The request's input tokens (0 when nobody counted them).
    pub input_tokens: u64,
}

impl<'a> Selection<'a> {
    /// A selection over `candidates`.
    pub fn new(
        group: &'a Group,
        candidates: &'a [Arc<Deployment>],
        usage: Option<&'a [WindowUsage]>,
        local: &'a LocalState,
        facts: &'a RequestFacts,
        input_tokens: u64,
    ) -> Self {
        Self { group, candidates, usage, local, facts, input_tokens }
    }

    /// Whether candidate `i` has room under its RPM/TPM limits for this request (always true when
    /// usage was not read).
    pub fn under_limits(&self, i: usize) -> bool {
        let Some(usage) = self.usage else { return true };
        let d = &self.candidates[i];
        Limits { rpm: d.rpm, tpm: d.tpm }.admits(usage[i], self.input_tokens)
    }
}

/// A routing strategy. Implement it to plug your own into [`SelectLayer`](super::SelectLayer).
pub trait Strategy: fmt::Debug + Send + Sync + 'static {
    /// The strategy's name, for logs.
    fn name(&self) -> &'static str;

    /// Whether the strategy reads the candidates' window usage (one store read per attempt).
    fn needs_usage(&self) -> bool {
        false
    }

    /// Whether the strategy enforces the candidates' declared `rpm` / `tpm` limits: the select
    /// layer then reserves on its pick against both (and the strategy skips candidates over
    /// them, [`Selection::under_limits`]). LiteLLM's usage-, latency- and cost-based routing do;
    /// simple-shuffle and least-busy only weigh by them. Defaults to
    /// [`needs_usage`](Self::needs_usage).
    fn enforces_limits(&self) -> bool {
        self.needs_usage()
    }

    /// The index of the chosen candidate, or `None` when none is eligible (all at their limits).
    fn pick(&self, selection: &Selection<'_>, rng: &mut dyn RngCore) -> Option<usize>;
}

/// The index with the lowest key among `eligible` ones, ties broken uniformly at random
/// (reservoir sampling: one pass, no allocation).
pub(crate) fn min_by_key_random_tie(
    n: usize,
    rng: &mut dyn RngCore,
    mut key: impl FnMut(usize) -> Option<f64>,
) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    let mut ties = 0u32;
    for i in 0..n {
        let Some(k) = key(i) else { continue };
        match best {
            Some((_, b)) if k > b => {}
            Some((_, b)) if k == b => {
                ties += 1;
                if rng.random_range(0..=ties) == 0 {
                    best = Some((i, k));
                }
            }
            _ => {
                best = Some((i, k));
                ties = 0;
            }
        }
    }
    best.map(|(i, _)| i)
}
