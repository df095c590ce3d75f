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

use super::{PreRouteInput, PreRouteOutcome, PreRouter, layer::Shared};
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
    S::Error: 'static,
    P: PreRouter,
{
    type Response = http::Response<B>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, P>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: R) -> Self::Future {
        let wants_outcome = self.shared.router.wants_outcome();
        let mut requested: Option<Arc<str>> = None;
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
            if wants_outcome {
                requested = Some(ctx.requested().into());
            }
            ctx.pre_route_to(decision).then(|| ctx.pre_route().cloned()).flatten()
        });
        // The router sees the call's end only when it asks to (one `Arc` clone per routed call).
        let report = requested.filter(|_| routed.is_some()).map(|name| (self.shared.clone(), name));
        ResponseFuture { inner: self.inner.call(req), routed, report }
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
    /// (`Arc<PreRouteDecision>`), and the call's end reported to the pre-router
    /// ([`PreRouter::on_outcome`]) when it asks for it. A future dropped before its answer
    /// reports nothing.
    pub struct ResponseFuture<F, P> {
        #[pin]
        inner: F,
        routed: Option<Arc<PreRouteDecision>>,
        report: Option<(Arc<Shared<P>>, Arc<str>)>,
    }
}

impl<F, P> fmt::Debug for ResponseFuture<F, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").field("routed", &self.routed.as_ref().map(|d| &d.target)).finish()
    }
}

impl<F, B, E, P> Future for ResponseFuture<F, P>
where
    F: Future<Output = Result<http::Response<B>, E>>,
    E: 'static,
    P: PreRouter,
{
    type Output = Result<http::Response<B>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = ready!(this.inner.poll(cx));
        if let (Some((shared, name)), Some(decision)) = (this.report.take(), this.routed.as_deref()) {
            let outcome = match &result {
                Ok(resp) => PreRouteOutcome::served(&name, decision, resp.extensions().get::<crate::Served>()),
                Err(e) => PreRouteOutcome::from_error(&name, decision, e),
            };
            shared.router.on_outcome(&outcome);
        }
        let mut resp = result?;
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
