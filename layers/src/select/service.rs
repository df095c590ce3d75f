use std::{fmt, sync::Arc, time::Duration};

use rand::{RngCore, rngs::SmallRng};
use tokio::time::Instant;
use tracing::{Instrument, Span, field, instrument::Instrumented};

use super::{SelectLayer, future::ResponseFuture, strategy::Selection};
use crate::{
    AttemptRecord, BoxError, CallTrail, Candidates, Deployment, RequestFacts, RouteBody, RouteCtx, RouteError,
    RouteErrorKind, RouteRequest, Served,
    body::BodyEndKind,
    future::{Next, Then},
    logsafe::Escaped,
    rate_limits::{all_limited, soonest_room},
    service::{Inner, Route, missing_context, take_ready},
    state::{Admission, EnforcedLimits, InFlightGuard, Reservation, StateStore, WindowUsage},
};

/// Picks the deployment of each attempt; see [`SelectLayer`].
///
/// Per call: resolve the group and candidates if no outer layer has, let the group's strategy
/// pick, reserve the pick's RPM/TPM atomically (moving on to another pick if it is at a limit),
/// set `RouteCtx::selected`, and call the provider inside an `attempt` span. The in-flight count
/// and the end-of-attempt bookkeeping ride on the response body.
pub struct Select<S> {
    inner: S,
    shared: Arc<SelectLayer>,
    /// Seeded on first use: most clones (made to hand the ready service to a future) never draw.
    rng: Option<SmallRng>,
}

impl<S: fmt::Debug> fmt::Debug for Select<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Select").field("inner", &self.inner).field("layer", &self.shared).finish()
    }
}

impl<S: Clone> Clone for Select<S> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone(), shared: self.shared.clone(), rng: None }
    }
}

impl<S> Select<S> {
    pub(crate) fn new(inner: S, shared: SelectLayer) -> Self {
        // One `Arc` to clone per call, not one per field.
        Self { inner, shared: Arc::new(shared), rng: None }
    }
}

/// Whether the select layer must take a slot in `d`'s usage window.
fn tracks_usage(d: &Deployment, strategy_reads_usage: bool) -> bool {
    strategy_reads_usage || d.rpm.is_some() || d.tpm.is_some()
}

crate::service::routing_service!(Select);

impl<S: Inner<R>, R: RouteRequest> Route<R> for Select<S> {
    type Future = ResponseFuture<S::Future>;

    fn route(&mut self, mut req: R) -> Self::Future {
        let seeds = &self.shared.seeds;
        let seed = self.rng.get_or_insert_with(|| seeds.rng()).next_u64();
        let Some(ctx) = req.route_ctx_mut() else { return ResponseFuture::failed(missing_context()) };
        let mut pick = match Pick::new(&self.shared, ctx, seed) {
            Ok(pick) => pick,
            Err(e) => return ResponseFuture::failed(e),
        };
        // The pick runs here until it must wait on the store (to read usage, reserve, or say when
        // a limit frees); a pick that does not is made here, and the ready inner service is
        // called directly, with no boxed future.
        let first = if pick.reads_usage {
            None
        } else {
            match pick.next(&self.shared, ctx.facts()) {
                Ok(Picked::Chosen(chosen, slot)) => {
                    let after = pick.into_attempt(&self.shared, ctx, chosen, None, slot);
                    let span = after.span(ctx);
                    let fut = self.inner.call(req).instrument(span);
                    return ResponseFuture::in_place(fut, after);
                }
                Ok(waits) => Some(waits),
                Err(e) => return ResponseFuture::failed(e),
            }
        };
        let inner = take_ready(&mut self.inner);
        ResponseFuture::boxed(Box::pin(select_and_call(inner, self.shared.clone(), pick, first, req)))
    }
}

