//! The load pipeline (YAML -> JSON value -> `os.environ/` -> serde shapes -> typed [`Config`]
//! -> validation) and the conversion of the settings sections.

use std::{
    collections::{BTreeMap, HashSet},
    path::Path,
};

use serde_json::Value;
use switchyard_layers::{
    ApiKey,
    cooldown::ProbeConfig,
    precall::{AffinityConfig, Budget, BudgetConfig},
    select::{RoutingGroup, RoutingGroups, RoutingStrategy, SelectConfigError, StrategyArgs},
};
use switchyard_services::provider::{SUPPORTED_PROVIDERS, supports_provider};

use super::{
    Alias, Config, ConfigError, ConfigErrorKind, RedisSettings, RouterSettings,
    convert::{NOT_SUPPORTED, Warnings, deployment, opt, to_f64, to_period, to_secs, to_timeout, to_u32, to_u64},
    env::Env,
    http_server, include,
    raw::{Flag, Num, RawConfig, RawGeneralSettings, RawLitellmSettings, RawRouterSettings, RawStrategyArgs},
    redis::{check_host, host_url},
    secret,
    validate::{self, Node, Sources, Table},
};

/// Reads, converts and validates a document; returns the config and its warnings. `base` is the
/// directory of the config file, which `include` paths are relative to.
pub(crate) fn load(
    yaml: &str,
    base: Option<&Path>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(Config, Vec<String>), ConfigError> {
    // YAML 1.2 booleans: `no`, `on`, `y` stay strings (a group may be named so); boolean keys
    // accept those words themselves (`raw::Flag`).
    let parse = |yaml: &str| -> Result<Value, String> {
        let options = serde_saphyr::options! { strict_booleans: true };
        serde_saphyr::from_str_with_options(yaml, options).map_err(|e| {
            let message = e.without_snippet().to_string();
            message.strip_prefix("error: ").unwrap_or(&message).to_owned()
        })
    };
    let mut doc: Value = parse(yaml).map_err(|message| ConfigError::new(ConfigErrorKind::Yaml, "", message))?;
    let origins = match &mut doc {
        Value::Null => {
            doc = Value::Object(serde_json::Map::new());
            include::Origins::default()
        }
        Value::Object(map) => include::process(map, base, &parse)?,
        _ => return Err(ConfigError::type_error("", "a config must be a mapping of sections (`model_list`, ...)")),
    };
    read(doc, lookup).map_err(|e| origins.annotate(e))
}

/// The merged document to a validated config.
fn read(mut doc: Value, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(Config, Vec<String>), ConfigError> {
    let env = Env::new(&doc, lookup)?;
    env.resolve(&mut doc)?;
    secret::read_credentials(&mut doc)?;
    let raw: RawConfig = serde_path_to_error::deserialize(doc).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        ConfigError::type_error(path, env.mask(&e.inner().to_string()))
    })?;

    let mut w = Warnings::default();
    let mut config = Config::default();
    let mut sources = Sources::from_yaml();
    let mut extra = raw.extra;
    if extra.remove("include").is_some() {
        // Still here: the config was read from a string, with no directory to read files from.
        w.ignored(
            "include".to_owned(),
            "include",
            "included files are read only when the config is loaded from its file (`Config::from_path`)",
        );
    }
    w.ignored_keys("", &extra, NOT_SUPPORTED);
    for (i, model) in raw.model_list.unwrap_or_default().into_iter().enumerate() {
        config.deployments.push(deployment(i, model, &mut w)?);
    }
    let router = raw.router_settings.unwrap_or_default();
    let skip_unsupported = router.skip_unsupported_providers.is_some_and(|f| f.0);
    unsupported_providers(&mut config, skip_unsupported, &mut w)?;
    let litellm = raw.litellm_settings.unwrap_or_default();
    shared(&mut config, &mut sources, &router, &litellm, &mut w)?;
    router_only(&mut config, router, &mut w)?;
    w.ignored_keys("litellm_settings", &litellm.extra, NOT_SUPPORTED);
    general(&mut config, raw.general_settings.unwrap_or_default(), &mut w)?;
    validate::validate(&config, &sources)?;
    Ok((config, w.list))
}

