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

mod config;
mod conn;
mod keys;
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
use redis::{FromRedisValue, RedisError, ScriptInvocation};
use serde::Deserialize;
use tokio::{sync::mpsc, time::Instant};

pub use config::{RedisConfig, Topology};
use conn::{Counted, Counters};
use keys::Keys;

use super::{
    Admission, Bookkeeping, Cooldown, CooldownState, Growth, IdMap, Limits, OutcomeCounts, Reservation, SpendState,
    StoreBackend, StoreConfig, StoreError, StoreFuture, WindowUsage, memory::MemoryState,
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

/// Connection handles: the request path and the background tasks count separately.
#[derive(Clone)]
struct Handles {
    request: Counted,
    background: Counted,
}

/// A cached read, refreshed in the background while requests keep reading it.
#[derive(Debug, Clone)]
struct Cached<T> {
    value: T,
    read_at: Instant,
}

#[derive(Debug, Clone, Copy, Default)]
struct SpendCache {
    total: f64,
    resets_at: Option<Instant>,
}

#[derive(Debug, Clone)]
struct AffinityCache {
    id: DeploymentId,
    until: Instant,
}

/// Everything the backend and its background tasks share.
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
    shared: Arc<Replica>,
    _shutdown: tokio::sync::watch::Sender<()>,
}

