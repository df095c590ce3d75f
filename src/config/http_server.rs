//! `general_settings.edge` (ours, not a LiteLLM key): the gateway's connection limits and the
//! origins and host names browsers may use. Each key left out keeps the gateway's default; the
//! values are checked here, naming their path, so that a gateway built from the config never
//! fails on them.

use std::time::Duration;

use serde_json::Value;

use super::{
    ConfigError,
    convert::{to_timeout, to_u32},
    raw::Num,
};

/// `general_settings.edge`: what the gateway (feature `gateway`) applies to every connection it
/// serves and to browsers' requests. `None` (or an empty list left out) keeps the gateway's
/// default, listed in `docs/gateway.md`; `GatewayBuilder::connection_limits`,
/// `allowed_origins` and `allowed_hosts` replace what is set here.
///
/// ```
/// use std::time::Duration;
/// use switchyard::config::Config;
///
/// let config = Config::from_yaml_str(
///     "general_settings: { edge: { idle_timeout: 30, allowed_hosts: [gateway.internal] } }",
/// )?;
/// assert_eq!(config.edge.idle_timeout, Some(Duration::from_secs(30)));
/// assert_eq!(config.edge.allowed_hosts, Some(vec!["gateway.internal".to_owned()]));
/// assert_eq!(config.edge.header_read_timeout, None);
/// # Ok::<(), switchyard::config::ConfigError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EdgeSettings {
    /// `header_read_timeout` (seconds): longest time from a request head's first byte to its
    /// end, and from a connection's accept to its first complete head.
    pub header_read_timeout: Option<Duration>,
    /// `idle_timeout` (seconds): longest time a connection stays open with no request in flight.
    pub idle_timeout: Option<Duration>,
    /// `max_connections`: connections served at once.
    pub max_connections: Option<usize>,
    /// `max_header_bytes`: largest request head (HTTP/2: decoded header list), at least 8 KiB.
    pub max_header_bytes: Option<usize>,
    /// `max_headers`: largest number of request headers (HTTP/1).
    pub max_headers: Option<usize>,
    /// `http2_keep_alive_interval` (seconds): how often an HTTP/2 connection is pinged.
    pub http2_keep_alive_interval: Option<Duration>,
    /// `http2_keep_alive_timeout` (seconds): how long an HTTP/2 ping's answer is waited for.
    pub http2_keep_alive_timeout: Option<Duration>,
    /// `http2_max_concurrent_streams`: requests open at once on one HTTP/2 connection.
    pub http2_max_concurrent_streams: Option<u32>,
    /// `allowed_origins`: origins whose pages may call the gateway (`https://app.example.com`,
    /// or `*`), lower case, without a trailing `/`.
    pub allowed_origins: Option<Vec<String>>,
    /// `allowed_hosts`: host names served without a master key besides `localhost`,
    /// `*.localhost` and IP addresses (`gateway.internal`, or `*`), lower case, without a port.
    pub allowed_hosts: Option<Vec<String>>,
}

impl EdgeSettings {
    /// The keys `general_settings.edge` accepts.
    pub const KEYS: [&'static str; 10] = [
        "header_read_timeout",
        "idle_timeout",
        "max_connections",
        "max_header_bytes",
        "max_headers",
        "http2_keep_alive_interval",
        "http2_keep_alive_timeout",
        "http2_max_concurrent_streams",
        "allowed_origins",
        "allowed_hosts",
    ];
    /// Longest timeout or interval accepted: one day. Longer ones mean "never" in practice, and
    /// a bound keeps deadline arithmetic from overflowing.
    pub const MAX_SECONDS: u64 = 86_400;
    /// Smallest `max_header_bytes` (hyper's smallest HTTP/1 read buffer).
    pub const MIN_HEADER_BYTES: u32 = 8 * 1024;
    /// Largest `max_header_bytes`: 1 MiB, which no legitimate request head needs.
    pub const MAX_HEADER_BYTES: u32 = 1024 * 1024;
    /// Largest `max_headers`.
    pub const MAX_HEADERS: u32 = 10_000;
}

