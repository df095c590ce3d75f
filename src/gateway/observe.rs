//! The layer between the ingress and the routing stack: times each routed call, counts its
//! attempts, retries and overhead, feeds the dashboard's windows (attempts, errors, latency, TTFT
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

use super::{headers, metrics, trail, ui::Dashboard};

/// Applies [`Observe`].
#[derive(Clone, Debug)]
pub(crate) struct ObserveLayer {
    dashboard: Arc<Dashboard>,
    /// Every answer carries the routing trail, asked for or not.
    trail_always: bool,
}

impl ObserveLayer {
    pub(crate) fn new(dashboard: Arc<Dashboard>, trail_always: bool) -> Self {
        Self { dashboard, trail_always }
    }
}

impl<S> Layer<S> for ObserveLayer {
    type Service = Observe<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Observe { inner, dashboard: self.dashboard.clone(), trail_always: self.trail_always }
    }
}

/// Records what routing did for each call; see the [module docs](self).
#[derive(Clone)]
pub(crate) struct Observe<S> {
    inner: S,
    dashboard: Arc<Dashboard>,
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
        let streaming = req.extensions().get::<RouteCtx>().is_some_and(|ctx| ctx.facts().stream);
        let with_trail = self.trail_always || trail::wanted(req.headers());
        let call = req.extensions().get::<RouteCtx>().map(RouteCtx::call_trail);
        let started = Instant::now();
        Box::pin(async move {
            let result = inner.call(req).await;
            let elapsed = started.elapsed();
            let fail_open = call.map(|c| c.health_fail_open()).unwrap_or_default();
            let result = result.map(|mut resp| {
                mark_fail_open(resp.headers_mut(), &fail_open);
                resp
            });
            match result {
                Ok(mut resp) => {
                    if let Some(served) = resp.extensions().get::<Served>().cloned() {
                        let overhead = elapsed.saturating_sub(served.upstream);
                        metrics::record_served(&served, overhead);
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
                            trail::append_fail_open(&mut value, &fail_open);
                            trail::insert(resp.headers_mut(), &value);
                        }
                    }
                    Ok(resp)
                }
                Err(err) => {
                    let route = RouteError::find(&*err);
                    if let Some(route) = route {
                        metrics::record_failed(route.trail());
                        dashboard.record_failed(route.trail());
                    }
                    if !with_trail {
                        return Err(err);
                    }
                    // The answer the ingress would make of `err`, made here to carry the trail.
                    let mut value = route.map(|r| trail::for_trail(r.trail())).unwrap_or_default();
                    trail::append_fail_open(&mut value, &fail_open);
                    let mut resp = http_error::into_error_response(err);
                    trail::insert(resp.headers_mut(), &value);
                    mark_fail_open(resp.headers_mut(), &fail_open);
                    Ok(resp)
                }
            }
        })
    }
}

/// Names the groups whose health filter failed open, so a client sees that it was served by a
/// deployment the health checks consider unhealthy.
fn mark_fail_open(headers: &mut http::HeaderMap, groups: &[Arc<str>]) {
    if groups.is_empty() {
        return;
    }
    let value = groups.iter().map(|g| &**g).collect::<Vec<_>>().join(",");
    if let Ok(v) = HeaderValue::from_str(&value) {
        headers.insert(headers::HEALTH_FAIL_OPEN, v);
    }
}
