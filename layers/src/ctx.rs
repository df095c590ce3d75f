//! Per-request routing state ([`RouteCtx`]), the carrier trait ([`RouteRequest`]), and the
//! response facts ([`Served`]).
//!
//! ```
//! use bytes::Bytes;
//! use switchyard_layers::{RouteCtx, RouteRequest};
//!
//! let mut req = http::Request::new(Bytes::from_static(b"{}"));
//! req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
//! assert_eq!(req.route_ctx().map(RouteCtx::requested), Some("gpt-4o"));
//! ```

use std::{
    fmt,
    sync::{
        Arc, OnceLock,
        atomic::{AtomicBool, AtomicU32, Ordering},
    },
    time::Duration,
};

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::{Candidates, Deployment, DeploymentId, Group, Outcome, RouteError};

/// What a request carries: a [`RouteCtx`], and a way to be cloned for a retry.
///
/// Implemented for `http::Request<B>` (the context sits in the extensions) whenever the body is
/// `Clone` (buffer it once at the edge: `Bytes`, `Full<Bytes>`). Users with their own typed
/// request can implement it too; every Switchyard layer is generic over it.
pub trait RouteRequest: Send + 'static {
    /// The routing context, when the request has one.
    fn route_ctx(&self) -> Option<&RouteCtx>;
    /// The routing context, mutably.
    fn route_ctx_mut(&mut self) -> Option<&mut RouteCtx>;
    /// A copy for another attempt; `None` when the request cannot be replayed.
    fn try_clone_request(&self) -> Option<Self>
    where
        Self: Sized;

    /// A copy kept to replay the request later (retry and fallback keep one per call), with its
    /// routing context either inside the copy (`None` beside it, the default: a
    /// [`try_clone_request`](Self::try_clone_request)) or beside it, for a request type whose copy
    /// is cheaper without it; [`attach_route_ctx`](Self::attach_route_ctx) puts it back into each
    /// replay. `http::Request` keeps it beside when the context is its only extension, which spares
    /// copying (and dropping) the extensions map on every call.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use switchyard_layers::{RouteCtx, RouteRequest};
    ///
    /// let mut req = http::Request::new(Bytes::from_static(b"{}"));
    /// req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
    /// let (template, ctx) = req.try_clone_for_replay().unwrap();
    /// assert!(template.route_ctx().is_none(), "the copy has no extensions to copy again");
    /// let mut replay = template.try_clone_request().unwrap();
    /// replay.attach_route_ctx(ctx.unwrap());
    /// assert_eq!(replay.route_ctx().map(RouteCtx::requested), Some("gpt-4o"));
    /// ```
    fn try_clone_for_replay(&self) -> Option<(Self, Option<RouteCtx>)>
    where
        Self: Sized,
    {
        self.try_clone_request().map(|copy| (copy, None))
    }

    /// Makes `ctx` the request's routing context (replacing the one it has; the default can only
    /// replace, so a type that keeps the context beside its replay copy must override this).
    fn attach_route_ctx(&mut self, ctx: RouteCtx) {
        if let Some(current) = self.route_ctx_mut() {
            *current = ctx;
        }
    }
}

impl<B: Clone + Send + 'static> RouteRequest for http::Request<B> {
    fn route_ctx(&self) -> Option<&RouteCtx> {
        self.extensions().get::<RouteCtx>()
    }

    fn route_ctx_mut(&mut self) -> Option<&mut RouteCtx> {
        self.extensions_mut().get_mut::<RouteCtx>()
    }

    fn try_clone_request(&self) -> Option<Self> {
        Some(self.clone())
    }

    fn try_clone_for_replay(&self) -> Option<(Self, Option<RouteCtx>)> {
        let extensions = self.extensions();
        match extensions.get::<RouteCtx>() {
            Some(ctx) if extensions.len() == 1 => {
                let mut copy = http::Request::new(self.body().clone());
                *copy.method_mut() = self.method().clone();
                *copy.uri_mut() = self.uri().clone();
                *copy.version_mut() = self.version();
                *copy.headers_mut() = self.headers().clone();
                Some((copy, Some(ctx.clone())))
            }
            _ => Some((self.clone(), None)),
        }
    }

    fn attach_route_ctx(&mut self, ctx: RouteCtx) {
        self.extensions_mut().insert(ctx);
    }
}

