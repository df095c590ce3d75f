//! The load pipeline (YAML -> JSON value -> `os.environ/` -> serde shapes -> typed [`Config`]
//! -> validation); the conversion of each settings section is in its own module.

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
    Config, ConfigError, ConfigErrorKind,
    convert::{NOT_SUPPORTED, Warnings, deployment},
    env::Env,
    include,
    raw::RawConfig,
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
        let health = health_keys::model_info(i, model.model_info.as_ref().map(|info| &info.extra))?;
        let d = deployment(i, model, &mut w)?;
        health_keys::attach(&mut config, &d.id, health);
        config.deployments.push(d);
    }
    let mut router = raw.router_settings.unwrap_or_default();
    let mut general_raw = raw.general_settings.unwrap_or_default();
    health_keys::sections(&mut config, &mut router, &mut general_raw)?;
    let skip_unsupported = router.skip_unsupported_providers.is_some_and(|f| f.0);
    unsupported_providers(&mut config, skip_unsupported, &mut w)?;
    let litellm = raw.litellm_settings.unwrap_or_default();
    shared(&mut config, &mut sources, &router, &litellm, &mut w)?;
    router_only(&mut config, router, &mut w)?;
    w.ignored_keys("litellm_settings", &litellm.extra, NOT_SUPPORTED);
    general(&mut config, general_raw, &mut w)?;
    health_keys::check_groups(&config, &mut w);
    validate::validate(&config, &sources)?;
    Ok((config, w.list))
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
