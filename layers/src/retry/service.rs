use std::{collections::BTreeMap, fmt, future::poll_fn, sync::Arc, time::Duration};

use rand::{Rng, RngCore, SeedableRng, rngs::SmallRng};
use tokio::time::{Instant, sleep};
use tower_service::Service;

use super::{
    RetryLayer, RetryPolicy,
    future::ResponseFuture,
    layer::RetrySetup,
    policy::{self, FallbackPresence, NoRetry},
};
use crate::{
    BoxError, CallTrail, Deployment, DeploymentId, Group, Outcome, RouteBody, RouteCtx, RouteError, RouteErrorKind,
    RouteRequest, Served,
    ctx::Replay,
    fallback_tables::{FallbackHint, entry},
    future::{Next, Then},
    logsafe::Escaped,
    service::{Inner, Route, take_ready},
    spare::Spare,
};

/// Retries failed attempts within the request's model group; see [`RetryLayer`].
///
/// Each attempt sends a clone of the request (so lower layers start from the caller's context),
/// with the deployments that already failed excluded and the candidates left for the lower layers
/// to resolve again. After a failure the should-retry table, the retry count for the error's class,
/// the call's deadline and the retry budget decide whether there is another attempt, and the
/// backoff how long to wait for it. The call's deadline and the fallback layer's tables come
/// from the context ([`RouteCtx::deadline`], [`RouteCtx::fallback_hint`]).
///
/// The first attempt goes to the ready service. The retries go to a clone of the spare the
/// service keeps (a clone of the inner service made when the layer wrapped it, shared by the
/// service's clones), so a call that succeeds at once clones no service; a service changed
/// through [`get_mut`](Self::get_mut) after wrapping serves first attempts only.
pub struct Retry<S> {
    inner: S,
    spare: Arc<Spare<RetryLayer, S>>,
    /// Seeded on first use: most clones (made per request by hosts such as axum) never draw.
    rng: Option<SmallRng>,
}

impl<S: fmt::Debug> fmt::Debug for Retry<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retry").field("inner", &self.inner).field("layer", &self.spare.layer).finish()
    }
}

impl<S: Clone> Clone for Retry<S> {
    /// A clone draws its own jitter sequence (a copied RNG would repeat its parent's).
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone(), spare: self.spare.clone(), rng: None }
    }
}

impl<S: Clone> Retry<S> {
    pub(crate) fn new(inner: S, layer: RetryLayer) -> Self {
        Self { spare: Spare::new(layer, &inner), inner, rng: None }
    }
}

crate::service::routing_service!(Retry);

impl<S: Inner<R>, R: RouteRequest> Route<R> for Retry<S> {
    type Future = ResponseFuture<S, R>;

    fn route(&mut self, req: R) -> Self::Future {
        let shared = &self.spare.layer.shared;
        let seeds = &self.spare.layer.seeds;
        let seed = self.rng.get_or_insert_with(|| seeds.rng()).next_u64();
        if let Some(budget) = &shared.config.budget {
            budget.deposit();
        }
        let Some(ctx) = req.route_ctx() else {
            // Nothing to route by; the lower layers report the missing context.
            return ResponseFuture::in_place(self.inner.call(req), None);
        };
        // LiteLLM's `mock_testing_rate_limit_error`: the group's first attempt is a rate-limit
        // error no deployment made, and the retries (real attempts) follow as after any 429.
        let mock = ctx.facts().mock.rate_limit_error.then(|| mock_rate_limit(ctx.target_name()));
        // The replay copy stays pristine as the template of every retry; the first attempt is
        // the request itself.
        let Some(replay) = Replay::of(&req) else {
            if let Some(err) = mock {
                return ResponseFuture::failed(err.into());
            }
            // Not replayable: one attempt with the original.
            let shared = shared.clone();
            let mut inner = take_ready(&mut self.inner);
            return ResponseFuture::boxed(Box::pin(async move {
                let session = Session::new(&shared, req.route_ctx().expect("checked above"), seed);
                inner.call(req).await.map_err(|e| session.give_up(e.into(), NoRetry::NotReplayable))
            }));
        };
        if let Some(err) = mock {
            let spare = self.spare.clone();
            return ResponseFuture::boxed(Box::pin(retry_in_group(spare, seed, replay, err.into())));
        }
        // The first attempt goes to the ready service at once; the retries to clones of the spare.
        let fut = self.inner.call(req);
        ResponseFuture::in_place(fut, Some(Retries { spare: self.spare.clone(), seed, replay: Box::new(replay) }))
    }
}

