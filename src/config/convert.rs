//! From the serde shapes to typed values: numbers with their range checks, the ignored-key
//! warnings, and `model_list` entries to [`Deployment`]s.

use std::{collections::BTreeSet, time::Duration};

use http::{HeaderName, HeaderValue};
use switchyard_layers::{
    ApiKey, Deployment,
    deployment::{Capabilities, DeploymentError},
    preroute::quality::RoutingPreferences,
};
use switchyard_services::provider::CONNECTION_HEADERS;

use super::{
    ConfigError,
    raw::{Extra, Flag, IdValue, Num, RawModel, RawModelInfo},
};

/// The ignored keys, one warning each.
#[derive(Debug, Default)]
pub(crate) struct Warnings {
    seen: BTreeSet<String>,
    pub(crate) list: Vec<String>,
}

impl Warnings {
    /// Records one warning per `key`; `key` is the path with list indexes removed, so a key
    /// repeated in every `model_list` entry warns once.
    pub(crate) fn once(&mut self, key: String, message: String) {
        if self.seen.insert(key) {
            self.list.push(message);
        }
    }

    /// `path` is not read by Switchyard.
    pub(crate) fn ignored(&mut self, key: String, path: &str, why: &str) {
        self.once(key, format!("`{path}` is ignored: {why}"));
    }

    /// Every key of `extra`, under `section`.
    pub(crate) fn ignored_keys(&mut self, section: &str, extra: &Extra, why: &str) {
        for key in extra.keys() {
            let path = if section.is_empty() { key.clone() } else { format!("{section}.{key}") };
            self.ignored(path.clone(), &path, why);
        }
    }
}

/// Why a key is ignored, when Switchyard has no use for it.
pub(crate) const NOT_SUPPORTED: &str = "not supported by Switchyard";

// ---- numbers -------------------------------------------------------------------------------

fn whole(n: Num, path: &str, max: u64) -> Result<u64, ConfigError> {
    if n.is_negative() {
        return Err(ConfigError::invalid(path, format!("must be >= 0, got {n}")));
    }
    let too_large = || ConfigError::invalid(path, format!("must be at most {max}, got {n}"));
    match n {
        Num::Int(i) => u64::try_from(i).ok().filter(|v| *v <= max).ok_or_else(too_large),
        Num::Float(x) if x.fract() != 0.0 => {
            Err(ConfigError::invalid(path, format!("must be a whole number, got {n}")))
        }
        // `max + 1` is a power of two, exact as an f64 (for u64::MAX, `max as f64` already is).
        Num::Float(x) if x >= max as f64 + 1.0 => Err(too_large()),
        Num::Float(x) => Ok(x as u64),
    }
}

/// A count or limit that fits `u64`.
pub(crate) fn to_u64(n: Num, path: &str) -> Result<u64, ConfigError> {
    whole(n, path, u64::MAX)
}

/// A count or limit that fits `u32`.
pub(crate) fn to_u32(n: Num, path: &str) -> Result<u32, ConfigError> {
    // Cannot fail: `whole` bounds it by u32::MAX.
    whole(n, path, u32::MAX.into()).map(|v| u32::try_from(v).unwrap_or(u32::MAX))
}

/// A finite number >= 0 (weights, prices).
pub(crate) fn to_f64(n: Num, path: &str) -> Result<f64, ConfigError> {
    if n.is_negative() {
        return Err(ConfigError::invalid(path, format!("must be >= 0, got {n}")));
    }
    Ok(n.as_f64())
}

/// Seconds >= 0.
pub(crate) fn to_secs(n: Num, path: &str) -> Result<Duration, ConfigError> {
    let secs = to_f64(n, path)?;
    Duration::try_from_secs_f64(secs)
        .map_err(|_| ConfigError::invalid(path, format!("must be a number of seconds that fits, got {n}")))
}

