//! Response caching, LiteLLM's `litellm_settings.cache`: exact-match answers to chat completions,
//! text completions and embeddings requests, kept in memory or on Redis and served without
//! routing.
//!
//! The [`CacheLayer`] sits between the ingress and the routing stack (the gateway puts it right
//! below its observer), so it sees the endpoint, the parsed request and the caller's
//! [`CacheScope`], and a hit never reaches fallback, retry, cooldown, limits or selection. Per
//! request, when the endpoint is cached and the request is not mocked:
//!
//! 1. the [`key`] is derived from the scope, the model group (after alias resolution, or the
//!    `caching_groups` set that holds it), the endpoint and the body's answer-changing members;
//! 2. unless the request says `cache: {"no-cache": true}`, the cache is asked (a backend failure
//!    is a miss); a hit is answered at once, in JSON or, for a streaming (chat or text
//!    completion) request, as the server-sent events OpenAI sends, with `x-litellm-cache-key` and a [`CacheHit`]
//!    in the extensions;
//! 3. otherwise the stack answers; a whole `200` answer that is a complete success is stored for
//!    the request's `ttl` (else `cache_params.ttl`) unless it says `no-store`. Streams and errors
//!    are never stored.
//!
//! With `mode: default_off`, only requests with `cache: {"use-cache": true}` use the cache.
//! `docs/caching.md` is the user guide.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use axum::body::Body;
//! use tower::ServiceExt;
//! use switchyard::{Config, gateway::Gateway, services::sim::SimProvider};
//!
//! let config = Config::from_yaml_str(r#"
//! model_list:
//!   - { model_name: gpt-4o, litellm_params: { model: openai/gpt-4o } }
//! litellm_settings: { cache: true, cache_params: { type: local, ttl: 60 } }
//! "#)?;
//! let gateway = Gateway::builder(config).provider(SimProvider::new(7)).build()?;
//! let ask = || {
//!     http::Request::post("/v1/chat/completions")
//!         .header("content-type", "application/json")
//!         .body(Body::from(r#"{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}"#))
//! };
//! let first = gateway.router().oneshot(ask()?).await?;
//! assert_eq!(first.headers()["x-switchyard-cache"], "miss");
//! let second = gateway.router().oneshot(ask()?).await?;
//! assert_eq!(second.headers()["x-switchyard-cache"], "hit");
//! assert_eq!(second.headers()["x-litellm-cache-key"], first.headers()["x-litellm-cache-key"]);
//! # Ok(()) }
//! ```

mod controls;
pub mod key;
mod layer;
#[cfg(feature = "redis")]
mod redis;
pub(crate) mod replay;
mod settings;
mod store;

pub use controls::CacheControls;
pub(crate) use controls::is_namespace;
pub use key::{CacheScope, CallType, KeyParts, cache_key, caching_group_name};
pub use layer::{CACHE_HEADER, CACHE_KEY_HEADER, CACHE_REQUESTS, CacheHit, CacheLayer, CacheService, LiveCache};
pub use settings::{CacheBackend, CacheMode, CacheSettings, CallTypes};
pub use store::{CachedAnswer, MAX_TTL, ResponseCache};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layer_and_service_are_shareable() {
        fn assert_send_sync<T: Clone + Send + Sync + 'static>() {}
        assert_send_sync::<CacheLayer>();
        assert_send_sync::<LiveCache>();
        assert_send_sync::<CacheScope>();
        assert_send_sync::<CacheService<crate::RouterService>>();
    }

    // What axum needs of a route's service: `Send + 'static` futures.
    #[test]
    fn the_service_future_is_send() {
        fn assert_service<S>()
        where
            S: tower::Service<http::Request<bytes::Bytes>> + Send + 'static,
            S::Future: Send + 'static,
        {
        }
        assert_service::<CacheService<crate::RouterService>>();
    }
}
