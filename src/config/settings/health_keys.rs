//! The health-check keys: `router_settings.enable_health_check_routing`,
//! `health_check_staleness_threshold`, `health_check_ignore_transient_errors` and
//! `background_health_check_model_groups`; `general_settings.background_health_checks`,
//! `health_check_interval`, `health_check_concurrency` (and the accepted
//! `use_shared_health_check`, `health_check_details`); per deployment
//! `model_info.mode`, `disable_background_health_check`, `health_check_timeout`,
//! `health_check_model`, `health_check_max_tokens`, `health_check_supports_max_tokens` and
//! `health_check_params`. Names and defaults are LiteLLM's (`docs/health.md`).

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
    time::Duration,
};

use serde_json::Value;
use switchyard_layers::DeploymentId;

use crate::{
    config::{
        Config, ConfigError,
        convert::{opt, to_timeout, to_u32},
        raw::{Extra, Flag, Num, RawGeneralSettings, RawRouterSettings},
    },
    health::{ProbeMode, ProbeSpec},
};

/// A deployment's health-check keys, read from its `model_info` before the deployment is built.
#[derive(Clone, Debug, Default)]
pub(crate) struct DeploymentHealth {
    probe: Option<ProbeSpec>,
    disabled: bool,
    timeout: Option<Duration>,
}

/// Reads the health-check keys of `model_list[index].model_info`.
pub(crate) fn model_info(index: usize, extra: Option<&Extra>) -> Result<DeploymentHealth, ConfigError> {
    let mut out = DeploymentHealth::default();
    let Some(extra) = extra else { return Ok(out) };
    let at = |key: &str| format!("model_list[{index}].model_info.{key}");
    let num = |key: &str, v: &Value| -> Result<Num, ConfigError> {
        serde_json::from_value(v.clone()).map_err(|_| ConfigError::type_error(at(key), "must be a number"))
    };
    let mut spec = ProbeSpec::default();
    let mut custom = false;
    for (key, v) in extra {
        if v.is_null() {
            continue;
        }
        match key.as_str() {
            "mode" => {
                let mode = v.as_str().ok_or_else(|| ConfigError::type_error(at(key), "must be a string"))?;
                spec.mode = ProbeMode::from_litellm(mode);
                custom |= spec.mode != ProbeMode::Chat;
            }
            "disable_background_health_check" => {
                out.disabled =
                    Flag::parse(v).ok_or_else(|| ConfigError::type_error(at(key), "must be true or false"))?;
            }
            "health_check_timeout" => out.timeout = Some(to_timeout(num(key, v)?, &at(key))?),
            "health_check_model" => {
                let model = v.as_str().filter(|m| !m.trim().is_empty()).ok_or_else(|| {
                    ConfigError::type_error(at(key), "must be a provider model such as `openai/gpt-4o-mini`")
                })?;
                spec.model = Some(model.to_owned());
                custom = true;
            }
            "health_check_max_tokens" => {
                let n = to_u32(num(key, v)?, &at(key))?;
                if n == 0 {
                    return Err(ConfigError::invalid(at(key), "must be >= 1, got 0"));
                }
                spec.max_tokens = Some(n);
                custom = true;
            }
            "health_check_supports_max_tokens" => {
                let on = Flag::parse(v).ok_or_else(|| ConfigError::type_error(at(key), "must be true or false"))?;
                spec.omit_max_tokens = !on;
                custom |= !on;
            }
            "health_check_params" => {
                let Value::Object(map) = v else {
                    return Err(ConfigError::type_error(at(key), "must be a mapping of request members"));
                };
                spec.params = map.clone();
                custom = true;
            }
            _ => {}
        }
    }
    out.probe = custom.then_some(spec);
    Ok(out)
}

/// Records a built deployment's health-check keys.
pub(crate) fn attach(c: &mut Config, id: &DeploymentId, health: DeploymentHealth) {
    if let Some(probe) = health.probe {
        c.health.probes.insert(id.clone(), probe);
    }
    if health.disabled {
        let mut skip: HashSet<DeploymentId> = (*c.health.check.skip).clone();
        skip.insert(id.clone());
        c.health.check.skip = Arc::new(skip);
    }
    if let Some(t) = health.timeout {
        let mut timeouts: HashMap<DeploymentId, Duration> = (*c.health.check.timeouts).clone();
        timeouts.insert(id.clone(), t);
        c.health.check.timeouts = Arc::new(timeouts);
    }
}

