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
use switchyard_layers::{
    BoxError, RouteBody, RouteCtx, RouteError, Served, continuation::Continued, ctx::PreRouteDecision,
    precall::AffinityHit, preroute::adaptive,
};
use switchyard_services::http_error;
use tokio::time::Instant;
use tower::{Layer, Service};

use super::{feedback::FeedbackLog, headers, metrics, metrics::litellm::LiteLlmMetrics, trail, ui::Dashboard};
use crate::{Router, cache::CacheHit};

/// Applies [`Observe`].
#[derive(Clone, Debug)]
pub(crate) struct ObserveLayer {
    dashboard: Arc<Dashboard>,
    litellm: Arc<LiteLlmMetrics>,
    /// Every answer carries the routing trail, asked for or not.
    trail_always: bool,
    /// The deployments (prices, limits) and the usage windows, for LiteLLM's cost and
    /// rate-limit headers.
    state: RoutingState,
}

/// What the LiteLLM cost and rate-limit headers read: the router, whose live registry (a reload
/// installs a new one) and store they look in.
#[derive(Clone, Debug)]
pub(crate) struct RoutingState {
    pub(crate) router: Router,
    /// Where adaptive pre-routers' decisions are remembered for feedback.
    pub(crate) feedback: Arc<FeedbackLog>,
}

impl ObserveLayer {
    pub(crate) fn new(
        dashboard: Arc<Dashboard>,
        litellm: Arc<LiteLlmMetrics>,
        trail_always: bool,
        state: RoutingState,
    ) -> Self {
        Self { dashboard, litellm, trail_always, state }
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
            state: self.state.clone(),
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
    state: RoutingState,
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
        // LiteLLM's call id is the request's id (set by the edge before this layer).
        let call_id = req.headers().get(headers::REQUEST_ID).cloned();
        let state = self.state.clone();
        let call = req.extensions().get::<RouteCtx>().map(RouteCtx::call_trail);
        let started = Instant::now();
        Box::pin(async move {
            let result = inner.call(req).await;
            let elapsed = started.elapsed();
            let pre_routed = call.as_ref().and_then(|c| c.pre_route().cloned());
            let fail_open = call.map(|c| c.health_fail_open()).unwrap_or_default();
            if let Some(decision) = &pre_routed {
                dashboard.record_pre_route(&requested, decision);
            }
            let result = result.map(|mut resp| {
                mark_fail_open(resp.headers_mut(), &fail_open);
                resp
            });
            match result {
                Ok(mut resp) => {
                    if let Some(served) = resp.extensions().get::<Served>().cloned() {
                        let overhead = elapsed.saturating_sub(served.upstream);
                        metrics::record_served(&served, overhead);
                        litellm.served(&requested, &served, elapsed, overhead, streaming);
                        dashboard.record_served(&served, streaming, resp.body_mut());
                        if let Some(continued) = resp.extensions().get::<Continued>().cloned() {
                            resp.body_mut().on_end(move |_| metrics::record_continuations(&continued));
                        }
                        headers::insert_routing_headers(resp.headers_mut(), &served, overhead);
                        if let Some(id) = call_id {
                            remember_for_feedback(&state, &id, &requested, pre_routed.as_deref());
                            resp.headers_mut().insert(headers::LITELLM_CALL_ID, id);
                        }
                        litellm_usage_headers(&state, &served, streaming, &mut resp).await;
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
                    } else if resp.extensions().get::<CacheHit>().is_some() {
                        // Answered by the response cache: no attempt was made.
                        if let Some(id) = call_id {
                            resp.headers_mut().insert(headers::LITELLM_CALL_ID, id);
                        }
                        if with_trail {
                            trail::insert(resp.headers_mut(), trail::CACHE_HIT);
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

/// LiteLLM's `x-litellm-response-cost` (a whole answer with a usage and a priced deployment) and
/// its router's `x-ratelimit-*` for the serving group (when a deployment of it declares `rpm` or
/// `tpm`: one usage read of the group's window). The window already holds this request and its
/// input-token estimate; a whole answer's completion tokens, added when its body ends, are taken
/// off here (LiteLLM takes off the request and its tokens, which its counters add only later).
async fn litellm_usage_headers(
    state: &RoutingState,
    served: &Served,
    streaming: bool,
    resp: &mut http::Response<RouteBody>,
) {
    let usage = resp.body().usage().filter(|_| !streaming);
    let registry = state.router.registry();
    if let Some(u) = usage
        && let Some(cost) =
            registry.deployment(&served.deployment).and_then(|d| d.cost(u.prompt_tokens, u.completion_tokens))
    {
        headers::insert_response_cost(resp.headers_mut(), cost);
    }
    let Ok(resolved) = registry.resolve(&served.group) else { return };
    let group = resolved.group.deployments();
    let rpm: Option<u64> = group.iter().filter_map(|d| d.rpm).reduce(u64::saturating_add);
    let tpm: Option<u64> = group.iter().filter_map(|d| d.tpm).reduce(u64::saturating_add);
    if rpm.is_none() && tpm.is_none() {
        return;
    }
    let ids: Vec<_> = group.iter().map(|d| d.id.clone()).collect();
    let (requests, tokens) = state
        .router
        .store()
        .usage(&ids)
        .await
        .into_iter()
        .fold((0u64, 0u64), |(r, t), u| (r.saturating_add(u.requests), t.saturating_add(u.tokens)));
    let pending = usage.map_or(0, |u| u.completion_tokens);
    let limits =
        headers::GroupLimits::new(rpm.map(|l| (l, requests)), tpm.map(|l| (l, tokens.saturating_add(pending))));
    headers::insert_group_limits(resp.headers_mut(), limits);
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

/// An adaptive pre-router's decision on an answered call, remembered by the call's request id
/// for `POST /router/feedback`.
fn remember_for_feedback(state: &RoutingState, id: &HeaderValue, requested: &str, decision: Option<&PreRouteDecision>) {
    if let (Some(decision), Ok(id)) = (decision.filter(|d| d.reason == adaptive::REASON), id.to_str()) {
        state.feedback.remember(id, requested, decision);
    }
}
