use std::{fmt, future::poll_fn, sync::Arc};

use tokio::time::Instant;
use tower_service::Service;

use super::{
    FallbackEvent, FallbackTable,
    future::ResponseFuture,
    layer::FallbackSetup,
    plan::{Plan, Position, Step},
};
use crate::{
    AttemptRecord, BoxError, CallTrail, RouteBody, RouteError, RouteErrorKind, RouteRequest, Served,
    ctx::{MockFailure, Replay},
    future::{Next, Then},
    logsafe::Escaped,
    service::{Inner, Route},
    spare::Spare,
};

type Response = http::Response<RouteBody>;

/// Moves a failed call to other model groups; see [`FallbackLayer`](super::FallbackLayer).
///
/// Per call: tell the layers below which tables it falls back through (a
/// [`FallbackHint`](crate::fallback_tables::FallbackHint) in the context, once per call), keep a
/// copy of the request, call the inner stack, and on a failure pick the next group from the
/// failed group's table (minus the groups already visited), then call the inner stack again with
/// a fresh copy of the original request moved to that group. No hop starts after the call's
/// deadline ([`RouteCtx::deadline`](crate::RouteCtx::deadline)).
///
/// The first group is called through the ready service. The hops go to a clone of the spare the
/// service keeps (a clone of the inner service made when the layer wrapped it, shared by the
/// service's clones), so a call that succeeds at once clones no service; a service changed
/// through [`get_mut`](Self::get_mut) after wrapping serves first groups only.
pub struct Fallback<S> {
    inner: S,
    spare: Arc<Spare<Arc<FallbackSetup>, S>>,
}

impl<S: fmt::Debug> fmt::Debug for Fallback<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fallback")
            .field("inner", &self.inner)
            .field("config", &self.spare.layer.config)
            .finish_non_exhaustive()
    }
}

impl<S: Clone> Clone for Fallback<S> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone(), spare: self.spare.clone() }
    }
}

impl<S: Clone> Fallback<S> {
    pub(crate) fn new(inner: S, shared: Arc<FallbackSetup>) -> Self {
        Self { spare: Spare::new(shared, &inner), inner }
    }
}

crate::service::routing_service!(Fallback);

impl<S: Inner<R>, R: RouteRequest> Route<R> for Fallback<S> {
    type Future = ResponseFuture<S, R>;

    fn route(&mut self, req: R) -> Self::Future {
        let shared = &self.spare.layer;
        let Some(ctx) = req.route_ctx() else {
            // Nothing to route by: the layers below report the missing context.
            return ResponseFuture::in_place(self.inner.call(req), None);
        };
        let deadline = ctx.deadline;
        let base_hop = ctx.hop;
        let disabled = ctx.facts().disable_fallbacks;
        // LiteLLM's `mock_testing_*fallbacks`: the call's first group fails at once (no attempt, no
        // retry, no cooldown) and the hops are real.
        let mock = ctx.facts().mock.fallbacks.filter(|_| base_hop == 0).map(|f| mock_failure(f, ctx.target_name()));
        // No table and no per-request list: nothing can take over.
        let nowhere = shared.config.tables.is_empty() && ctx.facts().fallbacks.as_ref().is_none_or(Vec::is_empty);
        let origin = if disabled || nowhere {
            Origin::Fixed { trail: ctx.call_trail(), first: ctx.target_name().clone() }
        } else {
            // The layers below (a retry layer) leave the failures this layer takes to it. The first
            // fallback layer of the call gives the hint; a hop's copy already carries it.
            ctx.set_fallback_hint(shared.hint.clone());
            // Every hop starts again from the request as it arrived (this layer's own copy), so
            // nothing a layer below set for one group (candidates, exclusions, selection, a
            // deadline of its own) leaks into the next.
            match Replay::of(&req) {
                Some(replay) if replay.route_ctx().is_some() => Origin::Replay(Box::new(replay)),
                _ => Origin::Fixed { trail: ctx.call_trail(), first: ctx.target_name().clone() },
            }
        };
        let hops = Hops { spare: self.spare.clone(), origin, deadline, base_hop };
        if let Some(err) = mock {
            drop(req);
            return ResponseFuture::boxed(Box::pin(run(hops, err.into())));
        }
        // The first group is served by the ready service at once; the hops by clones of the spare.
        let fut = self.inner.call(req);
        ResponseFuture::in_place(fut, Some(hops))
    }
}