/// A cooldown record as the scripts return and publish it (numbers as text, times on the server's
/// clock).
#[derive(Debug, Deserialize)]
struct Message {
    id: String,
    op: String,
    now: String,
    #[serde(default)]
    u: String,
    #[serde(default)]
    r: String,
    #[serde(default)]
    s: String,
    #[serde(default)]
    k: String,
    #[serde(default)]
    h: String,
    #[serde(default)]
    p: String,
    at: String,
    /// The current revision, in a resync read only.
    #[serde(default)]
    c: String,
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
        let shared = Arc::new(Replica {
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
        runtime.spawn(sync::supervise(Arc::downgrade(&shared), stop.clone()));
        let urls = match &shared.config.topology {
            Topology::Single(url) => vec![url.clone()],
            Topology::Cluster(nodes) => nodes.clone(),
        };
        for url in urls {
            runtime.spawn(sync::subscribe(Arc::downgrade(&shared), url, stop.clone()));
        }
        Ok(Self { shared, _shutdown: shutdown })
    }

        pub(super) fn stats(&self) -> RedisStats {
        let s = &self.shared;
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
        let mut rx = self.shared.health.subscribe();
        // The sender lives as long as `self`, so this only ends when Redis is reachable.
        let _ = rx.wait_for(|healthy| *healthy).await;
    }

    /// Waits until every detached write queued so far has run (some add to the success batch),
    /// then records the batched success counts now rather than at the supervisor's next tick
    /// (after its batch in flight, if it has one).
    pub(super) async fn flush(&self) {
        let mut rx = self.shared.pending.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
        if let Some(mut bg) = self.shared.background_handle() {
            sync::flush_successes(&self.shared, &mut bg).await;
        }
    }

    pub(super) fn cooldown_states(&self, ids: &[DeploymentId]) -> Vec<CooldownState> {
        self.shared.remember(ids);
        self.shared.local.cooldown_states(ids)
    }

    pub(super) async fn bench(
        &self,
        id: &DeploymentId,
        base: Duration,
        reason: Arc<str>,
        status: Option<u16>,
        growth: Option<Growth>,
    ) -> Cooldown {
        let s = &self.shared;
        s.remember(std::slice::from_ref(id));
        if let Some(mut h) = s.request_handle() {
            let mut inv = s.cooldown_script(&scripts::BENCH, id);
            inv.arg(millis(base))
                .arg(&*reason)
                .arg(status.map(|s| s.to_string()).unwrap_or_default())
                .arg(growth.map(|g| g.factor.to_string()).unwrap_or_default())
                .arg(growth.map_or(0, |g| millis(g.cap)))
                .arg(millis(s.config.half_open_linger))
                .arg(s.keys.channel())
                .arg(id.as_str());
            if let Some(msg) = s.run::<String>(&inv, &mut h).await
                && let Some(CooldownState::CoolingDown(c)) = s.apply(&msg)
            {
                return c;
            }
        }
        s.offline_clears.remove(id);
        s.offline.insert(id.clone(), ());
        s.local.bench(id, base, reason, status, growth)
    }

    pub(super) async fn claim_probe(&self, id: &DeploymentId, hold: Duration) -> bool {
        let s = &self.shared;
        if let Some(mut h) = s.request_handle() {
            let mut inv = s.cooldown_script(&scripts::PROBE, id);
            inv.arg(millis(hold)).arg(s.keys.channel()).arg(id.as_str());
            match s.run_result::<Option<String>>(&inv, &mut h).await {
                Ok(Some(msg)) => {
                    s.apply(&msg);
                    return true;
                }
                Ok(None) => return false,
                Err(()) => {}
            }
        }
        s.local.claim_probe(id, hold)
    }

    pub(super) fn release_probe(&self, id: &DeploymentId) {
        let s = &self.shared;
        s.local.release_probe(id);
        if s.request_handle().is_none() {
            return;
        }
        let shared = s.clone();
        let id = id.clone();
        s.detach(Box::pin(async move {
            let Some(mut h) = shared.background_handle() else { return };
            let mut inv = shared.cooldown_script(&scripts::RELEASE, &id);
            inv.arg(shared.keys.channel()).arg(id.as_str());
            if let Some(Some(msg)) = shared.run::<Option<String>>(&inv, &mut h).await {
                shared.apply(&msg);
            }
        }));
    }

    pub(super) async fn clear_cooldown(&self, id: &DeploymentId) -> bool {
        let s = &self.shared;
        if let Some(mut h) = s.request_handle() {
            let mut inv = s.cooldown_script(&scripts::CLEAR, id);
            inv.arg(s.keys.channel()).arg(id.as_str());
            if let Some((active, msg)) = s.run::<(i64, String)>(&inv, &mut h).await {
                let was_local = s.local.cooldown_states(std::slice::from_ref(id))[0] != CooldownState::Available;
                s.apply(&msg);
                return active == 1 || was_local;
            }
        }
        s.offline.remove(id);
        s.offline_clears.insert(id.clone(), ());
        s.local.clear_cooldown(id)
    }

    pub(super) async fn record_outcome(&self, id: &DeploymentId, success: bool) -> OutcomeCounts {
        let s = &self.shared;
        if let Some(mut h) = s.request_handle() {
            // Bookkeeping of a success (the caller does not read the counts): batched per tick.
            if success && sync::in_background() {
                self.count_success(id);
                return OutcomeCounts::default();
            }
            // Successes not yet recorded go with this outcome, so the rules see them.
            let earlier = s.successes.remove(id).map_or(0, |(_, n)| n);
            let (ok, failed) = if success { (earlier + 1, 0) } else { (earlier, 1) };
            if let Some(counts) = s.record_outcomes(id, ok, failed, &mut h.request).await {
                return counts;
            }
            if earlier > 0 {
                *s.successes.entry(id.clone()).or_insert(0) += earlier;
            }
        }
        s.local.record_outcome(id, success)
    }

    /// A success the caller does not read the counts of: added to the batch the supervisor
    /// records every tick (what `record_outcome` does with it on the background writer), or
    /// counted locally while Redis is unreachable.
    pub(super) fn count_success(&self, id: &DeploymentId) {
        let s = &self.shared;
        if s.degraded.load(Relaxed) || s.handles.load().is_none() {
            s.local.record_outcome(id, true);
            return;
        }
        *s.successes.entry(id.clone()).or_insert(0) += 1;
    }

    pub(super) fn usage(&self, ids: &[DeploymentId]) -> Vec<WindowUsage> {
        let s = &self.shared;
        if s.request_handle().is_none() {
            return s.local.usage(ids);
        }
        let now = Instant::now();
        ids.iter()
            .map(|id| match s.usage.get_mut(id) {
                Some(mut e) => {
                    e.read_at = now;
                    e.value
                }
                None => {
                    s.usage.insert(id.clone(), Cached { value: WindowUsage::default(), read_at: now });
                    s.resync.notify_one();
                    WindowUsage::default()
                }
            })
            .collect()
    }

    fn window_args<'a>(&self, inv: &mut ScriptInvocation<'a>, limits: Limits, tokens: u64) {
        let s = &self.shared;
        inv.arg(s.resolution_us())
            .arg(s.span(s.store.usage_window))
            .arg(limit_arg(limits.rpm))
            .arg(limit_arg(limits.tpm))
            .arg(tokens);
    }

