//! `model_list` entries whose `litellm_params.model` is `auto_router/...`: a virtual model name
//! (the entry's `model_name`) that a pre-router turns into a real model group per request, as
//! LiteLLM's `Router` does (`router_utils/auto_router_model_naming.py`, LiteLLM 1.100).
//!
//! - `auto_router/complexity_router...`: the rule-based [`ComplexityRouter`] with
//!   `complexity_router_config` and `complexity_router_default_model`;
//! - `auto_router/quality_router...`: the [`QualityRouter`] with `quality_router_config` and
//!   `quality_router_default_model`, over the groups' `model_info.litellm_routing_preferences`;
//! - `auto_router/adaptive_router...`: the [`AdaptiveRouter`] (a Thompson-sampling bandit) with
//!   `adaptive_router_config` and `adaptive_router_default_model`, over the groups'
//!   `model_info.adaptive_router_preferences`, its posteriors in the router's store;
//! - any other `auto_router/<name>` (LiteLLM's semantic router, `auto_router_config`): refused at
//!   load, naming the entry (not implemented yet).

use std::{collections::BTreeMap, fmt, sync::Arc};

use serde::de::DeserializeOwned;
use serde_json::Value;
use switchyard_layers::{
    StateStore,
    preroute::{
        PreRouter, PreRouters,
        adaptive::{AdaptiveCandidate, AdaptivePreferences, AdaptiveRouter, AdaptiveRouterConfig},
        complexity::{ComplexityRouter, ComplexityRouterConfig, Tier},
        quality::{QualityCandidate, QualityRouter, QualityRouterConfig, RoutingPreferences},
    },
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
    /// `auto_router/adaptive_router`: the settings; the groups' priors are
    /// [`Config::adaptive_preferences`].
    Adaptive(Box<AdaptiveSettings>),
}

/// An `auto_router/adaptive_router` entry's settings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AdaptiveSettings {
    /// `adaptive_router_config`.
    pub config: AdaptiveRouterConfig,
    /// `adaptive_router_default_model`: checked to be a known group, otherwise unused (as in
    /// LiteLLM 1.100, which declares it and never reads it).
    pub default_model: Option<String>,
}

