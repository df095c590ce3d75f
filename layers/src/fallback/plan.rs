//! Target selection for one call: which table a failure reads, in which order the targets come,
//! and the visited set that makes cycles impossible.

use std::sync::Arc;

use super::{FallbackTable, FallbackTables};
use crate::{Outcome, Registry};

/// Where the call is: the name it routed to and the group that name resolved to. Both are table
/// keys (a table may be keyed by an alias or by the group).
#[derive(Clone, Debug)]
pub(crate) struct Position {
    /// The name the hop routed to.
    pub(crate) name: Arc<str>,
    /// The group it resolved to; the name itself when it does not resolve.
    pub(crate) group: Arc<str>,
}

/// The next step of a call that failed.
#[derive(Debug)]
pub(crate) enum Step {
    /// Move to this group.
    Hop(Position, FallbackTable),
    /// This name does not resolve; it is skipped (once per call).
    Skip(Arc<str>, FallbackTable),
    /// Nothing is left to try.
    Done,
}

/// A target list being walked.
#[derive(Debug)]
struct Pending {
    list: Vec<String>,
    next: usize,
    table: FallbackTable,
}

/// The fallback plan of one call: a stack of target lists (depth-first over the tables) and the
/// set of groups already visited.
#[derive(Debug)]
pub(crate) struct Plan<'a> {
    tables: &'a FallbackTables,
    registry: &'a Registry,
    per_request: Option<Vec<String>>,
    /// Identities (see [`identity`]) of the groups tried or about to be tried.
    visited: Vec<Arc<str>>,
    /// Names that did not resolve, reported once.
    skipped: Vec<Arc<str>>,
    pending: Vec<Pending>,
}

impl<'a> Plan<'a> {
    /// A plan over `tables`; `per_request` replaces the general table when given.
    pub(crate) fn new(tables: &'a FallbackTables, registry: &'a Registry, per_request: Option<Vec<String>>) -> Self {
        Self { tables, registry, per_request, visited: Vec::new(), skipped: Vec::new(), pending: Vec::new() }
    }

    /// The call starts at `name`: it is visited.
    pub(crate) fn start(&mut self, name: Arc<str>) -> Position {
        let (key, group) = match identity(self.registry, &name) {
            Some(found) => found,
            None => (name.clone(), name.clone()),
        };
        self.visited.push(key);
        Position { name, group }
    }

    /// The call failed at `at` with `outcome`: its table entry becomes the next targets.
    pub(crate) fn failed(&mut self, at: &Position, outcome: Option<Outcome>) {
        if let Some((list, table)) = self.choose(at, outcome) {
            self.pending.push(Pending { list, next: 0, table });
        }
    }

    /// The names that were skipped so far because they do not resolve.
    pub(crate) fn skipped(&self) -> &[Arc<str>] {
        &self.skipped
    }

    /// The next target not yet visited: from the newest list, then from the lists before it.
    pub(crate) fn next(&mut self) -> Step {
        while let Some(top) = self.pending.last_mut() {
            let Some(name) = top.list.get(top.next) else {
                self.pending.pop();
                continue;
            };
            top.next += 1;
            let table = top.table;
            let name: Arc<str> = name.as_str().into();
            if self.skipped.contains(&name) {
                continue;
            }
            let Some((key, group)) = identity(self.registry, &name) else {
                self.skipped.push(name.clone());
                return Step::Skip(name, table);
            };
            if self.visited.contains(&key) {
                continue;
            }
            self.visited.push(key);
            return Step::Hop(Position { name, group }, table);
        }
        Step::Done
    }

    /// The list a failure at `at` reads; see [`FallbackTables::targets`].
    fn choose(&self, at: &Position, outcome: Option<Outcome>) -> Option<(Vec<String>, FallbackTable)> {
        let names = [&*at.name, &*at.group];
        let (table, list) = self.tables.targets(&names, outcome, self.per_request.as_deref())?;
        Some((list.to_vec(), table))
    }
}

