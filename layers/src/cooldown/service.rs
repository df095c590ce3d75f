use std::{sync::Arc, time::Duration};

use tokio::time::Instant;
use tower_service::Service;

use super::{CooldownConfig, CooldownEvent, CooldownLayer, decide, events::emit, future::ResponseFuture};
use crate::{
    BoxError, Deployment, DeploymentId, Group, Outcome, RouteBody, RouteError, RouteErrorKind, RouteRequest, Served,
    StateStore,
    body::BodyEndKind,
    future::{Next, Then},
    redact::redact,
    service::{Inner, Route, missing_context, take_ready},
    state::{Bookkeeping, CooldownState, Growth},
};

/// Longest stored cooldown reason.
const REASON_MAX: usize = 160;

/// Drops cooling-down candidates before the attempt and benches failing deployments after it;
/// see [`CooldownLayer`].
#[derive(Clone, Debug)]
pub struct Cooldown<S> {
    pub(crate) inner: S,
    pub(crate) layer: Arc<CooldownLayer>,
}

/// Gives an unreported probe claim back when the probing attempt is dropped.
struct ProbeClaim {
    store: Arc<StateStore>,
    id: Option<DeploymentId>,
}

impl ProbeClaim {
    fn settle(&mut self) {
        self.id = None;
    }
}

impl Drop for ProbeClaim {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.store.run_bookkeeping(Bookkeeping::ReleaseProbe(&id));
        }
    }
}

/// What the layer knows about a failed attempt.
struct AttemptFailure {
    deployment: DeploymentId,
    outcome: Outcome,
    status: Option<u16>,
    retry_after: Option<Duration>,
    message: String,
}

impl AttemptFailure {
    fn of(err: &BoxError) -> Option<Self> {
        let e = RouteError::find(&**err)?;
        // Our own refusals (no candidates, limits, ...) are not failures of a deployment.
        if e.kind() != RouteErrorKind::Upstream {
            return None;
        }
        Some(Self {
            deployment: e.deployment()?.clone(),
            outcome: e.outcome().unwrap_or(Outcome::Transport),
            status: e.upstream_status().map(|s| s.as_u16()),
            retry_after: e.retry_after(),
            message: e.message().to_owned(),
        })
    }
}

/// Records an attempt's failure and benches the deployment when the rules say so.
async fn on_failure(
    store: &StateStore,
    config: &CooldownConfig,
    group: &Group,
    failure: AttemptFailure,
    probing: bool,
    requested: Option<Duration>,
) {
    let counts = store.record_outcome(&failure.deployment, false).await;
    let deployment = group.deployments().iter().find(|d| d.id == failure.deployment);
    let rule = if probing {
        // A failed probe benches again, whatever the rate rules say.
        Some("half-open probe failed")
    } else {
        decide::rule(config, failure.outcome, failure.status, counts, group.deployments().len())
    };
    let Some(rule) = rule else { return };
    let Some(base) = decide::cooldown_time(deployment.map(|d| &**d), failure.retry_after, config) else {
        return;
    };
    // The request's own `cooldown_time` may shorten the bench (zero: none), never lengthen it: a
    // client could otherwise bench a deployment other callers share for as long as it likes. A
    // deployment's `model_info.cooldown_time` is not overridden (LiteLLM's precedence).
    let pinned = deployment.is_some_and(|d| d.info_cooldown_time.is_some());
    let base = match requested.filter(|_| !pinned) {
        Some(r) if r.is_zero() => return,
        Some(r) => base.min(r),
        None => base,
    };
    let known: Vec<&str> = deployment.and_then(|d| d.api_key.as_ref()).map(|k| k.expose()).into_iter().collect();
    let reason: Arc<str> = redact(&format!("{rule}: {}", failure.message), &known, REASON_MAX).into();
    let growth = config.probe.map(|p| Growth::new(p.factor, p.max_cooldown));
    let c = store.bench(&failure.deployment, base, reason.clone(), failure.status, growth).await;
    emit(
        config.hook.as_ref(),
        CooldownEvent::Benched {
            deployment: failure.deployment,
            group: group.name().clone(),
            until: c.until,
            status: failure.status,
            outcome: failure.outcome,
            reason: c.reason,
            strikes: c.strikes,
        },
    );
}

fn all_cooling_down(group: &Group, earliest: Option<Instant>) -> BoxError {
    let mut e = RouteError::new(
        RouteErrorKind::AllCoolingDown,
        format!("every deployment of `{}` is cooling down", group.name()),
    )
    .with_group(group.name().clone());
    if let Some(at) = earliest {
        e = e.with_retry_after(at.saturating_duration_since(Instant::now()));
    }
    e.into()
}