/// An origin as `GatewayBuilder::allowed_origins` keeps it: trimmed, lower case, no trailing `/`.
pub(crate) fn normalize_origin(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// A host name as `GatewayBuilder::allowed_hosts` keeps it: trimmed, lower case, no trailing `.`.
pub(crate) fn normalize_host(host: &str) -> String {
    host.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Reads `general_settings.edge`.
pub(crate) fn edge(value: Option<Value>) -> Result<EdgeSettings, ConfigError> {
    const AT: &str = "general_settings.edge";
    let map = match value {
        None | Some(Value::Null) => return Ok(EdgeSettings::default()),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Err(ConfigError::type_error(
                AT,
                "must be a mapping of edge settings (`idle_timeout`, `allowed_origins`, ...)",
            ));
        }
    };
    let mut edge = EdgeSettings::default();
    for (key, v) in map {
        let path = format!("{AT}.{key}");
        if v.is_null() {
            continue;
        }
        match key.as_str() {
            "header_read_timeout" => edge.header_read_timeout = Some(seconds(v, &path)?),
            "idle_timeout" => edge.idle_timeout = Some(seconds(v, &path)?),
            "http2_keep_alive_interval" => edge.http2_keep_alive_interval = Some(seconds(v, &path)?),
            "http2_keep_alive_timeout" => edge.http2_keep_alive_timeout = Some(seconds(v, &path)?),
            "max_connections" => edge.max_connections = Some(count(v, &path, 1, u32::MAX)?),
            "max_header_bytes" => {
                let bytes = count(v, &path, EdgeSettings::MIN_HEADER_BYTES, EdgeSettings::MAX_HEADER_BYTES)?;
                edge.max_header_bytes = Some(bytes);
            }
            "max_headers" => edge.max_headers = Some(count(v, &path, 1, EdgeSettings::MAX_HEADERS)?),
            "http2_max_concurrent_streams" => {
                let streams = count(v, &path, 1, u32::MAX)?;
                edge.http2_max_concurrent_streams = Some(u32::try_from(streams).unwrap_or(u32::MAX));
            }
            "allowed_origins" => edge.allowed_origins = Some(names(v, &path, origin)?),
            "allowed_hosts" => edge.allowed_hosts = Some(names(v, &path, host)?),
            _ => {
                return Err(ConfigError::invalid(
                    &path,
                    format!("unknown key; valid: {}", EdgeSettings::KEYS.join(", ")),
                ));
            }
        }
    }
    Ok(edge)
}

fn number(v: Value, path: &str, what: &str) -> Result<Num, ConfigError> {
    serde_json::from_value(v).map_err(|_| ConfigError::type_error(path, format!("must be {what}")))
}

/// Seconds > 0, at most [`EdgeSettings::MAX_SECONDS`].
fn seconds(v: Value, path: &str) -> Result<Duration, ConfigError> {
    let n = number(v, path, "a number of seconds")?;
    let d = to_timeout(n, path)?;
    if d > Duration::from_secs(EdgeSettings::MAX_SECONDS) {
        return Err(ConfigError::invalid(
            path,
            format!("must be at most {} seconds (one day), got {n}", EdgeSettings::MAX_SECONDS),
        ));
    }
    Ok(d)
}

/// A whole number in `min..=max`.
fn count(v: Value, path: &str, min: u32, max: u32) -> Result<usize, ConfigError> {
    let n = to_u32(number(v, path, "a whole number")?, path)?;
    if !(min..=max).contains(&n) {
        return Err(ConfigError::invalid(path, format!("must be between {min} and {max}, got {n}")));
    }
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

/// A list of strings, each normalized and checked by `check`.
fn names(v: Value, path: &str, check: fn(&str) -> Result<String, String>) -> Result<Vec<String>, ConfigError> {
    let Value::Array(items) = v else {
        return Err(ConfigError::type_error(path, "must be a list of strings"));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let at = format!("{path}[{i}]");
            let Value::String(s) = item else {
                return Err(ConfigError::type_error(&at, "must be a string"));
            };
            check(&s).map_err(|why| ConfigError::invalid(&at, why))
        })
        .collect()
}

/// `*`, or `scheme://host[:port]` as a browser sends `Origin`: anything else never matches.
fn origin(raw: &str) -> Result<String, String> {
    let origin = normalize_origin(raw);
    if origin == "*" {
        return Ok(origin);
    }
    let valid = origin.split_once("://").is_some_and(|(scheme, authority)| {
        !scheme.is_empty()
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            && !authority.is_empty()
            && authority.chars().all(|c| c.is_ascii_graphic() && !matches!(c, '/' | '?' | '#' | '@' | '\\'))
    });
    if valid {
        Ok(origin)
    } else {
        Err("must be `*` or an origin as browsers send it: a scheme, a host and an optional port, \
             no path (`https://app.example.com`, `http://localhost:3000`)"
            .to_owned())
    }
}

/// `*`, or a host name without scheme or port.
fn host(raw: &str) -> Result<String, String> {
    let host = normalize_host(raw);
    let valid = host == "*"
        || (!host.is_empty() && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')));
    if valid {
        Ok(host)
    } else {
        Err("must be `*` or a host name without scheme or port (`gateway.internal`); localhost and IP \
             addresses are always allowed"
            .to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_and_hosts_are_normalized_as_the_gateway_compares_them() {
        assert_eq!(origin(" HTTPS://App.Example.com/ ").as_deref(), Ok("https://app.example.com"));
        assert_eq!(host("Gateway.Internal.").as_deref(), Ok("gateway.internal"));
        assert!(origin("https://app.example.com/path").is_err());
        assert!(origin("app.example.com").is_err());
        assert!(host("gateway.internal:4000").is_err());
        assert!(host("https://gateway.internal").is_err());
    }
}
