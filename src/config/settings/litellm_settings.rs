//! The routing keys of `litellm_settings`, which `router_settings` may set too (and then wins):
//! retries, timeouts, cooldowns, the fallback tables and the aliases, written into the retry and
//! cooldown layers' configs and the fallback tables; and `litellm_settings.model_alias_map`
//! (hidden aliases).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::config::{
    Alias, Config, ConfigError,
    convert::{NOT_SUPPORTED, Warnings, opt, to_secs, to_timeout, to_u32},
    raw::{Flag, Num, RawLitellmSettings, RawRouterSettings},
    validate::{Node, Sources, Table},
};

/// One key set in `router_settings` or `litellm_settings`: the winner and its path.
pub(super) fn pick<T>(key: &str, ls_key: &str, rs: Option<T>, ls: Option<T>, w: &mut Warnings) -> Option<(T, String)> {
    match (rs, ls) {
        (Some(r), l) => {
            if l.is_some() {
                let path = format!("litellm_settings.{ls_key}");
                w.once(path.clone(), format!("`{path}` is ignored: `router_settings.{key}` is set and wins"));
            }
            Some((r, format!("router_settings.{key}")))
        }
        (None, Some(l)) => Some((l, format!("litellm_settings.{ls_key}"))),
        (None, None) => None,
    }
}

pub(super) fn num(
    key: &str,
    ls_key: &str,
    rs: Option<Num>,
    ls: Option<Num>,
    w: &mut Warnings,
) -> (Option<Num>, String) {
    match pick(key, ls_key, rs, ls, w) {
        Some((n, path)) => (Some(n), path),
        None => (None, String::new()),
    }
}

/// The keys both sections carry.
pub(super) fn shared(
    c: &mut Config,
    sources: &mut Sources,
    rs: &RawRouterSettings,
    ls: &RawLitellmSettings,
    w: &mut Warnings,
) -> Result<(), ConfigError> {
    let (n, path) = num("num_retries", "num_retries", rs.num_retries, ls.num_retries, w);
    if let Some(v) = opt(n, || path, to_u32)? {
        c.retry.num_retries = v;
    }
    let (n, path) = num("timeout", "request_timeout", rs.timeout, ls.request_timeout, w);
    c.timeout = opt(n, || path, to_timeout)?;
    let (n, path) = num("allowed_fails", "allowed_fails", rs.allowed_fails, ls.allowed_fails, w);
    c.cooldown.allowed_fails = opt(n, || path, to_u32)?;
    let (n, path) = num("cooldown_time", "cooldown_time", rs.cooldown_time, ls.cooldown_time, w);
    if let Some(v) = opt(n, || path, to_secs)? {
        c.cooldown.cooldown_time = v;
    }
    let (n, path) = num("max_fallbacks", "max_fallbacks", rs.max_fallbacks, ls.max_fallbacks, w);
    if let Some(v) = opt(n, || path, to_u32)? {
        c.fallbacks.max_fallbacks = v;
    }

    let tables = [
        ("fallbacks", Table::General, &rs.fallbacks, &ls.fallbacks),
        ("context_window_fallbacks", Table::ContextWindow, &rs.context_window_fallbacks, &ls.context_window_fallbacks),
        ("content_policy_fallbacks", Table::ContentPolicy, &rs.content_policy_fallbacks, &ls.content_policy_fallbacks),
    ];
    for (key, table, r, l) in tables {
        if let Some((value, path)) = pick(key, key, r.as_ref(), l.as_ref(), w) {
            fallback_table(c, sources, table, value, &path, w)?;
        }
    }
    if let Some((value, path)) =
        pick("default_fallbacks", "default_fallbacks", rs.default_fallbacks.as_ref(), ls.default_fallbacks.as_ref(), w)
    {
        let (groups, list) = group_list(value, &path)?;
        if sources.default_fallbacks.is_some() {
            w.once(path.clone(), format!("`{path}` is ignored: `fallbacks` has a `*` entry, which is tried first"));
        } else {
            c.fallbacks.default = groups;
            sources.default_fallbacks = Some(Node { entry: path.clone(), value: path, list });
        }
    }
    if let Some((aliases, path)) =
        pick("model_group_alias", "model_group_alias", rs.model_group_alias.as_ref(), ls.model_group_alias.as_ref(), w)
    {
        for (alias, value) in aliases {
            let at = format!("{path}.{alias}");
            c.aliases.push(parse_alias(alias, value, &at, w)?);
            sources.aliases.push(at);
        }
    }
    // LiteLLM's proxy renames a request's model through `litellm.model_alias_map` before the
    // router sees it: an alias that is not listed (hidden).
    for (alias, value) in ls.model_alias_map.iter().flatten() {
        let at = format!("litellm_settings.model_alias_map.{alias}");
        let Value::String(target) = value else {
            return Err(ConfigError::type_error(at, "must be a model group name"));
        };
        if let Some(i) = c.aliases.iter().position(|a| &a.alias == alias) {
            let other = sources.aliases.get(i).cloned().unwrap_or_default();
            w.once(at.clone(), format!("`{at}` is ignored: `{other}` names the same alias"));
            continue;
        }
        c.aliases.push(Alias::new(alias.as_str(), target.as_str(), true));
        sources.aliases.push(at);
    }
    Ok(())
}

