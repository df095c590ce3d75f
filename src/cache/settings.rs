//! What `litellm_settings.cache`, `cache_params` and `router_settings.caching_groups` configure,
//! as typed settings: the backend and its bounds, the default TTL, the namespace, the call types
//! and the mode.

use std::time::Duration;

use crate::config::RedisSettings;

/// The response cache's settings (`litellm_settings.cache: true` with its `cache_params`).
///
/// ```
/// use std::time::Duration;
/// use switchyard::cache::{CacheBackend, CacheMode, CacheSettings};
///
/// let settings = CacheSettings::local().ttl(Duration::from_secs(60)).namespace("prod");
/// assert_eq!(settings.mode, CacheMode::DefaultOn);
/// assert!(matches!(settings.backend, CacheBackend::Local { .. }));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CacheSettings {
    /// Where answers are kept (`cache_params.type`).
    pub backend: CacheBackend,
    /// How long an answer is kept unless the request says otherwise (`cache_params.ttl`;
    /// [`DEFAULT_TTL`](Self::DEFAULT_TTL) when not set, on Redis too, so no key lives forever).
    pub ttl: Duration,
    /// Prefix of every key (`cache_params.namespace`), as `namespace:hash`.
    pub namespace: Option<String>,
    /// Which endpoints are cached (`cache_params.supported_call_types`).
    pub call_types: CallTypes,
    /// `default_on`: every request may be served from and stored in the cache; `default_off`:
    /// only requests that send `cache: {"use-cache": true}`.
    pub mode: CacheMode,
    /// `router_settings.caching_groups`: model groups that share their cached answers.
    pub caching_groups: Vec<Vec<String>>,
    /// Largest answer kept, in bytes (`cache_params.max_item_bytes`, 1 MiB: LiteLLM's
    /// `MAX_SIZE_PER_ITEM_IN_MEMORY_CACHE_IN_KB`); larger answers are served and not stored.
    pub max_item_bytes: usize,
}

impl CacheSettings {
    /// LiteLLM's in-memory TTL: 10 minutes.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(600);
    /// Largest answer stored by default: 1 MiB.
    pub const DEFAULT_MAX_ITEM_BYTES: usize = 1 << 20;

    /// An in-memory cache with the default bounds ([`CacheBackend::DEFAULT_MAX_BYTES`]).
    pub fn local() -> Self {
        Self::with_backend(CacheBackend::Local { max_bytes: CacheBackend::DEFAULT_MAX_BYTES })
    }

    /// A cache on the Redis server `redis` points at.
    pub fn redis(redis: RedisSettings) -> Self {
        Self::with_backend(CacheBackend::Redis(redis))
    }

    fn with_backend(backend: CacheBackend) -> Self {
        Self {
            backend,
            ttl: Self::DEFAULT_TTL,
            namespace: None,
            call_types: CallTypes::default(),
            mode: CacheMode::DefaultOn,
            caching_groups: Vec::new(),
            max_item_bytes: Self::DEFAULT_MAX_ITEM_BYTES,
        }
    }

    /// Sets the default TTL.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Sets the key prefix.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Sets the mode.
    pub fn mode(mut self, mode: CacheMode) -> Self {
        self.mode = mode;
        self
    }

    /// Adds a set of model groups that share cached answers.
    pub fn caching_group<I, S>(mut self, groups: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.caching_groups.push(groups.into_iter().map(Into::into).collect());
        self
    }
}

/// Where cached answers live.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum CacheBackend {
    /// In this process (`type: local`), bounded by the bytes of the answers it holds.
    Local {
        /// Most bytes held (`cache_params.max_bytes`); the least recently and least frequently
        /// used answers are evicted first.
        max_bytes: u64,
    },
    /// On Redis (`type: redis`), shared by every replica; each key has its TTL.
    Redis(RedisSettings),
}

impl CacheBackend {
    /// The in-memory bound when `max_bytes` is not set: 64 MiB.
    pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;
}

/// `cache_params.mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheMode {
    /// Every request uses the cache unless it opts out (`no-cache`, `no-store`).
    #[default]
    DefaultOn,
    /// Only requests that send `cache: {"use-cache": true}` use the cache.
    DefaultOff,
}

/// The endpoints whose answers are cached (`cache_params.supported_call_types`, LiteLLM's call
/// type names: `completion` / `acompletion` for chat completions, `text_completion` /
/// `atext_completion`, `embedding` / `aembedding`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallTypes {
    /// `/v1/chat/completions`.
    pub chat: bool,
    /// `/v1/completions`.
    pub completions: bool,
    /// `/v1/embeddings`.
    pub embeddings: bool,
}

impl Default for CallTypes {
    fn default() -> Self {
        Self { chat: true, completions: true, embeddings: true }
    }
}
