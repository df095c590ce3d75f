use std::{
    fmt,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use futures_util::FutureExt;
use tokio::time::Instant;
use tower_service::Service;

use super::{
    AffinityHit, PreCallConfig, PreCallLayer, affinity, budget, capabilities, context, future::ResponseFuture, limits,
    order, parallel, params, region, tags,
};
use crate::{
    BoxError, Candidates, DeploymentId, Group, RequestFacts, ResponseId, RouteBody, RouteCtx, RouteError,
    RouteErrorKind, RouteRequest, Served, ctx::Endpoint,
};

/// Drops the candidates an attempt cannot use before the select layer picks; see
/// [`PreCallLayer`].
pub struct PreCall<S> {
    pub(crate) inner: S,
    pub(crate) shared: Arc<PreCallLayer>,
}

crate::inner_accessors!(PreCall);

impl<S: Clone> Clone for PreCall<S> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone(), shared: self.shared.clone() }
    }
}

impl<S: fmt::Debug> fmt::Debug for PreCall<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreCall").field("inner", &self.inner).field("layer", &self.shared).finish()
    }
}

impl<S, R> Service<R> for PreCall<S>
where
    R: RouteRequest,
    S: Service<R, Response = http::Response<RouteBody>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = http::Response<RouteBody>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut req: R) -> Self::Future {
        let Some(ctx) = req.route_ctx_mut() else {
            return ResponseFuture::failed(
                RouteError::new(RouteErrorKind::MissingContext, "request has no RouteCtx").into(),
            );
        };
        let facts_may_wait = facts_may_wait(&self.shared.config, ctx.facts());
        let list = match ctx.resolve_candidates(&self.shared.registry) {
            Ok(list) => list,
            Err(e) => return ResponseFuture::failed(e.into()),
        };
        if !facts_may_wait && !may_wait(&self.shared.config, list) {
            // Nothing the checks do should wait, so they finish on their first poll, here: the
            // ready inner service is called directly and the call needs no boxed future. Nothing
            // is left to do after the attempt either (no budget to account, no affinity to
            // remember). The same checks run below if one did wait after all: dropping them
            // mid-way leaves the candidates they kept so far, and they only remove.
            match check(&self.shared, ctx).now_or_never() {
                Some(Ok(_)) => return ResponseFuture::attempt(self.inner.call(req)),
                Some(Err(e)) => return ResponseFuture::failed(e),
                None => tracing::debug!("a pre-call check waited where none was expected; checking again"),
            }
        }
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let shared = self.shared.clone();
        ResponseFuture::boxed(Box::pin(async move {
            let ctx = req.route_ctx_mut().expect("checked above");
            let after = check(&shared, ctx).await?;
            let mut resp = inner.call(req).await.map_err(Into::into)?;
            after.served(&shared, &mut resp).await;
            Ok(resp)
        }))
    }
}

/// Whether a check may wait on `list` (a superset of the candidates the checks see, as they only
/// remove): a store read for limits or budgets, a token count, a wait for a parallel slot, or
/// affinity. Only then do the checks run in a boxed future.
fn may_wait(config: &PreCallConfig, list: &Candidates) -> bool {
    let declared = list.declared();
    config.affinity.is_some()
        || config.wait_for_parallel_slot.is_some()
        || declared.window
        || declared.rate_limit
        || budget::any_budget(&config.budgets, list, declared.own_budget)
}

/// Whether the request's own facts need the store: a conversation to find or remember, or a
/// prompt prefix to stick to.
fn facts_may_wait(config: &PreCallConfig, facts: &RequestFacts) -> bool {
    facts.previous_response.is_some()
        || facts.endpoint == Endpoint::Responses
        || (config.prompt_cache_affinity.is_some() && facts.prompt_prefix.is_some())
}

