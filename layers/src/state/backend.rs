//! [`StoreBackend`]: where the shared state lives. [`StateStore`](super::StateStore) is a small
//! facade over one; the memory and Redis backends implement it, and so can a user's.
//!
//! Every operation returns a [`StoreFuture`] rather than being an `async fn`: an `async fn` in a
//! `dyn` trait would box its future on every call, and the memory backend answers every
//! operation at once. A `StoreFuture` is either the answer already made (no allocation, what the
//! memory backend returns) or a boxed future (what a networked backend returns: its round trip
//! costs far more than the box). Work the request does not wait for goes through one
//! non-blocking entry point, [`StoreBackend::run_bookkeeping`], as a [`Bookkeeping`] value: the
//! common writes are plain variants (no future to box), anything else a boxed task.

use std::{
    fmt,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use futures_util::future::BoxFuture;

use super::{
    Admission, BanditDecay, BanditEvidence, Bench, Cooldown, CooldownState, HealthRecord, Limits, OutcomeCounts,
    Reservation, SpendState, StoreError, WindowUsage,
};
use crate::DeploymentId;

/// The answer of a [`StoreBackend`] operation: ready at once (no allocation) or a boxed future.
#[must_use = "futures do nothing unless awaited"]
pub struct StoreFuture<'a, T>(Answer<'a, T>);

enum Answer<'a, T> {
    Ready(Option<T>),
    Pending(BoxFuture<'a, T>),
}

impl<'a, T> StoreFuture<'a, T> {
    /// An answer already made.
    pub const fn ready(value: T) -> Self {
        Self(Answer::Ready(Some(value)))
    }

    /// An answer still to come (boxed once).
    pub fn pending(future: impl Future<Output = T> + Send + 'a) -> Self {
        Self(Answer::Pending(Box::pin(future)))
    }
}

// The answer is never pinned in place (it is moved out when ready).
impl<T> Unpin for StoreFuture<'_, T> {}

impl<T> Future for StoreFuture<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match &mut self.get_mut().0 {
            Answer::Ready(value) => Poll::Ready(value.take().expect("StoreFuture polled after completion")),
            Answer::Pending(future) => future.as_mut().poll(cx),
        }
    }
}

impl<T> fmt::Debug for StoreFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Answer::Ready(_) => "StoreFuture::Ready",
            Answer::Pending(_) => "StoreFuture::Pending",
        })
    }
}

/// Work the request does not wait for, handed to [`StoreBackend::run_bookkeeping`]. A backend
/// handles every variant: a new one is a breaking change, so no write is ever dropped unseen.
pub enum Bookkeeping<'a> {
    /// A successful attempt whose counts nobody reads (a networked backend may batch them).
    Success(&'a DeploymentId),
    /// Gives a half-open probe claim back without a verdict (the probing request was cancelled or
    /// never reached the deployment).
    ReleaseProbe(&'a DeploymentId),
    /// Replaces a reservation's token estimate with the real usage.
    Reconcile {
        /// The reservation.
        reservation: &'a Reservation,
        /// The tokens the request really used.
        actual_tokens: u64,
    },
    /// Adds to the spend under `key` (see [`StoreBackend::spends`]).
    Spend {
        /// The budget's key.
        key: &'a str,
        /// USD spent.
        amount: f64,
        /// The budget period, which starts with its first spend.
        period: Duration,
    },
    /// Anything else: a task that may call the store's operations (the cooldown rules after a
    /// failure). The memory backend runs it at once, as far as it goes without waiting.
    Task(BoxFuture<'static, ()>),
}

impl<F: Future<Output = ()> + Send + 'static> From<F> for Bookkeeping<'_> {
    fn from(task: F) -> Self {
        Self::Task(Box::pin(task))
    }
}

impl fmt::Debug for Bookkeeping<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Success(id) => f.debug_tuple("Success").field(id).finish(),
            Self::ReleaseProbe(id) => f.debug_tuple("ReleaseProbe").field(id).finish(),
            Self::Reconcile { reservation, actual_tokens } => f
                .debug_struct("Reconcile")
                .field("reservation", reservation)
                .field("actual_tokens", actual_tokens)
                .finish(),
            Self::Spend { key, amount, period } => {
                f.debug_struct("Spend").field("key", key).field("amount", amount).field("period", period).finish()
            }
            Self::Task(_) => f.write_str("Task"),
        }
    }
}

