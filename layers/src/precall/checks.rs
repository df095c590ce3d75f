//! The pre-call checks, in order, each declaring whether it can wait.
//!
//! A check either never waits ([`Check::Now`]) or may wait for the store, a token count or a
//! parallel slot ([`Check::MayWait`]); a check that may wait first tries to finish without waiting
//! and says when it cannot. One driver, [`Checks::run_now`], runs the checks until they end or one
//! must wait: the service calls it in `call`, and when a check must wait, the rest of the run
//! continues from that check in the call's boxed future ([`Checks::run`]).

use std::sync::Arc;

use tokio::time::Instant;

use super::{
    AffinityHit, PreCallLayer, affinity, budget, capabilities, context, limits, order, parallel, params, region, tags,
};
use crate::{
    BoxError, Candidates, DeploymentId, Group, RouteCtx, RouteError, RouteErrorKind,
    rate_limits::{all_limited, soonest_room},
};

/// Every check, in the order they run; each runs on what the previous ones left.
const CHECKS: [Check; 13] = [
    Check::Now(Immediate::Blocked),
    Check::Now(Immediate::Tags),
    Check::Now(Immediate::Region),
    Check::Now(Immediate::Capabilities),
    Check::Now(Immediate::Params),
    Check::MayWait(Waiting::ContextWindow),
    Check::MayWait(Waiting::Limits),
    Check::MayWait(Waiting::Budgets),
    Check::MayWait(Waiting::ParallelSlot),
    Check::Now(Immediate::LowestTier),
    Check::MayWait(Waiting::Conversation),
    Check::MayWait(Waiting::Session),
    Check::MayWait(Waiting::PromptCache),
];

/// One pre-call check.
#[derive(Clone, Copy)]
enum Check {
    /// A check that never waits.
    Now(Immediate),
    /// A check that may wait.
    MayWait(Waiting),
}

/// The checks that never wait. (Variants rather than function pointers: the driver's `match`
/// inlines them, and most return at their first test of the config.)
#[derive(Clone, Copy)]
enum Immediate {
    /// 1. Blocked deployments.
    Blocked,
    /// 2. Tags.
    Tags,
    /// 3. Region.
    Region,
    /// 4. Capabilities.
    Capabilities,
    /// 4b. Params.
    Params,
    /// 9. Order tiers.
    LowestTier,
}

impl Immediate {
    #[inline]
    fn run(self, c: &mut Checks<'_>) -> Result<(), BoxError> {
        match self {
            Self::Blocked => drop_blocked(c),
            Self::Tags => match_tags(c),
            Self::Region => match_region(c),
            Self::Capabilities => match_capabilities(c),
            Self::Params => match_params(c),
            Self::LowestTier => {
                lowest_tier(c);
                Ok(())
            }
        }
    }
}

/// The checks that may wait, and what for.
#[derive(Clone, Copy)]
enum Waiting {
    /// 5. Context window: the input-token count, when it is needed and not made yet.
    ContextWindow,
    /// 6. RPM / TPM (the enforced ones): a usage read.
    Limits,
    /// 7. Budgets: a spend read.
    Budgets,
    /// 8. Parallel requests: a free slot, when every candidate is full and waiting is configured.
    ParallelSlot,
    /// 10a. The deployment holding a continued conversation: a store read.
    Conversation,
    /// 10b. The sticky deployment of a session or key: a store read.
    Session,
    /// 10c. The deployment with a warm prompt cache: a store read.
    PromptCache,
}

/// How a check that may wait went without waiting.
#[derive(PartialEq, Eq)]
enum Tried {
    Done,
    MustWait,
}

/// How a check ended.
enum Flow {
    /// On to the next check.
    Next,
    /// The candidates are final: the later checks do not run.
    Stop,
}

/// Where a run of the checks stands.
pub(super) enum Progress {
    /// Every check ran.
    Done,
    /// A check must wait: [`Checks::run`] continues from it.
    MustWait,
}

/// What the layer does once the attempt is served.
#[derive(Default)]
pub(super) struct AfterCall {
    /// The candidates a budget applies to (the served one is among them): its spend is recorded
    /// when the body ends.
    pub(super) budgeted: Candidates,
    /// The affinity keys to point at the serving deployment, each for its time.
    pub(super) sticky: Vec<(String, std::time::Duration)>,
    /// The affinity that narrowed the candidates to one deployment, if any.
    pub(super) hit: Option<AffinityHit>,
}