/// Seconds > 0 (timeouts: a zero timeout would fail every attempt).
pub(crate) fn to_timeout(n: Num, path: &str) -> Result<Duration, ConfigError> {
    let d = to_secs(n, path)?;
    if d.is_zero() {
        return Err(ConfigError::invalid(path, format!("must be > 0 seconds, got {n}")));
    }
    Ok(d)
}

/// A budget period as LiteLLM writes it: `"30s"`, `"30m"`, `"1h"`, `"1d"`, `"1w"`, `"1mo"`
/// (30 days), `"hourly"` / `"daily"` / `"weekly"` / `"monthly"`, or a number of seconds; > 0.
pub(crate) fn to_period(value: &serde_json::Value, path: &str) -> Result<Duration, ConfigError> {
    let bad = |got: &str| {
        ConfigError::invalid(
            path,
            format!(
                "must be a duration such as `30s`, `30m`, `1h`, `1d`, `1w`, `1mo` or a number of seconds, got {got}"
            ),
        )
    };
    let d = match value {
        serde_json::Value::Number(n) => {
            let n = n.as_f64().ok_or_else(|| bad(&n.to_string()))?;
            if !(n.is_finite() && n >= 0.0) {
                return Err(bad(&n.to_string()));
            }
            Duration::try_from_secs_f64(n).map_err(|_| bad(&n.to_string()))?
        }
        serde_json::Value::String(s) => {
            let t = s.trim().to_ascii_lowercase();
            let t = match t.as_str() {
                "hourly" => "1h",
                "daily" => "1d",
                "weekly" => "1w",
                "monthly" => "1mo",
                other => other,
            };
            let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            let (digits, unit) = t.split_at(split);
            let n: u64 = digits.parse().map_err(|_| bad(&format!("`{s}`")))?;
            let unit_secs: u64 = match unit {
                "" | "s" => 1,
                "m" => 60,
                "h" => 3_600,
                "d" => 86_400,
                "w" => 604_800,
                "mo" => 30 * 86_400,
                _ => return Err(bad(&format!("`{s}`"))),
            };
            Duration::from_secs(n.checked_mul(unit_secs).ok_or_else(|| bad(&format!("`{s}`")))?)
        }
        other => return Err(bad(&other.to_string())),
    };
    if d.is_zero() {
        return Err(ConfigError::invalid(path, "must be longer than 0 seconds"));
    }
    Ok(d)
}

/// Applies `f` to `value` when set, naming `path` in its errors.
pub(crate) fn opt<T>(
    value: Option<Num>,
    path: impl FnOnce() -> String,
    f: impl FnOnce(Num, &str) -> Result<T, ConfigError>,
) -> Result<Option<T>, ConfigError> {
    value.map(|n| f(n, &path())).transpose()
}

// ---- model_list ----------------------------------------------------------------------------

/// `litellm_params` keys LiteLLM consumes itself that have no meaning for a provider call here;
/// they are dropped with a warning rather than sent upstream as parameters.
const DROPPED_PARAMS: [(&str, &str); 2] = [
    ("max_retries", "provider SDK retries are not used; retries are `num_retries`"),
    ("silent_model", "LiteLLM's silent experiment (a mirrored call to another group) is not implemented"),
];

/// `model_info` keys that are descriptive metadata in LiteLLM (listing, cost lookup, teams,
/// health checks); Switchyard accepts them without a warning and does not route on them.
const METADATA: [&str; 21] = [
    "base_model",
    // Read when the entry is loaded (`LITELLM_ENVIRONMENT`); see `settings::load`.
    "supported_environments",
    "mode",
    // Read by the health checks (`settings/health_keys.rs`).
    "disable_background_health_check",
    "health_check_timeout",
    "health_check_model",
    "health_check_max_tokens",
    "health_check_params",
    "health_check_supports_max_tokens",
    "description",
    "tier",
    "team_id",
    "team_public_model_name",
    "access_groups",
    "litellm_provider",
    "max_tokens",
    "db_model",
    "created_at",
    "created_by",
    "updated_at",
    "updated_by",
];

