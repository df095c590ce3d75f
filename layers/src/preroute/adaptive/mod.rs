//! [`AdaptiveRouter`]: LiteLLM's adaptive router (`auto_router/adaptive_router`, LiteLLM 1.100,
//! `router_strategy/adaptive_router/`), a [`PreRouter`] that learns which model group serves
//! each kind of request best, by Thompson sampling.
//!
//! Each request is placed in a [`RequestClass`] (LiteLLM's rule-based classifier over the newest
//! user text). Each (class, group) **cell** holds a Beta(alpha, beta) posterior of the group's
//! quality on that class. Per request the router draws one sample from each eligible group's
//! posterior, scores it `weights.quality × sample + weights.cost × normalized cost` (cheapest 1,
//! dearest 0) and routes to the best score; the draw is the exploration: a group with an
//! uncertain posterior sometimes wins.
//!
//! - **Prior**: mean 0.3 / 0.5 / 0.7 for `quality_tier` 1 / 2 / 3, +0.3 for a class among the
//!   group's `strengths` (at most 0.95), mass 10 ([`AdaptivePreferences::prior_mean`]).
//! - **Learning** ([`PreRouter::on_outcome`], Switchyard's rules): the chosen group's own result
//!   — a success +1 alpha; a refusal (content policy), a 5xx or a broken answer +1 beta; limits,
//!   timeouts and the caller's own errors nothing —, explicit [`Feedback`]
//!   ([`AdaptiveRouter::feedback`], the gateway's `POST /router/feedback`), and LiteLLM's
//!   `failure` signal: a turn of a conversation with a session id
//!   ([`RequestFacts::session`](crate::RequestFacts::session)) whose newest message carries
//!   failed tool results (`is_error`) gives +1 beta to the group that answered the previous turn.
//! - **Shared**: updates go to the [`StateStore`] (one Lua script on Redis), so every replica
//!   learns from every other; each router samples from a local mirror, refreshed from the store
//!   every `sync_interval` (and written through by its own updates), so a request never waits on
//!   the store.
//! - **Bounded and decaying**: at most [`MAX_CELLS`] cells per router; a cell's evidence halves
//!   every `decay_half_life` (back toward the prior) and is scaled down to `sample_cap`.
//! - **Caller's minimum**: [`RequestFacts::min_quality_tier`](crate::RequestFacts::min_quality_tier)
//!   leaves out groups of a lower tier (when none reaches it, the highest tier's groups, with the
//!   signal `min_quality_tier N unmet`).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use switchyard_layers::{
//!     RequestFacts, StateStore,
//!     preroute::{PreRouteInput, PreRouter, adaptive::{AdaptiveCandidate, AdaptivePreferences, AdaptiveRouter, AdaptiveRouterConfig, Feedback, RequestClass}},
//! };
//!
//! let store = Arc::new(StateStore::memory());
//! let router = AdaptiveRouter::new(
//!     "smart-router",
//!     AdaptiveRouterConfig::new(["gpt-4o", "gpt-4o-mini"]),
//!     [
//!         AdaptiveCandidate::new("gpt-4o", AdaptivePreferences::new(3)).with_input_cost(Some(2.5e-6)),
//!         AdaptiveCandidate::new("gpt-4o-mini", AdaptivePreferences::new(2)).with_input_cost(Some(1.5e-7)),
//!     ],
//!     store,
//!     Some(7),
//! )?;
//! let facts = RequestFacts::new();
//! let decision = router.route(&PreRouteInput::new("smart-router", &facts)).expect("a group");
//! assert_eq!(decision.tier.as_deref(), Some("general"));
//! router.feedback(RequestClass::General, &decision.target, Feedback::Score(1.0))?;
//! # Ok(()) }
//! ```

mod classify;
mod config;
mod session;
mod signal;

use std::{
    fmt,
    sync::{
        Arc, OnceLock, Weak,
        atomic::{AtomicU64, Ordering::Relaxed},
    },
    time::Duration,
};

use arc_swap::ArcSwap;
pub use classify::RequestClass;
pub use config::{
    AdaptiveCandidate, AdaptiveConfigError, AdaptivePreferences, AdaptiveRouterConfig, COLD_START_MASS, MAX_CELLS,
    SAMPLE_CAP, Weights,
};
use futures_util::FutureExt;
use rand::Rng;
use rand_distr::{Beta, Distribution};
use serde::Serialize;
pub use signal::{Feedback, Signal};
use tokio::time::Instant;