impl AfterCall {
    /// Nothing to do after the attempt.
    fn is_empty(&self) -> bool {
        self.budgeted.is_empty() && self.sticky.is_empty() && self.hit.is_none()
    }
}

/// A run of the checks on one attempt's candidates.
///
/// The candidates being checked are out of the context while the checks run, and put back when the
/// run ends or is dropped (a subset of the resolved ones, which every check keeps again): dropped
/// while it waits, a run can start again on the same context.
pub(super) struct Checks<'a> {
    shared: &'a PreCallLayer,
    ctx: &'a mut RouteCtx,
    group: Arc<Group>,
    list: Candidates,
    after: AfterCall,
    /// The index in [`CHECKS`] of the next check to run.
    next: usize,
}

impl Drop for Checks<'_> {
    fn drop(&mut self) {
        self.ctx.candidates = Some(std::mem::take(&mut self.list));
    }
}

impl<'a> Checks<'a> {
    /// A run of every check on `ctx`'s candidates (resolving them first if no outer layer has).
    pub(super) fn begin(shared: &'a PreCallLayer, ctx: &'a mut RouteCtx) -> Result<Self, BoxError> {
        Self::resume(shared, ctx, 0, AfterCall::default())
    }

    /// A run from the check at `next`, with what the checks before it left to do after the attempt.
    fn resume(
        shared: &'a PreCallLayer,
        ctx: &'a mut RouteCtx,
        next: usize,
        after: AfterCall,
    ) -> Result<Self, BoxError> {
        let list = std::mem::take(ctx.resolve_candidates(&shared.registry)?);
        let Some(group) = ctx.group.clone() else {
            ctx.candidates = Some(list);
            return Err(RouteError::new(RouteErrorKind::MissingContext, "candidates resolved without a group").into());
        };
        ctx.default_max_parallel_requests = shared.config.default_max_parallel_requests;
        // The select layer reserves on its pick under the limits this layer enforces.
        ctx.enforced_limits = ctx.enforced_limits.union(shared.config.enforced_limits());
        // Nothing to filter: the select layer reports the empty group.
        let next = if list.is_empty() { CHECKS.len() } else { next };
        Ok(Self { shared, ctx, group, list, after, next })
    }

    /// Stops the run (before the check that must wait, or at its end), putting the candidates
    /// back: where [`Paused::continue_from`] picks it up.
    pub(super) fn pause(mut self) -> Paused {
        Paused { next: self.next, after: std::mem::take(&mut self.after) }
    }

    /// Nothing is left to do after the attempt (so far).
    pub(super) fn nothing_after(&self) -> bool {
        self.after.is_empty()
    }

    /// The run is over: what is left to do after the attempt.
    fn finish(mut self) -> AfterCall {
        std::mem::take(&mut self.after)
    }

    /// Runs the checks from the next one, without waiting, until they end or one must wait. The
    /// check that removes the last candidates names the error.
    pub(super) fn run_now(&mut self) -> Result<Progress, BoxError> {
        Ok(match self.step()? {
            None => Progress::Done,
            Some(_) => Progress::MustWait,
        })
    }

    /// Runs the checks from the next one to the end, waiting where a check must.
    async fn run(&mut self) -> Result<(), BoxError> {
        while let Some(check) = self.step()? {
            self.next = match check.wait(self).await? {
                Flow::Next => self.next + 1,
                Flow::Stop => CHECKS.len(),
            };
        }
        Ok(())
    }

    /// Runs the checks from the next one until they end (`None`) or one must wait (that check,
    /// which is then the next).
    fn step(&mut self) -> Result<Option<Waiting>, BoxError> {
        while let Some(&check) = CHECKS.get(self.next) {
            match check {
                Check::Now(check) => check.run(self)?,
                Check::MayWait(check) => {
                    if check.try_now(self)? == Tried::MustWait {
                        return Ok(Some(check));
                    }
                }
            }
            self.next += 1;
        }
        Ok(None)
    }
}

/// A run of the checks stopped before a check that must wait, or at its end.
pub(super) struct Paused {
    next: usize,
    after: AfterCall,
}

impl Paused {
    /// Runs the rest of the checks on `ctx`, waiting where a check must.
    pub(super) async fn continue_from(self, shared: &PreCallLayer, ctx: &mut RouteCtx) -> Result<AfterCall, BoxError> {
        let mut checks = Checks::resume(shared, ctx, self.next, self.after)?;
        checks.run().await?;
        Ok(checks.finish())
    }
}