/// A request kept to replay, as [`RouteRequest::try_clone_for_replay`] makes it: the copy, and its
/// routing context as it was when the copy was taken, when the copy does not carry it.
pub(crate) struct Replay<R> {
    template: R,
    ctx: Option<RouteCtx>,
}

impl<R: RouteRequest> Replay<R> {
    /// A replay of `req` as it is now; `None` when it cannot be replayed.
    pub(crate) fn of(req: &R) -> Option<Self> {
        req.try_clone_for_replay().map(|(template, ctx)| Self { template, ctx })
    }

    /// The routing context every replay starts from.
    pub(crate) fn route_ctx(&self) -> Option<&RouteCtx> {
        self.ctx.as_ref().or_else(|| self.template.route_ctx())
    }

    /// A fresh copy of the request, its context as it was; `None` when it cannot be copied.
    pub(crate) fn next(&self) -> Option<R> {
        let mut next = self.template.try_clone_request()?;
        if let Some(ctx) = &self.ctx {
            next.attach_route_ctx(ctx.clone());
        }
        Some(next)
    }

    /// Hands this copy, the retry layer's when it gives up, to the fallback layer above when that
    /// layer asked for it (it keeps no copy of its own then): into the call's shared state, where
    /// that layer takes it; otherwise drops it. Nothing of it rides on the error.
    pub(crate) fn hand_back(self) {
        let Some(ctx) = self.route_ctx().filter(|c| c.hand_back_replay) else { return };
        let call = ctx.call.clone();
        // Whatever an earlier attempt left there is dropped outside the lock.
        let earlier = call.hand_back.lock().replace(Box::new(self));
        call.handed_back.store(true, Ordering::Release);
        drop(earlier);
    }

    /// The copy a retry layer below handed back into `trail`'s call, taken out of it.
    pub(crate) fn take_from(trail: &CallTrail) -> Option<Self> {
        if !trail.0.handed_back.load(Ordering::Acquire) {
            return None;
        }
        let any = trail.0.hand_back.lock().take()?;
        any.downcast::<Self>().ok().map(|b| *b)
    }
}

/// The kind of endpoint a request is for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Endpoint {
    /// `/v1/chat/completions`
    #[default]
    Chat,
    /// `/v1/completions`
    Completion,
    /// `/v1/embeddings`
    Embedding,
    /// `/v1/messages`: Anthropic's Messages API (the ingress dialect is Anthropic's).
    Messages,
    /// `/v1/responses`: OpenAI's Responses API.
    Responses,
    /// `GET` / `DELETE /v1/responses/{id}`, `POST /v1/responses/{id}/cancel`: an operation on a
    /// stored response ([`RequestFacts::previous_response`] holds the id), at the deployment
    /// that holds it.
    ResponseOp(ResponseOp),
    /// `/v1/messages/count_tokens`: Anthropic's token counter, asked of an Anthropic deployment
    /// (the gateway answers it locally unless configured otherwise).
    CountTokens,
}

/// An operation on a stored Responses API response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResponseOp {
    /// `GET /v1/responses/{id}`: read it.
    Get,
    /// `DELETE /v1/responses/{id}`: delete it.
    Delete,
    /// `POST /v1/responses/{id}/cancel`: cancel a background response.
    Cancel,
}

impl Endpoint {
    /// Whether the request is a conversation turn (chat completions, Anthropic messages, OpenAI
    /// responses): the kinds every chat-capable deployment can serve, translated when needed.
    pub fn is_conversation(self) -> bool {
        matches!(self, Self::Chat | Self::Messages | Self::Responses)
    }
}