use super::{PreRouteInput, PreRouteOutcome, PreRouter, Role};
use crate::{
    StateStore,
    ctx::{DimensionScore, PreRouteDecision},
    seed::SeedSource,
    state::{BanditDecay, BanditEvidence},
};

/// The reason of every decision the adaptive router makes (LiteLLM's `cause`).
pub const REASON: &str = "bandit";

/// Thompson sampling over (request class, model group) posteriors; see the [module docs](self).
///
/// Cloning is cheap (an `Arc`); clones share the posteriors.
#[derive(Clone)]
pub struct AdaptiveRouter {
    inner: Arc<Inner>,
}

struct Group {
    name: Arc<str>,
    tier: u8,
    cost: Option<f64>,
}

/// One cell's local evidence (discounted when read against its time).
#[derive(Clone, Copy)]
struct Local {
    successes: f64,
    failures: f64,
    at: Instant,
}

#[derive(Default)]
struct CellStats {
    chosen: AtomicU64,
    explored: AtomicU64,
}

struct Inner {
    name: Arc<str>,
    config: AdaptiveRouterConfig,
    groups: Vec<Group>,
    /// (alpha, beta) of each cell's prior, at `class × groups + group`.
    priors: Vec<(f64, f64)>,
    decay: BanditDecay,
    store: Arc<StateStore>,
    seeds: SeedSource,
    /// The evidence this replica knows of, per cell; updated under the lock (no `.await` inside).
    evidence: parking_lot::Mutex<Vec<Local>>,
    /// The posteriors sampled on the request path (prior + evidence), republished on each update.
    posteriors: ArcSwap<Vec<(f64, f64)>>,
    stats: Vec<CellStats>,
    /// Set once the sync task runs (started by the first request, which runs on a runtime).
    sync_started: OnceLock<()>,
    feedback: AtomicU64,
    outcomes: AtomicU64,
    /// Each conversation's last decision, for the tool failures its next turn reports.
    sessions: parking_lot::Mutex<session::Sessions>,
    tool_failures: AtomicU64,
}

impl fmt::Debug for AdaptiveRouter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdaptiveRouter")
            .field("name", &self.inner.name)
            .field("available_models", &self.inner.config.available_models)
            .finish_non_exhaustive()
    }
}

/// Explicit feedback that cannot be applied.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FeedbackError {
    /// The score is not a number from 0 to 1.
    InvalidScore,
    /// The group is not one the router chooses among.
    UnknownGroup(String),
}

impl fmt::Display for FeedbackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidScore => f.write_str("score: must be a number from 0 to 1"),
            Self::UnknownGroup(g) => write!(f, "`{g}` is not a model group of this adaptive router"),
        }
    }
}

impl std::error::Error for FeedbackError {}