/// One key set in `router_settings` or `litellm_settings`: the winner and its path.
fn pick<T>(key: &str, ls_key: &str, rs: Option<T>, ls: Option<T>, w: &mut Warnings) -> Option<(T, String)> {
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

fn num(key: &str, ls_key: &str, rs: Option<Num>, ls: Option<Num>, w: &mut Warnings) -> (Option<Num>, String) {
    match pick(key, ls_key, rs, ls, w) {
        Some((n, path)) => (Some(n), path),
        None => (None, String::new()),
    }
}

/// The keys both sections carry.
fn shared(
    c: &mut Config,
    sources: &mut Sources,
    rs: &RawRouterSettings,
    ls: &RawLitellmSettings,
    w: &mut Warnings,
) -> Result<(), ConfigError> {
    let s = &mut c.settings;
    let (n, path) = num("num_retries", "num_retries", rs.num_retries, ls.num_retries, w);
    if let Some(v) = opt(n, || path, to_u32)? {
        s.num_retries = v;
    }
    let (n, path) = num("timeout", "request_timeout", rs.timeout, ls.request_timeout, w);
    s.timeout = opt(n, || path, to_timeout)?;
    let (n, path) = num("allowed_fails", "allowed_fails", rs.allowed_fails, ls.allowed_fails, w);
    s.allowed_fails = opt(n, || path, to_u32)?;
    let (n, path) = num("cooldown_time", "cooldown_time", rs.cooldown_time, ls.cooldown_time, w);
    if let Some(v) = opt(n, || path, to_secs)? {
        s.cooldown_time = v;
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
    Ok(())
}

/// A fallback list: `[{group: [fallback, ...]}, ...]`, each entry exactly one key, each value
/// a group or a list of groups. The `*` key of `fallbacks` is the default list.
fn fallback_table(
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

fn table_mut(c: &mut Config, table: Table) -> &mut BTreeMap<String, Vec<String>> {
    match table {
        Table::General => &mut c.fallbacks.general,
        Table::ContextWindow => &mut c.fallbacks.context_window,
        Table::ContentPolicy => &mut c.fallbacks.content_policy,
    }
}

/// A group or a list of groups; `true` when it was a list.
fn group_list(value: &Value, path: &str) -> Result<(Vec<String>, bool), ConfigError> {
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
fn parse_alias(alias: &str, value: &Value, at: &str, w: &mut Warnings) -> Result<Alias, ConfigError> {
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

/// The keys only `router_settings` carries.
fn router_only(c: &mut Config, rs: RawRouterSettings, w: &mut Warnings) -> Result<(), ConfigError> {
    let at = |key: &str| format!("router_settings.{key}");
    if let Some(name) = &rs.routing_strategy {
        c.routing_strategy =
            name.parse().map_err(|e: SelectConfigError| ConfigError::invalid(at("routing_strategy"), e.to_string()))?;
    }
    if let Some(args) = rs.routing_strategy_args {
        strategy_args(c, args, w)?;
    }
    if let Some(groups) = rs.routing_groups {
        routing_groups(c, groups, w)?;
    }
    let s = &mut c.settings;
    s.stream_timeout = opt(rs.stream_timeout, || at("stream_timeout"), to_timeout)?;
    if let Some(v) = opt(rs.retry_after, || at("retry_after"), to_secs)? {
        s.retry_after = v;
    }
    s.allowed_fails_policy =
        policy(rs.allowed_fails_policy, &at("allowed_fails_policy"), &RouterSettings::ALLOWED_FAILS_POLICY_FIELDS)?;
    s.retry_policy = policy(rs.retry_policy, &at("retry_policy"), &RouterSettings::RETRY_POLICY_FIELDS)?;
    s.disable_cooldowns = rs.disable_cooldowns.is_some_and(|f| f.0);
    s.enable_pre_call_checks = rs.enable_pre_call_checks.is_some_and(|f| f.0);
    s.enable_tag_filtering = rs.enable_tag_filtering.is_some_and(|f| f.0);
    s.tag_filtering_match_any = rs.tag_filtering_match_any.is_none_or(|f| f.0);
    s.default_max_parallel_requests =
        opt(rs.default_max_parallel_requests, || at("default_max_parallel_requests"), to_u32)?;
    if s.default_max_parallel_requests == Some(0) {
        return Err(ConfigError::invalid(
            at("default_max_parallel_requests"),
            "must be >= 1, got 0 (a limit of 0 would admit nothing)",
        ));
    }
    s.wait_for_parallel_slot = opt(rs.wait_for_parallel_slot, || at("wait_for_parallel_slot"), to_secs)?;
    let keys = RedisKeys {
        url: rs.redis_url,
        host: rs.redis_host,
        port: rs.redis_port,
        password: rs.redis_password,
        namespace: rs.redis_namespace,
        startup_nodes: rs.redis_startup_nodes,
        ssl: rs.redis_ssl,
        budgets_fail_closed: rs.redis_budgets_fail_closed,
        response_timeout: rs.redis_response_timeout,
        ca_certs: rs.redis_ssl_ca_certs,
    };
    s.redis = redis(keys, w)?;
    c.seed = opt(rs.seed, || at("seed"), to_u64)?;
    c.settings.cooldown_probe = cooldown_probe(rs.cooldown_probe, &at("cooldown_probe"))?;
    for (group, raw) in rs.model_group_retry_policy.unwrap_or_default() {
        let path = format!("{}.{group}", at("model_group_retry_policy"));
        if let Some(p) = policy(raw, &path, &RouterSettings::RETRY_POLICY_FIELDS)? {
            c.settings.group_retry_policies.insert(group, p);
        }
    }
    if let Some(b) = rs.retry_budget {
        let ratio = opt(b.ratio, || at("retry_budget.ratio"), to_f64)?.unwrap_or(0.2);
        let min_per_sec = opt(b.min_per_sec, || at("retry_budget.min_per_sec"), to_u32)?.unwrap_or(10);
        if !(0.0..=1000.0).contains(&ratio) {
            return Err(ConfigError::invalid(
                at("retry_budget.ratio"),
                format!("must be between 0 and 1000, got {ratio}"),
            ));
        }
        c.settings.retry_budget = Some((ratio, min_per_sec));
    }
    c.settings.wait_for_cooldown = opt(rs.wait_for_cooldown, || at("wait_for_cooldown"), to_secs)?;
    c.settings.deadline = opt(rs.deadline, || at("deadline"), to_timeout)?;
    c.settings.budgets = provider_budgets(rs.provider_budget_config, &at("provider_budget_config"), w)?;
    c.settings.affinity =
        affinity(rs.deployment_affinity, rs.optional_pre_call_checks, rs.deployment_affinity_ttl_seconds, w)?;
    if let Some(ttl) = opt(rs.prompt_cache_affinity_ttl, || at("prompt_cache_affinity_ttl"), to_secs)? {
        c.settings.prompt_cache_affinity = (!ttl.is_zero()).then_some(ttl);
    }
    if let Some(ttl) = opt(rs.conversation_ttl, || at("conversation_ttl"), to_timeout)? {
        c.settings.conversation_ttl = ttl;
    }
    if let Some(on) = rs.conversation_fallback {
        c.settings.conversation_fallback = on;
    }
    w.ignored_keys("router_settings", &rs.extra, NOT_SUPPORTED);
    Ok(())
}

/// The `redis_*` keys of `router_settings`, as written.
struct RedisKeys {
    url: Option<String>,
    host: Option<String>,
    port: Option<Num>,
    password: Option<String>,
    namespace: Option<String>,
    startup_nodes: Option<Value>,
    ssl: Option<Flag>,
    budgets_fail_closed: Option<Flag>,
    response_timeout: Option<Num>,
    ca_certs: Option<String>,
}

/// The `redis_*` keys; `None` when none is set. Checked here (precedence, URLs, namespace), so a
/// config that loads builds its backend.
fn redis(rs: RedisKeys, w: &mut Warnings) -> Result<Option<RedisSettings>, ConfigError> {
    let at = |key: &str| format!("router_settings.{key}");
    let port = opt(rs.port, || at("redis_port"), port)?;
    let ssl = rs.ssl.map(|f| f.0);
    let nodes = startup_nodes(rs.startup_nodes, ssl.unwrap_or(false), w)?;
    let budgets_fail_closed = rs.budgets_fail_closed.map(|f| f.0);
    let response_timeout = opt(rs.response_timeout, || at("redis_response_timeout"), to_timeout)?;
    let any_set = rs.url.is_some()
        || rs.host.is_some()
        || port.is_some()
        || rs.password.is_some()
        || rs.namespace.is_some()
        || nodes.is_some()
        || ssl.is_some()
        || budgets_fail_closed.is_some()
        || response_timeout.is_some()
        || rs.ca_certs.is_some();
    if !any_set {
        return Ok(None);
    }
    let redis = RedisSettings {
        url: rs.url,
        host: rs.host,
        port,
        password: rs.password.map(ApiKey::new),
        startup_nodes: nodes.unwrap_or_default(),
        ssl: ssl.unwrap_or(false),
        namespace: rs.namespace,
        budgets_fail_closed: budgets_fail_closed.unwrap_or(false),
        response_timeout,
        ca_certs: rs.ca_certs.map(std::path::PathBuf::from),
    };
    redis.check()?;
    let winner = if !redis.startup_nodes.is_empty() {
        Some("redis_startup_nodes")
    } else if redis.url.is_some() {
        Some("redis_url")
    } else {
        None
    };
    if let Some(winner) = winner {
        for (key, set) in [("redis_host", redis.host.is_some()), ("redis_port", redis.port.is_some())] {
            if set {
                let path = at(key);
                w.once(path.clone(), format!("`{path}` is ignored: `{}` is set and wins", at(winner)));
            }
        }
    }
    Ok(Some(redis))
}

/// A TCP port: 1 to 65535.
fn port(n: Num, path: &str) -> Result<u16, ConfigError> {
    let port = to_u64(n, path)?;
    match u16::try_from(port) {
        Ok(0) => Err(ConfigError::invalid(path, "must be between 1 and 65535, got 0")),
        Ok(port) => Ok(port),
        Err(_) => Err(ConfigError::invalid(path, format!("must be at most 65535, got {n}"))),
    }
}

/// `redis_startup_nodes` (LiteLLM's `startup_nodes`): a list of `{host, port}` mappings (port
/// 6379 when absent) or of `redis://` URLs, as URLs. `None` when not set.
fn startup_nodes(value: Option<Value>, ssl: bool, w: &mut Warnings) -> Result<Option<Vec<String>>, ConfigError> {
    let at = "router_settings.redis_startup_nodes";
    let items = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(ConfigError::type_error(
                at,
                "must be a list of `{host, port}` mappings or of redis:// URLs (the seed nodes of a Redis Cluster)",
            ));
        }
    };
    if items.is_empty() {
        return Err(ConfigError::invalid(at, "must list at least one node (or be left out)"));
    }
    let mut nodes = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let path = format!("{at}[{i}]");
        match item {
            // Checked with the other URLs by `RedisSettings::check`.
            Value::String(url) => nodes.push(url),
            Value::Object(map) => {
                let mut host = None;
                let mut node_port = RedisSettings::DEFAULT_PORT;
                for (key, v) in map {
                    let p = format!("{path}.{key}");
                    match (key.as_str(), v) {
                        (_, Value::Null) => {}
                        ("host", Value::String(h)) => {
                            check_host(&h, &p)?;
                            host = Some(h);
                        }
                        ("host", _) => return Err(ConfigError::type_error(&p, "must be a host name or address")),
                        ("port", v) => {
                            let n: Num = serde_json::from_value(v)
                                .map_err(|_| ConfigError::type_error(&p, "must be a port number"))?;
                            node_port = port(n, &p)?;
                        }
                        _ => w.ignored(format!("{at}.{key}"), &p, NOT_SUPPORTED),
                    }
                }
                let host = host.ok_or_else(|| ConfigError::invalid(format!("{path}.host"), "is required"))?;
                nodes.push(host_url(&host, node_port, ssl));
            }
            _ => return Err(ConfigError::type_error(path, "must be a `{host, port}` mapping or a redis:// URL")),
        }
    }
    Ok(Some(nodes))
}

fn strategy_args(c: &mut Config, args: RawStrategyArgs, w: &mut Warnings) -> Result<(), ConfigError> {
    let at = |key: &str| format!("router_settings.routing_strategy_args.{key}");
    if let Some(buffer) = opt(args.lowest_latency_buffer, || at("lowest_latency_buffer"), to_f64)? {
        c.strategy_args =
            StrategyArgs::new(buffer).map_err(|e| ConfigError::invalid(at("lowest_latency_buffer"), e.to_string()))?;
    }
    if let Some(ttl) = opt(args.ttl, || at("ttl"), to_timeout)? {
        c.latency.sample_ttl = ttl;
    }
    if let Some(size) = opt(args.max_latency_list_size, || at("max_latency_list_size"), to_u32)? {
        if size == 0 {
            return Err(ConfigError::invalid(at("max_latency_list_size"), "must be >= 1, got 0"));
        }
        c.latency.max_samples = usize::try_from(size).unwrap_or(usize::MAX);
    }
    w.ignored_keys("router_settings.routing_strategy_args", &args.extra, NOT_SUPPORTED);
    Ok(())
}

fn routing_groups(c: &mut Config, raw: Vec<super::raw::RawRoutingGroup>, w: &mut Warnings) -> Result<(), ConfigError> {
    let at = |i: usize, key: &str| format!("router_settings.routing_groups[{i}].{key}");
    let known: HashSet<&str> = c.deployments.iter().map(|d| &*d.group).collect();
    let mut groups = Vec::with_capacity(raw.len());
    for (i, g) in raw.into_iter().enumerate() {
        let strategy: RoutingStrategy = g
            .routing_strategy
            .parse()
            .map_err(|e: SelectConfigError| ConfigError::invalid(at(i, "routing_strategy"), e.to_string()))?;
        for m in g.models.iter().filter(|m| !known.contains(m.as_str())) {
            let path = at(i, "models");
            // LiteLLM warns too: the group may be added at runtime.
            w.once(format!("{path}:{m}"), format!("`{path}` names `{m}`, which is not a model group in `model_list`"));
        }
        w.ignored_keys(&format!("router_settings.routing_groups[{i}]"), &g.extra, NOT_SUPPORTED);
        groups.push(RoutingGroup::new(g.group_name, g.models, strategy));
    }
    // The n-th group named `name` (the error is raised at the first repeat of a name).
    let index_of = |groups: &[RoutingGroup], name: &str, n: usize| {
        groups.iter().enumerate().filter(|(_, g)| g.name == name).nth(n).map_or(0, |(i, _)| i)
    };
    c.routing_groups = RoutingGroups::new(groups.clone()).map_err(|e| {
        let path = match &e {
            SelectConfigError::EmptyGroupName { index } | SelectConfigError::ReservedGroupName { index } => {
                at(*index, "group_name")
            }
            SelectConfigError::DuplicateGroupName { name } => at(index_of(&groups, name, 1), "group_name"),
            SelectConfigError::ModelInTwoGroups { second, .. } => at(index_of(&groups, second, 0), "models"),
            _ => "router_settings.routing_groups".to_owned(),
        };
        ConfigError::invalid(path, e.to_string())
    })?;
    Ok(())
}

/// `retry_policy` / `allowed_fails_policy`: LiteLLM field names to counts; null fields unset.
fn policy(
    raw: Option<BTreeMap<String, Option<Num>>>,
    path: &str,
    fields: &[&str],
) -> Result<Option<BTreeMap<String, u32>>, ConfigError> {
    let Some(raw) = raw else { return Ok(None) };
    let mut out = BTreeMap::new();
    for (key, value) in raw {
        let at = format!("{path}.{key}");
        validate::policy_field(&key, &at, fields)?;
        if let Some(v) = opt(value, || at, to_u32)? {
            out.insert(key, v);
        }
    }
    Ok(Some(out))
}

fn general(c: &mut Config, gs: RawGeneralSettings, w: &mut Warnings) -> Result<(), ConfigError> {
    if let Some(key) = gs.master_key {
        let at = "general_settings.master_key";
        // Clients present the key in a header, trimmed: a key that a header cannot carry as it is
        // (an environment variable ending in a newline) would lock every client out.
        if key.trim().is_empty() {
            return Err(ConfigError::invalid(at, "must not be empty"));
        }
        if key.trim() != key {
            return Err(ConfigError::invalid(
                at,
                "has leading or trailing whitespace (an environment variable ending in a newline?), \
                 which no client can present; remove it",
            ));
        }
        if key.chars().any(char::is_control) {
            return Err(ConfigError::invalid(
                at,
                "contains a control character, which no client can send in a header; remove it",
            ));
        }
        c.master_key = Some(ApiKey::new(key));
    }
    c.edge = http_server::edge(gs.edge)?;
    c.count_tokens_upstream = match gs.count_tokens.as_deref() {
        None | Some("estimate") => false,
        Some("upstream") => true,
        Some(other) => {
            return Err(ConfigError::invalid(
                "general_settings.count_tokens",
                format!("must be `estimate` or `upstream`, got `{}`", other.chars().take(40).collect::<String>()),
            ));
        }
    };
    w.ignored_keys("general_settings", &gs.extra, NOT_SUPPORTED);
    Ok(())
}

/// `cooldown_probe`: `true` / `false`, or `{factor, max_cooldown, hold}` (seconds).
fn cooldown_probe(value: Option<Value>, at: &str) -> Result<Option<ProbeConfig>, ConfigError> {
    let map = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(map)) => map,
        Some(v) => {
            return match Flag::parse(&v) {
                Some(true) => Ok(Some(ProbeConfig::default())),
                Some(false) => Ok(None),
                None => Err(ConfigError::type_error(at, "must be true, false or `{factor, max_cooldown, hold}`")),
            };
        }
    };
    let mut probe = ProbeConfig::default();
    for (key, v) in map {
        let path = format!("{at}.{key}");
        let num: Num = serde_json::from_value(v).map_err(|_| ConfigError::type_error(&path, "must be a number"))?;
        match key.as_str() {
            "factor" => {
                let f = to_f64(num, &path)?;
                if f < 1.0 {
                    return Err(ConfigError::invalid(&path, format!("must be >= 1, got {f}")));
                }
                probe.factor = f;
            }
            "max_cooldown" => probe.max_cooldown = to_timeout(num, &path)?,
            "hold" => probe.hold = to_timeout(num, &path)?,
            _ => return Err(ConfigError::invalid(&path, "unknown key; valid: factor, max_cooldown, hold")),
        }
    }
    Ok(Some(probe))
}

