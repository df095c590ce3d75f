//! The Redis backend of the response cache: `GET` and `SET key value PX ttl` on one
//! reconnecting connection (a Redis Cluster connection for `startup_nodes`), made on first use.
//! Every call is bounded by the response timeout; a failure is a miss, logged at most every 30 s,
//! after which Redis is left alone for a second, so an outage costs requests next to nothing.

use std::{
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use bytes::Bytes;
use parking_lot::Mutex;
use redis::{AsyncCommands, Client, IntoConnectionInfo, aio::ConnectionManagerConfig, cluster::ClusterClientBuilder};
use serde::{Deserialize, Serialize};
use switchyard_layers::{
    body::Usage,
    state::{RedisConfig, Topology},
};
use tokio::time::Instant;

use super::store::{CachedAnswer, Lookup};
use crate::config::{ConfigError, RedisSettings};

#[derive(Clone)]
enum Conn {
    Single(redis::aio::ConnectionManager),
    Cluster(redis::cluster_async::ClusterConnection),
}

/// The stored value: LiteLLM's `{"timestamp", "response"}` plus the usage.
#[derive(Serialize, Deserialize)]
struct Stored<'a> {
    /// Seconds since the Unix epoch (wall clock: replicas compare it for `s-maxage`).
    timestamp: f64,
    usage: Option<[u64; 2]>,
    #[serde(borrow)]
    response: std::borrow::Cow<'a, str>,
}

pub(crate) struct RedisCache {
    config: Arc<RedisConfig>,
    conn: tokio::sync::Mutex<Option<Conn>>,
    /// A background connect is under way (at most one is started at a time).
    connecting: std::sync::atomic::AtomicBool,
    /// When the last connect or command failed: Redis is left alone for [`RECONNECT_AFTER`].
    failed_at: Mutex<Option<Instant>>,
    warned_at: Mutex<Option<Instant>>,
}

/// Time between connect attempts while Redis is unreachable.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);
/// At most one warning per this long.
const WARN_EVERY: Duration = Duration::from_secs(30);

impl RedisCache {
    pub(crate) fn new(settings: &RedisSettings) -> Result<Arc<Self>, ConfigError> {
        let config = settings.to_redis_config().map_err(|e| {
            // The settings came from `cache_params` (or the router's Redis): name the cache's key.
            let path = e.path().replace("router_settings.redis_", "litellm_settings.cache_params.");
            ConfigError::invalid(path, e.message())
        })?;
        Ok(Arc::new(Self {
            config: Arc::new(config),
            conn: tokio::sync::Mutex::new(None),
            connecting: std::sync::atomic::AtomicBool::new(false),
            failed_at: Mutex::new(None),
            warned_at: Mutex::new(None),
        }))
    }

