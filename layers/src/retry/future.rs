//! The response future of [`Retry`](super::Retry).

use std::{
    fmt,
    pin::Pin,
    task::{Context, Poll, ready},
};

use futures_util::future::BoxFuture;
use pin_project_lite::pin_project;
use tower_service::Service;

use super::service::Retries;
use crate::{BoxError, RouteBody, RouteRequest, Served};

type Response = http::Response<RouteBody>;

pin_project! {
    /// The response future of [`Retry`](super::Retry).
    ///
    /// The first attempt is the inner service's own future, polled in place: most calls succeed
    /// at once and never need more. Only after a failure do the retries (which may wait) continue
    /// as a boxed future.
    pub struct ResponseFuture<S, R>
    where
        S: Service<R>,
    {
        #[pin]
        kind: Kind<S, R>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<S, R>
    where
        S: Service<R>,
    {
        // A request without a context: the inner service reports it.
        Passthrough { #[pin] fut: S::Future },
        // The first attempt, and what another attempt needs (taken once, on a failure).
        First { #[pin] fut: S::Future, retries: Option<Retries<S, R>> },
        // The retries after a failure, or a call that cannot be replayed.
        Boxed { fut: BoxFuture<'static, Result<Response, BoxError>> },
    }
}

impl<S: Service<R>, R> ResponseFuture<S, R> {
    pub(crate) fn passthrough(fut: S::Future) -> Self {
        Self { kind: Kind::Passthrough { fut } }
    }

    pub(crate) fn first(fut: S::Future, retries: Retries<S, R>) -> Self {
        Self { kind: Kind::First { fut, retries: Some(retries) } }
    }

    pub(crate) fn boxed(fut: BoxFuture<'static, Result<Response, BoxError>>) -> Self {
        Self { kind: Kind::Boxed { fut } }
    }
}

impl<S: Service<R>, R> fmt::Debug for ResponseFuture<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            Kind::Passthrough { .. } => "passthrough",
            Kind::First { .. } => "first attempt",
            Kind::Boxed { .. } => "retrying",
        };
        f.debug_struct("ResponseFuture").field("kind", &kind).finish()
    }
}

impl<S, R> Future for ResponseFuture<S, R>
where
    R: RouteRequest,
    S: Service<R, Response = Response> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Output = Result<Response, BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let retries = match self.as_mut().project().kind.project() {
                KindProj::Passthrough { fut } => return fut.poll(cx).map_err(Into::into),
                KindProj::Boxed { fut } => return fut.as_mut().poll(cx),
                KindProj::First { fut, retries } => match ready!(fut.poll(cx)) {
                    Ok(mut resp) => {
                        if let Some(served) = resp.extensions_mut().get_mut::<Served>() {
                            served.retries = 0;
                        }
                        return Poll::Ready(Ok(resp));
                    }
                    Err(e) => {
                        let next = retries.take().expect("retry future polled after it completed");
                        next.after_failure(e.into())
                    }
                },
            };
            self.as_mut().project().kind.set(Kind::Boxed { fut: retries });
        }
    }
}
