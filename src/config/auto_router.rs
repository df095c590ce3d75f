//! `model_list` entries whose `litellm_params.model` is `auto_router/...`: a virtual model name
//! (the entry's `model_name`) that a pre-router turns into a real model group per request, as
//! LiteLLM's `Router` does (`router_utils/auto_router_model_naming.py`, LiteLLM 1.100).
//!
//! - `auto_router/complexity_router...`: the rule-based [`ComplexityRouter`] with
//!   `complexity_router_config` and `complexity_router_default_model`;
//! - `auto_router/quality_router...`: the [`QualityRouter`] with `quality_router_config` and
//!   `quality_router_default_model`, over the groups' `model_info.litellm_routing_preferences`;
//! - `auto_router/adaptive_router...` and any other `auto_router/<name>` (LiteLLM's semantic
//!   router, `auto_router_config`): refused at load, naming the entry (not implemented yet).

use std::{collections::BTreeMap, fmt, sync::Arc};

use serde::de::DeserializeOwned;
use serde_json::Value;
use switchyard_layers::preroute::{
    PreRouter, PreRouters,
    complexity::{ComplexityRouter, ComplexityRouterConfig, Tier},
    quality::{QualityCandidate, QualityRouter, QualityRouterConfig, RoutingPreferences},
};

use super::{
    Config, ConfigError,
    convert::{NOT_SUPPORTED, Warnings},
    raw::{RawModel, RawParams},
};

/// The prefix of a pre-router entry's `litellm_params.model`.
pub(crate) const AUTO_ROUTER_PREFIX: &str = "auto_router/";

/// One virtual model name and the pre-router that routes it (a `model_list` entry whose
/// `litellm_params.model` is `auto_router/...`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PreRouterEntry {
    /// The name clients ask for (the entry's `model_name`).
    pub name: String,
    /// The router and its settings.
    pub router: AutoRouter,
}

impl PreRouterEntry {
    /// `name` routed by `router`.
    pub fn new(name: impl Into<String>, router: AutoRouter) -> Self {
        Self { name: name.into(), router }
    }
}

/// A pre-router Switchyard builds from a config.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum AutoRouter {
    /// `auto_router/complexity_router`: the settings, with the deployment's
    /// `complexity_router_default_model` (or the one derived from the tiers) applied.
    Complexity(Box<ComplexityRouterConfig>),
    /// `auto_router/quality_router`: the settings, with the deployment's
    /// `quality_router_default_model` applied; the candidates' tiers are
    /// [`Config::routing_preferences`].
    Quality(QualityRouterConfig),
}

impl AutoRouter {
    /// `complexity_router` or `quality_router`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Complexity(_) => "complexity_router",
            Self::Quality(_) => "quality_router",
        }
    }

    /// The model groups the router may route to, each with what it stands for (`SIMPLE`,
    /// `tier 2`, `default`), in a stable order.
    pub fn targets(&self, config: &Config) -> Vec<(String, String)> {
        match self {
            Self::Complexity(c) => {
                let mut out: Vec<(String, String)> =
                    c.tiers.iter().map(|(tier, group)| (tier.as_str().to_owned(), group.clone())).collect();
                if let Some(default) = &c.default_model {
                    out.push(("default".to_owned(), default.clone()));
                }
                out
            }
            Self::Quality(q) => {
                let mut out: Vec<(String, String)> = q
                    .available_models
                    .iter()
                    .map(|group| {
                        let tier = config.routing_preferences.get(group).map(|p| p.quality_tier);
                        (tier.map_or_else(|| "tier ?".to_owned(), |t| format!("tier {t}")), group.clone())
                    })
                    .collect();
                out.sort();
                if let Some(default) = &q.default_model {
                    out.push(("default".to_owned(), default.clone()));
                }
                out
            }
        }
    }

    /// Builds the router over `config`'s groups.
    pub(crate) fn build(&self, config: &Config) -> Result<Arc<dyn PreRouter>, String> {
        match self {
            Self::Complexity(c) => Ok(Arc::new(ComplexityRouter::new((**c).clone()).map_err(|e| e.to_string())?)),
            Self::Quality(q) => {
                Ok(Arc::new(QualityRouter::new(q.clone(), candidates(config)).map_err(|e| e.to_string())?))
            }
        }
    }
}

impl fmt::Display for AutoRouter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())
    }
}

/// The quality router's candidates: every group with routing preferences, priced by its
/// cheapest deployment (the deployments' prices are `model_info`'s, else the catalog's).
fn candidates(config: &Config) -> Vec<QualityCandidate> {
    let cheapest = |group: &str, price: fn(&switchyard_layers::Deployment) -> Option<f64>| {
        config.deployments.iter().filter(|d| &*d.group == group).filter_map(price).reduce(f64::min)
    };
    config
        .routing_preferences
        .iter()
        .map(|(group, prefs)| {
            QualityCandidate::new(group.as_str(), prefs.clone())
                .with_prices(cheapest(group, |d| d.input_cost_per_token), cheapest(group, |d| d.output_cost_per_token))
        })
        .collect()
}

