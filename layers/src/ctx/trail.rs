//! What a call remembers of its attempts ([`AttemptRecord`], kept in the call's trail) and what
//! a response says about the attempt that served it ([`Served`], [`ResponseId`]).

use std::{sync::Arc, time::Duration};

use parking_lot::Mutex;

use crate::{DeploymentId, Outcome};

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

/// Longest message kept in a trail record.
const TRAIL_MESSAGE_MAX: usize = 200;
/// Most records kept in a trail; attempts are bounded by retries and hops, this only guards memory.
const TRAIL_MAX: usize = 64;

/// The failed attempts of one call, oldest first: bounded, messages truncated.
#[derive(Debug, Default)]
pub(crate) struct Trail(Mutex<Vec<AttemptRecord>>);

impl Trail {
    /// Appends an attempt (bounded; messages truncated).
    pub(crate) fn record(&self, mut record: AttemptRecord) {
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
        let mut trail = self.0.lock();
        if trail.len() < TRAIL_MAX {
            trail.push(record);
        }
    }

    /// The attempts so far, oldest first.
    pub(crate) fn records(&self) -> Vec<AttemptRecord> {
        self.0.lock().clone()
    }

    /// How many attempts are recorded.
    pub(crate) fn len(&self) -> usize {
        self.0.lock().len()
    }
}

/// The id under which the serving deployment keeps the state of a conversation (an OpenAI
/// Responses API `id`), inserted into the response extensions by the provider. The pre-call
/// layer remembers which deployment holds it, so a follow-up naming it
/// ([`RequestFacts::previous_response`](crate::RequestFacts::previous_response)) reaches that deployment from any replica.
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
    /// Retries made in the group that answered (0 when its first attempt served). A move to the
    /// group's next `order` tier is not a retry.
    pub retries: u32,
    /// The retry count in effect for the last retry of the group that answered (request, retry
    /// policy, deployment or router `num_retries`), when it retried at all: LiteLLM's
    /// `x-litellm-max-retries`, sent only on answers that needed a retry.
    pub max_retries: Option<u32>,
    /// Time the serving attempt spent in the provider until its answer (for a stream: its first
    /// content chunk). The call's time minus this is the routing overhead plus failed attempts.
    pub upstream: Duration,
    /// Fallback hops made.
    pub hops: u32,
    /// Earlier attempts of this call that failed, oldest first.
    pub failed: Vec<AttemptRecord>,
}
