//! `litellm_settings.cache`, `litellm_settings.cache_params`, `router_settings.caching_groups`
//! and `router_settings.cache_responses`: the response cache (`crate::cache`).

use std::{collections::BTreeMap, time::Duration};

use serde_json::{Map, Value};
use switchyard_layers::ApiKey;

use super::redis_keys::{port, startup_nodes};
use crate::{
    cache::{CacheBackend, CacheMode, CacheSettings, CallTypes},
    config::{
        Config, ConfigError, RedisSettings,
        convert::{NOT_SUPPORTED, Warnings, to_secs, to_u64},
        env::Env,
        raw::{Flag, Num},
    },
};

const PARAMS: &str = "litellm_settings.cache_params";

/// The cache keys, taken out of the sections' unread keys (so they do not warn as unknown).
pub(super) struct CacheKeys {
    pub(super) cache: Option<Value>,
    pub(super) params: Option<Value>,
    pub(super) caching_groups: Option<Value>,
    pub(super) cache_responses: Option<Value>,
}

impl CacheKeys {
    pub(super) fn take(litellm: &mut BTreeMap<String, Value>, router: &mut BTreeMap<String, Value>) -> Self {
        Self {
            cache: litellm.remove("cache"),
            params: litellm.remove("cache_params"),
            caching_groups: router.remove("caching_groups"),
            cache_responses: router.remove("cache_responses"),
        }
    }
}

/// Reads the cache keys into `c.cache`. Needs the deployments (for `caching_groups`) and the
/// router's Redis (`c.redis`, the default server of a `redis` cache).
pub(super) fn cache(c: &mut Config, keys: CacheKeys, env: &Env<'_>, w: &mut Warnings) -> Result<(), ConfigError> {
    let flag = |v: &Option<Value>, path: &str| -> Result<bool, ConfigError> {
        match v {
            None | Some(Value::Null) => Ok(false),
            Some(v) => Flag::parse(v).ok_or_else(|| ConfigError::type_error(path, "must be true or false")),
        }
    };
    let on = flag(&keys.cache, "litellm_settings.cache")?;
    let router_on = flag(&keys.cache_responses, "router_settings.cache_responses")?;
    let groups = caching_groups(c, keys.caching_groups.as_ref())?;
    if !on && !router_on {
        if keys.params.as_ref().is_some_and(|p| !p.is_null()) {
            w.once(PARAMS.to_owned(), format!("`{PARAMS}` is ignored: `litellm_settings.cache` is not true"));
        }
        if !groups.is_empty() {
            w.once(
                "router_settings.caching_groups".to_owned(),
                "`router_settings.caching_groups` is ignored: no response cache is configured (`litellm_settings.cache: true`)"
                    .to_owned(),
            );
        }
        return Ok(());
    }
    let params = match keys.params {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Err(ConfigError::type_error(PARAMS, "must be a mapping of cache settings (`type`, `ttl`, ...)"));
        }
    };
    let mut settings = if on {
        params_settings(c, params, env, w)?
    } else {
        // The Router's `cache_responses`: LiteLLM's Router caches on its own Redis when it has
        // one, else in memory.
        if !params.is_empty() {
            w.once(PARAMS.to_owned(), format!("`{PARAMS}` is ignored: `litellm_settings.cache` is not true"));
        }
        match &c.redis {
            Some(redis) => CacheSettings::redis(redis.clone()),
            None => CacheSettings::local(),
        }
    };
    settings.caching_groups = groups;
    c.cache = Some(settings);
    Ok(())
}

/// The backend types LiteLLM has and Switchyard does not.
const OTHER_TYPES: [&str; 7] =
    ["redis-semantic", "valkey-semantic", "qdrant-semantic", "s3", "gcs", "azure-blob", "disk"];

