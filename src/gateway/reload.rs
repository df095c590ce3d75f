//! Config reload: a new config applied to the running gateway.
//!
//! The new config is read and checked completely, and its routing stack built with a registry of
//! its deployments and aliases, before anything changes, so a broken file changes nothing. Then,
//! back to back: the new stack and its registry become the live ones in one swap
//! ([`Router::reload`](crate::Router::reload)), so a request runs on the old deployments and rules
//! or on the new ones, never a mix, over the same store, so cooldowns, usage windows and spend
//! carry over; and the gateway's own settings (master key, `cooldown_time` for manual benches,
//! `count_tokens`) are swapped. Requests in flight keep the deployments and the stack they
//! started on; removed deployments' cooldowns are cleared.
//!
//! What the store, the provider and the listener were built with stays until a restart: the
//! Redis connection and namespace, the latency windows, `timeout` and `stream_timeout`, and
//! `general_settings.edge`. The summary's warnings name each such key the new config changes.

use std::{collections::HashMap, fmt, sync::Arc};

use serde::Serialize;
use switchyard_layers::{Deployment, DeploymentId, deployment::RegistryError};

use super::{GatewaySettings, GatewayState};
use crate::{Config, ConfigError, RouterError, config::Alias};

/// What a reload changed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ReloadSummary {
    /// Deployments added (ids).
    pub added: Vec<String>,
    /// Deployments whose settings changed, replaced in place (ids).
    pub updated: Vec<String>,
    /// Deployments removed (ids).
    pub removed: Vec<String>,
    /// Deployments kept as they were.
    pub unchanged: usize,
    /// Aliases added or pointed at another group.
    pub aliases_set: Vec<String>,
    /// Aliases removed.
    pub aliases_removed: Vec<String>,
    /// The config's own warnings (ignored keys), then one line per key the new config changes
    /// that only a restart applies (`router_settings.redis_namespace changed: restart to
    /// apply`); those keep their old values.
    pub warnings: Vec<String>,
}

impl ReloadSummary {
    /// Whether the reload changed nothing.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.updated.is_empty()
            && self.removed.is_empty()
            && self.aliases_set.is_empty()
            && self.aliases_removed.is_empty()
    }
}

impl fmt::Display for ReloadSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} added, {} updated, {} removed, {} unchanged deployments; {} aliases set, {} removed",
            self.added.len(),
            self.updated.len(),
            self.removed.len(),
            self.unchanged,
            self.aliases_set.len(),
            self.aliases_removed.len()
        )
    }
}

/// Why a reload changed nothing.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReloadError {
    /// The gateway was built without a config file to re-read
    /// ([`GatewayBuilder::config_path`](super::GatewayBuilder::config_path)).
    NoConfigPath,
    /// The new config does not load or is invalid.
    Config(ConfigError),
    /// A deployment of the new config is refused (its provider is not served, ...).
    Deployment {
        /// The deployment's id.
        id: String,
        /// Its model group.
        group: String,
        /// Why.
        message: String,
    },
    /// The registry refused a change (an alias whose target is not a model group).
    Registry(RegistryError),
    /// The routing stack could not be built from the new config (a policy it refuses).
    Router(RouterError),
}

impl fmt::Display for ReloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoConfigPath => f.write_str("the gateway was started without a config file to reload"),
            Self::Config(e) => e.fmt(f),
            Self::Deployment { id, group, message } => write!(f, "deployment `{id}` of `{group}`: {message}"),
            Self::Registry(e) => e.fmt(f),
            Self::Router(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ReloadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(e) => Some(e),
            Self::Registry(e) => Some(e),
            Self::Router(e) => Some(e),
            Self::NoConfigPath | Self::Deployment { .. } => None,
        }
    }
}

/// Decides whether a deployment can be served (see
/// [`GatewayBuilder::check_deployment`](super::GatewayBuilder::check_deployment)).
pub(crate) type DeploymentCheck = Arc<dyn Fn(&Deployment) -> Result<(), String> + Send + Sync>;

/// Runs `check` over every deployment of `config`.
pub(crate) fn check_all(config: &Config, check: Option<&DeploymentCheck>) -> Result<(), ReloadError> {
    let Some(check) = check else { return Ok(()) };
    for d in &config.deployments {
        check(d).map_err(|message| ReloadError::Deployment {
            id: d.id.to_string(),
            group: d.group.to_string(),
            message,
        })?;
    }
    Ok(())
}

