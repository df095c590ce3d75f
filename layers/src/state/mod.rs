//! [`StateStore`]: everything routing remembers, behind one interface.
//!
//! Shared state (cooldowns, outcome counts for the cooldown rules, RPM/TPM usage windows and
//! reservations, spend, affinity) goes through a [`StoreBackend`]: in memory by default, Redis for
//! several replicas (feature `redis`; each operation maps to at most one Redis command or script,
//! see `docs/state.md` and `docs/redis.md`), or one of your own
//! ([`StateStore::with_backend`]). Per-replica state (in-flight counts, latency samples,
//! peak-EWMA) is always local: see [`LocalState`].
//!
//! All time is `tokio::time`, so tests run on a paused clock.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use switchyard_layers::{DeploymentId, StateStore, state::{Admission, Limits}};
//!
//! let store = StateStore::memory();
//! let id = DeploymentId::from("azure-eu-1");
//! let limits = Limits { rpm: Some(1), tpm: None };
//! assert!(matches!(store.try_reserve(&id, limits, 10).await, Admission::Admitted(_)));
//! assert!(matches!(store.try_reserve(&id, limits, 10).await, Admission::Full { .. }));
//! # }
//! ```

mod backend;
mod bandit;
mod health;
mod local;
mod memory;
#[cfg(feature = "redis")]
mod redis;
mod types;
mod window;

/// A concurrent map keyed by deployment id with a fast non-cryptographic hasher (ids are not
/// attacker-chosen: they come from the config).
pub(crate) type IdMap<V> = dashmap::DashMap<DeploymentId, V, rustc_hash::FxBuildHasher>;

use std::{sync::Arc, time::Duration};

pub use backend::{Bookkeeping, StoreBackend, StoreFuture};
pub use bandit::{BanditDecay, BanditEvidence};
pub use health::HealthRecord;
pub use local::{InFlightGuard, LatencyConfig, LocalState, SlotWatch};
pub use memory::MemoryBackend;
#[cfg(feature = "redis")]
pub use redis::{RedisConfig, RedisStats, Topology};
pub use types::{
    Admission, Bench, Cooldown, CooldownState, EnforcedLimits, Growth, Limits, OutcomeCounts, Reservation, SpendState,
    StoreError, WindowUsage,
};

use crate::DeploymentId;

/// Tunables of the store.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct StoreConfig {
    /// RPM/TPM window (60 s).
    pub usage_window: Duration,
    /// Window for the success/failure counts the cooldown rules read (60 s).
    pub outcome_window: Duration,
    /// Resolution of the sliding windows (10 ms): events count for the full window and at most
    /// this much longer; memory per deployment is bounded by `window / resolution` entries.
    pub resolution: Duration,
    /// Latency sample settings.
    pub latency: LatencyConfig,
    /// Most affinity entries kept (100,000): past it, expired entries are swept, then the tenth
    /// of the entries closest to expiry is evicted.
    pub affinity_capacity: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            usage_window: Duration::from_secs(60),
            outcome_window: Duration::from_secs(60),
            resolution: Duration::from_millis(10),
            latency: LatencyConfig::default(),
            affinity_capacity: 100_000,
        }
    }
}

/// Everything routing remembers. Share it as `Arc<StateStore>` between layers (and, with the
/// Redis backend, between replicas).
///
/// A small facade: the shared state is its [`StoreBackend`], the per-replica state its
/// [`LocalState`]. Operations answer from the backend's state or fall back to this replica's;
/// only a budget read ([`spends`](Self::spends)) can fail.
#[derive(Debug)]
pub struct StateStore {
    backend: Arc<dyn StoreBackend>,
    local: LocalState,
}

impl Default for StateStore {
    fn default() -> Self {
        Self::memory()
    }
}

impl StateStore {
    /// The in-memory store with default settings.
    pub fn memory() -> Self {
        Self::memory_with(StoreConfig::default())
    }

    /// The in-memory store.
    pub fn memory_with(config: StoreConfig) -> Self {
        Self::with_backend(MemoryBackend::new(config), config.latency)
    }

    /// The Redis store with default settings; see [`redis_with`](Self::redis_with).
    #[cfg(feature = "redis")]
    pub fn redis(redis: RedisConfig) -> Result<Self, StoreError> {
        Self::redis_with(redis, StoreConfig::default())
    }