/// LiteLLM's `cache_params` keys that only its other backends (or its batching) read.
const OTHER_BACKEND_KEYS: [&str; 8] = [
    "similarity_threshold",
    "redis_flush_size",
    "disk_cache_dir",
    "s3_bucket_name",
    "gcs_bucket_name",
    "azure_account_url",
    "qdrant_api_base",
    "redis_semantic_cache_embedding_model",
];

fn params_settings(
    c: &Config,
    mut p: Map<String, Value>,
    env: &Env<'_>,
    w: &mut Warnings,
) -> Result<CacheSettings, ConfigError> {
    let at = |key: &str| format!("{PARAMS}.{key}");
    let text = |p: &mut Map<String, Value>, key: &str| -> Result<Option<String>, ConfigError> {
        match p.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(ConfigError::type_error(at(key), "must be a string")),
        }
    };
    let num = |p: &mut Map<String, Value>, key: &str| -> Result<Option<Num>, ConfigError> {
        match p.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => serde_json::from_value::<Num>(v)
                .map(Some)
                .map_err(|_| ConfigError::type_error(at(key), "must be a number")),
        }
    };
    let kind = text(&mut p, "type")?;
    let host = text(&mut p, "host")?;
    let port_n = num(&mut p, "port")?;
    let password = text(&mut p, "password")?;
    let url = text(&mut p, "url")?.or(text(&mut p, "redis_url")?);
    let ssl = match p.remove("ssl") {
        None | Some(Value::Null) => None,
        Some(v) => Some(Flag::parse(&v).ok_or_else(|| ConfigError::type_error(at("ssl"), "must be true or false"))?),
    };
    let nodes = p.remove("redis_startup_nodes").or_else(|| p.remove("startup_nodes"));
    let any_redis_key = host.is_some() || port_n.is_some() || password.is_some() || url.is_some() || nodes.is_some();

    let kind = match kind.as_deref() {
        Some("local") => Kind::Local,
        Some("redis") => Kind::Redis,
        Some(other) if OTHER_TYPES.contains(&other) => {
            return Err(ConfigError::invalid(
                at("type"),
                format!(
                    "`{other}` caches are not implemented by Switchyard; use `local` (in memory) or `redis`, or drop `litellm_settings.cache`"
                ),
            ));
        }
        Some(other) => {
            return Err(ConfigError::invalid(at("type"), format!("must be `local` or `redis`, got `{other}`")));
        }
        // LiteLLM's proxy defaults to Redis.
        None => Kind::Redis,
    };

    let mut settings = match kind {
        Kind::Local => {
            for (key, set) in [("host", host.is_some()), ("port", port_n.is_some()), ("password", password.is_some())] {
                if set {
                    w.once(at(key), format!("`{}` is ignored: the cache is `type: local`", at(key)));
                }
            }
            let max_bytes = match num(&mut p, "max_bytes")? {
                Some(n) => {
                    let v = to_u64(n, &at("max_bytes"))?;
                    if v == 0 {
                        return Err(ConfigError::invalid(at("max_bytes"), "must be > 0"));
                    }
                    v
                }
                None => CacheBackend::DEFAULT_MAX_BYTES,
            };
            CacheSettings { backend: CacheBackend::Local { max_bytes }, ..CacheSettings::local() }
        }
        Kind::Redis => {
            let port = port_n.map(|n| port(n, &at("port"))).transpose()?;
            let nodes = startup_nodes(nodes, ssl.unwrap_or(false), w)
                .map_err(|e| ConfigError::invalid(renamed(e.path()), e.message()))?;
            let mut redis = RedisSettings {
                url,
                host,
                port,
                password: password.map(ApiKey::new),
                startup_nodes: nodes.unwrap_or_default(),
                ssl: ssl.unwrap_or(false),
                ..RedisSettings::default()
            };
            // LiteLLM's `_redis.py`: what the params leave out comes from REDIS_URL, REDIS_HOST /
            // REDIS_PORT and REDIS_PASSWORD; ours: then from the router's own Redis, so one
            // `redis_*` block serves both.
            if redis.url.is_none() && redis.host.is_none() && redis.startup_nodes.is_empty() {
                if let Some(from_env) = env_redis(env) {
                    redis.url = from_env.url;
                    redis.host = from_env.host;
                    redis.port = redis.port.or(from_env.port);
                    redis.password = redis.password.or(from_env.password);
                } else if let Some(router) = &c.redis {
                    let password = redis.password.take();
                    redis = RedisSettings { namespace: None, ..router.clone() };
                    if password.is_some() {
                        redis.password = password;
                    }
                } else {
                    return Err(ConfigError::invalid(
                        at(if any_redis_key { "host" } else { "type" }),
                        "a `redis` cache (LiteLLM's default type) needs a server: set `host` / `port` or `url` here, \
                         REDIS_URL or REDIS_HOST / REDIS_PORT, or `router_settings.redis_*`; or set `type: local` for an \
                         in-memory cache",
                    ));
                }
            }
            redis.check().map_err(|e| ConfigError::invalid(renamed(e.path()), e.message()))?;
            CacheSettings::redis(redis)
        }
    };
    // `ttl`, else the backend's LiteLLM default TTL key.
    let ttl_key = match kind {
        Kind::Local => "default_in_memory_ttl",
        Kind::Redis => "default_in_redis_ttl",
    };
    let other_ttl_key = match kind {
        Kind::Local => "default_in_redis_ttl",
        Kind::Redis => "default_in_memory_ttl",
    };
    let ttl = num(&mut p, "ttl")?;
    let backend_ttl = num(&mut p, ttl_key)?;
    // LiteLLM: the backend's default TTL replaces `ttl`.
    if let Some((n, key)) = backend_ttl.map(|n| (n, ttl_key)).or(ttl.map(|n| (n, "ttl"))) {
        settings.ttl = positive_secs(n, &at(key))?;
    }
    if p.remove(other_ttl_key).is_some() {
        w.once(at(other_ttl_key), format!("`{}` is ignored: it applies to the other cache type", at(other_ttl_key)));
    }
    p.remove("default_redis_ttl");
    if let Some(ns) = text(&mut p, "namespace")? {
        if !crate::cache::is_namespace(&ns) {
            return Err(ConfigError::invalid(
                at("namespace"),
                "must be 1 to 256 visible ASCII characters (no whitespace or control characters)",
            ));
        }
        settings.namespace = Some(ns);
    }
    if let Some(mode) = text(&mut p, "mode")? {
        settings.mode = match mode.as_str() {
            "default_on" => CacheMode::DefaultOn,
            "default_off" => CacheMode::DefaultOff,
            other => {
                return Err(ConfigError::invalid(
                    at("mode"),
                    format!("must be `default_on` or `default_off`, got `{other}`"),
                ));
            }
        };
    }
    if let Some(types) = p.remove("supported_call_types") {
        settings.call_types = call_types(&types, w)?;
    }
    if let Some(n) = num(&mut p, "max_item_bytes")? {
        let v = to_u64(n, &at("max_item_bytes"))?;
        settings.max_item_bytes = usize::try_from(v).unwrap_or(usize::MAX).max(1);
    }
    for key in p.keys() {
        let path = at(key);
        let why = if OTHER_BACKEND_KEYS.contains(&key.as_str()) || key.starts_with("s3_") || key.starts_with("gcs_") {
            "it configures a cache type Switchyard does not implement"
        } else {
            NOT_SUPPORTED
        };
        w.ignored(path.clone(), &path, why);
    }
    Ok(settings)
}

