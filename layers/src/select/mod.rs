//! The select layer: the routing strategy ranks the attempt's candidates and the first one that
//! reserves its limits atomically serves the attempt.
//!
//! Strategies (`docs/strategies.md`): [`RoutingStrategy::SimpleShuffle`] (default, weighted),
//! least-busy, usage-based, latency-based, cost-based and p2c over peak-EWMA; a different strategy
//! per set of groups with [`RoutingGroups`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), switchyard_layers::BoxError> {
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use switchyard_layers::{
//!     BoxError, Deployment, Registry, RouteBody, RouteCtx, RouteRequest, StateStore,
//!     select::{RoutingStrategy, SelectLayer},
//! };
//!
//! let registry = Arc::new(Registry::new());
//! registry.upsert(Deployment::builder("gpt-4o", "openai/gpt-4o").id("only").build()?)?;
//! let select = SelectLayer::new(registry, Arc::new(StateStore::memory()), RoutingStrategy::LeastBusy.build());
//!
//! // A provider that answers with the deployment it was sent to.
//! let provider = service_fn(|req: http::Request<Bytes>| async move {
//!     let id = req.route_ctx().and_then(|c| c.selected.as_ref()).map(|d| d.id.to_string());
//!     Ok::<_, BoxError>(http::Response::new(RouteBody::from(id.unwrap_or_default())))
//! });
//! let stack = ServiceBuilder::new().layer(select).service(provider);
//!
//! let mut req = http::Request::new(Bytes::new());
//! req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
//! let resp = stack.oneshot(req).await?;
//! let served = resp.extensions().get::<switchyard_layers::Served>().expect("served");
//! assert_eq!(served.deployment.as_str(), "only");
//! # Ok(()) }
//! ```

mod config;
pub mod future;
mod layer;
mod service;
pub mod strategy;

pub use config::{RoutingGroup, RoutingGroups, RoutingStrategy, SelectConfigError, Strategies, StrategyArgs};
pub use layer::SelectLayer;
pub use service::Select;
pub use strategy::{Selection, Strategy};
