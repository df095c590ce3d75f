//! Tag routing (`enable_tag_filtering`), LiteLLM's rules plus `!tag` negation.
//!
//! With request tags `T` (`metadata.tags` or `tags`):
//!
//! 1. a tag written `!x` is a negation: deployments carrying `x` are dropped, whatever else;
//! 2. with no other tag, the request is untagged: if some remaining deployment carries the tag
//!    `default`, only those serve it; otherwise every remaining deployment (tagged or not) does;
//! 3. otherwise a deployment matches when its tags intersect `T` (`tag_filtering_match_any`,
//!    the default) or contain all of `T` (match all); deployments without tags never match. The
//!    matches serve; with no match, the `default` deployments serve; with neither, the request is
//!    refused ([`RouteErrorKind::NotAllowed`], 403 at the gateway, naming the tags).

use std::sync::Arc;

use crate::{BoxError, Candidates, Deployment, Group, RouteError, RouteErrorKind};

/// The tag whose deployments serve untagged requests and requests that match nothing.
pub(crate) const DEFAULT_TAG: &str = "default";

fn carries(d: &Deployment, tag: &str) -> bool {
    d.tags.iter().any(|t| t == tag)
}

/// Applies the rules above to `list`.
pub(crate) fn filter(list: &mut Candidates, request: &[String], match_any: bool) {
    let negated = || request.iter().filter_map(|t| t.strip_prefix('!')).filter(|t| !t.is_empty());
    let wanted = || request.iter().map(String::as_str).filter(|t| !t.is_empty() && !t.starts_with('!'));
    if negated().next().is_some() {
        list.retain(|d| !negated().any(|t| carries(d, t)));
    }
    let is_default = |d: &Arc<Deployment>| carries(d, DEFAULT_TAG);
    if wanted().next().is_none() {
        if list.iter().any(is_default) {
            list.retain(is_default);
        }
        return;
    }
    let matches = |d: &Arc<Deployment>| {
        !d.tags.is_empty() && if match_any { wanted().any(|t| carries(d, t)) } else { wanted().all(|t| carries(d, t)) }
    };
    if list.iter().any(matches) {
        list.retain(matches);
    } else {
        list.retain(is_default);
    }
}

/// No deployment serves these tags: [`RouteErrorKind::NotAllowed`], with LiteLLM's wording.
pub(crate) fn not_allowed(group: &Group, request: &[String]) -> BoxError {
    let tags: Vec<String> = request.iter().map(|t| format!("`{t}`")).collect();
    RouteError::new(
        RouteErrorKind::NotAllowed,
        format!(
            "Not allowed to access model due to tags configuration: no deployment of `{}` serves the tags [{}]",
            group.name(),
            tags.join(", ")
        ),
    )
    .with_group(group.name().clone())
    .into()
}