/// Converts `model_list[index]`: one deployment, or one per organization when
/// `litellm_params.organization` is a list (LiteLLM's expansion), and the quality router's
/// preferences its `model_info` declares (the same for every expanded deployment). The expanded deployments derive
/// their ids from their own parameters; with an explicit `model_info.id`, the n-th (from 1) is
/// `{id}-{n}` (LiteLLM gives them all the same id; the organization, a credential, is never put
/// in an id).
pub(crate) fn deployments(
    index: usize,
    raw: RawModel,
    w: &mut Warnings,
) -> Result<(Vec<Deployment>, Option<RoutingPreferences>), ConfigError> {
    let orgs = match raw.litellm_params.as_ref().and_then(|p| p.extra.get("organization")) {
        Some(serde_json::Value::Array(orgs)) => orgs.clone(),
        _ => {
            let (d, prefs) = deployment(index, raw, w)?;
            return Ok((vec![d], prefs));
        }
    };
    if orgs.is_empty() {
        return Err(ConfigError::invalid(
            format!("model_list[{index}].litellm_params.organization"),
            "must name at least one organization (an empty list would load no deployment)",
        ));
    }
    let id = info_id(raw.model_info.as_ref());
    let mut out = Vec::with_capacity(orgs.len());
    let mut preferences = None;
    for (n, org) in orgs.into_iter().enumerate() {
        let mut one = raw.clone();
        if let Some(p) = one.litellm_params.as_mut() {
            p.extra.insert("organization".to_owned(), org);
        }
        if let (Some(id), Some(info)) = (&id, one.model_info.as_mut()) {
            info.id = Some(IdValue::Str(format!("{id}-{}", n + 1)));
        }
        let (d, prefs) = deployment(index, one, w)?;
        preferences = preferences.or(prefs);
        out.push(d);
    }
    Ok((out, preferences))
}