/// 1. Blocked deployments (the registry's candidates exclude them already; an outer layer's list
///    may not).
fn drop_blocked(c: &mut Checks<'_>) -> Result<(), BoxError> {
    if c.list.declared().blocked {
        c.list.retain(|d| !d.blocked);
        if c.list.is_empty() {
            return Err(no_candidates(&c.group, "every deployment is blocked"));
        }
    }
    Ok(())
}

/// 2. Tags.
fn match_tags(c: &mut Checks<'_>) -> Result<(), BoxError> {
    let config = &*c.shared.config;
    if config.tags {
        let wanted = &c.ctx.facts().tags;
        tags::filter(&mut c.list, wanted, config.tag_match_any);
        if c.list.is_empty() {
            return Err(tags::not_allowed(&c.group, wanted));
        }
    }
    Ok(())
}

/// 3. Region.
fn match_region(c: &mut Checks<'_>) -> Result<(), BoxError> {
    if c.shared.config.region
        && let Some(wanted) = c.ctx.facts().region.as_deref()
    {
        region::filter(&mut c.list, wanted);
        if c.list.is_empty() {
            return Err(region::none_in(&c.group, wanted));
        }
    }
    Ok(())
}

/// 4. Capabilities: images need vision, tools need function calling (declared, else from the
///    catalog); only deployments known not to have one are dropped.
fn match_capabilities(c: &mut Checks<'_>) -> Result<(), BoxError> {
    if c.shared.config.capabilities {
        for need in capabilities::needs(c.ctx.facts()) {
            capabilities::filter(&mut c.list, &c.group, need)?;
        }
    }
    Ok(())
}

/// 4b. Params.
fn match_params(c: &mut Checks<'_>) -> Result<(), BoxError> {
    let required = &c.ctx.facts().required_params;
    if c.shared.config.params && !required.is_empty() {
        params::filter(&mut c.list, required);
        if c.list.is_empty() {
            return Err(params::unsupported(&c.group, required));
        }
    }
    Ok(())
}

/// 9. Order tiers: a tier emptied by the checks above gives way to the next one.
fn lowest_tier(c: &mut Checks<'_>) {
    if c.shared.config.order && c.list.declared().tiers {
        order::filter(&mut c.list);
    }
}

impl Waiting {
    /// Runs the check if it can finish without waiting; else leaves the candidates as [`wait`]
    /// needs them and says it must wait.
    ///
    /// [`wait`]: Self::wait
    #[inline]
    fn try_now(self, c: &mut Checks<'_>) -> Result<Tried, BoxError> {
        let shared = c.shared;
        let config = &*shared.config;
        let facts = c.ctx.facts();
        let must_wait = match self {
            Self::ContextWindow => {
                let declared = c.list.declared();
                let counted = facts.input_tokens.get().copied();
                if counted.is_none() && ((config.context_window && declared.window) || declared.tpm) {
                    true
                } else {
                    fit_context_window(c, counted)?;
                    false
                }
            }
            Self::Limits => c.list.declared().rate_limit && !config.enforced_limits().is_none(),
            Self::Budgets => budget::any_budget(&config.budgets, &c.list, c.list.declared().own_budget),
            Self::ParallelSlot => {
                let default = config.default_max_parallel_requests;
                if default.is_none() && !c.list.declared().parallel {
                    return Ok(Tried::Done);
                }
                let full = parallel::filter(shared.store.local(), &mut c.list, default);
                if !c.list.is_empty() {
                    return Ok(Tried::Done);
                }
                if config.wait_for_parallel_slot.is_none() {
                    return Err(parallel::all_full(&c.group, None));
                }
                // While waiting the full ones stay the candidates: checks dropped here and run
                // again must find them, not an empty list.
                c.list = full.into();
                true
            }
            Self::Conversation => facts.previous_response.is_some(),
            Self::Session => config.affinity.is_some(),
            Self::PromptCache => config.prompt_cache_affinity.is_some() && facts.prompt_prefix.is_some(),
        };
        Ok(if must_wait { Tried::MustWait } else { Tried::Done })
    }

