//! The load pipeline (YAML -> JSON value -> `os.environ/` -> serde shapes -> typed [`Config`]
//! -> validation); the conversion of each settings section is in its own module.

mod cache_keys;
mod continuation_keys;
mod general_settings;
mod health_keys;
mod litellm_settings;
mod redis_keys;
mod router_settings;

use general_settings::general;
use litellm_settings::shared;
use router_settings::router_only;

use std::path::Path;

use serde_json::Value;
use switchyard_services::provider::{SUPPORTED_PROVIDERS, supports_provider};

use super::{
    Config, ConfigError, ConfigErrorKind, auto_router,
    convert::{NOT_SUPPORTED, Warnings, deployments},
    env::Env,
    include,
    raw::{RawConfig, RawModel},
    secret,
    validate::{self, Sources},
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
    let environment = env.get(ENVIRONMENT_VARIABLE);
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
    for (i, mut model) in raw.model_list.unwrap_or_default().into_iter().enumerate() {
        if !active_for_environment(&model, i, environment.as_deref())? {
            continue;
        }
        if auto_router::is_auto_router(&model) {
            config.pre_routers.push(auto_router::entry(i, model, &mut w)?);
            sources.pre_routers.push(format!("model_list[{i}]"));
            continue;
        }
        let health = health_keys::model_info(i, model.model_info.as_ref().map(|info| &info.extra))?;
        let adaptive = auto_router::adaptive_preferences(i, &mut model, &mut w)?;
        let (expanded, prefs) = deployments(i, model, &mut w)?;
        if let (Some(adaptive), Some(first)) = (adaptive, expanded.first()) {
            auto_router::merge_adaptive(&mut config.adaptive_preferences, &first.group, adaptive, || {
                format!("model_list[{i}].model_info.adaptive_router_preferences.quality_tier")
            })?;
        }
        if let (Some(prefs), Some(first)) = (prefs, expanded.first()) {
            auto_router::merge_preferences(&mut config.routing_preferences, &first.group, prefs, || {
                format!("model_list[{i}].model_info.litellm_routing_preferences.quality_tier")
            })?;
        }
        for d in expanded {
            health_keys::attach(&mut config, &d.id, health.clone());
            config.deployments.push(d);
            sources.entries.push(i);
        }
    }
    let mut router = raw.router_settings.unwrap_or_default();
    let mut general_raw = raw.general_settings.unwrap_or_default();
    health_keys::sections(&mut config, &mut router, &mut general_raw)?;
    let skip_unsupported = router.skip_unsupported_providers.is_some_and(|f| f.0);
    unsupported_providers(&mut config, &mut sources, skip_unsupported, &mut w)?;
    let mut litellm = raw.litellm_settings.unwrap_or_default();
    let cache = cache_keys::CacheKeys::take(&mut litellm.extra, &mut router.extra);
    shared(&mut config, &mut sources, &router, &litellm, &mut w)?;
    router_only(&mut config, router, &mut w)?;
    cache_keys::cache(&mut config, cache, &env, &mut w)?;
    w.ignored_keys("litellm_settings", &litellm.extra, NOT_SUPPORTED);
    general(&mut config, general_raw, &mut w)?;
    health_keys::check_groups(&config, &mut w);
    validate::validate(&config, &sources)?;
    Ok((config, w.list))
}

/// Deployments of providers Switchyard does not serve natively (`sagemaker/`, `watsonx/`, ...) are
/// refused at load, naming the provider and the deployment, or skipped with one warning each when
/// `router_settings.skip_unsupported_providers` is true: never a failure at request time.
fn unsupported_providers(
    c: &mut Config,
    sources: &mut Sources,
    skip: bool,
    w: &mut Warnings,
) -> Result<(), ConfigError> {
    let mut kept = Vec::with_capacity(c.deployments.len());
    let mut entries = Vec::with_capacity(c.deployments.len());
    for (i, d) in std::mem::take(&mut c.deployments).into_iter().enumerate() {
        if supports_provider(&d.model) {
            kept.push(d);
            entries.push(sources.entries.get(i).copied().unwrap_or(i));
            continue;
        }
        let path = format!("{}.litellm_params.model", sources.deployment(i));
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
    sources.entries = entries;
    Ok(())
}

/// The variable that names the environment a config is loaded in (LiteLLM's).
const ENVIRONMENT_VARIABLE: &str = "LITELLM_ENVIRONMENT";

/// The environments `supported_environments` and `LITELLM_ENVIRONMENT` may name (LiteLLM's
/// `VALID_LITELLM_ENVIRONMENTS`).
const ENVIRONMENTS: [&str; 3] = ["development", "staging", "production"];

/// Whether `model_list[i]` is loaded in this environment: LiteLLM's
/// `model_info_is_active_for_environment`. An entry without `model_info.supported_environments`
/// always is; one with it is loaded only when `LITELLM_ENVIRONMENT` is in the list, and then
/// `LITELLM_ENVIRONMENT` must be set, and both must name `development`, `staging` or
/// `production`.
fn active_for_environment(model: &RawModel, i: usize, environment: Option<&str>) -> Result<bool, ConfigError> {
    let Some(value) = model.model_info.as_ref().and_then(|info| info.extra.get("supported_environments")) else {
        return Ok(true);
    };
    let path = format!("model_list[{i}].model_info.supported_environments");
    let listed = match value {
        Value::Null => return Ok(true),
        Value::Array(items) => items,
        _ => {
            return Err(ConfigError::type_error(
                path,
                format!("must be a list of environments ({})", ENVIRONMENTS.join(", ")),
            ));
        }
    };
    let mut names = Vec::with_capacity(listed.len());
    for (j, item) in listed.iter().enumerate() {
        match item.as_str() {
            Some(name) if ENVIRONMENTS.contains(&name) => names.push(name),
            _ => {
                return Err(ConfigError::invalid(
                    format!("{path}[{j}]"),
                    format!("must be one of {}", ENVIRONMENTS.join(", ")),
                ));
            }
        }
    }
    let Some(environment) = environment else {
        return Err(ConfigError::new(
            ConfigErrorKind::Env,
            path,
            format!("is set, but `{ENVIRONMENT_VARIABLE}` is not: set it to one of {}", ENVIRONMENTS.join(", ")),
        ));
    };
    if !ENVIRONMENTS.contains(&environment) {
        return Err(ConfigError::new(
            ConfigErrorKind::Env,
            path,
            format!("`{ENVIRONMENT_VARIABLE}` is `{environment}`; it must be one of {}", ENVIRONMENTS.join(", ")),
        ));
    }
    Ok(names.contains(&environment))
}
