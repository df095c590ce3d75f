//! [`StateStore`]: everything routing remembers, behind one interface.
//!
//! Shared state (cooldowns, outcome counts for the cooldown rules, RPM/TPM usage windows and
//! reservations, spend) goes through a backend: in memory by default, Redis for several replicas
//! (feature `redis`; each operation here maps to at most one Redis command or script, see
//! `docs/state.md` and `docs/redis.md`). Per-replica state (in-flight counts, latency samples, peak-EWMA) is always
//! local: see [`LocalState`].
//!
//! All time is `tokio::time`, so tests run on a paused clock.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use switchyard_layers::{DeploymentId, StateStore, state::{Admission, Limits}};
//!
//! let store = StateStore::memory();
//! let id = DeploymentId::from("azure-eu-1");
//! let limits = Limits { rpm: Some(1), tpm: None };
//! assert!(matches!(store.try_reserve(&id, limits, 10).await?, Admission::Admitted(_)));
//! assert!(matches!(store.try_reserve(&id, limits, 10).await?, Admission::Full { .. }));
//! # Ok(()) }
//! ```

mod local;
mod memory;
#[cfg(feature = "redis")]
mod redis;
mod window;

/// A concurrent map keyed by deployment id with a fast non-cryptographic hasher (ids are not
/// attacker-chosen: they come from the config).
pub(crate) type IdMap<V> = dashmap::DashMap<DeploymentId, V, rustc_hash::FxBuildHasher>;

use std::{fmt, sync::Arc, time::Duration};

pub use local::{InFlightGuard, LatencyConfig, LocalState, SlotWatch};
use memory::MemoryBackend;
#[cfg(feature = "redis")]
pub use redis::{RedisConfig, RedisStats, Topology};
use tokio::time::Instant;

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

/// A deployment benched until a deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Cooldown {
    /// When it may serve again.
    pub until: Instant,
    /// Why (masked and truncated by the caller; never a secret).
    pub reason: Arc<str>,
    /// The upstream status that caused it, if any.
    pub status: Option<u16>,
    /// Consecutive cooldowns without a successful probe in between (half-open recovery only).
    pub strikes: u32,
}

/// Where a deployment stands with respect to cooldowns.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CooldownState {
    /// Free to serve.
    Available,
    /// Benched until the deadline.
    CoolingDown(Cooldown),
    /// Its deadline passed (half-open recovery): one probe request decides whether it serves again.
    HalfOpen {
        /// Cooldowns in a row so far.
        strikes: u32,
        /// A probe is in flight (claimed by some request, on some replica).
        probing: bool,
    },
}

/// How a repeated cooldown grows under half-open recovery: `base × factor^strikes`, capped.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Growth {
    /// Multiplier per strike (≥ 1).
    pub factor: f64,
    /// Longest cooldown.
    pub cap: Duration,
}

impl Growth {
    /// Growth by `factor` per strike up to `cap`.
    pub fn new(factor: f64, cap: Duration) -> Self {
        Self { factor: if factor.is_finite() { factor.max(1.0) } else { 1.0 }, cap }
    }

    /// The cooldown after `strikes` earlier ones.
    pub fn ttl(&self, base: Duration, strikes: u32) -> Duration {
        let scaled = base.as_secs_f64() * self.factor.powi(strikes.min(64) as i32);
        if !scaled.is_finite() || scaled >= self.cap.as_secs_f64() {
            return self.cap.max(base.min(self.cap));
        }
        Duration::from_secs_f64(scaled)
    }
}

/// Successes and failures of a deployment in the outcome window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutcomeCounts {
    /// Successful attempts.
    pub successes: u64,
    /// Failed attempts.
    pub failures: u64,
}

/// Requests and tokens of a deployment in the usage window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WindowUsage {
    /// Requests admitted.
    pub requests: u64,
    /// Tokens (reserved estimates, reconciled with real usage).
    pub tokens: u64,
}

