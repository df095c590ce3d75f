//! The mirror: this replica's copy of every cooldown, so that the cooldown reads before each
//! attempt make no round trip. The cooldown scripts answer with the record they put in force and
//! publish it; every replica applies those messages (the subscriber in `sync.rs`), and re-reads the
//! records it routes to every `resync_interval` in case one was lost. Each message carries the
//! deployment's revision, so a late message never undoes a newer one.

use std::{sync::Arc, time::Duration};

use serde::Deserialize;
use tokio::time::Instant;

use super::{RedisBackend, Replica, num};
use crate::{
    DeploymentId,
    state::{Cooldown, CooldownState},
};

/// A cooldown record as the scripts return and publish it (numbers as text, times on the server's
/// clock).
#[derive(Debug, Deserialize)]
struct Message {
    /// The deployment.
    id: String,
    /// `set` or `del`.
    op: String,
    /// The server's time when the script ran (ms).
    now: String,
    /// The deadline (server ms).
    #[serde(default, rename = "u")]
    until: String,
    /// Why (redacted and truncated before it was stored).
    #[serde(default, rename = "r")]
    reason: String,
    /// The upstream status, if any.
    #[serde(default, rename = "s")]
    status: String,
    /// Cooldowns in a row (half-open recovery).
    #[serde(default, rename = "k")]
    strikes: String,
    /// `1` when the record waits for a probe after its deadline.
    #[serde(default, rename = "h")]
    half_open: String,
    /// A probe is claimed until then (server ms).
    #[serde(default, rename = "p")]
    probe_until: String,
    /// The revision this record was written at.
    #[serde(rename = "at")]
    revision: String,
    /// The deployment's current revision, in a resync read only.
    #[serde(default, rename = "c")]
    current: String,
}

impl RedisBackend {
    pub(super) fn cooldown_states(&self, ids: &[DeploymentId]) -> Vec<CooldownState> {
        self.replica.remember(ids);
        self.replica.local.cooldown_states(ids)
    }
}

impl Replica {
    /// Registers ids whose cooldowns this replica reads (re-read on every resync).
    pub(super) fn remember(&self, ids: &[DeploymentId]) {
        for id in ids {
            if !self.known.contains_key(id) {
                self.known.insert(id.clone(), ());
            }
        }
    }

    /// Applies a cooldown message to the mirror unless a newer one was applied; returns the state
    /// it describes (also when it was too old to apply: a script's reply says what it put in force).
    pub(super) fn apply(&self, payload: &str) -> Option<CooldownState> {
        let msg: Message = match serde_json::from_str(payload) {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(target: "switchyard::state", error = %crate::logsafe::Escaped(&e), "ignored a malformed cooldown message");
                return None;
            }
        };
        let id = DeploymentId::from(msg.id.as_str());
        let at = num(&msg.revision).max(0) as u64;
        let now_ms = num(&msg.now);
        let local_now = Instant::now();
        let (state, record) = match msg.op.as_str() {
            "set" => {
                let until = local_now + Duration::from_millis((num(&msg.until) - now_ms).max(0) as u64);
                let probe = num(&msg.probe_until) - now_ms;
                let probe_until = (probe > 0).then(|| local_now + Duration::from_millis(probe as u64));
                let cooldown = Cooldown {
                    until,
                    reason: Arc::from(msg.reason.as_str()),
                    status: msg.status.parse().ok(),
                    strikes: u32::try_from(num(&msg.strikes).max(0)).unwrap_or(u32::MAX),
                };
                let half_open = msg.half_open == "1";
                let state = if until > local_now {
                    CooldownState::CoolingDown(cooldown.clone())
                } else if half_open {
                    CooldownState::HalfOpen { strikes: cooldown.strikes, probing: probe_until.is_some() }
                } else {
                    CooldownState::Available
                };
                (state, Some((cooldown, half_open, probe_until)))
            }
            "del" => (CooldownState::Available, None),
            _ => return None,
        };
        // A cooldown this replica set while Redis did not take it is not lifted, shortened or
        // stripped of its half-open state by Redis's older view, during its deadline or after it
        // (half-open, waiting for a probe); it is pushed (extending) as soon as Redis takes writes.
        if self.offline.contains_key(&id)
            && let Some((mine, mine_half_open)) = self.local.record(&id)
            && record.as_ref().is_none_or(|(theirs, theirs_half_open, _)| {
                theirs.until < mine.until || (mine_half_open && !theirs_half_open)
            })
        {
            return self.local.cooldown_states(std::slice::from_ref(&id)).pop();
        }
        // The revision check and the mirror write happen under the revision entry's lock, so two
        // messages applied at once cannot land in the wrong order.
        let mut rev = self.revisions.entry(id.clone()).or_insert((0, local_now));
        // A resync read whose current revision is below ours means the counter restarted (Redis
        // was flushed or the key expired): the read is the truth.
        let restarted = !msg.current.is_empty() && (num(&msg.current).max(0) as u64) < rev.0;
        if at >= rev.0 || restarted {
            *rev = (at, local_now);
            match record {
                Some((cooldown, half_open, probe_until)) => self.local.put_bench(&id, cooldown, half_open, probe_until),
                None => {
                    self.local.clear_cooldown(&id);
                }
            }
        }
        drop(rev);
        Some(state)
    }
}
