//! The fallback layer: when a whole model group fails a call, move the call to other groups.
//!
//! [`FallbackLayer`] is the outermost routing layer. On a failure of the inner stack it picks the
//! next group from the failed group's entry in [`FallbackTables`] (`context_window_fallbacks` for a
//! prompt that does not fit, `content_policy_fallbacks` for a content filter, else `fallbacks`,
//! else `default_fallbacks`), minus the groups this call already visited, and sends a fresh copy
//! of the original request there, through every layer below (that group's retries, cooldowns and
//! checks). `max_fallbacks` bounds the hops of the whole call; a group is never tried twice, so
//! cycles in the tables are harmless. The response's [`Served::hops`](crate::Served) says how many
//! hops were made; a final error is the last group's, with the trail of every attempt.
//! `docs/layers/fallback.md` has the full rules.
//!
//! The layer keeps its own copy of the request for the hops, and tells the layers below which
//! failures it takes by putting its tables into the context once per call (a
//! [`FallbackHint`](crate::fallback_tables::FallbackHint), which the retry layer reads), so any
//! layer may sit between it and the retry layer. No hop starts after the call's deadline, which a
//! [`DeadlineLayer`](crate::deadline::DeadlineLayer) above sets.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), switchyard_layers::BoxError> {
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use switchyard_layers::{
//!     BoxError, Deployment, Outcome, Registry, RouteBody, RouteCtx, RouteError, RouteRequest, Served, StateStore,
//!     fallback::{FallbackConfig, FallbackLayer},
//!     select::{RoutingStrategy, SelectLayer},
//! };
//!
//! let registry = Arc::new(Registry::new());
//! registry.upsert(Deployment::builder("gpt-4o", "openai/gpt-4o").id("primary").build()?)?;
//! registry.upsert(Deployment::builder("claude", "anthropic/claude-sonnet-4").id("backup").build()?)?;
//!
//! let fallback = FallbackLayer::new(registry.clone(), FallbackConfig::new().fallbacks("gpt-4o", ["claude"]));
//! let select = SelectLayer::new(registry, Arc::new(StateStore::memory()), RoutingStrategy::SimpleShuffle.build());
//!
//! // A provider whose gpt-4o deployment is down.
//! let provider = service_fn(|req: http::Request<Bytes>| async move {
//!     let d = req.route_ctx().and_then(|c| c.selected.clone()).expect("the select layer chose");
//!     if d.id.as_str() == "primary" {
//!         return Err(RouteError::upstream(Outcome::ServerError, d.id.clone(), "503 Service Unavailable").into());
//!     }
//!     Ok::<_, BoxError>(http::Response::new(RouteBody::from("hello")))
//! });
//! let stack = ServiceBuilder::new().layer(fallback).layer(select).service(provider);
//!
//! let mut req = http::Request::new(Bytes::from_static(b"{}"));
//! req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
//! let resp = stack.oneshot(req).await?;
//! let served = resp.extensions().get::<Served>().expect("served");
//! assert_eq!((&*served.group, served.hops), ("claude", 1));
//! # Ok(()) }
//! ```

mod event;
pub mod future;
mod layer;
mod plan;
mod service;

pub use event::FallbackEvent;
pub use layer::{FallbackConfig, FallbackLayer};
pub use service::Fallback;

/// The tables live in [`crate::fallback_tables`], which the retry layer reads too; re-exported
/// here where fallback users look for them.
pub use crate::fallback_tables::{FallbackTable, FallbackTables};
