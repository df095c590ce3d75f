//! [`PreRoute`]: the service that asks the pre-router and moves the request to its group.

use std::{
    fmt,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll, ready},
};

use http::{HeaderName, HeaderValue};
use pin_project_lite::pin_project;
use tower_service::Service;

use super::{PreRouteInput, PreRouter, layer::Shared};
use crate::{RouteRequest, ctx::PreRouteDecision, logsafe::Escaped};

/// The response header naming the group a pre-router chose.
pub const ROUTED_MODEL_HEADER: HeaderName = HeaderName::from_static("x-switchyard-routed-model");

/// Routes requests for the pre-router's name to the group it chooses; see
/// [`PreRouteLayer`](super::PreRouteLayer).
pub struct PreRoute<S, P> {
    pub(super) inner: S,
    pub(super) shared: Arc<Shared<P>>,
}

crate::inner_accessors!(PreRoute, P);

impl<S: Clone, P> Clone for PreRoute<S, P> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone(), shared: self.shared.clone() }
    }
}

impl<S: fmt::Debug, P: fmt::Debug> fmt::Debug for PreRoute<S, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreRoute")
            .field("inner", &self.inner)
            .field("name", &self.shared.name)
            .field("router", &self.shared.router)
            .finish()
    }
}

impl<S, P, R, B> Service<R> for PreRoute<S, P>
where
    R: RouteRequest,
    S: Service<R, Response = http::Response<B>>,
    P: PreRouter,
{
    type Response = http::Response<B>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: R) -> Self::Future {
        let routed = req.route_ctx_mut().and_then(|ctx| {
            // Only a first hop asked for by this name and not routed yet: a fallback's copy, or a
            // request another pre-router already moved, is left alone.
            if !self.shared.router.answers_for(&self.shared.name, ctx.requested())
                || ctx.target() != ctx.requested()
                || ctx.pre_route().is_some()
            {
                return None;
            }
            let decision = self.shared.router.route(&PreRouteInput::new(ctx.requested(), ctx.facts()))?;
            record(ctx.requested(), &decision);
            ctx.pre_route_to(decision).then(|| ctx.pre_route().cloned()).flatten()
        });
        ResponseFuture { inner: self.inner.call(req), routed }
    }
}

/// The decision as a `tracing` event of the current span (the `call` span), and on that span.
fn record(name: &str, decision: &PreRouteDecision) {
    let span = tracing::Span::current();
    span.record("switchyard.routed_model", &*decision.target);
    tracing::info!(
        target: "switchyard::preroute",
        requested = %Escaped(name),
        routed_model = %Escaped(&*decision.target),
        reason = %decision.reason,
        tier = decision.tier.as_deref(),
        score = decision.score,
        signals = %Escaped(decision.signals.join("; ")),
        escalated = decision.escalated,
        "pre-routed"
    );
}

pin_project! {
    /// The response future of [`PreRoute`]: the inner future, then the routed group named in the
    /// response's [`ROUTED_MODEL_HEADER`] and the decision in its extensions
    /// (`Arc<PreRouteDecision>`).
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        routed: Option<Arc<PreRouteDecision>>,
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").field("routed", &self.routed.as_ref().map(|d| &d.target)).finish()
    }
}

impl<F, B, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<http::Response<B>, E>>,
{
    type Output = Result<http::Response<B>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut resp = ready!(this.inner.poll(cx))?;
        if let Some(decision) = this.routed.take() {
            // A group name that is not a valid header value is still routed, just not named.
            if let Ok(value) = HeaderValue::from_str(&decision.target) {
                resp.headers_mut().insert(ROUTED_MODEL_HEADER, value);
            }
            resp.extensions_mut().insert(decision);
        }
        Poll::Ready(Ok(resp))
    }
}
