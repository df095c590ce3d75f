//! [`PreRouters`]: several pre-routers in one layer, each answering for its own virtual name.

use std::{collections::HashMap, fmt, sync::Arc};

use super::{PreRouteInput, PreRouteOutcome, PreRouter};
use crate::ctx::PreRouteDecision;

/// Pre-routers by the virtual model name each answers for (`smart-router`, `auto`), for one
/// [`PreRouteLayer`](super::PreRouteLayer) ([`PreRouteLayer::set`](super::PreRouteLayer::set)).
///
/// A request for one of the names goes to that name's router; any other request passes
/// through, so an empty set routes nothing. This is what
/// [`RoutingStack`](crate::stack::RoutingStack) puts above the fallback layer: the config's
/// `auto_router/...` entries and the pre-routers given to its builder.
///
/// ```
/// use switchyard_layers::{ctx::PreRouteDecision, preroute::{PreRouteInput, PreRouteLayer, PreRouters}};
///
/// let routers = PreRouters::new()
///     .with("auto", |_: &PreRouteInput<'_>| Some(PreRouteDecision::new("gpt-4o", "always")))
///     .with("cheap", |_: &PreRouteInput<'_>| Some(PreRouteDecision::new("gpt-4o-mini", "always")));
/// assert_eq!(routers.names().collect::<Vec<_>>(), ["auto", "cheap"]);
/// let layer = PreRouteLayer::set(routers);
/// # let _ = layer;
/// ```
#[derive(Clone, Default)]
pub struct PreRouters {
    by_name: HashMap<Arc<str>, Arc<dyn PreRouter>>,
    /// Whether any router wants to hear how its calls ended.
    wants_outcome: bool,
}

impl PreRouters {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// With `router` answering for `name`; a router already there for that name is replaced.
    pub fn with(mut self, name: impl Into<Arc<str>>, router: impl PreRouter) -> Self {
        self.insert(name, Arc::new(router));
        self
    }

    /// Puts `router` in for `name`; returns the router it replaces.
    pub fn insert(&mut self, name: impl Into<Arc<str>>, router: Arc<dyn PreRouter>) -> Option<Arc<dyn PreRouter>> {
        let replaced = self.by_name.insert(name.into(), router);
        self.wants_outcome = self.by_name.values().any(|r| r.wants_outcome());
        replaced
    }

    /// The router answering for `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn PreRouter>> {
        self.by_name.get(name)
    }

    /// The virtual names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let mut names: Vec<&str> = self.by_name.keys().map(|n| &**n).collect();
        names.sort_unstable();
        names.into_iter()
    }

    /// How many names the set answers for.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether the set routes nothing.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

impl fmt::Debug for PreRouters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreRouters").field("names", &self.names().collect::<Vec<_>>()).finish()
    }
}

impl PreRouter for PreRouters {
    fn route(&self, input: &PreRouteInput<'_>) -> Option<PreRouteDecision> {
        self.by_name.get(input.requested())?.route(input)
    }

    fn answers_for(&self, _name: &str, requested: &str) -> bool {
        !self.by_name.is_empty() && self.by_name.contains_key(requested)
    }

    fn preview(&self, input: &PreRouteInput<'_>) -> Option<PreRouteDecision> {
        self.by_name.get(input.requested())?.preview(input)
    }

    fn wants_outcome(&self) -> bool {
        self.wants_outcome
    }

    fn on_outcome(&self, outcome: &PreRouteOutcome<'_>) {
        if let Some(router) = self.by_name.get(outcome.requested) {
            router.on_outcome(outcome);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RequestFacts;

    #[test]
    fn each_name_goes_to_its_own_router() {
        let routers = PreRouters::new()
            .with("a", |_: &PreRouteInput<'_>| Some(PreRouteDecision::new("group-a", "a")))
            .with("b", |_: &PreRouteInput<'_>| Some(PreRouteDecision::new("group-b", "b")));
        let facts = RequestFacts::new();
        let target = |name: &str| routers.route(&PreRouteInput::new(name, &facts)).map(|d| d.target.to_string());
        assert_eq!(target("a").as_deref(), Some("group-a"));
        assert_eq!(target("b").as_deref(), Some("group-b"));
        assert_eq!(target("c"), None);
        assert!(routers.answers_for("", "a") && !routers.answers_for("", "c") && !routers.answers_for("", ""));
        assert!(!PreRouters::new().answers_for("", ""));
    }
}
