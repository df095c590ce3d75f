//! The in-memory backend: sharded maps, no `.await` inside any critical section.
//!
//! [`MemoryState`] holds the maps and answers at once; [`MemoryBackend`] is it behind the
//! [`StoreBackend`] trait (every answer ready, nothing boxed). The Redis backend keeps a
//! `MemoryState` too: its mirror of the cooldowns, and the whole state while Redis is unreachable.

use std::{
    sync::{Arc, atomic::Ordering::Relaxed},
    time::Duration,
};

use arc_swap::ArcSwap;
use dashmap::DashMap;
use tokio::time::Instant;

use super::{
    Admission, BanditDecay, BanditEvidence, Bench, Bookkeeping, Cooldown, CooldownState, HealthRecord, Limits,
    OutcomeCounts, Reservation, SpendState, StoreBackend, StoreConfig, StoreError, StoreFuture, WindowUsage,
    bandit::BanditState,
    health::HealthState,
    window::{Counts, SlidingWindow},
};
use crate::DeploymentId;

/// A deployment's cooldown record. With half-open recovery the record outlives its deadline: the
/// deployment then waits for one successful probe.
#[derive(Debug)]
struct BenchRecord {
    cooldown: Cooldown,
    half_open: bool,
    probe_until: Option<Instant>,
}

impl BenchRecord {
    fn state(&self, now: Instant) -> CooldownState {
        if self.cooldown.until > now {
            CooldownState::CoolingDown(self.cooldown.clone())
        } else if self.half_open {
            CooldownState::HalfOpen {
                strikes: self.cooldown.strikes,
                probing: self.probe_until.is_some_and(|u| u > now),
            }
        } else {
            CooldownState::Available
        }
    }
}

#[derive(Debug)]
struct Spend {
    started: Instant,
    period: Duration,
    total: f64,
}

#[derive(Debug)]
struct Sticky {
    id: DeploymentId,
    until: Instant,
}

/// The in-memory state: every operation answered at once.
#[derive(Debug)]
pub(crate) struct MemoryState {
    base: Instant,
    config: StoreConfig,
    benches: super::IdMap<BenchRecord>,
    /// How many records `benches` holds, kept beside it: the per-attempt "anything benched?"
    /// check is one load instead of a read lock on every shard (which cores contend on).
    benched: std::sync::atomic::AtomicUsize,
    /// The ids `benches` holds, sorted: the per-call "is any of these candidates benched?" check
    /// reads this list instead of every candidate's record. Rebuilt from the map, under
    /// `benched_ids_lock`, after every change that adds or removes a record (rare: a deployment
    /// benched, cleared, or found expired), before that change's method returns; a rebuild reads
    /// the map as it is then, so the last one always matches it.
    benched_ids: ArcSwap<Box<[DeploymentId]>>,
    benched_ids_lock: parking_lot::Mutex<()>,
    usage: super::IdMap<SlidingWindow>,
    outcomes: super::IdMap<SlidingWindow>,
    spend: DashMap<Arc<str>, Spend>,
    affinity: DashMap<Arc<str>, Sticky>,
    /// Health-probe records and probe leases.
    pub(crate) health: HealthState,
    /// The adaptive pre-routers' evidence.
    pub(crate) bandit: BanditState,
    /// Bumped whenever a cooldown is set, changed or lifted (not when one simply runs out).
    changes: tokio::sync::watch::Sender<u64>,
}

impl MemoryState {
    pub(crate) fn new(config: StoreConfig) -> Self {
        Self {
            base: Instant::now(),
            config,
            benches: super::IdMap::default(),
            benched: std::sync::atomic::AtomicUsize::new(0),
            benched_ids: ArcSwap::from_pointee(Box::default()),
            benched_ids_lock: parking_lot::Mutex::new(()),
            usage: super::IdMap::default(),
            outcomes: super::IdMap::default(),
            spend: DashMap::new(),
            affinity: DashMap::new(),
            health: HealthState::default(),
            bandit: BanditState::default(),
            changes: tokio::sync::watch::Sender::new(0),
        }
    }