/// The pick of one attempt: the group's strategy ranks what is left of the candidates, and the
/// first pick that takes its parallel slot (and its RPM/TPM reservation, where the select layer
/// tracks usage) wins; a pick refused moves on to the next.
struct Pick {
    group: Arc<crate::Group>,
    list: Candidates,
    /// The candidates' usage (in `list`'s order), read once when the strategy needs it.
    usage: Option<Vec<WindowUsage>>,
    reads_usage: bool,
    /// The declared limits a reservation is checked against (the others are only counted).
    enforced: EnforcedLimits,
    tokens: u64,
    default_parallel: Option<u32>,
    rng: SmallRng,
    /// The soonest an RPM/TPM reservation refused so far has room again.
    soonest_free: Option<Duration>,
    /// A pick was refused for its parallel-request limit.
    parallel_full: bool,
}

/// A pick made without waiting.
enum Picked {
    /// Nothing to reserve: the attempt goes to this deployment, holding its parallel slot.
    Chosen(Arc<Deployment>, Option<InFlightGuard>),
    /// The deployment at `index` in the list, holding its parallel slot, if the store admits its
    /// reservation.
    Reserve { index: usize, deployment: Arc<Deployment>, slot: Option<InFlightGuard> },
    /// The strategy picked nothing: every candidate left is at a limit.
    NoneEligible,
}

impl Pick {
    /// The pick over `ctx`'s candidates (resolving them if no outer layer has), which it takes
    /// out of the context until the attempt starts.
    fn new(shared: &SelectLayer, ctx: &mut RouteCtx, seed: u64) -> Result<Self, BoxError> {
        let list = std::mem::take(ctx.resolve_candidates(&shared.registry)?);
        let group = ctx.group.clone().expect("resolved with the candidates");
        if list.is_empty() {
            return Err(no_candidates(&group));
        }
        let strategy = shared.strategies.for_group(group.name());
        let strategy_enforces = if strategy.enforces_limits() { EnforcedLimits::ALL } else { EnforcedLimits::NONE };
        let own = if shared.enforce_rate_limits { EnforcedLimits::ALL } else { EnforcedLimits::NONE };
        Ok(Self {
            reads_usage: strategy.needs_usage(),
            enforced: ctx.enforced_limits.union(own).union(strategy_enforces),
            group,
            list,
            usage: None,
            tokens: ctx.reserve_tokens.max(ctx.facts().input_tokens.get().copied().unwrap_or(0)),
            default_parallel: ctx.default_max_parallel_requests,
            rng: <SmallRng as rand::SeedableRng>::seed_from_u64(seed),
            soonest_free: None,
            parallel_full: false,
        })
    }

    /// Lets the strategy pick until a pick takes its parallel slot; the deployment is chosen
    /// unless the select layer reserves on it, which must wait for the store.
    fn next(&mut self, shared: &SelectLayer, facts: &RequestFacts) -> Result<Picked, BoxError> {
        let strategy = shared.strategies.for_group(self.group.name());
        let local = shared.store.local();
        loop {
            let sel = Selection::new(&self.group, &self.list, self.usage.as_deref(), local, facts, self.tokens);
            let Some(index) = strategy.pick(&sel, &mut self.rng) else { return Ok(Picked::NoneEligible) };
            let deployment = self.list[index].clone();
            // The parallel-request slot first: it is local and cheap, and a full deployment must
            // not take an RPM slot it cannot use.
            let slot = match deployment.max_parallel_requests.or(self.default_parallel) {
                Some(limit) => match local.try_begin(&deployment.id, u64::from(limit)) {
                    Some(guard) => Some(guard),
                    None => {
                        self.parallel_full = true;
                        self.refuse(index)?;
                        continue;
                    }
                },
                None => None,
            };
            return Ok(if tracks_usage(&deployment, self.reads_usage) {
                Picked::Reserve { index, deployment, slot }
            } else {
                Picked::Chosen(deployment, slot)
            });
        }
    }

