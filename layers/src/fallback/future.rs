//! The response future of [`Fallback`](super::Fallback).

use std::{
    fmt,
    pin::Pin,
    task::{Context, Poll, ready},
};

use futures_util::future::BoxFuture;
use pin_project_lite::pin_project;
use tower_service::Service;

use super::service::{Hops, with_hops};
use crate::{BoxError, RouteBody, RouteRequest};

type Response = http::Response<RouteBody>;

pin_project! {
    /// The response future of [`Fallback`](super::Fallback).
    ///
    /// The call in its first group is the inner service's own future, polled in place; only
    /// after a failure do the hops to other groups continue as a boxed future.
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
        // The call in its first group, and what a hop needs (taken once, on a failure).
        First { #[pin] fut: S::Future, base_hop: u32, hops: Option<Hops<S, R>> },
        // The hops after a failure.
        Boxed { fut: BoxFuture<'static, Result<Response, BoxError>> },
    }
}

impl<S: Service<R>, R> ResponseFuture<S, R> {
    pub(crate) fn passthrough(fut: S::Future) -> Self {
        Self { kind: Kind::Passthrough { fut } }
    }

    pub(crate) fn first(fut: S::Future, base_hop: u32, hops: Hops<S, R>) -> Self {
        Self { kind: Kind::First { fut, base_hop, hops: Some(hops) } }
    }
}

impl<S: Service<R>, R> fmt::Debug for ResponseFuture<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            Kind::Passthrough { .. } => "passthrough",
            Kind::First { .. } => "first group",
            Kind::Boxed { .. } => "falling back",
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
            let rest = match self.as_mut().project().kind.project() {
                KindProj::Passthrough { fut } => return fut.poll(cx).map_err(Into::into),
                KindProj::Boxed { fut } => return fut.as_mut().poll(cx),
                KindProj::First { fut, base_hop, hops } => match ready!(fut.poll(cx)) {
                    Ok(resp) => return Poll::Ready(Ok(with_hops(resp, *base_hop))),
                    Err(e) => hops.take().expect("fallback future polled after it completed").after_failure(e.into()),
                },
            };
            self.as_mut().project().kind.set(Kind::Boxed { fut: rest });
        }
    }
}