    fn changed(&self) {
        self.changes.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Rebuilds `benched_ids` from the map; called with no shard of `benches` held.
    fn records_changed(&self) {
        let _rebuild = self.benched_ids_lock.lock();
        let mut ids: Vec<DeploymentId> = self.benches.iter().map(|e| e.key().clone()).collect();
        ids.sort_unstable();
        self.benched_ids.store(Arc::new(ids.into_boxed_slice()));
    }

    pub(crate) fn watch_cooldowns(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Stores a cooldown record as another replica (or the Redis server) reports it.
    #[cfg(feature = "redis")]
    pub(crate) fn put_bench(
        &self,
        id: &DeploymentId,
        cooldown: Cooldown,
        half_open: bool,
        probe_until: Option<Instant>,
    ) {
        if self.benches.insert(id.clone(), BenchRecord { cooldown, half_open, probe_until }).is_none() {
            self.benched.fetch_add(1, Relaxed);
            self.records_changed();
        }
        self.changed();
    }

    /// The cooldown record of `id` unless it is over: the cooldown and whether it is half-open
    /// (for pushing to Redis what was set while it was unreachable).
    #[cfg(feature = "redis")]
    pub(crate) fn record(&self, id: &DeploymentId) -> Option<(Cooldown, bool)> {
        let now = Instant::now();
        let b = self.benches.get(id)?;
        (b.state(now) != CooldownState::Available).then(|| (b.cooldown.clone(), b.half_open))
    }

    fn window(&self, span: Duration) -> SlidingWindow {
        SlidingWindow::new(self.base, span, self.config.resolution)
    }

    pub(crate) fn may_have_cooldowns(&self) -> bool {
        self.benched.load(Relaxed) > 0
    }

    pub(crate) fn may_have_cooldowns_among<'a>(&self, ids: impl IntoIterator<Item = &'a DeploymentId>) -> bool {
        if !self.may_have_cooldowns() {
            return false;
        }
        let benched = self.benched_ids.load();
        ids.into_iter().any(|id| benched.binary_search(id).is_ok())
    }

    pub(crate) fn cooldown_states(&self, ids: &[DeploymentId]) -> Vec<CooldownState> {
        if !self.may_have_cooldowns() {
            return vec![CooldownState::Available; ids.len()];
        }
        let now = Instant::now();
        let mut dropped = false;
        let states = ids
            .iter()
            .map(|id| {
                let state = self.benches.get(id).map_or(CooldownState::Available, |b| b.state(now));
                if state == CooldownState::Available {
                    // Expired plain cooldowns are dropped on read, which keeps the map bounded.
                    if self.benches.remove_if(id, |_, b| b.state(now) == CooldownState::Available).is_some() {
                        self.benched.fetch_sub(1, Relaxed);
                        dropped = true;
                    }
                }
                state
            })
            .collect();
        if dropped {
            self.records_changed();
        }
        states
    }

    pub(crate) fn all_cooldowns(&self) -> Vec<(DeploymentId, CooldownState)> {
        let now = Instant::now();
        let mut dropped = false;
        self.benches.retain(|_, b| {
            let keep = b.state(now) != CooldownState::Available;
            if !keep {
                self.benched.fetch_sub(1, Relaxed);
                dropped = true;
            }
            keep
        });
        if dropped {
            self.records_changed();
        }
        let mut all: Vec<_> = self.benches.iter().map(|e| (e.key().clone(), e.value().state(now))).collect();
        all.sort_by_key(|(_, s)| match s {
            CooldownState::CoolingDown(c) => Some(c.until),
            _ => None,
        });
        all
    }

    pub(crate) fn bench(&self, id: &DeploymentId, bench: Bench) -> Cooldown {
        let Bench { base, reason, status, growth } = bench;
        let now = Instant::now();
        let mut added = false;
        let mut entry = self.benches.entry(id.clone()).or_insert_with(|| {
            self.benched.fetch_add(1, Relaxed);
            added = true;
            BenchRecord {
                cooldown: Cooldown { until: now, reason: reason.clone(), status, strikes: 0 },
                half_open: false,
                probe_until: None,
            }
        });
        let strikes = if growth.is_some() { entry.cooldown.strikes } else { 0 };
        let ttl = growth.map_or(base, |g| g.ttl(base, strikes));
        let until = now + ttl;
        // Re-cooling extends the deadline, never shortens it.
        if entry.cooldown.until <= now || entry.cooldown.until < until {
            entry.cooldown.until = until;
            entry.cooldown.reason = reason;
            entry.cooldown.status = status;
        }
        entry.cooldown.strikes = if growth.is_some() { strikes.saturating_add(1) } else { 0 };
        entry.half_open = growth.is_some();
        entry.probe_until = None;
        let cooldown = entry.cooldown.clone();
        drop(entry);
        if added {
            self.records_changed();
        }
        self.changed();
        cooldown
    }

    pub(crate) fn claim_probe(&self, id: &DeploymentId, hold: Duration) -> bool {
        let now = Instant::now();
        let Some(mut b) = self.benches.get_mut(id) else { return false };
        match b.state(now) {
            CooldownState::HalfOpen { probing: false, .. } => {
                b.probe_until = Some(now + hold);
                drop(b);
                self.changed();
                true
            }
            _ => false,
        }
    }

    pub(crate) fn release_probe(&self, id: &DeploymentId) {
        if let Some(mut b) = self.benches.get_mut(id) {
            b.probe_until = None;
            drop(b);
            self.changed();
        }
    }

    pub(crate) fn clear_cooldown(&self, id: &DeploymentId) -> bool {
        let now = Instant::now();
        let removed = self.benches.remove(id);
        if removed.is_some() {
            self.benched.fetch_sub(1, Relaxed);
            self.records_changed();
            self.changed();
        }
        removed.is_some_and(|(_, b)| b.state(now) != CooldownState::Available)
    }

    pub(crate) fn record_outcome(&self, id: &DeploymentId, success: bool) -> OutcomeCounts {
        let now = Instant::now();
        let (s, f) = if success { (1, 0) } else { (0, 1) };
        let mut w = self.outcome_window(id);
        w.add(now, s, f);
        let Counts { first: successes, second: failures } = w.totals(now);
        OutcomeCounts { successes, failures }
    }

    /// Counts one success of `id`, when nobody reads the counts.
    pub(crate) fn record_success(&self, id: &DeploymentId) {
        self.outcome_window(id).add(Instant::now(), 1, 0);
    }

    /// `id`'s outcome window, created empty on first use (the lookup clones no key once it is).
    fn outcome_window(&self, id: &DeploymentId) -> dashmap::mapref::one::RefMut<'_, DeploymentId, SlidingWindow> {
        match self.outcomes.get_mut(id) {
            Some(w) => w,
            None => self.outcomes.entry(id.clone()).or_insert_with(|| self.window(self.config.outcome_window)),
        }
    }

