//! The cooldown layer: benches failing deployments for a while and keeps them out of the
//! candidates until they return.
//!
//! Per attempt it resolves the group's candidates and drops those cooling down, with one read of
//! the group's cooldown states. After the attempt it records the outcome in the
//! [`StateStore`](crate::StateStore) and decides, with LiteLLM's rules (`docs/layers/cooldown.md`):
//!
//! - only 429, 401, 408, 404, 5xx and connection failures can bench (the status gate);
//! - by default: a 429 in a group of more than one deployment; more than 50% failures of at least
//!   5 requests in the window (not for a single-deployment group); 100% failures of at least
//!   1,000; a non-retryable status (401, 404);
//! - with `allowed_fails` or `allowed_fails_policy`: more failures in the window than allowed;
//! - for the deployment's `cooldown_time` (zero = never), else the upstream's Retry-After, else
//!   the router's `cooldown_time` (5 s). Re-cooling extends a deadline, never shortens it.
//!
//! Opt-in half-open recovery ([`ProbeConfig`]) lets exactly one request probe a deployment whose
//! deadline passed: success re-admits it, failure benches it again for longer.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), switchyard_layers::BoxError> {
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use switchyard_layers::{
//!     BoxError, Deployment, Outcome, Registry, RouteBody, RouteCtx, RouteError, RouteErrorKind, RouteRequest,
//!     StateStore, cooldown::{CooldownConfig, CooldownLayer}, select::{RoutingStrategy, SelectLayer},
//! };
//!
//! let registry = Arc::new(Registry::new());
//! registry.add(Deployment::builder("gpt-4o", "azure/gpt-4o").id("a").build()?)?;
//! registry.add(Deployment::builder("gpt-4o", "openai/gpt-4o").id("b").build()?)?;
//! let store = Arc::new(StateStore::memory());
//! // Deployment `a` answers 429.
//! let provider = service_fn(|req: http::Request<Bytes>| async move {
//!     let d = req.route_ctx().and_then(|c| c.selected.clone()).expect("selected");
//!     if d.id.as_str() == "a" {
//!         let err = RouteError::upstream(Outcome::RateLimited, d.id.clone(), "429")
//!             .with_upstream_response(http::StatusCode::TOO_MANY_REQUESTS, Bytes::new());
//!         return Err::<http::Response<RouteBody>, BoxError>(err.into());
//!     }
//!     Ok(http::Response::new(RouteBody::from("ok")))
//! });
//! let stack = ServiceBuilder::new()
//!     .layer(CooldownLayer::new(registry.clone(), store.clone(), CooldownConfig::default()))
//!     .layer(SelectLayer::new(registry, store.clone(), RoutingStrategy::SimpleShuffle.build()).with_seed(3))
//!     .service(provider);
//!
//! let call = |stack: _| async move {
//!     let mut req = http::Request::new(Bytes::new());
//!     req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
//!     tower::ServiceExt::oneshot(stack, req).await
//! };
//! for _ in 0..20 {
//!     let _ = call(stack.clone()).await;
//! }
//! // After its first 429, `a` is benched and `b` serves everything.
//! assert!(store.cooldowns(&["a".into()]).await[0].is_some());
//! # Ok(()) }
//! ```

mod config;
mod decide;
mod events;
pub mod future;
mod layer;
mod service;

pub use config::{ALLOWED_FAILS_POLICY_FIELDS, AllowedFailsPolicy, CooldownConfig, CooldownHook, ProbeConfig};
pub use events::{CooldownEntry, CooldownEvent};
pub use layer::{CooldownLayer, list};
pub use service::Cooldown;