/// The error of a `mock_testing_rate_limit_error` first attempt (LiteLLM's message).
fn mock_rate_limit(target: &str) -> RouteError {
    RouteError::new(
        RouteErrorKind::Upstream,
        format!("This is a mock exception for model={target}, to trigger a rate limit error."),
    )
    .with_outcome(Outcome::RateLimited)
}

/// What the retries of a call need once its first attempt failed: the service, the layer's
/// settings, the jitter seed and the pristine request.
#[allow(missing_debug_implementations)] // named only in the type of the layer's response future
pub struct Retries<S, R> {
    spare: Arc<Spare<RetryLayer, S>>,
    seed: u64,
    replay: Box<Replay<R>>,
}

/// After the first attempt: its answer, or the retries after its failure.
impl<S: Inner<R>, R: RouteRequest> Then<S::Future> for Retries<S, R> {
    fn then(self, result: Result<http::Response<RouteBody>, BoxError>, _: &S::Future) -> Next {
        match result {
            Ok(mut resp) => {
                if let Some(served) = resp.extensions_mut().get_mut::<Served>() {
                    served.retries = 0;
                }
                Next::Done(Ok(resp))
            }
            Err(e) => Next::Continue(Box::pin(retry_in_group(self.spare, self.seed, *self.replay, e))),
        }
    }
}

/// The retries after a failed first attempt, until one succeeds or a rule stops.
async fn retry_in_group<S, R>(
    spare: Arc<Spare<RetryLayer, S>>,
    seed: u64,
    replay: Replay<R>,
    mut err: BoxError,
) -> Result<http::Response<RouteBody>, BoxError>
where
    R: RouteRequest,
    S: Service<R, Response = http::Response<RouteBody>> + Clone,
    S::Error: Into<BoxError>,
{
    let shared = &*spare.layer.shared;
    // Built at the first failure: the replay is pristine, so it sees the context the call started
    // with.
    let mut session = Session::new(shared, replay.route_ctx().expect("checked by the service"), seed);
    // The service for the retries, cloned from the spare at the first retry.
    let mut inner: Option<S> = None;
    // Retries made in the group, and those counted against the retry count of the current order
    // tier (a move to the next tier starts a fresh count and is not a retry).
    let mut retries = 0u32;
    let mut tier_retries = 0u32;
    let mut max_retries = 0u32;
    let last = loop {
        let next_attempt = match session.after_failure(&err, tier_retries).await {
            Ok(next) => next,
            Err(reason) => break session.give_up(err, reason),
        };
        let Some(mut next) = replay.next() else {
            break session.give_up(err, NoRetry::NotReplayable);
        };
        let wait = match next_attempt {
            NextAttempt::Retry { wait, max } => {
                if !session.withdraw() {
                    break session.give_up(err, NoRetry::Budget);
                }
                retries += 1;
                tier_retries += 1;
                max_retries = max;
                wait
            }
            NextAttempt::NextTier => {
                tier_retries = 0;
                Duration::ZERO
            }
        };
        session.prepare(&mut next);
        tracing::debug!(
            target: "switchyard::retry",
            group = %Escaped(&session.target),
            retry = retries,
            next_tier = matches!(next_attempt, NextAttempt::NextTier),
            wait_ms = wait.as_millis() as u64,
            error = %Escaped(&err),
            "retrying",
        );
        drop(err);
        if !wait.is_zero() {
            sleep(wait).await;
        }
        // Only the first call may use the readiness `poll_ready` gave; every retry waits for its own.
        let inner = inner.get_or_insert_with(|| spare.service());
        if let Err(e) = poll_fn(|cx| inner.poll_ready(cx)).await {
            break session.give_up(e.into(), NoRetry::NotReady);
        }
        err = match inner.call(next).await {
            Ok(mut resp) => {
                if let Some(served) = resp.extensions_mut().get_mut::<Served>() {
                    served.retries = retries;
                    served.max_retries = (retries > 0).then_some(max_retries);
                }
                return Ok(resp);
            }
            Err(e) => e.into(),
        };
    };
    Err(last)
}

