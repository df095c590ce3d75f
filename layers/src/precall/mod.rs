//! The pre-call layer: per attempt, drops the candidates that cannot serve it, and records what
//! the chosen deployment must reserve.
//!
//! It sits between the cooldown layer and the select layer and only subtracts from
//! `RouteCtx::candidates` (resolving them first when no outer layer has). The checks run in this
//! order, each on what the previous ones left (`docs/layers/precall.md`):
//!
//! 1. **blocked** deployments;
//! 2. **tags** (`enable_tag_filtering`): match any (default) or all, the `default` tag, `!tag`;
//! 3. **region** (`allowed_model_region`);
//! 4. **capabilities** (on by default): a request carrying images skips deployments known not
//!    to support vision, one carrying `tools` those known not to support function calling
//!    (`model_info.supports_*`, else the [catalog](crate::catalog)); then **params**:
//!    `response_format` and `tools` against the `supports_*` flags (with
//!    `enable_pre_call_checks`);
//! 5. **context window**: input tokens (counted once per request with tiktoken) against
//!    `max_input_tokens` (declared, else the catalog's);
//! 6. **RPM / TPM**: deployments already at a limit in the sliding window (one state read); the
//!    select layer reserves the request and the token estimate atomically on the one it picks;
//! 7. **budgets**: deployments whose provider or own spend reached its limit in the current
//!    period (one state read);
//! 8. **parallel requests**: deployments with `max_parallel_requests` in flight; the select layer
//!    takes the slot, held until the response body ends;
//! 9. **order**: only the lowest `order` tier of what is left;
//! 10. **affinity** (when configured): the session's (or caller's) sticky deployment, if it
//!     survived every check above.
//!
//! After a served attempt the layer records its spend when the body ends, and remembers the
//! serving deployment for the session.
//!
//! When a check removes the last candidates it names the error: tags →
//! [`NotAllowed`](crate::RouteErrorKind::NotAllowed) (403); context window →
//! [`ContextWindowExceeded`](crate::RouteErrorKind::ContextWindowExceeded) (feeds
//! `context_window_fallbacks`); RPM/TPM or parallel limits →
//! [`RateLimited`](crate::RouteErrorKind::RateLimited), with the time until the first RPM/TPM
//! slot frees (general fallbacks, Retry-After); budgets →
//! [`BudgetExceeded`](crate::RouteErrorKind::BudgetExceeded), with the time until a budget
//! resets (general fallbacks); capabilities →
//! [`Unsupported`](crate::RouteErrorKind::Unsupported) (400, naming the capability; general
//! fallbacks); blocked, region and params →
//! [`NoCandidates`](crate::RouteErrorKind::NoCandidates) naming the rule. Because the context
//! window is checked before the limits, a deployment that fits the prompt but is at its limit
//! makes the call rate limited, as in LiteLLM (rate limit wins over context window).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), switchyard_layers::BoxError> {
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use switchyard_layers::{
//!     BoxError, Deployment, Registry, RequestFacts, RouteBody, RouteCtx, RouteRequest, Served, StateStore,
//!     precall::{PreCallConfig, PreCallLayer},
//!     select::{RoutingStrategy, SelectLayer},
//! };
//!
//! let registry = Arc::new(Registry::new());
//! registry.add(Deployment::builder("gpt-4o", "openai/gpt-4o").id("free").tags(["free"]).build()?)?;
//! registry.add(Deployment::builder("gpt-4o", "openai/gpt-4o").id("paid").tags(["paid"]).build()?)?;
//! let store = Arc::new(StateStore::memory());
//! let provider = service_fn(|_req: http::Request<Bytes>| async { Ok::<_, BoxError>(http::Response::new(RouteBody::empty())) });
//! let stack = ServiceBuilder::new()
//!     .layer(PreCallLayer::new(registry.clone(), store.clone(), PreCallConfig::new().tag_filtering(true)))
//!     .layer(SelectLayer::new(registry, store, RoutingStrategy::SimpleShuffle.build()))
//!     .service(provider);
//!
//! let mut req = http::Request::new(Bytes::new());
//! let facts = RequestFacts::new().tags(vec!["paid".into()]);
//! req.extensions_mut().insert(RouteCtx::with_facts("gpt-4o", facts));
//! let resp = stack.oneshot(req).await?;
//! assert_eq!(resp.extensions().get::<Served>().map(|s| s.deployment.as_str()), Some("paid"));
//! # Ok(()) }
//! ```

mod affinity;
mod budget;
mod capabilities;
mod checks;
mod config;
mod context;
pub mod future;
mod layer;
pub(crate) mod limits;
mod order;
mod parallel;
mod params;
mod region;
mod service;
mod tags;
mod tokens;

pub use affinity::{AffinityConfig, AffinityHit, conversation_key};
pub use budget::{Budget, BudgetConfig};
pub use config::PreCallConfig;
pub use layer::PreCallLayer;
pub use service::PreCall;
pub use tokens::{Tokenizer, count_input_tokens};