/// Converts `model_list[index]` (one deployment) and its quality-router preferences.
fn deployment(
    index: usize,
    mut raw: RawModel,
    w: &mut Warnings,
) -> Result<(Deployment, Option<RoutingPreferences>), ConfigError> {
    let base = format!("model_list[{index}]");
    let at = |key: &str| format!("{base}.{key}");
    let lp = |key: &str| format!("{base}.litellm_params.{key}");

    let group = raw.model_name.ok_or_else(|| ConfigError::invalid(at("model_name"), "is required"))?;
    if group.trim().is_empty() {
        return Err(ConfigError::invalid(at("model_name"), "must not be empty"));
    }
    let p = raw
        .litellm_params
        .ok_or_else(|| ConfigError::invalid(at("litellm_params"), "is required (it names the provider `model`)"))?;
    let model = p
        .model
        .ok_or_else(|| ConfigError::invalid(lp("model"), "is required (the provider model, e.g. `openai/gpt-4o`)"))?;
    if model.trim().is_empty() {
        return Err(ConfigError::invalid(lp("model"), "must not be empty"));
    }
    for key in raw.extra.keys() {
        w.ignored(format!("model_list[].{key}"), &at(key), NOT_SUPPORTED);
    }

    // Names the deployment in the errors about its endpoint and headers.
    let who = match info_id(raw.model_info.as_ref()) {
        Some(id) => format!("deployment `{group}` (id `{id}`)"),
        None => format!("deployment `{group}`"),
    };
    headers(p.api_key.as_deref(), &p.extra, &lp, &who)?;

    let mut b = Deployment::builder(group.as_str(), model);
    if let Some(v) = p.api_key {
        b = b.api_key(ApiKey::new(v));
    }
    if let Some(v) = p.api_base {
        b = b.api_base(v);
    }
    if let Some(v) = p.api_version {
        b = b.api_version(v);
    }
    // `rpm`/`tpm` at the entry's top level are copied into `litellm_params` (LiteLLM does the
    // same); `litellm_params` wins when both are set.
    let (rpm, rpm_path) = match p.rpm {
        Some(n) => (Some(n), lp("rpm")),
        None => (raw.rpm, at("rpm")),
    };
    let (tpm, tpm_path) = match p.tpm {
        Some(n) => (Some(n), lp("tpm")),
        None => (raw.tpm, at("tpm")),
    };
    if let Some(v) = opt(rpm, || rpm_path, to_u64)? {
        b = b.rpm(v);
    }
    if let Some(v) = opt(tpm, || tpm_path, to_u64)? {
        b = b.tpm(v);
    }
    if let Some(v) = opt(p.weight, || lp("weight"), to_f64)? {
        b = b.weight(v);
    }
    // `litellm_params.order`, else `model_info.order` (LiteLLM's `_get_deployment_order`).
    let info_order = raw.model_info.as_mut().and_then(|i| i.order.take());
    let (order, order_path) = match p.order {
        Some(n) => (Some(n), lp("order")),
        None => (info_order, format!("{base}.model_info.order")),
    };
    if let Some(v) = opt(order, || order_path, to_u32)? {
        b = b.order(v);
    }
    if let Some(tags) = p.tags {
        b = b.tags(tags);
    }
    match (p.region, p.region_name) {
        (Some(a), Some(b)) if a != b => {
            return Err(ConfigError::invalid(
                lp("region_name"),
                format!("`{b}` differs from `region` (`{a}`); set one of them"),
            ));
        }
        (Some(r), _) | (None, Some(r)) => b = b.region(r),
        (None, None) => {}
    }
    if let Some(v) = opt(p.max_parallel_requests, || lp("max_parallel_requests"), to_u32)? {
        if v == 0 {
            return Err(ConfigError::invalid(
                lp("max_parallel_requests"),
                "must be >= 1, got 0 (it would admit nothing)",
            ));
        }
        b = b.max_parallel_requests(v);
    }
    let (timeout, timeout_key) = match p.timeout {
        Some(n) => (Some(n), "timeout"),
        None => (p.request_timeout, "request_timeout"),
    };
    if let Some(v) = opt(timeout, || lp(timeout_key), to_timeout)? {
        b = b.timeout(v);
    }
    if let Some(v) = opt(p.stream_timeout, || lp("stream_timeout"), to_timeout)? {
        b = b.stream_timeout(v);
    }
    if let Some(v) = opt(p.cooldown_time, || lp("cooldown_time"), to_secs)? {
        b = b.cooldown_time(v);
    }
    if let Some(v) = opt(p.num_retries, || lp("num_retries"), to_u32)? {
        b = b.num_retries(v);
    }
    let info = raw.model_info.unwrap_or_default();
    let mi = |key: &str| format!("{base}.model_info.{key}");
    // Prices in `litellm_params` win over `model_info` (where LiteLLM's cost tracking reads them).
    let (input_cost, input_path) = match p.input_cost_per_token {
        Some(n) => (Some(n), lp("input_cost_per_token")),
        None => (info.input_cost_per_token, mi("input_cost_per_token")),
    };
    let (output_cost, output_path) = match p.output_cost_per_token {
        Some(n) => (Some(n), lp("output_cost_per_token")),
        None => (info.output_cost_per_token, mi("output_cost_per_token")),
    };
    if let Some(v) = opt(input_cost, || input_path, to_f64)? {
        b = b.input_cost_per_token(v);
    }
    if let Some(v) = opt(output_cost, || output_path, to_f64)? {
        b = b.output_cost_per_token(v);
    }
    // Deployment budgets need both keys (LiteLLM ignores one without the other too).
    let max_budget = opt(p.max_budget, || lp("max_budget"), to_f64)?;
    let budget_duration =
        p.budget_duration.filter(|v| !v.is_null()).map(|v| to_period(&v, &lp("budget_duration"))).transpose()?;
    match (max_budget, budget_duration) {
        (Some(limit), Some(period)) => b = b.max_budget(limit).budget_duration(period),
        (Some(_), None) => w.once(
            "model_list[].litellm_params.max_budget".to_owned(),
            format!("`{}` is ignored: a deployment budget also needs `budget_duration`", lp("max_budget")),
        ),
        (None, Some(_)) => w.once(
            "model_list[].litellm_params.budget_duration".to_owned(),
            format!("`{}` is ignored: a deployment budget also needs `max_budget`", lp("budget_duration")),
        ),
        (None, None) => {}
    }
    for (key, value) in p.extra {
        if let Some((_, why)) = DROPPED_PARAMS.iter().find(|(k, _)| *k == key) {
            w.ignored(format!("model_list[].litellm_params.{key}"), &lp(&key), why);
        } else if !value.is_null() {
            b = b.param(key, value);
        }
    }
    let (b, preferences) = model_info(b, info, &base, w)?;
    let api_base = lp("api_base");
    let deployment = b.build().map_err(|e| match e {
        DeploymentError::InvalidApiBase { problem, .. } => {
            ConfigError::invalid(api_base, format!("{who}: the URL {problem}"))
        }
        e => ConfigError::invalid(base, e.to_string()),
    })?;
    Ok((deployment, preferences))
}