impl AdaptiveRouter {
    /// The router named `name` (its virtual model name: the key of its posteriors in `store`)
    /// over `candidates` (a group of `available_models` without a candidate gets LiteLLM's
    /// defaults: tier 2, price unknown), checked: `available_models` not empty nor repeated,
    /// weights in 0..=1 summing to 1, every tier 1 to 3, the decay settings in range, at most
    /// [`MAX_CELLS`] cells. `seed` makes the draws reproducible.
    pub fn new(
        name: impl Into<Arc<str>>,
        config: AdaptiveRouterConfig,
        candidates: impl IntoIterator<Item = AdaptiveCandidate>,
        store: Arc<StateStore>,
        seed: Option<u64>,
    ) -> Result<Self, AdaptiveConfigError> {
        config.check()?;
        let candidates: Vec<AdaptiveCandidate> = candidates.into_iter().collect();
        let mut groups = Vec::with_capacity(config.available_models.len());
        let mut prefs = Vec::with_capacity(config.available_models.len());
        for group in &config.available_models {
            let c = candidates.iter().find(|c| &c.group == group);
            let p = c.map(|c| c.preferences.clone()).unwrap_or_default();
            if p.prior_mean(RequestClass::General).is_none() {
                return Err(AdaptiveConfigError::new(format!(
                    "model group `{group}`: adaptive_router_preferences.quality_tier {} is not supported; valid tiers are \
                     [1, 2, 3]",
                    p.quality_tier
                )));
            }
            let cost = c.and_then(|c| c.input_cost_per_token).filter(|p| p.is_finite() && *p >= 0.0);
            groups.push(Group { name: group.as_str().into(), tier: p.quality_tier, cost });
            prefs.push(p);
        }
        let mut priors = Vec::with_capacity(RequestClass::ALL.len() * groups.len());
        for class in RequestClass::ALL {
            for p in &prefs {
                let mean = p.prior_mean(class).unwrap_or(0.5);
                priors.push((mean * COLD_START_MASS, (1.0 - mean) * COLD_START_MASS));
            }
        }
        let decay =
            BanditDecay::new(Duration::from_secs_f64(config.decay_half_life), config.sample_cap - COLD_START_MASS);
        let now = Instant::now();
        let cells = priors.len();
        let inner = Inner {
            name: name.into(),
            decay,
            store,
            seeds: seed.map_or_else(SeedSource::from_os, SeedSource::new),
            evidence: parking_lot::Mutex::new(vec![Local { successes: 0.0, failures: 0.0, at: now }; cells]),
            posteriors: ArcSwap::from_pointee(priors.clone()),
            stats: (0..cells).map(|_| CellStats::default()).collect(),
            priors,
            groups,
            config,
            sync_started: OnceLock::new(),
            feedback: AtomicU64::new(0),
            outcomes: AtomicU64::new(0),
            sessions: parking_lot::Mutex::default(),
            tool_failures: AtomicU64::new(0),
        };
        let router = Self { inner: Arc::new(inner) };
        // The memory backend answers at once: start from what the store already learned.
        if let Some(()) = router.sync().now_or_never() {}
        Ok(router)
    }

    /// The virtual model name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The settings.
    pub fn config(&self) -> &AdaptiveRouterConfig {
        &self.inner.config
    }

    fn cell(&self, class: RequestClass, group: usize) -> usize {
        class.index() * self.inner.groups.len() + group
    }

    fn group_index(&self, group: &str) -> Option<usize> {
        self.inner.groups.iter().position(|g| &*g.name == group)
    }

    /// The decision for a request of `class` from a caller who accepts no group below tier
    /// `min_quality_tier`, drawing from `rng`; counted in the [snapshot](Self::snapshot).
    pub fn decide(&self, class: RequestClass, min_quality_tier: Option<u32>, rng: &mut impl Rng) -> PreRouteDecision {
        self.choose(class, min_quality_tier, Some(rng))
    }

    /// The greedy decision (the best posterior mean, no draw), not counted: [`PreRouter::preview`].
    pub fn greedy(&self, class: RequestClass, min_quality_tier: Option<u32>) -> PreRouteDecision {
        self.choose::<rand::rngs::SmallRng>(class, min_quality_tier, None)
    }

