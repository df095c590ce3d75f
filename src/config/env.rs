//! `os.environ/NAME` references: a string value that is exactly `os.environ/NAME` is replaced
//! by the variable `NAME`, before the document is typed (so `rpm: os.environ/RPM` is a number).

use std::{cell::RefCell, collections::BTreeMap};

use serde_json::Value;

use super::{ConfigError, ConfigErrorKind};

/// The prefix LiteLLM uses for environment references.
pub(crate) const PREFIX: &str = "os.environ/";

/// The `router_settings` keys whose strings are resolved.
const ROUTER_KEYS: [&str; 10] = [
    "redis_url",
    "redis_host",
    "redis_port",
    "redis_password",
    "redis_namespace",
    "redis_startup_nodes",
    "redis_ssl",
    "redis_ssl_ca_certs",
    "redis_budgets_fail_closed",
    "redis_response_timeout",
];

/// Where variables come from: the config's own `environment_variables` first (LiteLLM exports
/// them into the process environment before it resolves references), then `lookup`.
pub(crate) struct Env<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
    from_config: BTreeMap<String, String>,
    /// Every value substituted so far, to keep them out of error messages.
    resolved: RefCell<Vec<String>>,
}

impl<'a> Env<'a> {
    /// Reads the document's `environment_variables` (when it is a mapping; a wrong shape is
    /// reported later by the typed pass).
    pub(crate) fn new(doc: &Value, lookup: &'a dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut from_config = BTreeMap::new();
        if let Some(Value::Object(vars)) = doc.get("environment_variables") {
            for (name, value) in vars {
                let value = match value {
                    Value::Null => continue,
                    Value::String(s) => s.clone(),
                    Value::Bool(_) | Value::Number(_) => value.to_string(),
                    Value::Array(_) | Value::Object(_) => {
                        return Err(ConfigError::type_error(
                            format!("environment_variables.{name}"),
                            "must be a string, a number or a boolean",
                        ));
                    }
                };
                from_config.insert(name.clone(), value);
            }
        }
        Ok(Self { lookup, from_config, resolved: RefCell::new(Vec::new()) })
    }

    pub(crate) fn get(&self, name: &str) -> Option<String> {
        self.from_config.get(name).cloned().or_else(|| (self.lookup)(name))
    }

    /// Resolves every reference in the parts of `doc` that Switchyard reads: each
    /// `model_list[].litellm_params` (nested values too), `general_settings.master_key` and
    /// `.edge`, `litellm_settings.cache_params`, and the `router_settings.redis_*` keys. Keys that are ignored are left alone, so a reference in
    /// them never fails the load.
    pub(crate) fn resolve(&self, doc: &mut Value) -> Result<(), ConfigError> {
        if let Some(Value::Array(models)) = doc.get_mut("model_list") {
            for (i, model) in models.iter_mut().enumerate() {
                if let Some(params) = model.get_mut("litellm_params") {
                    self.resolve_tree(params, &format!("model_list[{i}].litellm_params"))?;
                }
            }
        }
        if let Some(key) = doc.get_mut("general_settings").and_then(|g| g.get_mut("master_key")) {
            self.resolve_tree(key, "general_settings.master_key")?;
        }
        if let Some(edge) = doc.get_mut("general_settings").and_then(|g| g.get_mut("edge")) {
            self.resolve_tree(edge, "general_settings.edge")?;
        }
        if let Some(params) = doc.get_mut("litellm_settings").and_then(|l| l.get_mut("cache_params")) {
            self.resolve_tree(params, "litellm_settings.cache_params")?;
        }
        if let Some(Value::Object(router)) = doc.get_mut("router_settings") {
            for key in ROUTER_KEYS {
                if let Some(v) = router.get_mut(key) {
                    self.resolve_tree(v, &format!("router_settings.{key}"))?;
                }
            }
        }
        Ok(())
    }

    fn resolve_tree(&self, value: &mut Value, path: &str) -> Result<(), ConfigError> {
        match value {
            Value::String(s) => {
                if let Some(name) = s.strip_prefix(PREFIX) {
                    *s = self.var(name, path)?;
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    self.resolve_tree(item, &format!("{path}[{i}]"))?;
                }
            }
            Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    self.resolve_tree(item, &format!("{path}.{key}"))?;
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
        Ok(())
    }

    /// `message` with every substituted value of four characters or more replaced by `***`:
    /// a secret put where a number belongs must not be echoed by the type error.
    pub(crate) fn mask(&self, message: &str) -> String {
        let mut message = message.to_owned();
        for value in self.resolved.borrow().iter().filter(|v| v.len() >= 4) {
            message = message.replace(value.as_str(), "***");
        }
        message
    }

    fn var(&self, name: &str, path: &str) -> Result<String, ConfigError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(ConfigError::new(ConfigErrorKind::Env, path, format!("`{PREFIX}` names no variable")));
        }
        let value = self.get(name).ok_or_else(|| {
            ConfigError::new(
                ConfigErrorKind::Env,
                path,
                format!("environment variable `{name}` is not set (referenced as `{PREFIX}{name}`)"),
            )
        })?;
        self.resolved.borrow_mut().push(value.clone());
        Ok(value)
    }
}