/// `provider_budget_config: {provider: {budget_limit, time_period}}`; LiteLLM also accepts
/// `max_budget` / `budget_duration` inside. An entry without a limit sets no budget (LiteLLM drops
/// the provider's deployments instead, census §2.6 #46).
fn provider_budgets(
    raw: Option<BTreeMap<String, Value>>,
    at: &str,
    w: &mut Warnings,
) -> Result<BudgetConfig, ConfigError> {
    let mut budgets = BudgetConfig::new();
    for (provider, entry) in raw.unwrap_or_default() {
        let path = format!("{at}.{provider}");
        let map = match entry {
            Value::Null => serde_json::Map::new(),
            Value::Object(map) => map,
            _ => return Err(ConfigError::type_error(&path, "must be a mapping `{budget_limit, time_period}`")),
        };
        let mut limit = None;
        let mut period = None;
        for (key, v) in map {
            let p = format!("{path}.{key}");
            if v.is_null() {
                continue;
            }
            match key.as_str() {
                "budget_limit" | "max_budget" => {
                    if limit.is_some() {
                        return Err(ConfigError::invalid(&p, "set either `budget_limit` or `max_budget`"));
                    }
                    let n: Num =
                        serde_json::from_value(v).map_err(|_| ConfigError::type_error(&p, "must be a number"))?;
                    limit = Some(to_f64(n, &p)?);
                }
                "time_period" | "budget_duration" => {
                    if period.is_some() {
                        return Err(ConfigError::invalid(&p, "set either `time_period` or `budget_duration`"));
                    }
                    period = Some(to_period(&v, &p)?);
                }
                _ => w.ignored(p.clone(), &p, NOT_SUPPORTED),
            }
        }
        match (limit, period) {
            (Some(limit), Some(period)) => budgets = budgets.provider(provider, Budget::new(limit, period)),
            (None, _) => {
                w.once(path.clone(), format!("`{path}` sets no `budget_limit`: no budget applies to `{provider}`"))
            }
            (Some(_), None) => {
                return Err(ConfigError::invalid(
                    format!("{path}.time_period"),
                    "is required with `budget_limit` (e.g. `1d`, `30m`)",
                ));
            }
        }
    }
    Ok(budgets)
}