    pub(super) async fn try_reserve(&self, id: &DeploymentId, limits: Limits, tokens: u64) -> Admission {
        let s = &self.shared;
        if let Some(mut h) = s.request_handle() {
            let [t, c] = s.keys.usage(id);
            let mut inv = scripts::RESERVE.key(t);
            inv.key(c);
            self.window_args(&mut inv, limits, tokens);
            if let Some((admitted, n, requests, used)) = s.run::<(i64, i64, u64, u64)>(&inv, &mut h).await {
                s.cache_usage(id, WindowUsage { requests, tokens: used });
                return if admitted == 1 {
                    Admission::Admitted(Reservation { id: id.clone(), tick: n.max(0) as u64, tokens, remote: true })
                } else {
                    Admission::Full { retry_in: micros(n) }
                };
            }
        }
        s.local.try_reserve(id, limits, tokens)
    }

    pub(super) async fn room_in(&self, id: &DeploymentId, limits: Limits, tokens: u64) -> Duration {
        let s = &self.shared;
        if let Some(mut h) = s.request_handle() {
            let [t, c] = s.keys.usage(id);
            let mut inv = scripts::ROOM.key(t);
            inv.key(c);
            self.window_args(&mut inv, limits, tokens);
            if let Some((wait, requests, used)) = s.run::<(i64, u64, u64)>(&inv, &mut h).await {
                s.cache_usage(id, WindowUsage { requests, tokens: used });
                return micros(wait);
            }
        }
        s.local.room_in(id, limits, tokens)
    }

    pub(super) fn reconcile_detached(&self, r: &Reservation, actual: u64) {
        if !r.remote {
            return self.shared.local.reconcile(r, actual);
        }
        if actual == r.tokens {
            return;
        }
        let shared = self.shared.clone();
        let r = r.clone();
        self.shared.detach(Box::pin(async move {
            let Some(mut h) = shared.background_handle() else { return };
            shared.run::<i64>(&shared.adjust(&r, actual), &mut h).await;
        }));
    }

    pub(super) fn add_spend_detached(&self, key: &str, amount: f64, period: Duration) {
        let s = &self.shared;
        s.spend_locally(key, amount, period);
        if s.request_handle().is_none() {
            s.local.add_spend(key, amount, period);
            return;
        }
        let shared = s.clone();
        let key = key.to_owned();
        s.detach(Box::pin(async move {
            let Some(mut h) = shared.background_handle() else {
                shared.local.add_spend(&key, amount, period);
                return;
            };
            if shared.spend_remote(&key, amount, period, &mut h).await.is_none() {
                shared.local.add_spend(&key, amount, period);
            }
        }));
    }

    pub(super) async fn spends(&self, keys: &[&str]) -> Result<Vec<SpendState>, StoreError> {
        let s = &self.shared;
        let Some(h) = s.request_handle() else {
            if s.config.budgets_fail_closed {
                return Err(StoreError::new("redis is unreachable and budgets are configured fail-closed"));
            }
            return Ok(keys.iter().map(|k| s.local.spend_state(k)).collect());
        };
        let now = Instant::now();
        let cached: Vec<Option<SpendCache>> = keys
            .iter()
            .map(|key| {
                s.spends.get_mut(*key).map(|mut e| {
                    e.read_at = now;
                    e.value
                })
            })
            .collect();
        // A replica's first read of a key reads through, all missing keys at once (so a stalled
        // Redis costs one reply timeout, not one per key).
        let reads = keys.iter().zip(&cached).filter(|(_, c)| c.is_none()).map(|(key, _)| {
            let mut conn = h.request.clone();
            async move { s.read_spend(key, &mut conn).await.unwrap_or_default() }
        });
        let mut read = futures_util::future::join_all(reads).await.into_iter();
        // Measured from after the reads: a read-through's deadline is set when its reply arrives.
        let now = Instant::now();
        Ok(cached.into_iter().map(|c| spend_state(c.unwrap_or_else(|| read.next().unwrap_or_default()), now)).collect())
    }

