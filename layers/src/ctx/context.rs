//! The per-request routing context ([`RouteCtx`]) and the state every copy of one request shares.

use std::{
    fmt,
    sync::{
        Arc, OnceLock,
        atomic::{AtomicU32, Ordering},
    },
};

use tokio::time::Instant;

use super::{AttemptRecord, PreRouteDecision, RequestFacts, trail::Trail};
use crate::{Candidates, Deployment, DeploymentId, Group, RouteError, fallback_tables::FallbackHint};

/// Shared by every clone of one request (one reference count per copy): what the caller asked
/// for, the attempts made so far (so a retry replaying a stored clone still sees them), and what
/// a fallback layer above said about the call.
struct CallState {
    requested: Arc<str>,
    facts: RequestFacts,
    attempts: AtomicU32,
    trail: Trail,
    fallback_hint: OnceLock<FallbackHint>,
    pre_route: OnceLock<Arc<PreRouteDecision>>,
    /// The groups whose health filter failed open in this call (every candidate unhealthy).
    health_fail_open: parking_lot::Mutex<Vec<Arc<str>>>,
}

impl fmt::Debug for CallState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallState")
            .field("attempts", &self.attempts)
            .field("trail", &self.trail.len())
            .field("fallback_hint", &self.fallback_hint.get().is_some())
            .field("pre_route", &self.pre_route.get().map(|d| &d.target))
            .finish_non_exhaustive()
    }
}

/// Per-request routing state, carried in the request (see [`RouteRequest`](super::RouteRequest)).
///
/// Layers only subtract from `candidates`; the select layer sets `selected`. Counters and the
/// trail are shared by every clone of the request.
#[derive(Clone)]
#[non_exhaustive]
pub struct RouteCtx {
    /// The name this hop routes to: the requested name, then each fallback group.
    target: Arc<str>,
    /// The resolved group of the current hop; `None` until a layer resolves the requested name.
    pub group: Option<Arc<Group>>,
    /// The alias the caller used, if any.
    pub alias: Option<Arc<str>>,
    /// Deployments that may still serve this attempt; `None` until resolved for the attempt.
    pub candidates: Option<Candidates>,
    /// Deployments this call must not use again (failed earlier in the group).
    pub excluded: Vec<DeploymentId>,
    /// The deployment chosen for this attempt.
    pub selected: Option<Arc<Deployment>>,
    /// Fallback hops made so far.
    pub hop: u32,
    /// The call's deadline, if any; attempts and waits never run past it.
    pub deadline: Option<Instant>,
    /// Tokens the chosen deployment must reserve against its TPM limit (the input estimate).
    pub reserve_tokens: u64,
    /// Which declared RPM / TPM limits the select layer enforces when it reserves on its pick, as
    /// the pre-call layer decided ([`EnforcedLimits`](crate::state::EnforcedLimits): LiteLLM's
    /// reading by default); the select layer adds its own and its strategy's.
    pub enforced_limits: crate::state::EnforcedLimits,
    /// Parallel-request limit for deployments that set no `max_parallel_requests` (the router's
    /// `default_max_parallel_requests`, recorded by the pre-call layer); the select layer takes
    /// the slot on the chosen deployment.
    pub default_max_parallel_requests: Option<u32>,
    /// The deployment holding the conversation this request continues cannot serve and the
    /// pre-call layer was told to route it as a new one
    /// ([`PreCallConfig::conversation_fallback`](crate::precall::PreCallConfig::conversation_fallback)):
    /// the provider removes `previous_response_id` from the body.
    pub drop_previous_response: bool,
    /// The requested name, the facts, the attempt counter and the trail.
    call: Arc<CallState>,
}

impl fmt::Debug for RouteCtx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RouteCtx")
            .field("requested", &self.call.requested)
            .field("target", &self.target)
            .field("group", &self.group.as_ref().map(|g| g.name()))
            .field("candidates", &self.candidates)
            .field("excluded", &self.excluded)
            .field("selected", &self.selected.as_ref().map(|d| &d.id))
            .field("hop", &self.hop)
            .field("attempts", &self.attempts())
            .field("facts", &self.call.facts)
            .finish()
    }
}

impl RouteCtx {
    /// A context for a request that asked for `model`.
    pub fn new(model: impl Into<Arc<str>>) -> Self {
        Self::with_facts(model, RequestFacts::default())
    }

