//! The response future of [`PreCall`](super::PreCall).

use std::{
    fmt,
    pin::Pin,
    task::{Context, Poll},
};

use futures_util::future::BoxFuture;
use pin_project_lite::pin_project;

use crate::{BoxError, RouteBody};

type Response = http::Response<RouteBody>;

pin_project! {
    /// The response future of [`PreCall`](super::PreCall).
    ///
    /// When no check can wait (no limits, budgets, token counts, parallel-slot waits or affinity)
    /// the checks run in `call` and this is the attempt's own future, polled in place; otherwise
    /// the checks and the attempt run as one boxed future.
    pub struct ResponseFuture<F> {
        #[pin]
        kind: Kind<F>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F> {
        Attempt { #[pin] fut: F },
        Boxed { fut: BoxFuture<'static, Result<Response, BoxError>> },
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn attempt(fut: F) -> Self {
        Self { kind: Kind::Attempt { fut } }
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
            KindProj::Attempt { fut } => fut.poll(cx).map_err(Into::into),
            KindProj::Boxed { fut } => fut.as_mut().poll(cx),
        }
    }
}