crate::service::routing_service!(Cooldown);

impl<S: Inner<R>, R: RouteRequest> Route<R> for Cooldown<S> {
    type Future = ResponseFuture<S::Future>;

    fn route(&mut self, mut req: R) -> Self::Future {
        // Everything up to the cooldown read is synchronous: done here, so the common call (none of
        // its candidates benched) calls the ready inner service directly and needs no boxed future.
        let Some(ctx) = req.route_ctx_mut() else { return ResponseFuture::failed(missing_context()) };
        let stream = ctx.facts().stream;
        let requested = ctx.facts().cooldown_time;
        if let Err(e) = ctx.resolve_candidates(&self.layer.registry) {
            return ResponseFuture::failed(e.into());
        }
        let group = ctx.group.clone().expect("resolved with the candidates");
        if self.layer.config.disabled {
            return ResponseFuture::in_place(self.inner.call(req), None);
        }
        // Fast path: none of the candidates is benched (a local check: one load when nothing is
        // benched anywhere, else a lookup per candidate in the list of benched deployments), so
        // nothing to filter.
        let candidates = ctx.candidates.as_ref().expect("resolved");
        if !self.layer.store.may_have_cooldowns_among(candidates.iter().map(|d| &d.id)) {
            let record = Record { shared: self.layer.clone(), group, claim: None, stream, requested };
            return ResponseFuture::in_place(self.inner.call(req), Some(record));
        }
        let inner = take_ready(&mut self.inner);
        ResponseFuture::boxed(Box::pin(filter_and_call(inner, self.layer.clone(), group, stream, req)))
    }
}

/// Drops the candidates cooling down (claiming a half-open probe, or waiting for the first to
/// return when configured), then makes the attempt and records its outcome.
async fn filter_and_call<S, R>(
    mut inner: S,
    shared: Arc<CooldownLayer>,
    group: Arc<Group>,
    stream: bool,
    mut req: R,
) -> Result<http::Response<RouteBody>, BoxError>
where
    R: RouteRequest,
    S: Service<R, Response = http::Response<RouteBody>>,
    S::Error: Into<BoxError>,
{
    let config = &*shared.config;
    let store = &shared.store;
    let ctx = req.route_ctx_mut().expect("checked by the caller");
    let candidates = ctx.candidates.clone().unwrap_or_default();
    let ids: Vec<DeploymentId> = candidates.iter().map(|d| d.id.clone()).collect();
    let mut claim = ProbeClaim { store: store.clone(), id: None };
    let keep = loop {
        let states = store.cooldown_states(&ids).await;
        let mut keep: Vec<Arc<Deployment>> = Vec::with_capacity(candidates.len());
        let mut earliest: Option<Instant> = None;
        let mut half_open: Vec<&Arc<Deployment>> = Vec::new();
        for (d, state) in candidates.iter().zip(&states) {
            match state {
                CooldownState::Available => keep.push(d.clone()),
                CooldownState::CoolingDown(c) => earliest = Some(earliest.map_or(c.until, |e| e.min(c.until))),
                CooldownState::HalfOpen { probing: false, .. } => half_open.push(d),
                _ => {}
            }
        }
        // A half-open deployment returns only through a probe: claim it, and this request
        // is the probe.
        if let Some(probe) = config.probe {
            for d in half_open {
                if store.claim_probe(&d.id, probe.hold).await {
                    claim.id = Some(d.id.clone());
                    emit(
                        config.hook.as_ref(),
                        CooldownEvent::ProbeStarted { deployment: d.id.clone(), group: group.name().clone() },
                    );
                    keep = vec![d.clone()];
                    break;
                }
            }
        }
        if !keep.is_empty() {
            break keep;
        }
        let wait = earliest.map(|e| e.saturating_duration_since(Instant::now()));
        let within_deadline = |until: Instant| ctx.deadline.is_none_or(|d| until <= d);
        match (config.wait_for_cooldown, earliest, wait) {
            (Some(max), Some(at), Some(w)) if w <= max && within_deadline(at) => {
                tokio::time::sleep_until(at).await;
            }
            _ => {
                emit(config.hook.as_ref(), CooldownEvent::AllCoolingDown { group: group.name().clone(), earliest });
                return Err(all_cooling_down(&group, earliest));
            }
        }
    };
    ctx.candidates = Some(keep.into());
    let probing = claim.id.take();
    let claim = ProbeClaim { store: store.clone(), id: probing };
    let requested = ctx.facts().cooldown_time;
    let record = Record { shared: shared.clone(), group, claim: Some(claim), stream, requested };
    let result = inner.call(req).await.map_err(Into::into);
    record.finish(result)
}

