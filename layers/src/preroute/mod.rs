//! The pre-routing layer: a [`PreRouter`] picks the model group itself, before routing, for
//! requests that ask for its virtual name (`smart-router`).
//!
//! [`PreRouteLayer`] is the outermost routing layer, above the fallback layer. For a request
//! whose [`RouteCtx`](crate::RouteCtx) asks for the layer's name, it shows the pre-router the
//! request ([`PreRouteInput`]: the name, the facts, the conversation read from the body on
//! demand) and, when the router returns a [`PreRouteDecision`],
//! moves the request to the chosen group with
//! [`RouteCtx::pre_route_to`](crate::RouteCtx::pre_route_to). The layers below treat that group
//! exactly as if the client had asked for it (its fallback table, its retries, its aliases),
//! while [`RouteCtx::requested`](crate::RouteCtx::requested) keeps the name the client asked
//! for. The decision stays in the call's context for every layer below
//! ([`RouteCtx::pre_route`](crate::RouteCtx::pre_route)), is logged as a `pre-routed` event of
//! the current (`call`) span, and a successful response carries the group in its
//! `x-switchyard-routed-model` header ([`ROUTED_MODEL_HEADER`]) and the decision in its
//! extensions (`Arc<PreRouteDecision>`). Requests for other names pass through untouched, and a
//! router that returns `None` leaves the request as it is.
//!
//! [`complexity::ComplexityRouter`] is LiteLLM's rule-based complexity router. Write your own by
//! implementing [`PreRouter`] (or with a closure):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), switchyard_layers::BoxError> {
//! use bytes::Bytes;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use switchyard_layers::{
//!     BoxError, RequestFacts, RouteBody, RouteCtx, RouteRequest,
//!     ctx::PreRouteDecision,
//!     preroute::{PreRouteInput, PreRouteLayer, PreRouter},
//! };
//!
//! /// Streaming requests to the fast group, the rest to the big one.
//! struct ByStream;
//!
//! impl PreRouter for ByStream {
//!     fn route(&self, input: &PreRouteInput<'_>) -> Option<PreRouteDecision> {
//!         let target = if input.facts().stream { "fast" } else { "big" };
//!         Some(PreRouteDecision::new(target, "stream flag"))
//!     }
//! }
//!
//! let provider = service_fn(|req: http::Request<Bytes>| async move {
//!     let ctx = req.route_ctx().expect("a context");
//!     assert_eq!((ctx.requested(), ctx.target()), ("auto", "fast"));
//!     Ok::<_, BoxError>(http::Response::new(RouteBody::empty()))
//! });
//! let stack = ServiceBuilder::new().layer(PreRouteLayer::new("auto", ByStream)).service(provider);
//!
//! let mut req = http::Request::new(Bytes::new());
//! req.extensions_mut().insert(RouteCtx::with_facts("auto", RequestFacts::new().streaming(true)));
//! let resp = stack.oneshot(req).await?;
//! assert_eq!(resp.headers()["x-switchyard-routed-model"], "fast");
//! # Ok(()) }
//! ```

pub mod adaptive;
pub mod complexity;
mod input;
mod layer;
mod outcome;
pub mod quality;
mod service;
mod set;

use std::sync::Arc;

pub use input::{Conversation, PreRouteInput, Role, Turn};
pub use layer::PreRouteLayer;
pub use outcome::PreRouteOutcome;
pub use service::{PreRoute, ROUTED_MODEL_HEADER, ResponseFuture};
pub use set::PreRouters;

use crate::ctx::PreRouteDecision;

/// Chooses the model group of a request before routing; see the [module docs](self).
///
/// Synchronous and called once per call (not per retry or hop), on the request's task: keep it
/// quick (the complexity router takes a few microseconds) and do I/O elsewhere. Return `None` to
/// leave the request alone.
///
/// A closure `Fn(&PreRouteInput<'_>) -> Option<PreRouteDecision>` is a pre-router too:
///
/// ```
/// use switchyard_layers::{ctx::PreRouteDecision, preroute::{PreRouteInput, PreRouteLayer}};
///
/// let by_tag = |input: &PreRouteInput<'_>| {
///     input.facts().tags.iter().any(|t| t == "batch").then(|| PreRouteDecision::new("cheap", "tag batch"))
/// };
/// let layer = PreRouteLayer::new("auto", by_tag);
/// # let _ = layer;
/// ```
pub trait PreRouter: Send + Sync + 'static {
    /// The group for this request, or `None` to leave it as it is.
    fn route(&self, input: &PreRouteInput<'_>) -> Option<PreRouteDecision>;

    /// Whether requests for `requested` are this router's when its layer was given the name
    /// `name`: by default exactly the requests for that name. A [`PreRouters`] set answers for
    /// each of its own names instead.
    fn answers_for(&self, name: &str, requested: &str) -> bool {
        name == requested
    }

    /// The group this router would most likely choose for `input`, without side effects (no
    /// draw counted, nothing learned): what the gateway's `count_tokens` uses to count a virtual
    /// name's tokens for the model that would serve it. By default [`route`](Self::route).
    fn preview(&self, input: &PreRouteInput<'_>) -> Option<PreRouteDecision> {
        self.route(input)
    }

    /// Whether the router wants [`on_outcome`](Self::on_outcome) called (`false` by default: a
    /// router that learns nothing costs nothing when the call ends).
    fn wants_outcome(&self) -> bool {
        false
    }

    /// What became of a call this router routed: called once, when its answer or its error comes
    /// back through the pre-route layer (for a stream, at its first chunk; not when the caller
    /// gave up first). Synchronous, on the request's task: hand anything slow to a background
    /// task. The default does nothing.
    fn on_outcome(&self, outcome: &PreRouteOutcome<'_>) {
        let _ = outcome;
    }
}

