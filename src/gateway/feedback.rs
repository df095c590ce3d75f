//! The adaptive pre-routers' recent decisions by request id, for `POST /router/feedback`: which
//! virtual name, request class and model group each answered call went to. Bounded (the oldest
//! entry goes first) and short-lived: an entry expires [`FEEDBACK_TTL`] after its answer, and a
//! request id takes one piece of feedback.

use std::{
    collections::{HashMap, VecDeque},
    sync::Arc,
    time::Duration,
};

use switchyard_layers::{ctx::PreRouteDecision, preroute::adaptive::RequestClass};
use tokio::time::Instant;

/// How long after its answer a call takes feedback.
pub(crate) const FEEDBACK_TTL: Duration = Duration::from_secs(3600);
/// Most decisions remembered (about 200 bytes each).
pub(crate) const FEEDBACK_CAPACITY: usize = 65_536;
/// Longest request id remembered (the edge accepts longer ones; they take no feedback).
const MAX_ID: usize = 256;

/// One remembered decision.
#[derive(Clone, Debug)]
pub(crate) struct Decided {
    /// The virtual model name (the adaptive router's).
    pub(crate) router: Arc<str>,
    pub(crate) class: RequestClass,
    pub(crate) group: Arc<str>,
    /// Which remembering this is (an id remembered again gets a new one).
    seq: u64,
    applied: bool,
}

/// What a lookup found.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// Never seen, or expired.
    Unknown,
    /// Feedback was applied already.
    Applied,
    /// The decision, now marked applied.
    Found(Decided),
}

#[derive(Debug, Default)]
struct Entries {
    by_id: HashMap<Box<str>, Decided>,
    /// Ids in the order they were remembered, with their sequence number and when (an id
    /// remembered again has a newer entry; the older one's turn removes nothing).
    order: VecDeque<(Box<str>, u64, Instant)>,
    next: u64,
}

impl Entries {
    /// Forgets the oldest remembering, and its id unless remembered again since.
    fn pop_oldest(&mut self) {
        if let Some((old, seq, _)) = self.order.pop_front()
            && self.by_id.get(&old).is_some_and(|d| d.seq == seq)
        {
            self.by_id.remove(&old);
        }
    }
}

/// Recent adaptive decisions by request id; see the [module docs](self).
#[derive(Debug)]
pub(crate) struct FeedbackLog {
    entries: parking_lot::Mutex<Entries>,
    ttl: Duration,
    capacity: usize,
}

impl Default for FeedbackLog {
    fn default() -> Self {
        Self::new(FEEDBACK_TTL, FEEDBACK_CAPACITY)
    }
}

impl FeedbackLog {
    pub(crate) fn new(ttl: Duration, capacity: usize) -> Self {
        Self { entries: parking_lot::Mutex::default(), ttl, capacity: capacity.max(1) }
    }

    /// Remembers that the call `id` asked for `router` and was routed by `decision` (an adaptive
    /// router's: its tier is the request class).
    pub(crate) fn remember(&self, id: &str, router: &str, decision: &PreRouteDecision) {
        let Some(class) = decision.tier.as_deref().and_then(|t| t.parse::<RequestClass>().ok()) else { return };
        if id.is_empty() || id.len() > MAX_ID {
            return;
        }
        let now = Instant::now();
        let mut e = self.entries.lock();
        self.evict(&mut e, now);
        // The order list holds one entry per remembering, so ids sent again and again count too.
        while (e.by_id.len() >= self.capacity || e.order.len() >= self.capacity.saturating_mul(2))
            && !e.order.is_empty()
        {
            e.pop_oldest();
        }
        let id: Box<str> = id.into();
        let seq = e.next;
        e.next += 1;
        e.order.push_back((id.clone(), seq, now));
        let decided = Decided { router: router.into(), class, group: decision.target.clone(), seq, applied: false };
        e.by_id.insert(id, decided);
    }

    /// The decision of call `id`, marked applied (each call takes one piece of feedback).
    pub(crate) fn take(&self, id: &str) -> Lookup {
        let now = Instant::now();
        let mut e = self.entries.lock();
        self.evict(&mut e, now);
        match e.by_id.get_mut(id) {
            None => Lookup::Unknown,
            Some(d) if d.applied => Lookup::Applied,
            Some(d) => {
                d.applied = true;
                Lookup::Found(d.clone())
            }
        }
    }

    /// Marks `id` open for feedback again (the feedback could not be applied after all).
    pub(crate) fn reopen(&self, id: &str) {
        if let Some(d) = self.entries.lock().by_id.get_mut(id) {
            d.applied = false;
        }
    }

    /// Drops the expired entries (the oldest first: entries expire in the order they came).
    fn evict(&self, e: &mut Entries, now: Instant) {
        while let Some((_, _, at)) = e.order.front() {
            if now.saturating_duration_since(*at) < self.ttl {
                break;
            }
            e.pop_oldest();
        }
    }

    /// How many decisions are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().by_id.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(group: &str) -> PreRouteDecision {
        PreRouteDecision::new(group, "bandit").with_tier("writing")
    }

    #[tokio::test(start_paused = true)]
    async fn an_id_takes_one_feedback_until_it_expires() {
        let log = FeedbackLog::new(Duration::from_secs(60), 10);
        log.remember("req-1", "smart", &decision("a"));
        let Lookup::Found(d) = log.take("req-1") else { panic!("found") };
        assert_eq!((&*d.router, d.class, &*d.group), ("smart", RequestClass::Writing, "a"));
        assert!(matches!(log.take("req-1"), Lookup::Applied));
        log.reopen("req-1");
        assert!(matches!(log.take("req-1"), Lookup::Found(_)));
        log.remember("req-2", "smart", &decision("b"));
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(matches!(log.take("req-2"), Lookup::Unknown));
        assert_eq!(log.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn the_oldest_goes_first_when_full_and_a_reused_id_keeps_its_newest_entry() {
        let log = FeedbackLog::new(Duration::from_secs(60), 2);
        log.remember("a", "smart", &decision("x"));
        log.remember("b", "smart", &decision("x"));
        log.remember("a", "smart", &decision("y"));
        log.remember("c", "smart", &decision("x"));
        assert!(matches!(log.take("b"), Lookup::Unknown));
        let Lookup::Found(a) = log.take("a") else { panic!("a is kept") };
        assert_eq!(&*a.group, "y");
        assert!(matches!(log.take("c"), Lookup::Found(_)));
        // A decision that is not an adaptive router's (no class) is not remembered.
        log.remember("d", "smart", &PreRouteDecision::new("x", "heuristic_scorer").with_tier("SIMPLE"));
        assert!(matches!(log.take("d"), Lookup::Unknown));
    }
}
