//! Health-check routing: deployments that background health probes found unhealthy are removed
//! from the candidates before the cooldown filter, as LiteLLM's `enable_health_check_routing`
//! does.
//!
//! Two parts, each usable alone:
//!
//! - [`HealthLayer`] (per attempt, between the retry and the cooldown layers): reads the health
//!   record of each candidate from the [`StateStore`](crate::StateStore) (one local read) and
//!   drops those whose latest probe failed, unless that record is stale (older than the staleness
//!   threshold: unknown health routes as healthy). When every candidate is unhealthy the filter
//!   **fails open** (LiteLLM's rule): it keeps them all and notes it in the call's trail
//!   ([`RouteCtx::health_fail_open`](crate::RouteCtx::health_fail_open)).
//! - [`HealthChecker`] (one background task per replica): probes every deployment of the
//!   registry once per interval through a [`Prober`] (the gateway's sends the cheapest request
//!   the deployment's dialect allows), jittered, bounded in concurrency, each probe under its own
//!   timeout, and stores the verdicts. With Redis a probe lease makes one replica of the fleet
//!   probe each deployment per interval, and every replica reads the others' verdicts.
//!
//! Probes go straight to the provider, below every routing layer: they are never counted in usage
//! windows, budgets or the cooldown rules (unless the prober is told to feed the cooldown counts,
//! LiteLLM's `allowed_fails_policy` interaction).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use std::{sync::Arc, time::Duration};
//! use bytes::Bytes;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use switchyard_layers::{
//!     BoxError, Deployment, DeploymentId, Registry, RouteBody, RouteCtx, RouteRequest, StateStore,
//!     health::{HealthConfig, HealthLayer},
//!     select::{RoutingStrategy, SelectLayer},
//!     state::HealthRecord,
//! };
//!
//! let registry = Arc::new(Registry::new());
//! registry.add(Deployment::builder("gpt-4o", "openai/gpt-4o").id("eu").build()?)?;
//! registry.add(Deployment::builder("gpt-4o", "openai/gpt-4o").id("us").build()?)?;
//! let store = Arc::new(StateStore::memory());
//! // A probe found `eu` down a moment ago.
//! let down = HealthRecord::new(false, Duration::from_millis(30), Some(503), "503");
//! store.record_health(&DeploymentId::from("eu"), down, Duration::from_secs(900)).await;
//!
//! let provider = service_fn(|req: http::Request<Bytes>| async move {
//!     let id = req.route_ctx().and_then(|c| c.selected.as_ref()).map(|d| d.id.to_string());
//!     Ok::<_, BoxError>(http::Response::new(RouteBody::from(id.unwrap_or_default())))
//! });
//! let health = HealthLayer::new(registry.clone(), store.clone(), HealthConfig::new());
//! let stack = ServiceBuilder::new()
//!     .layer(health)
//!     .layer(SelectLayer::new(registry, store, RoutingStrategy::SimpleShuffle))
//!     .service(provider);
//! for _ in 0..10 {
//!     let mut req = http::Request::new(Bytes::new());
//!     req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
//!     let res = stack.clone().oneshot(req).await?;
//!     let served = res.extensions().get::<switchyard_layers::Served>().map(|s| s.deployment.to_string());
//!     assert_eq!(served.as_deref(), Some("us"));
//! }
//! # Ok(()) }
//! ```

mod checker;
mod config;
mod filter;
mod layer;

pub use checker::{HealthCheckConfig, HealthCheckError, HealthChecker, ProbeFailure, Prober};
pub use config::HealthConfig;
pub use filter::{Health, ResponseFuture};
pub use layer::HealthLayer;
