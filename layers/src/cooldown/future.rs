//! The response future of [`Cooldown`](super::Cooldown).

use super::service::Record;
use crate::future::LayerFuture;

/// The response future of [`Cooldown`](super::Cooldown).
///
/// When none of the call's candidates is cooling down (the common case) the attempt's own future
/// is polled in place and its outcome recorded when it resolves: no box, no copy of the request.
/// Only a call that must read cooldown states (which may wait) runs as a boxed future. A disabled
/// layer records nothing (`None`).
pub type ResponseFuture<F> = LayerFuture<F, Option<Record>>;