    pub(super) async fn affinity(&self, key: &str) -> Option<DeploymentId> {
        let s = &self.shared;
        let Some(mut h) = s.request_handle() else { return s.local.affinity(key) };
        let now = Instant::now();
        if let Some(mut e) = s.affinity.get_mut(key) {
            e.read_at = now;
            return (e.value.until > now).then(|| e.value.id.clone());
        }
        // First read of this key by this replica: read through once, then the cache answers.
        let read = s.read_affinity(key, &mut h.request).await?;
        read.filter(|a| a.until > now).map(|a| a.id)
    }

    pub(super) fn set_affinity(&self, key: &str, id: &DeploymentId, ttl: Duration) {
        let s = &self.shared;
        if s.request_handle().is_none() {
            s.local.set_affinity(key, id, ttl);
            return;
        }
        let now = Instant::now();
        s.cache_affinity(key, Some(AffinityCache { id: id.clone(), until: now + ttl }), now);
        let shared = s.clone();
        let (key, id) = (s.keys.affinity(key), id.clone());
        s.detach(Box::pin(async move {
            let Some(mut h) = shared.background_handle() else { return };
            let mut cmd = redis::cmd("SET");
            cmd.arg(&key).arg(id.as_str()).arg("PX").arg(millis(ttl));
            shared.query::<()>(&cmd, &mut h).await;
        }));
    }
}

impl StoreBackend for RedisBackend {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn is_degraded(&self) -> bool {
        self.shared.degraded.load(Relaxed)
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
        self.shared.local.watch_cooldowns()
    }

    fn cooldown_states<'a>(&'a self, ids: &'a [DeploymentId]) -> StoreFuture<'a, Vec<CooldownState>> {
        StoreFuture::ready(self.cooldown_states(ids))
    }

    fn may_have_cooldowns_among(&self, ids: &mut dyn Iterator<Item = &DeploymentId>) -> bool {
        self.shared.local.may_have_cooldowns_among(ids)
    }

    fn all_cooldowns(&self) -> StoreFuture<'_, Vec<(DeploymentId, CooldownState)>> {
        StoreFuture::ready(self.shared.local.all_cooldowns())
    }

    fn bench<'a>(
        &'a self,
        id: &'a DeploymentId,
        base: Duration,
        reason: Arc<str>,
        status: Option<u16>,
        growth: Option<Growth>,
    ) -> StoreFuture<'a, Cooldown> {
        StoreFuture::pending(self.bench(id, base, reason, status, growth))
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
            Bookkeeping::Reconcile { reservation, actual_tokens } => self.reconcile_detached(reservation, actual_tokens),
            Bookkeeping::Spend { key, amount, period } => self.add_spend_detached(key, amount, period),
            Bookkeeping::Task(task) => self.shared.detach(task),
        }
    }
}

fn spend_state(v: SpendCache, now: Instant) -> SpendState {
    match v.resets_at.and_then(|at| at.checked_duration_since(now)).filter(|d| !d.is_zero()) {
        Some(resets_in) => SpendState { total: v.total, resets_in: Some(resets_in) },
        None => SpendState::default(),
    }
}

impl Replica {
    /// The resolution in µs, in whole milliseconds as the memory window counts it.
    fn resolution_us(&self) -> u64 {
        u64::try_from(self.store.resolution.as_millis()).unwrap_or(u64::MAX).max(1).saturating_mul(1000)
    }

    /// The window span in resolution ticks (as the memory window counts them).
    fn span(&self, window: Duration) -> u64 {
        let res_ms = u64::try_from(self.store.resolution.as_millis()).unwrap_or(u64::MAX).max(1);
        u64::try_from(window.as_millis()).unwrap_or(u64::MAX).div_ceil(res_ms).max(1)
    }