/// Ours: `deployment_affinity: true` or `{ttl, session, api_key}`; else LiteLLM's
/// `optional_pre_call_checks` entries `session_affinity` / `deployment_affinity` (caller key),
/// with `deployment_affinity_ttl_seconds`. Ours wins when both are set.
fn affinity(
    ours: Option<Value>,
    checks: Option<Vec<String>>,
    ttl: Option<Num>,
    w: &mut Warnings,
) -> Result<Option<AffinityConfig>, ConfigError> {
    let at = "router_settings.deployment_affinity";
    let ttl_path = "router_settings.deployment_affinity_ttl_seconds";
    let checks_path = "router_settings.optional_pre_call_checks";
    let (mut session, mut api_key) = (false, false);
    for check in checks.unwrap_or_default() {
        match check.as_str() {
            "session_affinity" => session = true,
            "deployment_affinity" => api_key = true,
            // Budgets apply whenever they are configured.
            "router_budget_limiting" => {}
            other => {
                let p = format!("{checks_path}.{other}");
                w.ignored(p.clone(), &p, NOT_SUPPORTED);
            }
        }
    }
    let ttl = opt(ttl, || ttl_path.to_owned(), to_timeout)?;
    let litellm = (session || api_key).then(|| {
        AffinityConfig::new().by_session(session).by_api_key(api_key).ttl(ttl.unwrap_or(AffinityConfig::DEFAULT_TTL))
    });
    let map = match ours {
        None | Some(Value::Null) => {
            if litellm.is_none() && ttl.is_some() {
                w.once(ttl_path.to_owned(), format!("`{ttl_path}` is ignored: no affinity is enabled"));
            }
            return Ok(litellm);
        }
        Some(Value::Object(map)) => Some(map),
        Some(v) => match Flag::parse(&v) {
            Some(true) => None,
            Some(false) => return Ok(None),
            None => return Err(ConfigError::type_error(at, "must be true, false or `{ttl, session, api_key}`")),
        },
    };
    if litellm.is_some() || ttl.is_some() {
        w.once(checks_path.to_owned(), format!("LiteLLM's affinity settings are ignored: `{at}` is set and wins"));
    }
    let mut config = AffinityConfig::new();
    for (key, v) in map.unwrap_or_default() {
        let path = format!("{at}.{key}");
        match key.as_str() {
            "ttl" => {
                let n: Num =
                    serde_json::from_value(v).map_err(|_| ConfigError::type_error(&path, "must be a number"))?;
                config = config.ttl(to_timeout(n, &path)?);
            }
            "session" | "api_key" => {
                let on = Flag::parse(&v).ok_or_else(|| ConfigError::type_error(&path, "must be true or false"))?;
                config = if key == "session" { config.by_session(on) } else { config.by_api_key(on) };
            }
            _ => return Err(ConfigError::invalid(&path, "unknown key; valid: ttl, session, api_key")),
        }
    }
    Ok((config.by_session || config.by_api_key).then_some(config))
}

/// Deployments of providers Switchyard does not serve natively (`sagemaker/`, `watsonx/`, ...) are
/// refused at load, naming the provider and the deployment, or skipped with one warning each when
/// `router_settings.skip_unsupported_providers` is true: never a failure at request time.
fn unsupported_providers(c: &mut Config, skip: bool, w: &mut Warnings) -> Result<(), ConfigError> {
    let mut kept = Vec::with_capacity(c.deployments.len());
    for (i, d) in std::mem::take(&mut c.deployments).into_iter().enumerate() {
        if supports_provider(&d.model) {
            kept.push(d);
            continue;
        }
        let path = format!("model_list[{i}].litellm_params.model");
        let what = format!(
            "provider `{}` of deployment `{}` (group `{}`) is not served natively",
            d.provider(),
            d.id,
            d.group
        );
        if !skip {
            return Err(ConfigError::invalid(
                path,
                format!(
                    "{what}; supported: {}; set `router_settings.skip_unsupported_providers: true` to skip such deployments",
                    SUPPORTED_PROVIDERS.join(", ")
                ),
            ));
        }
        w.once(path.clone(), format!("`{path}`: {what}; the deployment is skipped"));
    }
    c.deployments = kept;
    Ok(())
}
