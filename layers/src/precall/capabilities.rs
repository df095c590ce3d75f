//! The capability filter: a request carrying images skips the deployments known not to support
//! vision, one carrying `tools` those known not to support function calling.
//!
//! "Known" is the deployment's effective flag: `model_info.supports_vision` /
//! `supports_function_calling` when declared, else the [catalog](crate::catalog)'s (filled in
//! when the deployment is built). A flag nobody gives is unknown, and an unknown deployment is
//! kept: the upstream still answers if it really cannot. When every candidate is known not to
//! have the capability, the attempt fails with [`RouteErrorKind::Unsupported`](crate::RouteErrorKind::Unsupported)
//! naming the capability and the group.

use crate::{BoxError, Candidates, Deployment, Group, RequestFacts, RouteError};

/// A capability a request may need: LiteLLM's flag name and what in the request needs it.
#[derive(Clone, Copy)]
pub(crate) struct Need {
    pub(crate) flag: &'static str,
    pub(crate) why: &'static str,
    has: fn(&Deployment) -> Option<bool>,
}

const VISION: Need =
    Need { flag: "supports_vision", why: "the request carries images", has: |d| d.capabilities.vision };
const TOOLS: Need = Need {
    flag: "supports_function_calling",
    why: "the request carries tools",
    has: |d| d.capabilities.function_calling,
};

/// What `facts` needs, in the order the filter checks it.
pub(crate) fn needs(facts: &RequestFacts) -> impl Iterator<Item = Need> {
    [(facts.images, VISION), (facts.tools, TOOLS)].into_iter().filter_map(|(on, need)| on.then_some(need))
}

/// Drops the candidates known not to have `need`; with none left, the error naming it.
pub(crate) fn filter(list: &mut Candidates, group: &Group, need: Need) -> Result<(), BoxError> {
    list.retain(|d| (need.has)(d) != Some(false));
    if list.is_empty() {
        return Err(RouteError::unsupported(group.name(), need.flag, need.why).into());
    }
    Ok(())
}
