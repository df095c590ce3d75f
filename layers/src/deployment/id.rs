use std::{borrow::Borrow, fmt, sync::Arc};

/// The stable identity of a deployment.
///
/// It is `model_info.id` when the config gives one, otherwise a deterministic hash of the group
/// name and the provider parameters (see [`DeploymentBuilder::build`](super::DeploymentBuilder::build)),
/// so every gateway replica computes the same id for the same config entry and shared state
/// (cooldowns, usage windows) lines up across replicas.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeploymentId(Arc<str>);

impl DeploymentId {
    /// Wraps an id string as given (for example `model_info.id`).
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for DeploymentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for DeploymentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Borrow<str> for DeploymentId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for DeploymentId {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<String> for DeploymentId {
    fn from(s: String) -> Self {
        Self::new(s)
    }
}
