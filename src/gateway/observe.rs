//! The layer between the ingress and the routing stack: times each routed call, counts its
//! attempts, retries and overhead (ours and [LiteLLM's metric names](super::metrics::litellm)), feeds the dashboard's windows (attempts, errors, latency, TTFT
//! per deployment) and retry events, and turns the answer's [`Served`] into routing headers and,
//! when asked, the routing trail ([`trail`](super::trail)), on error answers too.

use std::{
    fmt,
    sync::Arc,
    task::{Context, Poll},
};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::HeaderValue;
use switchyard_layers::{BoxError, RouteBody, RouteCtx, RouteError, Served, precall::AffinityHit};
use switchyard_services::http_error;
use tokio::time::Instant;
use tower::{Layer, Service};

use super::{headers, metrics, metrics::litellm::LiteLlmMetrics, trail, ui::Dashboard};

/// Applies [`Observe`].
#[derive(Clone, Debug)]
pub(crate) struct ObserveLayer {
    dashboard: Arc<Dashboard>,
    litellm: Arc<LiteLlmMetrics>,
    /// Every answer carries the routing trail, asked for or not.
    trail_always: bool,
}

impl ObserveLayer {
    pub(crate) fn new(dashboard: Arc<Dashboard>, litellm: Arc<LiteLlmMetrics>, trail_always: bool) -> Self {
        Self { dashboard, litellm, trail_always }
    }
}

impl<S> Layer<S> for ObserveLayer {
    type Service = Observe<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Observe {
            inner,
            dashboard: self.dashboard.clone(),
            litellm: self.litellm.clone(),
            trail_always: self.trail_always,
        }
    }
}

/// Records what routing did for each call; see the [module docs](self).
#[derive(Clone)]
pub(crate) struct Observe<S> {
    inner: S,
    dashboard: Arc<Dashboard>,
    litellm: Arc<LiteLlmMetrics>,
    trail_always: bool,
}

impl<S> fmt::Debug for Observe<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observe").finish_non_exhaustive()
    }
}

impl<S> Service<http::Request<Bytes>> for Observe<S>
where
    S: Service<http::Request<Bytes>, Response = http::Response<RouteBody>, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<RouteBody>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Bytes>) -> Self::Future {
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let dashboard = self.dashboard.clone();
        let litellm = self.litellm.clone();
        let ctx = req.extensions().get::<RouteCtx>();
        let streaming = ctx.is_some_and(|ctx| ctx.facts().stream);
        let requested = ctx.map(|ctx| ctx.requested().to_owned()).unwrap_or_default();
        let with_trail = self.trail_always || trail::wanted(req.headers());
        let started = Instant::now();
        Box::pin(async move {
            let result = inner.call(req).await;
            let elapsed = started.elapsed();
            match result {
                Ok(mut resp) => {
                    if let Some(served) = resp.extensions().get::<Served>().cloned() {
                        let overhead = elapsed.saturating_sub(served.upstream);
                        metrics::record_served(&served, overhead);
                        litellm.served(&requested, &served, elapsed, overhead, streaming);
                        dashboard.record_served(&served, streaming, resp.body_mut());
                        headers::insert_routing_headers(resp.headers_mut(), &served, overhead);
                        let hit = resp.extensions().get::<AffinityHit>().copied();
                        if let Some(hit) = hit {
                            resp.headers_mut().insert(headers::AFFINITY, HeaderValue::from_static(hit.as_str()));
                            dashboard.record_affinity(&served.deployment);
                        }
                        if with_trail {
                            let mut value = trail::for_served(&served);
                            if let Some(hit) = hit {
                                value.push_str(" ~");
                                value.push_str(hit.as_str());
                            }
                            trail::insert(resp.headers_mut(), &value);
                        }
                    }
                    Ok(resp)
                }
                Err(err) => {
                    let route = RouteError::find(&*err);
                    if let Some(route) = route {
                        metrics::record_failed(route.trail());
                        litellm.failed(&requested, route.trail());
                        dashboard.record_failed(route.trail());
                    }
                    if !with_trail {
                        return Err(err);
                    }
                    // The answer the ingress would make of `err`, made here to carry the trail.
                    let value = route.map(|r| trail::for_trail(r.trail())).unwrap_or_default();
                    let mut resp = http_error::into_error_response(err);
                    trail::insert(resp.headers_mut(), &value);
                    Ok(resp)
                }
            }
        })
    }
}
