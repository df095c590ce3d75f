//! The cache key: LiteLLM's `Cache.get_cache_key` rules over the request the ingress parsed.
//!
//! What enters the key: the endpoint (chat completions, completions and embeddings never share an entry), the
//! credential scope (who asked: see [`CacheScope`]), the model group after alias resolution, or
//! the `caching_groups` set that holds it, and every top-level member of the body that can
//! change the answer (`messages` / `input`, `temperature`, `tools`, `user`, `seed`, provider
//! parameters such as `top_k`, ...). What does not: `model` (the group stands for it),
//! `metadata` and `litellm_metadata` (LiteLLM's `_get_exclude_kwargs`), the `cache` controls,
//! `stream` and `stream_options` (a stream is served from a whole answer), and the routing keys
//! Switchyard reads and never sends upstream
//! (`switchyard_services::provider::ROUTING_KEYS`).
//!
//! The members are rendered as canonical JSON (object keys sorted at every depth), so two bodies
//! that differ only in member order or whitespace share a key, and hashed with SHA-256; the hex
//! digest gets the namespace as a `namespace:` prefix, as LiteLLM's `_add_namespace_to_cache_key`.
//!
//! ```
//! use serde_json::json;
//! use switchyard::cache::{CacheScope, KeyParts, cache_key};
//!
//! let scope = CacheScope::open();
//! let body = json!({"model": "fast", "messages": [{"role": "user", "content": "hi"}], "stream": true});
//! let parts = KeyParts::chat(&scope, "gpt-4o", &body);
//! let key = cache_key(Some("prod"), &parts);
//! assert!(key.starts_with("prod:"));
//! assert_eq!(key.len(), "prod:".len() + 64);
//! // Member order, `stream` and `metadata` do not change the key.
//! let other = json!({"metadata": {"tags": ["a"]}, "messages": [{"content": "hi", "role": "user"}]});
//! assert_eq!(cache_key(Some("prod"), &KeyParts::chat(&scope, "gpt-4o", &other)), key);
//! ```

use std::{fmt, fmt::Write as _, sync::Arc};

use serde_json::Value;
use sha2::{Digest, Sha256};
use switchyard_layers::deployment::canonical_json;
use switchyard_services::provider::ROUTING_KEYS;

/// Body members that never enter the key besides [`ROUTING_KEYS`].
const NOT_IN_KEY: [&str; 7] = ["model", "metadata", "litellm_metadata", "cache", "caching", "stream", "stream_options"];

/// Who a cached answer belongs to: answers are never shared across scopes.
///
/// The gateway sets it from the credential the request authenticated with: the master key's
/// scope when `general_settings.master_key` is set (a SHA-256 prefix of the key, so rotating the
/// key starts a new scope), [`open`](Self::open) when the gateway has no key. When virtual keys
/// exist, each key is its own scope. An embedder that authenticates callers itself inserts the
/// caller's scope into the request's extensions before the [`CacheLayer`](super::CacheLayer);
/// a request without one is in the open scope.
///
/// ```
/// use switchyard::cache::CacheScope;
///
/// assert_ne!(CacheScope::of_key("sk-a"), CacheScope::of_key("sk-b"));
/// assert_eq!(CacheScope::of_key("sk-a"), CacheScope::of_key("sk-a"));
/// assert_eq!(CacheScope::open().as_str(), "open");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CacheScope(Arc<str>);

impl CacheScope {
    /// The scope of requests no credential was asked of.
    pub fn open() -> Self {
        Self(Arc::from("open"))
    }

    /// The scope of requests that authenticated with `key`: `key:` and the first 32 hex digits of
    /// its SHA-256 (the key itself is never kept).
    pub fn of_key(key: &str) -> Self {
        let digest = Sha256::digest(key.as_bytes());
        let mut s = String::with_capacity(4 + 32);
        s.push_str("key:");
        for b in &digest[..16] {
            let _ = write!(s, "{b:02x}");
        }
        Self(Arc::from(s))
    }

