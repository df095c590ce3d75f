//! [`CacheLayer`]: answers a request from the cache before any routing, and stores the whole
//! answers of the requests it did not answer.

use std::{
    fmt,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::{HeaderValue, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::Value;
use switchyard_layers::{BoxError, RouteBody, RouteCtx, Served, ctx::Endpoint};
use tower::{Layer, Service};
use tracing::Instrument;

use super::{
    CacheControls, CacheMode, CacheScope, CacheSettings, CallType, KeyParts, ResponseCache, cache_key,
    caching_group_name, replay,
    store::{CachedAnswer, Lookup},
};
use crate::{Router, config::ConfigError};

/// LiteLLM's header naming the cache key of an answer (on hits and on stored answers).
pub const CACHE_KEY_HEADER: &str = "x-litellm-cache-key";
/// `hit` or `miss` on every answer the cache looked up or stored.
pub const CACHE_HEADER: &str = "x-switchyard-cache";

/// The metric counting cache lookups and writes, by `endpoint` and `result` (`hit`, `miss`,
/// `store`, `error`).
pub const CACHE_REQUESTS: &str = "switchyard_cache_requests_total";

/// LiteLLM's `litellm_cache_hits_metric` (label `model`: the model group), beside ours.
const LITELLM_HITS: &str = "litellm_cache_hits_metric_total";
/// LiteLLM's `litellm_cache_misses_metric`: successful answers the cache did not have.
const LITELLM_MISSES: &str = "litellm_cache_misses_metric_total";
/// LiteLLM's `litellm_cached_tokens_metric`: the total tokens of the answers served from the cache.
const LITELLM_CACHED_TOKENS: &str = "litellm_cached_tokens_metric_total";

/// Put in the extensions of an answer served from the cache.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheHit {
    /// The key the answer was found under.
    pub key: Arc<str>,
    /// The model group the request resolved to (an alias's target).
    pub group: Arc<str>,
}

/// The cache a [`CacheLayer`] uses, swapped as a whole by a reload ([`apply`](Self::apply)):
/// requests in flight finish with the cache they started with. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct LiveCache(Arc<ArcSwapOption<ResponseCache>>);

impl fmt::Debug for LiveCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("LiveCache").field(&self.0.load().as_deref().map(ResponseCache::settings)).finish()
    }
}

impl LiveCache {
    /// The cache of `settings`; `None` is no cache.
    pub fn new(settings: Option<&CacheSettings>) -> Result<Self, ConfigError> {
        let live = Self::default();
        live.apply(settings)?;
        Ok(live)
    }

    /// The cache in use.
    pub fn load(&self) -> Option<Arc<ResponseCache>> {
        self.0.load_full()
    }

    /// Uses the cache of `settings` from now on; keeps the current one (and its entries) when
    /// the settings are the same. `true` when it changed.
    pub fn apply(&self, settings: Option<&CacheSettings>) -> Result<bool, ConfigError> {
        if self.is_current(settings) {
            return Ok(false);
        }
        let next = settings.map(|s| ResponseCache::new(s.clone())).transpose()?;
        Ok(self.install(settings, next))
    }

    /// Like [`apply`](Self::apply) with the cache already built from `settings` (a reload
    /// builds it before it changes anything); `cache` is dropped when the settings are the same.
    pub fn install(&self, settings: Option<&CacheSettings>, cache: Option<ResponseCache>) -> bool {
        if self.is_current(settings) {
            return false;
        }
        self.0.store(cache.map(Arc::new));
        true
    }

    /// Whether the cache in use was built from `settings` (`None`: no cache is in use).
    pub fn is_current(&self, settings: Option<&CacheSettings>) -> bool {
        self.0.load().as_deref().map(ResponseCache::settings) == settings
    }
}