/// The explicit `model_info.id`, as the deployment will carry it.
fn info_id(info: Option<&RawModelInfo>) -> Option<String> {
    info?.id.clone().map(|id| id.into_string()).filter(|id| !id.is_empty())
}

/// What the provider sends as headers must be sendable: the key, `azure_ad_token` and
/// `organization` are valid header values, and `extra_headers` valid names (none of the
/// connection's own, [`CONNECTION_HEADERS`]) with valid values. Checked here so that such a
/// deployment is refused at load instead of failing every attempt. The types were checked
/// already (`secret`): these are strings. No message shows a value.
fn headers(api_key: Option<&str>, params: &Extra, lp: &dyn Fn(&str) -> String, who: &str) -> Result<(), ConfigError> {
    let not_a_value = |path: String| {
        ConfigError::invalid(
            path,
            format!(
                "{who}: not a valid header value (it holds a control character; a newline at the end of an \
                 environment variable?)"
            ),
        )
    };
    if api_key.is_some_and(|k| HeaderValue::from_str(k).is_err()) {
        return Err(not_a_value(lp("api_key")));
    }
    for key in ["azure_ad_token", "organization"] {
        if let Some(serde_json::Value::String(v)) = params.get(key)
            && HeaderValue::from_str(v).is_err()
        {
            return Err(not_a_value(lp(key)));
        }
    }
    let Some(serde_json::Value::Object(extra)) = params.get("extra_headers") else { return Ok(()) };
    for (name, value) in extra {
        let path = lp(&format!("extra_headers.{name}"));
        let Ok(header) = HeaderName::from_bytes(name.as_bytes()) else {
            return Err(ConfigError::invalid(path, format!("{who}: not a valid header name")));
        };
        if CONNECTION_HEADERS.contains(&header.as_str()) {
            return Err(ConfigError::invalid(
                path,
                format!("{who}: `{header}` is a connection header, which belongs to the transport"),
            ));
        }
        if value.as_str().is_some_and(|v| HeaderValue::from_str(v).is_err()) {
            return Err(not_a_value(path));
        }
    }
    Ok(())
}