    /// Picks, waiting on the store where the pick must, from `first` (a pick made without waiting
    /// that needs the store), else from the start.
    async fn wait_for_pick(
        &mut self,
        shared: &SelectLayer,
        facts: &RequestFacts,
        first: Option<Picked>,
    ) -> Result<(Arc<Deployment>, Option<EstimateGuard>, Option<InFlightGuard>), BoxError> {
        let store = &shared.store;
        let mut picked = match first {
            Some(picked) => picked,
            None => {
                if self.reads_usage {
                    let ids: Vec<_> = self.list.iter().map(|d| d.id.clone()).collect();
                    self.usage = Some(store.usage(&ids).await);
                }
                self.next(shared, facts)?
            }
        };
        loop {
            match picked {
                Picked::Chosen(chosen, slot) => return Ok((chosen, None, slot)),
                Picked::Reserve { index, deployment: d, slot } => {
                    match store.try_reserve(&d.id, self.enforced.limits(d.rpm, d.tpm), self.tokens).await {
                        Admission::Admitted(r) => return Ok((d, Some(EstimateGuard::new(store.clone(), r)), slot)),
                        Admission::Full { retry_in } => {
                            self.soonest_free = Some(self.soonest_free.map_or(retry_in, |s| s.min(retry_in)));
                            self.refuse(index)?;
                        }
                    }
                }
                Picked::NoneEligible => {
                    // The strategy filtered every candidate by its limits: report when the first
                    // frees.
                    if self.soonest_free.is_none() {
                        self.soonest_free = soonest_room(store, &self.list, self.tokens, self.enforced).await;
                    }
                    return Err(all_limited(&self.group, self.soonest_free));
                }
            }
            picked = self.next(shared, facts)?;
        }
    }

    /// Drops the refused pick at `index`; an error when none is left.
    fn refuse(&mut self, index: usize) -> Result<(), BoxError> {
        self.list.remove(index);
        if let Some(u) = &mut self.usage {
            u.remove(index);
        }
        if self.list.is_empty() {
            return Err(all_full(&self.group, self.soonest_free, self.parallel_full));
        }
        Ok(())
    }

    /// Puts the candidates left back into `ctx` and starts the attempt on `chosen`.
    fn into_attempt(
        self,
        shared: &SelectLayer,
        ctx: &mut RouteCtx,
        chosen: Arc<Deployment>,
        reservation: Option<EstimateGuard>,
        slot: Option<InFlightGuard>,
    ) -> AfterAttempt {
        ctx.candidates = Some(self.list);
        AfterAttempt::begin(shared, ctx, self.group, chosen, reservation, slot)
    }
}

/// The rest of the attempt once the pick must wait on the store: the pick from `first` on, then the
/// call.
async fn select_and_call<S, R>(
    mut inner: S,
    shared: Arc<SelectLayer>,
    mut pick: Pick,
    first: Option<Picked>,
    mut req: R,
) -> Result<http::Response<RouteBody>, BoxError>
where
    R: RouteRequest,
    S: Inner<R>,
{
    let ctx = req.route_ctx_mut().ok_or_else(missing_context)?;
    let (chosen, reservation, slot) = pick.wait_for_pick(&shared, ctx.facts(), first).await?;
    let after = pick.into_attempt(&shared, ctx, chosen, reservation, slot);
    let span = after.span(ctx);
    let result = inner.call(req).instrument(span.clone()).await.map_err(Into::into);
    after.finish(result, &span)
}

fn no_candidates(group: &crate::Group) -> BoxError {
    RouteError::new(RouteErrorKind::NoCandidates, format!("no deployment of `{}` is left to try", group.name()))
        .with_group(group.name().clone())
        .into()
}

/// An attempt on its way to the provider, and what the layer records when it resolves.
#[allow(missing_debug_implementations)] // named only in the type of the layer's response future
pub struct AfterAttempt {
    store: Arc<StateStore>,
    group: Arc<crate::Group>,
    chosen: Arc<Deployment>,
    reservation: Option<EstimateGuard>,
    in_flight: InFlightGuard,
    attempt: u32,
    stream: bool,
    hops: u32,
    trail: CallTrail,
    start: Instant,
}

