//! The routing event feed: cooldowns set and lifted, probes, retries and fallbacks, numbered and
//! timestamped, in a bounded ring (the last [`FEED_CAPACITY`]) that `GET /router/events` pages
//! through, and a broadcast that `GET /router/events/stream` forwards as server-sent events.
//!
//! Events come from the router's hooks (cooldown and fallback, called on the request's task:
//! pushing is one short lock), from the gateway's observer (retries, read off each call's trail
//! when the call ends) and from the bench/re-admit endpoints. A cooldown that simply runs out
//! has no hook: the feed remembers the deadlines it announced and reports each one as lifted
//! when it has passed, the next time the feed is touched (any push or read, and every second
//! while a stream is open), stamped with the deadline's own time.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde::Serialize;
use switchyard_layers::{AttemptRecord, DeploymentId, cooldown::CooldownEvent, fallback::FallbackEvent};
use tokio::{sync::broadcast, time::Instant};

use super::stats::MAX_TRACKED;

/// Events kept for `GET /router/events`.
pub(crate) const FEED_CAPACITY: usize = 500;
/// Events a slow stream subscriber may fall behind by before it is told it lagged.
const BROADCAST_CAPACITY: usize = 256;

/// One routing event.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct FeedEvent {
    /// Increases by one per event, from 1.
    pub(crate) seq: u64,
    /// Wall-clock time, Unix milliseconds.
    pub(crate) at_ms: u64,
    #[serde(flatten)]
    pub(crate) kind: EventKind,
}

