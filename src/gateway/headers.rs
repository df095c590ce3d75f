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
    let hops = HeaderValue::from(served.hops);
    headers.insert(ATTEMPTED_FALLBACKS, hops.clone());
    headers.insert(LITELLM_ATTEMPTED_FALLBACKS, hops);
    let millis = format!("{:.3}", overhead.as_secs_f64() * 1000.0);
    if let Ok(ms) = HeaderValue::from_str(&millis) {
        headers.insert(OVERHEAD_MS, ms.clone());
        headers.insert(LITELLM_OVERHEAD_MS, ms);
    }
}
