//! [`CallSpanLayer`]: the `call` span, one per routed call, around the whole routing stack, so
//! that every way into the stack (an HTTP gateway, an in-process API, your own pipeline) traces
//! alike.
//!
//! The span is named after the OpenTelemetry GenAI conventions (`otel.name` = `chat gpt-4o`) and
//! carries the model requested (and, once a pre-router chose one, `switchyard.routed_model`, the
//! group it chose); when the answer is known it gets the group, deployment and
//! provider model that served, the attempts and fallback hops, and the outcome; the token usage is
//! recorded when the body ends (for a stream, its end), and the span lasts until then. Each
//! attempt is an `attempt` span below it (the select layer's); fallback hops and cooldowns are
//! events of this span (the fallback and cooldown layers log them while it is current).
//!
//! Without a subscriber that wants the span, the layer costs one disabled-span check per call:
//! no field is computed and nothing is attached to the body. Place it outermost, above the
//! [`DeadlineLayer`](crate::deadline::DeadlineLayer); a request without a
//! [`RouteCtx`] passes through without a span.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), switchyard_layers::BoxError> {
//! use bytes::Bytes;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use switchyard_layers::{BoxError, RouteBody, RouteCtx, span::CallSpanLayer};
//!
//! let provider = service_fn(|_req: http::Request<Bytes>| async {
//!     // Inside the call span: the layers below log their decisions as its events.
//!     Ok::<_, BoxError>(http::Response::new(RouteBody::from("hi")))
//! });
//! let stack = ServiceBuilder::new().layer(CallSpanLayer::new()).service(provider);
//!
//! let mut req = http::Request::new(Bytes::new());
//! req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
//! stack.oneshot(req).await?;
//! # Ok(()) }
//! ```

use std::{
    fmt,
    pin::Pin,
    task::{Context, Poll, ready},
};

use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;
use tracing::{Instrument, Span, field, instrument::Instrumented};

use crate::{
    BoxError, RouteBody, RouteCtx, RouteError, RouteRequest, Served,
    body::{BodyEnd, BodyEndKind},
    logsafe::Escaped,
    semconv::{operation, provider_and_model},
};

type Response = http::Response<RouteBody>;

/// Applies [`CallSpan`]; see the [module docs](self).
#[derive(Clone, Copy, Debug, Default)]
pub struct CallSpanLayer {
    _private: (),
}

impl CallSpanLayer {
    /// The layer.
    pub const fn new() -> Self {
        Self { _private: () }
    }
}

impl<S> Layer<S> for CallSpanLayer {
    type Service = CallSpan<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CallSpan::new(inner)
    }
}

/// Runs each call inside its `call` span; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct CallSpan<S> {
    inner: S,
}

crate::inner_accessors!(CallSpan);

impl<S> CallSpan<S> {
    /// Wraps `inner`.
    pub const fn new(inner: S) -> Self {
        Self { inner }
    }
}

impl<S, R> Service<R> for CallSpan<S>
where
    R: RouteRequest,
    S: Service<R, Response = Response, Error = BoxError>,
{
    type Response = Response;
    type Error = BoxError;
    type Future = CallFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        let span = req.route_ctx().map_or_else(Span::none, call_span);
        let fut = span.in_scope(|| self.inner.call(req));
        CallFuture { fut: fut.instrument(span) }
    }
}

fn call_span(ctx: &RouteCtx) -> Span {
    let op = operation(ctx.facts().endpoint);
    tracing::info_span!(
        "call",
        otel.name = %format_args!("{op} {}", Escaped(ctx.requested())),
        otel.kind = "internal",
        otel.status_code = field::Empty,
        gen_ai.operation.name = op,
        gen_ai.request.model = ctx.requested(),
        gen_ai.response.model = field::Empty,
        gen_ai.provider.name = field::Empty,
        gen_ai.usage.input_tokens = field::Empty,
        gen_ai.usage.output_tokens = field::Empty,
        switchyard.stream = ctx.facts().stream,
        switchyard.routed_model = field::Empty,
        switchyard.group = field::Empty,
        switchyard.deployment.id = field::Empty,
        switchyard.attempts = field::Empty,
        switchyard.fallback.hops = field::Empty,
        switchyard.outcome = field::Empty,
        error.type = field::Empty,
    )
}

pin_project! {
    /// The response future of [`CallSpan`]: the stack's future inside the call span, then the
    /// answer's facts recorded on the span.
    pub struct CallFuture<F> {
        #[pin]
        fut: Instrumented<F>,
    }
}

impl<F> fmt::Debug for CallFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallFuture").finish_non_exhaustive()
    }
}

impl<F> Future for CallFuture<F>
where
    F: Future<Output = Result<Response, BoxError>>,
{
    type Output = Result<Response, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut fut = self.project().fut;
        let result = ready!(fut.as_mut().poll(cx));
        let span = fut.as_ref().get_ref().span();
        if span.is_disabled() {
            return Poll::Ready(result);
        }
        Poll::Ready(match result {
            Ok(resp) => Ok(record_answer(span, resp)),
            Err(err) => {
                record_error(span, &err);
                Err(err)
            }
        })
    }
}

fn record_answer(span: &Span, mut resp: Response) -> Response {
    if let Some(served) = resp.extensions().get::<Served>() {
        let (provider, model) = provider_and_model(&served.model);
        span.record("gen_ai.response.model", model);
        span.record("gen_ai.provider.name", provider);
        span.record("switchyard.group", &*served.group);
        span.record("switchyard.deployment.id", served.deployment.as_str());
        span.record("switchyard.attempts", served.attempts);
        span.record("switchyard.fallback.hops", served.hops);
    }
    span.record("switchyard.outcome", "success");
    // The call lasts until its body ends: the usage of a stream is known only then, and a stream
    // that breaks after its first chunk fails the call after all.
    let span = span.clone();
    resp.body_mut().on_end(move |end| record_end(&span, end));
    resp
}

fn record_end(span: &Span, end: &BodyEnd) {
    if let Some(usage) = end.usage {
        span.record("gen_ai.usage.input_tokens", usage.prompt_tokens);
        span.record("gen_ai.usage.output_tokens", usage.completion_tokens);
    }
    // Read to the end, or given up by the caller: neither is the call's failure.
    if let BodyEndKind::Failed(outcome) = end.kind {
        span.record("otel.status_code", "error");
        span.record("switchyard.outcome", outcome.as_str());
        span.record("error.type", outcome.as_str());
    }
}

fn record_error(span: &Span, err: &BoxError) {
    span.record("otel.status_code", "error");
    let Some(route) = RouteError::find(&**err) else {
        span.record("error.type", "_OTHER");
        return;
    };
    // The outcome class for an upstream's failure, else our refusal's kind (`all_cooling_down`).
    let class = route.outcome().map_or(route.kind().as_str(), |o| o.as_str());
    span.record("switchyard.outcome", class);
    span.record("error.type", class);
    if let Some(group) = route.group() {
        span.record("switchyard.group", &**group);
    }
    if let Some(id) = route.deployment() {
        span.record("switchyard.deployment.id", id.as_str());
    }
    span.record("switchyard.attempts", route.trail().len());
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[test]
    fn layer_and_service_are_embeddable() {
        crate::assert_embeddable::<CallSpanLayer>();
        crate::assert_embeddable::<CallSpan<tower::util::BoxCloneSyncService<http::Request<Bytes>, (), BoxError>>>();
    }
}