/// Applies [`CacheService`]: between the ingress (it reads the parsed request's
/// [`RouteCtx`]) and the routing stack, so a hit skips routing altogether.
///
/// The gateway puts it there itself; a program with its own HTTP front does the same, and
/// applies a reloaded config's cache settings to the [`LiveCache`] beside `Router::reload`:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// use bytes::Bytes;
/// use http_body_util::Full;
/// use tower::{ServiceBuilder, ServiceExt};
/// use switchyard::{
///     Config, Router,
///     cache::{CacheLayer, CacheScope, LiveCache},
///     services::{ingress::IngressLayer, sim::SimProvider},
/// };
///
/// let config = Config::from_yaml_str(r#"
/// model_list: [{ model_name: gpt-4o, litellm_params: { model: openai/gpt-4o } }]
/// litellm_settings: { cache: true, cache_params: { type: local } }
/// "#)?;
/// let router = Router::from_config(&config, SimProvider::new(7))?;
/// let live = LiveCache::new(config.cache.as_ref())?;
/// let app = ServiceBuilder::new()
///     .layer(IngressLayer::new(1 << 20))
///     .layer(CacheLayer::new(live.clone(), router.clone()))
///     .service(router.service());
/// let ask = || {
///     let mut req = http::Request::post("/v1/chat/completions")
///         .header("content-type", "application/json")
///         .body(Full::new(Bytes::from_static(br#"{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}"#)))
///         .unwrap();
///     // Who is asking: cached answers are never shared across scopes.
///     req.extensions_mut().insert(CacheScope::named("tenant-a"));
///     req
/// };
/// assert_eq!(app.clone().oneshot(ask()).await?.headers()["x-switchyard-cache"], "miss");
/// assert_eq!(app.clone().oneshot(ask()).await?.headers()["x-switchyard-cache"], "hit");
///
/// // On reload: the router's stack, then the cache's settings.
/// let next = Config::from_yaml_str("model_list: [{ model_name: gpt-4o, litellm_params: { model: openai/gpt-4o } }]")?;
/// router.reload(&next)?;
/// assert!(live.apply(next.cache.as_ref())?, "caching is off now");
/// assert!(app.oneshot(ask()).await?.headers().get("x-switchyard-cache").is_none());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct CacheLayer {
    live: LiveCache,
    router: Router,
}

impl CacheLayer {
    /// A layer using `live`'s cache, resolving model names with `router`'s registry.
    pub fn new(live: LiveCache, router: Router) -> Self {
        Self { live, router }
    }
}

impl<S> Layer<S> for CacheLayer {
    type Service = CacheService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CacheService { inner, live: self.live.clone(), router: self.router.clone() }
    }
}

/// Answers from the cache or calls the routing stack; see the [module docs](super).
#[derive(Clone)]
pub struct CacheService<S> {
    inner: S,
    live: LiveCache,
    router: Router,
}

impl<S> fmt::Debug for CacheService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheService").field("live", &self.live).finish_non_exhaustive()
    }
}

/// What the cache does for one request.
struct Plan {
    key: Arc<str>,
    group: Arc<str>,
    /// The groups an answer may come from to be stored under `key`.
    servers: Arc<[Arc<str>]>,
    call_type: CallType,
    lookup: bool,
    store: bool,
    ttl: Duration,
    max_age: Option<Duration>,
    stream: bool,
    include_usage: bool,
}

impl<S> Service<http::Request<Bytes>> for CacheService<S>
where
    S: Service<http::Request<Bytes>, Response = http::Response<RouteBody>, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<RouteBody>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Bytes>) -> Self::Future {
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let Some(cache) = self.live.load() else { return Box::pin(inner.call(req)) };
        let plan = match plan(&cache, &req, &self.router) {
            Ok(Some(plan)) => plan,
            Ok(None) => return Box::pin(inner.call(req)),
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        let router = self.router.clone();
        let span = tracing::info_span!(
            "cache",
            switchyard.cache.key = %plan.key,
            switchyard.cache.result = tracing::field::Empty,
        );
        Box::pin(
            async move {
                let endpoint = plan.call_type.as_str();
                if plan.lookup {
                    match cache.get(&plan.key, plan.max_age).await {
                        Lookup::Hit(answer) => {
                            let tokens = answer.usage.map(|u| u.total());
                            if let Some(resp) = hit_response(&plan, answer) {
                                count(Counted::Hit, endpoint);
                                let model = plan.group.to_string();
                                metrics::counter!(LITELLM_HITS, "model" => model.clone()).increment(1);
                                if let Some(tokens) = tokens.filter(|t| *t > 0) {
                                    metrics::counter!(LITELLM_CACHED_TOKENS, "model" => model).increment(tokens);
                                }
                                tracing::Span::current().record("switchyard.cache.result", "hit");
                                return Ok(resp);
                            }
                            count(Counted::Miss, endpoint);
                        }
                        Lookup::Miss => count(Counted::Miss, endpoint),
                        Lookup::Error => {
                            count(Counted::Error, endpoint);
                            count(Counted::Miss, endpoint);
                        }
                    }
                }
                tracing::Span::current().record("switchyard.cache.result", "miss");
                let mut resp = inner.call(req).await?;
                if plan.lookup {
                    resp.headers_mut().insert(CACHE_HEADER, HeaderValue::from_static("miss"));
                    // As LiteLLM: counted for answers only (an error is not a cache miss), so
                    // the label is a name that routed (bounded by the config).
                    if resp.status().is_success() {
                        metrics::counter!(LITELLM_MISSES, "model" => plan.group.to_string()).increment(1);
                    }
                }
                if !plan.store || plan.stream || resp.status() != StatusCode::OK {
                    return Ok(resp);
                }
                store(&cache, &router, &plan, resp).await
            }
            .instrument(span),
        )
    }
}