impl AfterAttempt {
    /// Marks `chosen` selected in `ctx`, counts the attempt and starts its clock.
    fn begin(
        shared: &SelectLayer,
        ctx: &mut RouteCtx,
        group: Arc<crate::Group>,
        chosen: Arc<Deployment>,
        reservation: Option<EstimateGuard>,
        slot: Option<InFlightGuard>,
    ) -> Self {
        ctx.selected = Some(chosen.clone());
        let attempt = ctx.begin_attempt();
        let store = shared.store.clone();
        let in_flight = slot.unwrap_or_else(|| store.local().begin(&chosen.id));
        Self {
            group,
            reservation,
            in_flight,
            attempt,
            stream: ctx.facts().stream,
            hops: ctx.hop,
            trail: ctx.call_trail(),
            store,
            chosen,
            start: Instant::now(),
        }
    }

    /// The `attempt` span the provider call runs in, named and attributed after the OpenTelemetry
    /// GenAI conventions (`chat gpt-4o-eu`); the field values are only computed when a subscriber
    /// wants the span.
    fn span(&self, ctx: &RouteCtx) -> Span {
        let model = &*self.chosen.model;
        tracing::info_span!(
            "attempt",
            otel.name = %format_args!("{} {}", crate::semconv::operation(ctx.facts().endpoint), Escaped(crate::semconv::provider_and_model(model).1)),
            otel.kind = "client",
            otel.status_code = field::Empty,
            gen_ai.operation.name = crate::semconv::operation(ctx.facts().endpoint),
            gen_ai.provider.name = crate::semconv::provider_and_model(model).0,
            gen_ai.request.model = crate::semconv::provider_and_model(model).1,
            switchyard.requested = ctx.requested(),
            switchyard.group = %self.group.name(),
            switchyard.deployment.id = %self.chosen.id,
            switchyard.attempt = self.attempt,
            switchyard.outcome = field::Empty,
            error.type = field::Empty,
        )
    }

    /// Records the attempt's `result` (latency, in-flight count and reservation on the body, the
    /// `Served` facts; on a failure the trail and the penalties) and passes it on.
    pub(crate) fn finish(
        self,
        result: Result<http::Response<RouteBody>, BoxError>,
        span: &Span,
    ) -> Result<http::Response<RouteBody>, BoxError> {
        let AfterAttempt { store, group, chosen, reservation, in_flight, attempt, stream, hops, trail, start } = self;
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(start);
        match result {
            Ok(mut resp) => {
                span.record("switchyard.outcome", "success");
                let usage_now = resp.body().usage();
                if stream {
                    store.local().record_ttft_held(&in_flight, elapsed, now);
                } else {
                    store.local().record_latency_held(&in_flight, latency_sample(elapsed, usage_now), elapsed, now);
                }
                let body = resp.body_mut();
                body.hold_in_flight(in_flight);
                let reservation = reservation.map(EstimateGuard::keep);
                attach_end_of_attempt(body, &store, &chosen, reservation, start, stream);
                if resp.extensions().get::<Served>().is_none() {
                    // The trail holds the failed attempts; the first attempt had none before it.
                    let failed = if attempt > 1 { trail.records() } else { Vec::new() };
                    resp.extensions_mut().insert(Served {
                        group: group.name().clone(),
                        deployment: chosen.id.clone(),
                        model: chosen.model.clone(),
                        attempts: attempt,
                        retries: 0,
                        max_retries: None,
                        upstream: elapsed,
                        hops,
                        failed,
                    });
                }
                Ok(resp)
            }
            Err(e) => {
                let route = RouteError::find(&*e);
                let outcome = route.and_then(RouteError::outcome).unwrap_or(crate::Outcome::Transport);
                span.record("switchyard.outcome", outcome.as_str());
                span.record("otel.status_code", "error");
                span.record("error.type", outcome.as_str());
                let known: Vec<&str> = chosen.api_key.iter().map(|k| k.expose()).collect();
                trail.record(AttemptRecord {
                    group: group.name().clone(),
                    deployment: chosen.id.clone(),
                    outcome,
                    duration: elapsed,
                    message: Some(crate::redact::redact(&e.to_string(), &known, 200)),
                });
                match outcome {
                    crate::Outcome::RateLimited => {
                        let wait = route.and_then(RouteError::retry_after).unwrap_or(Duration::from_secs(1));
                        store.local().penalize(&chosen.id, wait);
                    }
                    crate::Outcome::Timeout => {
                        store.local().record_latency_held(&in_flight, elapsed.as_secs_f64(), elapsed, now);
                    }
                    _ => {}
                }
                // Nothing was served: the request keeps its slot, its token estimate is released
                // (by the guard, as when the caller cancels the attempt).
                drop(reservation);
                drop(in_flight);
                Err(e)
            }
        }
    }
}

