use std::sync::Arc;

use super::{
    PreCallLayer, affinity, budget,
    checks::{AfterCall, Checks, Progress},
    future::ResponseFuture,
};
use crate::{
    ResponseId, RouteBody, RouteRequest, Served,
    ctx::Endpoint,
    service::{Inner, Route, missing_context, take_ready},
};

/// Drops the candidates an attempt cannot use before the select layer picks; see
/// [`PreCallLayer`].
#[derive(Clone, Debug)]
pub struct PreCall<S> {
    pub(crate) inner: S,
    pub(crate) layer: Arc<PreCallLayer>,
}

crate::service::routing_service!(PreCall);

impl<S: Inner<R>, R: RouteRequest> Route<R> for PreCall<S> {
    type Future = ResponseFuture<S::Future>;

    fn route(&mut self, mut req: R) -> Self::Future {
        let Some(ctx) = req.route_ctx_mut() else { return ResponseFuture::failed(missing_context()) };
        // A Responses answer names a conversation to remember once it is served.
        let responses = ctx.facts().endpoint == Endpoint::Responses;
        let mut checks = match Checks::begin(&self.layer, ctx) {
            Ok(checks) => checks,
            Err(e) => return ResponseFuture::failed(e),
        };
        match checks.run_now() {
            Err(e) => return ResponseFuture::failed(e),
            Ok(Progress::Done) if checks.nothing_after() && !responses => {
                // Every check ran here and nothing is left for after the attempt: the ready inner
                // service is called directly, with no boxed future.
                drop(checks);
                return ResponseFuture::passthrough(self.inner.call(req));
            }
            // A check must wait (the rest of the checks continue from it in the boxed future), or
            // the served attempt has bookkeeping that waits.
            Ok(_) => {}
        }
        let paused = checks.pause();
        let mut inner = take_ready(&mut self.inner);
        let shared = self.layer.clone();
        ResponseFuture::boxed(Box::pin(async move {
            let ctx = req.route_ctx_mut().ok_or_else(missing_context)?;
            let after = paused.continue_from(&shared, ctx).await?;
            let mut resp = inner.call(req).await.map_err(Into::into)?;
            after.served(&shared, &mut resp).await;
            Ok(resp)
        }))
    }
}

impl AfterCall {
    async fn served(self, shared: &PreCallLayer, resp: &mut http::Response<RouteBody>) {
        let Some(id) = resp.extensions().get::<Served>().map(|s| s.deployment.clone()) else { return };
        if let Some(hit) = self.hit {
            resp.extensions_mut().insert(hit);
        }
        if let Some(d) = self.budgeted.iter().find(|d| d.id == id).cloned() {
            budget::account(resp.body_mut(), shared.store.clone(), &shared.config.budgets, d);
        }
        for (key, ttl) in &self.sticky {
            affinity::remember(&shared.store, key, &id, *ttl).await;
        }
        // The deployment now holds this conversation: follow-ups naming it go there.
        if let Some(response) = resp.extensions().get::<ResponseId>() {
            let key = affinity::conversation_key(response.as_str());
            affinity::remember(&shared.store, &key, &id, shared.config.conversation_ttl).await;
        }
    }
}