/// The limits a reservation is checked against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Requests per window.
    pub rpm: Option<u64>,
    /// Tokens per window.
    pub tpm: Option<u64>,
}

impl Limits {
    /// Whether `usage` leaves room for one more request of `tokens` (the limit-th request passes,
    /// the next does not).
    pub fn admits(&self, usage: WindowUsage, tokens: u64) -> bool {
        self.rpm.is_none_or(|rpm| usage.requests < rpm)
            && self.tpm.is_none_or(|tpm| usage.tokens.saturating_add(tokens) <= tpm)
    }
}

/// A request slot (and token estimate) taken in a deployment's usage window.
#[derive(Clone, Debug)]
pub struct Reservation {
    id: DeploymentId,
    tick: u64,
    tokens: u64,
    /// Taken in the shared (Redis) window rather than this replica's.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    remote: bool,
}

impl Reservation {
    /// The deployment reserved on.
    pub fn deployment(&self) -> &DeploymentId {
        &self.id
    }

    /// The tokens reserved.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }
}

/// The answer of [`StateStore::try_reserve`].
#[derive(Clone, Debug)]
pub enum Admission {
    /// Reserved.
    Admitted(Reservation),
    /// At a limit; a slot frees in `retry_in`.
    Full {
        /// Time until the window has room for this request.
        retry_in: Duration,
    },
}

/// The spend under one key in its current period.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct SpendState {
    /// Spent so far in the period (0 when no period is running).
    pub total: f64,
    /// Time until the period ends and the spend resets; `None` when no period is running.
    pub resets_in: Option<Duration>,
}

/// A backend failure (Redis unreachable, timeout, ...). The memory backend never fails.
#[derive(Debug)]
pub struct StoreError {
    message: String,
}

impl StoreError {
    /// A backend failure with a message.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into() }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "state store: {}", self.message)
    }
}

impl std::error::Error for StoreError {}

// One store per process, behind an `Arc`: the size difference does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum Backend {
    Memory(MemoryBackend),
    #[cfg(feature = "redis")]
    Redis(redis::RedisBackend),
}

