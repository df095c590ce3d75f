//! The keys only `router_settings` carries: strategy and routing groups, policies, cooldown
//! probing, budgets, affinity and the rest of Switchyard's own router keys. Each layer's keys are
//! read into that layer's config ([`RetryConfig`](switchyard_layers::retry::RetryConfig),
//! [`CooldownConfig`](switchyard_layers::cooldown::CooldownConfig),
//! [`PreCallConfig`](switchyard_layers::precall::PreCallConfig)) here, once, so every error names
//! its YAML path and the router builds the stack from them as they are.

use std::{
    collections::{BTreeMap, HashSet},
    sync::Arc,
};

use serde_json::Value;
use switchyard_layers::{
    cooldown::{ALLOWED_FAILS_POLICY_FIELDS, AllowedFailsPolicy, ProbeConfig},
    precall::{AffinityConfig, Budget, BudgetConfig},
    retry::{DEFAULT_RETRIES_FIELD, RETRY_POLICY_FIELDS, RetryBudget, RetryPolicy},
    select::{RoutingGroup, RoutingGroups, RoutingStrategy, SelectConfigError, StrategyArgs},
};

use super::redis_keys::{RedisKeys, redis};
use crate::config::{
    Config, ConfigError,
    convert::{NOT_SUPPORTED, Warnings, opt, to_f64, to_period, to_secs, to_timeout, to_u32, to_u64},
    raw::{Flag, Num, RawPolicy, RawRouterSettings, RawStrategyArgs},
    validate::{self},
};

/// The keys only `router_settings` carries.
pub(super) fn router_only(c: &mut Config, mut rs: RawRouterSettings, w: &mut Warnings) -> Result<(), ConfigError> {
    let at = |key: &str| format!("router_settings.{key}");
    if let Some(name) = &rs.routing_strategy {
        c.routing_strategy =
            name.parse().map_err(|e: SelectConfigError| ConfigError::invalid(at("routing_strategy"), e.to_string()))?;
    }
    if let Some(args) = rs.routing_strategy_args.take() {
        strategy_args(c, args, w)?;
    }
    if let Some(groups) = rs.routing_groups.take() {
        routing_groups(c, groups, w)?;
    }
    c.stream_timeout = opt(rs.stream_timeout, || at("stream_timeout"), to_timeout)?;
    retry(c, &mut rs)?;
    cooldown(c, &mut rs)?;
    precall(c, &mut rs, w)?;
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
    c.redis = redis(keys, w)?;
    c.seed = opt(rs.seed, || at("seed"), to_u64)?;
    c.deadline = opt(rs.deadline, || at("deadline"), to_timeout)?;
    c.continuation = super::continuation_keys::stream_continuation(rs.stream_continuation.take())?;
    w.ignored_keys("router_settings", &rs.extra, NOT_SUPPORTED);
    Ok(())
}

/// The retry layer's keys (`num_retries` is shared with `litellm_settings`, read before).
fn retry(c: &mut Config, rs: &mut RawRouterSettings) -> Result<(), ConfigError> {
    let at = |key: &str| format!("router_settings.{key}");
    if let Some(v) = opt(rs.retry_after, || at("retry_after"), to_secs)? {
        c.retry.retry_after = v;
    }
    c.retry.retry_policy = retry_policy(rs.retry_policy.take(), &at("retry_policy"))?;
    for (group, raw) in rs.model_group_retry_policy.take().unwrap_or_default() {
        let path = format!("{}.{group}", at("model_group_retry_policy"));
        if let Some(p) = retry_policy(raw, &path)? {
            c.retry.group_retry_policies.insert(group, p);
        }
    }
    if let Some(b) = rs.retry_budget.take() {
        let ratio = opt(b.ratio, || at("retry_budget.ratio"), to_f64)?.unwrap_or(0.2);
        let min_per_sec = opt(b.min_per_sec, || at("retry_budget.min_per_sec"), to_u32)?.unwrap_or(10);
        if !(0.0..=RetryBudget::MAX_RATIO).contains(&ratio) {
            return Err(ConfigError::invalid(
                at("retry_budget.ratio"),
                format!("must be between 0 and 1000, got {ratio}"),
            ));
        }
        let budget = RetryBudget::new(ratio, min_per_sec)
            .map_err(|e| ConfigError::invalid(at("retry_budget"), e.to_string()))?;
        c.retry.budget = Some(Arc::new(budget));
    }
    Ok(())
}