/// What the cache does for `req`: `None` when it does not apply (an endpoint or a request it
/// does not cache, `default_off` without `use-cache`, a mocked request).
fn plan(cache: &ResponseCache, req: &http::Request<Bytes>, router: &Router) -> Result<Option<Plan>, BoxError> {
    let settings = cache.settings();
    let Some(ctx) = req.extensions().get::<RouteCtx>() else { return Ok(None) };
    let facts = ctx.facts();
    let call_type = match facts.endpoint {
        Endpoint::Chat if settings.call_types.chat => CallType::Chat,
        Endpoint::Completion if settings.call_types.completions => CallType::Completions,
        Endpoint::Embedding if settings.call_types.embeddings => CallType::Embeddings,
        _ => return Ok(None),
    };
    // A mocked answer is a test of the routing config, not an answer to keep.
    if !facts.mock.is_empty() {
        return Ok(None);
    }
    let Ok(body) = serde_json::from_slice::<Value>(req.body()) else { return Ok(None) };
    // LiteLLM's per-call switch: `caching: false` leaves the cache alone.
    if body.get("caching") == Some(&Value::Bool(false)) {
        return Ok(None);
    }
    // `default_off`: only a request that opts in is looked at (its other controls included, so a
    // gateway that does not cache it never refuses it for them).
    if settings.mode == CacheMode::DefaultOff && body.pointer("/cache/use-cache").and_then(Value::as_bool) != Some(true)
    {
        return Ok(None);
    }
    let controls = CacheControls::from_body(&body)?;
    if settings.mode == CacheMode::DefaultOff && !controls.use_cache {
        return Ok(None);
    }
    if controls.no_cache && controls.no_store {
        return Ok(None);
    }
    let requested = ctx.requested();
    // A pre-router's virtual name is routed per request (its answer depends on the decision, and
    // an adaptive router learns from each call): never cached.
    if router.is_pre_routed(requested) {
        return Ok(None);
    }
    // What the key names, by kind, so a group, a deployment id, a provider model and a pattern's
    // concrete model never share entries. The group's deployment models are part of it: a reload
    // that points the group elsewhere starts afresh. A name that resolves to nothing is routed
    // (to its 404), never answered from the cache.
    let Ok(resolved) = router.registry().resolve(requested) else { return Ok(None) };
    let group = resolved.group.name().clone();
    let kind = if facts.specific_deployment {
        format!("specific:{requested}")
    } else if resolved.by_id {
        format!("id:{requested}")
    } else if group.contains('*') {
        // A wildcard group answers many models under its own name: the model asked for is the
        // entry's, not the pattern's.
        format!("pattern:{group}\n{requested}")
    } else {
        format!("group:{group}")
    };
    let caching_set = settings.caching_groups.iter().find(|set| set.iter().any(|g| **g == *group));
    let model = match caching_set {
        Some(set) if !resolved.by_id && !facts.specific_deployment => caching_group_name(set),
        _ => {
            let mut model = kind;
            for d in resolved.group.deployments() {
                model.push('\n');
                model.push_str(&d.model);
            }
            model
        }
    };
    // The groups whose answers may be stored under this key: the group itself, or its caching
    // set (an answer a fallback group gave is not this group's answer).
    let servers: Arc<[Arc<str>]> = match caching_set {
        Some(set) => set.iter().map(|g| Arc::from(g.as_str())).collect(),
        None => Arc::from([group.clone()]),
    };
    let group_header = group.clone();
    let scope = req.extensions().get::<CacheScope>().cloned().unwrap_or_else(CacheScope::open);
    let namespace = controls.namespace.as_deref().or(settings.namespace.as_deref());
    let parts = KeyParts { call_type, scope: &scope, model: &model, body: &body };
    let key = cache_key(namespace, &parts);
    let include_usage = body.pointer("/stream_options/include_usage").and_then(Value::as_bool) == Some(true);
    Ok(Some(Plan {
        key: Arc::from(key),
        group: group_header,
        servers,
        call_type,
        lookup: !controls.no_cache,
        store: !controls.no_store,
        ttl: controls.ttl.unwrap_or(settings.ttl),
        max_age: controls.max_age,
        stream: facts.stream,
        include_usage,
    }))
}