/// Facts about the request, read once at the edge and shared by every attempt.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct RequestFacts {
    /// The endpoint.
    pub endpoint: Endpoint,
    /// The client asked for a stream.
    pub stream: bool,
    /// `metadata.tags` (or `tags`).
    pub tags: Vec<String>,
    /// `allowed_model_region`.
    pub region: Option<String>,
    /// `metadata.session_id` (or the session header).
    pub session: Option<String>,
    /// Who is calling: an API key or an opaque caller id (a 64-hex-digit value is taken as an
    /// already-hashed key, LiteLLM's `user_api_key_hash`). Read by caller-key affinity, which only
    /// ever keeps its sha256. The HTTP ingress does not set it; embedders that authenticate
    /// callers can. Never shown by `Debug`.
    pub caller: Option<crate::ApiKey>,
    /// Parameters the deployment must support (`response_format`, `tools`, ...).
    pub required_params: Vec<String>,
    /// The request carries images (`image_url` content parts): deployments known not to support
    /// vision are skipped (the pre-call layer's capability filter).
    pub images: bool,
    /// The request carries `tools`: deployments known not to support function calling are
    /// skipped (the pre-call layer's capability filter).
    pub tools: bool,
    /// Input tokens, counted at most once per request by whichever layer needs them first.
    pub input_tokens: OnceLock<u64>,
    /// Per-request `num_retries` (overrides every configured value).
    pub num_retries: Option<u32>,
    /// Per-request `fallbacks`: groups to try, in order, instead of the configured general table.
    pub fallbacks: Option<Vec<String>>,
    /// Per-request `disable_fallbacks`.
    pub disable_fallbacks: bool,
    /// Per-request `timeout` (or `request_timeout`): bounds each attempt's whole answer, and a
    /// stream's when no stream timeout is set anywhere; wins over the deployment's and the
    /// router's.
    pub timeout: Option<Duration>,
    /// Per-request `stream_timeout`: bounds a streaming attempt's first content chunk, then each
    /// gap between chunks; wins over the deployment's and the router's.
    pub stream_timeout: Option<Duration>,
    /// The request body as received (a cheap reference-counted handle on the ingress buffer), for
    /// checks that read more of it lazily (input tokens for context windows).
    pub body: Option<bytes::Bytes>,
    /// A Responses API request's `previous_response_id`: the conversation lives on the deployment
    /// that created that response, so the request must go there (response affinity).
    pub previous_response: Option<String>,
    /// A digest of the request's cacheable prefix (the tools, system prompt and messages up to
    /// the last `cache_control` marker, or a long system prompt): requests sharing it prefer the
    /// deployment that served it last, where the provider's prompt cache is warm.
    pub prompt_prefix: Option<[u8; 32]>,
}

impl RequestFacts {
    /// Facts for a non-streaming chat request.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the stream flag.
    pub fn streaming(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Sets the endpoint.
    pub fn endpoint(mut self, endpoint: Endpoint) -> Self {
        self.endpoint = endpoint;
        self
    }

    /// Sets the request tags.
    pub fn tags(mut self, tags: Vec<String>) -> Self {
        self.tags = tags;
        self
    }

    /// Sets `allowed_model_region`.
    pub fn region(mut self, region: Option<String>) -> Self {
        self.region = region;
        self
    }

    /// Sets the parameters the deployment must support (`response_format`, `tools`).
    pub fn required_params(mut self, params: Vec<String>) -> Self {
        self.required_params = params;
        self
    }

    /// Marks the request as carrying images (see [`RequestFacts::images`]).
    pub fn images(mut self, images: bool) -> Self {
        self.images = images;
        self
    }

    /// Marks the request as carrying tools (see [`RequestFacts::tools`]).
    pub fn tools(mut self, tools: bool) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the session id.
    pub fn session(mut self, session: Option<String>) -> Self {
        self.session = session;
        self
    }

    /// Sets the caller's key or id (see [`RequestFacts::caller`]).
    pub fn caller(mut self, caller: Option<crate::ApiKey>) -> Self {
        self.caller = caller;
        self
    }

    /// Sets the per-request retry count.
    pub fn num_retries(mut self, n: Option<u32>) -> Self {
        self.num_retries = n;
        self
    }

    /// Sets the per-request fallback groups.
    pub fn fallbacks(mut self, groups: Option<Vec<String>>) -> Self {
        self.fallbacks = groups;
        self
    }

    /// Disables fallbacks for this request.
    pub fn disable_fallbacks(mut self, disable: bool) -> Self {
        self.disable_fallbacks = disable;
        self
    }

    /// Sets the per-request attempt timeout (see [`RequestFacts::timeout`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use switchyard_layers::RequestFacts;
    ///
    /// let facts = RequestFacts::new().streaming(true).timeout(Some(Duration::from_secs(30)));
    /// assert_eq!(facts.timeout, Some(Duration::from_secs(30)));
    /// assert_eq!(facts.stream_timeout, None);
    /// ```
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the per-request stream timeout (see [`RequestFacts::stream_timeout`]).
    pub fn stream_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.stream_timeout = timeout;
        self
    }