fn model_info(
    mut b: switchyard_layers::DeploymentBuilder,
    mut info: RawModelInfo,
    base: &str,
    w: &mut Warnings,
) -> Result<(switchyard_layers::DeploymentBuilder, Option<RoutingPreferences>), ConfigError> {
    let mi = |key: &str| format!("{base}.model_info.{key}");
    let preferences = routing_preferences(&mut info.extra, base, w)?;
    // An empty id is no id, as in LiteLLM: the id is derived.
    if let Some(id) = info.id.map(|id| id.into_string()).filter(|id| !id.is_empty()) {
        b = b.id(id);
    }
    if let Some(v) = opt(info.max_input_tokens, || mi("max_input_tokens"), to_u32)? {
        b = b.max_input_tokens(v);
    }
    if let Some(v) = opt(info.max_output_tokens, || mi("max_output_tokens"), to_u32)? {
        b = b.max_output_tokens(v);
    }
    if let Some(v) = info.blocked {
        b = b.blocked(v.0);
    }
    // The highest-precedence cooldown time (above the request's, the deployment's
    // `litellm_params.cooldown_time` and Retry-After), as LiteLLM 1.100 reads it.
    if let Some(v) = opt(info.cooldown_time, || mi("cooldown_time"), to_secs)? {
        b = b.info_cooldown_time(v);
    }
    let mut caps = Capabilities::default();
    for (key, value) in info.extra {
        // The model the catalog is asked about (LiteLLM's cost and context-window lookups).
        if key == "base_model"
            && let Some(base) = value.as_str().filter(|b| !b.trim().is_empty())
        {
            b = b.base_model(base);
        }
        if key.starts_with("supports_") {
            if value.is_null() {
                continue;
            }
            let flag = Flag::parse(&value).ok_or_else(|| ConfigError::type_error(mi(&key), "must be true or false"))?;
            if !caps.set(&key, flag) {
                w.ignored(format!("model_list[].model_info.{key}"), &mi(&key), "not a capability Switchyard knows");
            }
        } else if !METADATA.contains(&key.as_str()) {
            w.ignored(format!("model_list[].model_info.{key}"), &mi(&key), NOT_SUPPORTED);
        }
    }
    Ok((b.capabilities(caps), preferences))
}