    pub(crate) fn usage(&self, ids: &[DeploymentId]) -> Vec<WindowUsage> {
        let now = Instant::now();
        ids.iter()
            .map(|id| {
                self.usage.get_mut(id).map_or_else(WindowUsage::default, |mut w| {
                    let Counts { first: requests, second: tokens } = w.totals(now);
                    WindowUsage { requests, tokens }
                })
            })
            .collect()
    }

    pub(crate) fn try_reserve(&self, id: &DeploymentId, limits: Limits, tokens: u64) -> Admission {
        let now = Instant::now();
        let mut w = self.usage.entry(id.clone()).or_insert_with(|| self.window(self.config.usage_window));
        let Counts { first: requests, second: used } = w.totals(now);
        if limits.admits(WindowUsage { requests, tokens: used }, tokens) {
            let tick = w.add(now, 1, tokens);
            return Admission::Admitted(Reservation { id: id.clone(), tick, tokens, remote: false });
        }
        Admission::Full { retry_in: self.wait_for_room(&mut w, now, limits, tokens) }
    }

    pub(crate) fn room_in(&self, id: &DeploymentId, limits: Limits, tokens: u64) -> Duration {
        let now = Instant::now();
        match self.usage.get_mut(id) {
            Some(mut w) => self.wait_for_room(&mut w, now, limits, tokens),
            None if limits.admits(WindowUsage::default(), tokens) => Duration::ZERO,
            None => self.config.usage_window,
        }
    }