    /// With `rng` a Thompson draw, counted; without, the posterior means, not counted.
    fn choose<R: Rng>(
        &self,
        class: RequestClass,
        min_quality_tier: Option<u32>,
        rng: Option<&mut R>,
    ) -> PreRouteDecision {
        let mut rng = rng;
        let inner = &*self.inner;
        let mut unmet = None;
        let mut eligible: Vec<usize> = match min_quality_tier {
            Some(min) => (0..inner.groups.len()).filter(|&g| u32::from(inner.groups[g].tier) >= min).collect(),
            None => (0..inner.groups.len()).collect(),
        };
        if eligible.is_empty() {
            // Nothing reaches the caller's minimum: the best there is (LiteLLM fails the request).
            let top = inner.groups.iter().map(|g| g.tier).max().unwrap_or(0);
            eligible = (0..inner.groups.len()).filter(|&g| inner.groups[g].tier == top).collect();
            unmet = min_quality_tier;
        }
        let costs = normalized_costs(eligible.iter().map(|&g| inner.groups[g].cost));
        let posteriors = inner.posteriors.load();
        let Weights { quality, cost: cost_weight } = inner.config.weights;
        // (group, sample, cost score, score); and the greedy pick by posterior mean.
        let mut best: Option<(usize, f64, f64, f64)> = None;
        let mut greedy: Option<(usize, f64)> = None;
        for (&g, &c) in eligible.iter().zip(&costs) {
            let (alpha, beta) = posteriors[self.cell(class, g)];
            let mean_quality = alpha / (alpha + beta);
            let sample = match rng.as_deref_mut() {
                Some(rng) => Beta::new(alpha, beta).map_or(mean_quality, |d| d.sample(rng)),
                None => mean_quality,
            };
            let score = quality * sample + cost_weight * c;
            if best.is_none_or(|(_, _, _, s)| score > s) {
                best = Some((g, sample, c, score));
            }
            let mean = quality * mean_quality + cost_weight * c;
            if greedy.is_none_or(|(_, s)| mean > s) {
                greedy = Some((g, mean));
            }
        }
        let (g, sample, c, score) = best.unwrap_or((0, 0.5, 0.5, 0.5));
        let counted = rng.is_some();
        let explored = greedy.is_some_and(|(best_mean, _)| best_mean != g);
        let stats = &inner.stats[self.cell(class, g)];
        if counted {
            stats.chosen.fetch_add(1, Relaxed);
        }
        let mut decision = PreRouteDecision::new(inner.groups[g].name.clone(), REASON)
            .with_tier(class.as_str())
            .with_score(score)
            .with_dimension(DimensionScore::new("quality", sample, quality))
            .with_dimension(DimensionScore::new("cost", c, cost_weight))
            .with_signal(format!("class {class}"));
        if explored && counted {
            stats.explored.fetch_add(1, Relaxed);
            if let Some((m, _)) = greedy {
                decision = decision.with_signal(format!("explore (greedy {})", inner.groups[m].name));
            }
        }
        if let Some(min) = unmet {
            decision = decision.with_signal(format!("min_quality_tier {min} unmet"));
        }
        decision
    }

    /// Applies explicit feedback on a call of `class` routed to `group`: the (alpha, beta) added.
    pub fn feedback(&self, class: RequestClass, group: &str, feedback: Feedback) -> Result<(f64, f64), FeedbackError> {
        let g = self.group_index(group).ok_or_else(|| FeedbackError::UnknownGroup(group.to_owned()))?;
        let (s, f) = feedback.delta().ok_or(FeedbackError::InvalidScore)?;
        self.inner.feedback.fetch_add(1, Relaxed);
        self.learn(self.cell(class, g), s, f);
        Ok((s, f))
    }

    /// Adds to one cell: here at once (the next request samples it), in the store in the
    /// background.
    fn learn(&self, cell: usize, successes: f64, failures: f64) {
        let inner = &self.inner;
        if successes <= 0.0 && failures <= 0.0 {
            return;
        }
        let now = Instant::now();
        {
            let mut evidence = inner.evidence.lock();
            let Some(local) = evidence.get_mut(cell) else { return };
            let e = BanditEvidence::new(local.successes, local.failures).add(
                successes,
                failures,
                now.saturating_duration_since(local.at),
                inner.decay,
            );
            *local = Local { successes: e.successes, failures: e.failures, at: now };
            inner.publish(&evidence, now);
        }
        let store = inner.store.clone();
        let router = inner.name.clone();
        let key = self.cell_key(cell);
        let decay = inner.decay;
        inner.store.run_bookkeeping(async move {
            store.bandit_add(&router, &key, successes, failures, decay).await;
        });
    }

    /// `class|group`, the cell's field in the store.
    fn cell_key(&self, cell: usize) -> String {
        let n = self.inner.groups.len();
        format!("{}|{}", RequestClass::ALL[cell / n], self.inner.groups[cell % n].name)
    }

    /// Reads the shared evidence into this replica's mirror (what the sync task does every
    /// `sync_interval`). Cells the store does not hold keep what this replica knows.
    pub async fn sync(&self) {
        let inner = &self.inner;
        let Some(cells) = inner.store.bandit_cells(&inner.name).await else { return };
        let now = Instant::now();
        let mut evidence = inner.evidence.lock();
        for (key, e) in cells {
            let Some((class, group)) = key.split_once('|') else { continue };
            let (Ok(class), Some(g)) = (class.parse::<RequestClass>(), self.group_index(group)) else { continue };
            let e = e.decayed(inner.decay);
            evidence[self.cell(class, g)] = Local { successes: e.successes, failures: e.failures, at: now };
        }
        inner.publish(&evidence, now);
    }

