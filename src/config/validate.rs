//! The checks that span sections (unique ids, names that must be known groups) and hold for a
//! [`Config`] built in code too. A loaded config keeps where each entry came from
//! ([`Sources`]) so its errors name YAML paths; a config built in code is named by its fields.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value};
use switchyard_layers::{
    Deployment,
    deployment::{inferred_provider, pattern_matches},
};

use super::{AutoRouter, Config, ConfigError};

/// A fallback table of [`FallbackTables`](switchyard_layers::fallback::FallbackTables).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Table {
    General,
    ContextWindow,
    ContentPolicy,
}

impl Table {
    fn field(self) -> &'static str {
        match self {
            Self::General => "general",
            Self::ContextWindow => "context_window",
            Self::ContentPolicy => "content_policy",
        }
    }
}

/// Where one fallback entry was written.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    /// The entry (`router_settings.fallbacks[1]`): named when its key is unknown.
    pub(crate) entry: String,
    /// Its value (`router_settings.fallbacks[1].gpt-4o`).
    pub(crate) value: String,
    /// The value was a list, so targets are named `value[j]`.
    pub(crate) list: bool,
}

impl Node {
    fn in_code(path: String) -> Self {
        Self { entry: path.clone(), value: path, list: true }
    }

    fn target(&self, j: usize) -> String {
        if self.list { format!("{}[{j}]", self.value) } else { self.value.clone() }
    }
}

/// Where the parts of a loaded config were written; empty for a config built in code.
#[derive(Debug, Default)]
pub(crate) struct Sources {
    from_yaml: bool,
    pub(crate) fallbacks: HashMap<(Table, String), Node>,
    pub(crate) default_fallbacks: Option<Node>,
    /// The path of each alias, in [`Config::aliases`] order.
    pub(crate) aliases: Vec<String>,
    /// The `model_list` entry of each pre-router, in [`Config::pre_routers`] order.
    pub(crate) pre_routers: Vec<String>,
    /// The `model_list` index of each deployment, in [`Config::deployments`] order (an entry
    /// with a list of organizations makes several; one gated off by `supported_environments`
    /// makes none).
    pub(crate) entries: Vec<usize>,
}

impl Sources {
    pub(crate) fn from_yaml() -> Self {
        Self { from_yaml: true, ..Self::default() }
    }

    pub(crate) fn deployment(&self, i: usize) -> String {
        if self.from_yaml {
            format!("model_list[{}]", self.entries.get(i).copied().unwrap_or(i))
        } else {
            format!("deployments[{i}]")
        }
    }

    /// `key` of pre-router `i`: `model_list[3].litellm_params.{key}` as loaded, `pre_routers[i].{key}`
    /// in code; the entry itself when `key` is empty.
    fn pre_router(&self, i: usize, key: &str) -> String {
        match (self.pre_routers.get(i), key.is_empty()) {
            (Some(entry), true) => entry.clone(),
            (Some(entry), false) => format!("{entry}.litellm_params.{key}"),
            (None, true) => format!("pre_routers[{i}]"),
            (None, false) => format!("pre_routers[{i}].{key}"),
        }
    }

    fn alias(&self, i: usize) -> String {
        self.aliases.get(i).cloned().unwrap_or_else(|| format!("aliases[{i}]"))
    }

    fn fallback(&self, table: Table, key: &str) -> Node {
        self.fallbacks
            .get(&(table, key.to_owned()))
            .cloned()
            .unwrap_or_else(|| Node::in_code(format!("fallbacks.{}.{key}", table.field())))
    }

    fn default_fallbacks(&self) -> Node {
        self.default_fallbacks.clone().unwrap_or_else(|| Node::in_code("fallbacks.default".to_owned()))
    }
}

/// The names a fallback may mention.
struct Names<'a> {
    groups: BTreeSet<&'a str>,
    patterns: Vec<&'a str>,
    aliases: BTreeSet<&'a str>,
    /// The deployments' provider models (a request may name one).
    models: BTreeSet<&'a str>,
}