/// What the layer does once the attempt is served.
#[derive(Default)]
struct AfterCall {
    /// The candidates a budget applies to (the served one is among them): its spend is recorded
    /// when the body ends.
    budgeted: Candidates,
    /// The affinity keys to point at the serving deployment, each for its time.
    sticky: Vec<(String, Duration)>,
    /// The affinity that narrowed the candidates to one deployment, if any.
    hit: Option<AffinityHit>,
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

/// Runs every check on the attempt's candidates, in order, and records what the select layer
/// must reserve. The check that removes the last candidates names the error.
///
/// Cancel-safe: dropped before it completes, it puts back the candidates kept so far (a subset of
/// the resolved ones that every check keeps again), so the checks can run again on the same
/// context.
async fn check(shared: &PreCallLayer, ctx: &mut RouteCtx) -> Result<AfterCall, BoxError> {
    let config = &*shared.config;
    let list = std::mem::take(ctx.resolve_candidates(&shared.registry)?);
    let Some(group) = ctx.group.clone() else {
        ctx.candidates = Some(list);
        return Err(RouteError::new(RouteErrorKind::MissingContext, "candidates resolved without a group").into());
    };
    ctx.default_max_parallel_requests = config.default_max_parallel_requests;
    let mut held = Restore { ctx, list };
    let Restore { ctx, list } = &mut held;
    filter(shared, ctx, &group, list).await
}

/// The candidates being checked, put back into the context when the checks end or are dropped.
struct Restore<'a> {
    ctx: &'a mut RouteCtx,
    list: Candidates,
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        self.ctx.candidates = Some(std::mem::take(&mut self.list));
    }
}

async fn filter(
    shared: &PreCallLayer,
    ctx: &mut RouteCtx,
    group: &Group,
    list: &mut Candidates,
) -> Result<AfterCall, BoxError> {
    let config = &*shared.config;
    let mut after = AfterCall::default();
    if list.is_empty() {
        // Nothing to filter: the select layer reports the empty group.
        return Ok(after);
    }
    let facts = ctx.facts();

    // 1. Blocked deployments (the registry's candidates exclude them already; an outer layer's
    //    list may not).
    if list.declared().blocked {
        list.retain(|d| !d.blocked);
        if list.is_empty() {
            return Err(no_candidates(group, "every deployment is blocked"));
        }
    }

    // 2. Tags.
    if config.tags {
        tags::filter(list, &facts.tags, config.tag_match_any);
        if list.is_empty() {
            return Err(tags::not_allowed(group, &facts.tags));
        }
    }

    // 3. Region.
    if config.region
        && let Some(wanted) = facts.region.as_deref()
    {
        region::filter(list, wanted);
        if list.is_empty() {
            return Err(region::none_in(group, wanted));
        }
    }

    // 4. Capabilities: images need vision, tools need function calling (declared, else from the
    //    catalog); only deployments known not to have one are dropped.
    if config.capabilities {
        for need in capabilities::needs(facts) {
            capabilities::filter(list, group, need)?;
        }
    }

    // 4b. Params.
    if config.params && !facts.required_params.is_empty() {
        params::filter(list, &facts.required_params);
        if list.is_empty() {
            return Err(params::unsupported(group, &facts.required_params));
        }
    }

    // 5. Context window. The input-token count is made once per request, and only when a check
    //    needs it: a declared window here, or a TPM limit below.
    let declared = list.declared();
    let needs_window = config.context_window && declared.window;
    let tokens = if needs_window || declared.tpm {
        context::input_tokens(facts, context::tokenizer_for(list), config.offload_counting_above).await
    } else {
        facts.input_tokens.get().copied()
    };
    if needs_window && let Some(n) = tokens {
        let largest = context::filter(list, n);
        if list.is_empty() {
            return Err(context::exceeded(group, n, largest));
        }
    }
    let tokens = tokens.unwrap_or(0);

    // 6. RPM / TPM: one usage read; the select layer reserves one request and `tokens`.
    ctx.reserve_tokens = tokens;
    if list.declared().rate_limit {
        let full = limits::filter(&shared.store, list, tokens).await?;
        if list.is_empty() {
            return Err(limits::all_limited(&shared.store, group, &full, tokens).await?);
        }
    }

    // 7. Budgets: one spend read for the keys the candidates need; the served attempt's cost is
    //    added when its body ends.
    if budget::any_budget(&config.budgets, list, list.declared().own_budget) {
        let dropped = budget::filter(&shared.store, &config.budgets, list).await?;
        if list.is_empty() {
            return Err(budget::exceeded(group, &dropped));
        }
        after.budgeted = list.clone();
    }

    // 8. Parallel requests, per replica; the select layer takes the slot.
    let default = config.default_max_parallel_requests;
    if default.is_some() || list.declared().parallel {
        let full = parallel::filter(shared.store.local(), list, default);
        if list.is_empty() {
            let Some(max) = config.wait_for_parallel_slot else {
                return Err(parallel::all_full(group, None));
            };
            let until = Instant::now() + max;
            let until = ctx.deadline.map_or(until, |d| d.min(until));
            // While waiting the full ones stay the candidates: checks dropped here and run again
            // must find them, not an empty list.
            *list = full.clone().into();
            *list = parallel::wait_for_slot(shared.store.local(), full, default, until).await.into();
            if list.is_empty() {
                return Err(parallel::all_full(group, Some(max)));
            }
        }
    }

    // 9. Order tiers: a tier emptied by the checks above gives way to the next one.
    if config.order && list.declared().tiers {
        order::filter(list);
    }

    // 10. Affinity, after every check (order tiers included, so a session that failed over to a
    //     lower tier returns to the primary once it serves again).
    //  a. A continued conversation goes to the deployment that holds it, or nowhere: another
    //     deployment does not have it.
    let facts = ctx.facts();
    if let Some(response) = facts.previous_response.as_deref()
        && let Some(holder) = shared.store.affinity(&affinity::conversation_key(response)).await
    {
        match list.iter().find(|d| d.id == holder).cloned() {
            Some(d) => {
                *list = vec![d].into();
                after.hit = Some(AffinityHit::Conversation);
                return Ok(after);
            }
            None if config.conversation_fallback => ctx.drop_previous_response = true,
            None => return Err(conversation_unavailable(group, response, &holder)),
        }
    }
    //  b. Sticky sessions and keys, then a warm prompt cache: narrow to the sticky deployment
    //     when it is still a candidate, else leave the pick to the strategy.
    let mut narrowed = false;
    if let Some(a) = &config.affinity
        && let Some(key) = affinity::key(a, group, ctx.facts())
    {
        narrowed = affinity::narrow(&shared.store, &key, list).await;
        if narrowed {
            after.hit = Some(AffinityHit::Session);
        }
        after.sticky.push((key, a.ttl));
    }
    if let Some(ttl) = config.prompt_cache_affinity
        && let Some(digest) = &ctx.facts().prompt_prefix
    {
        let key = affinity::prefix_key(group, digest);
        if !narrowed && affinity::narrow(&shared.store, &key, list).await {
            after.hit = Some(AffinityHit::PromptCache);
        }
        after.sticky.push((key, ttl));
    }
    Ok(after)
}

