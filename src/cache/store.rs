//! Where cached answers live: [`ResponseCache`] over an in-memory backend (moka, bounded by
//! bytes, each entry expiring at its own TTL) or Redis (`SET ... PX`, shared by replicas). A
//! backend failure is a miss, never a failed request.

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use moka::sync::Cache;
use switchyard_layers::body::Usage;
use tokio::time::Instant;

use super::settings::{CacheBackend, CacheSettings};
use crate::config::ConfigError;

/// One cached answer: the JSON body the client got, and its usage.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CachedAnswer {
    /// The whole answer, as served (a chat completion or an embeddings list, in JSON).
    pub body: Bytes,
    /// The usage the upstream reported, if any.
    pub usage: Option<Usage>,
}

/// What a lookup found.
#[derive(Debug)]
pub(crate) enum Lookup {
    Hit(CachedAnswer),
    Miss,
    /// The backend failed (Redis unreachable, a timeout, an entry that does not decode): a miss.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    Error,
}

/// The response cache of one configuration: its settings and its backend. Cheap to share
/// (`Arc`); a reload that changes the settings builds a new one.
pub struct ResponseCache {
    settings: CacheSettings,
    backend: Backend,
}

impl std::fmt::Debug for ResponseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseCache").field("settings", &self.settings).finish_non_exhaustive()
    }
}

enum Backend {
    Memory(Cache<String, Arc<MemEntry>>),
    #[cfg(feature = "redis")]
    Redis(Arc<super::redis::RedisCache>),
}

struct MemEntry {
    answer: CachedAnswer,
    stored_at: Instant,
    expires_at: Instant,
    ttl: Duration,
}

/// moka's per-entry expiry: each entry lives for its own TTL (the deadline checked on read,
/// on tokio's clock, decides; moka's eviction reclaims the memory).
struct PerEntryTtl;

impl moka::Expiry<String, Arc<MemEntry>> for PerEntryTtl {
    fn expire_after_create(&self, _: &String, value: &Arc<MemEntry>, _: std::time::Instant) -> Option<Duration> {
        Some(value.ttl)
    }

    fn expire_after_update(
        &self,
        _: &String,
        value: &Arc<MemEntry>,
        _: std::time::Instant,
        _: Option<Duration>,
    ) -> Option<Duration> {
        Some(value.ttl)
    }
}

/// The longest an entry is kept, whatever the config or the request say: a year (longer TTLs
/// would overflow clocks and Redis expiries).
pub const MAX_TTL: Duration = Duration::from_secs(365 * 24 * 3600);

/// Bytes an entry is charged beyond its key and body (the entry, the map's node).
const ENTRY_OVERHEAD: usize = 160;

impl ResponseCache {
    /// The cache `settings` describe. A Redis backend connects on first use (and again after
    /// an outage); an unreachable server only makes misses.
    pub fn new(settings: CacheSettings) -> Result<Self, ConfigError> {
        let backend = match &settings.backend {
            CacheBackend::Local { max_bytes } => Backend::Memory(
                Cache::builder()
                    .max_capacity(*max_bytes)
                    .weigher(|k: &String, v: &Arc<MemEntry>| {
                        u32::try_from(k.len() + v.answer.body.len() + ENTRY_OVERHEAD).unwrap_or(u32::MAX)
                    })
                    .expire_after(PerEntryTtl)
                    .build(),
            ),
            #[cfg(feature = "redis")]
            CacheBackend::Redis(redis) => {
                let redis = super::redis::RedisCache::new(redis)?;
                redis.connect_soon();
                Backend::Redis(redis)
            }
            #[cfg(not(feature = "redis"))]
            CacheBackend::Redis(_) => {
                return Err(ConfigError::invalid(
                    "litellm_settings.cache_params.type",
                    "`redis` needs Switchyard built with the `redis` feature",
                ));
            }
        };
        Ok(Self { settings, backend })
    }

    /// The settings it was built with.
    pub fn settings(&self) -> &CacheSettings {
        &self.settings
    }