/// What the layer records once an attempt has resolved: the success count, the failure rules, the
/// probe's verdict.
#[allow(missing_debug_implementations)] // named only in the type of the layer's response future
pub struct Record {
    shared: Arc<CooldownLayer>,
    group: Arc<Group>,
    claim: Option<ProbeClaim>,
    stream: bool,
    /// The request's `cooldown_time`.
    requested: Option<Duration>,
}

impl Record {
    /// Records the attempt's `result` and passes it on.
    pub(crate) fn finish(
        self,
        result: Result<http::Response<RouteBody>, BoxError>,
    ) -> Result<http::Response<RouteBody>, BoxError> {
        let Record { shared, group, mut claim, stream, requested } = self;
        let store = &shared.store;
        let probing = claim.as_ref().and_then(|c| c.id.clone());
        match result {
            // The common answer: complete, not a probe. Counting its success is bookkeeping the
            // answer does not wait for; the store counts it at once, with no future to box.
            Ok(resp) if !stream && probing.is_none() => {
                if let Some(served) = resp.extensions().get::<Served>() {
                    store.run_bookkeeping(Bookkeeping::Success(&served.deployment));
                }
                Ok(resp)
            }
            Ok(mut resp) => {
                let served = resp.extensions().get::<Served>().map(|s| s.deployment.clone());
                if let Some(id) = served {
                    let recovered = probing.as_ref() == Some(&id);
                    if recovered && let Some(c) = &mut claim {
                        c.settle();
                    }
                    if stream {
                        // A stream's outcome is known at its end (as LiteLLM logs a stream's success
                        // once it completes): counting a success at the first chunk and a failure
                        // at a cut would make a deployment that cuts every stream look 50% healthy.
                        watch_stream_end(resp.body_mut(), shared.clone(), group.clone(), id.clone(), requested);
                        if !recovered {
                            return Ok(resp);
                        }
                    }
                    // Counting the success is bookkeeping: the answer does not wait. The store
                    // counts it at once, with no future to box.
                    if !recovered {
                        store.run_bookkeeping(Bookkeeping::Success(&id));
                        return Ok(resp);
                    }
                    // The probe succeeded: count it and end the cooldown.
                    let shared = shared.clone();
                    store.run_bookkeeping(async move {
                        let store = &shared.store;
                        if !stream {
                            store.record_outcome(&id, true).await;
                        }
                        store.clear_cooldown(&id).await;
                        emit(
                            shared.config.hook.as_ref(),
                            CooldownEvent::Recovered { deployment: id.clone(), group: group.name().clone() },
                        );
                    });
                }
                Ok(resp)
            }
            Err(err) => {
                if let Some(failure) = AttemptFailure::of(&err) {
                    let was_probe = probing.as_ref() == Some(&failure.deployment);
                    if was_probe && let Some(c) = &mut claim {
                        c.settle();
                    }
                    // The cooldown rules run off the request path: the error goes back at once (the
                    // retry layer never picks the failed deployment again in this call).
                    let shared = shared.clone();
                    store.run_bookkeeping(async move {
                        on_failure(&shared.store, &shared.config, &group, failure, was_probe, requested).await;
                    });
                }
                Err(err)
            }
        }
    }
}

/// After the attempt polled in place: its outcome recorded.
impl<F> Then<F> for Record {
    fn then(self, result: Result<http::Response<RouteBody>, BoxError>, _: &F) -> Next {
        Next::Done(self.finish(result))
    }
}

/// Counts a stream's outcome when it ends: a success when it completed, a failure of its
/// deployment when it broke after its first chunk (a client hanging up counts neither).
fn watch_stream_end(
    body: &mut RouteBody,
    shared: Arc<CooldownLayer>,
    group: Arc<Group>,
    id: DeploymentId,
    requested: Option<Duration>,
) {
    body.on_end(move |end| {
        let outcome = match end.kind {
            BodyEndKind::Complete => None,
            BodyEndKind::Failed(outcome) => Some(outcome),
            BodyEndKind::Dropped => return,
        };
        let store = shared.store.clone();
        let Some(outcome) = outcome else {
            store.run_bookkeeping(Bookkeeping::Success(&id));
            return;
        };
        store.run_bookkeeping(async move {
            let failure = AttemptFailure {
                deployment: id,
                outcome,
                status: None,
                retry_after: None,
                message: "stream failed mid-way".into(),
            };
            on_failure(&shared.store, &shared.config, &group, failure, false, requested).await;
        });
    });
}