/// What comes after a failed attempt that is not the last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NextAttempt {
    /// A retry, after `wait`, counted against the retry count `max` in effect.
    Retry { wait: Duration, max: u32 },
    /// At once, on the next `order` tier of the group: not a retry (LiteLLM's order-based
    /// fallback, inside the group).
    NextTier,
}

/// The order tier of `d`: its `order`; deployments without one come after every ordered one (the
/// pre-call layer's order filter ranks them so).
fn tier(d: &Deployment) -> u64 {
    d.order.map_or(u64::MAX, u64::from)
}

/// What one call remembers between its attempts.
struct Session<'a> {
    shared: &'a RetrySetup,
    /// The name the hop routes to (a group or an alias of one).
    target: Arc<str>,
    /// The name is a provider model (`specific_deployment`).
    specific: bool,
    /// The resolved group, from the context or resolved on the first failure.
    group: Option<Arc<Group>>,
    /// Exclusions the caller (or an outer layer) made; always kept.
    base_excluded: Vec<DeploymentId>,
    /// Deployments that failed in this group during this call, in order.
    failed: Vec<DeploymentId>,
    /// Exclusions of the next attempt, on top of `base_excluded`.
    exclude: Vec<DeploymentId>,
    /// The deployments of the order tiers the call has left (every one at or below a tier that
    /// was spent): excluded from every later attempt in the group.
    spent_tiers: Vec<DeploymentId>,
    deadline: Option<Instant>,
    request_retries: Option<u32>,
    /// The request's own `model_group_retry_policy`, replacing the configured one.
    request_policies: Option<Arc<BTreeMap<String, RetryPolicy>>>,
    fallbacks: FallbackFacts,
    trail: CallTrail,
    rng: SmallRng,
}

/// What decides whether a fallback will take a failure: the tables of the fallback layer above
/// (its [`FallbackHint`]), and the parts of the request that change them.
struct FallbackFacts {
    /// The hint of the fallback layer above; `None` when there is none, or when
    /// `disable_fallbacks` is set or no hop is left under `max_fallbacks`: nothing takes over then.
    hint: Option<FallbackHint>,
    /// A per-request `fallbacks` list (replacing the general table): whether it names any group.
    per_request: Option<bool>,
}

