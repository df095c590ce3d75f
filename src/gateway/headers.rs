//! The response headers that say how a request was routed, ours and the LiteLLM proxy's names
//! for the same facts, built from the [`Served`] extension the stack puts on every answer.
//!
//! No upstream header reaches the client: the provider builds each answer's head itself
//! (`content-type`, and `cache-control` on a stream); on an error answer `Retry-After` /
//! `retry-after-ms` are written as numbers from the classified wait, never copied; everything
//! else an answer carries is set here or by the gateway (`x-request-id`, `x-switchyard-error`, and
//! `content-encoding` / `vary` on a compressed answer).
//! So an upstream's `set-cookie`, `www-authenticate`, hop-by-hop or `x-` headers are dropped,
//! whatever they hold (`upstream_headers_are_not_forwarded_to_the_client` in
//! `tests/security.rs`). Values written here are group names and deployment ids from the config,
//! numbers, or nothing.
//!
//! ```
//! use std::time::Duration;
//! use http::HeaderMap;
//! use switchyard::gateway::headers::{self, MODEL_GROUP, LITELLM_MODEL_ID};
//! # use switchyard::{Config, Router, services::openai::{ChatMessage, ChatRequest}, services::sim::SimProvider};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let config = Config::from_yaml_str("model_list: [{model_name: gpt-4o, litellm_params: {model: openai/gpt-4o}, model_info: {id: east}}]")?;
//! # let router = Router::from_config(&config, SimProvider::new(1))?;
//! let served = router.chat(ChatRequest::new("gpt-4o", vec![ChatMessage::user("hi")])).await?.served;
//! let mut map = HeaderMap::new();
//! headers::insert_routing_headers(&mut map, &served, Duration::from_micros(250));
//! assert_eq!(map[MODEL_GROUP], "gpt-4o");
//! assert_eq!(map[LITELLM_MODEL_ID], "east");
//! # Ok(()) }
//! ```

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};
use switchyard_layers::Served;

/// The request's id: the client's, or one the gateway made; also sent upstream.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
/// The model group that served.
pub const MODEL_GROUP: HeaderName = HeaderName::from_static("x-switchyard-model-group");
/// The deployment that served.
pub const DEPLOYMENT_ID: HeaderName = HeaderName::from_static("x-switchyard-deployment-id");
/// Retries inside the group that served (0 when its first attempt served).
pub const ATTEMPTED_RETRIES: HeaderName = HeaderName::from_static("x-switchyard-attempted-retries");
/// Fallback hops made to reach the group that served.
pub const ATTEMPTED_FALLBACKS: HeaderName = HeaderName::from_static("x-switchyard-attempted-fallbacks");
/// Routed call time minus the serving attempt's upstream time, in milliseconds (3 decimals).
pub const OVERHEAD_MS: HeaderName = HeaderName::from_static("x-switchyard-overhead-ms");
/// LiteLLM's name for [`MODEL_GROUP`].
pub const LITELLM_MODEL_GROUP: HeaderName = HeaderName::from_static("x-litellm-model-group");
/// LiteLLM's name for [`DEPLOYMENT_ID`].
pub const LITELLM_MODEL_ID: HeaderName = HeaderName::from_static("x-litellm-model-id");
/// LiteLLM's name for [`ATTEMPTED_RETRIES`].
pub const LITELLM_ATTEMPTED_RETRIES: HeaderName = HeaderName::from_static("x-litellm-attempted-retries");
/// LiteLLM's name for [`ATTEMPTED_FALLBACKS`].
pub const LITELLM_ATTEMPTED_FALLBACKS: HeaderName = HeaderName::from_static("x-litellm-attempted-fallbacks");
/// LiteLLM's name for [`OVERHEAD_MS`].
pub const LITELLM_OVERHEAD_MS: HeaderName = HeaderName::from_static("x-litellm-overhead-duration-ms");

/// LiteLLM's retry count in effect for the group that answered, sent only on answers that
/// needed a retry (as LiteLLM's router adds it).
pub const LITELLM_MAX_RETRIES: HeaderName = HeaderName::from_static("x-litellm-max-retries");
/// LiteLLM's call id: the request's id ([`REQUEST_ID`]).
pub const LITELLM_CALL_ID: HeaderName = HeaderName::from_static("x-litellm-call-id");
/// LiteLLM's cost of the answer in USD: its usage at the serving deployment's prices (declared,
/// else the catalog's); on whole answers whose usage and prices are known.
pub const LITELLM_RESPONSE_COST: HeaderName = HeaderName::from_static("x-litellm-response-cost");
/// The serving group's requests left in the current 60 s window (LiteLLM's router header).
pub const RATELIMIT_REMAINING_REQUESTS: HeaderName = HeaderName::from_static("x-ratelimit-remaining-requests");
/// The serving group's RPM: the sum of its deployments' `rpm`.
pub const RATELIMIT_LIMIT_REQUESTS: HeaderName = HeaderName::from_static("x-ratelimit-limit-requests");
/// The serving group's tokens left in the current 60 s window.
pub const RATELIMIT_REMAINING_TOKENS: HeaderName = HeaderName::from_static("x-ratelimit-remaining-tokens");
/// The serving group's TPM: the sum of its deployments' `tpm`.
pub const RATELIMIT_LIMIT_TOKENS: HeaderName = HeaderName::from_static("x-ratelimit-limit-tokens");

