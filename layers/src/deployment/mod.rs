//! Deployments, their stable ids, and the registry that maps model groups to them.
//!
//! A [`Deployment`] is one entry of a model group: a provider model behind an endpoint with its
//! credentials and limits. The [`Registry`] resolves what a caller asked for (a group, an alias, a
//! wildcard pattern, or a deployment id) into a [`Group`] of deployments, and can be changed at
//! runtime without blocking requests in flight.
//!
//! ```
//! use switchyard_layers::{Deployment, Registry};
//!
//! let registry = Registry::new();
//! registry.upsert(Deployment::builder("gpt-4o", "azure/gpt-4o-eu").rpm(600).build()?)?;
//! registry.upsert(Deployment::builder("gpt-4o", "openai/gpt-4o").rpm(300).build()?)?;
//! let resolved = registry.resolve("gpt-4o")?;
//! assert_eq!(resolved.group.deployments().len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod candidates;
mod id;
mod model;
mod pattern;
mod registry;

pub use candidates::Candidates;
pub use id::DeploymentId;
pub use model::{ApiBaseProblem, ApiKey, Capabilities, Deployment, DeploymentBuilder, DeploymentError, canonical_json};
pub use pattern::{inferred_provider, pattern_matches};
pub use registry::{Group, Registry, RegistryError, Resolved, WeightBasis};