impl<'a> Session<'a> {
    fn new(shared: &'a RetrySetup, ctx: &RouteCtx, seed: u64) -> Self {
        let facts = ctx.facts();
        let hint = ctx
            .fallback_hint()
            .filter(|hint| !facts.disable_fallbacks && ctx.hop < hint.tables().max_fallbacks)
            .cloned();
        Self {
            shared,
            target: ctx.target_name().clone(),
            specific: facts.specific_deployment && ctx.hop == 0,
            group: ctx.group.clone(),
            base_excluded: ctx.excluded.clone(),
            failed: Vec::new(),
            exclude: Vec::new(),
            spent_tiers: Vec::new(),
            deadline: ctx.deadline,
            request_retries: facts.num_retries,
            request_policies: facts.retry_policies.clone(),
            fallbacks: FallbackFacts { hint, per_request: facts.fallbacks.as_ref().map(|f| !f.is_empty()) },
            trail: ctx.call_trail(),
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// Decides about another attempt after `err` (`tier_retries`: the retries counted in the
    /// current order tier so far): a retry after a wait, or a move to the next order tier.
    async fn after_failure(&mut self, err: &BoxError, tier_retries: u32) -> Result<NextAttempt, NoRetry> {
        let route = RouteError::find(&**err);
        let kind = route.map_or(RouteErrorKind::Upstream, RouteError::kind);
        // An error without a classification is a broken transfer, as the select layer records it.
        let outcome = route.and_then(RouteError::outcome).unwrap_or(Outcome::Transport);
        let retry_after = route.and_then(RouteError::retry_after);
        let status = route.and_then(RouteError::upstream_status).map(|s| s.as_u16());
        let failed = route.and_then(RouteError::deployment).cloned();
        // Our own refusals are not upstream failures, and another attempt now meets the same
        // refusal: every deployment cooling down (the cooldown layer's opt-in `wait_for_cooldown`
        // waits for the first to return), every one at its limit (the error says when a slot
        // frees), an unknown or empty group, a spent budget. They go to the fallback layer. (The
        // pre-call layer's order filter already moved past tiers that are entirely filtered.)
        if kind != RouteErrorKind::Upstream {
            return Err(NoRetry::Refusal);
        }
        if let Some(id) = &failed
            && !self.failed.contains(id)
        {
            self.failed.push(id.clone());
        }
        let group = self.group()?;
        let config = &self.shared.config;

        let names = [group.name().as_ref(), self.target.as_ref()];
        let policy = match &self.request_policies {
            Some(map) => names.iter().find_map(|n| map.get(*n)).or(config.retry_policy.as_ref()),
            None => config.policy_for(names),
        };
        let policy_retries = policy.and_then(|p| p.for_failure(outcome, status));
        let deployment_retries = || {
            // A failure no deployment made (a mocked one) in a one-deployment group takes that
            // deployment's count, as LiteLLM reads it.
            let Some(id) = failed.as_ref() else {
                return match group.deployments() {
                    [only] => only.num_retries,
                    _ => None,
                };
            };
            let d = group
                .deployments()
                .iter()
                .find(|d| &d.id == id)
                .cloned()
                .or_else(|| self.shared.registry.deployment(id));
            d?.num_retries
        };
        let max = self
            .request_retries
            .or(policy_retries)
            .or_else(deployment_retries)
            .or(policy.and_then(|p| p.default))
            .unwrap_or(config.num_retries);

        let serving = group.candidates();
        let candidates: Vec<DeploymentId> = serving
            .iter()
            .map(|d| d.id.clone())
            .filter(|id| !self.base_excluded.contains(id) && !self.spent_tiers.contains(id))
            .collect();
        let fallbacks = self.fallback_presence(names);
        // Why the current tier stops here, if it does: the retry count is used up, or the status
        // says another attempt would fail the same way.
        let stop = if tier_retries >= max {
            Some(NoRetry::Exhausted)
        } else {
            policy::status_rules(outcome, policy_retries.is_some(), candidates.len(), fallbacks)
        };
        // A group without `order` tiers: nothing to move to (and no state read to stop).
        let failed_tier = failed
            .as_ref()
            .and_then(|id| serving.iter().find(|d| &d.id == id))
            .filter(|_| serving.declared().tiers)
            .map(|d| tier(d))
            // Context-window and content-policy failures go to their own fallback tables, as
            // LiteLLM skips its order-based fallback for them.
            .filter(|_| !matches!(outcome, Outcome::ContextWindowExceeded | Outcome::ContentPolicy));
        if failed_tier.is_none()
            && let Some(reason) = stop
        {
            return Err(reason);
        }

        let able = self.not_cooling(candidates).await;
        if let Some(t) = failed_tier {
            let tier_of = |id: &DeploymentId| serving.iter().find(|d| &d.id == id).map_or(u64::MAX, |d| tier(d));
            // The tier is spent when it stops here, or when every deployment of it that can serve
            // has failed in this call: the call moves to the next tier at once, with a fresh retry
            // count, before any fallback (LiteLLM's order-based fallback, inside the group).
            let spent = stop.is_some() || able.iter().filter(|id| tier_of(id) == t).all(|id| self.failed.contains(id));
            let next = able.iter().map(tier_of).filter(|&n| n > t).min();
            if spent && next.is_some() {
                if self.deadline.is_some_and(|d| Instant::now() >= d) {
                    return Err(NoRetry::Deadline);
                }
                let left = serving.iter().filter(|d| tier(d) <= t).map(|d| d.id.clone());
                let left: Vec<DeploymentId> = left.filter(|id| !self.spent_tiers.contains(id)).collect();
                self.spent_tiers.extend(left);
                self.exclude.clone_from(&self.spent_tiers);
                return Ok(NextAttempt::NextTier);
            }
        }
        if let Some(reason) = stop {
            return Err(reason);
        }

        if let Some(id) = failed {
            // Exclude every deployment that failed while another one can still serve; once all that
            // can serve have failed, start another round without the one that just failed; and
            // when it is the only one that can serve (a one-deployment group), retry it. The tiers
            // the call left stay excluded.
            let leaves_some = |ex: &[DeploymentId]| able.iter().any(|d| !ex.contains(d));
            self.exclude.clone_from(&self.failed);
            if !leaves_some(&self.exclude) {
                self.exclude = vec![id];
                if !leaves_some(&self.exclude) {
                    self.exclude.clear();
                }
            }
            let spent = self.spent_tiers.iter().filter(|id| !self.exclude.contains(id)).cloned().collect::<Vec<_>>();
            self.exclude.extend(spent);
        }
        let healthy: Vec<DeploymentId> = able.into_iter().filter(|d| !self.exclude.contains(d)).collect();
        if let Some(reason) = policy::health_rules(outcome, healthy.len(), fallbacks.general) {
            return Err(reason);
        }
        let fresh = healthy.iter().any(|id| !self.failed.contains(id));
        let wait = if fresh {
            // Another deployment that has not failed yet is ready: no reason to wait (LiteLLM).
            Duration::ZERO
        } else {
            policy::backoff(tier_retries + 1, retry_after, config.retry_after) + policy::jitter(self.rng.random())
        };
        if let Some(deadline) = self.deadline
            && Instant::now() + wait >= deadline
        {
            return Err(NoRetry::Deadline);
        }
        Ok(NextAttempt::Retry { wait, max })
    }

    fn group(&mut self) -> Result<Arc<Group>, NoRetry> {
        if let Some(g) = &self.group {
            return Ok(g.clone());
        }
        let registry = &self.shared.registry;
        let resolved =
            if self.specific { registry.resolve_specific(&self.target) } else { registry.resolve(&self.target) };
        let group = resolved.map_err(|_| NoRetry::Refusal)?.group;
        self.group = Some(group.clone());
        Ok(group)
    }

    /// Which fallback tables of the fallback layer above would take over from this group. Looks
    /// entries up as that layer does: the group, then the name the hop targeted, each also without
    /// its provider prefix; a per-request list replaces the general table, and a `*` entry or
    /// `default_fallbacks` counts for groups without their own. Without a fallback layer above
    /// (no hint), nothing takes over.
    fn fallback_presence(&self, names: [&str; 2]) -> FallbackPresence {
        let Some(hint) = &self.fallbacks.hint else {
            return FallbackPresence::default();
        };
        let tables = hint.tables();
        let names = &names[..];
        let general = match self.fallbacks.per_request {
            Some(non_empty) => non_empty,
            None => {
                entry(&tables.general, names).is_some()
                    || !tables.default.is_empty()
                    || tables.general.get("*").is_some_and(|d| !d.is_empty())
            }
        };
        FallbackPresence {
            general,
            context_window: entry(&tables.context_window, names).is_some(),
            content_policy: entry(&tables.content_policy, names).is_some(),
        }
    }

    /// The ids among `ids` that are not cooling down (one state read).
    async fn not_cooling(&self, ids: Vec<DeploymentId>) -> Vec<DeploymentId> {
        if ids.is_empty() {
            return ids;
        }
        let cooling = self.shared.store.cooldowns(&ids).await;
        ids.into_iter().zip(cooling).filter(|(_, c)| c.is_none()).map(|(id, _)| id).collect()
    }

    fn withdraw(&self) -> bool {
        self.shared.config.budget.as_ref().is_none_or(|b| b.withdraw())
    }

    /// Points the next attempt's clone at the group again, minus the deployments that failed.
    fn prepare<R: RouteRequest>(&self, next: &mut R) {
        if let Some(ctx) = next.route_ctx_mut() {
            ctx.excluded.clone_from(&self.base_excluded);
            ctx.excluded.extend(self.exclude.iter().filter(|id| !self.base_excluded.contains(id)).cloned());
            ctx.candidates = None;
            ctx.selected = None;
        }
    }

    /// The error the call ends with: the last attempt's, carrying the trail of every attempt.
    fn give_up(&self, err: BoxError, reason: NoRetry) -> BoxError {
        tracing::debug!(target: "switchyard::retry", group = %Escaped(&self.target), reason = reason.as_str(), "not retrying");
        RouteError::from_boxed(err).with_trail(self.trail.records()).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::RetryLayer;

    #[test]
    fn future_is_send() {
        fn assert_send<F: Future + Send + 'static>(_: F) {}
        let registry = Arc::new(crate::Registry::new());
        let store = Arc::new(crate::StateStore::memory());
        let provider = tower::service_fn(|_: http::Request<bytes::Bytes>| async {
            Ok::<_, BoxError>(http::Response::new(RouteBody::empty()))
        });
        let mut svc = tower_layer::Layer::layer(&RetryLayer::new(registry, store, Default::default()), provider);
        assert_send(svc.call(http::Request::new(bytes::Bytes::new())));
    }
}
