//! The carrier trait ([`RouteRequest`]) and the copy a layer keeps to replay a request.

use super::RouteCtx;

/// What a request carries: a [`RouteCtx`], and a way to be cloned for a retry.
///
/// Implemented for `http::Request<B>` (the context sits in the extensions) whenever the body is
/// `Clone` (buffer it once at the edge: `Bytes`, `Full<Bytes>`). Users with their own typed
/// request can implement it too; every Switchyard layer is generic over it.
pub trait RouteRequest: Send + 'static {
    /// The routing context, when the request has one.
    fn route_ctx(&self) -> Option<&RouteCtx>;
    /// The routing context, mutably.
    fn route_ctx_mut(&mut self) -> Option<&mut RouteCtx>;
    /// A copy for another attempt; `None` when the request cannot be replayed.
    fn try_clone_request(&self) -> Option<Self>
    where
        Self: Sized;

    /// A copy kept to replay the request later (retry and fallback keep one per call), with its
    /// routing context either inside the copy (`None` beside it, the default: a
    /// [`try_clone_request`](Self::try_clone_request)) or beside it, for a request type whose copy
    /// is cheaper without it; [`attach_route_ctx`](Self::attach_route_ctx) puts it back into each
    /// replay. `http::Request` keeps it beside when the context is its only extension, which spares
    /// copying (and dropping) the extensions map on every call.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use switchyard_layers::{RouteCtx, RouteRequest};
    ///
    /// let mut req = http::Request::new(Bytes::from_static(b"{}"));
    /// req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
    /// let (template, ctx) = req.try_clone_for_replay().unwrap();
    /// assert!(template.route_ctx().is_none(), "the copy has no extensions to copy again");
    /// let mut replay = template.try_clone_request().unwrap();
    /// replay.attach_route_ctx(ctx.unwrap());
    /// assert_eq!(replay.route_ctx().map(RouteCtx::requested), Some("gpt-4o"));
    /// ```
    fn try_clone_for_replay(&self) -> Option<(Self, Option<RouteCtx>)>
    where
        Self: Sized,
    {
        self.try_clone_request().map(|copy| (copy, None))
    }

    /// Makes `ctx` the request's routing context (replacing the one it has; the default can only
    /// replace, so a type that keeps the context beside its replay copy must override this).
    fn attach_route_ctx(&mut self, ctx: RouteCtx) {
        if let Some(current) = self.route_ctx_mut() {
            *current = ctx;
        }
    }
}

impl<B: Clone + Send + 'static> RouteRequest for http::Request<B> {
    fn route_ctx(&self) -> Option<&RouteCtx> {
        self.extensions().get::<RouteCtx>()
    }

    fn route_ctx_mut(&mut self) -> Option<&mut RouteCtx> {
        self.extensions_mut().get_mut::<RouteCtx>()
    }

    fn try_clone_request(&self) -> Option<Self> {
        Some(self.clone())
    }

    fn try_clone_for_replay(&self) -> Option<(Self, Option<RouteCtx>)> {
        let extensions = self.extensions();
        match extensions.get::<RouteCtx>() {
            Some(ctx) if extensions.len() == 1 => {
                let mut copy = http::Request::new(self.body().clone());
                *copy.method_mut() = self.method().clone();
                *copy.uri_mut() = self.uri().clone();
                *copy.version_mut() = self.version();
                *copy.headers_mut() = self.headers().clone();
                Some((copy, Some(ctx.clone())))
            }
            _ => Some((self.clone(), None)),
        }
    }

    fn attach_route_ctx(&mut self, ctx: RouteCtx) {
        self.extensions_mut().insert(ctx);
    }
}

/// A request kept to replay, as [`RouteRequest::try_clone_for_replay`] makes it: the copy, and its
/// routing context as it was when the copy was taken, when the copy does not carry it.
pub(crate) struct Replay<R> {
    template: R,
    ctx: Option<RouteCtx>,
}

impl<R: RouteRequest> Replay<R> {
    /// A replay of `req` as it is now; `None` when it cannot be replayed.
    pub(crate) fn of(req: &R) -> Option<Self> {
        req.try_clone_for_replay().map(|(template, ctx)| Self { template, ctx })
    }

    /// The routing context every replay starts from.
    pub(crate) fn route_ctx(&self) -> Option<&RouteCtx> {
        self.ctx.as_ref().or_else(|| self.template.route_ctx())
    }

    /// A fresh copy of the request, its context as it was; `None` when it cannot be copied.
    pub(crate) fn next(&self) -> Option<R> {
        let mut next = self.template.try_clone_request()?;
        if let Some(ctx) = &self.ctx {
            next.attach_route_ctx(ctx.clone());
        }
        Some(next)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::{Replay, RouteRequest};
    use crate::RouteCtx;

    fn request(extra: bool) -> http::Request<Bytes> {
        let mut req = http::Request::builder()
            .method("POST")
            .uri("/v1/chat/completions")
            .header("x-caller", "a")
            .body(Bytes::from_static(b"{}"))
            .unwrap();
        req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
        if extra {
            req.extensions_mut().insert(7u32);
        }
        req
    }

    /// Every replay is the request as it was when the copy was taken, its context and any other
    /// extension included, whatever the first attempt did to its own context.
    #[test]
    fn replays_are_the_request_as_it_was() {
        for extra in [false, true] {
            let mut req = request(extra);
            let replay = Replay::of(&req).unwrap();
            assert_eq!(replay.ctx.is_some(), !extra, "the context is kept beside only when it is alone");
            req.route_ctx_mut().unwrap().hop = 3;
            assert_eq!(replay.route_ctx().unwrap().hop, 0);
            for _ in 0..2 {
                let next = replay.next().unwrap();
                assert_eq!((next.method(), next.uri().path()), (req.method(), "/v1/chat/completions"));
                assert_eq!(next.headers()["x-caller"], "a");
                assert_eq!(next.body(), req.body());
                let ctx = next.route_ctx().expect("each replay carries a context");
                assert_eq!((ctx.requested(), ctx.hop), ("gpt-4o", 0));
                assert_eq!(next.extensions().get::<u32>().copied(), extra.then_some(7));
                assert_eq!(next.extensions().len(), 1 + usize::from(extra));
            }
        }
    }
}