enum Kind {
    Local,
    Redis,
}

/// A path of the router's Redis keys, renamed to the cache's.
fn renamed(path: &str) -> String {
    match path.strip_prefix("router_settings.redis_") {
        Some(rest) => format!("{PARAMS}.{rest}"),
        None => path.to_owned(),
    }
}

fn positive_secs(n: Num, path: &str) -> Result<Duration, ConfigError> {
    let d = to_secs(n, path)?;
    if d.is_zero() {
        return Err(ConfigError::invalid(path, "must be longer than 0 seconds"));
    }
    Ok(d)
}

/// LiteLLM's `_redis.py` environment: `REDIS_URL`, else `REDIS_HOST` and `REDIS_PORT`, with
/// `REDIS_PASSWORD`.
fn env_redis(env: &Env<'_>) -> Option<RedisSettings> {
    let password = env.get("REDIS_PASSWORD").map(ApiKey::new);
    if let Some(url) = env.get("REDIS_URL") {
        return Some(RedisSettings { url: Some(url), password, ..RedisSettings::default() });
    }
    let host = env.get("REDIS_HOST")?;
    let port = env.get("REDIS_PORT").and_then(|p| p.trim().parse::<u16>().ok());
    Some(RedisSettings { host: Some(host), port, password, ..RedisSettings::default() })
}

