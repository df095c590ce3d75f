//! [`PreRouteOutcome`]: what became of a call a pre-router routed, shown to
//! [`PreRouter::on_outcome`](super::PreRouter::on_outcome) when the call's answer (or error)
//! comes back through the pre-route layer.

use std::{any::Any, fmt};

use crate::{AttemptRecord, BoxError, RouteError, Served, ctx::PreRouteDecision, outcome::Outcome};

/// What became of a call a pre-router routed: the decision, what served the call, and the
/// classified error when it failed.
///
/// ```
/// use switchyard_layers::{ctx::PreRouteDecision, outcome::Outcome, preroute::PreRouteOutcome};
///
/// let decision = PreRouteDecision::new("gpt-4o", "bandit");
/// let failed = PreRouteOutcome::failed("smart-router", &decision, Some(Outcome::ContentPolicy));
/// assert_eq!(failed.target_outcome(), Some(Outcome::ContentPolicy));
/// ```
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct PreRouteOutcome<'a> {
    /// The name the client asked for (the pre-router's virtual name).
    pub requested: &'a str,
    /// The pre-router's decision.
    pub decision: &'a PreRouteDecision,
    /// What served the call (`None` when it failed).
    pub served: Option<&'a Served>,
    /// The failed call's error, when it is a [`RouteError`].
    pub error: Option<&'a RouteError>,
    /// The failed call's class when there is no [`RouteError`] to read it from.
    error_class: Option<Outcome>,
}

impl fmt::Debug for PreRouteOutcome<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreRouteOutcome")
            .field("requested", &self.requested)
            .field("target", &self.decision.target)
            .field("served", &self.served.map(|s| &s.group))
            .field("error", &self.error.map(RouteError::kind))
            .finish()
    }
}

impl<'a> PreRouteOutcome<'a> {
    /// A call `served`.
    pub fn served(requested: &'a str, decision: &'a PreRouteDecision, served: Option<&'a Served>) -> Self {
        Self { requested, decision, served, error: None, error_class: None }
    }

    /// A call that failed with an error of class `outcome` (`None`: unclassified).
    pub fn failed(requested: &'a str, decision: &'a PreRouteDecision, outcome: Option<Outcome>) -> Self {
        Self { requested, decision, served: None, error: None, error_class: outcome }
    }

    /// A call that failed with `error` (a `BoxError`, a [`RouteError`] or anything else).
    pub(crate) fn from_error<E: 'static>(requested: &'a str, decision: &'a PreRouteDecision, error: &'a E) -> Self {
        let any: &dyn Any = error;
        let route = match any.downcast_ref::<BoxError>() {
            Some(boxed) => RouteError::find(&**boxed),
            None => any.downcast_ref::<RouteError>(),
        };
        Self { requested, decision, served: None, error: route, error_class: route.and_then(RouteError::outcome) }
    }

    /// The failed attempts of the call, oldest first.
    pub fn failed_attempts(&self) -> &'a [AttemptRecord] {
        match (self.served, self.error) {
            (Some(served), _) => &served.failed,
            (None, Some(error)) => error.trail(),
            (None, None) => &[],
        }
    }

    /// How the chosen group itself fared: [`Outcome::Success`] when it served; when another
    /// group served (a fallback) or the call failed, the outcome of the chosen group's last
    /// failed attempt, else the call's error class. `None` when nothing says (an unclassified
    /// error, an answer without [`Served`]).
    pub fn target_outcome(&self) -> Option<Outcome> {
        let target = &*self.decision.target;
        if let Some(served) = self.served
            && &*served.group == target
        {
            return Some(Outcome::Success);
        }
        if let Some(last) = self.failed_attempts().iter().rev().find(|a| &*a.group == target) {
            return Some(last.outcome);
        }
        if self.served.is_some() { None } else { self.error_class }
    }
}
