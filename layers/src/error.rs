//! [`RouteError`]: every failure the routing stack reports, ours and the upstream's.
//!
//! Layers return `BoxError` at their boundary (tower's convention); a `RouteError` is always
//! somewhere in its source chain, and [`RouteError::find`] digs it out whatever the layer order.
//!
//! ```
//! use switchyard_layers::{BoxError, RouteError, RouteErrorKind};
//!
//! let err: BoxError = RouteError::unknown_group("gpt-5", vec!["gpt-4o".into()]).into();
//! let route = RouteError::find(&*err).expect("a routing error");
//! assert_eq!(route.kind(), RouteErrorKind::UnknownGroup);
//! assert!(route.to_string().contains("gpt-4o"));
//! ```

use std::{error::Error as StdError, fmt, sync::Arc, time::Duration};

use bytes::Bytes;
use http::StatusCode;

use crate::{AttemptRecord, DeploymentId, Outcome};

/// The error type at layer boundaries.
pub type BoxError = Box<dyn StdError + Send + Sync>;

/// What went wrong, as a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RouteErrorKind {
    /// The requested name is not a group, alias, pattern or deployment id.
    UnknownGroup,
    /// The group has no deployment left to try (all blocked, excluded or removed).
    NoCandidates,
    /// Every candidate is cooling down; [`RouteError::retry_after`] says when the first returns.
    AllCoolingDown,
    /// Every candidate is at its RPM/TPM or parallel-request limit.
    RateLimited,
    /// The prompt fits none of the candidates' context windows.
    ContextWindowExceeded,
    /// Every candidate's budget is spent.
    BudgetExceeded,
    /// The request may not use any deployment of the group (tag routing: its tags match no
    /// deployment and the group has no `default` one).
    NotAllowed,
    /// An attempt reached a deployment and failed; see [`RouteError::outcome`].
    Upstream,
    /// The request has no [`RouteCtx`](crate::RouteCtx): no ingress layer ran.
    MissingContext,
    /// The request is malformed (not JSON, no `model`, body too large, ...).
    InvalidRequest,
    /// The request needs a capability (images: vision; tools: function calling) that every
    /// candidate is known not to have; [`RouteError::capability`] names it (400, general
    /// fallbacks apply).
    Unsupported,
    /// The request continues a conversation (a Responses API `previous_response_id`) held by a
    /// deployment that cannot serve now; no other deployment has the conversation, so neither
    /// retries nor fallbacks apply (503).
    ConversationUnavailable,
}

impl RouteErrorKind {
    /// A short stable name for logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownGroup => "unknown_group",
            Self::NoCandidates => "no_candidates",
            Self::AllCoolingDown => "all_cooling_down",
            Self::RateLimited => "rate_limited",
            Self::ContextWindowExceeded => "context_window_exceeded",
            Self::BudgetExceeded => "budget_exceeded",
            Self::NotAllowed => "not_allowed",
            Self::Upstream => "upstream",
            Self::MissingContext => "missing_context",
            Self::InvalidRequest => "invalid_request",
            Self::Unsupported => "unsupported",
            Self::ConversationUnavailable => "conversation_unavailable",
        }
    }
}

/// A routing failure: one of our refusals or a classified upstream failure.
///
/// Opaque with accessors (hyper-util style), so fields can be added without breaking callers.
pub struct RouteError {
    inner: Box<Inner>,
}

struct Inner {
    kind: RouteErrorKind,
    message: String,
    group: Option<Arc<str>>,
    deployment: Option<DeploymentId>,
    outcome: Option<Outcome>,
    retry_after: Option<Duration>,
    status: Option<StatusCode>,
    body: Option<Bytes>,
    known: Vec<String>,
    capability: Option<&'static str>,
    trail: Vec<AttemptRecord>,
    source: Option<BoxError>,
}

impl RouteError {
    /// A new error of `kind` with a human-readable message.
    pub fn new(kind: RouteErrorKind, message: impl Into<String>) -> Self {
        Self {
            inner: Box::new(Inner {
                kind,
                message: message.into(),
                group: None,
                deployment: None,
                outcome: None,
                retry_after: None,
                status: None,
                body: None,
                known: Vec::new(),
                capability: None,
                trail: Vec::new(),
                source: None,
            }),
        }
    }

