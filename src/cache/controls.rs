//! A request's own cache controls: the body's `cache` member, as LiteLLM reads it
//! (`DynamicCacheControl`), and `metadata.redis_namespace`. The member is never sent upstream.

use std::time::Duration;

use serde_json::Value;
use switchyard_layers::{RouteError, RouteErrorKind};

/// `cache: {"no-cache": true, "no-store": true, "ttl": 60, "s-maxage": 10, "namespace": "x",
/// "use-cache": true}`.
///
/// ```
/// use std::time::Duration;
/// use serde_json::json;
/// use switchyard::cache::CacheControls;
///
/// let body = json!({"cache": {"no-store": true, "s-maxage": 30}});
/// let controls = CacheControls::from_body(&body)?;
/// assert!(controls.no_store && !controls.no_cache);
/// assert_eq!(controls.max_age, Some(Duration::from_secs(30)));
/// # Ok::<(), switchyard::layers::RouteError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct CacheControls {
    /// `no-cache`: do not answer from the cache (the answer may still be stored).
    pub no_cache: bool,
    /// `no-store`: do not store the answer.
    pub no_store: bool,
    /// `ttl`: seconds this answer is kept, instead of `cache_params.ttl`.
    pub ttl: Option<Duration>,
    /// `s-maxage` (or `s-max-age`): only a cached answer at most this old is served.
    pub max_age: Option<Duration>,
    /// `namespace`, else `metadata.redis_namespace`: instead of `cache_params.namespace`.
    pub namespace: Option<String>,
    /// `use-cache`: opts in when the cache's mode is `default_off`.
    pub use_cache: bool,
}

impl CacheControls {
    /// Reads the controls of a JSON request body; a control of the wrong type is a 400 naming
    /// it (LiteLLM ignores or trips over it at different points).
    pub fn from_body(body: &Value) -> Result<Self, RouteError> {
        let mut c = Self::default();
        if let Some(ns) = body.get("metadata").and_then(|m| m.get("redis_namespace")) {
            c.namespace = Some(text(ns, "metadata.redis_namespace")?);
        }
        let Some(cache) = body.get("cache") else { return Ok(c) };
        let map = match cache {
            Value::Null => return Ok(c),
            Value::Object(map) => map,
            _ => {
                return Err(invalid(
                    "`cache` must be an object of cache controls (`no-cache`, `no-store`, `ttl`, ...)",
                ));
            }
        };
        for (key, value) in map {
            let path = format!("cache.{key}");
            match key.as_str() {
                "no-cache" => c.no_cache = flag(value, &path)?,
                "no-store" => c.no_store = flag(value, &path)?,
                "use-cache" => c.use_cache = flag(value, &path)?,
                "ttl" => c.ttl = secs(value, &path)?,
                // LiteLLM reads `s-maxage` first (and `s-max-age` in its async path).
                "s-maxage" => c.max_age = secs(value, &path)?.or(c.max_age),
                "s-max-age" if c.max_age.is_none() => c.max_age = secs(value, &path)?,
                "namespace" if !value.is_null() => c.namespace = Some(text(value, &path)?),
                // Unknown controls are ignored, as LiteLLM does.
                _ => {}
            }
        }
        Ok(c)
    }
}

/// A namespace goes into keys, headers and logs: 1 to 256 visible ASCII characters.
pub(crate) fn is_namespace(s: &str) -> bool {
    !s.is_empty() && s.len() <= 256 && s.bytes().all(|b| b.is_ascii_graphic())
}

fn invalid(message: impl Into<String>) -> RouteError {
    RouteError::new(RouteErrorKind::InvalidRequest, message)
}

fn flag(v: &Value, path: &str) -> Result<bool, RouteError> {
    match v {
        Value::Null => Ok(false),
        Value::Bool(b) => Ok(*b),
        _ => Err(invalid(format!("`{path}` must be true or false"))),
    }
}

fn secs(v: &Value, path: &str) -> Result<Option<Duration>, RouteError> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_f64()
            .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 1e9)
            .map(|s| Some(Duration::from_secs_f64(s)))
            .ok_or_else(|| invalid(format!("`{path}` must be a number of seconds between 0 and 1e9"))),
        _ => Err(invalid(format!("`{path}` must be a number of seconds"))),
    }
}

fn text(v: &Value, path: &str) -> Result<String, RouteError> {
    match v {
        Value::String(s) if is_namespace(s) => Ok(s.clone()),
        _ => Err(invalid(format!(
            "`{path}` must be a non-empty name of visible ASCII characters, without whitespace (at most 256 bytes)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_litellm_control_is_read() {
        let body = json!({"cache": {"no-cache": true, "no-store": true, "ttl": 2.5, "s-max-age": 4, "namespace": "ns", "use-cache": true}});
        let c = CacheControls::from_body(&body).unwrap();
        assert!(c.no_cache && c.no_store && c.use_cache);
        assert_eq!(c.ttl, Some(Duration::from_millis(2500)));
        assert_eq!(c.max_age, Some(Duration::from_secs(4)));
        assert_eq!(c.namespace.as_deref(), Some("ns"));
    }

    #[test]
    fn s_maxage_wins_over_s_max_age_and_the_namespace_over_metadata() {
        let body = json!({"metadata": {"redis_namespace": "meta"}, "cache": {"s-max-age": 9, "s-maxage": 1, "namespace": "own"}});
        let c = CacheControls::from_body(&body).unwrap();
        assert_eq!(c.max_age, Some(Duration::from_secs(1)));
        assert_eq!(c.namespace.as_deref(), Some("own"));
        let c = CacheControls::from_body(&json!({"metadata": {"redis_namespace": "meta"}})).unwrap();
        assert_eq!(c.namespace.as_deref(), Some("meta"));
    }

    #[test]
    fn no_controls_is_the_default() {
        assert_eq!(CacheControls::from_body(&json!({"model": "g"})).unwrap(), CacheControls::default());
        assert_eq!(CacheControls::from_body(&json!({"cache": null})).unwrap(), CacheControls::default());
    }

    #[test]
    fn a_control_of_the_wrong_type_is_refused_naming_it() {
        for (body, named) in [
            (json!({"cache": {"ttl": "60"}}), "cache.ttl"),
            (json!({"cache": {"ttl": -1}}), "cache.ttl"),
            (json!({"cache": {"no-store": "yes"}}), "cache.no-store"),
            (json!({"cache": {"namespace": "a b"}}), "cache.namespace"),
            (json!({"cache": {"namespace": "a\u{1b}[31m"}}), "cache.namespace"),
            (json!({"cache": true}), "`cache`"),
        ] {
            let err = CacheControls::from_body(&body).unwrap_err();
            assert!(err.to_string().contains(named), "{err}");
        }
    }
}