    fn wait_for_room(&self, w: &mut SlidingWindow, now: Instant, limits: Limits, tokens: u64) -> Duration {
        let Counts { first: requests, second: used } = w.totals(now);
        let mut retry_in = Duration::ZERO;
        if let Some(rpm) = limits.rpm
            && requests >= rpm
        {
            let wait = match rpm.checked_sub(1) {
                Some(target) => w.until_first_at_most(now, target),
                None => self.config.usage_window,
            };
            retry_in = retry_in.max(wait);
        }
        if let Some(tpm) = limits.tpm
            && used.saturating_add(tokens) > tpm
        {
            // A request larger than the whole limit never fits: report a full window.
            let wait = match tpm.checked_sub(tokens) {
                Some(target) => w.until_second_at_most(now, target),
                None => self.config.usage_window,
            };
            retry_in = retry_in.max(wait);
        }
        retry_in
    }

    pub(crate) fn reconcile(&self, r: &Reservation, actual: u64) {
        if let Some(mut w) = self.usage.get_mut(&r.id) {
            w.adjust_second(
                r.tick,
                i64::try_from(actual).unwrap_or(i64::MAX).saturating_sub(i64::try_from(r.tokens).unwrap_or(i64::MAX)),
            );
        }
    }

    pub(crate) fn add_spend(&self, key: &str, amount: f64, period: Duration) -> f64 {
        let now = Instant::now();
        let mut s = self.spend.entry(Arc::from(key)).or_insert_with(|| Spend { started: now, period, total: 0.0 });
        if now.saturating_duration_since(s.started) >= s.period {
            *s = Spend { started: now, period, total: 0.0 };
        }
        s.total += amount;
        s.total
    }

    pub(crate) fn spend_state(&self, key: &str) -> SpendState {
        let now = Instant::now();
        self.spend
            .get(key)
            .and_then(|s| {
                let resets_in = (s.started + s.period).checked_duration_since(now).filter(|d| !d.is_zero())?;
                Some(SpendState { total: s.total, resets_in: Some(resets_in) })
            })
            .unwrap_or_default()
    }

    pub(crate) fn affinity(&self, key: &str) -> Option<DeploymentId> {
        let now = Instant::now();
        if let Some(s) = self.affinity.get(key)
            && s.until > now
        {
            return Some(s.id.clone());
        }
        self.affinity.remove_if(key, |_, s| s.until <= now);
        None
    }

    pub(crate) fn set_affinity(&self, key: &str, id: &DeploymentId, ttl: Duration) {
        let now = Instant::now();
        let until = now + ttl;
        if let Some(mut s) = self.affinity.get_mut(key) {
            *s = Sticky { id: id.clone(), until };
            return;
        }
        let cap = self.config.affinity_capacity.max(1);
        if self.affinity.len() >= cap {
            self.evict_affinity(now, cap);
        }
        self.affinity.insert(Arc::from(key), Sticky { id: id.clone(), until });
    }

    /// Makes room below `cap`: drops expired entries, then, if still full, the tenth of the
    /// entries closest to expiry (so a full map pays this O(n) pass once per `cap / 10` inserts).
    fn evict_affinity(&self, now: Instant, cap: usize) {
        self.affinity.retain(|_, s| s.until > now);
        if self.affinity.len() < cap {
            return;
        }
        let mut deadlines: Vec<Instant> = self.affinity.iter().map(|e| e.value().until).collect();
        let drop = (cap / 10).max(1).min(deadlines.len());
        let (_, cut, _) = deadlines.select_nth_unstable(drop - 1);
        let cut = *cut;
        let mut left = drop;
        self.affinity.retain(|_, s| {
            if left > 0 && s.until <= cut {
                left -= 1;
                return false;
            }
            true
        });
    }

    #[cfg(test)]
    pub(crate) fn affinity_len(&self) -> usize {
        self.affinity.len()
    }
}

/// The in-memory backend: one process's state, every answer ready at once (the default of
/// [`StateStore::memory`](super::StateStore::memory)). Wrap it to build a backend of your own (see
/// [`StoreBackend`]).
#[derive(Debug)]
pub struct MemoryBackend(MemoryState);

impl MemoryBackend {
    /// An empty in-memory backend.
    pub fn new(config: StoreConfig) -> Self {
        Self(MemoryState::new(config))
    }

    #[cfg(test)]
    pub(crate) fn state(&self) -> &MemoryState {
        &self.0
    }
}

impl StoreBackend for MemoryBackend {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn watch_cooldowns(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.watch_cooldowns()
    }

    fn cooldown_states<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<CooldownState>> {
        StoreFuture::ready(self.0.cooldown_states(ids))
    }

