//! What the dashboard shows of pre-routing: per virtual name, how many calls each group got
//! (since the gateway started) and how many of those an adaptive router sent exploring. Bounded:
//! at most [`MAX_PAIRS`] (name, group) pairs are counted.

use std::{collections::BTreeMap, sync::Arc};

use serde::Serialize;
use switchyard_layers::ctx::PreRouteDecision;

/// Most (virtual name, group) pairs counted.
const MAX_PAIRS: usize = 4096;

/// Decisions by virtual name and group.
#[derive(Debug, Default)]
pub(crate) struct PreRoutes {
    counts: parking_lot::Mutex<BTreeMap<NameGroup, Count>>,
}

/// (virtual name, group).
type NameGroup = (Arc<str>, Arc<str>);

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub(crate) struct Count {
    pub(crate) calls: u64,
    /// Decisions that carried an `explore` signal (an adaptive router's draw beat the greedy pick).
    pub(crate) explored: u64,
}

/// One virtual name's decisions, for `/router/state`.
#[derive(Debug, Serialize)]
pub(crate) struct NameView {
    pub(crate) name: String,
    pub(crate) groups: Vec<GroupCount>,
}

#[derive(Debug, Serialize)]
pub(crate) struct GroupCount {
    pub(crate) group: String,
    #[serde(flatten)]
    pub(crate) count: Count,
}

impl PreRoutes {
    pub(crate) fn record(&self, name: &str, decision: &PreRouteDecision) {
        let explored = decision.signals.iter().any(|s| s.starts_with("explore"));
        let mut counts = self.counts.lock();
        let key = (Arc::<str>::from(name), decision.target.clone());
        if !counts.contains_key(&key) && counts.len() >= MAX_PAIRS {
            return;
        }
        let c = counts.entry(key).or_default();
        c.calls += 1;
        c.explored += u64::from(explored);
    }

    /// Every name with its groups, by name then group.
    pub(crate) fn view(&self) -> Vec<NameView> {
        let counts = self.counts.lock();
        let mut out: Vec<NameView> = Vec::new();
        for ((name, group), count) in counts.iter() {
            if out.last().is_none_or(|v| v.name != **name) {
                out.push(NameView { name: name.to_string(), groups: Vec::new() });
            }
            if let Some(v) = out.last_mut() {
                v.groups.push(GroupCount { group: group.to_string(), count: *count });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_counted_per_name_and_group() {
        let p = PreRoutes::default();
        p.record("smart", &PreRouteDecision::new("a", "bandit"));
        p.record("smart", &PreRouteDecision::new("a", "bandit").with_signal("explore (greedy b)"));
        p.record("auto", &PreRouteDecision::new("b", "heuristic_scorer"));
        let v = p.view();
        assert_eq!(v.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), ["auto", "smart"]);
        let a = &v[1].groups[0];
        assert_eq!((a.group.as_str(), a.count.calls, a.count.explored), ("a", 2, 1));
    }
}
