//! The response future of [`Fallback`](super::Fallback).

use tower_service::Service;

use super::service::Hops;
use crate::future::LayerFuture;

/// The response future of [`Fallback`](super::Fallback).
///
/// The call in its first group is the inner service's own future, polled in place; only after a
/// failure do the hops to other groups continue as a boxed future. A request without a context
/// goes through as it is (`None`): the inner service reports it.
pub type ResponseFuture<S, R> = LayerFuture<<S as Service<R>>::Future, Option<Hops<S, R>>>;