    /// Starts the task that syncs the mirror every `sync_interval` (once; the first request does
    /// it). It ends when the router is dropped.
    pub fn start_sync(&self) {
        self.inner.sync_started.get_or_init(|| {
            let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
            let weak: Weak<Inner> = Arc::downgrade(&self.inner);
            let every = Duration::from_secs_f64(self.inner.config.sync_interval);
            rt.spawn(async move {
                let mut tick = tokio::time::interval(every);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    let Some(inner) = weak.upgrade() else { return };
                    AdaptiveRouter { inner }.sync().await;
                }
            });
        });
    }

    /// The posteriors, the decisions and the exploration share, for dashboards (LiteLLM's
    /// `GET /adaptive_router/state` snapshot, plus Switchyard's counters).
    pub fn snapshot(&self) -> AdaptiveSnapshot {
        let inner = &self.inner;
        let posteriors = inner.posteriors.load();
        let n = inner.groups.len();
        let cells = (0..posteriors.len())
            .map(|cell| {
                let (alpha, beta) = posteriors[cell];
                let (pa, pb) = inner.priors[cell];
                CellSnapshot {
                    request_type: RequestClass::ALL[cell / n].as_str(),
                    model: inner.groups[cell % n].name.to_string(),
                    alpha,
                    beta,
                    samples: (alpha + beta - pa - pb).max(0.0),
                    quality_mean: alpha / (alpha + beta),
                    prior_mean: pa / (pa + pb),
                    chosen: inner.stats[cell].chosen.load(Relaxed),
                    explored: inner.stats[cell].explored.load(Relaxed),
                }
            })
            .collect::<Vec<_>>();
        AdaptiveSnapshot {
            router_name: inner.name.to_string(),
            available_models: inner.config.available_models.clone(),
            weights: inner.config.weights.into(),
            model_costs: inner.groups.iter().map(|g| (g.name.to_string(), g.cost)).collect(),
            decisions: cells.iter().map(|c| c.chosen).sum(),
            explored: cells.iter().map(|c| c.explored).sum(),
            outcomes: inner.outcomes.load(Relaxed),
            feedback: inner.feedback.load(Relaxed),
            tool_failures: inner.tool_failures.load(Relaxed),
            decay_half_life: inner.config.decay_half_life,
            sample_cap: inner.config.sample_cap,
            cells,
        }
    }
}

impl Inner {
    /// Republishes the posteriors from `evidence` (held locked by the caller), discounted to now.
    fn publish(&self, evidence: &[Local], now: Instant) {
        let posteriors = self
            .priors
            .iter()
            .zip(evidence)
            .map(|(&(a, b), e)| {
                let k = self.decay.factor(now.saturating_duration_since(e.at));
                (a + e.successes * k, b + e.failures * k)
            })
            .collect();
        self.posteriors.store(Arc::new(posteriors));
    }
}

/// LiteLLM's `normalized_cost` over the eligible groups: the cheapest 1, the dearest 0, 0.5 for
/// all when there is no spread. An unknown price counts as the dearest (LiteLLM counts it as
/// free).
fn normalized_costs(costs: impl Iterator<Item = Option<f64>>) -> Vec<f64> {
    let costs: Vec<Option<f64>> = costs.collect();
    let known = costs.iter().flatten();
    let lo = known.clone().copied().reduce(f64::min);
    let hi = known.copied().reduce(f64::max);
    match (lo, hi) {
        (Some(lo), Some(hi)) if hi > lo => {
            costs.iter().map(|c| c.map_or(0.0, |c| 1.0 - (c - lo) / (hi - lo))).collect()
        }
        (Some(_), Some(_)) if costs.iter().any(Option::is_none) => {
            costs.iter().map(|c| if c.is_some() { 1.0 } else { 0.0 }).collect()
        }
        _ => vec![0.5; costs.len()],
    }
}

impl AdaptiveRouter {
    /// LiteLLM's `failure` signal: when this turn of conversation `session` reports failed tool
    /// calls, the group that answered its previous turn gets beta + 1 (once per turn). Then
    /// `cell` is the session's newest decision.
    fn tool_results(&self, session: &str, cell: usize, input: &PreRouteInput<'_>) {
        let previous = self.inner.sessions.lock().swap(session, cell, Instant::now());
        let failed = input.conversation().map_or(0, super::Conversation::failed_tool_results);
        if let Some(previous) = previous
            && failed > 0
        {
            self.inner.tool_failures.fetch_add(1, Relaxed);
            self.learn(previous, 0.0, 1.0);
        }
    }
}