/// Reads the section keys (taking them out of the raw sections).
pub(crate) fn sections(
    c: &mut Config,
    rs: &mut RawRouterSettings,
    gs: &mut RawGeneralSettings,
) -> Result<(), ConfigError> {
    let r = |key: &str| format!("router_settings.{key}");
    let g = |key: &str| format!("general_settings.{key}");
    let h = &mut c.health;
    h.routing = rs.enable_health_check_routing.take().is_some_and(|f| f.0);
    h.background = gs.background_health_checks.take().is_some_and(|f| f.0);
    h.check.ignore_transient_errors = rs.health_check_ignore_transient_errors.take().is_some_and(|f| f.0);
    // LiteLLM's proxy skips the loop for an interval <= 0; a probe loop without pause is refused.
    if let Some(interval) = opt(gs.health_check_interval.take(), || g("health_check_interval"), to_timeout)? {
        h.check = std::mem::take(&mut h.check).interval(interval);
    }
    if let Some(staleness) =
        opt(rs.health_check_staleness_threshold.take(), || r("health_check_staleness_threshold"), to_timeout)?
    {
        h.check = std::mem::take(&mut h.check).staleness(staleness);
    }
    if let Some(n) = opt(gs.health_check_concurrency.take(), || g("health_check_concurrency"), to_u32)? {
        if n == 0 {
            return Err(ConfigError::invalid(g("health_check_concurrency"), "must be >= 1, got 0"));
        }
        h.check = std::mem::take(&mut h.check).concurrency(usize::try_from(n).unwrap_or(usize::MAX));
    }
    // LiteLLM reads the list from the router's settings and the proxy's; either sets it here.
    let groups = match (rs.background_health_check_model_groups.take(), gs.background_health_check_model_groups.take())
    {
        (Some(a), Some(b)) if a != b => {
            return Err(ConfigError::invalid(
                r("background_health_check_model_groups"),
                "differs from `general_settings.background_health_check_model_groups`; set it in one place",
            ));
        }
        (Some(a), _) | (None, Some(a)) => Some(a),
        (None, None) => None,
    };
    if let Some(groups) = groups {
        if let Some(i) = groups.iter().position(|g| g.trim().is_empty()) {
            return Err(ConfigError::invalid(
                format!("{}[{i}]", r("background_health_check_model_groups")),
                "must not be empty",
            ));
        }
        h.check.groups = Some(Arc::new(groups.into_iter().map(Arc::from).collect()));
    }
    gs.use_shared_health_check.take();
    gs.health_check_details.take();
    Ok(())
}