/// What happened; `kind` in the JSON.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum EventKind {
    /// A deployment was benched (or its cooldown extended).
    CooldownSet {
        group: String,
        deployment: String,
        /// Length of the cooldown from the event on.
        seconds: f64,
        /// The upstream status that caused it.
        status: Option<u16>,
        /// The failure class (`manual` for an operator's bench).
        outcome: &'static str,
        reason: String,
        strikes: u32,
        /// `router` or `operator`.
        by: &'static str,
    },
    /// A deployment may serve again: `how` is `probe_succeeded`, `operator` or `deadline_passed`
    /// (with half-open probing, a passed deadline means one probe decides).
    CooldownLifted { group: String, deployment: String, how: &'static str },
    /// A half-open deployment's probe started.
    ProbeStarted { group: String, deployment: String },
    /// Every candidate of a group was cooling down.
    AllCoolingDown { group: String, retry_in_seconds: Option<f64> },
    /// An attempt failed and the call tried another deployment of the same group.
    Retry { group: String, deployment: String, outcome: &'static str, message: Option<String>, attempt: u32 },
    /// A call moved from one group to another.
    Fallback {
        from: String,
        to: String,
        /// The failure's outcome class, when it had one.
        reason: Option<&'static str>,
        /// The routing error kind (`upstream`, `all_cooling_down`, ...).
        error: Option<&'static str>,
        table: &'static str,
        hop: u32,
    },
    /// A fallback target named no group.
    FallbackSkipped { name: String, table: &'static str },
    /// A group reached by fallback answered.
    FallbackSucceeded { group: String, hops: u32 },
    /// A call failed after at least one hop.
    FallbackFailed { groups: Vec<String>, hops: u32, reason: Option<&'static str> },
}

/// See the [module docs](self).
#[derive(Debug)]
pub(crate) struct Feed {
    state: Mutex<FeedState>,
    tx: broadcast::Sender<Arc<FeedEvent>>,
}

#[derive(Debug, Default)]
struct FeedState {
    last_seq: u64,
    ring: VecDeque<Arc<FeedEvent>>,
    /// Cooldown deadlines announced and not yet lifted: deployment -> (group, deadline).
    deadlines: HashMap<DeploymentId, (String, Instant)>,
}

/// A page of the feed.
#[derive(Debug, Serialize)]
pub(crate) struct FeedPage {
    /// Events after the one asked for, oldest first.
    pub(crate) events: Vec<Arc<FeedEvent>>,
    /// The newest event's `seq` (0 before the first).
    pub(crate) last_seq: u64,
    /// The oldest event still kept; a client that asked for an older one missed some.
    pub(crate) oldest_seq: Option<u64>,
}

impl Default for Feed {
    fn default() -> Self {
        Self { state: Mutex::default(), tx: broadcast::channel(BROADCAST_CAPACITY).0 }
    }
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis().try_into().unwrap_or(u64::MAX))
}

impl Feed {
    fn lock(&self) -> std::sync::MutexGuard<'_, FeedState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends an event stamped `at`; lifts passed deadlines first.
    fn push_at(&self, at: SystemTime, kind: EventKind) {
        let mut state = self.lock();
        self.sweep_locked(&mut state);
        self.append(&mut state, unix_ms(at), kind);
    }

    fn push(&self, kind: EventKind) {
        self.push_at(SystemTime::now(), kind);
    }

    fn append(&self, state: &mut FeedState, at_ms: u64, kind: EventKind) {
        state.last_seq += 1;
        let event = Arc::new(FeedEvent { seq: state.last_seq, at_ms, kind });
        if state.ring.len() == FEED_CAPACITY {
            state.ring.pop_front();
        }
        state.ring.push_back(event.clone());
        // No subscriber is not an error.
        let _ = self.tx.send(event);
    }

    /// Reports every announced deadline that has passed as lifted.
    pub(crate) fn sweep(&self) {
        let mut state = self.lock();
        self.sweep_locked(&mut state);
    }

    fn sweep_locked(&self, state: &mut FeedState) {
        let now = Instant::now();
        if state.deadlines.values().all(|(_, until)| *until > now) {
            return;
        }
        let wall = SystemTime::now();
        let mut passed: Vec<(DeploymentId, String, Instant)> = Vec::new();
        state.deadlines.retain(|id, (group, until)| {
            if *until > now {
                return true;
            }
            passed.push((id.clone(), std::mem::take(group), *until));
            false
        });
        passed.sort_by_key(|(_, _, until)| *until);
        for (id, group, until) in passed {
            let at = wall.checked_sub(now.saturating_duration_since(until)).unwrap_or(wall);
            let kind = EventKind::CooldownLifted { group, deployment: id.to_string(), how: "deadline_passed" };
            self.append(state, unix_ms(at), kind);
        }
    }

    fn remember_deadline(&self, id: &DeploymentId, group: &str, until: Instant) {
        let mut state = self.lock();
        if state.deadlines.len() < MAX_TRACKED || state.deadlines.contains_key(id) {
            state.deadlines.insert(id.clone(), (group.to_owned(), until));
        }
    }

    fn forget_deadline(&self, id: &DeploymentId) {
        self.lock().deadlines.remove(id);
    }

    /// The router's `on_cooldown` hook.
    pub(crate) fn cooldown(&self, event: &CooldownEvent) {
        match event {
            CooldownEvent::Benched { deployment, group, until, status, outcome, reason, strikes } => {
                let seconds = until.saturating_duration_since(Instant::now());
                self.remember_deadline(deployment, group, *until);
                self.push(EventKind::CooldownSet {
                    group: group.to_string(),
                    deployment: deployment.to_string(),
                    seconds: round_ms(seconds),
                    status: *status,
                    outcome: outcome.as_str(),
                    reason: reason.to_string(),
                    strikes: *strikes,
                    by: "router",
                });
            }
            CooldownEvent::ProbeStarted { deployment, group } => {
                self.push(EventKind::ProbeStarted { group: group.to_string(), deployment: deployment.to_string() });
            }
            CooldownEvent::Recovered { deployment, group } => {
                self.forget_deadline(deployment);
                self.push(EventKind::CooldownLifted {
                    group: group.to_string(),
                    deployment: deployment.to_string(),
                    how: "probe_succeeded",
                });
            }
            CooldownEvent::AllCoolingDown { group, earliest } => {
                let retry_in_seconds = earliest.map(|e| round_ms(e.saturating_duration_since(Instant::now())));
                self.push(EventKind::AllCoolingDown { group: group.to_string(), retry_in_seconds });
            }
            // A kind this gateway does not know yet: nothing to show.
            _ => {}
        }
    }

    /// The router's `on_fallback` hook.
    pub(crate) fn fallback(&self, event: &FallbackEvent) {
        let kind = match event {
            FallbackEvent::Hop { from, to, reason, error, table, hop, .. } => EventKind::Fallback {
                from: from.to_string(),
                to: to.to_string(),
                reason: reason.map(|o| o.as_str()),
                error: error.map(|e| e.as_str()),
                table: table.as_str(),
                hop: *hop,
            },
            FallbackEvent::Skipped { name, table, .. } => {
                EventKind::FallbackSkipped { name: name.to_string(), table: table.as_str() }
            }
            FallbackEvent::Succeeded { group, hops, .. } => {
                EventKind::FallbackSucceeded { group: group.to_string(), hops: *hops }
            }
            FallbackEvent::Failed { groups, hops, reason, .. } => EventKind::FallbackFailed {
                groups: groups.iter().map(ToString::to_string).collect(),
                hops: *hops,
                reason: reason.map(|o| o.as_str()),
            },
            _ => return,
        };
        self.push(kind);
    }

    /// Retries read off a finished call's trail: every failed attempt followed by another attempt
    /// in the same group. `served_group` is the group of the serving attempt, if any.
    pub(crate) fn retries(&self, trail: &[AttemptRecord], served_group: Option<&str>) {
        for (i, r) in trail.iter().enumerate() {
            let next_group = trail.get(i + 1).map(|n| &*n.group).or(served_group);
            if next_group == Some(&*r.group) {
                self.push(EventKind::Retry {
                    group: r.group.to_string(),
                    deployment: r.deployment.to_string(),
                    outcome: r.outcome.as_str(),
                    message: r.message.clone(),
                    attempt: u32::try_from(i + 1).unwrap_or(u32::MAX),
                });
            }
        }
    }

    /// An operator benched `id` until `until`.
    pub(crate) fn benched_by_operator(&self, id: &DeploymentId, group: &str, until: Instant, reason: &str) {
        self.remember_deadline(id, group, until);
        self.push(EventKind::CooldownSet {
            group: group.to_owned(),
            deployment: id.to_string(),
            seconds: round_ms(until.saturating_duration_since(Instant::now())),
            status: None,
            outcome: "manual",
            reason: reason.to_owned(),
            strikes: 0,
            by: "operator",
        });
    }

    /// An operator re-admitted `id`.
    pub(crate) fn readmitted_by_operator(&self, id: &DeploymentId, group: &str) {
        self.forget_deadline(id);
        self.push(EventKind::CooldownLifted { group: group.to_owned(), deployment: id.to_string(), how: "operator" });
    }

    /// Events after `after`, at most `limit`, oldest first.
    pub(crate) fn page(&self, after: u64, limit: usize) -> FeedPage {
        let mut state = self.lock();
        self.sweep_locked(&mut state);
        let events = state.ring.iter().filter(|e| e.seq > after).take(limit).cloned().collect();
        FeedPage { events, last_seq: state.last_seq, oldest_seq: state.ring.front().map(|e| e.seq) }
    }

    /// The newest event's `seq`.
    pub(crate) fn last_seq(&self) -> u64 {
        self.lock().last_seq
    }

    /// A receiver of every event pushed from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<FeedEvent>> {
        self.tx.subscribe()
    }
}

fn round_ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn benched(id: &str, for_: Duration) -> CooldownEvent {
        CooldownEvent::Benched {
            deployment: id.into(),
            group: "g".into(),
            until: Instant::now() + for_,
            status: Some(429),
            outcome: switchyard_layers::Outcome::RateLimited,
            reason: "429 with other deployments".into(),
            strikes: 0,
        }
    }

    #[test]
    fn the_ring_keeps_the_newest_events() {
        let feed = Feed::default();
        for _ in 0..FEED_CAPACITY + 5 {
            feed.readmitted_by_operator(&"a".into(), "g");
        }
        let page = feed.page(0, usize::MAX);
        assert_eq!(page.events.len(), FEED_CAPACITY);
        assert_eq!(page.last_seq, FEED_CAPACITY as u64 + 5);
        assert_eq!(page.oldest_seq, Some(6));
        assert_eq!(feed.page(page.last_seq - 2, 10).events.len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_passed_deadline_is_reported_as_lifted_once() {
        let feed = Feed::default();
        let mut rx = feed.subscribe();
        feed.cooldown(&benched("a", Duration::from_secs(5)));
        assert!(matches!(rx.try_recv().map(|e| e.kind.clone()), Ok(EventKind::CooldownSet { status: Some(429), .. })));
        feed.sweep();
        assert!(rx.try_recv().is_err(), "not yet");
        tokio::time::advance(Duration::from_secs(6)).await;
        feed.sweep();
        feed.sweep();
        let page = feed.page(0, 10);
        assert_eq!(page.events.len(), 2);
        let json = serde_json::to_value(&*page.events[1]).expect("json");
        assert_eq!(json["kind"], "cooldown_lifted");
        assert_eq!(json["how"], "deadline_passed");
        assert_eq!(json["deployment"], "a");
    }
}
