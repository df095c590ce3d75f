//! The read caches: usage, spend and affinity as Redis last reported them, refreshed in the
//! background by the supervisor (`sync.rs`) while requests read them, so that these reads make no
//! round trip. A replica's first read of a budget or affinity key reads through once.

use std::{sync::Arc, time::Duration};

use tokio::time::Instant;

use super::conn::Counted;
use super::{AsConn, RedisBackend, Replica, scripts};
use crate::{
    DeploymentId,
    state::{SpendState, StoreError, WindowUsage},
};

/// A cached read, refreshed in the background while requests keep reading it.
#[derive(Debug, Clone)]
pub(super) struct Cached<T> {
    pub(super) value: T,
    pub(super) read_at: Instant,
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct SpendCache {
    pub(super) total: f64,
    pub(super) resets_at: Option<Instant>,
}

#[derive(Debug, Clone)]
pub(super) struct AffinityCache {
    pub(super) id: DeploymentId,
    pub(super) until: Instant,
}

fn spend_state(v: SpendCache, now: Instant) -> SpendState {
    match v.resets_at.and_then(|at| at.checked_duration_since(now)).filter(|d| !d.is_zero()) {
        Some(resets_in) => SpendState { total: v.total, resets_in: Some(resets_in) },
        None => SpendState::default(),
    }
}

impl RedisBackend {
    pub(super) fn usage(&self, ids: &[DeploymentId]) -> Vec<WindowUsage> {
        let s = &self.replica;
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

    pub(super) async fn spends(&self, keys: &[&str]) -> Result<Vec<SpendState>, StoreError> {
        let s = &self.replica;
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
        let s = &self.replica;
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
}

impl Replica {
    pub(super) fn cache_usage(&self, id: &DeploymentId, usage: WindowUsage) {
        match self.usage.get_mut(id) {
            Some(mut e) => e.value = usage,
            None => {
                self.usage.insert(id.clone(), Cached { value: usage, read_at: Instant::now() });
            }
        }
    }

    pub(super) fn spend_locally(&self, key: &str, amount: f64, period: Duration) {
        let now = Instant::now();
        let mut e =
            self.spends.entry(Arc::from(key)).or_insert_with(|| Cached { value: SpendCache::default(), read_at: now });
        if e.value.resets_at.is_none_or(|at| at <= now) {
            e.value = SpendCache { total: 0.0, resets_at: Some(now + period) };
        }
        e.value.total += amount;
    }

    pub(super) async fn read_spend(&self, key: &str, h: &mut impl AsConn) -> Option<SpendCache> {
        let inv = scripts::SPEND_READ.key(self.keys.spend(key));
        let (total, pttl) = self.run::<(Option<f64>, i64)>(&inv, h).await?;
        Some(self.cache_spend(key, total.unwrap_or(0.0), pttl))
    }

    pub(super) fn cache_spend(&self, key: &str, total: f64, pttl: i64) -> SpendCache {
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
    pub(super) async fn read_affinity(&self, key: &str, h: &mut Counted) -> Option<Option<AffinityCache>> {
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

    pub(super) fn cache_affinity(&self, key: &str, entry: Option<AffinityCache>, now: Instant) {
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