    /// A context with request facts.
    pub fn with_facts(model: impl Into<Arc<str>>, facts: RequestFacts) -> Self {
        let requested: Arc<str> = model.into();
        Self {
            target: requested.clone(),
            group: None,
            alias: None,
            candidates: None,
            excluded: Vec::new(),
            selected: None,
            hop: 0,
            deadline: None,
            reserve_tokens: 0,
            enforced_limits: crate::state::EnforcedLimits::NONE,
            default_max_parallel_requests: None,
            drop_previous_response: false,
            call: Arc::new(CallState {
                requested,
                facts,
                attempts: AtomicU32::new(0),
                trail: Trail::default(),
                fallback_hint: OnceLock::new(),
                pre_route: OnceLock::new(),
                health_fail_open: parking_lot::Mutex::new(Vec::new()),
            }),
        }
    }

    /// Notes that the health filter kept every candidate of `group` although each was marked
    /// unhealthy (it fails open rather than leave none); shared by every copy of the request,
    /// each group once.
    pub fn note_health_fail_open(&self, group: Arc<str>) {
        note_fail_open(&self.call, group);
    }

    /// The groups whose health filter failed open in this call, in order.
    pub fn health_fail_open(&self) -> Vec<Arc<str>> {
        self.call.health_fail_open.lock().clone()
    }

    /// The name the caller asked for.
    pub fn requested(&self) -> &str {
        &self.call.requested
    }

    /// The name the current hop routes to: the requested name, or the fallback group of a hop.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The target as the shared name it is stored as: a reference-count bump, not a copy.
    pub(crate) fn target_name(&self) -> &Arc<str> {
        &self.target
    }

    /// Moves the request to another model group (a fallback hop): sets the target, clears the
    /// resolved group, candidates, exclusions and selection, and counts the hop. The deadline,
    /// the facts and the trail are kept.
    pub fn hop_to(&mut self, group: impl Into<Arc<str>>) {
        self.target = group.into();
        self.group = None;
        self.alias = None;
        self.candidates = None;
        self.excluded.clear();
        self.selected = None;
        self.hop += 1;
    }

    /// The request facts.
    pub fn facts(&self) -> &RequestFacts {
        &self.call.facts
    }

    /// Attempts started so far in this call (across retries and hops).
    pub fn attempts(&self) -> u32 {
        self.call.attempts.load(Ordering::Relaxed)
    }