    /// The requested name resolves to nothing; `known` lists what does.
    pub fn unknown_group(requested: &str, known: Vec<String>) -> Self {
        let mut e = Self::new(
            RouteErrorKind::UnknownGroup,
            format!("unknown model group `{requested}`; known: {}", render_list(&known)),
        );
        e.inner.known = known;
        e
    }

    /// An attempt on `deployment` failed upstream with `outcome`.
    pub fn upstream(outcome: Outcome, deployment: DeploymentId, message: impl Into<String>) -> Self {
        Self::new(RouteErrorKind::Upstream, message).with_outcome(outcome).with_deployment(deployment)
    }

    /// No candidate of `group` has `capability` (LiteLLM's flag name, `supports_vision`), which
    /// the request needs: [`RouteErrorKind::Unsupported`].
    ///
    /// ```
    /// use switchyard_layers::{RouteError, RouteErrorKind};
    /// let e = RouteError::unsupported("gpt-3.5", "supports_vision", "the request carries images");
    /// assert_eq!((e.kind(), e.capability()), (RouteErrorKind::Unsupported, Some("supports_vision")));
    /// assert_eq!(e.http_status(), 400);
    /// assert!(e.to_string().contains("supports_vision") && e.to_string().contains("`gpt-3.5`"));
    /// ```
    pub fn unsupported(group: &str, capability: &'static str, why: &str) -> Self {
        let e = Self::new(
            RouteErrorKind::Unsupported,
            format!("no deployment of `{group}` supports what the request needs: {why}, and every one is known not to have `{capability}`"),
        )
        .with_group(group.into());
        e.with_capability(capability)
    }

    /// Names the capability a [`RouteErrorKind::Unsupported`] error is about (kept when a layer
    /// rewraps the error).
    pub fn with_capability(mut self, capability: &'static str) -> Self {
        self.inner.capability = Some(capability);
        self
    }

    /// Names the group the error happened in.
    pub fn with_group(mut self, group: Arc<str>) -> Self {
        self.inner.group = Some(group);
        self
    }

    /// Names the deployment the error happened on.
    pub fn with_deployment(mut self, id: DeploymentId) -> Self {
        self.inner.deployment = Some(id);
        self
    }

    /// Sets the outcome class.
    pub fn with_outcome(mut self, outcome: Outcome) -> Self {
        self.inner.outcome = Some(outcome);
        self
    }

    /// How long to wait before trying again.
    pub fn with_retry_after(mut self, d: Duration) -> Self {
        self.inner.retry_after = Some(d);
        self
    }

    /// Keeps the upstream status and body so an HTTP edge can answer with them.
    pub fn with_upstream_response(mut self, status: StatusCode, body: Bytes) -> Self {
        self.inner.status = Some(status);
        self.inner.body = Some(body);
        self
    }

    /// Attaches the trail of every attempt of the call (group, deployment, outcome, message).
    pub fn with_trail(mut self, trail: Vec<AttemptRecord>) -> Self {
        self.inner.trail = trail;
        self
    }

