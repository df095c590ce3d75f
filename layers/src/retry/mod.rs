//! The retry layer: retries a failed attempt within the request's model group, by error class and
//! policy, with the failed deployment excluded and a backoff that is zero while another healthy
//! deployment is left.
//!
//! It sits below the fallback layer and above the cooldown, pre-call and select layers, so every
//! retry re-enters them: a fresh cooldown, a full rate-limit window or an excluded deployment is
//! respected without special plumbing. After each failure the should-retry table decides (context
//! window / content policy with a matching fallback, non-retryable status, not found, rate limited
//! with nothing healthy and a fallback waiting, auth error in a one-deployment group, nothing
//! healthy), then the retry count for the error's class (request > retry policy > deployment >
//! router), then the call's deadline and the optional shared [`RetryBudget`]. The whole contract,
//! the backoff formula and the differences from LiteLLM are in `docs/layers/retry.md`.
//!
//! It takes nothing from the fallback layer but what that layer puts into the context: its tables,
//! as a [`FallbackHint`](crate::fallback_tables::FallbackHint) (so a failure the fallback layer
//! will take is not retried here first), and the call's deadline comes from a
//! [`DeadlineLayer`](crate::deadline::DeadlineLayer) above. Any layer may sit between the two.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), switchyard_layers::BoxError> {
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use switchyard_layers::{
//!     BoxError, Deployment, Outcome, Registry, RouteBody, RouteCtx, RouteError, RouteRequest, Served, StateStore,
//!     retry::{RetryConfig, RetryLayer, RetryPolicy},
//!     select::{RoutingStrategy, SelectLayer},
//! };
//!
//! let registry = Arc::new(Registry::new());
//! registry.upsert(Deployment::builder("gpt-4o", "azure/gpt-4o").id("eu").build()?)?;
//! registry.upsert(Deployment::builder("gpt-4o", "openai/gpt-4o").id("us").build()?)?;
//! let store = Arc::new(StateStore::memory());
//!
//! let config = RetryConfig::default().num_retries(2).retry_policy(RetryPolicy::new().authentication(0));
//! let retry = RetryLayer::new(registry.clone(), store.clone(), config);
//! let select = SelectLayer::new(registry, store, RoutingStrategy::SimpleShuffle.build());
//!
//! // A provider whose `eu` deployment answers 500.
//! let provider = service_fn(|req: http::Request<Bytes>| async move {
//!     let d = req.route_ctx().and_then(|c| c.selected.clone()).expect("selected");
//!     if d.id.as_str() == "eu" {
//!         return Err(BoxError::from(RouteError::upstream(Outcome::ServerError, d.id.clone(), "boom")));
//!     }
//!     Ok(http::Response::new(RouteBody::from(d.id.to_string())))
//! });
//! let stack = ServiceBuilder::new().layer(retry).layer(select).service(provider);
//!
//! let mut req = http::Request::new(Bytes::new());
//! req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
//! let resp = stack.oneshot(req).await?;
//! let served = resp.extensions().get::<Served>().expect("served");
//! assert_eq!(served.deployment.as_str(), "us");
//! assert_eq!(served.retries, served.attempts - 1);
//! # Ok(()) }
//! ```

mod budget;
pub mod future;
mod layer;
mod policy;
mod service;

pub use budget::{RetryBudget, RetryBudgetError};
pub use layer::{RetryConfig, RetryLayer};
pub use policy::{DEFAULT_RETRIES_FIELD, RETRY_POLICY_FIELDS, RetryPolicy, RetryPolicyError};
pub use service::Retry;