/// Applies `config` to the gateway: checks everything and builds the new routing stack and its
/// registry first, then swaps the stack and the gateway's settings.
/// `current` holds the aliases the gateway set last time and is updated.
pub(crate) async fn apply(
    gateway: &GatewayState,
    current: &mut Vec<Alias>,
    config: &Config,
) -> Result<ReloadSummary, ReloadError> {
    config.validate().map_err(ReloadError::Config)?;
    check_all(config, gateway.check.as_ref())?;
    for a in &config.aliases {
        if !config.deployments.iter().any(|d| *d.group == *a.target) {
            return Err(ReloadError::Registry(RegistryError::UnknownAliasTarget {
                alias: a.alias.clone(),
                target: a.target.clone(),
            }));
        }
    }
    let router = &gateway.router;
    // The steps that can still fail: after them, nothing is refused.
    let prepared = router.prepare(config).map_err(ReloadError::Router)?;
    // A cache whose settings changed is built (Redis connects in the background) before anything
    // changes, so a cache that cannot be built refuses the reload.
    let cache = if gateway.cache.is_current(config.cache.as_ref()) {
        None
    } else {
        let built = config.cache.as_ref().map(|s| crate::cache::ResponseCache::new(s.clone())).transpose();
        Some(built.map_err(ReloadError::Config)?)
    };

    let registry = router.registry();
    let mut summary = ReloadSummary { warnings: config.warnings.clone(), ..ReloadSummary::default() };
    let old: HashMap<DeploymentId, Arc<Deployment>> =
        registry.deployments().into_iter().map(|d| (d.id.clone(), d)).collect();
    for d in &config.deployments {
        match old.get(&d.id) {
            Some(before) if same(before, d) => summary.unchanged += 1,
            Some(_) => summary.updated.push(d.id.to_string()),
            None => summary.added.push(d.id.to_string()),
        }
    }
    let removed: Vec<&DeploymentId> =
        old.keys().filter(|id| !config.deployments.iter().any(|d| &d.id == *id)).collect();

    for a in &config.aliases {
        if !current.contains(a) {
            summary.aliases_set.push(a.alias.clone());
        }
    }
    for a in current.iter() {
        if !config.aliases.iter().any(|n| n.alias == a.alias) {
            summary.aliases_removed.push(a.alias.clone());
        }
    }
    *current = config.aliases.clone();
    // One swap: calls that start from here run on the new stack and its deployments.
    summary.warnings.extend(router.install(prepared));

    let settings = GatewaySettings::of(config);
    if settings.master_key.is_none() && gateway.settings.load().master_key.is_some() {
        summary.warnings.push(
            "general_settings.master_key removed: every endpoint is open now (only local host names are served)"
                .to_owned(),
        );
    }
    gateway.settings.store(Arc::new(settings));
    if let Some(cache) = cache
        && gateway.cache.install(config.cache.as_ref(), cache)
    {
        tracing::info!(enabled = config.cache.is_some(), "response cache settings changed: a new cache is in use");
    }
    gateway.dashboard.set_default_max_parallel_requests(config.precall.default_max_parallel_requests);
    gateway.litellm.set_deployments(&config.deployments);
    if config.edge != gateway.edge {
        summary.warnings.push("general_settings.edge changed: restart to apply".to_owned());
    }

    for id in removed {
        // Nothing routes to it any more; a leftover cooldown would only clutter the listing.
        router.store().clear_cooldown(id).await;
        summary.removed.push(id.to_string());
    }
    summary.removed.sort();
    Ok(summary)
}

/// Whether two deployments with the same id have the same settings: the id derived from every
/// provider parameter, plus the model info that does not enter it.
fn same(a: &Deployment, b: &Deployment) -> bool {
    let derived = |d: &Deployment| d.to_builder().id("").build().ok().map(|d| d.id);
    a.group == b.group
        && a.blocked == b.blocked
        && a.max_input_tokens == b.max_input_tokens
        && a.max_output_tokens == b.max_output_tokens
        && a.capabilities == b.capabilities
        && derived(a).is_some()
        && derived(a) == derived(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> Config {
        Config::from_yaml_str(yaml).expect("valid config")
    }

    const BEFORE: &str = r#"
model_list:
  - { model_name: a, litellm_params: { model: openai/a, rpm: 10 }, model_info: { id: a1 } }
  - { model_name: a, litellm_params: { model: openai/a2 }, model_info: { id: a2 } }
  - { model_name: b, litellm_params: { model: openai/b }, model_info: { id: b1 } }
router_settings:
  model_group_alias: { fast: a, old: b }
"#;

    const AFTER: &str = r#"
model_list:
  - { model_name: a, litellm_params: { model: openai/a, rpm: 20 }, model_info: { id: a1 } }
  - { model_name: a, litellm_params: { model: openai/a2 }, model_info: { id: a2 } }
  - { model_name: c, litellm_params: { model: openai/c }, model_info: { id: c1 } }
router_settings:
  model_group_alias: { fast: c }
"#;

    fn gateway_for(c: &Config, check: Option<DeploymentCheck>) -> crate::gateway::Gateway {
        let mut builder =
            crate::gateway::Gateway::builder(c.clone()).provider(switchyard_services::sim::SimProvider::new(1));
        if let Some(check) = check {
            builder = builder.check_deployment(move |d| check(d));
        }
        builder.build().expect("first load")
    }

    #[tokio::test]
    async fn a_reload_adds_updates_and_removes() {
        let gateway = gateway_for(&config(BEFORE), None);
        let summary = gateway.reload(config(AFTER)).await.expect("reload");
        let registry = gateway.routing().registry();
        assert_eq!(summary.added, ["c1"]);
        assert_eq!(summary.updated, ["a1"]);
        assert_eq!(summary.removed, ["b1"]);
        assert_eq!(summary.unchanged, 1);
        assert_eq!(summary.aliases_set, ["fast"]);
        assert_eq!(summary.aliases_removed, ["old"]);
        assert_eq!(registry.deployment(&"a1".into()).and_then(|d| d.rpm), Some(20));
        assert_eq!(&*registry.resolve("fast").expect("alias").group.name().clone(), "c");
        assert!(registry.resolve("b").is_err());
        let again = gateway.reload(config(AFTER)).await.expect("reload");
        assert!(again.is_empty(), "{again:?}");
        assert_eq!(again.unchanged, 3);
    }

    #[tokio::test]
    async fn a_refused_deployment_changes_nothing() {
        let check: DeploymentCheck =
            Arc::new(|d: &Deployment| if d.group.as_ref() == "c" { Err("not served".to_owned()) } else { Ok(()) });
        let gateway = gateway_for(&config(BEFORE), Some(check));
        let registry = gateway.routing().registry();
        let err = gateway.reload(config(AFTER)).await.expect_err("refused");
        assert!(matches!(err, ReloadError::Deployment { ref id, .. } if id == "c1"), "{err}");
        assert_eq!(registry.deployments().len(), 3);
        assert!(registry.resolve("old").is_ok());
    }
}
