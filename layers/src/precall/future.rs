//! The response future of [`PreCall`](super::PreCall).

use crate::future::LayerFuture;

/// The response future of [`PreCall`](super::PreCall).
///
/// When no check waits (no limits, budgets, token counts, parallel-slot waits or affinity) the
/// checks run in `call` and this is the attempt's own future, polled in place; otherwise the
/// checks and the attempt run as one boxed future.
pub type ResponseFuture<F> = LayerFuture<F, ()>;