    /// Keeps a handle on the request body for checks that read it lazily.
    pub fn with_body(mut self, body: bytes::Bytes) -> Self {
        self.body = Some(body);
        self
    }

    /// Records a known input-token count.
    pub fn with_input_tokens(self, tokens: u64) -> Self {
        let _ = self.input_tokens.set(tokens);
        self
    }
}

/// One failed attempt, as remembered in the call's trail (the attempt that served is described by
/// [`Served`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AttemptRecord {
    /// The group of the attempt.
    pub group: Arc<str>,
    /// The deployment that was tried.
    pub deployment: DeploymentId,
    /// The result.
    pub outcome: Outcome,
    /// How long the attempt took until its answer (or its first streamed chunk).
    pub duration: Duration,
    /// A short, secret-free message for failures.
    pub message: Option<String>,
}

/// Shared by every clone of one request (one reference count per copy): what the caller asked
/// for, and the attempts made so far, so a retry replaying a stored clone still sees them.
struct CallState {
    requested: Arc<str>,
    facts: RequestFacts,
    attempts: AtomicU32,
    trail: Mutex<Vec<AttemptRecord>>,
    /// The request copy a retry layer handed back to the fallback layer above it
    /// (`FallbackConfig::replay_via_retry`). While it is here it holds this state (a cycle): the
    /// fallback layer takes it at its call's first failure and empties it when its part of the
    /// call ends ([`HandBack`]).
    hand_back: Mutex<Option<Box<dyn std::any::Any + Send>>>,
    /// Whether `hand_back` was ever filled: a call that never failed checks this flag, not the lock.
    handed_back: AtomicBool,
}

impl fmt::Debug for CallState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallState")
            .field("attempts", &self.attempts)
            .field("trail", &self.trail.lock().len())
            .finish_non_exhaustive()
    }
}

/// Longest message kept in a trail record.
const TRAIL_MESSAGE_MAX: usize = 200;
/// Most records kept in a trail; attempts are bounded by retries and hops, this only guards memory.
const TRAIL_MAX: usize = 64;