    /// Connects in the background when built inside a Tokio runtime, so the first request does
    /// not wait for the connection (outside one, the first request connects).
    pub(crate) fn connect_soon(self: &Arc<Self>) {
        use std::sync::atomic::Ordering;
        if self.connecting.swap(true, Ordering::AcqRel) {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let this = self.clone();
                runtime.spawn(async move {
                    this.conn().await;
                    this.connecting.store(false, Ordering::Release);
                });
            }
            Err(_) => self.connecting.store(false, Ordering::Release),
        }
    }

    /// The connection for a lookup on the request path, without waiting: a request that finds
    /// no connection (or a connect under way) is a miss and starts a connect in the background,
    /// so an unreachable server that drops packets never holds requests for the connect timeout.
    fn conn_now(self: &Arc<Self>) -> Option<Conn> {
        if let Ok(slot) = self.conn.try_lock()
            && let Some(conn) = slot.as_ref()
        {
            return Some(conn.clone());
        }
        self.connect_soon();
        None
    }

    /// The connection, connecting first when there is none (one caller connects, the others
    /// wait for it); `None` while Redis is unreachable.
    async fn conn(&self) -> Option<Conn> {
        if self.failed_at.lock().is_some_and(|t| t.elapsed() < RECONNECT_AFTER) {
            return None;
        }
        let mut slot = self.conn.lock().await;
        if let Some(conn) = slot.as_ref() {
            return Some(conn.clone());
        }
        if self.failed_at.lock().is_some_and(|t| t.elapsed() < RECONNECT_AFTER) {
            return None;
        }
        match tokio::time::timeout(self.config.connect_timeout, connect(&self.config)).await {
            Ok(Ok(conn)) => {
                *self.failed_at.lock() = None;
                *slot = Some(conn.clone());
                Some(conn)
            }
            Ok(Err(e)) => {
                self.failed(&format!("connecting: {e}"));
                None
            }
            Err(_) => {
                self.failed("connecting: timed out");
                None
            }
        }
    }

    /// Records a failure: Redis is left alone for [`RECONNECT_AFTER`] (so an unreachable or
    /// silent server costs one request a second its timeout, not every request), and the
    /// warning is logged at most every [`WARN_EVERY`].
    fn failed(&self, what: &str) {
        *self.failed_at.lock() = Some(Instant::now());
        let mut warned = self.warned_at.lock();
        if warned.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
            *warned = Some(Instant::now());
            tracing::warn!(
                target: "switchyard::cache",
                servers = %self.config.topology_masked(),
                "response cache on Redis failed ({what}); requests are routed as misses"
            );
        }
    }

    pub(crate) async fn get(self: &Arc<Self>, key: &str, max_age: Option<Duration>) -> Lookup {
        let Some(conn) = self.conn_now() else { return Lookup::Error };
        let read = async move {
            match conn {
                Conn::Single(mut c) => c.get::<_, Option<Vec<u8>>>(key).await,
                Conn::Cluster(mut c) => c.get::<_, Option<Vec<u8>>>(key).await,
            }
        };
        let raw = match tokio::time::timeout(self.config.response_timeout, read).await {
            Ok(Ok(Some(raw))) => raw,
            Ok(Ok(None)) => return Lookup::Miss,
            Ok(Err(e)) => {
                self.failed(&format!("GET: {e}"));
                return Lookup::Error;
            }
            Err(_) => {
                self.failed("GET: timed out");
                return Lookup::Error;
            }
        };
        let Ok(stored) = serde_json::from_slice::<Stored<'_>>(&raw) else {
            // Written by another program or version: not ours to serve.
            return Lookup::Error;
        };
        if let Some(max) = max_age {
            let age = now_secs() - stored.timestamp;
            if age > max.as_secs_f64() {
                return Lookup::Miss;
            }
        }
        Lookup::Hit(CachedAnswer {
            body: Bytes::from(stored.response.into_owned()),
            usage: stored.usage.map(|[p, c]| Usage::new(p, c)),
        })
    }

    /// Writes in a task of its own; the outcome is counted there.
    pub(crate) fn put(self: &Arc<Self>, key: String, answer: CachedAnswer, ttl: Duration, endpoint: &'static str) {
        let Ok(response) = std::str::from_utf8(&answer.body) else { return };
        let stored = Stored {
            timestamp: now_secs(),
            usage: answer.usage.map(|u| [u.prompt_tokens, u.completion_tokens]),
            response: std::borrow::Cow::Borrowed(response),
        };
        let Ok(value) = serde_json::to_vec(&stored) else { return };
        let this = self.clone();
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        tokio::spawn(async move {
            let Some(conn) = this.conn().await else {
                super::layer::count(super::layer::Counted::Error, endpoint);
                return;
            };
            let write = async move {
                let opts = redis::SetOptions::default().with_expiration(redis::SetExpiry::PX(ttl_ms));
                match conn {
                    Conn::Single(mut c) => c.set_options::<_, _, ()>(&key, value, opts).await,
                    Conn::Cluster(mut c) => c.set_options::<_, _, ()>(&key, value, opts).await,
                }
            };
            match tokio::time::timeout(this.config.response_timeout, write).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    this.failed(&format!("SET: {e}"));
                    super::layer::count(super::layer::Counted::Error, endpoint);
                }
                Err(_) => {
                    this.failed("SET: timed out");
                    super::layer::count(super::layer::Counted::Error, endpoint);
                }
            }
        });
    }
}