/// The error a `mock_testing_*fallbacks` key makes the first group fail with (LiteLLM's
/// message).
fn mock_failure(failure: MockFailure, target: &str) -> RouteError {
    RouteError::new(
        RouteErrorKind::Upstream,
        format!("This is a mock exception for model={target}, to trigger a fallback ({})", failure.key()),
    )
    .with_outcome(failure.outcome())
}

/// Why the hops of a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HopsEnd {
    /// No target left, fallbacks disabled, or the error is not one to fall back on.
    Exhausted,
    /// `max_fallbacks` hops were made and another target was waiting.
    HopLimit(u32),
    /// The deadline passed with another target waiting.
    Deadline,
}

/// What the hops of a call need once its first group failed.
#[allow(missing_debug_implementations)] // named only in the type of the layer's response future
pub struct Hops<S, R> {
    spare: Arc<Spare<Arc<FallbackSetup>, S>>,
    origin: Origin<R>,
    deadline: Option<Instant>,
    base_hop: u32,
}

/// Where a call started.
enum Origin<R> {
    /// The request as it arrived, to copy per hop; its context holds the name the call started at,
    /// the call's trail and the request's own fallback list.
    Replay(Box<Replay<R>>),
    /// No hop can be made: what the error needs.
    Fixed {
        trail: CallTrail,
        /// The name the call started at.
        first: Arc<str>,
    },
}

/// After the call in its first group: its answer, or the hops after its failure.
impl<S: Inner<R>, R: RouteRequest> Then<S::Future> for Hops<S, R> {
    fn then(self, result: Result<Response, BoxError>, _: &S::Future) -> Next {
        match result {
            Ok(resp) => Next::Done(Ok(with_hops(resp, self.base_hop))),
            Err(e) => Next::Continue(Box::pin(run(self, e))),
        }
    }
}

async fn run<S, R>(hops_state: Hops<S, R>, mut err: BoxError) -> Result<Response, BoxError>
where
    R: RouteRequest,
    S: Service<R, Response = Response> + Clone + Send,
    S::Error: Into<BoxError>,
    S::Future: Send,
{
    let Hops { spare, origin, deadline, base_hop } = hops_state;
    // Without a copy (fallbacks disabled, nowhere to go, or not replayable) no hop is made.
    let (original, trail, first, per_request) = match origin {
        Origin::Fixed { trail, first } => (None, trail, first, None),
        Origin::Replay(replay) => {
            let ctx = replay.route_ctx().expect("a replay with a context, checked by the service");
            let (trail, first, per_request) =
                (ctx.call_trail(), ctx.target_name().clone(), ctx.facts().fallbacks.clone());
            (Some(*replay), trail, first, per_request)
        }
    };
    let shared = &*spare.layer;
    // The service for the hops, cloned from the spare at the first hop.
    let mut inner: Option<S> = None;
    let tables = &shared.config.tables;
    let mut plan = Plan::new(tables, &shared.registry, per_request);
    let mut at = plan.start(first);
    let mut tried = vec![at.name.clone()];
    let mut hops = 0u32;
    let mut end = HopsEnd::Exhausted;
    loop {
        let route = RouteError::find(&*err);
        if original.is_none() || !falls_back(route) {
            break;
        }
        let outcome = route.and_then(RouteError::outcome);
        let kind = route.map(RouteError::kind);
        plan.failed(&at, outcome);
        let Some((target, table)) = next_target(&mut plan, shared, &at) else { break };
        if hops >= tables.max_fallbacks {
            end = HopsEnd::HopLimit(tables.max_fallbacks);
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            end = HopsEnd::Deadline;
            break;
        }
        // A fresh copy per hop; no reference to the original is held across an await, so `R`
        // need not be `Sync`.
        let Some(mut next) = original.as_ref().and_then(Replay::next) else { break };
        let inner = inner.get_or_insert_with(|| spare.service());
        if let Err(e) = poll_fn(|cx| inner.poll_ready(cx)).await {
            // The inner service is gone; no hop can be made.
            err = e.into();
            break;
        }
        hops += 1;
        if let Some(ctx) = next.route_ctx_mut() {
            // The copy carries the call's deadline as this layer saw it.
            ctx.hop_to(target.name.clone());
            ctx.hop = base_hop + hops;
        }
        let reason = outcome.map(|o| o.as_str()).or(kind.map(RouteErrorKind::as_str)).unwrap_or("error");
        tracing::info!(from = %Escaped(&at.name), to = %Escaped(&target.name), reason, table = %table, hop = hops, "fallback hop");
        shared.emit(FallbackEvent::Hop {
            from: at.name.clone(),
            to: target.name.clone(),
            reason: outcome,
            error: kind,
            table,
            hop: hops,
        });
        tried.push(target.name.clone());
        at = target;
        match inner.call(next).await {
            Ok(resp) => {
                shared.emit(FallbackEvent::Succeeded { group: at.name.clone(), hops });
                return Ok(with_hops(resp, base_hop + hops));
            }
            Err(e) => err = e.into(),
        }
    }

    if hops > 0 {
        let reason = RouteError::find(&*err).and_then(RouteError::outcome);
        shared.emit(FallbackEvent::Failed { groups: tried.clone(), hops, reason });
    }
    let summary = HopSummary { at: &at, tried: &tried, skipped: plan.skipped(), end };
    Err(summary.into_error(err, trail.records()).into())
}