/// The cooldown layer's keys (`allowed_fails` and `cooldown_time` are shared with
/// `litellm_settings`, read before).
fn cooldown(c: &mut Config, rs: &mut RawRouterSettings) -> Result<(), ConfigError> {
    let at = |key: &str| format!("router_settings.{key}");
    let path = at("allowed_fails_policy");
    c.cooldown.allowed_fails_policy = policy(rs.allowed_fails_policy.take(), &path, &ALLOWED_FAILS_POLICY_FIELDS)?
        .map(|map| AllowedFailsPolicy::from_litellm(&map).map_err(|e| ConfigError::invalid(&path, e.to_string())))
        .transpose()?;
    c.cooldown.disabled = rs.disable_cooldowns.is_some_and(|f| f.0);
    c.cooldown.probe = cooldown_probe(rs.cooldown_probe.take(), &at("cooldown_probe"))?;
    c.cooldown.wait_for_cooldown = opt(rs.wait_for_cooldown, || at("wait_for_cooldown"), to_secs)?;
    Ok(())
}

/// The pre-call layer's keys: LiteLLM's switches (`enable_pre_call_checks`: context window,
/// region, params; `enable_tag_filtering`), parallel limits, budgets and affinity.
fn precall(c: &mut Config, rs: &mut RawRouterSettings, w: &mut Warnings) -> Result<(), ConfigError> {
    let at = |key: &str| format!("router_settings.{key}");
    let default_max_parallel_requests =
        opt(rs.default_max_parallel_requests, || at("default_max_parallel_requests"), to_u32)?;
    if default_max_parallel_requests == Some(0) {
        return Err(ConfigError::invalid(
            at("default_max_parallel_requests"),
            "must be >= 1, got 0 (a limit of 0 would admit nothing)",
        ));
    }
    // LiteLLM's `enforce_model_rate_limits` pre-call check is our `enforce_rate_limits`.
    let enforce_model_rate_limits = rs
        .optional_pre_call_checks
        .as_ref()
        .is_some_and(|checks| checks.iter().any(|c| c == "enforce_model_rate_limits"));
    let mut p = std::mem::take(&mut c.precall)
        .pre_call_checks(rs.enable_pre_call_checks.is_some_and(|f| f.0))
        .enforce_rate_limits(rs.enforce_rate_limits.is_some_and(|f| f.0) || enforce_model_rate_limits)
        .tag_filtering(rs.enable_tag_filtering.is_some_and(|f| f.0))
        .tag_match_any(rs.tag_filtering_match_any.is_none_or(|f| f.0))
        .default_max_parallel_requests(default_max_parallel_requests)
        .wait_for_parallel_slot(opt(rs.wait_for_parallel_slot, || at("wait_for_parallel_slot"), to_secs)?)
        .budgets(provider_budgets(rs.provider_budget_config.take(), &at("provider_budget_config"), w)?)
        .affinity(affinity(
            rs.deployment_affinity.take(),
            rs.optional_pre_call_checks.take(),
            rs.deployment_affinity_ttl_seconds,
            w,
        )?);
    if let Some(ttl) = opt(rs.prompt_cache_affinity_ttl, || at("prompt_cache_affinity_ttl"), to_secs)? {
        p = p.prompt_cache_affinity((!ttl.is_zero()).then_some(ttl));
    }
    if let Some(ttl) = opt(rs.conversation_ttl, || at("conversation_ttl"), to_timeout)? {
        p = p.conversation_ttl(ttl);
    }
    if let Some(on) = rs.conversation_fallback {
        p = p.conversation_fallback(on);
    }
    c.precall = p;
    Ok(())
}

/// A `retry_policy` (the router's or a group's) as the retry layer's table.
fn retry_policy(raw: Option<RawPolicy>, path: &str) -> Result<Option<RetryPolicy>, ConfigError> {
    let fields: Vec<&str> = RETRY_POLICY_FIELDS.iter().copied().chain([DEFAULT_RETRIES_FIELD]).collect();
    policy(raw, path, &fields)?
        .map(|map| RetryPolicy::from_litellm(&map).map_err(|e| ConfigError::invalid(path, e.to_string())))
        .transpose()
}

pub(super) fn strategy_args(c: &mut Config, args: RawStrategyArgs, w: &mut Warnings) -> Result<(), ConfigError> {
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

pub(super) fn routing_groups(
    c: &mut Config,
    raw: Vec<crate::config::raw::RawRoutingGroup>,
    w: &mut Warnings,
) -> Result<(), ConfigError> {
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
pub(super) fn policy(
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

/// `cooldown_probe`: `true` / `false`, or `{factor, max_cooldown, hold}` (seconds).
pub(super) fn cooldown_probe(value: Option<Value>, at: &str) -> Result<Option<ProbeConfig>, ConfigError> {
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
pub(super) fn provider_budgets(
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
pub(super) fn affinity(
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
            // Budgets apply whenever they are configured; rate limits are read by `precall`.
            "router_budget_limiting" | "enforce_model_rate_limits" => {}
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