    /// Counts a new attempt and returns its number (1 for the first).
    pub fn begin_attempt(&self) -> u32 {
        self.call.attempts.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Appends an attempt to the call's trail (bounded; messages truncated).
    pub fn record_attempt(&self, record: AttemptRecord) {
        self.call_trail().record(record);
    }

    /// The attempts of this call so far, oldest first.
    pub fn trail(&self) -> Vec<AttemptRecord> {
        self.call_trail().records()
    }

    /// A cheap handle on the call's shared trail, to record an attempt after the request moved on.
    pub fn call_trail(&self) -> CallTrail {
        CallTrail(self.call.clone())
    }

    /// What a fallback layer above said about the call (see [`FallbackHint`]): the first hint
    /// given in the call, shared by every copy of the request; `None` when no layer gave one.
    pub fn fallback_hint(&self) -> Option<&FallbackHint> {
        self.call.fallback_hint.get()
    }

    /// Whether an answer a content filter cut (`finish_reason: content_filter`) should fail as a
    /// content-policy failure so that a fallback serves it: a fallback layer above gave its hint,
    /// the request does not set `disable_fallbacks`, a hop is left under `max_fallbacks`, and the
    /// tables take such answers for this group
    /// ([`FallbackTables::takes_filtered_answers`](crate::fallback_tables::FallbackTables::takes_filtered_answers),
    /// looked up by the name the hop routed to and the group it resolved to). The provider's
    /// classifier asks it for a non-streamed answer; otherwise the answer is returned as it is,
    /// as LiteLLM does when no fallback is available.
    pub fn content_filter_falls_back(&self) -> bool {
        let Some(hint) = self.fallback_hint() else { return false };
        let tables = hint.tables();
        if self.facts().disable_fallbacks || self.hop >= tables.max_fallbacks {
            return false;
        }
        let group = self.group.as_ref().map(|g| g.name().clone());
        let mut names: Vec<&str> = vec![&self.target];
        names.extend(group.as_deref());
        tables.takes_filtered_answers(&names)
    }

    /// Tells the layers below that a fallback layer will take the call's failures, with `hint`'s
    /// tables. Once per call: the outermost fallback layer's hint stays, and a later one (an inner
    /// fallback layer's, or a hop's) is ignored; returns whether `hint` was kept. Every copy of
    /// the request sees it (it lives in the call's shared state).
    ///
    /// ```
    /// use switchyard_layers::{RouteCtx, fallback_tables::{FallbackHint, FallbackTables}};
    ///
    /// let ctx = RouteCtx::new("gpt-4o");
    /// let copy = ctx.clone();
    /// assert!(ctx.set_fallback_hint(FallbackHint::new(FallbackTables::default())));
    /// assert!(!ctx.set_fallback_hint(FallbackHint::new(FallbackTables::default())), "once per call");
    /// assert!(copy.fallback_hint().is_some());
    /// ```
    pub fn set_fallback_hint(&self, hint: FallbackHint) -> bool {
        self.call.fallback_hint.set(hint).is_ok()
    }

    /// What a pre-router decided for the call (see [`PreRouteDecision`]), shared by every copy of
    /// the request; `None` when no pre-router chose a group.
    pub fn pre_route(&self) -> Option<&Arc<PreRouteDecision>> {
        self.call.pre_route.get()
    }

    /// Routes the call to the group a pre-router chose, as if the client had asked for it: the
    /// target becomes `decision.target` (the resolved group, candidates and selection are
    /// cleared, no hop is counted), while [`requested`](Self::requested) keeps the name the
    /// client asked for. Once per call and only before any hop: returns whether `decision` was
    /// kept; a later one changes nothing.
    ///
    /// ```
    /// use switchyard_layers::{RouteCtx, ctx::PreRouteDecision};
    ///
    /// let mut ctx = RouteCtx::new("smart-router");
    /// assert!(ctx.pre_route_to(PreRouteDecision::new("gpt-4o-mini", "heuristic_scorer")));
    /// assert_eq!((ctx.requested(), ctx.target(), ctx.hop), ("smart-router", "gpt-4o-mini", 0));
    /// assert!(!ctx.pre_route_to(PreRouteDecision::new("o3", "heuristic_scorer")), "once per call");
    /// assert_eq!(ctx.pre_route().map(|d| &*d.target), Some("gpt-4o-mini"));
    /// ```
    pub fn pre_route_to(&mut self, decision: PreRouteDecision) -> bool {
        if self.hop > 0 || self.call.pre_route.get().is_some() {
            return false;
        }
        let target = decision.target.clone();
        if self.call.pre_route.set(Arc::new(decision)).is_err() {
            return false;
        }
        self.target = target;
        self.group = None;
        self.alias = None;
        self.candidates = None;
        self.selected = None;
        true
    }

    /// The candidates for this attempt, resolving the group first when no layer has yet.
    ///
    /// Resolution uses `registry`; the candidates are the group's unblocked deployments minus the
    /// excluded ones.
    pub fn resolve_candidates(&mut self, registry: &crate::Registry) -> Result<&mut Candidates, RouteError> {
        if self.group.is_none() {
            // `specific_deployment` names the first group's deployments; a fallback hop names a group.
            let resolved = if self.facts().specific_deployment && self.hop == 0 {
                registry.resolve_specific(&self.target)?
            } else {
                registry.resolve(&self.target)?
            };
            self.group = Some(resolved.group);
            self.alias = resolved.alias;
        }
        if self.candidates.is_none() {
            let group = self.group.as_ref().expect("group resolved above");
            let mut list = group.candidates();
            if !self.excluded.is_empty() {
                list.retain(|d| !self.excluded.contains(&d.id));
            }
            self.candidates = Some(list);
        }
        Ok(self.candidates.as_mut().expect("candidates set above"))
    }
}

/// A handle on the trail shared by every clone of one request; see [`RouteCtx::call_trail`].
#[derive(Clone, Debug)]
pub struct CallTrail(Arc<CallState>);

impl CallTrail {
    /// Appends an attempt (bounded; messages truncated).
    pub fn record(&self, record: AttemptRecord) {
        self.0.trail.record(record);
    }

    /// The attempts so far, oldest first.
    pub fn records(&self) -> Vec<AttemptRecord> {
        self.0.trail.records()
    }

    /// The groups whose health filter failed open in this call (see
    /// [`RouteCtx::health_fail_open`]).
    pub fn health_fail_open(&self) -> Vec<Arc<str>> {
        self.0.health_fail_open.lock().clone()
    }

    /// What a pre-router decided for the call, if one did (see [`RouteCtx::pre_route`]).
    pub fn pre_route(&self) -> Option<&Arc<PreRouteDecision>> {
        self.0.pre_route.get()
    }
}

/// Most groups noted as failed open in one call (hops are bounded; this only guards memory).
const FAIL_OPEN_MAX: usize = 16;

fn note_fail_open(call: &CallState, group: Arc<str>) {
    let mut noted = call.health_fail_open.lock();
    if noted.len() < FAIL_OPEN_MAX && !noted.contains(&group) {
        noted.push(group);
    }
}