impl Config {
    /// The pre-routers of [`pre_routers`](Self::pre_routers), built over this config's groups,
    /// one per virtual name: what [`RoutingStack`](switchyard_layers::stack::RoutingStack) puts
    /// in its pre-route layer. Fails on settings [`validate`](Self::validate) refuses.
    pub fn build_pre_routers(&self) -> Result<PreRouters, ConfigError> {
        let mut set = PreRouters::new();
        for (i, entry) in self.pre_routers.iter().enumerate() {
            let router = entry
                .router
                .build(self)
                .map_err(|message| ConfigError::invalid(format!("pre_routers[{i}]"), message))?;
            set.insert(entry.name.as_str(), router);
        }
        Ok(set)
    }
}

/// Whether `model_list[i]` is a pre-router entry.
pub(crate) fn is_auto_router(raw: &RawModel) -> bool {
    raw.litellm_params.as_ref().and_then(|p| p.model.as_deref()).is_some_and(|m| m.starts_with(AUTO_ROUTER_PREFIX))
}

/// The keys of each router kind in `litellm_params` (LiteLLM's `STRATEGY_ROUTER_PARAM_FIELDS`).
const COMPLEXITY_KEYS: [&str; 2] = ["complexity_router_config", "complexity_router_default_model"];
const QUALITY_KEYS: [&str; 2] = ["quality_router_config", "quality_router_default_model"];

/// Converts the pre-router entry `model_list[index]`.
pub(crate) fn entry(index: usize, raw: RawModel, w: &mut Warnings) -> Result<PreRouterEntry, ConfigError> {
    let base = format!("model_list[{index}]");
    let lp = |key: &str| format!("{base}.litellm_params.{key}");
    let name = raw.model_name.ok_or_else(|| ConfigError::invalid(format!("{base}.model_name"), "is required"))?;
    if name.trim().is_empty() {
        return Err(ConfigError::invalid(format!("{base}.model_name"), "must not be empty"));
    }
    for key in raw.extra.keys() {
        w.ignored(format!("model_list[].{key}"), &format!("{base}.{key}"), NOT_SUPPORTED);
    }
    for (key, set) in [("rpm", raw.rpm.is_some()), ("tpm", raw.tpm.is_some())] {
        if set {
            let why = "a pre-router entry calls no provider";
            w.ignored(format!("model_list[].{key} (auto_router)"), &format!("{base}.{key}"), why);
        }
    }
    if raw.model_info.is_some() {
        w.ignored(
            "model_list[].model_info (auto_router)".to_owned(),
            &format!("{base}.model_info"),
            "a pre-router entry serves no requests itself",
        );
    }
    let mut p = raw.litellm_params.unwrap_or_default();
    let model = p.model.take().unwrap_or_default();
    let kind = &model[AUTO_ROUTER_PREFIX.len()..];
    let router = if kind.starts_with("complexity_router") {
        complexity(&mut p, &lp, w)?
    } else if kind.starts_with("quality_router") {
        quality(&mut p, &lp, w)?
    } else if kind.starts_with("adaptive_router") {
        return Err(ConfigError::invalid(
            lp("model"),
            format!("`{model}` (LiteLLM's adaptive router) is not supported by Switchyard yet"),
        ));
    } else if kind.trim().is_empty() {
        return Err(ConfigError::invalid(lp("model"), "names no router after `auto_router/`"));
    } else {
        return Err(ConfigError::invalid(
            lp("model"),
            format!(
                "`{model}` selects LiteLLM's semantic auto router (`auto_router_config`), which Switchyard does not \
                 implement yet; supported: auto_router/complexity_router, auto_router/quality_router"
            ),
        ));
    };
    ignore_params(p, &lp, w);
    Ok(PreRouterEntry { name, router })
}

fn complexity(p: &mut RawParams, lp: &dyn Fn(&str) -> String, w: &mut Warnings) -> Result<AutoRouter, ConfigError> {
    let config: Option<ComplexityRouterConfig> = take(p, "complexity_router_config", lp)?;
    if let Some(c) = &config {
        for key in c.ignored_keys() {
            let path = lp(&format!("complexity_router_config.{key}"));
            w.ignored(format!("model_list[].litellm_params.complexity_router_config.{key}"), &path, NOT_SUPPORTED);
        }
    }
    let default: Option<String> = take(p, "complexity_router_default_model", lp)?;
    let router = ComplexityRouter::from_deployment(config, default)
        .map_err(|e| ConfigError::invalid(lp("complexity_router_config"), e.to_string()))?;
    Ok(AutoRouter::Complexity(Box::new(router.config().clone())))
}