    fn may_have_cooldowns_among(&self, ids: &mut dyn Iterator<Item = &DeploymentId>) -> bool {
        self.0.may_have_cooldowns_among(ids)
    }

    fn all_cooldowns(&self) -> StoreFuture<'_, Vec<(DeploymentId, CooldownState)>> {
        StoreFuture::ready(self.0.all_cooldowns())
    }

    fn bench<'a>(&'a self, id: &'a DeploymentId, bench: Bench) -> StoreFuture<'a, Cooldown> {
        StoreFuture::ready(self.0.bench(id, bench))
    }

    fn claim_probe<'a>(&'a self, id: &'a DeploymentId, hold: Duration) -> StoreFuture<'a, bool> {
        StoreFuture::ready(self.0.claim_probe(id, hold))
    }

    fn clear_cooldown<'a>(&'a self, id: &'a DeploymentId) -> StoreFuture<'a, bool> {
        StoreFuture::ready(self.0.clear_cooldown(id))
    }

    fn record_outcome<'a>(&'a self, id: &'a DeploymentId, success: bool) -> StoreFuture<'a, OutcomeCounts> {
        StoreFuture::ready(self.0.record_outcome(id, success))
    }

    fn usage<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<WindowUsage>> {
        StoreFuture::ready(self.0.usage(ids))
    }

    fn try_reserve<'a>(&'a self, id: &'a DeploymentId, limits: Limits, tokens: u64) -> StoreFuture<'a, Admission> {
        StoreFuture::ready(self.0.try_reserve(id, limits, tokens))
    }

    fn room_in<'a>(&'a self, id: &'a DeploymentId, limits: Limits, tokens: u64) -> StoreFuture<'a, Duration> {
        StoreFuture::ready(self.0.room_in(id, limits, tokens))
    }

    fn spends<'a>(&'a self, keys: &'a [&'a str]) -> StoreFuture<'a, Result<Vec<SpendState>, StoreError>> {
        StoreFuture::ready(Ok(keys.iter().map(|k| self.0.spend_state(k)).collect()))
    }

    fn affinity<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<DeploymentId>> {
        StoreFuture::ready(self.0.affinity(key))
    }

    fn set_affinity<'a>(&'a self, key: &'a str, id: &'a DeploymentId, ttl: Duration) -> StoreFuture<'a, ()> {
        self.0.set_affinity(key, id, ttl);
        StoreFuture::ready(())
    }

    fn run_bookkeeping(&self, work: Bookkeeping<'_>) {
        match work {
            Bookkeeping::Success(id) => self.0.record_success(id),
            Bookkeeping::ReleaseProbe(id) => self.0.release_probe(id),
            Bookkeeping::Reconcile { reservation, actual_tokens } => self.0.reconcile(reservation, actual_tokens),
            Bookkeeping::Spend { key, amount, period } => {
                self.0.add_spend(key, amount, period);
            }
            Bookkeeping::Task(task) => super::backend::run_inline(task),
        }
    }

    fn may_have_unhealthy(&self) -> bool {
        self.0.health.may_have_unhealthy()
    }

    fn health<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<Option<HealthRecord>>> {
        StoreFuture::ready(self.0.health.health(ids))
    }

    fn all_health(&self) -> StoreFuture<'_, Vec<(DeploymentId, HealthRecord)>> {
        StoreFuture::ready(self.0.health.all())
    }

    fn record_health<'a>(&'a self, id: &'a DeploymentId, record: HealthRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        self.0.health.put(id, record, ttl);
        StoreFuture::ready(())
    }

    fn claim_health_lease<'a>(&'a self, id: &'a DeploymentId, hold: Duration) -> StoreFuture<'a, bool> {
        StoreFuture::ready(self.0.health.claim_lease(id, hold))
    }

    fn bandit_add<'a>(
        &'a self,
        router: &'a str,
        cell: &'a str,
        successes: f64,
        failures: f64,
        decay: BanditDecay,
    ) -> StoreFuture<'a, ()> {
        self.0.bandit.add(router, cell, successes, failures, decay);
        StoreFuture::ready(())
    }

    fn bandit_cells<'a>(&'a self, router: &'a str) -> StoreFuture<'a, Option<Vec<(String, BanditEvidence)>>> {
        StoreFuture::ready(Some(self.0.bandit.cells(router)))
    }
}