    /// Runs the check, waiting.
    async fn wait(self, c: &mut Checks<'_>) -> Result<Flow, BoxError> {
        let shared = c.shared;
        let (config, store) = (&*shared.config, &shared.store);
        match self {
            Self::ContextWindow => {
                // The input-token count is made once per request, and only when a check needs it:
                // a declared window here, or a TPM limit in the next check.
                let tokenizer = context::tokenizer_for(&c.list);
                let counted = context::input_tokens(c.ctx.facts(), tokenizer, config.offload_counting_above).await;
                fit_context_window(c, counted)?;
            }
            Self::Limits => {
                // One usage read; the select layer reserves one request and the token estimate.
                let tokens = c.ctx.reserve_tokens;
                let enforced = config.enforced_limits();
                let full = limits::filter(store, &mut c.list, tokens, enforced).await;
                if c.list.is_empty() {
                    return Err(all_limited(&c.group, soonest_room(store, &full, tokens, enforced).await));
                }
            }
            Self::Budgets => {
                // One spend read for the keys the candidates need; the served attempt's cost is
                // added when its body ends.
                let dropped = budget::filter(store, &config.budgets, &mut c.list).await?;
                if c.list.is_empty() {
                    return Err(budget::exceeded(&c.group, &dropped));
                }
                c.after.budgeted = c.list.clone();
            }
            Self::ParallelSlot => {
                let Some(max) = config.wait_for_parallel_slot else {
                    return Err(parallel::all_full(&c.group, None));
                };
                let until = Instant::now() + max;
                let until = c.ctx.deadline.map_or(until, |d| d.min(until));
                let full = c.list.iter().cloned().collect();
                let default = config.default_max_parallel_requests;
                c.list = parallel::wait_for_slot(store.local(), full, default, until).await.into();
                if c.list.is_empty() {
                    return Err(parallel::all_full(&c.group, Some(max)));
                }
            }
            // Affinity runs after every other check (order tiers included, so a session that
            // failed over to a lower tier returns to the primary once it serves again).
            Self::Conversation => {
                // A continued conversation goes to the deployment that holds it, or nowhere:
                // another deployment does not have it.
                let Some(response) = c.ctx.facts().previous_response.as_deref() else { return Ok(Flow::Next) };
                let Some(holder) = store.affinity(&affinity::conversation_key(response)).await else {
                    return Ok(Flow::Next);
                };
                match c.list.iter().find(|d| d.id == holder).cloned() {
                    Some(d) => {
                        c.list = vec![d].into();
                        c.after.hit = Some(AffinityHit::Conversation);
                        return Ok(Flow::Stop);
                    }
                    None if config.conversation_fallback => c.ctx.drop_previous_response = true,
                    None => return Err(conversation_unavailable(&c.group, response, &holder)),
                }
            }
            // Sticky sessions and keys, then a warm prompt cache: narrow to the sticky deployment
            // when it is still a candidate, else leave the pick to the strategy.
            Self::Session => {
                if let Some(a) = &config.affinity
                    && let Some(key) = affinity::key(a, &c.group, c.ctx.facts())
                {
                    if affinity::narrow(store, &key, &mut c.list).await {
                        c.after.hit = Some(AffinityHit::Session);
                    }
                    c.after.sticky.push((key, a.ttl));
                }
            }
            Self::PromptCache => {
                if let Some(ttl) = config.prompt_cache_affinity
                    && let Some(digest) = &c.ctx.facts().prompt_prefix
                {
                    let key = affinity::prefix_key(&c.group, digest);
                    let narrowed = c.after.hit == Some(AffinityHit::Session);
                    if !narrowed && affinity::narrow(store, &key, &mut c.list).await {
                        c.after.hit = Some(AffinityHit::PromptCache);
                    }
                    c.after.sticky.push((key, ttl));
                }
            }
        }
        Ok(Flow::Next)
    }
}

/// 5. Context window, with the input-token count when a check needed it; records the tokens the
///    select layer reserves.
fn fit_context_window(c: &mut Checks<'_>, tokens: Option<u64>) -> Result<(), BoxError> {
    if c.shared.config.context_window
        && c.list.declared().window
        && let Some(n) = tokens
    {
        let largest = context::filter(&mut c.list, n);
        if c.list.is_empty() {
            return Err(context::exceeded(&c.group, n, largest));
        }
    }
    c.ctx.reserve_tokens = tokens.unwrap_or(0);
    Ok(())
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
    use std::time::Duration;

    use futures_util::FutureExt;

    use super::*;
    use crate::precall::PreCallConfig;

    /// Runs every check on the attempt's candidates, in order, and records what the select layer must
    /// reserve. Cancel-safe (see [`Checks`]).
    async fn check(shared: &PreCallLayer, ctx: &mut RouteCtx) -> Result<AfterCall, BoxError> {
        Paused { next: 0, after: AfterCall::default() }.continue_from(shared, ctx).await
    }

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
}