    /// A scope named by the embedder (a tenant or team id, ...).
    pub fn named(name: impl Into<Arc<str>>) -> Self {
        Self(name.into())
    }

    /// The scope as it enters the key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for CacheScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CacheScope").field(&self.as_str()).finish()
    }
}

/// The cached call types: which endpoint an entry answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallType {
    /// `/v1/chat/completions`.
    Chat,
    /// `/v1/completions`.
    Completions,
    /// `/v1/embeddings`.
    Embeddings,
}

impl CallType {
    /// The label of metrics and of the key.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Completions => "completions",
            Self::Embeddings => "embeddings",
        }
    }
}

/// What a key is derived from.
#[derive(Clone, Copy, Debug)]
pub struct KeyParts<'a> {
    /// The endpoint.
    pub call_type: CallType,
    /// Who asked.
    pub scope: &'a CacheScope,
    /// The model group, or the `caching_groups` set's name ([`caching_group_name`]).
    pub model: &'a str,
    /// The request body.
    pub body: &'a Value,
}

impl<'a> KeyParts<'a> {
    /// A chat completions request.
    pub fn chat(scope: &'a CacheScope, model: &'a str, body: &'a Value) -> Self {
        Self { call_type: CallType::Chat, scope, model, body }
    }

    /// An embeddings request.
    pub fn embeddings(scope: &'a CacheScope, model: &'a str, body: &'a Value) -> Self {
        Self { call_type: CallType::Embeddings, scope, model, body }
    }
}

/// The name a `caching_groups` set stands for in the key: its groups in config order, as a JSON
/// list (LiteLLM uses `str(group)`, the Python rendering of the tuple).
pub fn caching_group_name(groups: &[String]) -> String {
    let mut s = String::from("caching_group:");
    s.push_str(&Value::from(groups.to_vec()).to_string());
    s
}

/// The key of `parts`: `namespace:` (when set) then the SHA-256 hex digest of the canonical
/// rendering; see the [module docs](self).
pub fn cache_key(namespace: Option<&str>, parts: &KeyParts<'_>) -> String {
    let mut material = String::with_capacity(256);
    material.push_str("switchyard-cache-v1\n");
    write_json_str(&mut material, parts.call_type.as_str());
    material.push('\n');
    write_json_str(&mut material, parts.scope.as_str());
    material.push('\n');
    write_json_str(&mut material, parts.model);
    material.push('\n');
    material.push('{');
    if let Value::Object(map) = parts.body {
        let mut members: Vec<(&String, &Value)> = map
            .iter()
            .filter(|(k, v)| !v.is_null() && !NOT_IN_KEY.contains(&k.as_str()) && !ROUTING_KEYS.contains(&k.as_str()))
            .collect();
        members.sort_by(|a, b| a.0.cmp(b.0));
        for (i, (k, v)) in members.into_iter().enumerate() {
            if i > 0 {
                material.push(',');
            }
            write_json_str(&mut material, k);
            material.push(':');
            canonical_json(v, &mut material);
        }
    }
    material.push('}');
    let digest = Sha256::digest(material.as_bytes());
    let mut key = String::with_capacity(namespace.map_or(0, |n| n.len() + 1) + 64);
    if let Some(ns) = namespace.filter(|n| !n.is_empty()) {
        key.push_str(ns);
        key.push(':');
    }
    for b in digest {
        let _ = write!(key, "{b:02x}");
    }
    key
}