/// Per-request routing state, carried in the request (see [`RouteRequest`]).
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
    /// Parallel-request limit for deployments that set no `max_parallel_requests` (the router's
    /// `default_max_parallel_requests`, recorded by the pre-call layer); the select layer takes
    /// the slot on the chosen deployment.
    pub default_max_parallel_requests: Option<u32>,
    /// The deployment holding the conversation this request continues cannot serve and the
    /// pre-call layer was told to route it as a new one
    /// ([`PreCallConfig::conversation_fallback`](crate::precall::PreCallConfig::conversation_fallback)):
    /// the provider removes `previous_response_id` from the body.
    pub drop_previous_response: bool,
    /// Set by a fallback layer that keeps no copy of the request
    /// ([`FallbackConfig::replay_via_retry`](crate::fallback::FallbackConfig::replay_via_retry)):
    /// the retry layer below hands the copy it keeps back into the call's shared state when it
    /// gives up.
    pub(crate) hand_back_replay: bool,
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
            default_max_parallel_requests: None,
            drop_previous_response: false,
            hand_back_replay: false,
            call: Arc::new(CallState {
                requested,
                facts,
                attempts: AtomicU32::new(0),
                trail: Mutex::new(Vec::new()),
                hand_back: Mutex::new(None),
                handed_back: AtomicBool::new(false),
            }),
        }
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

    /// The candidates for this attempt, resolving the group first when no layer has yet.
    ///
    /// Resolution uses `registry`; the candidates are the group's unblocked deployments minus the
    /// excluded ones.
    pub fn resolve_candidates(&mut self, registry: &crate::Registry) -> Result<&mut Candidates, RouteError> {
        if self.group.is_none() {
            let resolved = registry.resolve(&self.target)?;
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
    pub fn record(&self, mut record: AttemptRecord) {
        if let Some(m) = &mut record.message
            && m.len() > TRAIL_MESSAGE_MAX
        {
            let mut cut = TRAIL_MESSAGE_MAX;
            while !m.is_char_boundary(cut) {
                cut -= 1;
            }
            m.truncate(cut);
            m.push('…');
        }
        let mut trail = self.0.trail.lock();
        if trail.len() < TRAIL_MAX {
            trail.push(record);
        }
    }

    /// The attempts so far, oldest first.
    pub fn records(&self) -> Vec<AttemptRecord> {
        self.0.trail.lock().clone()
    }

    /// The call's request facts.
    pub(crate) fn facts(&self) -> &RequestFacts {
        &self.0.facts
    }
}

/// The fallback layer's hold on the call's hand-back slot (`replay_via_retry`): empties it when
/// the layer's part of the call ends, however it ends, so a copy handed back and never taken does
/// not keep the call's state alive through the cycle between them.
pub(crate) struct HandBack(pub(crate) CallTrail);

impl Drop for HandBack {
    fn drop(&mut self) {
        if self.0.0.handed_back.load(Ordering::Acquire) {
            let left = self.0.0.hand_back.lock().take();
            drop(left);
        }
    }
}

/// The id under which the serving deployment keeps the state of a conversation (an OpenAI
/// Responses API `id`), inserted into the response extensions by the provider. The pre-call
/// layer remembers which deployment holds it, so a follow-up naming it
/// ([`RequestFacts::previous_response`]) reaches that deployment from any replica.
///
/// ```
/// use switchyard_layers::ResponseId;
/// assert_eq!(ResponseId::new("resp_1").as_str(), "resp_1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponseId(Arc<str>);

impl ResponseId {
    /// The id `id`.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Which deployment served a response, inserted into the response extensions.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Served {
    /// The group that served.
    pub group: Arc<str>,
    /// The deployment that served.
    pub deployment: DeploymentId,
    /// The provider model that served (shared with the deployment, not copied).
    pub model: Arc<str>,
    /// Attempts made in the whole call, this one included.
    pub attempts: u32,
    /// Retries made in the group that answered (0 when its first attempt served).
    pub retries: u32,
    /// Time the serving attempt spent in the provider until its answer (for a stream: its first
    /// content chunk). The call's time minus this is the routing overhead plus failed attempts.
    pub upstream: Duration,
    /// Fallback hops made.
    pub hops: u32,
    /// Earlier attempts of this call that failed, oldest first.
    pub failed: Vec<AttemptRecord>,
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::{Replay, RouteCtx, RouteRequest};

    fn request(extra: bool) -> http::Request<Bytes> {
        let mut req = http::Request::builder()
            .method("POST")
            .uri("/v1/chat/completions")
            .header("x-caller", "a")
            .body(Bytes::from_static(b"{}"))
            .unwrap();
        req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
        if extra {
            req.extensions_mut().insert(7u32);
        }
        req
    }

    /// Every replay is the request as it was when the copy was taken, its context and any other
    /// extension included, whatever the first attempt did to its own context.
    #[test]
    fn replays_are_the_request_as_it_was() {
        for extra in [false, true] {
            let mut req = request(extra);
            let replay = Replay::of(&req).unwrap();
            assert_eq!(replay.ctx.is_some(), !extra, "the context is kept beside only when it is alone");
            req.route_ctx_mut().unwrap().hop = 3;
            assert_eq!(replay.route_ctx().unwrap().hop, 0);
            for _ in 0..2 {
                let next = replay.next().unwrap();
                assert_eq!((next.method(), next.uri().path()), (req.method(), "/v1/chat/completions"));
                assert_eq!(next.headers()["x-caller"], "a");
                assert_eq!(next.body(), req.body());
                let ctx = next.route_ctx().expect("each replay carries a context");
                assert_eq!((ctx.requested(), ctx.hop), ("gpt-4o", 0));
                assert_eq!(next.extensions().get::<u32>().copied(), extra.then_some(7));
                assert_eq!(next.extensions().len(), 1 + usize::from(extra));
            }
        }
    }
}
