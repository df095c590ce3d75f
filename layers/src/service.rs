//! What the services of the routing layers share: the bounds on the service they wrap, their
//! `Service` impl, and the refusal of a request without a context.

use crate::{BoxError, RouteBody, RouteError, RouteErrorKind};

/// A service a routing layer can wrap: it answers `R` with an `http::Response<RouteBody>`, and it
/// and its futures can move to another task.
pub trait Inner<R>:
    tower_service::Service<R, Response = http::Response<RouteBody>, Error: Into<BoxError>, Future: Send + 'static>
    + Clone
    + Send
    + 'static
{
}

impl<S, R> Inner<R> for S where
    S: tower_service::Service<R, Response = http::Response<RouteBody>, Error: Into<BoxError>, Future: Send + 'static>
        + Clone
        + Send
        + 'static
{
}

/// What a routing layer's service does with a request: its `Service::call`.
pub trait Route<R> {
    /// The response future.
    type Future: Future<Output = Result<http::Response<RouteBody>, BoxError>>;

    /// Routes `req` (the inner service is ready).
    fn route(&mut self, req: R) -> Self::Future;
}

/// `Service<R>` for the routing layer's service `$service<S>` (with its wrapped service in
/// `inner`) over any `S: Inner<R>`: `poll_ready` passes through (routing decisions are made per
/// request, in `call`), and `call` is the service's [`Route`]. With tower's accessors of the
/// wrapped service (`get_ref`, `get_mut`, `into_inner`).
macro_rules! routing_service {
    ($service:ident) => {
        $crate::inner_accessors!($service);

        impl<S, R> tower_service::Service<R> for $service<S>
        where
            R: $crate::RouteRequest,
            S: $crate::service::Inner<R>,
            Self: $crate::service::Route<R>,
        {
            type Response = http::Response<$crate::RouteBody>;
            type Error = $crate::BoxError;
            type Future = <Self as $crate::service::Route<R>>::Future;

            fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), $crate::BoxError>> {
                self.inner.poll_ready(cx).map_err(Into::into)
            }

            fn call(&mut self, req: R) -> Self::Future {
                $crate::service::Route::route(self, req)
            }
        }
    };
}

pub(crate) use routing_service;

/// Takes the ready inner service out of `inner` for a future to call later, leaving a clone in its
/// place (which awaits its own readiness before any call).
pub(crate) fn take_ready<S: Clone>(inner: &mut S) -> S {
    let clone = inner.clone();
    std::mem::replace(inner, clone)
}

/// The refusal of a request that carries no [`RouteCtx`](crate::RouteCtx).
pub(crate) fn missing_context() -> BoxError {
    RouteError::new(
        RouteErrorKind::MissingContext,
        "request has no RouteCtx; add the ingress layer or insert RouteCtx::new(model) into the request",
    )
    .into()
}

#[cfg(test)]
mod tests {
    use crate::{
        TestInner, assert_embeddable,
        cooldown::{Cooldown, CooldownLayer},
        fallback::{Fallback, FallbackLayer},
        precall::{PreCall, PreCallLayer},
        retry::{Retry, RetryLayer},
        select::{Select, SelectLayer},
    };

    #[test]
    fn layers_and_services_are_embeddable() {
        assert_embeddable::<FallbackLayer>();
        assert_embeddable::<Fallback<TestInner>>();
        assert_embeddable::<RetryLayer>();
        assert_embeddable::<Retry<TestInner>>();
        assert_embeddable::<CooldownLayer>();
        assert_embeddable::<Cooldown<TestInner>>();
        assert_embeddable::<PreCallLayer>();
        assert_embeddable::<PreCall<TestInner>>();
        assert_embeddable::<SelectLayer>();
        assert_embeddable::<Select<TestInner>>();
    }
}