    /// The name of the backend (`local` or `redis`), for metrics and logs.
    pub fn backend_name(&self) -> &'static str {
        match self.backend {
            Backend::Memory(_) => "local",
            #[cfg(feature = "redis")]
            Backend::Redis(_) => "redis",
        }
    }

    /// The answer stored under `key`, if it is at most `max_age` old.
    pub(crate) async fn get(&self, key: &str, max_age: Option<Duration>) -> Lookup {
        match &self.backend {
            Backend::Memory(cache) => {
                let Some(entry) = cache.get(key) else { return Lookup::Miss };
                let now = Instant::now();
                if now >= entry.expires_at {
                    cache.invalidate(key);
                    return Lookup::Miss;
                }
                if max_age.is_some_and(|max| now.saturating_duration_since(entry.stored_at) > max) {
                    return Lookup::Miss;
                }
                Lookup::Hit(entry.answer.clone())
            }
            #[cfg(feature = "redis")]
            Backend::Redis(redis) => redis.get(key, max_age).await,
        }
    }

    /// Stores `answer` under `key` for `ttl`. In memory at once; on Redis in a task of its own,
    /// so the answer never waits for the write.
    /// `endpoint` labels the metric of a write that fails later (Redis).
    #[cfg_attr(not(feature = "redis"), allow(unused_variables))]
    pub(crate) fn put(&self, key: String, answer: CachedAnswer, ttl: Duration, endpoint: &'static str) -> bool {
        if ttl.is_zero() {
            return false;
        }
        let ttl = ttl.min(MAX_TTL);
        match &self.backend {
            Backend::Memory(cache) => {
                let stored_at = Instant::now();
                let entry = MemEntry { answer, stored_at, expires_at: stored_at + ttl, ttl };
                cache.insert(key, Arc::new(entry));
                true
            }
            #[cfg(feature = "redis")]
            Backend::Redis(redis) => {
                redis.put(key, answer, ttl, endpoint);
                true
            }
        }
    }

    /// Removes the entries stored under `keys` (an operator's `POST /cache/delete`); the number
    /// of keys that held an entry. On Redis, one `DEL` per key (keys of a cluster may live on
    /// different nodes); an unreachable server is an error naming what failed.
    pub async fn delete(&self, keys: &[String]) -> Result<u64, String> {
        match &self.backend {
            Backend::Memory(cache) => {
                let mut removed = 0;
                for key in keys {
                    if cache.remove(key).is_some() {
                        removed += 1;
                    }
                }
                Ok(removed)
            }
            #[cfg(feature = "redis")]
            Backend::Redis(redis) => redis.delete(keys).await,
        }
    }

    /// Whether the backend answers: always in memory; a `PING` on Redis.
    pub async fn ping(&self) -> Result<(), String> {
        match &self.backend {
            Backend::Memory(_) => Ok(()),
            #[cfg(feature = "redis")]
            Backend::Redis(redis) => redis.ping().await,
        }
    }

    /// Entries held in memory (0 on Redis), after pending evictions ran.
    pub fn entry_count(&self) -> u64 {
        match &self.backend {
            Backend::Memory(cache) => {
                cache.run_pending_tasks();
                cache.entry_count()
            }
            #[cfg(feature = "redis")]
            Backend::Redis(_) => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(text: &str) -> CachedAnswer {
        CachedAnswer { body: Bytes::from(text.to_owned()), usage: Some(Usage::new(1, 2)) }
    }

    fn local(max_bytes: u64) -> ResponseCache {
        ResponseCache::new(CacheSettings { backend: CacheBackend::Local { max_bytes }, ..CacheSettings::local() })
            .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn an_entry_lives_for_its_ttl() {
        let cache = local(1 << 20);
        assert!(cache.put("k".into(), answer("a"), Duration::from_secs(10), "chat"));
        assert!(matches!(cache.get("k", None).await, Lookup::Hit(a) if a == answer("a")));
        tokio::time::advance(Duration::from_secs(9)).await;
        assert!(matches!(cache.get("k", None).await, Lookup::Hit(_)));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(matches!(cache.get("k", None).await, Lookup::Miss));
    }

    #[tokio::test(start_paused = true)]
    async fn s_maxage_refuses_older_answers_without_removing_them() {
        let cache = local(1 << 20);
        cache.put("k".into(), answer("a"), Duration::from_secs(60), "chat");
        tokio::time::advance(Duration::from_secs(5)).await;
        assert!(matches!(cache.get("k", Some(Duration::from_secs(4))).await, Lookup::Miss));
        assert!(matches!(cache.get("k", Some(Duration::from_secs(5))).await, Lookup::Hit(_)));
        assert!(matches!(cache.get("k", None).await, Lookup::Hit(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_ttl_stores_nothing() {
        let cache = local(1 << 20);
        assert!(!cache.put("k".into(), answer("a"), Duration::ZERO, "chat"));
        assert!(matches!(cache.get("k", None).await, Lookup::Miss));
    }

    #[tokio::test(start_paused = true)]
    async fn a_huge_ttl_is_capped_not_a_panic() {
        let cache = local(1 << 20);
        assert!(cache.put("k".into(), answer("a"), Duration::MAX, "chat"));
        tokio::time::advance(MAX_TTL - Duration::from_secs(1)).await;
        assert!(matches!(cache.get("k", None).await, Lookup::Hit(_)));
    }

    #[tokio::test]
    async fn delete_removes_the_named_entries() {
        let cache = local(1 << 20);
        cache.put("a".into(), answer("a"), Duration::from_secs(60), "chat");
        cache.put("b".into(), answer("b"), Duration::from_secs(60), "chat");
        assert_eq!(cache.delete(&["a".to_owned(), "nope".to_owned()]).await, Ok(1));
        assert!(matches!(cache.get("a", None).await, Lookup::Miss));
        assert!(matches!(cache.get("b", None).await, Lookup::Hit(_)));
        assert_eq!(cache.ping().await, Ok(()));
    }

    #[tokio::test]
    async fn memory_is_bounded_by_bytes() {
        let cache = local(64 * 1024);
        let body = "x".repeat(1000);
        for i in 0..1000 {
            cache.put(format!("k{i}"), answer(&body), Duration::from_secs(600), "chat");
        }
        let held = cache.entry_count();
        assert!(held > 0 && held <= 64 * 1024 / 1000, "{held} entries held");
    }
}