/// The plan's next target, reporting (log and event) the names it skips.
fn next_target(plan: &mut Plan<'_>, shared: &FallbackSetup, from: &Position) -> Option<(Position, FallbackTable)> {
    loop {
        match plan.next() {
            Step::Hop(target, table) => return Some((target, table)),
            Step::Skip(name, table) => {
                tracing::warn!(from = %Escaped(&from.name), name = %Escaped(&name), table = %table, "fallback target does not resolve; skipped");
                shared.emit(FallbackEvent::Skipped { name, table });
            }
            Step::Done => return None,
        }
    }
}

/// Only errors about the request itself end the call at once: another group cannot fix a request
/// without a context or a malformed one. Everything else, ours or the upstream's, falls back.
fn falls_back(err: Option<&RouteError>) -> bool {
    !matches!(
        err.map(RouteError::kind),
        Some(RouteErrorKind::MissingContext | RouteErrorKind::InvalidRequest | RouteErrorKind::ConversationUnavailable)
    )
}

/// Records the true hop count on the response (the select layer wrote the hop it saw).
fn with_hops(mut resp: Response, hops: u32) -> Response {
    if let Some(served) = resp.extensions_mut().get_mut::<Served>() {
        served.hops = hops;
    }
    resp
}

/// The groups a failed call went through and why it stopped: what its final error names.
struct HopSummary<'a> {
    at: &'a Position,
    tried: &'a [Arc<str>],
    skipped: &'a [Arc<str>],
    end: HopsEnd,
}

impl HopSummary<'_> {
    /// The last hop's error, typed, with the call's trail; when the call moved between groups,
    /// its message also names them.
    fn into_error(self, err: BoxError, trail: Vec<AttemptRecord>) -> RouteError {
        let mut last = RouteError::from_boxed(err);
        if last.group().is_none() {
            last = last.with_group(self.at.group.clone());
        }
        let mut notes = Vec::new();
        if self.tried.len() > 1 {
            notes.push(format!("groups tried: {}", quoted(self.tried)));
        }
        if !self.skipped.is_empty() {
            notes.push(format!("skipped (unknown): {}", quoted(self.skipped)));
        }
        match self.end {
            HopsEnd::HopLimit(n) => notes.push(format!("stopped at max_fallbacks = {n}")),
            HopsEnd::Deadline => notes.push("stopped: the call's deadline passed".to_owned()),
            HopsEnd::Exhausted => {}
        }
        // An unknown-group error keeps its own message, which lists the known names.
        if notes.is_empty() || last.kind() == RouteErrorKind::UnknownGroup {
            return last.with_trail(trail);
        }
        let mut out = RouteError::new(last.kind(), format!("{}; {}", last.message(), notes.join("; ")));
        if let Some(outcome) = last.outcome() {
            out = out.with_outcome(outcome);
        }
        if let Some(group) = last.group() {
            out = out.with_group(group.clone());
        }
        if let Some(id) = last.deployment() {
            out = out.with_deployment(id.clone());
        }
        if let Some(d) = last.retry_after() {
            out = out.with_retry_after(d);
        }
        if let Some(c) = last.capability() {
            out = out.with_capability(c);
        }
        if let Some(status) = last.upstream_status() {
            out = out.with_upstream_response(status, last.upstream_body().cloned().unwrap_or_default());
        }
        out.with_trail(trail).with_source(last)
    }
}

fn quoted(names: &[Arc<str>]) -> String {
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}