fn write_json_str(out: &mut String, s: &str) {
    out.push_str(&Value::from(s).to_string());
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key(model: &str, body: Value) -> String {
        cache_key(None, &KeyParts::chat(&CacheScope::open(), model, &body))
    }

    fn hi() -> Value {
        json!([{"role": "user", "content": "hi"}])
    }

    // LiteLLM's `get_cache_key`: every OpenAI parameter is part of the key ...
    #[test]
    fn parameters_that_change_the_answer_change_the_key() {
        let base = key("g", json!({"messages": hi()}));
        for (name, value) in [
            ("temperature", json!(0.2)),
            ("max_tokens", json!(10)),
            ("tools", json!([{"type": "function", "function": {"name": "f"}}])),
            ("response_format", json!({"type": "json_object"})),
            ("seed", json!(1)),
            ("n", json!(2)),
            ("user", json!("u1")),
            ("top_k", json!(5)),
        ] {
            let mut body = json!({"messages": hi()});
            body[name] = value;
            assert_ne!(key("g", body), base, "{name} must enter the key");
        }
        assert_ne!(key("g", json!({"messages": [{"role": "user", "content": "hello"}]})), base);
    }

    // ... except `metadata` / `litellm_metadata` (`_get_exclude_kwargs`), LiteLLM's own params
    // (routing keys, `cache`), and, in Switchyard, `stream` / `stream_options`.
    #[test]
    fn routing_keys_metadata_cache_controls_and_stream_do_not() {
        let base = key("g", json!({"messages": hi()}));
        let body = json!({
            "model": "alias", "messages": hi(), "stream": true, "stream_options": {"include_usage": true},
            "metadata": {"tags": ["x"]}, "litellm_metadata": {}, "cache": {"ttl": 5}, "num_retries": 3,
            "fallbacks": ["other"], "timeout": 3, "tags": ["t"], "temperature": null,
        });
        assert_eq!(key("g", body), base);
    }

    #[test]
    fn member_order_and_nested_order_do_not_change_the_key() {
        let a = key("g", json!({"messages": [{"role": "user", "content": "hi"}], "temperature": 0}));
        let b: Value =
            serde_json::from_str(r#"{ "temperature": 0, "messages": [ {"content": "hi", "role": "user"} ] }"#).unwrap();
        assert_eq!(key("g", b), a);
    }

    #[test]
    fn group_endpoint_and_scope_separate_entries() {
        let body = json!({"input": "hi"});
        let open = CacheScope::open();
        let chat = cache_key(None, &KeyParts::chat(&open, "g", &body));
        assert_ne!(cache_key(None, &KeyParts::embeddings(&open, "g", &body)), chat);
        assert_ne!(cache_key(None, &KeyParts::chat(&open, "h", &body)), chat);
        let scoped = CacheScope::of_key("sk-1");
        assert_ne!(cache_key(None, &KeyParts::chat(&scoped, "g", &body)), chat);
    }

    // `_add_namespace_to_cache_key`: `namespace:` + the hex digest.
    #[test]
    fn the_namespace_prefixes_the_hex_digest() {
        let body = json!({"messages": hi()});
        let bare = cache_key(None, &KeyParts::chat(&CacheScope::open(), "g", &body));
        assert_eq!(bare.len(), 64);
        assert!(bare.bytes().all(|b| b.is_ascii_hexdigit()));
        let namespaced = cache_key(Some("team-a"), &KeyParts::chat(&CacheScope::open(), "g", &body));
        assert_eq!(namespaced, format!("team-a:{bare}"));
        assert_eq!(cache_key(Some(""), &KeyParts::chat(&CacheScope::open(), "g", &body)), bare);
    }

    // `_get_caching_group`: groups of one set share the set's name.
    #[test]
    fn a_caching_group_names_its_set() {
        let set = vec!["gpt-4o".to_owned(), "azure-gpt-4o".to_owned()];
        assert_eq!(caching_group_name(&set), r#"caching_group:["gpt-4o","azure-gpt-4o"]"#);
    }

    #[test]
    fn scopes_never_show_the_key() {
        let scope = CacheScope::of_key("sk-secret");
        assert!(!scope.as_str().contains("secret"));
        assert_eq!(scope.as_str().len(), 4 + 32);
    }
}
