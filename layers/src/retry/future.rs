//! The response future of [`Retry`](super::Retry).

use tower_service::Service;

use super::service::Retries;
use crate::future::LayerFuture;

/// The response future of [`Retry`](super::Retry).
///
/// The first attempt is the inner service's own future, polled in place: most calls succeed at
/// once and never need more. Only after a failure do the retries (which may wait) continue as a
/// boxed future. A request without a context goes through as it is (`None`): the inner service
/// reports it.
pub type ResponseFuture<S, R> = LayerFuture<<S as Service<R>>::Future, Option<Retries<S, R>>>;