impl RedisCache {
    pub(crate) async fn delete(&self, keys: &[String]) -> Result<u64, String> {
        let conn = self.conn().await.ok_or("Redis is unreachable")?;
        let mut removed = 0u64;
        for key in keys {
            let del = async {
                match conn.clone() {
                    Conn::Single(mut c) => c.del::<_, u64>(key).await,
                    Conn::Cluster(mut c) => c.del::<_, u64>(key).await,
                }
            };
            match tokio::time::timeout(self.config.response_timeout, del).await {
                Ok(Ok(n)) => removed += n,
                Ok(Err(e)) => {
                    self.failed(&format!("DEL: {e}"));
                    return Err(format!("DEL failed: {e}"));
                }
                Err(_) => {
                    self.failed("DEL: timed out");
                    return Err("DEL timed out".to_owned());
                }
            }
        }
        Ok(removed)
    }

    pub(crate) async fn ping(&self) -> Result<(), String> {
        let conn = self.conn().await.ok_or("Redis is unreachable")?;
        let ping = async move {
            let cmd = redis::cmd("PING");
            match conn {
                Conn::Single(mut c) => cmd.query_async::<String>(&mut c).await,
                Conn::Cluster(mut c) => cmd.query_async::<String>(&mut c).await,
            }
        };
        match tokio::time::timeout(self.config.response_timeout, ping).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => {
                self.failed(&format!("PING: {e}"));
                Err(format!("PING failed: {e}"))
            }
            Err(_) => {
                self.failed("PING: timed out");
                Err("PING timed out".to_owned())
            }
        }
    }
}

fn now_secs() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or_default()
}

trait Masked {
    fn topology_masked(&self) -> String;
}

impl Masked for RedisConfig {
    fn topology_masked(&self) -> String {
        match &self.topology {
            Topology::Single(url) => switchyard_layers::redact::mask_url_credentials(url),
            Topology::Cluster(nodes) => {
                let nodes: Vec<String> =
                    nodes.iter().map(|n| switchyard_layers::redact::mask_url_credentials(n)).collect();
                format!("cluster [{}]", nodes.join(", "))
            }
            _ => String::from("redis"),
        }
    }
}

fn connection_info(config: &RedisConfig, url: &str) -> redis::RedisResult<redis::ConnectionInfo> {
    let info = url.into_connection_info()?;
    Ok(match &config.password {
        Some(p) => {
            let settings = info.redis_settings().clone().set_password(p.expose());
            info.set_redis_settings(settings)
        }
        None => info,
    })
}

fn certificates(pem: &[u8]) -> redis::TlsCertificates {
    redis::TlsCertificates { client_tls: None, root_cert: Some(pem.to_vec()) }
}

async fn connect(config: &RedisConfig) -> redis::RedisResult<Conn> {
    match &config.topology {
        Topology::Cluster(nodes) => {
            let infos = nodes.iter().map(|n| connection_info(config, n)).collect::<redis::RedisResult<Vec<_>>>()?;
            let mut builder = ClusterClientBuilder::new(infos)
                .connection_timeout(config.connect_timeout)
                .response_timeout(config.response_timeout)
                .retries(1);
            if let Some(pem) = &config.ca_cert_pem {
                builder = builder.certs(certificates(pem));
            }
            Ok(Conn::Cluster(builder.build()?.get_async_connection().await?))
        }
        Topology::Single(url) => {
            let info = connection_info(config, url)?;
            let client = match &config.ca_cert_pem {
                Some(pem) => Client::build_with_tls(info, certificates(pem))?,
                None => Client::open(info)?,
            };
            let manager = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(config.connect_timeout))
                .set_response_timeout(Some(config.response_timeout))
                .set_number_of_retries(1)
                .set_max_delay(config.connect_timeout);
            Ok(Conn::Single(client.get_connection_manager_with_config(manager).await?))
        }
        _ => Err(redis::RedisError::from((redis::ErrorKind::Client, "unknown Redis topology"))),
    }
}