    /// Attaches the underlying cause.
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.inner.source = Some(source.into());
        self
    }

    /// The class.
    pub fn kind(&self) -> RouteErrorKind {
        self.inner.kind
    }

    /// The outcome class: the upstream's for [`RouteErrorKind::Upstream`], and the matching class
    /// for our own refusals (rate limited, context window), so fallback tables treat both alike.
    pub fn outcome(&self) -> Option<Outcome> {
        self.inner.outcome.or(match self.inner.kind {
            RouteErrorKind::RateLimited | RouteErrorKind::AllCoolingDown => Some(Outcome::RateLimited),
            RouteErrorKind::ContextWindowExceeded => Some(Outcome::ContextWindowExceeded),
            _ => None,
        })
    }

    /// The group the error happened in.
    pub fn group(&self) -> Option<&Arc<str>> {
        self.inner.group.as_ref()
    }

    /// The deployment the error happened on.
    pub fn deployment(&self) -> Option<&DeploymentId> {
        self.inner.deployment.as_ref()
    }

    /// How long the upstream (or our limits) asked to wait.
    pub fn retry_after(&self) -> Option<Duration> {
        self.inner.retry_after
    }

    /// The upstream HTTP status, when an upstream answered.
    pub fn upstream_status(&self) -> Option<StatusCode> {
        self.inner.status
    }

    /// The upstream body, when an upstream answered.
    pub fn upstream_body(&self) -> Option<&Bytes> {
        self.inner.body.as_ref()
    }

    /// For [`RouteErrorKind::Unsupported`]: the capability no candidate has (`supports_vision`,
    /// `supports_function_calling`).
    pub fn capability(&self) -> Option<&'static str> {
        self.inner.capability
    }

    /// For [`RouteErrorKind::UnknownGroup`]: the names that do resolve.
    pub fn known_groups(&self) -> &[String] {
        &self.inner.known
    }

    /// Every attempt of the call, oldest first, when the outermost routing layer attached them.
    pub fn trail(&self) -> &[AttemptRecord] {
        &self.inner.trail
    }

    /// The message without the kind.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// The HTTP status an edge should answer with.
    pub fn http_status(&self) -> StatusCode {
        if let Some(s) = self.inner.status {
            return s;
        }
        match self.inner.kind {
            RouteErrorKind::UnknownGroup => StatusCode::NOT_FOUND,
            RouteErrorKind::InvalidRequest | RouteErrorKind::ContextWindowExceeded | RouteErrorKind::Unsupported => {
                StatusCode::BAD_REQUEST
            }
            RouteErrorKind::RateLimited | RouteErrorKind::AllCoolingDown | RouteErrorKind::BudgetExceeded => {
                StatusCode::TOO_MANY_REQUESTS
            }
            RouteErrorKind::NotAllowed => StatusCode::FORBIDDEN,
            RouteErrorKind::NoCandidates | RouteErrorKind::ConversationUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            RouteErrorKind::MissingContext => StatusCode::INTERNAL_SERVER_ERROR,
            RouteErrorKind::Upstream => self.inner.outcome.map_or(StatusCode::BAD_GATEWAY, Outcome::http_status),
        }
    }

    /// Finds the `RouteError` in `err` or its source chain.
    pub fn find<'a>(err: &'a (dyn StdError + 'static)) -> Option<&'a RouteError> {
        let mut cur: Option<&'a (dyn StdError + 'static)> = Some(err);
        while let Some(e) = cur {
            if let Some(route) = e.downcast_ref::<RouteError>() {
                return Some(route);
            }
            cur = e.source();
        }
        None
    }

    /// Takes the `RouteError` out of a boxed error when it is one; otherwise wraps it as an
    /// upstream transport failure so callers always get a `RouteError`.
    pub fn from_boxed(err: BoxError) -> RouteError {
        match err.downcast::<RouteError>() {
            Ok(route) => *route,
            Err(other) => match RouteError::find(&*other) {
                Some(route) => {
                    let mut copy = RouteError::new(route.kind(), route.message());
                    copy.inner.outcome = route.inner.outcome;
                    copy.inner.deployment = route.inner.deployment.clone();
                    copy.inner.group = route.inner.group.clone();
                    copy.inner.retry_after = route.inner.retry_after;
                    copy.inner.status = route.inner.status;
                    copy.inner.body = route.inner.body.clone();
                    copy.inner.known = route.inner.known.clone();
                    copy.inner.capability = route.inner.capability;
                    copy.inner.trail = route.inner.trail.clone();
                    copy.with_source(other)
                }
                None => RouteError::new(RouteErrorKind::Upstream, other.to_string())
                    .with_outcome(Outcome::Transport)
                    .with_source(other),
            },
        }
    }
}

fn render_list(names: &[String]) -> String {
    const SHOWN: usize = 20;
    if names.is_empty() {
        return "(none)".to_owned();
    }
    let mut s = names.iter().take(SHOWN).map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    s
}

impl fmt::Debug for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.inner;
        let mut d = f.debug_struct("RouteError");
        d.field("kind", &i.kind).field("message", &i.message);
        if let Some(g) = &i.group {
            d.field("group", g);
        }
        if let Some(id) = &i.deployment {
            d.field("deployment", id);
        }
        if let Some(o) = &i.outcome {
            d.field("outcome", o);
        }
        if let Some(r) = &i.retry_after {
            d.field("retry_after", r);
        }
        if let Some(s) = &i.status {
            d.field("status", s);
        }
        d.finish()
    }
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.inner;
        f.write_str(&i.message)?;
        if let Some(g) = &i.group {
            write!(f, " (group `{g}`")?;
            if let Some(d) = &i.deployment {
                write!(f, ", deployment `{d}`")?;
            }
            f.write_str(")")?;
        } else if let Some(d) = &i.deployment {
            write!(f, " (deployment `{d}`)")?;
        }
        Ok(())
    }
}

impl StdError for RouteError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.inner.source.as_deref().map(|e| e as &(dyn StdError + 'static))
    }
}
