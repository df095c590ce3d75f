//! `router_settings.redis_*`: where shared state lives, checked at load and turned into the state
//! backend's `RedisConfig` (feature `redis`).

use std::{fmt, time::Duration};

use switchyard_layers::ApiKey;

use super::ConfigError;

/// Where shared state lives: `redis_url`, or `redis_host` / `redis_port`, or
/// `redis_startup_nodes` (a Redis Cluster), with `redis_password`, `redis_namespace`,
/// `redis_ssl`, `redis_budgets_fail_closed` and `redis_response_timeout`.
///
/// Precedence: `redis_startup_nodes` means a Redis Cluster (with it, `redis_host` and
/// `redis_port` are ignored, and `redis_url` is an error); else `redis_url` wins over
/// `redis_host` / `redis_port`; a host without a port uses 6379. `redis_password` overrides a
/// password inside the URLs. Errors name the `router_settings.redis_*` key, also for settings
/// built in code.
///
/// `Debug` masks the password, also inside the URL and the startup-node URLs.
#[derive(Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RedisSettings {
    /// `redis_url`, e.g. `redis://:secret@cache:6379/0` (`rediss://` for TLS).
    pub url: Option<String>,
    /// `redis_host`.
    pub host: Option<String>,
    /// `redis_port` (6379 when `host` is set without it).
    pub port: Option<u16>,
    /// `redis_password`: overrides a password inside `url` or `startup_nodes`.
    pub password: Option<ApiKey>,
    /// `redis_startup_nodes`: seed nodes of a Redis Cluster, as URLs. `{host, port}` entries are
    /// stored as `redis://host:port` (`rediss://` with `ssl`). Non-empty means a cluster.
    pub startup_nodes: Vec<String>,
    /// `redis_ssl`: TLS (`rediss://`) for the URLs built from `host` / `port` and from
    /// `{host, port}` startup nodes. A `redis://` URL with `ssl` set is an error.
    pub ssl: bool,
    /// `redis_namespace`: prefix of every key and channel (the backend's default, `switchyard`,
    /// when `None`). Replicas that share state use the same one; no braces or whitespace.
    pub namespace: Option<String>,
    /// `redis_budgets_fail_closed`: while Redis is unreachable, budget checks refuse requests
    /// instead of reading this replica's local spend.
    pub budgets_fail_closed: bool,
    /// `redis_response_timeout`: longest wait for a Redis reply (the backend's default, 250 ms,
    /// when `None`); a request-path call that times out is answered from local state.
    pub response_timeout: Option<Duration>,
    /// `redis_ssl_ca_certs` (LiteLLM's `ssl_ca_certs`): a PEM file of root certificates that
    /// `rediss://` servers are verified against instead of the platform's (a private CA). Read
    /// when the backend is built.
    pub ca_certs: Option<std::path::PathBuf>,
}

/// The server or servers the settings point at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// One server, by URL.
    Single(String),
    /// Seed nodes of a Redis Cluster, by URL.
    Cluster(Vec<String>),
}

impl Target {
    /// The URLs with credentials masked, for logs.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn masked(&self) -> String {
        match self {
            Self::Single(url) => mask_url_credentials(url),
            Self::Cluster(nodes) => {
                let nodes: Vec<String> = nodes.iter().map(|n| mask_url_credentials(n)).collect();
                format!("cluster [{}]", nodes.join(", "))
            }
        }
    }
}

/// The path of a `router_settings` key.
fn at(key: &str) -> String {
    format!("router_settings.{key}")
}

impl RedisSettings {
    /// The port used when `redis_host` is set without `redis_port`.
    pub const DEFAULT_PORT: u16 = 6379;