impl<'a> Names<'a> {
    fn new(config: &'a Config) -> Self {
        let groups: BTreeSet<&str> = config.deployments.iter().map(|d| &*d.group).collect();
        let patterns = groups.iter().copied().filter(|g| g.contains('*')).collect();
        let aliases = config.aliases.iter().map(|a| a.alias.as_str()).collect();
        let models = config.deployments.iter().map(|d| &*d.model).filter(|m| !m.contains('*')).collect();
        Self { groups, patterns, aliases, models }
    }

    /// Whether `name` resolves as the registry resolves it: a group, an alias, a wildcard match
    /// (also as `{provider}/{name}`), or a deployment's provider model.
    fn knows(&self, name: &str) -> bool {
        let prefixed = || inferred_provider(name).map(|p| format!("{p}/{name}"));
        self.groups.contains(name)
            || self.aliases.contains(name)
            || self.patterns.iter().any(|p| pattern_matches(p, name))
            || self.models.contains(name)
            || (!self.patterns.is_empty()
                && prefixed().is_some_and(|n| self.patterns.iter().any(|p| pattern_matches(p, &n))))
    }

    /// ` (known: a, b, c)`: groups and aliases, at most ten names.
    fn listing(&self) -> String {
        Self::list(self.groups.iter().chain(self.aliases.iter()).copied().collect())
    }

    fn list(names: Vec<&str>) -> String {
        if names.is_empty() {
            return " (model_list is empty)".to_owned();
        }
        let more = if names.len() > 10 { ", ..." } else { "" };
        format!(" (known: {}{more})", names[..names.len().min(10)].join(", "))
    }

    fn unknown(&self, name: &str) -> String {
        format!("`{name}` is not a model group, an alias, or a name a wildcard `model_name` matches{}", self.listing())
    }
}

/// Runs every cross-section check; errors are named through `sources`.
pub(crate) fn validate(config: &Config, sources: &Sources) -> Result<(), ConfigError> {
    let mut ids: HashMap<&str, usize> = HashMap::with_capacity(config.deployments.len());
    for (i, d) in config.deployments.iter().enumerate() {
        if d.group.trim().is_empty() || d.model.trim().is_empty() {
            return Err(ConfigError::invalid(
                sources.deployment(i),
                "model group and provider model must not be empty",
            ));
        }
        if client_chooses_the_host(d) {
            return Err(ConfigError::invalid(
                format!("{}.litellm_params.model", sources.deployment(i)),
                format!(
                    "`{}` takes its provider from the requested name, and with it the host the deployment's \
                     credentials are sent to; set `api_base`, or name the provider (`openai/*`)",
                    d.model
                ),
            ));
        }
        if let Some(first) = ids.insert(d.id.as_str(), i) {
            return Err(ConfigError::invalid(
                sources.deployment(i),
                format!(
                    "deployment id `{}` is also the id of {}; ids must be unique (identical entries derive \
                     the same id: set `model_info.id` to tell them apart)",
                    d.id,
                    sources.deployment(first)
                ),
            ));
        }
    }

    let names = Names::new(config);
    let mut seen = HashSet::with_capacity(config.aliases.len());
    for (i, a) in config.aliases.iter().enumerate() {
        let at = sources.alias(i);
        if a.alias.trim().is_empty() {
            return Err(ConfigError::invalid(at, "an alias name must not be empty"));
        }
        if !seen.insert(a.alias.as_str()) {
            return Err(ConfigError::invalid(at, format!("alias `{}` is defined twice", a.alias)));
        }
        if !names.groups.contains(a.target.as_str()) {
            let why = if names.aliases.contains(a.target.as_str()) {
                format!("`{}` is an alias; an alias must point at a model group", a.target)
            } else {
                format!(
                    "`{}` is not a model group in `model_list`{}",
                    a.target,
                    Names::list(names.groups.iter().copied().collect())
                )
            };
            return Err(ConfigError::invalid(at, why));
        }
    }

    let tables = [
        (Table::General, &config.fallbacks.general),
        (Table::ContextWindow, &config.fallbacks.context_window),
        (Table::ContentPolicy, &config.fallbacks.content_policy),
    ];
    for (table, map) in tables {
        for (key, targets) in map {
            let node = sources.fallback(table, key);
            if key != "*" && !names.knows(key) {
                return Err(ConfigError::invalid(node.entry, names.unknown(key)));
            }
            check_targets(&names, targets, &node)?;
        }
    }
    check_targets(&names, &config.fallbacks.default, &sources.default_fallbacks())?;
    check_pre_routers(config, &names, sources)?;

    let buffer = config.strategy_args.lowest_latency_buffer;
    if !(buffer.is_finite() && buffer >= 0.0) {
        return Err(ConfigError::invalid(
            "strategy_args.lowest_latency_buffer",
            format!("must be a finite number >= 0, got {buffer}"),
        ));
    }
    if config.latency.max_samples == 0 {
        return Err(ConfigError::invalid("latency.max_samples", "must be >= 1, got 0"));
    }
    if config.latency.sample_ttl.is_zero() {
        return Err(ConfigError::invalid("latency.sample_ttl", "must be > 0"));
    }
    Ok(())
}