/// The checks that need the whole config: named groups exist (a warning, as LiteLLM logs it).
pub(crate) fn check_groups(c: &Config, w: &mut crate::config::convert::Warnings) {
    let Some(groups) = &c.health.check.groups else { return };
    let known: HashSet<&str> = c.deployments.iter().map(|d| &*d.group).collect();
    for g in groups.iter().filter(|g| !known.contains(&***g)) {
        let path = "background_health_check_model_groups";
        w.once(format!("{path}:{g}"), format!("`{path}` names `{g}`, which is not a model group in `model_list`"));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use switchyard_layers::DeploymentId;

    use crate::{
        Config,
        health::{ProbeMode, ProbeSpec},
    };

    fn load(extra: &str) -> Result<Config, String> {
        let yaml = format!(
            "model_list:\n  - model_name: gpt\n    litellm_params: {{ model: openai/gpt-4o }}\n    model_info: {{ id: a }}\n\
             {extra}"
        );
        Config::from_yaml_str(&yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn litellm_defaults_when_nothing_is_set() {
        let c = load("").unwrap();
        assert!(!c.health.routing && !c.health.background && !c.health.probes_run());
        assert_eq!(c.health.check.interval, Duration::from_secs(300));
        assert_eq!(c.health.check.staleness, Duration::from_secs(600));
        assert_eq!(c.health.check.timeout, Duration::from_secs(60));
        assert!(!c.health.filter(false).enabled);
    }

    #[test]
    fn the_keys_are_read_with_litellm_s_names() {
        let c = load(
            "router_settings:\n  enable_health_check_routing: true\n  health_check_staleness_threshold: 90\n  \
             health_check_ignore_transient_errors: true\n  background_health_check_model_groups: [gpt]\n\
             general_settings:\n  background_health_checks: true\n  health_check_interval: 30\n  \
             health_check_concurrency: 4\n  use_shared_health_check: true\n  health_check_details: false\n",
        )
        .unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        assert!(c.health.routing && c.health.background);
        assert_eq!(c.health.check.interval, Duration::from_secs(30));
        assert_eq!(c.health.check.staleness, Duration::from_secs(90), "an explicit threshold wins");
        assert_eq!(c.health.check.concurrency, 4);
        assert!(c.health.check.ignore_transient_errors);
        assert!(c.health.check.groups.as_ref().unwrap().contains("gpt"));
        let filter = c.health.filter(false);
        assert!(filter.enabled && filter.filters("gpt") && !filter.filters("other"));
    }

    #[test]
    fn the_staleness_follows_the_interval_unless_set() {
        let c = load("general_settings:\n  health_check_interval: 900\n").unwrap();
        assert_eq!(c.health.check.staleness, Duration::from_secs(1800));
    }

    #[test]
    fn an_allowed_fails_policy_turns_the_filter_off_unless_groups_scope_it() {
        let c = load(
            "router_settings:\n  enable_health_check_routing: true\n  \
             allowed_fails_policy: { InternalServerErrorAllowedFails: 2 }\n",
        )
        .unwrap();
        assert!(!c.health.filter(c.cooldown.allowed_fails_policy.is_some()).enabled);
        let scoped = load(
            "router_settings:\n  enable_health_check_routing: true\n  background_health_check_model_groups: [gpt]\n  \
             allowed_fails_policy: { InternalServerErrorAllowedFails: 2 }\n",
        )
        .unwrap();
        assert!(scoped.health.filter(true).enabled);
    }

    #[test]
    fn model_info_sets_each_deployments_probe() {
        let yaml = "model_list:\n  - model_name: emb\n    litellm_params: { model: openai/text-embedding-3-small }\n    \
                    model_info: { id: e, mode: embedding, health_check_timeout: 5 }\n  \
                    - model_name: gpt\n    litellm_params: { model: openai/gpt-4o }\n    \
                    model_info: { id: g, disable_background_health_check: true, health_check_max_tokens: 3, \
                    health_check_params: { temperature: 0 } }\n";
        let c = Config::from_yaml_str(yaml).unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let e = DeploymentId::from("e");
        assert_eq!(c.health.probe_of(&e).mode, ProbeMode::Embedding);
        assert_eq!(c.health.check.timeouts.get(&e), Some(&Duration::from_secs(5)));
        let g = DeploymentId::from("g");
        assert!(c.health.check.skip.contains(&g));
        let spec: ProbeSpec = c.health.probe_of(&g);
        assert_eq!(spec.max_tokens, Some(3));
        assert_eq!(spec.params["temperature"], 0);
    }

    #[test]
    fn invalid_values_name_their_path() {
        let cases = [
            ("general_settings:\n  health_check_interval: 0\n", "general_settings.health_check_interval"),
            ("general_settings:\n  health_check_concurrency: 0\n", "general_settings.health_check_concurrency"),
            (
                "router_settings:\n  health_check_staleness_threshold: -1\n",
                "router_settings.health_check_staleness_threshold",
            ),
            ("router_settings:\n  enable_health_check_routing: maybe\n", "router_settings.enable_health_check_routing"),
            (
                "router_settings:\n  background_health_check_model_groups: [a]\n\
                 general_settings:\n  background_health_check_model_groups: [b]\n",
                "router_settings.background_health_check_model_groups",
            ),
        ];
        for (yaml, path) in cases {
            let err = load(yaml).unwrap_err();
            assert!(err.starts_with(path), "{yaml}: {err}");
        }
        let yaml = "model_list:\n  - model_name: gpt\n    litellm_params: { model: openai/gpt-4o }\n    \
                    model_info: { health_check_timeout: soon }\n";
        let err = Config::from_yaml_str(yaml).unwrap_err().to_string();
        assert!(err.starts_with("model_list[0].model_info.health_check_timeout"), "{err}");
    }

    #[test]
    fn an_unknown_group_warns() {
        let c = load("router_settings:\n  background_health_check_model_groups: [nope]\n").unwrap();
        assert!(c.warnings.iter().any(|w| w.contains("nope")), "{:?}", c.warnings);
    }
}