    /// The key that selects the backend, to name errors about the setting as a whole: the first
    /// set of `redis_startup_nodes`, `redis_url`, `redis_host`, then the other keys.
    pub(crate) fn key(&self) -> &'static str {
        if !self.startup_nodes.is_empty() {
            "redis_startup_nodes"
        } else if self.url.is_some() {
            "redis_url"
        } else if self.host.is_some() {
            "redis_host"
        } else if self.port.is_some() {
            "redis_port"
        } else if self.password.is_some() {
            "redis_password"
        } else if self.namespace.is_some() {
            "redis_namespace"
        } else if self.response_timeout.is_some() {
            "redis_response_timeout"
        } else if self.ssl {
            "redis_ssl"
        } else if self.budgets_fail_closed {
            "redis_budgets_fail_closed"
        } else {
            "redis_url"
        }
    }

    /// The full path of [`key`](Self::key), e.g. `router_settings.redis_url`.
    pub(crate) fn path(&self) -> String {
        at(self.key())
    }

    /// Checks the settings and applies the precedence rules; the error names the key.
    pub(crate) fn check(&self) -> Result<Target, ConfigError> {
        if let Some(ns) = &self.namespace {
            check_namespace(ns)?;
        }
        if self.response_timeout.is_some_and(|t| t.is_zero()) {
            return Err(ConfigError::invalid(at("redis_response_timeout"), "must be > 0 seconds, got 0"));
        }
        if !self.startup_nodes.is_empty() {
            if self.url.is_some() {
                return Err(ConfigError::invalid(
                    at("redis_startup_nodes"),
                    "set either `redis_url` (one server) or `redis_startup_nodes` (a Redis Cluster), not both",
                ));
            }
            for (i, node) in self.startup_nodes.iter().enumerate() {
                check_url(node, self.ssl, &format!("{}[{i}]", at("redis_startup_nodes")))?;
            }
            return Ok(Target::Cluster(self.startup_nodes.clone()));
        }
        if let Some(url) = &self.url {
            check_url(url, self.ssl, &at("redis_url"))?;
            return Ok(Target::Single(url.clone()));
        }
        if let Some(host) = &self.host {
            check_host(host, &at("redis_host"))?;
            let port = self.port.unwrap_or(Self::DEFAULT_PORT);
            if port == 0 {
                return Err(ConfigError::invalid(at("redis_port"), "must be between 1 and 65535, got 0"));
            }
            return Ok(Target::Single(host_url(host, port, self.ssl)));
        }
        Err(ConfigError::invalid(
            self.path(),
            "needs `redis_host`, `redis_url` or `redis_startup_nodes` to say where Redis is",
        ))
    }

    /// The settings of the Redis state backend: the URL or the cluster's seed nodes, the
    /// password, and the namespace, response timeout and budget policy when set (the backend's
    /// defaults otherwise). Checks them as the load does, then with
    /// [`RedisConfig::validate`](switchyard_layers::state::RedisConfig::validate); the error
    /// names the `router_settings.redis_*` key.
    ///
    /// ```
    /// use switchyard::config::Config;
    /// use switchyard::layers::state::Topology;
    ///
    /// let config = Config::from_yaml_str_with_env(
    ///     "router_settings: { redis_host: cache, redis_ssl: true, redis_namespace: prod }",
    ///     &|_| None,
    /// )?;
    /// let redis = config.redis.as_ref().expect("set").to_redis_config()?;
    /// assert_eq!(redis.topology, Topology::Single("rediss://cache:6379".to_owned()));
    /// assert_eq!(redis.namespace, "prod");
    /// # Ok::<(), switchyard::config::ConfigError>(())
    /// ```
    #[cfg(feature = "redis")]
    pub fn to_redis_config(&self) -> Result<switchyard_layers::state::RedisConfig, ConfigError> {
        use switchyard_layers::state::RedisConfig;

        let mut config = match self.check()? {
            Target::Single(url) => RedisConfig::new(url),
            Target::Cluster(nodes) => RedisConfig::cluster(nodes),
        };
        if let Some(password) = &self.password {
            config = config.password(password.clone());
        }
        if let Some(namespace) = &self.namespace {
            config = config.namespace(namespace.as_str());
        }
        if let Some(timeout) = self.response_timeout {
            config = config.response_timeout(timeout);
        }
        config = config.budgets_fail_closed(self.budgets_fail_closed);
        if let Some(path) = &self.ca_certs {
            let pem = std::fs::read(path).map_err(|e| {
                ConfigError::invalid(at("redis_ssl_ca_certs"), format!("cannot read `{}`: {e}", path.display()))
            })?;
            config = config.ca_cert_pem(pem);
        }
        config.validate().map_err(|message| {
            let key = if message.starts_with("namespace") {
                "redis_namespace"
            } else if message.starts_with("response_timeout") {
                "redis_response_timeout"
            } else {
                self.key()
            };
            ConfigError::invalid(at(key), message)
        })?;
        Ok(config)
    }
}

impl fmt::Debug for RedisSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nodes: Vec<String> = self.startup_nodes.iter().map(|n| mask_url_credentials(n)).collect();
        f.debug_struct("RedisSettings")
            .field("url", &self.url.as_deref().map(mask_url_credentials))
            .field("host", &self.host)
            .field("port", &self.port)
            .field("password", &self.password)
            .field("startup_nodes", &nodes)
            .field("ssl", &self.ssl)
            .field("ca_certs", &self.ca_certs)
            .field("namespace", &self.namespace)
            .field("budgets_fail_closed", &self.budgets_fail_closed)
            .field("response_timeout", &self.response_timeout)
            .finish()
    }
}