/// The deployment holding the conversation a request continues cannot serve it now.
fn conversation_unavailable(group: &Group, response: &str, holder: &DeploymentId) -> BoxError {
    let response: String = response.chars().take(100).collect();
    RouteError::new(
        RouteErrorKind::ConversationUnavailable,
        format!(
            "response `{response}` is held by deployment `{holder}` of `{}`, which cannot serve now (not in this \
             group, cooling down, at a limit, or removed); another deployment would not have the conversation",
            group.name()
        ),
    )
    .with_group(group.name().clone())
    .into()
}

fn no_candidates(group: &Group, why: &str) -> BoxError {
    RouteError::new(RouteErrorKind::NoCandidates, format!("no deployment of `{}` can serve: {why}", group.name()))
        .with_group(group.name().clone())
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A check dropped while it waits (here for a parallel slot) puts the candidates back, and
    /// the checks run again on the same context give the answer they would have given.
    #[tokio::test(start_paused = true)]
    async fn checks_dropped_while_waiting_can_run_again() {
        let deployment = crate::Deployment::builder("g", "openai/m").id("a").max_parallel_requests(1).build();
        let registry =
            Arc::new(crate::Registry::with_deployments([deployment.expect("valid deployment")]).expect("one id"));
        let store = Arc::new(crate::StateStore::memory());
        let config = PreCallConfig::new().wait_for_parallel_slot(Some(Duration::from_secs(5)));
        let layer = PreCallLayer::new(registry, store.clone(), config);
        let busy = store.local().begin(&DeploymentId::from("a"));
        let mut ctx = RouteCtx::new("g");

        assert!(check(&layer, &mut ctx).now_or_never().is_none(), "waits for the slot");
        let kept: Vec<_> = ctx.candidates.as_ref().expect("put back").iter().map(|d| d.id.clone()).collect();
        assert_eq!(kept, [DeploymentId::from("a")]);

        drop(busy);
        check(&layer, &mut ctx).await.expect("served once the slot is free");
        assert_eq!(ctx.candidates.as_ref().expect("checked").len(), 1);
    }

    #[test]
    fn layer_and_service_are_embeddable() {
        crate::assert_embeddable::<PreCallLayer>();
        crate::assert_embeddable::<
            PreCall<tower::util::BoxCloneSyncService<http::Request<bytes::Bytes>, http::Response<RouteBody>, BoxError>>,
        >();
    }
}