/// A fallback list: `[{group: [fallback, ...]}, ...]`, each entry exactly one key, each value
/// a group or a list of groups. The `*` key of `fallbacks` is the default list.
pub(super) fn fallback_table(
    c: &mut Config,
    sources: &mut Sources,
    table: Table,
    value: &Value,
    path: &str,
    w: &mut Warnings,
) -> Result<(), ConfigError> {
    let Value::Array(entries) = value else {
        return Err(ConfigError::type_error(path, "must be a list of `{model_group: [fallback groups]}` entries"));
    };
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let Value::Object(map) = entry else {
            return Err(ConfigError::type_error(
                at,
                "must be a mapping of one model group to its fallbacks, e.g. `{gpt-4o: [gpt-4o-mini]}`",
            ));
        };
        let mut keys = map.iter();
        let (Some((key, targets)), None) = (keys.next(), keys.next()) else {
            let names: Vec<String> = map.keys().map(|k| format!("`{k}`")).collect();
            return Err(ConfigError::invalid(
                at,
                format!(
                    "a fallback entry must have exactly one key (a model group), found {}{}{}",
                    map.len(),
                    if names.is_empty() { "" } else { ": " },
                    names.join(", ")
                ),
            ));
        };
        if key.trim().is_empty() {
            return Err(ConfigError::invalid(at, "the key must name a model group"));
        }
        let value_path = format!("{at}.{key}");
        let (targets, list) = group_list(targets, &value_path)?;
        let node = Node { entry: at.clone(), value: value_path, list };
        let earlier = if table == Table::General && key == "*" {
            sources.default_fallbacks.as_ref().map(|n| n.entry.clone())
        } else {
            sources.fallbacks.get(&(table, key.clone())).map(|n| n.entry.clone())
        };
        if let Some(earlier) = earlier {
            // LiteLLM walks the list and uses the first entry for a group.
            w.once(at.clone(), format!("`{at}` is ignored: `{key}` already has fallbacks at `{earlier}`"));
            continue;
        }
        if table == Table::General && key == "*" {
            c.fallbacks.default = targets;
            sources.default_fallbacks = Some(node);
        } else {
            table_mut(c, table).insert(key.clone(), targets);
            sources.fallbacks.insert((table, key.clone()), node);
        }
    }
    Ok(())
}

pub(super) fn table_mut(c: &mut Config, table: Table) -> &mut BTreeMap<String, Vec<String>> {
    match table {
        Table::General => &mut c.fallbacks.general,
        Table::ContextWindow => &mut c.fallbacks.context_window,
        Table::ContentPolicy => &mut c.fallbacks.content_policy,
    }
}

/// A group or a list of groups; `true` when it was a list.
pub(super) fn group_list(value: &Value, path: &str) -> Result<(Vec<String>, bool), ConfigError> {
    match value {
        Value::String(s) => Ok((vec![s.clone()], false)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(j, item)| match item {
                Value::String(s) => Ok(s.clone()),
                _ => Err(ConfigError::type_error(format!("{path}[{j}]"), "must be a model group name")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|groups| (groups, true)),
        _ => Err(ConfigError::type_error(path, "must be a model group or a list of model groups")),
    }
}

/// `alias: group` or `alias: {model: group, hidden: true}`.
pub(super) fn parse_alias(alias: &str, value: &Value, at: &str, w: &mut Warnings) -> Result<Alias, ConfigError> {
    match value {
        Value::String(target) => Ok(Alias::new(alias, target.as_str(), false)),
        Value::Object(map) => {
            let target = match map.get("model") {
                Some(Value::String(t)) => t.clone(),
                Some(_) => return Err(ConfigError::type_error(format!("{at}.model"), "must be a model group name")),
                None => return Err(ConfigError::invalid(format!("{at}.model"), "is required")),
            };
            let hidden = match map.get("hidden") {
                None | Some(Value::Null) => false,
                Some(v) => Flag::parse(v)
                    .ok_or_else(|| ConfigError::type_error(format!("{at}.hidden"), "must be true or false"))?,
            };
            for key in map.keys().filter(|k| !matches!(k.as_str(), "model" | "hidden")) {
                let path = format!("{at}.{key}");
                w.ignored(path.clone(), &path, NOT_SUPPORTED);
            }
            Ok(Alias::new(alias, target, hidden))
        }
        _ => Err(ConfigError::type_error(at, "must be a model group name or `{model: <group>, hidden: <bool>}`")),
    }
}
