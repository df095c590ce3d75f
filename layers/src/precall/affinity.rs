//! Affinity: requests of one session (or one caller key) stick to the deployment that last
//! served them, so the upstream's prompt cache keeps hitting.
//!
//! The key is `session:{group}:{session_id}` (from `metadata.session_id`), else, with
//! [`AffinityConfig::by_api_key`], `key:{group}:{sha256(caller key)}` (from
//! [`RequestFacts::caller`](crate::RequestFacts::caller)). When the key has a sticky deployment
//! that survived every other check of this attempt, the candidates narrow to it; otherwise
//! (cooling down, blocked, removed, over a limit or budget, excluded after a failure) they are
//! left alone and the strategy picks as usual. After a served attempt the key sticks to the
//! deployment that served, for `ttl` from then (each use refreshes it).

use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::{Candidates, DeploymentId, Group, RequestFacts, StateStore};

/// Settings of sticky routing; off unless set on the [`PreCallConfig`](super::PreCallConfig).
///
/// ```
/// use std::time::Duration;
/// use switchyard_layers::precall::{AffinityConfig, PreCallConfig};
///
/// let affinity = AffinityConfig::new().ttl(Duration::from_secs(600)).by_api_key(true);
/// let config = PreCallConfig::new().affinity(Some(affinity));
/// assert!(config.affinity.is_some_and(|a| a.by_session));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AffinityConfig {
    /// How long a key sticks after its last served request (default 3,600 s).
    pub ttl: Duration,
    /// Stick by `metadata.session_id` (default `true`).
    pub by_session: bool,
    /// Stick by the caller's key when the request has no session (default `false`).
    pub by_api_key: bool,
}

impl Default for AffinityConfig {
    fn default() -> Self {
        Self { ttl: Self::DEFAULT_TTL, by_session: true, by_api_key: false }
    }
}

impl AffinityConfig {
    /// LiteLLM's `deployment_affinity_ttl_seconds` default.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);

    /// By session, for an hour.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long a key sticks after its last served request.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Stick by session id.
    pub fn by_session(mut self, on: bool) -> Self {
        self.by_session = on;
        self
    }

    /// Stick by caller key.
    pub fn by_api_key(mut self, on: bool) -> Self {
        self.by_api_key = on;
        self
    }
}

/// Longest session id kept as is in a key; longer ones are hashed, so keys stay small.
const SESSION_MAX: usize = 128;

fn sha256_hex(s: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(64);
    for b in Sha256::digest(s.as_bytes()) {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The affinity key of this request in `group`: session first (LiteLLM's priority), then caller.
pub(crate) fn key(config: &AffinityConfig, group: &Group, facts: &RequestFacts) -> Option<String> {
    if config.by_session
        && let Some(session) = facts.session.as_deref().filter(|s| !s.is_empty())
    {
        let session = if session.len() > SESSION_MAX { sha256_hex(session) } else { session.to_owned() };
        return Some(format!("session:{}:{session}", group.name()));
    }
    if config.by_api_key
        && let Some(caller) = facts.caller.as_ref().map(|k| k.expose()).filter(|k| !k.is_empty())
    {
        // An already-hashed key (64 hex digits, LiteLLM's `user_api_key_hash`) is used as is.
        let hash = if caller.len() == 64 && caller.bytes().all(|b| b.is_ascii_hexdigit()) {
            caller.to_ascii_lowercase()
        } else {
            sha256_hex(caller)
        };
        return Some(format!("key:{}:{hash}", group.name()));
    }
    None
}

/// Which affinity chose the deployment that served, put in the response extensions by the
/// pre-call layer when one narrowed the candidates to its deployment (the gateway shows it as
/// `x-switchyard-affinity`, in the trail and in `/router/state`).
///
/// ```
/// use switchyard_layers::precall::AffinityHit;
/// assert_eq!(AffinityHit::PromptCache.as_str(), "prompt_cache");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AffinityHit {
    /// The deployment holds the conversation (`previous_response_id`).
    Conversation,
    /// The session's (or caller key's) sticky deployment.
    Session,
    /// The deployment that served the request's cacheable prompt prefix.
    PromptCache,
}

impl AffinityHit {
    /// `conversation`, `session` or `prompt_cache`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Conversation => "conversation",
            Self::Session => "session",
            Self::PromptCache => "prompt_cache",
        }
    }
}

/// The key under which the deployment holding the Responses API conversation `id` is kept in
/// the store's affinity map (global: a response id names one conversation whatever group a
/// follow-up asks for).
///
/// ```
/// use switchyard_layers::precall::conversation_key;
/// assert_eq!(conversation_key("resp_123"), "response:resp_123");
/// ```
pub fn conversation_key(id: &str) -> String {
    let id = if id.len() > SESSION_MAX { sha256_hex(id) } else { id.to_owned() };
    format!("response:{id}")
}

/// The key of a cacheable prompt prefix in `group`.
pub(crate) fn prefix_key(group: &Group, digest: &[u8; 32]) -> String {
    use std::fmt::Write as _;
    let mut hex = String::with_capacity(64);
    for b in digest {
        let _ = write!(hex, "{b:02x}");
    }
    format!("prefix:{}:{hex}", group.name())
}

/// Narrows `list` to the deployment `key` sticks to, when it is still a candidate; whether it
/// did.
pub(crate) async fn narrow(store: &StateStore, key: &str, list: &mut Candidates) -> bool {
    let Some(id) = store.affinity(key).await else { return false };
    if let Some(d) = list.iter().find(|d| d.id == id).cloned() {
        *list = vec![d].into();
        return true;
    }
    false
}

/// Makes `key` stick to `served`.
pub(crate) async fn remember(store: &StateStore, key: &str, served: &DeploymentId, ttl: Duration) {
    store.set_affinity(key, served, ttl).await;
}
