//! Request parameters the deployment must support.
//!
//! `response_format` needs `supports_response_schema`, `tools` needs `supports_function_calling`.
//! A deployment that declares the flag `false` is dropped; one that does not declare it is kept
//! (most configs declare nothing, and the upstream answers a clear 400 if it really cannot).
//! LiteLLM drops only when `litellm.drop_params` is off, and only for `response_format`; here the
//! rule is the same for both parameters and does not depend on `drop_params` (Switchyard never
//! drops parameters from the body).

use crate::{BoxError, Candidates, Deployment, Group, RouteError, RouteErrorKind};

/// The declared support of `d` for `param`; `None` when not declared (or not a checked param).
fn declared(d: &Deployment, param: &str) -> Option<bool> {
    match param {
        "response_format" => d.capabilities.response_schema,
        "tools" => d.capabilities.function_calling,
        _ => None,
    }
}

/// Drops the deployments that declare they do not support one of `params`.
pub(crate) fn filter(list: &mut Candidates, params: &[String]) {
    list.retain(|d| params.iter().all(|p| declared(d, p) != Some(false)));
}

/// Every deployment declares one of the parameters unsupported.
pub(crate) fn unsupported(group: &Group, params: &[String]) -> BoxError {
    RouteError::new(
        RouteErrorKind::NoCandidates,
        format!("no deployment of `{}` supports the request's parameters ({})", group.name(), params.join(", ")),
    )
    .with_group(group.name().clone())
    .into()
}