    /// The Redis store: shared by every replica that uses the same Redis and namespace.
    ///
    /// Call it inside a Tokio runtime: it starts its background tasks (connection, pub/sub, the
    /// writer), which stop when the store is dropped. It fails only on invalid settings; an
    /// unreachable Redis means the degraded mode (local state) until it answers, so a gateway
    /// starts even when Redis does not. [`ready`](Self::ready) waits for the connection.
    ///
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use switchyard_layers::{StateStore, state::RedisConfig};
    ///
    /// let store = StateStore::redis(RedisConfig::new("redis://127.0.0.1:6379").namespace("gw"))?;
    /// store.ready().await;
    /// assert!(!store.is_degraded());
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "redis")]
    pub fn redis_with(redis: RedisConfig, config: StoreConfig) -> Result<Self, StoreError> {
        Ok(Self::with_backend(redis::RedisBackend::start(redis, config)?, config.latency))
    }

    /// A store over a backend of your own (see [`StoreBackend`] for the contract and an
    /// example); `latency` sets how this replica keeps its latency samples.
    pub fn with_backend(backend: impl StoreBackend, latency: LatencyConfig) -> Self {
        Self::from_shared(Arc::new(backend), latency)
    }

    fn from_shared(backend: Arc<dyn StoreBackend>, latency: LatencyConfig) -> Self {
        Self { backend, local: LocalState::new(latency) }
    }

    /// Per-replica state (in flight, latency).
    pub fn local(&self) -> &LocalState {
        &self.local
    }

    /// The backend's name: `memory`, `redis`, or what a custom backend calls itself.
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Whether a shared backend is unreachable and this replica routes on local state (never for
    /// the memory store).
    pub fn is_degraded(&self) -> bool {
        self.backend.is_degraded()
    }

    /// Resolves once the shared backend is reachable (at once for the memory store).
    pub async fn ready(&self) {
        self.backend.ready().await;
    }

    /// Waits until the bookkeeping queued so far (and with Redis the success counts batched for
    /// the next tick) has reached the backend: at once in memory. Call it on shutdown so the last
    /// requests' counts and spend are not lost.
    pub async fn flush(&self) {
        self.backend.flush().await;
    }

    /// The Redis backend's counters (round trips, errors, degraded mode); `None` for any other.
    #[cfg(feature = "redis")]
    pub fn redis_stats(&self) -> Option<RedisStats> {
        self.backend.redis_stats()
    }

    /// A counter bumped whenever a cooldown is set, changed or lifted, by this replica or (with
    /// Redis) by any other: wait on it to react to cooldown changes without polling.
    pub fn watch_cooldowns(&self) -> tokio::sync::watch::Receiver<u64> {
        self.backend.watch_cooldowns()
    }

    /// Runs bookkeeping that the request does not wait for, the one non-blocking entry point: a
    /// [`Bookkeeping`] write (a success count, a reconciliation, a spend, a probe released) or any
    /// `async` block (which may await the store's operations). The memory store applies it at
    /// once (so tests stay deterministic); with Redis it goes to the bounded background writer
    /// (past its queue it is dropped and counted).
    ///
    /// ```
    /// use std::time::Duration;
    /// use switchyard_layers::{StateStore, state::Bookkeeping};
    ///
    /// let store = StateStore::memory();
    /// store.run_bookkeeping(Bookkeeping::Spend { key: "provider_spend:openai", amount: 0.5, period: Duration::from_secs(3600) });
    /// ```
    pub fn run_bookkeeping<'a>(&self, work: impl Into<Bookkeeping<'a>>) {
        self.backend.run_bookkeeping(work.into());
    }

    /// The cooldowns of `ids` still active now, in the same order (one read for many ids; with
    /// Redis, from the local mirror: no round trip).
    pub async fn cooldowns(&self, ids: &[DeploymentId]) -> Vec<Option<Cooldown>> {
        let states = self.backend.cooldown_states(ids).await;
        states
            .into_iter()
            .map(|s| match s {
                CooldownState::CoolingDown(c) => Some(c),
                _ => None,
            })
            .collect()
    }

    /// A cheap local check for a few deployments: `false` only when none of `ids` is cooling down
    /// or half-open (`true` means "read to find out"), so the cooldown layer can skip its read for
    /// a group none of whose deployments is benched while others are. In memory (and with Redis,
    /// in the mirror) it costs a binary search per id in the list of benched deployments, not a
    /// read of each id's record.
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use switchyard_layers::{DeploymentId, StateStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let store = StateStore::memory();
    /// let (a, b) = (DeploymentId::from("a"), DeploymentId::from("b"));
    /// store.bench(&a, Duration::from_secs(5), Arc::from("rate limited"), Some(429), None).await;
    /// assert!(store.may_have_cooldowns_among([&a, &b]));
    /// assert!(!store.may_have_cooldowns_among([&b]));
    /// # }
    /// ```
    pub fn may_have_cooldowns_among<'a>(&self, ids: impl IntoIterator<Item = &'a DeploymentId>) -> bool {
        self.backend.may_have_cooldowns_among(&mut ids.into_iter())
    }

    /// The cooldown state of `ids`, in the same order (one read for many ids; half-open states
    /// included; with Redis, from the local mirror).
    pub fn cooldown_states<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<CooldownState>> {
        self.backend.cooldown_states(ids)
    }

    /// Every deployment that is cooling down or half-open, soonest deadline first.
    pub fn all_cooldowns(&self) -> StoreFuture<'_, Vec<(DeploymentId, CooldownState)>> {
        self.backend.all_cooldowns()
    }

    /// Benches `id`: for `base`, or with `growth` for `base × factor^strikes` (capped), counting
    /// a strike and leaving the deployment half-open after the deadline until a probe succeeds.
    /// Re-cooling extends, never shortens. Returns the cooldown now in force.
    pub fn bench<'a>(
        &'a self,
        id: &'a DeploymentId,
        base: Duration,
        reason: Arc<str>,
        status: Option<u16>,
        growth: Option<Growth>,
    ) -> StoreFuture<'a, Cooldown> {
        self.backend.bench(id, Bench::new(base, reason, status, growth))
    }

    /// Claims the single probe of a half-open deployment for `hold` (after which an unreleased
    /// claim lapses). Returns whether this caller is the probe.
    pub fn claim_probe<'a>(&'a self, id: &'a DeploymentId, hold: Duration) -> StoreFuture<'a, bool> {
        self.backend.claim_probe(id, hold)
    }

    /// Ends a cooldown (or a half-open state) early; returns whether one was in force.
    pub fn clear_cooldown<'a>(&'a self, id: &'a DeploymentId) -> StoreFuture<'a, bool> {
        self.backend.clear_cooldown(id)
    }

    /// Counts one attempt outcome of `id` and returns the counts in the window, this one included.
    pub fn record_outcome<'a>(&'a self, id: &'a DeploymentId, success: bool) -> StoreFuture<'a, OutcomeCounts> {
        self.backend.record_outcome(id, success)
    }

    /// Usage of `ids` in the current window, in the same order (with Redis, from a cache refreshed
    /// every `sync_interval`: a filter's hint; [`try_reserve`](Self::try_reserve) is exact).
    pub fn usage<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<WindowUsage>> {
        self.backend.usage(ids)
    }

    /// Atomically checks `limits` and, when there is room, takes one request slot and `tokens`
    /// in `id`'s window.
    pub fn try_reserve<'a>(&'a self, id: &'a DeploymentId, limits: Limits, tokens: u64) -> StoreFuture<'a, Admission> {
        self.backend.try_reserve(id, limits, tokens)
    }

    /// How long until `id`'s window has room for one more request of `tokens` under `limits`,
    /// without reserving anything (zero when it has room now).
    pub fn room_in<'a>(&'a self, id: &'a DeploymentId, limits: Limits, tokens: u64) -> StoreFuture<'a, Duration> {
        self.backend.room_in(id, limits, tokens)
    }

    /// Gives a probe claim back without a verdict (the probing request was cancelled or never
    /// reached the deployment), off the request path: [`run_bookkeeping`](Self::run_bookkeeping)
    /// with [`Bookkeeping::ReleaseProbe`].
    pub fn release_probe_detached(&self, id: &DeploymentId) {
        self.backend.run_bookkeeping(Bookkeeping::ReleaseProbe(id));
    }

    /// Replaces a reservation's token estimate with the real usage, off the request path:
    /// [`run_bookkeeping`](Self::run_bookkeeping) with [`Bookkeeping::Reconcile`].
    pub fn reconcile_detached(&self, reservation: &Reservation, actual_tokens: u64) {
        self.backend.run_bookkeeping(Bookkeeping::Reconcile { reservation, actual_tokens });
    }

    /// Adds `amount` to the spend under `key` in a period of `period` that starts with the first
    /// spend, off the request path: [`run_bookkeeping`](Self::run_bookkeeping) with
    /// [`Bookkeeping::Spend`].
    pub fn add_spend_detached(&self, key: &str, amount: f64, period: Duration) {
        self.backend.run_bookkeeping(Bookkeeping::Spend { key, amount, period });
    }

    /// The spend under `key` in its current period.
    pub async fn spend(&self, key: &str) -> Result<f64, StoreError> {
        Ok(self.backend.spends(&[key]).await?[0].total)
    }

    /// The spend under each of `keys` and when its period ends, in the same order (one read for
    /// many keys; with Redis, from a cache refreshed every `sync_interval`, read through once per
    /// key). With Redis unreachable and budgets fail-closed, an error.
    pub fn spends<'a>(&'a self, keys: &'a [&'a str]) -> StoreFuture<'a, Result<Vec<SpendState>, StoreError>> {
        self.backend.spends(keys)
    }

    /// The deployment `key` sticks to, unless its entry expired (an expired entry is dropped).
    pub fn affinity<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<DeploymentId>> {
        self.backend.affinity(key)
    }

    /// A cheap local check: `false` only when no deployment has an unhealthy health record, so
    /// the health filter can skip its read (`true` means "read to find out").
    pub fn may_have_unhealthy(&self) -> bool {
        self.backend.may_have_unhealthy()
    }

    /// The latest health-probe record of each of `ids`, in the same order (`None`: never probed,
    /// or expired). Stale records are returned as they are: the reader decides what is stale. With
    /// Redis, from the local mirror (refreshed by the probe task every interval): no round trip.
    ///
    /// ```
    /// use std::time::Duration;
    /// use switchyard_layers::{DeploymentId, StateStore, state::HealthRecord};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let store = StateStore::memory();
    /// let id = DeploymentId::from("azure-eu-1");
    /// let failed = HealthRecord::new(false, Duration::from_millis(40), Some(503), "503 Service Unavailable");
    /// store.record_health(&id, failed, Duration::from_secs(900)).await;
    /// assert!(!store.health(std::slice::from_ref(&id)).await[0].as_ref().unwrap().healthy);
    /// # }
    /// ```
    pub fn health<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<Option<HealthRecord>>> {
        self.backend.health(ids)
    }

    /// Every health record held, by deployment id.
    pub fn all_health(&self) -> StoreFuture<'_, Vec<(DeploymentId, HealthRecord)>> {
        self.backend.all_health()
    }

    /// Stores a probe's verdict on `id`, kept for `ttl` (an older verdict never replaces a newer
    /// one). With Redis, one script, shared with every replica.
    pub fn record_health<'a>(
        &'a self,
        id: &'a DeploymentId,
        record: HealthRecord,
        ttl: Duration,
    ) -> StoreFuture<'a, ()> {
        self.backend.record_health(id, record, ttl)
    }

    /// Takes the probe lease of `id` for `hold`: whether this replica probes `id` now. With Redis
    /// one replica of the fleet gets it per `hold` (`SET NX PX`).
    pub fn claim_health_lease<'a>(&'a self, id: &'a DeploymentId, hold: Duration) -> StoreFuture<'a, bool> {
        self.backend.claim_health_lease(id, hold)
    }

    /// Brings this replica's view of the health of `ids` up to date with the shared state (with
    /// Redis, one script per deployment, off the request path; at once in memory).
    pub fn refresh_health<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, ()> {
        self.backend.refresh_health(ids)
    }

    /// Makes `key` stick to `id` for `ttl` from now (replacing and refreshing any earlier entry).
    /// The number of entries is bounded by [`StoreConfig::affinity_capacity`]. With Redis, the
    /// write goes to the background writer.
    pub fn set_affinity<'a>(&'a self, key: &'a str, id: &'a DeploymentId, ttl: Duration) -> StoreFuture<'a, ()> {
        self.backend.set_affinity(key, id, ttl)
    }

    /// Adds evidence to `cell` of the adaptive pre-router `router`, discounted and capped by
    /// `decay` (atomic; with Redis one script on the server's clock, shared with every replica).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use switchyard_layers::{StateStore, state::BanditDecay};
    ///
    /// let store = StateStore::memory();
    /// let decay = BanditDecay::new(Duration::from_secs(86_400), 190.0);
    /// store.bandit_add("smart-router", "general|gpt-4o", 1.0, 0.0, decay).await;
    /// let cells = store.bandit_cells("smart-router").await.expect("the memory backend keeps them");
    /// assert_eq!(cells[0].0, "general|gpt-4o");
    /// assert_eq!(cells[0].1.successes, 1.0);
    /// # }
    /// ```
    pub fn bandit_add<'a>(
        &'a self,
        router: &'a str,
        cell: &'a str,
        successes: f64,
        failures: f64,
        decay: BanditDecay,
    ) -> StoreFuture<'a, ()> {
        self.backend.bandit_add(router, cell, successes, failures, decay)
    }

    /// Every cell of the adaptive pre-router `router` held, with its evidence (`None`: the
    /// backend keeps none).
    pub fn bandit_cells<'a>(&'a self, router: &'a str) -> StoreFuture<'a, Option<Vec<(String, BanditEvidence)>>> {
        self.backend.bandit_cells(router)
    }
}

