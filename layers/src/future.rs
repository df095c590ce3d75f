//! The response future shared by the routing layers.
//!
//! A layer decides in `call` whether its work for this call can finish without waiting. When it
//! can, it calls the ready inner service at once and its future is the inner service's own,
//! polled in place (no box), with what the layer does once that future resolves (record the
//! outcome, or start retries or hops after a failure). When it cannot (a store read, a sleep, more
//! attempts), the call runs as one boxed future. An answer known in `call` (our own refusal) is
//! held as it is.

use std::{
    fmt,
    pin::Pin,
    task::{Context, Poll, ready},
};

use futures_util::future::BoxFuture;
use pin_project_lite::pin_project;

use crate::{BoxError, RouteBody};

type Response = http::Response<RouteBody>;

/// The boxed rest of a call.
pub(crate) type Boxed = BoxFuture<'static, Result<Response, BoxError>>;

/// What a layer does with the result of the inner future it polled in place.
pub trait Then<F> {
    /// Takes the inner future's `result` (the future itself is still there, done, to read from):
    /// the call's answer, or the rest of the call to run.
    fn then(self, result: Result<Response, BoxError>, inner: &F) -> Next;
}

/// What comes after the inner future a layer polled in place.
pub enum Next {
    /// The call's answer.
    Done(Result<Response, BoxError>),
    /// More to do (retries, hops), as a boxed future.
    Continue(Boxed),
}

impl fmt::Debug for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Done(result) => f.debug_tuple("Done").field(result).finish(),
            Self::Continue(_) => f.write_str("Continue"),
        }
    }
}

/// Nothing: the inner future's result is the answer.
impl<F> Then<F> for () {
    fn then(self, result: Result<Response, BoxError>, _: &F) -> Next {
        Next::Done(result)
    }
}

/// A layer that only sometimes has something to do after the inner future (`None`: nothing).
impl<F, T: Then<F>> Then<F> for Option<T> {
    fn then(self, result: Result<Response, BoxError>, inner: &F) -> Next {
        match self {
            Some(then) => then.then(result, inner),
            None => Next::Done(result),
        }
    }
}

pin_project! {
    /// The response future of a routing layer: the inner service's future polled in place and then
    /// `T`, a boxed future, or an answer known at once.
    pub struct LayerFuture<F, T> {
        #[pin]
        kind: Kind<F, T>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F, T> {
        // The inner future, then what the layer does with its result (taken once, when it resolves).
        InPlace { #[pin] fut: F, then: Option<T> },
        Boxed { fut: Boxed },
        // Taken once, at the first poll.
        Ready { result: Option<Result<Response, BoxError>> },
    }
}

impl<F, T> LayerFuture<F, T> {
    /// The inner service's future, polled in place, then `then`.
    pub(crate) fn in_place(fut: F, then: T) -> Self {
        Self { kind: Kind::InPlace { fut, then: Some(then) } }
    }

    /// The rest of the call as a boxed future.
    pub(crate) fn boxed(fut: Boxed) -> Self {
        Self { kind: Kind::Boxed { fut } }
    }

    /// An error known in `call`.
    pub(crate) fn failed(err: BoxError) -> Self {
        Self { kind: Kind::Ready { result: Some(Err(err)) } }
    }
}

impl<F> LayerFuture<F, ()> {
    /// The inner service's future as it is.
    pub(crate) fn passthrough(fut: F) -> Self {
        Self::in_place(fut, ())
    }
}

impl<F, T> fmt::Debug for LayerFuture<F, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            Kind::InPlace { .. } => "in place",
            Kind::Boxed { .. } => "boxed",
            Kind::Ready { .. } => "ready",
        };
        f.debug_struct("LayerFuture").field("kind", &kind).finish()
    }
}

impl<F, E, T> Future for LayerFuture<F, T>
where
    F: Future<Output = Result<Response, E>>,
    E: Into<BoxError>,
    T: Then<F>,
{
    type Output = Result<Response, BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let rest = match self.as_mut().project().kind.project() {
                KindProj::Boxed { fut } => return fut.as_mut().poll(cx),
                KindProj::Ready { result } => {
                    return Poll::Ready(result.take().expect("layer future polled after it completed"));
                }
                KindProj::InPlace { mut fut, then } => {
                    let result = ready!(fut.as_mut().poll(cx)).map_err(Into::into);
                    let then = then.take().expect("layer future polled after it completed");
                    match then.then(result, fut.as_ref().get_ref()) {
                        Next::Done(result) => return Poll::Ready(result),
                        Next::Continue(rest) => rest,
                    }
                }
            };
            self.as_mut().project().kind.set(Kind::Boxed { fut: rest });
        }
    }
}
