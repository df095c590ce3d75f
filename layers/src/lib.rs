//! Switchyard's routing model and its tower layers.
//!
//! A caller asks for a **model group** (`gpt-4o`); the layers in this crate decide which
//! **deployment** of that group serves each **attempt**. The vocabulary and the contracts between
//! the layers are described in `docs/architecture.md`; the short version:
//!
//! - per-request state travels in the request as a [`RouteCtx`] (see [`RouteRequest`]);
//! - per-service state (the [`Registry`] of deployments, the shared [`StateStore`]) lives in the
//!   layers;
//! - every attempt ends in one classified [`Outcome`]; failures are [`RouteError`]s;
//! - responses are `http::Response<`[`RouteBody`]`>`, and everything reserved for an attempt rides on
//!   the body and is released when it ends or is dropped.
//!
//! ```
//! use std::sync::Arc;
//! use switchyard_layers::{Deployment, Registry, StateStore, select::{SelectLayer, RoutingStrategy}};
//!
//! let registry = Arc::new(Registry::new());
//! registry.upsert(Deployment::builder("gpt-4o", "openai/gpt-4o").weight(2.0).build()?)?;
//! let store = Arc::new(StateStore::memory());
//! let layer = SelectLayer::new(registry, store, RoutingStrategy::SimpleShuffle.build());
//! # let _ = layer;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod body;
pub mod catalog;
pub mod classify;
pub mod continuation;
pub mod cooldown;
pub mod ctx;
pub mod deadline;
pub mod deployment;
pub mod error;
pub mod error_class;
pub mod fallback;
pub mod fallback_tables;
mod future;
pub mod health;
pub mod logsafe;
pub mod outcome;
pub mod precall;
pub mod preroute;
mod rate_limits;
pub mod redact;
pub mod retry;
pub mod seed;
pub mod select;
pub mod semconv;
mod service;
pub mod span;
mod spare;
pub mod stack;
pub mod state;

pub use body::{BodyEnd, RouteBody, Usage};
pub use ctx::{AttemptRecord, CallTrail, RequestFacts, ResponseId, RouteCtx, RouteRequest, Served};
pub use deployment::{ApiKey, Candidates, Deployment, DeploymentBuilder, DeploymentId, Group, Registry};
pub use error::{BoxError, RouteError, RouteErrorKind};
pub use outcome::Outcome;
pub use preroute::{PreRouteLayer, PreRouter};
pub use state::StateStore;

/// `get_ref`, `get_mut` and `into_inner` for a service wrapping `inner: S` (tower's convention);
/// generic parameters after `S` are named after the service (`inner_accessors!(PreRoute, P)`).
#[macro_export]
#[doc(hidden)]
macro_rules! inner_accessors {
    ($service:ident $(, $param:ident)*) => {
        impl<S $(, $param)*> $service<S $(, $param)*> {
            /// The inner service.
            pub fn get_ref(&self) -> &S {
                &self.inner
            }

            /// The inner service, mutably.
            pub fn get_mut(&mut self) -> &mut S {
                &mut self.inner
            }

            /// Unwraps the inner service.
            pub fn into_inner(self) -> S {
                self.inner
            }
        }
    };
}

/// Compile-time check that a layer and its service can be embedded in axum (or any host that
/// clones services per request and moves futures across threads).
#[cfg(test)]
pub(crate) fn assert_embeddable<T: Clone + Send + Sync + 'static>() {}

/// The inner service the tests wrap to check that a layer's service is embeddable.
#[cfg(test)]
pub(crate) type TestInner =
    tower::util::BoxCloneSyncService<http::Request<bytes::Bytes>, http::Response<RouteBody>, BoxError>;
