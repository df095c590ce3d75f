//! The response future of [`Select`](super::Select).

use tracing::instrument::Instrumented;

use super::service::AfterAttempt;
use crate::future::LayerFuture;

/// The response future of [`Select`](super::Select).
///
/// When the pick reads no usage and reserves nothing (no RPM/TPM limits, a strategy that does not
/// read usage) it is made in `call`, and this is the provider's future in its `attempt` span,
/// polled in place, with the attempt's bookkeeping when it resolves. A pick that goes through the
/// store runs as one boxed future.
pub type ResponseFuture<F> = LayerFuture<Instrumented<F>, AfterAttempt>;