/// Runs a bookkeeping task without a networked backend: at once as far as it goes (memory
/// operations never wait, so tests stay deterministic), the rest on a Tokio task.
pub(crate) fn run_inline(task: BoxFuture<'static, ()>) {
    let mut task = task;
    if futures_util::FutureExt::now_or_never(&mut task).is_none()
        && let Ok(rt) = tokio::runtime::Handle::try_current()
    {
        rt.spawn(task);
    }
}

/// Where shared state lives: cooldowns, outcome counts for the cooldown rules, RPM/TPM usage
/// windows and reservations, spend, affinity, and health-probe results and leases.
///
/// The contract every backend keeps (the memory and Redis ones are tested against it):
///
/// - **nothing fails but a budget read.** A backend that cannot reach its shared state answers
///   from this replica's (and says so through [`is_degraded`](Self::is_degraded)); only
///   [`spends`](Self::spends) may refuse, for budgets configured fail-closed;
/// - **read-modify-writes are atomic**: a reservation checks and takes its slot in one step, a
///   cooldown extends and never shortens, one probe claim at a time;
/// - **time is `tokio::time`** (or the server's clock, turned into `Instant`s on arrival), so
///   tests on a paused clock control deadlines and windows.
///
/// Implement it to keep state somewhere else, or to wrap a built-in backend, then build the store
/// with [`StateStore::with_backend`](super::StateStore::with_backend). A wrapper that counts the
/// reservations of the memory backend:
///
/// ```
/// use std::{sync::atomic::{AtomicU64, Ordering}, time::Duration};
/// use switchyard_layers::{
///     DeploymentId, StateStore,
///     state::{
///         Admission, Bench, Bookkeeping, Cooldown, CooldownState, Growth, HealthRecord, LatencyConfig, Limits,
///         MemoryBackend, OutcomeCounts, SpendState, StoreBackend, StoreConfig, StoreError, StoreFuture, WindowUsage,
///     },
/// };
///
/// #[derive(Debug)]
/// struct Counting {
///     inner: MemoryBackend,
///     reservations: AtomicU64,
/// }
///
/// impl StoreBackend for Counting {
///     fn try_reserve<'a>(&'a self, id: &'a DeploymentId, limits: Limits, tokens: u64) -> StoreFuture<'a, Admission> {
///         self.reservations.fetch_add(1, Ordering::Relaxed);
///         self.inner.try_reserve(id, limits, tokens)
///     }
///     // Everything else as the memory backend does it.
///     fn watch_cooldowns(&self) -> tokio::sync::watch::Receiver<u64> { self.inner.watch_cooldowns() }
///     fn cooldown_states<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<CooldownState>> {
///         self.inner.cooldown_states(ids)
///     }
///     fn all_cooldowns(&self) -> StoreFuture<'_, Vec<(DeploymentId, CooldownState)>> { self.inner.all_cooldowns() }
///     fn bench<'a>(&'a self, id: &'a DeploymentId, bench: Bench) -> StoreFuture<'a, Cooldown> {
///         self.inner.bench(id, bench)
///     }
///     fn claim_probe<'a>(&'a self, id: &'a DeploymentId, hold: Duration) -> StoreFuture<'a, bool> {
///         self.inner.claim_probe(id, hold)
///     }
///     fn clear_cooldown<'a>(&'a self, id: &'a DeploymentId) -> StoreFuture<'a, bool> { self.inner.clear_cooldown(id) }
///     fn record_outcome<'a>(&'a self, id: &'a DeploymentId, success: bool) -> StoreFuture<'a, OutcomeCounts> {
///         self.inner.record_outcome(id, success)
///     }
///     fn usage<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<WindowUsage>> { self.inner.usage(ids) }
///     fn room_in<'a>(&'a self, id: &'a DeploymentId, limits: Limits, tokens: u64) -> StoreFuture<'a, Duration> {
///         self.inner.room_in(id, limits, tokens)
///     }
///     fn spends<'a>(&'a self, keys: &'a [&'a str]) -> StoreFuture<'a, Result<Vec<SpendState>, StoreError>> {
///         self.inner.spends(keys)
///     }
///     fn affinity<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<DeploymentId>> { self.inner.affinity(key) }
///     fn set_affinity<'a>(&'a self, key: &'a str, id: &'a DeploymentId, ttl: Duration) -> StoreFuture<'a, ()> {
///         self.inner.set_affinity(key, id, ttl)
///     }
///     fn run_bookkeeping(&self, work: Bookkeeping<'_>) { self.inner.run_bookkeeping(work) }
///     fn health<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<Option<HealthRecord>>> {
///         self.inner.health(ids)
///     }
///     fn all_health(&self) -> StoreFuture<'_, Vec<(DeploymentId, HealthRecord)>> { self.inner.all_health() }
///     fn record_health<'a>(&'a self, id: &'a DeploymentId, r: HealthRecord, ttl: Duration) -> StoreFuture<'a, ()> {
///         self.inner.record_health(id, r, ttl)
///     }
///     fn claim_health_lease<'a>(&'a self, id: &'a DeploymentId, hold: Duration) -> StoreFuture<'a, bool> {
///         self.inner.claim_health_lease(id, hold)
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let backend = Counting { inner: MemoryBackend::new(StoreConfig::default()), reservations: AtomicU64::new(0) };
/// let store = StateStore::with_backend(backend, LatencyConfig::default());
/// let limits = Limits { rpm: Some(1), tpm: None };
/// assert!(matches!(store.try_reserve(&DeploymentId::from("a"), limits, 0).await, Admission::Admitted(_)));
/// assert_eq!(store.backend_name(), "custom");
/// # }
/// ```
pub trait StoreBackend: fmt::Debug + Send + Sync + 'static {
    /// A short name for logs and the readiness answer (`memory`, `redis`).
    fn name(&self) -> &'static str {
        "custom"
    }

    /// Whether the shared state is unreachable and this replica routes on its own.
    fn is_degraded(&self) -> bool {
        false
    }

    /// Resolves once the shared state is reachable.
    fn ready(&self) -> StoreFuture<'_, ()> {
        StoreFuture::ready(())
    }

    /// Resolves once the bookkeeping handed over so far has reached the shared state.
    fn flush(&self) -> StoreFuture<'_, ()> {
        StoreFuture::ready(())
    }

    /// The Redis backend's counters; `None` for any other.
    #[cfg(feature = "redis")]
    fn redis_stats(&self) -> Option<super::RedisStats> {
        None
    }

    /// A counter bumped whenever a cooldown is set, changed or lifted (by this replica or any
    /// other sharing the state).
    fn watch_cooldowns(&self) -> tokio::sync::watch::Receiver<u64>;

    /// The cooldown state of `ids`, in the same order. Read before every attempt: keep it cheap
    /// (the Redis backend reads a local mirror).
    fn cooldown_states<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<CooldownState>>;

    /// A cheap local check: `false` only when none of `ids` is cooling down or half-open (`true`
    /// means "read to find out", which is always correct).
    fn may_have_cooldowns_among(&self, ids: &mut dyn Iterator<Item = &DeploymentId>) -> bool {
        let _ = ids;
        true
    }

    /// Every deployment cooling down or half-open, soonest deadline first.
    fn all_cooldowns(&self) -> StoreFuture<'_, Vec<(DeploymentId, CooldownState)>>;

    /// Benches `id` for `base` (with `growth`: `base × factor^strikes`, capped, then half-open);
    /// re-cooling extends, never shortens. The cooldown now in force.
    fn bench<'a>(&'a self, id: &'a DeploymentId, bench: Bench) -> StoreFuture<'a, Cooldown>;

    /// Claims the single probe of a half-open deployment for `hold`; whether this caller got it.
    fn claim_probe<'a>(&'a self, id: &'a DeploymentId, hold: Duration) -> StoreFuture<'a, bool>;

    /// Ends a cooldown or half-open state early; whether one was in force.
    fn clear_cooldown<'a>(&'a self, id: &'a DeploymentId) -> StoreFuture<'a, bool>;

    /// Counts one attempt outcome; the counts in the outcome window, this one included.
    fn record_outcome<'a>(&'a self, id: &'a DeploymentId, success: bool) -> StoreFuture<'a, OutcomeCounts>;

    /// Usage of `ids` in the usage window, in the same order (may be a slightly stale hint).
    fn usage<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<WindowUsage>>;

    /// Atomically checks `limits` and, when there is room, takes one request and `tokens`.
    fn try_reserve<'a>(&'a self, id: &'a DeploymentId, limits: Limits, tokens: u64) -> StoreFuture<'a, Admission>;

    /// How long until `id`'s window has room for one more request of `tokens` (zero when it has).
    fn room_in<'a>(&'a self, id: &'a DeploymentId, limits: Limits, tokens: u64) -> StoreFuture<'a, Duration>;

    /// The spend under each key and when its period ends, in the same order. The one operation
    /// that may fail: budgets configured fail-closed while the shared state is unreachable.
    fn spends<'a>(&'a self, keys: &'a [&'a str]) -> StoreFuture<'a, Result<Vec<SpendState>, StoreError>>;

    /// The deployment `key` sticks to, unless its entry expired.
    fn affinity<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<DeploymentId>>;

    /// Makes `key` stick to `id` for `ttl` from now (the write may complete in the background).
    fn set_affinity<'a>(&'a self, key: &'a str, id: &'a DeploymentId, ttl: Duration) -> StoreFuture<'a, ()>;

    /// Runs bookkeeping off the request path: it must not block, and is applied at once or queued
    /// (a bounded queue may drop it when full).
    fn run_bookkeeping(&self, work: Bookkeeping<'_>);

    /// A cheap local check: `false` only when no deployment has an unhealthy health record
    /// (`true` means "read to find out", which is always correct).
    fn may_have_unhealthy(&self) -> bool {
        true
    }

    /// The latest health-probe record of each of `ids`, in the same order (`None`: never probed,
    /// or the record expired). Read before every attempt when health routing is on: keep it cheap
    /// (the Redis backend reads a local mirror).
    fn health<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<Option<HealthRecord>>>;

    /// Every health record held, by deployment id.
    fn all_health(&self) -> StoreFuture<'_, Vec<(DeploymentId, HealthRecord)>>;

    /// Stores a probe's verdict on `id`, kept for `ttl`; an older verdict never replaces a newer
    /// one.
    fn record_health<'a>(&'a self, id: &'a DeploymentId, record: HealthRecord, ttl: Duration) -> StoreFuture<'a, ()>;

    /// Takes the probe lease of `id` for `hold` unless another holder's runs: whether this
    /// replica probes `id` this interval (one replica per deployment per interval).
    fn claim_health_lease<'a>(&'a self, id: &'a DeploymentId, hold: Duration) -> StoreFuture<'a, bool>;

    /// Brings this replica's view of the health of `ids` up to date with the shared state (the
    /// probe task calls it once per interval, off the request path). Nothing to do for a backend
    /// that has no local view: the default.
    fn refresh_health<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, ()> {
        let _ = ids;
        StoreFuture::ready(())
    }

    /// Adds `successes` and `failures` to the evidence of `cell` of the adaptive pre-router
    /// `router`, discounted and capped by `decay` ([`BanditEvidence::add`]), atomically. The
    /// default keeps nothing: each replica's router then learns alone.
    fn bandit_add<'a>(
        &'a self,
        router: &'a str,
        cell: &'a str,
        successes: f64,
        failures: f64,
        decay: BanditDecay,
    ) -> StoreFuture<'a, ()> {
        let _ = (router, cell, successes, failures, decay);
        StoreFuture::ready(())
    }

    /// Every cell of `router` held, with its evidence; `None` when the backend keeps no bandit
    /// evidence (the default), so a router keeps what it learned itself.
    fn bandit_cells<'a>(&'a self, router: &'a str) -> StoreFuture<'a, Option<Vec<(String, BanditEvidence)>>> {
        let _ = router;
        StoreFuture::ready(None)
    }
}
