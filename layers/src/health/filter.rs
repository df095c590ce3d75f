//! [`Health`]: the per-attempt filter.

use std::sync::Arc;

use futures_util::FutureExt;
use tokio::time::Instant;

use super::{HealthConfig, HealthLayer};
use crate::{
    DeploymentId, RouteCtx, RouteRequest,
    future::LayerFuture,
    service::{Inner, Route, missing_context, take_ready},
    state::HealthRecord,
};

/// Drops the candidates a fresh health probe found unhealthy; see [`HealthLayer`].
#[derive(Clone, Debug)]
pub struct Health<S> {
    pub(crate) inner: S,
    pub(crate) layer: Arc<HealthLayer>,
}

crate::service::routing_service!(Health);

/// The response future of [`Health`]: the inner service's own, polled in place, unless the
/// store's health read had to wait (a custom backend), then boxed.
pub type ResponseFuture<F> = LayerFuture<F, ()>;

impl<S: Inner<R>, R: RouteRequest> Route<R> for Health<S> {
    type Future = ResponseFuture<S::Future>;

    fn route(&mut self, mut req: R) -> Self::Future {
        let layer = &self.layer;
        // Off, or nothing unhealthy anywhere (one load): nothing to filter.
        if !layer.config.enabled || !layer.store.may_have_unhealthy() {
            return LayerFuture::passthrough(self.inner.call(req));
        }
        let Some(ctx) = req.route_ctx_mut() else { return LayerFuture::failed(missing_context()) };
        if let Err(e) = ctx.resolve_candidates(&layer.registry) {
            return LayerFuture::failed(e.into());
        }
        let group = ctx.group.as_ref().expect("resolved with the candidates").name().clone();
        if !layer.config.filters(&group) {
            return LayerFuture::passthrough(self.inner.call(req));
        }
        let ids: Vec<DeploymentId> = ctx.candidates.as_ref().expect("resolved").iter().map(|d| d.id.clone()).collect();
        let mut read = layer.store.health(&ids);
        if let Some(records) = (&mut read).now_or_never() {
            drop(read);
            apply(ctx, &group, &ids, &records, &layer.config);
            return LayerFuture::passthrough(self.inner.call(req));
        }
        drop(read);
        let inner = take_ready(&mut self.inner);
        let layer = self.layer.clone();
        let mut inner = inner;
        LayerFuture::boxed(Box::pin(async move {
            let records = layer.store.health(&ids).await;
            if let Some(ctx) = req.route_ctx_mut() {
                apply(ctx, &group, &ids, &records, &layer.config);
            }
            futures_util::future::poll_fn(|cx| inner.poll_ready(cx)).await.map_err(Into::into)?;
            inner.call(req).await.map_err(Into::into)
        }))
    }
}

/// Drops the unhealthy candidates of `ids` (the candidates, in order), unless that drops them
/// all: then keeps them and notes the fail-open in the call's trail.
fn apply(
    ctx: &mut RouteCtx,
    group: &Arc<str>,
    ids: &[DeploymentId],
    records: &[Option<HealthRecord>],
    config: &HealthConfig,
) {
    let now = Instant::now();
    let unhealthy: Vec<&DeploymentId> = ids
        .iter()
        .zip(records)
        .filter(|(_, r)| r.as_ref().is_some_and(|r| !r.healthy && r.is_fresh(config.staleness, now)))
        .map(|(id, _)| id)
        .collect();
    if unhealthy.is_empty() {
        return;
    }
    if unhealthy.len() == ids.len() {
        // LiteLLM's safety net: a filter that would leave nothing routes to them all.
        tracing::warn!(
            target: "switchyard::health",
            group = %group,
            candidates = ids.len(),
            "every candidate is marked unhealthy by health checks: the health filter fails open"
        );
        metrics::counter!("switchyard_health_fail_open_total", "group" => group.to_string()).increment(1);
        ctx.note_health_fail_open(group.clone());
        return;
    }
    if let Some(candidates) = ctx.candidates.as_mut() {
        candidates.retain(|d| !unhealthy.contains(&&d.id));
    }
}