/// `supported_call_types`: LiteLLM's call type names. Those Switchyard does not cache warn.
fn call_types(value: &Value, w: &mut Warnings) -> Result<CallTypes, ConfigError> {
    let path = format!("{PARAMS}.supported_call_types");
    let Value::Array(items) = value else {
        return Err(ConfigError::type_error(path, "must be a list of call types (`completion`, `embedding`, ...)"));
    };
    let mut types = CallTypes { chat: false, completions: false, embeddings: false };
    for (i, item) in items.iter().enumerate() {
        let at = format!("{path}[{i}]");
        match item.as_str() {
            Some("completion" | "acompletion") => types.chat = true,
            Some("embedding" | "aembedding") => types.embeddings = true,
            Some("text_completion" | "atext_completion") => types.completions = true,
            Some(
                name @ ("transcription"
                | "atranscription"
                | "rerank"
                | "arerank"
                | "responses"
                | "aresponses"
                | "anthropic_messages"
                | "aanthropic_messages"),
            ) => w.once(
                format!("{path}.{name}"),
                format!(
                    "`{at}` (`{name}`) is ignored: Switchyard caches chat and text completions and embeddings only"
                ),
            ),
            Some(other) => return Err(ConfigError::invalid(at, format!("is not a LiteLLM call type: `{other}`"))),
            None => return Err(ConfigError::type_error(at, "must be a call type name")),
        }
    }
    Ok(types)
}

/// `router_settings.caching_groups`: lists of model groups; each name a group of `model_list`,
/// in at most one list.
fn caching_groups(c: &Config, value: Option<&Value>) -> Result<Vec<Vec<String>>, ConfigError> {
    let path = "router_settings.caching_groups";
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(ConfigError::type_error(path, "must be a list of lists of model groups")),
    };
    let mut seen: BTreeMap<&str, String> = BTreeMap::new();
    let mut sets = Vec::with_capacity(items.len());
    for (i, set) in items.iter().enumerate() {
        let Value::Array(names) = set else {
            return Err(ConfigError::type_error(format!("{path}[{i}]"), "must be a list of model groups"));
        };
        let mut groups = Vec::with_capacity(names.len());
        for (j, name) in names.iter().enumerate() {
            let at = format!("{path}[{i}][{j}]");
            let Some(name) = name.as_str() else {
                return Err(ConfigError::type_error(at, "must be a model group name"));
            };
            if !c.deployments.iter().any(|d| &*d.group == name) {
                let mut known: Vec<&str> = c.deployments.iter().map(|d| &*d.group).collect();
                known.sort_unstable();
                known.dedup();
                return Err(ConfigError::invalid(
                    at,
                    format!("`{name}` is not a model group; known: {}", known.join(", ")),
                ));
            }
            if let Some(earlier) = seen.get(name) {
                return Err(ConfigError::invalid(at, format!("`{name}` is already in `{earlier}`")));
            }
            seen.insert(name, format!("{path}[{i}]"));
            groups.push(name.to_owned());
        }
        if !groups.is_empty() {
            sets.push(groups);
        }
    }
    Ok(sets)
}
