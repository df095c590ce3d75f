//! The response future of [`Cooldown`](super::Cooldown).

use std::{
    fmt,
    pin::Pin,
    task::{Context, Poll, ready},
};

use futures_util::future::BoxFuture;
use pin_project_lite::pin_project;

use super::service::Record;
use crate::{BoxError, RouteBody};

type Response = http::Response<RouteBody>;

pin_project! {
    /// The response future of [`Cooldown`](super::Cooldown).
    ///
    /// When none of the call's candidates is cooling down (the common case) the attempt's own
    /// future is polled in place and its outcome recorded when it resolves: no box, no copy of the
    /// request. Only a call that must read cooldown states (which may wait) runs as a boxed future.
    pub struct ResponseFuture<F> {
        #[pin]
        kind: Kind<F>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F> {
        // The layer is disabled: the inner future as it is.
        Passthrough { #[pin] fut: F },
        // The attempt, then its outcome recorded (taken once, when the attempt resolves).
        Attempt { #[pin] fut: F, record: Option<Record> },
        // Cooldown states to read first, or an early error.
        Boxed { fut: BoxFuture<'static, Result<Response, BoxError>> },
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn passthrough(fut: F) -> Self {
        Self { kind: Kind::Passthrough { fut } }
    }

    pub(crate) fn attempt(fut: F, record: Record) -> Self {
        Self { kind: Kind::Attempt { fut, record: Some(record) } }
    }

    pub(crate) fn boxed(fut: BoxFuture<'static, Result<Response, BoxError>>) -> Self {
        Self { kind: Kind::Boxed { fut } }
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            Kind::Passthrough { .. } => "passthrough",
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
            KindProj::Passthrough { fut } => fut.poll(cx).map_err(Into::into),
            KindProj::Attempt { fut, record } => {
                let result = ready!(fut.poll(cx)).map_err(Into::into);
                let record = record.take().expect("cooldown future polled after it completed");
                Poll::Ready(record.finish(result))
            }
            KindProj::Boxed { fut } => fut.as_mut().poll(cx),
        }
    }
}
