//! The last decision of each conversation (by its session id), so that a tool failure the next
//! turn reports is held against the group that made the failing call: LiteLLM's feedback
//! contexts, bounded the same way (1,024 sessions, 24 hours).

use std::{
    collections::{HashMap, VecDeque},
    time::Duration,
};

use tokio::time::Instant;

/// Most sessions remembered (LiteLLM's `_FEEDBACK_CONTEXT_MAX_ENTRIES`).
pub(super) const MAX_SESSIONS: usize = 1024;
/// How long a session's last decision counts (LiteLLM's `OWNER_CACHE_TTL_SECONDS`).
pub(super) const SESSION_TTL: Duration = Duration::from_secs(24 * 3600);
/// Longest session id remembered.
const MAX_ID: usize = 256;

#[derive(Debug, Default)]
pub(super) struct Sessions {
    by_id: HashMap<Box<str>, (usize, Instant, u64)>,
    order: VecDeque<(Box<str>, u64)>,
    next: u64,
}

impl Sessions {
    /// Records `cell` as the session's newest decision; the previous one, when it is fresh.
    pub(super) fn swap(&mut self, session: &str, cell: usize, now: Instant) -> Option<usize> {
        if session.is_empty() || session.len() > MAX_ID {
            return None;
        }
        let previous = self
            .by_id
            .get(session)
            .filter(|(_, at, _)| now.saturating_duration_since(*at) < SESSION_TTL)
            .map(|(cell, _, _)| *cell);
        while (self.by_id.len() >= MAX_SESSIONS || self.order.len() >= 2 * MAX_SESSIONS) && !self.order.is_empty() {
            if let Some((old, seq)) = self.order.pop_front()
                && self.by_id.get(&old).is_some_and(|(_, _, s)| *s == seq)
            {
                self.by_id.remove(&old);
            }
        }
        let seq = self.next;
        self.next += 1;
        let id: Box<str> = session.into();
        self.order.push_back((id.clone(), seq));
        self.by_id.insert(id, (cell, now, seq));
        previous
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.by_id.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_session_remembers_its_last_decision_for_a_day_and_the_oldest_goes_first() {
        let mut s = Sessions::default();
        let now = Instant::now();
        assert_eq!(s.swap("a", 1, now), None);
        assert_eq!(s.swap("a", 2, now), Some(1));
        assert_eq!(s.swap("a", 3, now + SESSION_TTL), None, "expired");
        for i in 0..MAX_SESSIONS {
            s.swap(&format!("s{i}"), i, now);
        }
        assert_eq!(s.len(), MAX_SESSIONS);
        assert_eq!(s.swap("a", 4, now), None, "the oldest session went first");
        assert_eq!(s.swap(&"x".repeat(300), 1, now), None);
    }
}