/// The model group a pre-router chose for a virtual model name (a config's `auto_router/...`
/// entry), set by the stack's pre-route layer; absent when the request named a group itself.
pub const ROUTED_MODEL: HeaderName = switchyard_layers::preroute::ROUTED_MODEL_HEADER;

/// The model groups whose health filter failed open in this call (every candidate was marked
/// unhealthy by the health checks, so none was dropped), comma-separated.
pub const HEALTH_FAIL_OPEN: HeaderName = HeaderName::from_static("x-switchyard-health-fail-open");

/// Which affinity chose the serving deployment (`conversation`, `session`, `prompt_cache`);
/// absent when the strategy picked.
pub const AFFINITY: HeaderName = HeaderName::from_static("x-switchyard-affinity");

/// Inserts every routing header for `served`, with `overhead` as the routing overhead.
///
/// Group names and deployment ids come from the config; one that is not a valid header value
/// is left out rather than mangled.
pub fn insert_routing_headers(headers: &mut HeaderMap, served: &Served, overhead: Duration) {
    if let Ok(group) = HeaderValue::from_str(&served.group) {
        headers.insert(MODEL_GROUP, group.clone());
        headers.insert(LITELLM_MODEL_GROUP, group);
    }
    if let Ok(id) = HeaderValue::from_str(served.deployment.as_str()) {
        headers.insert(DEPLOYMENT_ID, id.clone());
        headers.insert(LITELLM_MODEL_ID, id);
    }
    let retries = HeaderValue::from(served.retries);
    headers.insert(ATTEMPTED_RETRIES, retries.clone());
    headers.insert(LITELLM_ATTEMPTED_RETRIES, retries);
    if let Some(max) = served.max_retries {
        headers.insert(LITELLM_MAX_RETRIES, HeaderValue::from(max));
    }
    let hops = HeaderValue::from(served.hops);
    headers.insert(ATTEMPTED_FALLBACKS, hops.clone());
    headers.insert(LITELLM_ATTEMPTED_FALLBACKS, hops);
    let millis = format!("{:.3}", overhead.as_secs_f64() * 1000.0);
    if let Ok(ms) = HeaderValue::from_str(&millis) {
        headers.insert(OVERHEAD_MS, ms.clone());
        headers.insert(LITELLM_OVERHEAD_MS, ms);
    }
}

/// A group's declared limits and its usage in the current window, for the `x-ratelimit-*`
/// headers: a limit is the sum of the group's deployments' `rpm` (or `tpm`) over those that
/// declare one, as LiteLLM's `get_model_group_info` adds them; `None` when none does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupLimits {
    /// `(limit, used)` requests in the window.
    pub requests: Option<(u64, u64)>,
    /// `(limit, used)` tokens in the window.
    pub tokens: Option<(u64, u64)>,
}

impl GroupLimits {
    /// Limits and usage as they are.
    pub fn new(requests: Option<(u64, u64)>, tokens: Option<(u64, u64)>) -> Self {
        Self { requests, tokens }
    }
}

/// Inserts `x-ratelimit-limit-*` and `x-ratelimit-remaining-*` for the limits `limits` has
/// (remaining never below 0).
///
/// ```
/// use http::HeaderMap;
/// use switchyard::gateway::headers::{self, GroupLimits};
/// let mut map = HeaderMap::new();
/// headers::insert_group_limits(&mut map, GroupLimits::new(Some((600, 12)), None));
/// assert_eq!(map["x-ratelimit-limit-requests"], "600");
/// assert_eq!(map["x-ratelimit-remaining-requests"], "588");
/// assert!(map.get("x-ratelimit-limit-tokens").is_none());
/// ```
pub fn insert_group_limits(headers: &mut HeaderMap, limits: GroupLimits) {
    if let Some((limit, used)) = limits.requests {
        headers.insert(RATELIMIT_LIMIT_REQUESTS, HeaderValue::from(limit));
        headers.insert(RATELIMIT_REMAINING_REQUESTS, HeaderValue::from(limit.saturating_sub(used)));
    }
    if let Some((limit, used)) = limits.tokens {
        headers.insert(RATELIMIT_LIMIT_TOKENS, HeaderValue::from(limit));
        headers.insert(RATELIMIT_REMAINING_TOKENS, HeaderValue::from(limit.saturating_sub(used)));
    }
}

/// Inserts `x-litellm-response-cost` (USD, a plain decimal, twelve significant digits); a cost
/// that is not a finite number >= 0 is left out.
///
/// ```
/// use http::HeaderMap;
/// use switchyard::gateway::headers;
/// let mut map = HeaderMap::new();
/// headers::insert_response_cost(&mut map, 0.00125);
/// assert_eq!(map["x-litellm-response-cost"], "0.00125");
/// // Rounded to twelve significant digits: no float noise.
/// headers::insert_response_cost(&mut map, 2.0 * 0.15e-6 + 8.0 * 0.6e-6);
/// assert_eq!(map["x-litellm-response-cost"], "0.0000051");
/// ```
pub fn insert_response_cost(headers: &mut HeaderMap, cost: f64) {
    // Twelve significant digits: a price times a token count carries float noise in its last
    // digits (2 × 5e-7 + 8 × 5.125e-7 is 0.0000050999999999999995), which nobody bills.
    let rounded: f64 = format!("{cost:.11e}").parse().unwrap_or(cost);
    if rounded.is_finite()
        && rounded >= 0.0
        && let Ok(v) = HeaderValue::from_str(&rounded.to_string())
    {
        headers.insert(LITELLM_RESPONSE_COST, v);
    }
}
