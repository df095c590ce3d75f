//! The response future of [`Select`](super::Select).

use std::{
    fmt,
    pin::Pin,
    task::{Context, Poll, ready},
};

use futures_util::future::BoxFuture;
use pin_project_lite::pin_project;
use tracing::instrument::Instrumented;

use super::service::AfterAttempt;
use crate::{BoxError, RouteBody};

type Response = http::Response<RouteBody>;

pin_project! {
    /// The response future of [`Select`](super::Select).
    ///
    /// When the pick reads no usage and reserves nothing (no RPM/TPM limits, a strategy that does
    /// not read usage) it is made in `call`, and this is the provider's future in its `attempt`
    /// span, polled in place, with the attempt's bookkeeping when it resolves. A pick that goes
    /// through the store runs as one boxed future.
    pub struct ResponseFuture<F> {
        #[pin]
        kind: Kind<F>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F> {
        // The attempt, then its bookkeeping (taken once, when the attempt resolves).
        Attempt { #[pin] fut: Instrumented<F>, after: Option<AfterAttempt> },
        // A pick through the store, or an early error.
        Boxed { fut: BoxFuture<'static, Result<Response, BoxError>> },
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn attempt(fut: Instrumented<F>, after: AfterAttempt) -> Self {
        Self { kind: Kind::Attempt { fut, after: Some(after) } }
    }

    pub(crate) fn boxed(fut: BoxFuture<'static, Result<Response, BoxError>>) -> Self {
        Self { kind: Kind::Boxed { fut } }
    }

    pub(crate) fn failed(err: BoxError) -> Self {
        Self::boxed(Box::pin(std::future::ready(Err(err))))
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            Kind::Attempt { .. } => "attempt",
            Kind::Boxed { .. } => "boxed",
        };
        f.debug_struct("ResponseFuture").field("kind", &kind).finish()
    }
}

impl<F, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response, E>>,
    E: Into<BoxError>,
{
    type Output = Result<Response, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Attempt { mut fut, after } => {
                let result = ready!(fut.as_mut().poll(cx)).map_err(Into::into);
                let after = after.take().expect("select future polled after it completed");
                Poll::Ready(after.finish(result, fut.as_ref().get_ref().span()))
            }
            KindProj::Boxed { fut } => fut.as_mut().poll(cx),
        }
    }
}