fn quality(p: &mut RawParams, lp: &dyn Fn(&str) -> String, w: &mut Warnings) -> Result<AutoRouter, ConfigError> {
    let config: Option<QualityRouterConfig> = take(p, "quality_router_config", lp)?;
    let mut config = config.unwrap_or_default();
    for key in config.other.keys() {
        let path = lp(&format!("quality_router_config.{key}"));
        w.ignored(format!("model_list[].litellm_params.quality_router_config.{key}"), &path, NOT_SUPPORTED);
    }
    let default: Option<String> = take(p, "quality_router_default_model", lp)?;
    if let Some(default) = default {
        config.default_model = Some(default);
    }
    if config.default_model.as_deref().is_none_or(|m| m.trim().is_empty()) {
        return Err(ConfigError::invalid(
            lp("quality_router_default_model"),
            "is required for quality-router deployments (or set `default_model` in quality_router_config)",
        ));
    }
    if let Some(tier) = Tier::ALL.into_iter().find(|t| !config.complexity_to_quality.contains_key(t)) {
        return Err(ConfigError::invalid(
            lp("quality_router_config.complexity_to_quality"),
            format!("has no quality tier for {tier} (a given map replaces the default and must map all four tiers)"),
        ));
    }
    Ok(AutoRouter::Quality(config))
}

/// Takes `key` out of the entry's provider parameters and reads it, naming its path (and the
/// path inside it) in errors. A null is absent.
fn take<T: DeserializeOwned>(
    p: &mut RawParams,
    key: &str,
    lp: &dyn Fn(&str) -> String,
) -> Result<Option<T>, ConfigError> {
    let Some(value) = p.extra.remove(key).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    serde_path_to_error::deserialize(value).map(Some).map_err(|e| {
        let inner = e.path().to_string();
        let at = if inner == "." { lp(key) } else { lp(&format!("{key}.{inner}")) };
        ConfigError::type_error(at, e.inner().to_string())
    })
}

/// Every other parameter of a pre-router entry: it calls no provider, so none applies.
fn ignore_params(p: RawParams, lp: &dyn Fn(&str) -> String, w: &mut Warnings) {
    let typed: [(&str, bool); 18] = [
        ("api_key", p.api_key.is_some()),
        ("api_base", p.api_base.is_some()),
        ("api_version", p.api_version.is_some()),
        ("rpm", p.rpm.is_some()),
        ("tpm", p.tpm.is_some()),
        ("weight", p.weight.is_some()),
        ("order", p.order.is_some()),
        ("tags", p.tags.is_some()),
        ("region", p.region.is_some() || p.region_name.is_some()),
        ("max_parallel_requests", p.max_parallel_requests.is_some()),
        ("timeout", p.timeout.is_some() || p.request_timeout.is_some()),
        ("stream_timeout", p.stream_timeout.is_some()),
        ("cooldown_time", p.cooldown_time.is_some()),
        ("num_retries", p.num_retries.is_some()),
        ("input_cost_per_token", p.input_cost_per_token.is_some()),
        ("output_cost_per_token", p.output_cost_per_token.is_some()),
        ("max_budget", p.max_budget.is_some()),
        ("budget_duration", p.budget_duration.is_some()),
    ];
    let extra: BTreeMap<String, Value> = p.extra;
    let keys = typed.iter().filter(|(_, set)| *set).map(|(k, _)| (*k).to_owned()).chain(extra.into_keys());
    for key in keys {
        let why = if COMPLEXITY_KEYS.contains(&key.as_str()) || QUALITY_KEYS.contains(&key.as_str()) {
            "it configures another kind of auto router"
        } else {
            "a pre-router entry calls no provider"
        };
        w.ignored(format!("model_list[].litellm_params.{key} (auto_router)"), &lp(&key), why);
    }
}

/// The quality preferences of every group, merged over its deployments: the tier must agree,
/// the keywords are the union, the order the lowest.
pub(crate) fn merge_preferences(
    into: &mut BTreeMap<String, RoutingPreferences>,
    group: &str,
    prefs: RoutingPreferences,
    path: impl FnOnce() -> String,
) -> Result<(), ConfigError> {
    let Some(have) = into.get_mut(group) else {
        into.insert(group.to_owned(), prefs);
        return Ok(());
    };
    if have.quality_tier != prefs.quality_tier {
        return Err(ConfigError::invalid(
            path(),
            format!(
                "quality tier {} differs from {} declared by another deployment of group `{group}`; a group has one \
                 quality tier",
                prefs.quality_tier, have.quality_tier
            ),
        ));
    }
    for keyword in prefs.keywords {
        if !have.keywords.contains(&keyword) {
            have.keywords.push(keyword);
        }
    }
    have.order = match (have.order, prefs.order) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Ok(())
}
