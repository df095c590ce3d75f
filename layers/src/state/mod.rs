//! [`StateStore`]: everything routing remembers, behind one interface.
//!
//! Shared state (cooldowns, outcome counts for the cooldown rules, RPM/TPM usage windows and
//! reservations, spend) goes through a backend: in memory by default, Redis for several replicas
//! (a later release; each operation here maps to at most one Redis command or script, see
//! `docs/state.md`). Per-replica state (in-flight counts, latency samples, peak-EWMA) is always
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
mod window;

use std::{fmt, sync::Arc, time::Duration};

pub use local::{InFlightGuard, LatencyConfig, LocalState};
use memory::MemoryBackend;
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
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            usage_window: Duration::from_secs(60),
            outcome_window: Duration::from_secs(60),
            resolution: Duration::from_millis(10),
            latency: LatencyConfig::default(),
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

#[derive(Debug)]
enum Backend {
    Memory(MemoryBackend),
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

    /// Per-replica state (in flight, latency).
    pub fn local(&self) -> &LocalState {
        &self.local
    }

    /// The cooldowns of `ids` still active now, in the same order (one read for many ids).
    pub async fn cooldowns(&self, ids: &[DeploymentId]) -> Result<Vec<Option<Cooldown>>, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.cooldowns(ids)),
        }
    }

    /// Every active cooldown.
    pub async fn all_cooldowns(&self) -> Result<Vec<(DeploymentId, Cooldown)>, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.all_cooldowns()),
        }
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
        match &self.backend {
            Backend::Memory(m) => Ok(m.set_cooldown(id, ttl, reason, status)),
        }
    }

    /// Ends a cooldown early; returns whether one was active.
    pub async fn clear_cooldown(&self, id: &DeploymentId) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.clear_cooldown(id)),
        }
    }

    /// Counts one attempt outcome of `id` and returns the counts in the window, this one included.
    pub async fn record_outcome(&self, id: &DeploymentId, success: bool) -> Result<OutcomeCounts, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.record_outcome(id, success)),
        }
    }

    /// Usage of `ids` in the current window, in the same order.
    pub async fn usage(&self, ids: &[DeploymentId]) -> Result<Vec<WindowUsage>, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.usage(ids)),
        }
    }

    /// Atomically checks `limits` and, when there is room, takes one request slot and `tokens`
    /// in `id`'s window.
    pub async fn try_reserve(&self, id: &DeploymentId, limits: Limits, tokens: u64) -> Result<Admission, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.try_reserve(id, limits, tokens)),
        }
    }

    /// How long until `id`'s window has room for one more request of `tokens` under `limits`,
    /// without reserving anything (zero when it has room now).
    pub async fn room_in(&self, id: &DeploymentId, limits: Limits, tokens: u64) -> Result<Duration, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.room_in(id, limits, tokens)),
        }
    }

    /// Replaces a reservation's token estimate with the real usage.
    pub async fn reconcile(&self, reservation: &Reservation, actual_tokens: u64) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Memory(m) => {
                m.reconcile(reservation, actual_tokens);
                Ok(())
            }
        }
    }

    /// Like [`reconcile`](Self::reconcile), off the request path: applied inline in memory, queued
    /// for a background writer on a networked backend. Used by end-of-body hooks, which cannot wait.
    pub fn reconcile_detached(&self, reservation: &Reservation, actual_tokens: u64) {
        match &self.backend {
            Backend::Memory(m) => m.reconcile(reservation, actual_tokens),
        }
    }

    /// Adds `amount` to the spend under `key` in a period of `period` that starts with the first
    /// spend; returns the total in the current period.
    pub async fn add_spend(&self, key: &str, amount: f64, period: Duration) -> Result<f64, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.add_spend(key, amount, period)),
        }
    }

    /// The spend under `key` in its current period.
    pub async fn spend(&self, key: &str) -> Result<f64, StoreError> {
        match &self.backend {
            Backend::Memory(m) => Ok(m.spend(key)),
        }
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
}