/// A wildcard group without `api_base` whose provider (the model's prefix before the first `/`,
/// which picks the host and default base URL) comes from the requested name: the provider model
/// has a wildcard there (`model: "*"`), or its wildcards do not match the group's in number, so
/// the requested name is used whole, under a group whose own prefix is a wildcard (`model_name:
/// "*"`). A client asking for `groq/x` would have the deployment's key sent to the provider of its
/// choosing.
fn client_chooses_the_host(d: &Deployment) -> bool {
    let wild_prefix = |name: &str| name.split_once('/').map_or(name, |(p, _)| p).contains('*');
    let slots = d.model.matches('*').count();
    let used_whole = slots > 0 && slots != d.group.matches('*').count();
    d.group.contains('*')
        && d.api_base.as_deref().is_none_or(|b| b.trim().is_empty())
        && (wild_prefix(&d.model) || (used_whole && wild_prefix(&d.group)))
}

/// Each pre-router's virtual name is its own (no group, alias or other pre-router has it), and
/// every group it may route to is known; then the router must build.
fn check_pre_routers(config: &Config, names: &Names<'_>, sources: &Sources) -> Result<(), ConfigError> {
    let mut seen = HashMap::with_capacity(config.pre_routers.len());
    for (i, entry) in config.pre_routers.iter().enumerate() {
        let name = entry.name.as_str();
        let at_name = || {
            let entry = sources.pre_router(i, "");
            if sources.from_yaml { format!("{entry}.model_name") } else { format!("{entry}.name") }
        };
        if name.trim().is_empty() {
            return Err(ConfigError::invalid(at_name(), "a pre-router's model name must not be empty"));
        }
        if names.groups.contains(name) || names.aliases.contains(name) {
            return Err(ConfigError::invalid(
                at_name(),
                format!("`{name}` is a model group or an alias already; a pre-router needs a name of its own"),
            ));
        }
        if let Some(first) = seen.insert(name, i) {
            return Err(ConfigError::invalid(
                at_name(),
                format!("`{name}` is also the name of the pre-router of {}", sources.pre_router(first, "")),
            ));
        }
        let known = |group: &str, key: &str| -> Result<(), ConfigError> {
            if names.knows(group) {
                return Ok(());
            }
            Err(ConfigError::invalid(sources.pre_router(i, key), names.unknown(group)))
        };
        match &entry.router {
            AutoRouter::Complexity(c) => {
                for (tier, group) in &c.tiers {
                    known(group, &format!("complexity_router_config.tiers.{tier}"))?;
                }
                if let Some(default) = &c.default_model {
                    known(default, "complexity_router_default_model")?;
                }
            }
            AutoRouter::Quality(q) => {
                for (j, group) in q.available_models.iter().enumerate() {
                    let key = format!("quality_router_config.available_models[{j}]");
                    if !names.groups.contains(group.as_str()) {
                        let why = format!(
                            "`{group}` is not a model group in `model_list` (the quality router reads each group's                              `model_info.litellm_routing_preferences`){}",
                            Names::list(names.groups.iter().copied().collect())
                        );
                        return Err(ConfigError::invalid(sources.pre_router(i, &key), why));
                    }
                    if !config.routing_preferences.contains_key(group) {
                        return Err(ConfigError::invalid(
                            sources.pre_router(i, &key),
                            format!(
                                "model group `{group}` declares no quality tier: set                                  `model_info.litellm_routing_preferences.quality_tier` on its deployments"
                            ),
                        ));
                    }
                }
                if let Some(default) = &q.default_model {
                    known(default, "quality_router_default_model")?;
                }
            }
            AutoRouter::Adaptive(a) => {
                for (j, group) in a.config.available_models.iter().enumerate() {
                    if !names.groups.contains(group.as_str()) {
                        let key = format!("adaptive_router_config.available_models[{j}]");
                        let why = format!(
                            "`{group}` is not a model group in `model_list` (the adaptive router reads each group's \
                             `model_info.adaptive_router_preferences`){}",
                            Names::list(names.groups.iter().copied().collect())
                        );
                        return Err(ConfigError::invalid(sources.pre_router(i, &key), why));
                    }
                }
                if let Some(default) = &a.default_model {
                    known(default, "adaptive_router_default_model")?;
                }
            }
        }
        // Built over a throwaway store: only the settings are checked here.
        let store = std::sync::Arc::new(switchyard_layers::StateStore::memory());
        entry
            .router
            .build(name, config, &store)
            .map_err(|message| ConfigError::invalid(sources.pre_router(i, ""), message))?;
    }
    Ok(())
}