/// Non-empty, no braces (the backend builds Redis Cluster hash tags around keys), no whitespace.
pub(crate) fn check_namespace(ns: &str) -> Result<(), ConfigError> {
    let path = at("redis_namespace");
    if ns.is_empty() {
        return Err(ConfigError::invalid(path, "must not be empty"));
    }
    if ns.contains(['{', '}']) {
        return Err(ConfigError::invalid(
            path,
            format!("must not contain braces (`{{`, `}}` delimit Redis Cluster hash tags), got `{ns}`"),
        ));
    }
    if ns.contains(char::is_whitespace) {
        return Err(ConfigError::invalid(path, format!("must not contain whitespace, got `{ns:?}`")));
    }
    Ok(())
}

/// `redis://` or `rediss://` with a host; `rediss://` when `ssl` is set.
fn check_url(url: &str, ssl: bool, path: &str) -> Result<(), ConfigError> {
    let Some((scheme, rest)) = url.split_once("://").filter(|(s, _)| matches!(*s, "redis" | "rediss")) else {
        return Err(ConfigError::invalid(
            path,
            format!("must start with redis:// or rediss:// (TLS), got `{}`", mask_url_credentials(url)),
        ));
    };
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    if host.is_empty() || host.starts_with(':') {
        return Err(ConfigError::invalid(path, format!("names no host, got `{}`", mask_url_credentials(url))));
    }
    if ssl && scheme == "redis" {
        return Err(ConfigError::invalid(
            path,
            "uses redis:// but `redis_ssl` is true; write rediss:// for TLS (or drop `redis_ssl`)",
        ));
    }
    Ok(())
}

/// A host name or address: no scheme, credentials, path or whitespace. The value is not echoed:
/// it may hold credentials.
pub(crate) fn check_host(host: &str, path: &str) -> Result<(), ConfigError> {
    if host.trim().is_empty() {
        return Err(ConfigError::invalid(path, "must not be empty"));
    }
    if host.contains("://") {
        return Err(ConfigError::invalid(
            path,
            "must be a host name or address, not a URL (use `redis_url` for a URL)",
        ));
    }
    if host.contains(['@', '/', '?', '#']) || host.contains(char::is_whitespace) {
        return Err(ConfigError::invalid(
            path,
            "must be a host name or address (no credentials, path or whitespace; put the password in `redis_password`)",
        ));
    }
    Ok(())
}

/// `redis://host:port` (`rediss://` with `ssl`); an IPv6 address is bracketed.
pub(crate) fn host_url(host: &str, port: u16, ssl: bool) -> String {
    let scheme = if ssl { "rediss" } else { "redis" };
    if host.contains(':') && !host.starts_with('[') {
        format!("{scheme}://[{host}]:{port}")
    } else {
        format!("{scheme}://{host}:{port}")
    }
}

pub(crate) use switchyard_layers::redact::mask_url_credentials;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_url_credentials_are_masked() {
        assert_eq!(mask_url_credentials("redis://:hunter2@cache:6379/0"), "redis://***@cache:6379/0");
        assert_eq!(mask_url_credentials("rediss://u:p@h/0?x=@"), "rediss://***@h/0?x=@");
        assert_eq!(mask_url_credentials("redis://cache:6379"), "redis://cache:6379");
        assert_eq!(mask_url_credentials("u:p@h"), "***@h");
    }

    #[test]
    fn host_urls_bracket_ipv6_and_pick_the_scheme() {
        assert_eq!(host_url("cache", 6379, false), "redis://cache:6379");
        assert_eq!(host_url("cache", 6380, true), "rediss://cache:6380");
        assert_eq!(host_url("::1", 7000, false), "redis://[::1]:7000");
        assert_eq!(host_url("[::1]", 7000, false), "redis://[::1]:7000");
    }

    #[test]
    fn urls_need_a_redis_scheme_and_a_host() {
        assert!(check_url("redis://cache", false, "p").is_ok());
        assert!(check_url("rediss://:pw@cache:6380/0", true, "p").is_ok());
        assert!(check_url("redis://[::1]:7000", false, "p").is_ok());
        assert!(check_url("http://cache", false, "p").unwrap_err().message().contains("redis://"));
        assert!(check_url("redis://", false, "p").unwrap_err().message().contains("no host"));
        assert!(check_url("redis://:pw@/0", false, "p").unwrap_err().message().contains("no host"));
        assert!(check_url("redis://cache", true, "p").unwrap_err().message().contains("rediss://"));
        let err = check_url("http://u:hunter2@cache", false, "p").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
}