/// Everything routing remembers. Share it as `Arc<StateStore>` between layers (and, with the
/// Redis backend, between replicas).
#[derive(Debug)]
pub struct StateStore {
    backend: Backend,
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
        Self { backend: Backend::Memory(MemoryBackend::new(config)), local: LocalState::new(config.latency) }
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
        Ok(Self {
            backend: Backend::Redis(redis::RedisBackend::start(redis, config)?),
            local: LocalState::new(config.latency),
        })
    }

    /// Per-replica state (in flight, latency).
    pub fn local(&self) -> &LocalState {
        &self.local
    }

    /// The backend's name: `memory` or `redis`.
    pub fn backend_name(&self) -> &'static str {
        match &self.backend {
            Backend::Memory(_) => "memory",
            #[cfg(feature = "redis")]
            Backend::Redis(_) => "redis",
        }
    }

    /// Whether a shared backend is unreachable and this replica routes on local state (never for
    /// the memory store).
    pub fn is_degraded(&self) -> bool {
        match &self.backend {
            Backend::Memory(_) => false,
            #[cfg(feature = "redis")]
            Backend::Redis(r) => r.is_degraded(),
        }
    }

    /// Resolves once the shared backend is reachable (at once for the memory store).
    pub async fn ready(&self) {
        match &self.backend {
            Backend::Memory(_) => {}
            #[cfg(feature = "redis")]
            Backend::Redis(r) => r.ready().await,
        }
    }

    /// Waits until the bookkeeping queued so far (detached writes, and with Redis the success
    /// counts batched for the next tick) has reached the backend: at once in memory. Call it on
    /// shutdown so the last requests' counts and spend are not lost.
    pub async fn flush(&self) {
        match &self.backend {
            Backend::Memory(_) => {}
            #[cfg(feature = "redis")]
            Backend::Redis(r) => r.flush().await,
        }
    }

    /// The Redis backend's counters (round trips, errors, degraded mode); `None` for memory.
    #[cfg(feature = "redis")]
    pub fn redis_stats(&self) -> Option<RedisStats> {
        match &self.backend {
            Backend::Memory(_) => None,
            Backend::Redis(r) => Some(r.stats()),
        }
    }

    /// A counter bumped whenever a cooldown is set, changed or lifted, by this replica or (with
    /// Redis) by any other: wait on it to react to cooldown changes without polling.
    pub fn watch_cooldowns(&self) -> tokio::sync::watch::Receiver<u64> {
        self.mirror().watch_cooldowns()
    }

    /// The local cooldown state: the whole state in memory, the mirror of Redis's otherwise.
    fn mirror(&self) -> &MemoryBackend {
        match &self.backend {
            Backend::Memory(m) => m,
            #[cfg(feature = "redis")]
            Backend::Redis(r) => r.local(),
        }
    }

    /// Runs bookkeeping that the request does not wait for: at once in memory (so tests stay
    /// deterministic), on the background writer with a networked backend (bounded: past the
    /// writer's queue it is dropped and counted).
    pub fn run_bookkeeping(&self, work: impl Future<Output = ()> + Send + 'static) {
        let mut work = Box::pin(work);
        match &self.backend {
            Backend::Memory(_) => {
                if futures_util::FutureExt::now_or_never(&mut work).is_none() {
                    // Memory operations never wait; anything else the work awaits goes on a task.
                    if let Ok(rt) = tokio::runtime::Handle::try_current() {
                        rt.spawn(work);
                    }
                }
            }
            #[cfg(feature = "redis")]
            Backend::Redis(r) => r.detach(work),
        }
    }

    /// The cooldowns of `ids` still active now, in the same order (one read for many ids; with
    /// Redis, from the local mirror: no round trip).
    pub async fn cooldowns(&self, ids: &[DeploymentId]) -> Result<Vec<Option<Cooldown>>, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.cooldowns(ids)),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => Ok(r.cooldowns(ids)),
        }
    }

    /// A cheap local check for a few deployments: `false` only when none of `ids` is cooling down
    /// or half-open (`true` means "read to find out"), so the cooldown layer can skip its read for a group none of whose deployments
    /// is benched while others are. Local (with Redis, the mirror); it costs a binary search per
    /// id in the list of benched deployments, not a read of each id's record.
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use switchyard_layers::{DeploymentId, StateStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), switchyard_layers::state::StoreError> {
    /// let store = StateStore::memory();
    /// let (a, b) = (DeploymentId::from("a"), DeploymentId::from("b"));
    /// store.bench(&a, Duration::from_secs(5), Arc::from("rate limited"), Some(429), None).await?;
    /// assert!(store.may_have_cooldowns_among([&a, &b]));
    /// assert!(!store.may_have_cooldowns_among([&b]));
    /// # Ok(())
    /// # }
    /// ```
    pub fn may_have_cooldowns_among<'a>(&self, ids: impl IntoIterator<Item = &'a DeploymentId>) -> bool {
        self.mirror().may_have_cooldowns_among(ids)
    }

    /// The cooldown state of `ids`, in the same order (one read for many ids; half-open states
    /// included; with Redis, from the local mirror).
    pub async fn cooldown_states(&self, ids: &[DeploymentId]) -> Result<Vec<CooldownState>, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.cooldown_states(ids)),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => Ok(r.cooldown_states(ids)),
        }
    }

    /// Every deployment that is cooling down or half-open, soonest deadline first.
    pub async fn all_cooldowns(&self) -> Result<Vec<(DeploymentId, CooldownState)>, StoreError> {
        Ok(self.mirror().all_cooldowns())
    }

    /// Benches `id` for `ttl`. A cooldown already running past the new deadline is kept (re-cooling
    /// extends, never shortens). Returns the cooldown now in force.
    pub async fn set_cooldown(
        &self,
        id: &DeploymentId,
        ttl: Duration,
        reason: Arc<str>,
        status: Option<u16>,
    ) -> Result<Cooldown, StoreError> {
        self.bench(id, ttl, reason, status, None).await
    }

    /// Benches `id`: for `base`, or with `growth` for `base × factor^strikes` (capped), counting
    /// a strike and leaving the deployment half-open after the deadline until a probe succeeds.
    /// Re-cooling extends, never shortens.
    pub async fn bench(
        &self,
        id: &DeploymentId,
        base: Duration,
        reason: Arc<str>,
        status: Option<u16>,
        growth: Option<Growth>,
    ) -> Result<Cooldown, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.bench(id, base, reason, status, growth)),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => Ok(r.bench(id, base, reason, status, growth).await),
        }
    }

    /// Claims the single probe of a half-open deployment for `hold` (after which an unreleased
    /// claim lapses). Returns whether this caller is the probe.
    pub async fn claim_probe(&self, id: &DeploymentId, hold: Duration) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.claim_probe(id, hold)),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => Ok(r.claim_probe(id, hold).await),
        }
    }

    /// Gives a probe claim back without a verdict (the probing request was cancelled or never
    /// reached the deployment), off the request path.
    pub fn release_probe_detached(&self, id: &DeploymentId) {
        match &self.backend {
            Backend::Memory(m) => m.release_probe(id),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => r.release_probe(id),
        }
    }

    /// Ends a cooldown (or a half-open state) early; returns whether one was in force.
    pub async fn clear_cooldown(&self, id: &DeploymentId) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.clear_cooldown(id)),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => Ok(r.clear_cooldown(id).await),
        }
    }

    /// Counts a success of `id` whose counts the caller does not read, at once: the memory store
    /// counts it, Redis adds it to the batch its supervisor records every tick (or counts it
    /// locally while degraded). Saves the hot path the boxed future, queue and wake-up of
    /// [`run_bookkeeping`](Self::run_bookkeeping) per call.
    pub(crate) fn record_success_now(&self, id: &DeploymentId) {
        match &self.backend {
            Backend::Memory(m) => m.record_success(id),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => r.count_success(id),
        }
    }

    /// Counts one attempt outcome of `id` and returns the counts in the window, this one included.
    pub async fn record_outcome(&self, id: &DeploymentId, success: bool) -> Result<OutcomeCounts, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.record_outcome(id, success)),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => Ok(r.record_outcome(id, success).await),
        }
    }

    /// Usage of `ids` in the current window, in the same order (with Redis, from a cache refreshed
    /// every `sync_interval`: a filter's hint; [`try_reserve`](Self::try_reserve) is exact).
    pub async fn usage(&self, ids: &[DeploymentId]) -> Result<Vec<WindowUsage>, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.usage(ids)),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => Ok(r.usage(ids)),
        }
    }

    /// Atomically checks `limits` and, when there is room, takes one request slot and `tokens`
    /// in `id`'s window.
    pub async fn try_reserve(&self, id: &DeploymentId, limits: Limits, tokens: u64) -> Result<Admission, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.try_reserve(id, limits, tokens)),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => Ok(r.try_reserve(id, limits, tokens).await),
        }
    }

    /// How long until `id`'s window has room for one more request of `tokens` under `limits`,
    /// without reserving anything (zero when it has room now).
    pub async fn room_in(&self, id: &DeploymentId, limits: Limits, tokens: u64) -> Result<Duration, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.room_in(id, limits, tokens)),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => Ok(r.room_in(id, limits, tokens).await),
        }
    }

    /// Replaces a reservation's token estimate with the real usage.
    pub async fn reconcile(&self, reservation: &Reservation, actual_tokens: u64) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Memory(m) => m.reconcile(reservation, actual_tokens),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => r.reconcile(reservation, actual_tokens).await,
        }
        Ok(())
    }

    /// Like [`reconcile`](Self::reconcile), off the request path: applied inline in memory, queued
    /// for a background writer on a networked backend. Used by end-of-body hooks, which cannot wait.
    pub fn reconcile_detached(&self, reservation: &Reservation, actual_tokens: u64) {
        match &self.backend {
            Backend::Memory(m) => m.reconcile(reservation, actual_tokens),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => r.reconcile_detached(reservation, actual_tokens),
        }
    }

    /// Adds `amount` to the spend under `key` in a period of `period` that starts with the first
    /// spend; returns the total in the current period.
    pub async fn add_spend(&self, key: &str, amount: f64, period: Duration) -> Result<f64, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.add_spend(key, amount, period)),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => Ok(r.add_spend(key, amount, period).await),
        }
    }

    /// Like [`add_spend`](Self::add_spend), off the request path: applied inline in memory,
    /// queued for a background writer on a networked backend. Used by end-of-body hooks, which
    /// cannot wait.
    pub fn add_spend_detached(&self, key: &str, amount: f64, period: Duration) {
        match &self.backend {
            Backend::Memory(m) => {
                m.add_spend(key, amount, period);
            }
            #[cfg(feature = "redis")]
            Backend::Redis(r) => r.add_spend_detached(key, amount, period),
        }
    }

    /// The spend under `key` in its current period.
    pub async fn spend(&self, key: &str) -> Result<f64, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.spend(key)),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => r.spend(key).await,
        }
    }

    /// The spend under each of `keys` and when its period ends, in the same order (one read for
    /// many keys; with Redis, from a cache refreshed every `sync_interval`, read through once per
    /// key). With Redis unreachable and budgets fail-closed, an error.
    pub async fn spends(&self, keys: &[&str]) -> Result<Vec<SpendState>, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(keys.iter().map(|k| m.spend_state(k)).collect()),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => r.spends(keys).await,
        }
    }

    /// The deployment `key` sticks to, unless its entry expired (an expired entry is dropped).
    pub async fn affinity(&self, key: &str) -> Result<Option<DeploymentId>, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.affinity(key)),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => Ok(r.affinity(key).await),
        }
    }

    /// Makes `key` stick to `id` for `ttl` from now (replacing and refreshing any earlier entry).
    /// The number of entries is bounded by [`StoreConfig::affinity_capacity`]. With Redis, the
    /// write goes to the background writer.
    pub async fn set_affinity(&self, key: &str, id: &DeploymentId, ttl: Duration) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Memory(m) => m.set_affinity(key, id, ttl),
            #[cfg(feature = "redis")]
            Backend::Redis(r) => r.set_affinity(key, id, ttl),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn rpm_boundary_is_exact() {
        let store = StateStore::memory();
        let id = DeploymentId::from("d");
        let limits = Limits { rpm: Some(3), tpm: None };
        for _ in 0..3 {
            assert!(matches!(store.try_reserve(&id, limits, 0).await.unwrap(), Admission::Admitted(_)));
        }
        match store.try_reserve(&id, limits, 0).await.unwrap() {
            Admission::Full { retry_in } => assert_eq!(retry_in, Duration::from_secs(60)),
            Admission::Admitted(_) => panic!("the 4th request in the window must not pass"),
        }
        tokio::time::advance(Duration::from_secs(60)).await;
        assert!(matches!(store.try_reserve(&id, limits, 0).await.unwrap(), Admission::Admitted(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn tpm_reservation_is_reconciled_with_real_usage() {
        let store = StateStore::memory();
        let id = DeploymentId::from("d");
        let limits = Limits { rpm: None, tpm: Some(1000) };
        let Admission::Admitted(r) = store.try_reserve(&id, limits, 900).await.unwrap() else { panic!("admitted") };
        assert!(matches!(store.try_reserve(&id, limits, 200).await.unwrap(), Admission::Full { .. }));
        store.reconcile(&r, 300).await.unwrap();
        assert_eq!(store.usage(std::slice::from_ref(&id)).await.unwrap()[0].tokens, 300);
        assert!(matches!(store.try_reserve(&id, limits, 200).await.unwrap(), Admission::Admitted(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn recooling_extends_and_never_shortens() {
        let store = StateStore::memory();
        let id = DeploymentId::from("d");
        let long = store.set_cooldown(&id, Duration::from_secs(60), "429".into(), Some(429)).await.unwrap();
        let short = store.set_cooldown(&id, Duration::from_secs(5), "500".into(), Some(500)).await.unwrap();
        assert_eq!(short.until, long.until);
        let longer = store.set_cooldown(&id, Duration::from_secs(120), "429".into(), Some(429)).await.unwrap();
        assert!(longer.until > long.until);
        tokio::time::advance(Duration::from_secs(121)).await;
        assert_eq!(store.cooldowns(std::slice::from_ref(&id)).await.unwrap(), vec![None]);
    }

    #[tokio::test(start_paused = true)]
    async fn half_open_admits_one_probe_and_grows_the_next_cooldown() {
        let store = StateStore::memory();
        let id = DeploymentId::from("d");
        let growth = Some(Growth::new(2.0, Duration::from_secs(60)));
        let base = Duration::from_secs(5);
        let first = store.bench(&id, base, "500".into(), Some(500), growth).await.unwrap();
        assert_eq!(first.strikes, 1);
        tokio::time::advance(base).await;
        let ids = std::slice::from_ref(&id);
        assert_eq!(
            store.cooldown_states(ids).await.unwrap(),
            vec![CooldownState::HalfOpen { strikes: 1, probing: false }]
        );
        assert!(store.claim_probe(&id, Duration::from_secs(30)).await.unwrap());
        assert!(!store.claim_probe(&id, Duration::from_secs(30)).await.unwrap(), "one probe at a time");
        let second = store.bench(&id, base, "500".into(), Some(500), growth).await.unwrap();
        assert_eq!(second.until - Instant::now(), Duration::from_secs(10));
        assert_eq!(second.strikes, 2);
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(store.claim_probe(&id, Duration::from_secs(30)).await.unwrap());
        assert!(store.clear_cooldown(&id).await.unwrap());
        assert_eq!(store.cooldown_states(ids).await.unwrap(), vec![CooldownState::Available]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_benched_count_follows_every_insert_and_removal() {
        let store = StateStore::memory();
        assert!(!store.mirror().may_have_cooldowns());
        let (a, b) = (DeploymentId::from("a"), DeploymentId::from("b"));
        store.set_cooldown(&a, Duration::from_secs(5), "500".into(), Some(500)).await.unwrap();
        store.set_cooldown(&a, Duration::from_secs(9), "500".into(), Some(500)).await.unwrap();
        store.set_cooldown(&b, Duration::from_secs(60), "429".into(), Some(429)).await.unwrap();
        assert!(store.clear_cooldown(&b).await.unwrap());
        assert!(store.mirror().may_have_cooldowns(), "a is still benched");
        tokio::time::advance(Duration::from_secs(10)).await;
        // An expired record is dropped when read, and the count with it.
        assert_eq!(store.cooldown_states(std::slice::from_ref(&a)).await.unwrap(), vec![CooldownState::Available]);
        assert!(!store.mirror().may_have_cooldowns());
        store.set_cooldown(&b, Duration::from_secs(1), "x".into(), None).await.unwrap();
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(store.all_cooldowns().await.unwrap().is_empty());
        assert!(!store.mirror().may_have_cooldowns());
    }

    #[tokio::test(start_paused = true)]
    async fn the_check_among_candidates_sees_only_their_own_cooldowns() {
        let store = StateStore::memory();
        let [a, b, c] = ["a", "b", "c"].map(DeploymentId::from);
        assert!(!store.may_have_cooldowns_among([&a, &b, &c]));
        store.set_cooldown(&b, Duration::from_secs(5), "500".into(), Some(500)).await.unwrap();
        assert!(store.mirror().may_have_cooldowns(), "something is benched somewhere");
        assert!(!store.may_have_cooldowns_among([&a, &c]), "but none of these");
        assert!(store.may_have_cooldowns_among([&a, &b]));
        assert!(!store.may_have_cooldowns_among([]));
        // Half-open records count until the probe clears them.
        let growth = Some(Growth::new(2.0, Duration::from_secs(60)));
        store.bench(&c, Duration::from_secs(5), "503".into(), Some(503), growth).await.unwrap();
        tokio::time::advance(Duration::from_secs(6)).await;
        assert_eq!(
            store.cooldown_states(&[b.clone(), c.clone()]).await.unwrap(),
            vec![CooldownState::Available, CooldownState::HalfOpen { strikes: 1, probing: false }]
        );
        assert!(!store.may_have_cooldowns_among([&a, &b]), "b's expired record was dropped when read");
        assert!(store.may_have_cooldowns_among([&c]));
        assert!(store.clear_cooldown(&c).await.unwrap());
        assert!(!store.may_have_cooldowns_among([&a, &b, &c]));
        // An expired record not read yet still counts ("read to find out"); the read drops it.
        store.set_cooldown(&a, Duration::from_secs(1), "x".into(), None).await.unwrap();
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(store.may_have_cooldowns_among([&a]));
        assert!(store.all_cooldowns().await.unwrap().is_empty());
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
                                store.set_cooldown(id, ttl, "500".into(), Some(500)).await.unwrap();
                            }
                            1 => {
                                store.clear_cooldown(id).await.unwrap();
                            }
                            2 => {
                                store.cooldown_states(&ids).await.unwrap();
                            }
                            _ => {
                                store.all_cooldowns().await.unwrap();
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
        let states = store.cooldown_states(&ids).await.unwrap();
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
        store.record_outcome(&id, true).await.unwrap();
        let c = store.record_outcome(&id, false).await.unwrap();
        assert_eq!((c.successes, c.failures), (1, 1));
        tokio::time::advance(Duration::from_secs(61)).await;
        let c = store.record_outcome(&id, false).await.unwrap();
        assert_eq!((c.successes, c.failures), (0, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn spend_resets_after_its_period() {
        let store = StateStore::memory();
        assert_eq!(store.add_spend("p:openai", 1.5, Duration::from_secs(10)).await.unwrap(), 1.5);
        assert_eq!(store.add_spend("p:openai", 1.0, Duration::from_secs(10)).await.unwrap(), 2.5);
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(store.spend("p:openai").await.unwrap(), 0.0);
        assert_eq!(store.add_spend("p:openai", 0.5, Duration::from_secs(10)).await.unwrap(), 0.5);
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
        store.set_affinity("s", &DeploymentId::from("a"), ttl).await.unwrap();
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(store.affinity("s").await.unwrap(), Some(DeploymentId::from("a")));
        store.set_affinity("s", &DeploymentId::from("a"), ttl).await.unwrap();
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(store.affinity("s").await.unwrap(), Some(DeploymentId::from("a")), "refreshed");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(store.affinity("s").await.unwrap(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn affinity_entries_are_bounded() {
        let config = StoreConfig { affinity_capacity: 20, ..StoreConfig::default() };
        let store = StateStore::memory_with(config);
        for i in 0..100u64 {
            // Later keys live longer, so eviction takes the oldest first.
            store.set_affinity(&format!("k{i}"), &DeploymentId::from("a"), Duration::from_secs(100 + i)).await.unwrap();
        }
        assert!(store.mirror().affinity_len() <= 20);
        assert_eq!(store.affinity("k99").await.unwrap(), Some(DeploymentId::from("a")));
        assert_eq!(store.affinity("k0").await.unwrap(), None);
    }
}