fn check_targets(names: &Names<'_>, targets: &[String], node: &Node) -> Result<(), ConfigError> {
    for (j, target) in targets.iter().enumerate() {
        if !names.knows(target) {
            return Err(ConfigError::invalid(node.target(j), names.unknown(target)));
        }
    }
    Ok(())
}

/// A `retry_policy` / `allowed_fails_policy` field name must be one LiteLLM defines (the lists come
/// from `switchyard_layers::error_class`, which also parses them).
pub(crate) fn policy_field(key: &str, path: &str, fields: &[&str]) -> Result<(), ConfigError> {
    if fields.contains(&key) {
        return Ok(());
    }
    Err(ConfigError::invalid(path, format!("unknown field `{key}`; valid: {}", fields.join(", "))))
}

/// A copy of `d` safe to print: credential-like provider parameters are masked (the API key
/// already is, by [`ApiKey`](switchyard_layers::ApiKey)).
pub(crate) fn masked(d: &Deployment) -> Deployment {
    let mut d = d.clone();
    d.params = mask_map(&d.params);
    d
}

fn mask_map(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .map(|(k, v)| {
            let v = if is_secret_key(k) {
                Value::String("***".to_owned())
            } else {
                match v {
                    Value::Object(m) => Value::Object(mask_map(m)),
                    Value::Array(items) => Value::Array(
                        items
                            .iter()
                            .map(|i| if let Value::Object(m) = i { Value::Object(mask_map(m)) } else { i.clone() })
                            .collect(),
                    ),
                    other => other.clone(),
                }
            };
            (k.clone(), v)
        })
        .collect()
}

/// `aws_secret_access_key`, `vertex_credentials`, `azure_ad_token`, `Authorization`, ...
/// but not `max_tokens`.
fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    ["key", "secret", "password", "passwd", "credential", "auth", "cookie"].iter().any(|s| k.contains(s))
        || k.ends_with("token")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_the_whole_name() {
        assert!(pattern_matches("openai/*", "openai/gpt-4o"));
        assert!(pattern_matches("*", "anything"));
        assert!(pattern_matches("a*b*c", "axxbyyc"));
        assert!(pattern_matches("gpt-*-mini", "gpt-4o-mini"));
        assert!(!pattern_matches("a*b", "axbyz"));
        assert!(!pattern_matches("openai/*", "azure/gpt-4o"));
        assert!(!pattern_matches("exact", "exactly"));
        assert!(pattern_matches("a*a", "aa"));
        assert!(!pattern_matches("ab*ba", "aba"));
    }

    #[test]
    fn credential_like_params_are_secret() {
        for k in ["aws_secret_access_key", "vertex_credentials", "azure_ad_token", "Authorization", "api_key"] {
            assert!(is_secret_key(k), "{k}");
        }
        for k in ["max_tokens", "temperature", "aws_region_name"] {
            assert!(!is_secret_key(k), "{k}");
        }
    }
}