/// After the attempt polled in place: its bookkeeping, in its span.
impl<F> Then<Instrumented<F>> for AfterAttempt {
    fn then(self, result: Result<http::Response<RouteBody>, BoxError>, attempt: &Instrumented<F>) -> Next {
        Next::Done(self.finish(result, attempt.span()))
    }
}

/// Seconds per completion token when the usage is known (LiteLLM's latency unit, which makes
/// long and short answers comparable), raw seconds otherwise.
fn latency_sample(elapsed: Duration, usage: Option<crate::Usage>) -> f64 {
    match usage {
        Some(u) if u.completion_tokens > 0 => elapsed.as_secs_f64() / u.completion_tokens as f64,
        _ => elapsed.as_secs_f64(),
    }
}

/// Reconciles the reservation with the real usage and times a stream when the body ends; nothing
/// (no clone, no callback) for a plain answer without a reservation.
fn attach_end_of_attempt(
    body: &mut RouteBody,
    store: &Arc<StateStore>,
    deployment: &Arc<Deployment>,
    reservation: Option<Reservation>,
    start: Instant,
    stream: bool,
) {
    if reservation.is_none() && !stream {
        return;
    }
    let (store, deployment) = (store.clone(), deployment.clone());
    body.on_end(move |end| {
        if let (Some(r), Some(u)) = (&reservation, end.usage) {
            store.reconcile_detached(r, u.total());
        }
        if stream && end.kind == BodyEndKind::Complete {
            let total = end.at.saturating_duration_since(start);
            store.local().record_latency(&deployment.id, latency_sample(total, end.usage), total);
        }
    });
}

/// A reservation whose token estimate is released unless the attempt is served: on an upstream
/// failure and when the caller cancels the attempt (the request slot stays taken either way, as
/// the upstream may have counted the request).
struct EstimateGuard {
    store: Arc<StateStore>,
    reservation: Option<Reservation>,
}

impl EstimateGuard {
    fn new(store: Arc<StateStore>, reservation: Reservation) -> Self {
        Self { store, reservation: Some(reservation) }
    }

    /// The attempt was served: the end of its body reconciles the estimate with the real usage.
    fn keep(mut self) -> Reservation {
        self.reservation.take().expect("taken only here, once")
    }
}

impl Drop for EstimateGuard {
    fn drop(&mut self) {
        if let Some(r) = self.reservation.take() {
            self.store.reconcile_detached(&r, 0);
        }
    }
}

/// Every pick was refused: by an RPM/TPM limit (with when the first frees) or, when none was, by
/// its parallel-request limit.
fn all_full(group: &crate::Group, soonest_free: Option<Duration>, parallel_full: bool) -> BoxError {
    if soonest_free.is_none() && parallel_full {
        return RouteError::new(
            RouteErrorKind::RateLimited,
            format!("every deployment of `{}` is at its parallel-request limit", group.name()),
        )
        .with_group(group.name().clone())
        .into();
    }
    all_limited(group, soonest_free)
}