/// The answer to a hit, in the request's wire format; `None` when the entry cannot be served
/// so (then the request is routed).
fn hit_response(plan: &Plan, answer: CachedAnswer) -> Option<http::Response<RouteBody>> {
    let (body, content_type) = if plan.stream {
        let events = match plan.call_type {
            CallType::Chat => replay::chat_stream(&answer.body, plan.include_usage)?,
            CallType::Completions => replay::completion_stream(&answer.body, plan.include_usage)?,
            CallType::Embeddings => return None,
        };
        (events, "text/event-stream")
    } else {
        (answer.body, "application/json")
    };
    let mut body = RouteBody::from(body);
    if let Some(usage) = answer.usage {
        body = body.with_usage(usage);
    }
    let mut resp = http::Response::new(body);
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if plan.stream {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    insert_key(headers, &plan.key);
    headers.insert(CACHE_HEADER, HeaderValue::from_static("hit"));
    if let Ok(group) = HeaderValue::from_str(&plan.group) {
        headers.insert("x-litellm-model-group", group);
    }
    resp.extensions_mut().insert(CacheHit { key: plan.key.clone(), group: plan.group.clone() });
    Some(resp)
}

fn insert_key(headers: &mut http::HeaderMap, key: &str) {
    if let Ok(v) = HeaderValue::from_str(key) {
        headers.insert(CACHE_KEY_HEADER, v);
    }
}

/// Reads a whole (non-streaming) answer, stores it when it is a complete success, and returns
/// it as it was.
async fn store(
    cache: &ResponseCache,
    router: &Router,
    plan: &Plan,
    resp: http::Response<RouteBody>,
) -> Result<http::Response<RouteBody>, BoxError> {
    let (mut parts, body) = resp.into_parts();
    let usage = body.usage();
    let bytes = body.collect().await?.to_bytes();
    // A deployment answering with its `litellm_params.mock_response` is a test fixture.
    let served = parts.extensions.get::<Served>();
    let mocked = served
        .and_then(|s| router.registry().deployment(&s.deployment))
        .is_some_and(|d| d.params.contains_key("mock_response"));
    // A fallback group's answer is not the requested group's: routed again next time.
    let own = served.is_some_and(|s| plan.servers.iter().any(|g| **g == *s.group));
    let endpoint = plan.call_type.as_str();
    parts.headers.insert(CACHE_HEADER, HeaderValue::from_static("miss"));
    if own && !mocked && bytes.len() <= cache.settings().max_item_bytes && complete(plan.call_type, &bytes) {
        let answer = CachedAnswer { body: bytes.clone(), usage };
        if cache.put(plan.key.to_string(), answer, plan.ttl, endpoint) {
            count(Counted::Store, endpoint);
            insert_key(&mut parts.headers, &plan.key);
        }
    }
    let mut body = RouteBody::from(bytes);
    if let Some(usage) = usage {
        body = body.with_usage(usage);
    }
    Ok(http::Response::from_parts(parts, body))
}

/// A whole successful answer: a chat or text completion with choices none of which the content
/// filter cut, or an embeddings list; never an error envelope.
fn complete(call_type: CallType, body: &[u8]) -> bool {
    let Ok(Value::Object(answer)) = serde_json::from_slice::<Value>(body) else { return false };
    if answer.get("error").is_some_and(|e| !e.is_null()) {
        return false;
    }
    match call_type {
        CallType::Chat | CallType::Completions => match answer.get("choices") {
            Some(Value::Array(choices)) if !choices.is_empty() => {
                choices.iter().all(|c| c.get("finish_reason").and_then(Value::as_str) != Some("content_filter"))
            }
            _ => false,
        },
        CallType::Embeddings => matches!(answer.get("data"), Some(Value::Array(d)) if !d.is_empty()),
    }
}

/// The results [`CACHE_REQUESTS`] counts.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Counted {
    Hit,
    Miss,
    Store,
    Error,
}

pub(crate) fn count(result: Counted, endpoint: &'static str) {
    let result = match result {
        Counted::Hit => "hit",
        Counted::Miss => "miss",
        Counted::Store => "store",
        Counted::Error => "error",
    };
    metrics::counter!(CACHE_REQUESTS, "endpoint" => endpoint, "result" => result).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_complete_successes_are_stored() {
        let chat = |v: Value| complete(CallType::Chat, v.to_string().as_bytes());
        assert!(chat(serde_json::json!({"choices": [{"finish_reason": "stop", "message": {}}]})));
        assert!(!chat(serde_json::json!({"choices": []})));
        assert!(!chat(serde_json::json!({"choices": [{"finish_reason": "content_filter"}]})));
        assert!(!chat(serde_json::json!({"error": {"message": "x"}})));
        assert!(!complete(CallType::Chat, b"not json"));
        assert!(complete(CallType::Embeddings, br#"{"data": [{"embedding": [0.1]}]}"#));
        assert!(!complete(CallType::Embeddings, br#"{"data": []}"#));
    }
}