#[cfg(test)]
mod tests {
    use tokio::time::Instant;

    use super::*;

    /// A memory store and its backend's state, for the checks that look inside it.
    fn memory_store(config: StoreConfig) -> (StateStore, Arc<MemoryBackend>) {
        let backend = Arc::new(MemoryBackend::new(config));
        (StateStore::from_shared(backend.clone(), config.latency), backend)
    }

    #[tokio::test(start_paused = true)]
    async fn rpm_boundary_is_exact() {
        let store = StateStore::memory();
        let id = DeploymentId::from("d");
        let limits = Limits { rpm: Some(3), tpm: None };
        for _ in 0..3 {
            assert!(matches!(store.try_reserve(&id, limits, 0).await, Admission::Admitted(_)));
        }
        match store.try_reserve(&id, limits, 0).await {
            Admission::Full { retry_in } => assert_eq!(retry_in, Duration::from_secs(60)),
            Admission::Admitted(_) => panic!("the 4th request in the window must not pass"),
        }
        tokio::time::advance(Duration::from_secs(60)).await;
        assert!(matches!(store.try_reserve(&id, limits, 0).await, Admission::Admitted(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn tpm_reservation_is_reconciled_with_real_usage() {
        let store = StateStore::memory();
        let id = DeploymentId::from("d");
        let limits = Limits { rpm: None, tpm: Some(1000) };
        let Admission::Admitted(r) = store.try_reserve(&id, limits, 900).await else { panic!("admitted") };
        assert!(matches!(store.try_reserve(&id, limits, 200).await, Admission::Full { .. }));
        store.reconcile_detached(&r, 300);
        store.flush().await;
        assert_eq!(store.usage(std::slice::from_ref(&id)).await[0].tokens, 300);
        assert!(matches!(store.try_reserve(&id, limits, 200).await, Admission::Admitted(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn recooling_extends_and_never_shortens() {
        let store = StateStore::memory();
        let id = DeploymentId::from("d");
        let long = store.bench(&id, Duration::from_secs(60), "429".into(), Some(429), None).await;
        let short = store.bench(&id, Duration::from_secs(5), "500".into(), Some(500), None).await;
        assert_eq!(short.until, long.until);
        let longer = store.bench(&id, Duration::from_secs(120), "429".into(), Some(429), None).await;
        assert!(longer.until > long.until);
        tokio::time::advance(Duration::from_secs(121)).await;
        assert_eq!(store.cooldowns(std::slice::from_ref(&id)).await, vec![None]);
    }

    #[tokio::test(start_paused = true)]
    async fn half_open_admits_one_probe_and_grows_the_next_cooldown() {
        let store = StateStore::memory();
        let id = DeploymentId::from("d");
        let growth = Some(Growth::new(2.0, Duration::from_secs(60)));
        let base = Duration::from_secs(5);
        let first = store.bench(&id, base, "500".into(), Some(500), growth).await;
        assert_eq!(first.strikes, 1);
        tokio::time::advance(base).await;
        let ids = std::slice::from_ref(&id);
        assert_eq!(store.cooldown_states(ids).await, vec![CooldownState::HalfOpen { strikes: 1, probing: false }]);
        assert!(store.claim_probe(&id, Duration::from_secs(30)).await);
        assert!(!store.claim_probe(&id, Duration::from_secs(30)).await, "one probe at a time");
        let second = store.bench(&id, base, "500".into(), Some(500), growth).await;
        assert_eq!(second.until - Instant::now(), Duration::from_secs(10));
        assert_eq!(second.strikes, 2);
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(store.claim_probe(&id, Duration::from_secs(30)).await);
        assert!(store.clear_cooldown(&id).await);
        assert_eq!(store.cooldown_states(ids).await, vec![CooldownState::Available]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_benched_count_follows_every_insert_and_removal() {
        let (store, mirror) = memory_store(StoreConfig::default());
        assert!(!mirror.state().may_have_cooldowns());
        let (a, b) = (DeploymentId::from("a"), DeploymentId::from("b"));
        store.bench(&a, Duration::from_secs(5), "500".into(), Some(500), None).await;
        store.bench(&a, Duration::from_secs(9), "500".into(), Some(500), None).await;
        store.bench(&b, Duration::from_secs(60), "429".into(), Some(429), None).await;
        assert!(store.clear_cooldown(&b).await);
        assert!(mirror.state().may_have_cooldowns(), "a is still benched");
        tokio::time::advance(Duration::from_secs(10)).await;
        // An expired record is dropped when read, and the count with it.
        assert_eq!(store.cooldown_states(std::slice::from_ref(&a)).await, vec![CooldownState::Available]);
        assert!(!mirror.state().may_have_cooldowns());
        store.bench(&b, Duration::from_secs(1), "x".into(), None, None).await;
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(store.all_cooldowns().await.is_empty());
        assert!(!mirror.state().may_have_cooldowns());
    }

    #[tokio::test(start_paused = true)]
    async fn the_check_among_candidates_sees_only_their_own_cooldowns() {
        let (store, mirror) = memory_store(StoreConfig::default());
        let [a, b, c] = ["a", "b", "c"].map(DeploymentId::from);
        assert!(!store.may_have_cooldowns_among([&a, &b, &c]));
        store.bench(&b, Duration::from_secs(5), "500".into(), Some(500), None).await;
        assert!(mirror.state().may_have_cooldowns(), "something is benched somewhere");
        assert!(!store.may_have_cooldowns_among([&a, &c]), "but none of these");
        assert!(store.may_have_cooldowns_among([&a, &b]));
        assert!(!store.may_have_cooldowns_among([]));
        // Half-open records count until the probe clears them.
        let growth = Some(Growth::new(2.0, Duration::from_secs(60)));
        store.bench(&c, Duration::from_secs(5), "503".into(), Some(503), growth).await;
        tokio::time::advance(Duration::from_secs(6)).await;
        assert_eq!(
            store.cooldown_states(&[b.clone(), c.clone()]).await,
            vec![CooldownState::Available, CooldownState::HalfOpen { strikes: 1, probing: false }]
        );
        assert!(!store.may_have_cooldowns_among([&a, &b]), "b's expired record was dropped when read");
        assert!(store.may_have_cooldowns_among([&c]));
        assert!(store.clear_cooldown(&c).await);
        assert!(!store.may_have_cooldowns_among([&a, &b, &c]));
        // An expired record not read yet still counts ("read to find out"); the read drops it.
        store.bench(&a, Duration::from_secs(1), "x".into(), None, None).await;
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(store.may_have_cooldowns_among([&a]));
        assert!(store.all_cooldowns().await.is_empty());
        assert!(!store.may_have_cooldowns_among([&a]));
    }

    /// Benches, clears and reads (which drop the records that ran out) from several threads at
    /// once, on the real clock with cooldowns of at most 2 ms: once they are done, the list the
    /// check reads holds exactly the deployments with a record, whatever the interleaving was.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_benched_list_matches_the_records_after_concurrent_changes() {
        use rand::{Rng, SeedableRng, rngs::SmallRng};
        let store = Arc::new(StateStore::memory());
        let ids: Arc<[DeploymentId]> = (0..8).map(|i| DeploymentId::from(format!("d{i}"))).collect();
        let tasks: Vec<_> = (0..4u64)
            .map(|seed| {
                let (store, ids) = (store.clone(), ids.clone());
                tokio::spawn(async move {
                    let mut rng = SmallRng::seed_from_u64(seed);
                    for _ in 0..2_000 {
                        let id = &ids[rng.random_range(0..ids.len())];
                        match rng.random_range(0..4) {
                            0 => {
                                let ttl = Duration::from_micros(rng.random_range(0..2_000));
                                store.bench(id, ttl, "500".into(), Some(500), None).await;
                            }
                            1 => {
                                store.clear_cooldown(id).await;
                            }
                            2 => {
                                store.cooldown_states(&ids).await;
                            }
                            _ => {
                                store.all_cooldowns().await;
                            }
                        }
                        if rng.random_range(0..64) == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        // A record found running now stays until it is read again; one found over is dropped.
        let states = store.cooldown_states(&ids).await;
        for (id, state) in ids.iter().zip(states) {
            let benched = !matches!(state, CooldownState::Available);
            assert_eq!(store.may_have_cooldowns_among([id]), benched, "{id}: {state:?}");
        }
    }

    #[test]
    fn growth_is_capped() {
        let g = Growth::new(3.0, Duration::from_secs(60));
        assert_eq!(g.ttl(Duration::from_secs(5), 0), Duration::from_secs(5));
        assert_eq!(g.ttl(Duration::from_secs(5), 2), Duration::from_secs(45));
        assert_eq!(g.ttl(Duration::from_secs(5), 3), Duration::from_secs(60));
        assert_eq!(g.ttl(Duration::from_secs(5), u32::MAX), Duration::from_secs(60));
    }

    #[tokio::test(start_paused = true)]
    async fn outcome_counts_slide() {
        let store = StateStore::memory();
        let id = DeploymentId::from("d");
        store.record_outcome(&id, true).await;
        let c = store.record_outcome(&id, false).await;
        assert_eq!((c.successes, c.failures), (1, 1));
        tokio::time::advance(Duration::from_secs(61)).await;
        let c = store.record_outcome(&id, false).await;
        assert_eq!((c.successes, c.failures), (0, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn spend_resets_after_its_period() {
        let store = StateStore::memory();
        store.add_spend_detached("p:openai", 1.5, Duration::from_secs(10));
        store.flush().await;
        assert_eq!(store.spend("p:openai").await.unwrap(), 1.5);
        store.add_spend_detached("p:openai", 1.0, Duration::from_secs(10));
        store.flush().await;
        assert_eq!(store.spend("p:openai").await.unwrap(), 2.5);
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(store.spend("p:openai").await.unwrap(), 0.0);
        store.add_spend_detached("p:openai", 0.5, Duration::from_secs(10));
        store.flush().await;
        assert_eq!(store.spend("p:openai").await.unwrap(), 0.5);
    }

    #[tokio::test(start_paused = true)]
    async fn spends_report_when_the_period_ends() {
        let store = StateStore::memory();
        store.add_spend_detached("k", 2.0, Duration::from_secs(10));
        tokio::time::advance(Duration::from_secs(4)).await;
        let read = store.spends(&["k", "none"]).await.unwrap();
        assert_eq!(read[0], SpendState { total: 2.0, resets_in: Some(Duration::from_secs(6)) });
        assert_eq!(read[1], SpendState::default());
    }

    #[tokio::test(start_paused = true)]
    async fn affinity_expires_and_refreshes() {
        let store = StateStore::memory();
        let ttl = Duration::from_secs(10);
        store.set_affinity("s", &DeploymentId::from("a"), ttl).await;
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(store.affinity("s").await, Some(DeploymentId::from("a")));
        store.set_affinity("s", &DeploymentId::from("a"), ttl).await;
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(store.affinity("s").await, Some(DeploymentId::from("a")), "refreshed");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(store.affinity("s").await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn affinity_entries_are_bounded() {
        let config = StoreConfig { affinity_capacity: 20, ..StoreConfig::default() };
        let (store, mirror) = memory_store(config);
        for i in 0..100u64 {
            // Later keys live longer, so eviction takes the oldest first.
            store.set_affinity(&format!("k{i}"), &DeploymentId::from("a"), Duration::from_secs(100 + i)).await;
        }
        assert!(mirror.state().affinity_len() <= 20);
        assert_eq!(store.affinity("k99").await, Some(DeploymentId::from("a")));
        assert_eq!(store.affinity("k0").await, None);
    }
}