/// The class of a request: its newest user text, classified.
fn class_of(input: &PreRouteInput<'_>) -> RequestClass {
    let text = input
        .conversation()
        .and_then(|c| c.turns().iter().rev().find(|t| t.role == Role::User && !t.text.trim().is_empty()))
        .map_or("", |t| t.text.as_str());
    RequestClass::classify(text)
}

impl PreRouter for AdaptiveRouter {
    fn route(&self, input: &PreRouteInput<'_>) -> Option<PreRouteDecision> {
        self.start_sync();
        let class = class_of(input);
        let decision = self.decide(class, input.facts().min_quality_tier, &mut self.inner.seeds.rng());
        if let (Some(session), Some(g)) = (input.facts().session.as_deref(), self.group_index(&decision.target)) {
            self.tool_results(session, self.cell(class, g), input);
        }
        Some(decision)
    }

    fn preview(&self, input: &PreRouteInput<'_>) -> Option<PreRouteDecision> {
        Some(self.greedy(class_of(input), input.facts().min_quality_tier))
    }

    fn wants_outcome(&self) -> bool {
        true
    }

    fn on_outcome(&self, outcome: &PreRouteOutcome<'_>) {
        let decision = outcome.decision;
        let Some(class) = decision.tier.as_deref().and_then(|t| t.parse::<RequestClass>().ok()) else { return };
        let Some(g) = self.group_index(&decision.target) else { return };
        let Some((s, f)) = outcome.target_outcome().and_then(signal::outcome_delta) else { return };
        self.inner.outcomes.fetch_add(1, Relaxed);
        self.learn(self.cell(class, g), s, f);
    }
}

/// The weights as a snapshot shows them.
#[derive(Clone, Copy, Debug, Serialize)]
#[non_exhaustive]
pub struct WeightsSnapshot {
    /// Quality.
    pub quality: f64,
    /// Cost.
    pub cost: f64,
}

impl From<Weights> for WeightsSnapshot {
    fn from(w: Weights) -> Self {
        Self { quality: w.quality, cost: w.cost }
    }
}

/// One (class, group) cell as [`AdaptiveRouter::snapshot`] shows it (LiteLLM's field names).
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct CellSnapshot {
    /// The request class.
    pub request_type: &'static str,
    /// The model group.
    pub model: String,
    /// The posterior's alpha (prior included).
    pub alpha: f64,
    /// The posterior's beta (prior included).
    pub beta: f64,
    /// The evidence beyond the prior (decayed), LiteLLM's `samples`.
    pub samples: f64,
    /// alpha / (alpha + beta).
    pub quality_mean: f64,
    /// The prior's mean.
    pub prior_mean: f64,
    /// Requests this replica routed to the cell since it started.
    pub chosen: u64,
    /// Of those, how many were not the greedy pick (the best posterior mean): exploration.
    pub explored: u64,
}

/// What an adaptive router knows, for dashboards; see [`AdaptiveRouter::snapshot`].
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct AdaptiveSnapshot {
    /// The virtual model name.
    pub router_name: String,
    /// The groups it chooses among.
    pub available_models: Vec<String>,
    /// Quality against cost.
    pub weights: WeightsSnapshot,
    /// Each group's input price (USD per token), `null` when unknown.
    pub model_costs: std::collections::BTreeMap<String, Option<f64>>,
    /// Every cell.
    pub cells: Vec<CellSnapshot>,
    /// Requests this replica routed.
    pub decisions: u64,
    /// Of those, the exploratory ones.
    pub explored: u64,
    /// Call outcomes learned from.
    pub outcomes: u64,
    /// Feedback learned from.
    pub feedback: u64,
    /// Failed tool calls learned from (a turn reporting them, held against the session's
    /// previous group).
    pub tool_failures: u64,
    /// Seconds over which evidence halves (0: never).
    pub decay_half_life: f64,
    /// The most alpha + beta of a cell.
    pub sample_cap: f64,
}

#[cfg(test)]
mod tests;
