//! The Redis backend: one routing state for every replica that shares a Redis (or a Redis
//! Cluster). See `docs/redis.md` for the keys, the consistency guarantees and the degraded mode.
//!
//! How the operations map:
//!
//! - **writes that must be atomic** (reservations, outcome counts, cooldown transitions, probe
//!   claims, spend) are Lua scripts: one round trip each, no read-modify-write across round trips;
//! - **cooldown reads** come from a local mirror, kept current by the scripts' own answers, by
//!   pub/sub messages every cooldown script publishes, and by a periodic re-read (in case a message
//!   was lost): no round trip;
//! - **usage, spend and affinity reads** come from caches refreshed in the background (a first
//!   read of an unknown budget or affinity key reads through once);
//! - **bookkeeping** (success counts, estimate reconciliation, spend, affinity, the cooldown rules
//!   after a failure) goes to a bounded background writer, off the request path.
//!
//! So an attempt costs at most one round trip on its path: the reservation, when the deployment
//! has a limit (or the strategy reads usage). When Redis is unreachable, everything falls back to
//! the local state of this replica (the degraded mode) and a supervisor reconnects and resyncs.
//!
//! Where things are: `Replica` (below) is this replica's side of the state; `mirror.rs` the
//! cooldown mirror and the messages that keep it current, `cache.rs` the read caches, `ops.rs` the
//! operations that go to Redis, `conn.rs` the connection and its calls (reply timeout, degraded
//! mode), `sync.rs` the background tasks (writer, supervisor, subscriber), `keys.rs` and
//! `scripts.rs` the key names and the Lua scripts.

mod bandit;
mod cache;
mod config;
mod conn;
mod health;
mod keys;
mod mirror;
mod ops;
mod scripts;
mod sync;

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering::Relaxed},
    },
    time::Duration,
};

use arc_swap::ArcSwapOption;
use dashmap::DashMap;
use futures_util::future::BoxFuture;
use parking_lot::Mutex;
use tokio::{sync::mpsc, time::Instant};

use cache::{AffinityCache, Cached, SpendCache};
pub use config::{RedisConfig, Topology};
use conn::{AsConn, Counters, Handles};
use keys::Keys;

use super::{
    Admission, BanditDecay, BanditEvidence, Bench, Bookkeeping, Cooldown, CooldownState, HealthRecord, IdMap, Limits,
    OutcomeCounts, SpendState, StoreBackend, StoreConfig, StoreError, StoreFuture, WindowUsage, memory::MemoryState,
};
use crate::DeploymentId;

/// Counters of the Redis backend, for tests, benchmarks and operators.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisStats {
    /// Round trips made on the request path (awaited by a request).
    pub request_round_trips: u64,
    /// Commands sent on the request path (a script call is one command).
    pub request_commands: u64,
    /// Round trips made by the background tasks (writer, cache refresh, resync).
    pub background_round_trips: u64,
    /// Commands sent by the background tasks.
    pub background_commands: u64,
    /// Redis calls that failed (connection, timeout or server error).
    pub errors: u64,
    /// Detached writes dropped because the writer's queue was full (applied locally only).
    pub dropped_writes: u64,
    /// Times the backend entered the degraded mode.
    pub degradations: u64,
    /// Redis is unreachable right now: this replica routes on local state.
    pub degraded: bool,
}

/// This replica's side of the shared state: its connection, its mirror of the cooldowns, its read
/// caches, the writes waiting for Redis, and its counters. The backend and its background tasks
/// (`sync.rs`) hold it.
pub(super) struct Replica {
    config: RedisConfig,
    store: StoreConfig,
    keys: Keys,
    /// The mirror of every cooldown, and the whole state while degraded.
    local: MemoryState,
    handles: ArcSwapOption<Handles>,
    degraded: AtomicBool,
    health: tokio::sync::watch::Sender<bool>,
    last_warn: Mutex<Option<Instant>>,
    request: Arc<Counters>,
    background: Arc<Counters>,
    errors: AtomicU64,
    dropped: AtomicU64,
    degradations: AtomicU64,
    /// The revision of the last cooldown message applied per deployment, and when.
    revisions: IdMap<(u64, Instant)>,
    /// Deployments whose cooldowns this replica reads: re-read on every resync.
    known: IdMap<()>,
    /// Cooldowns set locally because Redis did not take them: pushed when it does.
    offline: IdMap<()>,
    /// Cooldowns cleared locally because Redis did not take the clear: cleared when it does.
    offline_clears: IdMap<()>,
    /// Connection errors and timeouts so far (recovery ends only if none happened meanwhile).
    connection_errors: AtomicU64,
    /// Successes counted since the last tick: recorded in one script per deployment per tick
    /// (with the next failure, if one comes first).
    successes: IdMap<u64>,
    /// Held while a batch of `successes` is on its way to Redis, so that `flush` waits for the
    /// supervisor's batch in flight instead of finding the map empty and returning early.
    flushing: tokio::sync::Mutex<()>,
    usage: IdMap<Cached<WindowUsage>>,
    spends: DashMap<Arc<str>, Cached<SpendCache>>,
    affinity: DashMap<Arc<str>, Cached<AffinityCache>>,
    writes: mpsc::Sender<BoxFuture<'static, ()>>,
    /// Detached writes queued or running.
    pending: Arc<tokio::sync::watch::Sender<usize>>,
    /// Wakes the supervisor early (a first read, an outage, a new subscription).
    resync: tokio::sync::Notify,
    /// Re-read every cooldown at the next wake-up (messages may have been missed).
    resync_now: AtomicBool,
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend")
            .field("config", &self.config)
            .field("degraded", &self.degraded.load(Relaxed))
            .finish_non_exhaustive()
    }
}

