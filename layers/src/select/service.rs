use std::{
    fmt,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use rand::{RngCore, rngs::SmallRng};
use tokio::time::Instant;
use tower_service::Service;
use tracing::{Instrument, Span, field};

use super::{SelectLayer, future::ResponseFuture, strategy::Selection};
use crate::{
    AttemptRecord, BoxError, CallTrail, Candidates, Deployment, RouteBody, RouteCtx, RouteError, RouteErrorKind,
    RouteRequest, Served,
    body::BodyEndKind,
    logsafe::Escaped,
    state::{Admission, InFlightGuard, Limits, Reservation, StateStore, WindowUsage},
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

crate::inner_accessors!(Select);

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

impl<S, R> Service<R> for Select<S>
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
        let seeds = &self.shared.seeds;
        let seed = self.rng.get_or_insert_with(|| seeds.rng()).next_u64();
        let Some(ctx) = req.route_ctx_mut() else { return ResponseFuture::failed(missing_ctx()) };
        let limited = match ctx.resolve_candidates(&self.shared.registry) {
            Ok(candidates) => candidates.declared().rate_limit,
            Err(e) => return ResponseFuture::failed(e.into()),
        };
        let group = ctx.group.as_ref().expect("resolved with the candidates");
        if limited || self.shared.strategies.for_group(group.name()).needs_usage() {
            // Usage reads and reservations go through the store and may wait: a boxed future.
            let clone = self.inner.clone();
            let inner = std::mem::replace(&mut self.inner, clone);
            return ResponseFuture::boxed(Box::pin(select_and_call(inner, self.shared.clone(), seed, req)));
        }
        // Without usage to read or reserve the pick never waits: it is made here, and the ready
        // inner service is called directly, with no boxed future.
        match pick_without_usage(&self.shared, ctx, seed) {
            Ok(after) => {
                let span = after.span(ctx);
                let fut = self.inner.call(req).instrument(span);
                ResponseFuture::attempt(fut, after)
            }
            Err(Err(e)) => ResponseFuture::failed(e),
            Err(Ok(limited)) => ResponseFuture::boxed(Box::pin(limited.into_error())),
        }
    }
}

/// The pick of a call whose strategy reads no usage and whose candidates have no RPM/TPM limit:
/// nothing to reserve, so nothing to wait for. `Err(Ok(_))` when the strategy picked nothing (the
/// error says when the first slot frees: a store read).
fn pick_without_usage(
    shared: &Arc<SelectLayer>,
    ctx: &mut RouteCtx,
    seed: u64,
) -> Result<AfterAttempt, Result<AllLimited, BoxError>> {
    let mut rng = <SmallRng as rand::SeedableRng>::seed_from_u64(seed);
    let mut list = std::mem::take(ctx.candidates.as_mut().expect("resolved by the caller"));
    let group = ctx.group.clone().expect("resolved with the candidates");
    if list.is_empty() {
        return Err(Err(no_candidates(&group)));
    }
    let strategy = shared.strategies.for_group(group.name());
    let store = &shared.store;
    let tokens = ctx.reserve_tokens.max(ctx.facts().input_tokens.get().copied().unwrap_or(0));
    let default_parallel = ctx.default_max_parallel_requests;
    let (chosen, slot) = loop {
        let picked = {
            let sel = Selection::new(&group, &list, None, store.local(), ctx.facts(), tokens);
            strategy.pick(&sel, &mut rng)
        };
        let Some(i) = picked else {
            return Err(Ok(AllLimited { store: store.clone(), group, list, tokens }));
        };
        let d = list[i].clone();
        // The parallel-request slot: local and cheap.
        let slot = match d.max_parallel_requests.or(default_parallel) {
            Some(limit) => match store.local().try_begin(&d.id, u64::from(limit)) {
                Some(guard) => Some(guard),
                None => {
                    list.remove(i);
                    if list.is_empty() {
                        return Err(Err(all_full(&group, None, true)));
                    }
                    continue;
                }
            },
            None => None,
        };
        break (d, slot);
    };
    ctx.candidates = Some(list);
    Ok(AfterAttempt::begin(shared, ctx, group, chosen, None, slot))
}

/// A strategy that picked nothing: the error says when the first candidate has room again.
struct AllLimited {
    store: Arc<StateStore>,
    group: Arc<crate::Group>,
    list: Candidates,
    tokens: u64,
}

impl AllLimited {
    async fn into_error(self) -> Result<http::Response<RouteBody>, BoxError> {
        let mut soonest_free: Option<Duration> = None;
        for d in &self.list {
            let wait = self.store.room_in(&d.id, Limits { rpm: d.rpm, tpm: d.tpm }, self.tokens).await;
            soonest_free = Some(soonest_free.map_or(wait, |s: Duration| s.min(wait)));
        }
        Err(all_limited(&self.group, soonest_free))
    }
}