    /// The handles for an operation: on the request path, or, inside the background writer
    /// (bookkeeping that calls the store's awaited operations), counted as background.
    fn request_handle(&self) -> Option<Handles> {
        if self.degraded.load(Relaxed) {
            return None;
        }
        let h = self.handles.load_full()?;
        if sync::in_background() {
            return Some(Handles { request: h.background.clone(), background: h.background.clone() });
        }
        Some((*h).clone())
    }

    fn background_handle(&self) -> Option<Counted> {
        if self.degraded.load(Relaxed) {
            return None;
        }
        self.handles.load_full().map(|h| h.background.clone())
    }

    fn detach(&self, work: BoxFuture<'static, ()>) {
        self.pending.send_modify(|n| *n += 1);
        if self.writes.try_send(work).is_err() {
            self.pending.send_modify(|n| *n = n.saturating_sub(1));
            self.dropped.fetch_add(1, Relaxed);
            metrics::counter!("switchyard_state_redis_dropped_writes_total").increment(1);
        }
    }

    /// Registers ids whose cooldowns this replica reads (re-read on every resync).
    fn remember(&self, ids: &[DeploymentId]) {
        for id in ids {
            if !self.known.contains_key(id) {
                self.known.insert(id.clone(), ());
            }
        }
    }

    /// Adds `successes` and `failures` to `id`'s outcome window; the counts after, or `None` when
    /// Redis did not answer.
    async fn record_outcomes(
        &self,
        id: &DeploymentId,
        successes: u64,
        failures: u64,
        conn: &mut Counted,
    ) -> Option<OutcomeCounts> {
        let [t, c] = self.keys.outcomes(id);
        let mut inv = scripts::OUTCOME.key(t);
        inv.key(c).arg(self.resolution_us()).arg(self.span(self.store.outcome_window)).arg(successes).arg(failures);
        let (successes, failures) = self.run::<(u64, u64)>(&inv, conn).await?;
        Some(OutcomeCounts { successes, failures })
    }