impl<F> PreRouter for F
where
    F: Fn(&PreRouteInput<'_>) -> Option<PreRouteDecision> + Send + Sync + 'static,
{
    fn route(&self, input: &PreRouteInput<'_>) -> Option<PreRouteDecision> {
        self(input)
    }
}

impl<P: PreRouter + ?Sized> PreRouter for Arc<P> {
    fn route(&self, input: &PreRouteInput<'_>) -> Option<PreRouteDecision> {
        (**self).route(input)
    }

    fn answers_for(&self, name: &str, requested: &str) -> bool {
        (**self).answers_for(name, requested)
    }

    fn preview(&self, input: &PreRouteInput<'_>) -> Option<PreRouteDecision> {
        (**self).preview(input)
    }

    fn wants_outcome(&self) -> bool {
        (**self).wants_outcome()
    }

    fn on_outcome(&self, outcome: &PreRouteOutcome<'_>) {
        (**self).on_outcome(outcome)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use tower::{ServiceExt, service_fn};
    use tower_layer::Layer;

    use super::{complexity::ComplexityRouter, *};
    use crate::{BoxError, RouteBody, RouteCtx, RouteRequest};

    type Resp = http::Response<RouteBody>;

    #[test]
    fn layer_and_service_are_embeddable() {
        crate::assert_embeddable::<PreRouteLayer<ComplexityRouter>>();
        crate::assert_embeddable::<
            PreRoute<tower::util::BoxCloneSyncService<http::Request<Bytes>, Resp, BoxError>, ComplexityRouter>,
        >();
        fn send_static<T: Send + 'static>(_: &T) {}
        let svc = PreRouteLayer::new("auto", |_: &PreRouteInput<'_>| None)
            .layer(service_fn(|_: http::Request<Bytes>| async { Ok::<_, BoxError>(Resp::new(RouteBody::empty())) }));
        send_static(&svc.oneshot(http::Request::new(Bytes::new())));
    }

    fn to(target: &'static str) -> impl Fn(&PreRouteInput<'_>) -> Option<PreRouteDecision> + Send + Sync + 'static {
        move |_: &PreRouteInput<'_>| Some(PreRouteDecision::new(target, "test"))
    }

    fn seen() -> impl tower::Service<http::Request<Bytes>, Response = Resp, Error = BoxError, Future: Send> + Clone {
        service_fn(|req: http::Request<Bytes>| async move {
            let ctx = req.route_ctx().expect("a context");
            let mut resp = Resp::new(RouteBody::empty());
            resp.extensions_mut().insert(ctx.target().to_owned());
            Ok(resp)
        })
    }

    fn request(model: &str) -> http::Request<Bytes> {
        let mut req = http::Request::new(Bytes::new());
        req.extensions_mut().insert(RouteCtx::new(model));
        req
    }

    #[tokio::test]
    async fn only_the_routers_own_name_is_routed() {
        let svc = PreRouteLayer::new("auto", to("gpt-4o")).layer(seen());
        let resp = svc.clone().oneshot(request("auto")).await.expect("answers");
        assert_eq!(resp.extensions().get::<String>().map(String::as_str), Some("gpt-4o"));
        assert_eq!(resp.headers()[ROUTED_MODEL_HEADER], "gpt-4o");
        let decision = resp.extensions().get::<Arc<PreRouteDecision>>().expect("the decision");
        assert_eq!(&*decision.reason, "test");

        let resp = svc.oneshot(request("claude")).await.expect("answers");
        assert_eq!(resp.extensions().get::<String>().map(String::as_str), Some("claude"));
        assert!(resp.headers().get(ROUTED_MODEL_HEADER).is_none());
    }

    #[tokio::test]
    async fn a_router_that_declines_leaves_the_request_alone() {
        let svc = PreRouteLayer::new("auto", |_: &PreRouteInput<'_>| None).layer(seen());
        let resp = svc.oneshot(request("auto")).await.expect("answers");
        assert_eq!(resp.extensions().get::<String>().map(String::as_str), Some("auto"));
        assert!(resp.headers().get(ROUTED_MODEL_HEADER).is_none());
    }

    #[tokio::test]
    async fn a_request_already_pre_routed_is_not_routed_again() {
        let inner = PreRouteLayer::new("auto", to("second")).layer(seen());
        let svc = PreRouteLayer::new("auto", to("first")).layer(inner);
        let resp = svc.oneshot(request("auto")).await.expect("answers");
        assert_eq!(resp.extensions().get::<String>().map(String::as_str), Some("first"));
    }

    #[tokio::test]
    async fn a_request_without_a_context_passes_through() {
        let svc = PreRouteLayer::new("auto", to("gpt-4o"))
            .layer(service_fn(|_: http::Request<Bytes>| async { Ok::<_, BoxError>(Resp::new(RouteBody::empty())) }));
        let resp = svc.oneshot(http::Request::new(Bytes::new())).await.expect("answers");
        assert!(resp.headers().get(ROUTED_MODEL_HEADER).is_none());
    }
}