/// The quality router's `model_info.litellm_routing_preferences` (LiteLLM) and
/// `model_info.quality_tier` (Switchyard's shorthand), taken out of `extra`; both given, they
/// must agree.
fn routing_preferences(
    extra: &mut Extra,
    base: &str,
    w: &mut Warnings,
) -> Result<Option<RoutingPreferences>, ConfigError> {
    let mi = |key: &str| format!("{base}.model_info.{key}");
    let declared = match extra.remove("litellm_routing_preferences").filter(|v| !v.is_null()) {
        Some(value) => {
            let path = mi("litellm_routing_preferences");
            let prefs: RoutingPreferences = serde_path_to_error::deserialize(value).map_err(|e| {
                let inner = e.path().to_string();
                let at = if inner == "." { path.clone() } else { format!("{path}.{inner}") };
                ConfigError::type_error(at, e.inner().to_string())
            })?;
            for key in prefs.other.keys() {
                let p = format!("{path}.{key}");
                w.ignored(format!("model_list[].model_info.litellm_routing_preferences.{key}"), &p, NOT_SUPPORTED);
            }
            Some(prefs)
        }
        None => None,
    };
    let shorthand = match extra.remove("quality_tier").filter(|v| !v.is_null()) {
        Some(value) => {
            let n: Num = serde_json::from_value(value)
                .map_err(|_| ConfigError::type_error(mi("quality_tier"), "must be a whole number >= 0"))?;
            Some(to_u32(n, &mi("quality_tier"))?)
        }
        None => None,
    };
    match (declared, shorthand) {
        (Some(prefs), Some(tier)) if prefs.quality_tier != tier => Err(ConfigError::invalid(
            mi("quality_tier"),
            format!(
                "{tier} differs from `litellm_routing_preferences.quality_tier` ({}); set one of them",
                prefs.quality_tier
            ),
        )),
        (Some(prefs), _) => Ok(Some(prefs)),
        (None, Some(tier)) => Ok(Some(RoutingPreferences::new(tier))),
        (None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_whole_non_negative_and_in_range() {
        assert_eq!(to_u32(Num::Float(4_294_967_295.0), "p").ok(), Some(u32::MAX));
        assert!(to_u32(Num::Float(4_294_967_296.0), "p").is_err());
        assert!(to_u32(Num::Int(4_294_967_296), "p").is_err());
        assert_eq!(to_u64(Num::Int(u64::MAX.into()), "p").ok(), Some(u64::MAX));
        assert!(to_u64(Num::Float(2f64.powi(64)), "p").is_err());
        assert_eq!(to_u64(Num::Float(-0.0), "p").ok(), Some(0));
        let err = to_u64(Num::Int(-5), "model_list[2].litellm_params.rpm").map(|_| ()).unwrap_err();
        assert_eq!(err.to_string(), "model_list[2].litellm_params.rpm: must be >= 0, got -5");
        assert!(to_u64(Num::Float(2.5), "p").unwrap_err().to_string().contains("whole number"));
    }

    #[test]
    fn budget_periods_read_litellm_durations() {
        use serde_json::json;
        let secs = |v: serde_json::Value| to_period(&v, "p").map(|d| d.as_secs()).ok();
        assert_eq!(secs(json!("30s")), Some(30));
        assert_eq!(secs(json!("30m")), Some(1_800));
        assert_eq!(secs(json!("1h")), Some(3_600));
        assert_eq!(secs(json!("1d")), Some(86_400));
        assert_eq!(secs(json!("2w")), Some(1_209_600));
        assert_eq!(secs(json!("1mo")), Some(2_592_000));
        assert_eq!(secs(json!("daily")), Some(86_400));
        assert_eq!(secs(json!("90")), Some(90));
        assert_eq!(secs(json!(90)), Some(90));
        for bad in [json!("1y"), json!("d"), json!("-1d"), json!(0), json!("0s"), json!(true), json!(-5)] {
            assert!(to_period(&bad, "p").is_err(), "{bad}");
        }
    }

    #[test]
    fn params_litellm_consumes_itself_are_dropped_with_a_warning() {
        let yaml = "model_list:\n  - model_name: g\n    litellm_params: { model: openai/gpt-4o, api_key: k, \
                    silent_model: other, max_retries: 3, temperature: 0.5 }\n";
        let c = crate::Config::from_yaml_str(yaml).expect("loads");
        let params = &c.deployments[0].params;
        assert!(params.get("silent_model").is_none() && params.get("max_retries").is_none(), "{params:?}");
        assert!(params.get("temperature").is_some());
        for key in ["silent_model", "max_retries"] {
            assert!(c.warnings.iter().any(|w| w.contains(key)), "{key}: {:#?}", c.warnings);
        }
    }

    #[test]
    fn order_is_read_from_litellm_params_else_model_info() {
        let yaml = "model_list:\n\
                    - { model_name: g, litellm_params: { model: openai/a, api_key: k }, model_info: { order: 2 } }\n\
                    - { model_name: g, litellm_params: { model: openai/b, api_key: k, order: 1 }, model_info: { order: 3 } }\n";
        let c = crate::Config::from_yaml_str(yaml).expect("loads");
        let orders: Vec<Option<u32>> = c.deployments.iter().map(|d| d.order).collect();
        assert_eq!(orders, [Some(2), Some(1)]);
        assert!(!c.warnings.iter().any(|w| w.contains("order")), "{:#?}", c.warnings);
    }

    #[test]
    fn durations_are_seconds_and_timeouts_are_positive() {
        assert_eq!(to_secs(Num::Float(2.5), "p").ok(), Some(Duration::from_millis(2500)));
        assert_eq!(to_secs(Num::Int(0), "p").ok(), Some(Duration::ZERO));
        assert!(to_timeout(Num::Int(0), "p").is_err());
        assert!(to_secs(Num::Float(1e300), "p").is_err());
    }
}