/// The whole attempt when the pick reads usage or reserves (which may wait on the store).
async fn select_and_call<S, R>(
    mut inner: S,
    shared: Arc<SelectLayer>,
    seed: u64,
    mut req: R,
) -> Result<http::Response<RouteBody>, BoxError>
where
    R: RouteRequest,
    S: Service<R, Response = http::Response<RouteBody>>,
    S::Error: Into<BoxError>,
{
    let mut rng = <SmallRng as rand::SeedableRng>::seed_from_u64(seed);
    let ctx = req.route_ctx_mut().ok_or_else(missing_ctx)?;
    let candidates = std::mem::take(ctx.resolve_candidates(&shared.registry)?);
    let group = ctx.group.clone().expect("resolved with the candidates");
    if candidates.is_empty() {
        return Err(no_candidates(&group));
    }
    let strategy = shared.strategies.for_group(group.name()).clone();
    let store = &shared.store;
    let tokens = ctx.reserve_tokens.max(ctx.facts().input_tokens.get().copied().unwrap_or(0));
    let reads_usage = strategy.needs_usage();

    let mut list = candidates;
    let mut usage: Option<Vec<WindowUsage>> = None;
    if reads_usage {
        let ids: Vec<_> = list.iter().map(|d| d.id.clone()).collect();
        usage = Some(store.usage(&ids).await);
    }
    let mut soonest_free: Option<Duration> = None;
    let mut parallel_full = false;
    let default_parallel = ctx.default_max_parallel_requests;
    let (chosen, reservation, slot) = loop {
        let picked = {
            let sel = Selection::new(&group, &list, usage.as_deref(), store.local(), ctx.facts(), tokens);
            strategy.pick(&sel, &mut rng)
        };
        let Some(i) = picked else {
            // The strategy filtered every candidate by its limits: report when the first frees.
            if soonest_free.is_none() {
                for d in &list {
                    let wait = store.room_in(&d.id, Limits { rpm: d.rpm, tpm: d.tpm }, tokens).await;
                    soonest_free = Some(soonest_free.map_or(wait, |s: Duration| s.min(wait)));
                }
            }
            return Err(all_limited(&group, soonest_free));
        };
        let d = list[i].clone();
        // The parallel-request slot first: it is local and cheap, and a full deployment
        // must not take an RPM slot it cannot use.
        let slot = match d.max_parallel_requests.or(default_parallel) {
            Some(limit) => match store.local().try_begin(&d.id, u64::from(limit)) {
                Some(guard) => Some(guard),
                None => {
                    parallel_full = true;
                    list.remove(i);
                    if let Some(u) = &mut usage {
                        u.remove(i);
                    }
                    if list.is_empty() {
                        return Err(all_full(&group, soonest_free, parallel_full));
                    }
                    continue;
                }
            },
            None => None,
        };
        if !tracks_usage(&d, reads_usage) {
            break (d, None, slot);
        }
        match store.try_reserve(&d.id, Limits { rpm: d.rpm, tpm: d.tpm }, tokens).await {
            Admission::Admitted(r) => break (d, Some(EstimateGuard::new(store.clone(), r)), slot),
            Admission::Full { retry_in } => {
                soonest_free = Some(soonest_free.map_or(retry_in, |s| s.min(retry_in)));
                list.remove(i);
                if let Some(u) = &mut usage {
                    u.remove(i);
                }
                if list.is_empty() {
                    return Err(all_full(&group, soonest_free, parallel_full));
                }
            }
        }
    };

    ctx.candidates = Some(list);
    let after = AfterAttempt::begin(&shared, ctx, group, chosen, reservation, slot);
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
pub(crate) struct AfterAttempt {
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

fn missing_ctx() -> BoxError {
    RouteError::new(
        RouteErrorKind::MissingContext,
        "request has no RouteCtx; add the ingress layer or insert RouteCtx::new(model) into the request",
    )
    .into()
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

fn all_limited(group: &crate::Group, soonest_free: Option<Duration>) -> BoxError {
    let mut e = RouteError::new(
        RouteErrorKind::RateLimited,
        format!("every deployment of `{}` is at its RPM/TPM limit", group.name()),
    )
    .with_group(group.name().clone());
    if let Some(d) = soonest_free {
        e = e.with_retry_after(d);
    }
    e.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::SelectLayer;

    #[test]
    fn layer_and_service_are_embeddable() {
        crate::assert_embeddable::<SelectLayer>();
        crate::assert_embeddable::<
            Select<tower::util::BoxCloneSyncService<http::Request<bytes::Bytes>, http::Response<RouteBody>, BoxError>>,
        >();
    }
}
