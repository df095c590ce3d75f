use std::{
    convert::Infallible,
    fmt,
    task::{Context, Poll},
};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::{HeaderMap, HeaderValue};
use http_body::Body;
use rand::{RngCore, rngs::SmallRng};
use switchyard_layers::{BoxError, RouteBody};
use tower_service::Service;

use super::{
    IngressLayer, REQUEST_ID_HEADER,
    read::{ReadConfig, endpoint_of, read_request},
};
use crate::http_error::{in_dialect, into_error_response};

/// Reads HTTP requests for a routing stack; see [`IngressLayer`] and the [module docs](super).
///
/// Never fails: every refusal and every error of the inner stack becomes an OpenAI-style answer
/// ([`http_error::error_response`](crate::http_error::error_response)), with the error kept in the answer's
/// extensions as an [`ErrorCause`](crate::http_error::ErrorCause).
pub struct Ingress<S> {
    inner: S,
    layer: IngressLayer,
    rng: SmallRng,
    /// The inner service failed its readiness check; the next call answers with this error.
    ready_error: Option<BoxError>,
}

switchyard_layers::inner_accessors!(Ingress);

impl<S: fmt::Debug> fmt::Debug for Ingress<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ingress").field("inner", &self.inner).field("layer", &self.layer).finish_non_exhaustive()
    }
}

impl<S: Clone> Clone for Ingress<S> {
    /// A clone draws its own request ids (a copied RNG would repeat its parent's) and starts
    /// without its parent's readiness failure.
    fn clone(&self) -> Self {
        Self::new(self.inner.clone(), self.layer.clone())
    }
}

impl<S> Ingress<S> {
    /// Wraps `inner` with the settings of `layer`.
    pub fn new(inner: S, layer: IngressLayer) -> Self {
        let rng = layer.seeds.rng();
        Self { inner, layer, rng, ready_error: None }
    }

    /// The request's one `x-request-id`: the client's first value when it is
    /// [acceptable](super::acceptable_request_id), else a fresh random one; every other value is
    /// removed, so exactly one goes further (upstream included).
    fn request_id(&mut self, headers: &mut HeaderMap) -> Option<HeaderValue> {
        let id = match headers.get(REQUEST_ID_HEADER).filter(|id| super::acceptable_request_id(id)) {
            Some(id) => id.clone(),
            None => HeaderValue::try_from(format!("{:016x}{:016x}", self.rng.next_u64(), self.rng.next_u64())).ok()?,
        };
        headers.insert(REQUEST_ID_HEADER, id.clone());
        Some(id)
    }
}

impl<S, B> Service<http::Request<B>> for Ingress<S>
where
    S: Service<http::Request<Bytes>, Response = http::Response<RouteBody>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<RouteBody>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        if self.ready_error.is_some() {
            return Poll::Ready(Ok(()));
        }
        // Backpressure passes through; a readiness failure cannot (this service never fails), so
        // the next call answers with it.
        if let Err(e) = std::task::ready!(self.inner.poll_ready(cx)) {
            self.ready_error = Some(e.into());
        }
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        let request_id = self.request_id(req.headers_mut());
        if let Some(err) = self.ready_error.take() {
            let resp = with_request_id(into_error_response(err), request_id);
            return Box::pin(std::future::ready(Ok(resp)));
        }
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let config = ReadConfig { max_body_bytes: self.layer.max_body_bytes, endpoint: self.layer.endpoint };
        // Errors are answered in the dialect of the endpoint the client called.
        let dialect = config.endpoint.or_else(|| endpoint_of(req.uri().path())).unwrap_or_default();
        Box::pin(async move {
            let answer = match read_request(req, config).await {
                Ok(req) => inner.call(req).await.map_err(Into::into),
                Err(e) => Err(e),
            };
            let resp = answer.unwrap_or_else(|e| in_dialect(into_error_response(e), dialect));
            Ok(with_request_id(resp, request_id))
        })
    }
}

/// Echoes the request id on the answer, unless the stack already set one.
fn with_request_id(mut resp: http::Response<RouteBody>, id: Option<HeaderValue>) -> http::Response<RouteBody> {
    if let Some(id) = id
        && !resp.headers().contains_key(REQUEST_ID_HEADER)
    {
        resp.headers_mut().insert(REQUEST_ID_HEADER, id);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_embeddable<T: Clone + Send + Sync + 'static>() {}
    fn assert_send_future<F: Future + Send + 'static>(_: &F) {}

    #[derive(Clone)]
    struct Stack;

    impl Service<http::Request<Bytes>> for Stack {
        type Response = http::Response<RouteBody>;
        type Error = BoxError;
        type Future = std::future::Ready<Result<Self::Response, BoxError>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: http::Request<Bytes>) -> Self::Future {
            std::future::ready(Ok(http::Response::new(RouteBody::empty())))
        }
    }

    #[test]
    fn layer_service_and_future_are_embeddable() {
        assert_embeddable::<IngressLayer>();
        assert_embeddable::<Ingress<Stack>>();
        let mut svc = Ingress::new(Stack, IngressLayer::default());
        let req = http::Request::new(http_body_util::Full::new(Bytes::new()));
        assert_send_future(&svc.call(req));
    }

    #[test]
    fn generated_request_ids_are_128_bit_hex_and_differ_per_clone() {
        let mut a = Ingress::new(Stack, IngressLayer::default());
        let mut b = a.clone();
        let (mut ha, mut hb) = (HeaderMap::new(), HeaderMap::new());
        let ida = a.request_id(&mut ha).expect("generated");
        let idb = b.request_id(&mut hb).expect("generated");
        assert_eq!(ida.len(), 32);
        assert!(ida.as_bytes().iter().all(u8::is_ascii_hexdigit));
        assert_ne!(ida, idb);
        assert_eq!(ha.get(REQUEST_ID_HEADER), Some(&ida));
    }
}
