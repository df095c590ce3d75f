//! [`RedisConfig`]: where the shared state lives and how the backend talks to it.

use std::{fmt, time::Duration};

use crate::ApiKey;

/// A single Redis server or the seed nodes of a Redis Cluster.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub enum Topology {
    /// One server (or a proxy in front of several): `redis://` or `rediss://` (TLS).
    Single(String),
    /// Seed nodes of a Redis Cluster; the rest of the cluster is discovered from them.
    Cluster(Vec<String>),
}

/// Settings of the Redis state backend.
///
/// URLs follow the redis crate: `redis://[user][:password@]host[:port][/db]`, `rediss://` for TLS
/// (rustls, the platform's root certificates). A password set with
/// [`password`](Self::password) overrides one in the URL. `Debug` never shows a credential.
///
/// ```
/// use std::time::Duration;
/// use switchyard_layers::state::RedisConfig;
///
/// let config = RedisConfig::new("redis://127.0.0.1:6379/0")
///     .namespace("prod-gateway")
///     .response_timeout(Duration::from_millis(100));
/// assert_eq!(config.key_prefix(), "prod-gateway:v1");
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct RedisConfig {
    /// Where Redis is.
    pub topology: Topology,
    /// A password that overrides the URL's (LiteLLM's `redis_password`).
    pub password: Option<ApiKey>,
    /// Prefix of every key and channel (`switchyard`); replicas that share state use the same one.
    /// Must not contain `{`, `}` or whitespace.
    pub namespace: String,
    /// Longest wait for a connection (1 s).
    pub connect_timeout: Duration,
    /// Longest wait for a reply (250 ms). A request-path call that times out is answered from
    /// local state (degraded mode); it never fails the request.
    pub response_timeout: Duration,
    /// How often the read caches (usage of recently read deployments, spend of recently read budget
    /// keys) refresh from Redis (100 ms): the staleness of the pre-call filters and of the budget
    /// checks. Reservations are always exact.
    pub sync_interval: Duration,
    /// How often every known cooldown is re-read, in case an invalidation was lost (1 s): the
    /// worst-case cooldown staleness (pub/sub makes the usual one about a round trip).
    pub resync_interval: Duration,
    /// How often, at most, the "Redis unreachable" warning is logged (30 s).
    pub warn_interval: Duration,
    /// How long a half-open record outlives its deadline while waiting for a probe (1 h).
    pub half_open_linger: Duration,
    /// When Redis is unreachable, budget checks refuse the request instead of reading local spend
    /// (`false`: they read the local cache, which keeps counting this replica's spend).
    pub budgets_fail_closed: bool,
    /// Most detached writes queued for the background writer (10,000); past it, writes are applied
    /// locally only and counted as dropped.
    pub write_queue: usize,
    /// PEM root certificate(s) that `rediss://` servers are verified against instead of the
    /// platform's roots (a private CA).
    pub ca_cert_pem: Option<Vec<u8>>,
}

