//! The `redis_*` keys of `router_settings`: precedence, URLs, cluster nodes, namespace.

use serde_json::Value;
use switchyard_layers::ApiKey;

use crate::config::{
    ConfigError, RedisSettings,
    convert::{NOT_SUPPORTED, Warnings, opt, to_timeout, to_u64},
    raw::{Flag, Num},
    redis::{check_host, host_url},
};

/// The `redis_*` keys of `router_settings`, as written.
pub(super) struct RedisKeys {
    pub(super) url: Option<String>,
    pub(super) host: Option<String>,
    pub(super) port: Option<Num>,
    pub(super) password: Option<String>,
    pub(super) namespace: Option<String>,
    pub(super) startup_nodes: Option<Value>,
    pub(super) ssl: Option<Flag>,
    pub(super) budgets_fail_closed: Option<Flag>,
    pub(super) response_timeout: Option<Num>,
    pub(super) ca_certs: Option<String>,
}

/// The `redis_*` keys; `None` when none is set. Checked here (precedence, URLs, namespace), so a
/// config that loads builds its backend.
pub(super) fn redis(rs: RedisKeys, w: &mut Warnings) -> Result<Option<RedisSettings>, ConfigError> {
    let at = |key: &str| format!("router_settings.{key}");
    let port = opt(rs.port, || at("redis_port"), port)?;
    let ssl = rs.ssl.map(|f| f.0);
    let nodes = startup_nodes(rs.startup_nodes, ssl.unwrap_or(false), w)?;
    let budgets_fail_closed = rs.budgets_fail_closed.map(|f| f.0);
    let response_timeout = opt(rs.response_timeout, || at("redis_response_timeout"), to_timeout)?;
    let any_set = rs.url.is_some()
        || rs.host.is_some()
        || port.is_some()
        || rs.password.is_some()
        || rs.namespace.is_some()
        || nodes.is_some()
        || ssl.is_some()
        || budgets_fail_closed.is_some()
        || response_timeout.is_some()
        || rs.ca_certs.is_some();
    if !any_set {
        return Ok(None);
    }
    let redis = RedisSettings {
        url: rs.url,
        host: rs.host,
        port,
        password: rs.password.map(ApiKey::new),
        startup_nodes: nodes.unwrap_or_default(),
        ssl: ssl.unwrap_or(false),
        namespace: rs.namespace,
        budgets_fail_closed: budgets_fail_closed.unwrap_or(false),
        response_timeout,
        ca_certs: rs.ca_certs.map(std::path::PathBuf::from),
    };
    redis.check()?;
    let winner = if !redis.startup_nodes.is_empty() {
        Some("redis_startup_nodes")
    } else if redis.url.is_some() {
        Some("redis_url")
    } else {
        None
    };
    if let Some(winner) = winner {
        for (key, set) in [("redis_host", redis.host.is_some()), ("redis_port", redis.port.is_some())] {
            if set {
                let path = at(key);
                w.once(path.clone(), format!("`{path}` is ignored: `{}` is set and wins", at(winner)));
            }
        }
    }
    Ok(Some(redis))
}

/// A TCP port: 1 to 65535.
pub(super) fn port(n: Num, path: &str) -> Result<u16, ConfigError> {
    let port = to_u64(n, path)?;
    match u16::try_from(port) {
        Ok(0) => Err(ConfigError::invalid(path, "must be between 1 and 65535, got 0")),
        Ok(port) => Ok(port),
        Err(_) => Err(ConfigError::invalid(path, format!("must be at most 65535, got {n}"))),
    }
}

/// `redis_startup_nodes` (LiteLLM's `startup_nodes`): a list of `{host, port}` mappings (port
/// 6379 when absent) or of `redis://` URLs, as URLs. `None` when not set.
pub(super) fn startup_nodes(
    value: Option<Value>,
    ssl: bool,
    w: &mut Warnings,
) -> Result<Option<Vec<String>>, ConfigError> {
    let at = "router_settings.redis_startup_nodes";
    let items = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(ConfigError::type_error(
                at,
                "must be a list of `{host, port}` mappings or of redis:// URLs (the seed nodes of a Redis Cluster)",
            ));
        }
    };
    if items.is_empty() {
        return Err(ConfigError::invalid(at, "must list at least one node (or be left out)"));
    }
    let mut nodes = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let path = format!("{at}[{i}]");
        match item {
            // Checked with the other URLs by `RedisSettings::check`.
            Value::String(url) => nodes.push(url),
            Value::Object(map) => {
                let mut host = None;
                let mut node_port = RedisSettings::DEFAULT_PORT;
                for (key, v) in map {
                    let p = format!("{path}.{key}");
                    match (key.as_str(), v) {
                        (_, Value::Null) => {}
                        ("host", Value::String(h)) => {
                            check_host(&h, &p)?;
                            host = Some(h);
                        }
                        ("host", _) => return Err(ConfigError::type_error(&p, "must be a host name or address")),
                        ("port", v) => {
                            let n: Num = serde_json::from_value(v)
                                .map_err(|_| ConfigError::type_error(&p, "must be a port number"))?;
                            node_port = port(n, &p)?;
                        }
                        _ => w.ignored(format!("{at}.{key}"), &p, NOT_SUPPORTED),
                    }
                }
                let host = host.ok_or_else(|| ConfigError::invalid(format!("{path}.host"), "is required"))?;
                nodes.push(host_url(&host, node_port, ssl));
            }
            _ => return Err(ConfigError::type_error(path, "must be a `{host, port}` mapping or a redis:// URL")),
        }
    }
    Ok(Some(nodes))
}