/// What the visited set remembers for `name`, and the group it resolves to; `None` when it does
/// not resolve.
///
/// A plain group (also reached through an alias) is remembered by the group's name, so an alias
/// of a visited group counts as visited. A wildcard match or a deployment id is remembered by the
/// name itself: `openai/gpt-4o` and `openai/gpt-4o-mini` both match `openai/*` but are different
/// models.
fn identity(registry: &Registry, name: &Arc<str>) -> Option<(Arc<str>, Arc<str>)> {
    let resolved = registry.resolve(name).ok()?;
    let group = resolved.group.name().clone();
    let key = if resolved.by_id || group.contains('*') { name.clone() } else { group.clone() };
    Some((key, group))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Deployment;

    fn registry(groups: &[&str]) -> Registry {
        let r = Registry::new();
        for g in groups {
            r.upsert(Deployment::builder(*g, format!("openai/{g}")).id(format!("{g}-1")).build().expect("valid"))
                .expect("distinct");
        }
        r
    }

    fn list(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    fn hop(plan: &mut Plan<'_>) -> Option<(String, FallbackTable)> {
        loop {
            match plan.next() {
                Step::Hop(p, t) => return Some((p.name.to_string(), t)),
                Step::Skip(..) => {}
                Step::Done => return None,
            }
        }
    }

    #[test]
    fn exact_key_wins_over_stripped_key_and_default() {
        let reg = registry(&["openai/gpt-x", "gpt-x", "a", "b", "c"]);
        let mut t = FallbackTables::default();
        t.general.insert("openai/gpt-x".into(), list(&["a"]));
        t.general.insert("gpt-x".into(), list(&["b"]));
        t.default = list(&["c"]);
        let mut plan = Plan::new(&t, &reg, None);
        let at = plan.start("openai/gpt-x".into());
        plan.failed(&at, Some(Outcome::ServerError));
        assert_eq!(hop(&mut plan), Some(("a".into(), FallbackTable::General)));
    }

    #[test]
    fn provider_prefix_is_stripped_before_the_default_applies() {
        let reg = registry(&["openai/gpt-x", "b", "c"]);
        let mut t = FallbackTables::default();
        t.general.insert("gpt-x".into(), list(&["b"]));
        t.default = list(&["c"]);
        let mut plan = Plan::new(&t, &reg, None);
        let at = plan.start("openai/gpt-x".into());
        plan.failed(&at, None);
        assert_eq!(hop(&mut plan), Some(("b".into(), FallbackTable::General)));
    }

    #[test]
    fn an_alias_of_a_visited_group_counts_as_visited() {
        let reg = registry(&["a", "b"]);
        reg.set_alias("a-alias", "a", false).expect("alias");
        let mut t = FallbackTables::default();
        t.general.insert("a".into(), list(&["a-alias", "b"]));
        let mut plan = Plan::new(&t, &reg, None);
        let at = plan.start("a".into());
        plan.failed(&at, None);
        assert_eq!(hop(&mut plan), Some(("b".into(), FallbackTable::General)));
        assert_eq!(hop(&mut plan), None);
    }

    #[test]
    fn unresolvable_targets_are_skipped_once() {
        let reg = registry(&["a", "b"]);
        let mut t = FallbackTables::default();
        t.general.insert("a".into(), list(&["ghost", "b"]));
        t.general.insert("b".into(), list(&["ghost"]));
        let mut plan = Plan::new(&t, &reg, None);
        let at = plan.start("a".into());
        plan.failed(&at, None);
        assert!(matches!(plan.next(), Step::Skip(ref n, FallbackTable::General) if &**n == "ghost"));
        let Step::Hop(b, _) = plan.next() else { panic!("b is next") };
        plan.failed(&b, None);
        assert!(matches!(plan.next(), Step::Done));
        assert_eq!(plan.skipped().len(), 1);
    }

    #[test]
    fn context_window_entry_is_keyed_by_the_group_behind_an_alias() {
        let reg = registry(&["small", "big"]);
        reg.set_alias("chat", "small", false).expect("alias");
        let mut t = FallbackTables::default();
        t.context_window.insert("small".into(), list(&["big"]));
        let mut plan = Plan::new(&t, &reg, None);
        let at = plan.start("chat".into());
        plan.failed(&at, Some(Outcome::ContextWindowExceeded));
        assert_eq!(hop(&mut plan), Some(("big".into(), FallbackTable::ContextWindow)));
    }

    #[test]
    fn a_star_key_of_the_general_table_is_the_default() {
        let reg = registry(&["a", "b"]);
        let mut t = FallbackTables::default();
        t.general.insert("*".into(), list(&["b"]));
        let mut plan = Plan::new(&t, &reg, None);
        let at = plan.start("a".into());
        plan.failed(&at, None);
        assert_eq!(hop(&mut plan), Some(("b".into(), FallbackTable::Default)));
    }

    #[test]
    fn an_empty_entry_counts_as_no_entry() {
        let reg = registry(&["a", "b", "c"]);
        let mut t = FallbackTables::default();
        t.context_window.insert("a".into(), Vec::new());
        t.general.insert("a".into(), list(&["b"]));
        t.default = list(&["c"]);
        let mut plan = Plan::new(&t, &reg, None);
        let at = plan.start("a".into());
        plan.failed(&at, Some(Outcome::ContextWindowExceeded));
        assert_eq!(hop(&mut plan), Some(("b".into(), FallbackTable::General)));
    }

    #[test]
    fn an_empty_per_request_list_means_no_general_fallbacks() {
        let reg = registry(&["a", "b"]);
        let mut t = FallbackTables::default();
        t.general.insert("a".into(), list(&["b"]));
        let mut plan = Plan::new(&t, &reg, Some(Vec::new()));
        let at = plan.start("a".into());
        plan.failed(&at, None);
        assert_eq!(hop(&mut plan), None);
    }
}