/// The Redis backend (feature `redis`).
#[derive(Debug)]
pub(super) struct RedisBackend {
    replica: Arc<Replica>,
    _shutdown: tokio::sync::watch::Sender<()>,
}

fn num(s: &str) -> i64 {
    s.parse::<f64>().map_or(0, |v| v as i64)
}

fn micros(us: i64) -> Duration {
    Duration::from_micros(us.max(0) as u64)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

fn limit_arg(limit: Option<u64>) -> i64 {
    limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX))
}

impl RedisBackend {
    /// Starts the backend: the supervisor connects in the background (until then, and whenever
    /// Redis is unreachable, the local state answers).
    pub(super) fn start(config: RedisConfig, store: StoreConfig) -> Result<Self, StoreError> {
        config.validate().map_err(|e| StoreError::new(format!("redis: {e}")))?;
        let urls = match &config.topology {
            Topology::Single(url) => std::slice::from_ref(url),
            Topology::Cluster(nodes) => nodes.as_slice(),
        };
        for url in urls {
            redis::IntoConnectionInfo::into_connection_info(url.as_str()).map_err(|e| {
                StoreError::new(format!("redis: url `{}` is not valid: {e}", config::mask_credentials(url)))
            })?;
        }
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| StoreError::new("redis: the Redis backend must be created inside a Tokio runtime"))?;
        let (writes, queue) = mpsc::channel(config.write_queue);
        let keys = Keys::new(config.key_prefix());
        let pending = Arc::new(tokio::sync::watch::Sender::new(0));
        let replica = Arc::new(Replica {
            keys,
            store,
            local: MemoryState::new(store),
            handles: ArcSwapOption::empty(),
            degraded: AtomicBool::new(true),
            health: tokio::sync::watch::Sender::new(false),
            last_warn: Mutex::new(None),
            request: Arc::default(),
            background: Arc::default(),
            errors: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            degradations: AtomicU64::new(0),
            revisions: IdMap::default(),
            known: IdMap::default(),
            offline: IdMap::default(),
            offline_clears: IdMap::default(),
            connection_errors: AtomicU64::new(0),
            successes: IdMap::default(),
            flushing: tokio::sync::Mutex::new(()),
            usage: IdMap::default(),
            spends: DashMap::new(),
            affinity: DashMap::new(),
            writes,
            pending: pending.clone(),
            resync: tokio::sync::Notify::new(),
            resync_now: AtomicBool::new(false),
            config,
        });
        metrics::gauge!("switchyard_state_redis_degraded").set(1.0);
        let (shutdown, stop) = tokio::sync::watch::channel(());
        runtime.spawn(sync::writer(queue, pending));
        runtime.spawn(sync::supervise(Arc::downgrade(&replica), stop.clone()));
        let urls = match &replica.config.topology {
            Topology::Single(url) => vec![url.clone()],
            Topology::Cluster(nodes) => nodes.clone(),
        };
        for url in urls {
            runtime.spawn(sync::subscribe(Arc::downgrade(&replica), url, stop.clone()));
        }
        Ok(Self { replica, _shutdown: shutdown })
    }

    pub(super) fn stats(&self) -> RedisStats {
        let s = &self.replica;
        RedisStats {
            request_round_trips: s.request.round_trips.load(Relaxed),
            request_commands: s.request.commands.load(Relaxed),
            background_round_trips: s.background.round_trips.load(Relaxed),
            background_commands: s.background.commands.load(Relaxed),
            errors: s.errors.load(Relaxed),
            dropped_writes: s.dropped.load(Relaxed),
            degradations: s.degradations.load(Relaxed),
            degraded: s.degraded.load(Relaxed),
        }
    }

    pub(super) async fn ready(&self) {
        let mut rx = self.replica.health.subscribe();
        // The sender lives as long as `self`, so this only ends when Redis is reachable.
        let _ = rx.wait_for(|healthy| *healthy).await;
    }

    /// Waits until every detached write queued so far has run (some add to the success batch),
    /// then records the batched success counts now rather than at the supervisor's next tick
    /// (after its batch in flight, if it has one).
    pub(super) async fn flush(&self) {
        let mut rx = self.replica.pending.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
        if let Some(mut bg) = self.replica.background_handle() {
            sync::flush_successes(&self.replica, &mut bg).await;
        }
    }
}