    /// A cooldown script's invocation with its two keys (the record and its revision counter).
    fn cooldown_script<'a>(&self, script: &'a redis::Script, id: &DeploymentId) -> ScriptInvocation<'a> {
        let [record, revision] = self.keys.cooldown(id);
        let mut inv = script.key(record);
        inv.key(revision);
        inv
    }

    fn cache_usage(&self, id: &DeploymentId, usage: WindowUsage) {
        match self.usage.get_mut(id) {
            Some(mut e) => e.value = usage,
            None => {
                self.usage.insert(id.clone(), Cached { value: usage, read_at: Instant::now() });
            }
        }
    }

    fn adjust<'a>(&self, r: &Reservation, actual: u64) -> ScriptInvocation<'a> {
        let [t, c] = self.keys.usage(&r.id);
        let mut inv = scripts::ADJUST.key(t);
        inv.key(c).arg(r.tick).arg(actual as i64 - r.tokens as i64);
        inv
    }

    /// Runs a script with the reply timeout; a failure is recorded (and may start the degraded
    /// mode) and answered with `None`, so the caller falls back to local state.
    async fn run<T: FromRedisValue>(&self, inv: &ScriptInvocation<'_>, conn: &mut impl AsConn) -> Option<T> {
        self.run_result(inv, conn).await.ok()
    }

    async fn run_result<T: FromRedisValue>(&self, inv: &ScriptInvocation<'_>, conn: &mut impl AsConn) -> Result<T, ()> {
        match tokio::time::timeout(self.config.response_timeout, inv.invoke_async(conn.as_conn())).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                self.failed(&e);
                Err(())
            }
            Err(_) => {
                self.timed_out();
                Err(())
            }
        }
    }

    async fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd, conn: &mut Counted) -> Option<T> {
        match tokio::time::timeout(self.config.response_timeout, cmd.query_async(conn)).await {
            Ok(Ok(v)) => Some(v),
            Ok(Err(e)) => {
                self.failed(&e);
                None
            }
            Err(_) => {
                self.timed_out();
                None
            }
        }
    }

    fn timed_out(&self) {
        self.errors.fetch_add(1, Relaxed);
        self.connection_errors.fetch_add(1, Relaxed);
        metrics::counter!("switchyard_state_redis_errors_total", "kind" => "timeout").increment(1);
        self.degrade(&format!("no reply within {:?}", self.config.response_timeout));
    }

    fn failed(&self, e: &RedisError) {
        self.errors.fetch_add(1, Relaxed);
        let unreachable = e.is_io_error()
            || e.is_timeout()
            || e.is_connection_dropped()
            || e.is_connection_refusal()
            || e.is_unrecoverable_error();
        if unreachable {
            self.connection_errors.fetch_add(1, Relaxed);
            metrics::counter!("switchyard_state_redis_errors_total", "kind" => "connection").increment(1);
            self.degrade(&e.to_string());
        } else {
            metrics::counter!("switchyard_state_redis_errors_total", "kind" => "server").increment(1);
            self.warn(&format!("redis call failed, answered from local state: {e}"));
        }
    }

    /// Enters the degraded mode: requests use local state until the supervisor reconnects.
    fn degrade(&self, why: &str) {
        if !self.degraded.swap(true, Relaxed) {
            self.degradations.fetch_add(1, Relaxed);
            self.health.send_replace(false);
            metrics::gauge!("switchyard_state_redis_degraded").set(1.0);
            self.resync.notify_one();
        }
        self.warn(&format!("redis unreachable, routing on local state until it returns: {why}"));
    }

    /// Logs at most once per `warn_interval`.
    fn warn(&self, message: &str) {
        let now = Instant::now();
        let mut last = self.last_warn.lock();
        if last.is_none_or(|at| now.saturating_duration_since(at) >= self.config.warn_interval) {
            *last = Some(now);
            drop(last);
            tracing::warn!(target: "switchyard::state", "{message}");
        }
    }

    /// Applies a cooldown message to the mirror unless a newer one was applied; returns the state
    /// it describes (also when it was too old to apply: a script's reply says what it put in force).
    fn apply(&self, payload: &str) -> Option<CooldownState> {
        let msg: Message = match serde_json::from_str(payload) {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(target: "switchyard::state", error = %crate::logsafe::Escaped(&e), "ignored a malformed cooldown message");
                return None;
            }
        };
        let id = DeploymentId::from(msg.id.as_str());
        let at = num(&msg.at).max(0) as u64;
        let now_ms = num(&msg.now);
        let local_now = Instant::now();
        let (state, record) = match msg.op.as_str() {
            "set" => {
                let until = local_now + Duration::from_millis((num(&msg.u) - now_ms).max(0) as u64);
                let probe = num(&msg.p) - now_ms;
                let probe_until = (probe > 0).then(|| local_now + Duration::from_millis(probe as u64));
                let cooldown = Cooldown {
                    until,
                    reason: Arc::from(msg.r.as_str()),
                    status: msg.s.parse().ok(),
                    strikes: u32::try_from(num(&msg.k).max(0)).unwrap_or(u32::MAX),
                };
                let half_open = msg.h == "1";
                let state = if until > local_now {
                    CooldownState::CoolingDown(cooldown.clone())
                } else if half_open {
                    CooldownState::HalfOpen { strikes: cooldown.strikes, probing: probe_until.is_some() }
                } else {
                    CooldownState::Available
                };
                (state, Some((cooldown, half_open, probe_until)))
            }
            "del" => (CooldownState::Available, None),
            _ => return None,
        };
        // A cooldown this replica set while Redis did not take it is not lifted, shortened or
        // stripped of its half-open state by Redis's older view, during its deadline or after it
        // (half-open, waiting for a probe); it is pushed (extending) as soon as Redis takes writes.
        if self.offline.contains_key(&id)
            && let Some((mine, mine_half_open)) = self.local.record(&id)
            && record.as_ref().is_none_or(|(theirs, theirs_half_open, _)| {
                theirs.until < mine.until || (mine_half_open && !theirs_half_open)
            })
        {
            return self.local.cooldown_states(std::slice::from_ref(&id)).pop();
        }
        // The revision check and the mirror write happen under the revision entry's lock, so two
        // messages applied at once cannot land in the wrong order.
        let mut rev = self.revisions.entry(id.clone()).or_insert((0, local_now));
        // A resync read whose current revision is below ours means the counter restarted (Redis
        // was flushed or the key expired): the read is the truth.
        let restarted = !msg.c.is_empty() && (num(&msg.c).max(0) as u64) < rev.0;
        if at >= rev.0 || restarted {
            *rev = (at, local_now);
            match record {
                Some((cooldown, half_open, probe_until)) => self.local.put_bench(&id, cooldown, half_open, probe_until),
                None => {
                    self.local.clear_cooldown(&id);
                }
            }
        }
        drop(rev);
        Some(state)
    }

    fn spend_locally(&self, key: &str, amount: f64, period: Duration) {
        let now = Instant::now();
        let mut e =
            self.spends.entry(Arc::from(key)).or_insert_with(|| Cached { value: SpendCache::default(), read_at: now });
        if e.value.resets_at.is_none_or(|at| at <= now) {
            e.value = SpendCache { total: 0.0, resets_at: Some(now + period) };
        }
        e.value.total += amount;
    }

    async fn spend_remote(&self, key: &str, amount: f64, period: Duration, h: &mut impl AsConn) -> Option<f64> {
        let mut inv = scripts::SPEND_ADD.key(self.keys.spend(key));
        inv.arg(amount).arg(millis(period));
        let (total, pttl) = self.run::<(f64, i64)>(&inv, h).await?;
        self.cache_spend(key, total, pttl);
        Some(total)
    }

    async fn read_spend(&self, key: &str, h: &mut impl AsConn) -> Option<SpendCache> {
        let inv = scripts::SPEND_READ.key(self.keys.spend(key));
        let (total, pttl) = self.run::<(Option<f64>, i64)>(&inv, h).await?;
        Some(self.cache_spend(key, total.unwrap_or(0.0), pttl))
    }

    fn cache_spend(&self, key: &str, total: f64, pttl: i64) -> SpendCache {
        let now = Instant::now();
        let value = if pttl > 0 {
            SpendCache { total, resets_at: Some(now + Duration::from_millis(pttl as u64)) }
        } else {
            SpendCache::default()
        };
        match self.spends.get_mut(key) {
            Some(mut e) => e.value = value,
            None => {
                self.spends.insert(Arc::from(key), Cached { value, read_at: now });
            }
        }
        value
    }

    /// Reads an affinity entry into the cache; `None` when Redis did not answer.
    async fn read_affinity(&self, key: &str, h: &mut Counted) -> Option<Option<AffinityCache>> {
        let k = self.keys.affinity(key);
        let mut pipe = redis::pipe();
        pipe.get(&k).pttl(&k);
        let read = match tokio::time::timeout(self.config.response_timeout, pipe.query_async(h)).await {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                self.failed(&e);
                return None;
            }
            Err(_) => {
                self.timed_out();
                return None;
            }
        };
        let (id, pttl): (Option<String>, i64) = read;
        let now = Instant::now();
        let entry = id.filter(|_| pttl > 0).map(|id| AffinityCache {
            id: DeploymentId::from(id.as_str()),
            until: now + Duration::from_millis(pttl as u64),
        });
        self.cache_affinity(key, entry.clone(), now);
        Some(entry)
    }

    fn cache_affinity(&self, key: &str, entry: Option<AffinityCache>, now: Instant) {
        let cap = self.store.affinity_capacity.max(1);
        if self.affinity.len() >= cap && !self.affinity.contains_key(key) {
            // Keep what requests read lately; forget the rest (it reads through again).
            let recent = self.config.resync_interval * 2;
            self.affinity.retain(|_, e| now.saturating_duration_since(e.read_at) < recent);
            if self.affinity.len() >= cap {
                self.affinity.clear();
            }
        }
        // An absent entry is cached as expired, so the next read does not read through again.
        let value = entry.unwrap_or(AffinityCache { id: DeploymentId::from(""), until: now });
        self.affinity.insert(Arc::from(key), Cached { value, read_at: now });
    }
}

/// What a script can be run on: the request handles (their request connection) or a background
/// connection.
trait AsConn {
    fn as_conn(&mut self) -> &mut Counted;
}

impl AsConn for Handles {
    fn as_conn(&mut self) -> &mut Counted {
        &mut self.request
    }
}

impl AsConn for Counted {
    fn as_conn(&mut self) -> &mut Counted {
        self
    }
}
