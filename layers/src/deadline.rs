//! The call's deadline: [`DeadlineLayer`] sets
//! [`RouteCtx::deadline`](crate::RouteCtx::deadline) on a call that arrives without one.
//!
//! One knob for the whole call. Place the layer outermost among the routing layers (above the
//! fallback layer, or above the retry layer in a stack without one): every layer below reads the
//! deadline from the context and keeps it across retries and hops. The retry layer never sleeps
//! past it, the fallback layer starts no hop after it, the cooldown and pre-call layers cap their
//! waits by it, and the provider caps each attempt's timeout by it. A deadline the request
//! already carries (set by the caller or an outer layer) is kept.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), switchyard_layers::BoxError> {
//! use std::time::Duration;
//! use bytes::Bytes;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use switchyard_layers::{BoxError, RouteBody, RouteCtx, RouteRequest, deadline::DeadlineLayer};
//!
//! let provider = service_fn(|req: http::Request<Bytes>| async move {
//!     let deadline = req.route_ctx().and_then(|c| c.deadline);
//!     assert!(deadline.is_some(), "every layer below sees the call's deadline");
//!     Ok::<_, BoxError>(http::Response::new(RouteBody::empty()))
//! });
//! let stack = ServiceBuilder::new().layer(DeadlineLayer::new(Duration::from_secs(120))).service(provider);
//!
//! let mut req = http::Request::new(Bytes::new());
//! req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
//! stack.oneshot(req).await?;
//! # Ok(()) }
//! ```

use std::{
    task::{Context, Poll},
    time::Duration,
};

use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

use crate::RouteRequest;

/// Sets the call's deadline, `now + budget`, on requests whose [`RouteCtx`](crate::RouteCtx)
/// has none. See the [module docs](self).
///
/// [`DeadlineLayer::optional`] takes an `Option` so a stack built from a config keeps one type
/// whether a deadline is configured or not; without one the layer passes every request through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeadlineLayer {
    budget: Option<Duration>,
}

impl DeadlineLayer {
    /// A deadline `budget` after each call starts.
    pub const fn new(budget: Duration) -> Self {
        Self { budget: Some(budget) }
    }

    /// A deadline `budget` after each call starts, or none (a pass-through) when `budget` is `None`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use switchyard_layers::deadline::DeadlineLayer;
    ///
    /// assert_eq!(DeadlineLayer::optional(None).budget(), None);
    /// assert_eq!(DeadlineLayer::optional(Some(Duration::from_secs(9))).budget(), Some(Duration::from_secs(9)));
    /// ```
    pub const fn optional(budget: Option<Duration>) -> Self {
        Self { budget }
    }

    /// The time a call may take, when set.
    pub const fn budget(&self) -> Option<Duration> {
        self.budget
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Deadline::new(inner, self.budget)
    }
}

/// Sets the call's deadline on requests without one; see [`DeadlineLayer`].
#[derive(Clone, Debug)]
pub struct Deadline<S> {
    inner: S,
    budget: Option<Duration>,
}

crate::inner_accessors!(Deadline);

impl<S> Deadline<S> {
    /// Wraps `inner`, setting a deadline `budget` after each call starts (none when `None`).
    pub const fn new(inner: S, budget: Option<Duration>) -> Self {
        Self { inner, budget }
    }
}

impl<S, R> Service<R> for Deadline<S>
where
    S: Service<R>,
    R: RouteRequest,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: R) -> Self::Future {
        if let Some(budget) = self.budget
            && let Some(ctx) = req.route_ctx_mut()
            && ctx.deadline.is_none()
        {
            ctx.deadline = Some(Instant::now() + budget);
        }
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use tower::{ServiceExt, service_fn};

    use super::*;
    use crate::{BoxError, RouteCtx};

    #[test]
    fn layer_and_service_are_embeddable() {
        crate::assert_embeddable::<DeadlineLayer>();
        crate::assert_embeddable::<Deadline<tower::util::BoxCloneSyncService<http::Request<Bytes>, (), BoxError>>>();
    }

    fn seen_deadline() -> impl Service<http::Request<Bytes>, Response = Option<Instant>, Error = BoxError> + Clone {
        service_fn(|req: http::Request<Bytes>| async move { Ok(req.route_ctx().and_then(|c| c.deadline)) })
    }

    fn request(deadline: Option<Instant>) -> http::Request<Bytes> {
        let mut ctx = RouteCtx::new("gpt-4o");
        ctx.deadline = deadline;
        let mut req = http::Request::new(Bytes::new());
        req.extensions_mut().insert(ctx);
        req
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_without_a_deadline_gets_one() {
        let svc = DeadlineLayer::new(Duration::from_secs(10)).layer(seen_deadline());
        let start = Instant::now();
        let seen = svc.oneshot(request(None)).await.expect("answers");
        assert_eq!(seen, Some(start + Duration::from_secs(10)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_the_request_already_has_is_kept() {
        let own = Instant::now() + Duration::from_secs(3);
        let svc = DeadlineLayer::new(Duration::from_secs(10)).layer(seen_deadline());
        assert_eq!(svc.oneshot(request(Some(own))).await.expect("answers"), Some(own));
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_budget_the_layer_passes_requests_through() {
        let svc = DeadlineLayer::optional(None).layer(seen_deadline());
        assert_eq!(svc.oneshot(request(None)).await.expect("answers"), None);
    }
}
