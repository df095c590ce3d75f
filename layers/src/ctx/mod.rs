//! Per-request routing state ([`RouteCtx`]), the carrier trait ([`RouteRequest`]), the request
//! facts ([`RequestFacts`]), and the record of a call's attempts and of the one that served
//! ([`AttemptRecord`], [`Served`]).
//!
//! One file per concern: `request.rs` the carrier and the copy kept to replay a request,
//! `facts.rs` what the edge read of the request, `trail.rs` the attempts and the response facts,
//! `mock.rs` LiteLLM's testing hooks, `pre_route.rs` what a pre-router decided, `context.rs` the context itself and the state every
//! copy of one request shares.
//!
//! ```
//! use bytes::Bytes;
//! use switchyard_layers::{RouteCtx, RouteRequest};
//!
//! let mut req = http::Request::new(Bytes::from_static(b"{}"));
//! req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
//! assert_eq!(req.route_ctx().map(RouteCtx::requested), Some("gpt-4o"));
//! ```

mod context;
mod facts;
mod mock;
mod pre_route;
mod request;
mod trail;

pub use context::{CallTrail, RouteCtx};
pub use facts::{Endpoint, RequestFacts, ResponseOp};
pub use mock::{MockFailure, MockHooks, MockResponse};
pub use pre_route::{DimensionScore, PreRouteDecision};
pub(crate) use request::Replay;
pub use request::RouteRequest;
pub use trail::{AttemptRecord, ResponseId, Served};