impl AutoRouter {
    /// `complexity_router` or `quality_router`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Complexity(_) => "complexity_router",
            Self::Quality(_) => "quality_router",
            Self::Adaptive(_) => "adaptive_router",
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
            Self::Adaptive(a) => a
                .config
                .available_models
                .iter()
                .map(|group| {
                    let tier = config.adaptive_preferences.get(group).map_or(2, |p| p.quality_tier);
                    (format!("bandit, tier {tier}"), group.clone())
                })
                .collect(),
        }
    }

    /// Builds the router named `name` over `config`'s groups; an adaptive router keeps its
    /// posteriors in `store`.
    pub(crate) fn build(
        &self,
        name: &str,
        config: &Config,
        store: &Arc<StateStore>,
    ) -> Result<(Arc<dyn PreRouter>, Option<AdaptiveRouter>), String> {
        match self {
            Self::Complexity(c) => {
                Ok((Arc::new(ComplexityRouter::new((**c).clone()).map_err(|e| e.to_string())?), None))
            }
            Self::Quality(q) => {
                Ok((Arc::new(QualityRouter::new(q.clone(), candidates(config)).map_err(|e| e.to_string())?), None))
            }
            Self::Adaptive(a) => {
                // Its own stream of draws, reproducible with `router_settings.seed`.
                let seed = config.seed.map(|s| s.wrapping_add(3));
                let router =
                    AdaptiveRouter::new(name, a.config.clone(), adaptive_candidates(config), store.clone(), seed)
                        .map_err(|e| e.to_string())?;
                Ok((Arc::new(router.clone()), Some(router)))
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

/// The adaptive router's candidates: every group of the config, with its preferences (LiteLLM's
/// default without) and its cheapest deployment's input price.
fn adaptive_candidates(config: &Config) -> Vec<AdaptiveCandidate> {
    let mut out: BTreeMap<&str, Option<f64>> = BTreeMap::new();
    for d in &config.deployments {
        let price = out.entry(&d.group).or_insert(None);
        if let Some(p) = d.input_cost_per_token {
            *price = Some(price.map_or(p, |q: f64| q.min(p)));
        }
    }
    out.into_iter()
        .map(|(group, price)| {
            let prefs = config.adaptive_preferences.get(group).cloned().unwrap_or_default();
            AdaptiveCandidate::new(group, prefs).with_input_cost(price)
        })
        .collect()
}

impl Config {
    /// The pre-routers of [`pre_routers`](Self::pre_routers), built over this config's groups,
    /// one per virtual name: what [`RoutingStack`](switchyard_layers::stack::RoutingStack) puts
    /// in its pre-route layer. Fails on settings [`validate`](Self::validate) refuses. An
    /// adaptive router built here keeps its posteriors in a store of its own (it learns alone):
    /// [`build_pre_routers_with`](Self::build_pre_routers_with) shares the router's.
    pub fn build_pre_routers(&self) -> Result<PreRouters, ConfigError> {
        Ok(self.build_pre_routers_over(&Arc::new(StateStore::memory()))?.0)
    }

    /// [`build_pre_routers`](Self::build_pre_routers) with adaptive routers keeping their
    /// posteriors in `store` (shared by every replica on Redis).
    pub fn build_pre_routers_with(&self, store: &Arc<StateStore>) -> Result<PreRouters, ConfigError> {
        Ok(self.build_pre_routers_over(store)?.0)
    }

    /// The pre-routers, and the adaptive ones by their concrete type (for feedback and the
    /// dashboard).
    pub(crate) fn build_pre_routers_over(
        &self,
        store: &Arc<StateStore>,
    ) -> Result<(PreRouters, Vec<AdaptiveRouter>), ConfigError> {
        let mut set = PreRouters::new();
        let mut adaptive = Vec::new();
        for (i, entry) in self.pre_routers.iter().enumerate() {
            let (router, concrete) = entry
                .router
                .build(&entry.name, self, store)
                .map_err(|message| ConfigError::invalid(format!("pre_routers[{i}]"), message))?;
            set.insert(entry.name.as_str(), router);
            adaptive.extend(concrete);
        }
        Ok((set, adaptive))
    }
}

/// Whether `model_list[i]` is a pre-router entry.
pub(crate) fn is_auto_router(raw: &RawModel) -> bool {
    raw.litellm_params.as_ref().and_then(|p| p.model.as_deref()).is_some_and(|m| m.starts_with(AUTO_ROUTER_PREFIX))
}

/// The keys of each router kind in `litellm_params` (LiteLLM's `STRATEGY_ROUTER_PARAM_FIELDS`).
const COMPLEXITY_KEYS: [&str; 2] = ["complexity_router_config", "complexity_router_default_model"];
const QUALITY_KEYS: [&str; 2] = ["quality_router_config", "quality_router_default_model"];
const ADAPTIVE_KEYS: [&str; 2] = ["adaptive_router_config", "adaptive_router_default_model"];

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
        adaptive(&mut p, &lp, w)?
    } else if kind.trim().is_empty() {
        return Err(ConfigError::invalid(lp("model"), "names no router after `auto_router/`"));
    } else {
        return Err(ConfigError::invalid(
            lp("model"),
            format!(
                "`{model}` selects LiteLLM's semantic auto router (`auto_router_config`), which Switchyard does not \
                 implement yet; supported: auto_router/complexity_router, auto_router/quality_router, \
                 auto_router/adaptive_router"
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

fn adaptive(p: &mut RawParams, lp: &dyn Fn(&str) -> String, w: &mut Warnings) -> Result<AutoRouter, ConfigError> {
    let Some(config) = take::<AdaptiveRouterConfig>(p, "adaptive_router_config", lp)? else {
        return Err(ConfigError::invalid(
            lp("adaptive_router_config"),
            "is required for adaptive-router deployments (with `available_models`)",
        ));
    };
    for key in config.other.keys() {
        let path = lp(&format!("adaptive_router_config.{key}"));
        w.ignored(format!("model_list[].litellm_params.adaptive_router_config.{key}"), &path, NOT_SUPPORTED);
    }
    config.check().map_err(|e| ConfigError::invalid(lp("adaptive_router_config"), e.message()))?;
    let default_model: Option<String> = take(p, "adaptive_router_default_model", lp)?;
    Ok(AutoRouter::Adaptive(Box::new(AdaptiveSettings { config, default_model })))
}

/// The adaptive router's `model_info.adaptive_router_preferences` of `model_list[index]`, taken
/// out of its `model_info` (a tier outside 1..=3 fails the load, naming it).
pub(crate) fn adaptive_preferences(
    index: usize,
    raw: &mut RawModel,
    w: &mut Warnings,
) -> Result<Option<AdaptivePreferences>, ConfigError> {
    let Some(value) = raw
        .model_info
        .as_mut()
        .and_then(|info| info.extra.remove("adaptive_router_preferences"))
        .filter(|v| !v.is_null())
    else {
        return Ok(None);
    };
    let path = format!("model_list[{index}].model_info.adaptive_router_preferences");
    let prefs: AdaptivePreferences = serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let at = if inner == "." { path.clone() } else { format!("{path}.{inner}") };
        ConfigError::type_error(at, e.inner().to_string())
    })?;
    if !(1..=3).contains(&prefs.quality_tier) {
        return Err(ConfigError::invalid(
            format!("{path}.quality_tier"),
            format!("{} is not supported; valid tiers are [1, 2, 3]", prefs.quality_tier),
        ));
    }
    for key in prefs.other.keys() {
        let p = format!("{path}.{key}");
        w.ignored(format!("model_list[].model_info.adaptive_router_preferences.{key}"), &p, NOT_SUPPORTED);
    }
    Ok(Some(prefs))
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
        let why = if COMPLEXITY_KEYS.contains(&key.as_str())
            || QUALITY_KEYS.contains(&key.as_str())
            || ADAPTIVE_KEYS.contains(&key.as_str())
        {
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
    same_tier(have.quality_tier, prefs.quality_tier, group, "quality tier", path)?;
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

/// A group's deployments must declare one tier: `new` (at `path`) against `have`, declared by
/// another deployment of `group`.
fn same_tier<T: PartialEq + fmt::Display>(
    have: T,
    new: T,
    group: &str,
    what: &str,
    path: impl FnOnce() -> String,
) -> Result<(), ConfigError> {
    if have == new {
        return Ok(());
    }
    Err(ConfigError::invalid(
        path(),
        format!(
            "quality tier {new} differs from {have} declared by another deployment of group `{group}`; a group has one {what}"
        ),
    ))
}

/// The adaptive preferences of every group, merged over its deployments: the tier must agree,
/// the strengths are the union.
pub(crate) fn merge_adaptive(
    into: &mut BTreeMap<String, AdaptivePreferences>,
    group: &str,
    prefs: AdaptivePreferences,
    path: impl FnOnce() -> String,
) -> Result<(), ConfigError> {
    let Some(have) = into.get_mut(group) else {
        into.insert(group.to_owned(), prefs);
        return Ok(());
    };
    same_tier(have.quality_tier, prefs.quality_tier, group, "adaptive quality tier", path)?;
    for s in prefs.strengths {
        if !have.strengths.contains(&s) {
            have.strengths.push(s);
        }
    }
    Ok(())
}