impl RedisConfig {
    /// One server at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self::with_topology(Topology::Single(url.into()))
    }

    /// A Redis Cluster, discovered from `nodes`.
    pub fn cluster<I, S>(nodes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::with_topology(Topology::Cluster(nodes.into_iter().map(Into::into).collect()))
    }

    fn with_topology(topology: Topology) -> Self {
        Self {
            topology,
            password: None,
            namespace: "switchyard".to_owned(),
            connect_timeout: Duration::from_secs(1),
            response_timeout: Duration::from_millis(250),
            sync_interval: Duration::from_millis(100),
            resync_interval: Duration::from_secs(1),
            warn_interval: Duration::from_secs(30),
            half_open_linger: Duration::from_secs(3600),
            budgets_fail_closed: false,
            write_queue: 10_000,
            ca_cert_pem: None,
        }
    }

    /// Verifies `rediss://` servers against these PEM root certificates (a private CA) instead of
    /// the platform's.
    pub fn ca_cert_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_cert_pem = Some(pem.into());
        self
    }

    /// Sets the password (overrides the URL's).
    pub fn password(mut self, password: ApiKey) -> Self {
        self.password = Some(password);
        self
    }

    /// Sets the key namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Sets the connection timeout.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the reply timeout.
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// Sets the cache refresh interval.
    pub fn sync_interval(mut self, interval: Duration) -> Self {
        self.sync_interval = interval;
        self
    }

    /// Sets the cooldown re-read interval.
    pub fn resync_interval(mut self, interval: Duration) -> Self {
        self.resync_interval = interval;
        self
    }

    /// Sets the interval between "unreachable" warnings.
    pub fn warn_interval(mut self, interval: Duration) -> Self {
        self.warn_interval = interval;
        self
    }

    /// Makes budget checks refuse requests while Redis is unreachable.
    pub fn budgets_fail_closed(mut self, yes: bool) -> Self {
        self.budgets_fail_closed = yes;
        self
    }

    /// The prefix of every key: `{namespace}:v{schema}`.
    pub fn key_prefix(&self) -> String {
        format!("{}:v{}", self.namespace, super::keys::SCHEMA)
    }

    /// Checks the settings; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.namespace.is_empty()
            || self.namespace.contains(['{', '}'])
            || self.namespace.contains(char::is_whitespace)
        {
            return Err(format!("namespace `{}` must be non-empty, without braces or whitespace", self.namespace));
        }
        let urls: &[String] = match &self.topology {
            Topology::Single(url) => std::slice::from_ref(url),
            Topology::Cluster(nodes) if nodes.is_empty() => return Err("cluster: no seed node".to_owned()),
            Topology::Cluster(nodes) => nodes,
        };
        for url in urls {
            if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
                return Err(format!("url `{}` must start with redis:// or rediss://", mask_credentials(url)));
            }
        }
        for (name, d) in [
            ("connect_timeout", self.connect_timeout),
            ("response_timeout", self.response_timeout),
            ("sync_interval", self.sync_interval),
            ("resync_interval", self.resync_interval),
        ] {
            if d.is_zero() {
                return Err(format!("{name} must be above zero"));
            }
        }
        if self.write_queue == 0 {
            return Err("write_queue must be above zero".to_owned());
        }
        Ok(())
    }
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let topology = match &self.topology {
            Topology::Single(url) => format!("Single({})", mask_credentials(url)),
            Topology::Cluster(nodes) => {
                format!("Cluster({})", nodes.iter().map(|n| mask_credentials(n)).collect::<Vec<_>>().join(", "))
            }
        };
        f.debug_struct("RedisConfig")
            .field("topology", &topology)
            .field("password", &self.password)
            .field("namespace", &self.namespace)
            .field("connect_timeout", &self.connect_timeout)
            .field("response_timeout", &self.response_timeout)
            .field("sync_interval", &self.sync_interval)
            .field("resync_interval", &self.resync_interval)
            .field("warn_interval", &self.warn_interval)
            .field("half_open_linger", &self.half_open_linger)
            .field("budgets_fail_closed", &self.budgets_fail_closed)
            .field("write_queue", &self.write_queue)
            .field("ca_cert_pem", &self.ca_cert_pem.as_ref().map(|p| format!("{} bytes", p.len())))
            .finish()
    }
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Topology::Single(url) => write!(f, "Single({})", mask_credentials(url)),
            Topology::Cluster(nodes) => f.debug_list().entries(nodes.iter().map(|n| mask_credentials(n))).finish(),
        }
    }
}

pub(crate) use crate::redact::mask_url_credentials as mask_credentials;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_credentials() {
        let c = RedisConfig::new("rediss://user:hunter2@cache:6380/0").password(ApiKey::new("s3cret"));
        let shown = format!("{c:?}");
        assert!(!shown.contains("hunter2") && !shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("rediss://***@cache:6380/0"), "{shown}");
    }

    #[test]
    fn validation_names_the_field() {
        assert!(RedisConfig::new("redis://h").validate().is_ok());
        assert!(RedisConfig::new("http://h").validate().unwrap_err().contains("redis://"));
        assert!(RedisConfig::new("redis://h").namespace("a{b}").validate().unwrap_err().contains("namespace"));
        assert!(RedisConfig::cluster(Vec::<String>::new()).validate().unwrap_err().contains("seed"));
        let zero = RedisConfig::new("redis://h").response_timeout(Duration::ZERO);
        assert!(zero.validate().unwrap_err().contains("response_timeout"));
    }
}