impl StoreBackend for RedisBackend {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn is_degraded(&self) -> bool {
        self.replica.degraded.load(Relaxed)
    }

    fn ready(&self) -> StoreFuture<'_, ()> {
        StoreFuture::pending(self.ready())
    }

    fn flush(&self) -> StoreFuture<'_, ()> {
        StoreFuture::pending(self.flush())
    }

    fn redis_stats(&self) -> Option<RedisStats> {
        Some(self.stats())
    }

    fn watch_cooldowns(&self) -> tokio::sync::watch::Receiver<u64> {
        self.replica.local.watch_cooldowns()
    }

    fn cooldown_states<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<CooldownState>> {
        StoreFuture::ready(self.cooldown_states(ids))
    }

    fn may_have_cooldowns_among(&self, ids: &mut dyn Iterator<Item = &DeploymentId>) -> bool {
        self.replica.local.may_have_cooldowns_among(ids)
    }

    fn all_cooldowns(&self) -> StoreFuture<'_, Vec<(DeploymentId, CooldownState)>> {
        StoreFuture::ready(self.replica.local.all_cooldowns())
    }

    fn bench<'a>(&'a self, id: &'a DeploymentId, bench: Bench) -> StoreFuture<'a, Cooldown> {
        StoreFuture::pending(self.bench(id, bench))
    }

    fn claim_probe<'a>(&'a self, id: &'a DeploymentId, hold: Duration) -> StoreFuture<'a, bool> {
        StoreFuture::pending(self.claim_probe(id, hold))
    }

    fn clear_cooldown<'a>(&'a self, id: &'a DeploymentId) -> StoreFuture<'a, bool> {
        StoreFuture::pending(self.clear_cooldown(id))
    }

    fn record_outcome<'a>(&'a self, id: &'a DeploymentId, success: bool) -> StoreFuture<'a, OutcomeCounts> {
        StoreFuture::pending(self.record_outcome(id, success))
    }

    fn usage<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<WindowUsage>> {
        StoreFuture::ready(self.usage(ids))
    }

    fn try_reserve<'a>(&'a self, id: &'a DeploymentId, limits: Limits, tokens: u64) -> StoreFuture<'a, Admission> {
        StoreFuture::pending(self.try_reserve(id, limits, tokens))
    }

    fn room_in<'a>(&'a self, id: &'a DeploymentId, limits: Limits, tokens: u64) -> StoreFuture<'a, Duration> {
        StoreFuture::pending(self.room_in(id, limits, tokens))
    }

    fn spends<'a>(&'a self, keys: &'a [&'a str]) -> StoreFuture<'a, Result<Vec<SpendState>, StoreError>> {
        StoreFuture::pending(self.spends(keys))
    }

    fn affinity<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<DeploymentId>> {
        StoreFuture::pending(self.affinity(key))
    }

    fn set_affinity<'a>(&'a self, key: &'a str, id: &'a DeploymentId, ttl: Duration) -> StoreFuture<'a, ()> {
        self.set_affinity(key, id, ttl);
        StoreFuture::ready(())
    }

    fn run_bookkeeping(&self, work: Bookkeeping<'_>) {
        match work {
            Bookkeeping::Success(id) => self.count_success(id),
            Bookkeeping::ReleaseProbe(id) => self.release_probe(id),
            Bookkeeping::Reconcile { reservation, actual_tokens } => {
                self.reconcile_detached(reservation, actual_tokens)
            }
            Bookkeeping::Spend { key, amount, period } => self.add_spend_detached(key, amount, period),
            Bookkeeping::Task(task) => self.replica.detach(task),
        }
    }

    fn may_have_unhealthy(&self) -> bool {
        self.replica.local.health.may_have_unhealthy()
    }

    fn health<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<Option<HealthRecord>>> {
        StoreFuture::ready(self.replica.local.health.health(ids))
    }

    fn all_health(&self) -> StoreFuture<'_, Vec<(DeploymentId, HealthRecord)>> {
        StoreFuture::ready(self.replica.local.health.all())
    }

    fn record_health<'a>(&'a self, id: &'a DeploymentId, record: HealthRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        StoreFuture::pending(self.record_health(id, record, ttl))
    }

    fn claim_health_lease<'a>(&'a self, id: &'a DeploymentId, hold: Duration) -> StoreFuture<'a, bool> {
        StoreFuture::pending(self.claim_health_lease(id, hold))
    }

    fn refresh_health<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, ()> {
        StoreFuture::pending(self.refresh_health(ids))
    }

    fn bandit_add<'a>(
        &'a self,
        router: &'a str,
        cell: &'a str,
        successes: f64,
        failures: f64,
        decay: BanditDecay,
    ) -> StoreFuture<'a, ()> {
        StoreFuture::pending(self.bandit_add(router, cell, successes, failures, decay))
    }

    fn bandit_cells<'a>(&'a self, router: &'a str) -> StoreFuture<'a, Option<Vec<(String, BanditEvidence)>>> {
        StoreFuture::pending(async move { Some(self.bandit_cells(router).await) })
    }
}

impl Replica {}
