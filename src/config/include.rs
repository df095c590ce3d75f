//! LiteLLM's top-level `include:`: other YAML files merged into the config before it is read.
//!
//! The rule is the LiteLLM proxy's (`ProxyConfig._process_includes`, `proxy_server.py`, 1.100):
//! `include` is a list of paths, relative to the directory of the main config file (an absolute
//! path stays as it is); each file is read in list order, and each of its top-level keys is
//! merged into the config: a list extends the list the config already has under that key
//! (`model_list` entries are appended), anything else (a mapping such as `router_settings`, a
//! scalar, or a list under a key the config does not have) replaces the config's value whole.
//! An empty file adds nothing; a key the main file leaves empty (`model_list:`) is set, where
//! LiteLLM fails on it. An `include` inside an included file is appended to the list
//! being processed (still relative to the main file's directory), as LiteLLM does; a file is not
//! merged twice in a row of more than [`MAX_INCLUDES`] files, which would be a cycle.
//!
//! Errors name the included file: one that cannot be read or parsed, a list merged into a key
//! that is not a list, and (as a note) any later error about a key or a list entry it supplied.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{ConfigError, ConfigErrorKind};

/// Most files one config may include, nested ones counted: beyond, the includes form a cycle.
pub(crate) const MAX_INCLUDES: usize = 64;

/// Where the keys and list entries an included file supplied ended up, to name the file in
/// errors about them.
#[derive(Debug, Default)]
pub(crate) struct Origins {
    /// `(key, first index, end index, file)`: list entries appended to `key`.
    entries: Vec<(String, usize, usize, String)>,
    /// `(key, file)`: keys an included file set whole.
    keys: Vec<(String, String)>,
}

impl Origins {
    /// Adds "(from `models.yaml`)" to an error about something an included file supplied.
    pub(crate) fn annotate(&self, e: ConfigError) -> ConfigError {
        let path = e.path();
        let key = path.split(['.', '[']).next().unwrap_or_default();
        let index = path
            .strip_prefix(key)
            .and_then(|rest| rest.strip_prefix('['))
            .and_then(|rest| rest.split(']').next())
            .and_then(|i| i.parse::<usize>().ok());
        let from_entry = index
            .and_then(|i| self.entries.iter().rev().find(|(k, start, end, _)| k == key && (*start..*end).contains(&i)));
        let file = match from_entry {
            Some((.., file)) => Some(file),
            None => self.keys.iter().rev().find(|(k, _)| k == key).map(|(_, file)| file),
        };
        match file {
            Some(file) => e.with_note(format!("(from `{file}`)")),
            None => e,
        }
    }
}

/// Merges the files `doc`'s `include` names into `doc` and removes the key. `base` is the main
/// config file's directory; without one (a config read from a string), `include` is left for
/// the loader to warn about.
pub(crate) fn process(
    doc: &mut serde_json::Map<String, Value>,
    base: Option<&Path>,
    parse: &dyn Fn(&str) -> Result<Value, String>,
) -> Result<Origins, ConfigError> {
    let mut origins = Origins::default();
    let Some(list) = doc.get("include") else { return Ok(origins) };
    let Value::Array(_) = list else {
        return Err(ConfigError::type_error("include", "must be a list of file paths"));
    };
    // Without the file's directory, `include` stays and is warned about as ignored.
    let Some(base) = base else { return Ok(origins) };
    let mut i = 0;
    // The list grows while it is processed when an included file has its own `include`.
    while let Some(entry) = doc.get("include").and_then(Value::as_array).and_then(|l| l.get(i)).cloned() {
        let path = format!("include[{i}]");
        if i >= MAX_INCLUDES {
            return Err(ConfigError::invalid(path, format!("more than {MAX_INCLUDES} included files: a cycle?")));
        }
        let Value::String(name) = entry else {
            return Err(ConfigError::type_error(path, "must be a file path"));
        };
        let file: PathBuf = base.join(&name);
        let text = std::fs::read_to_string(&file).map_err(|e| {
            ConfigError::new(
                ConfigErrorKind::Io,
                path.clone(),
                format!("cannot read included file `{}`: {e}", file.display()),
            )
            .with_source(e)
        })?;
        let included = match parse(&text) {
            Ok(Value::Null) => serde_json::Map::new(),
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                return Err(ConfigError::type_error(
                    path,
                    format!("included file `{name}` must be a mapping of sections (`model_list`, ...)"),
                ));
            }
            Err(message) => {
                return Err(ConfigError::new(
                    ConfigErrorKind::Yaml,
                    path,
                    format!("included file `{name}`: {message}"),
                ));
            }
        };
        for (key, value) in included {
            match (doc.get_mut(&key), value) {
                (Some(Value::Array(list)), Value::Array(more)) => {
                    let start = list.len();
                    list.extend(more);
                    origins.entries.push((key.clone(), start, list.len(), name.clone()));
                }
                (Some(other), Value::Array(_)) if !other.is_null() => {
                    return Err(ConfigError::type_error(
                        path,
                        format!(
                            "included file `{name}` extends `{key}`, which the config sets to {}, not a list",
                            kind(other)
                        ),
                    ));
                }
                (_, value) => {
                    if let Value::Array(list) = &value {
                        origins.entries.push((key.clone(), 0, list.len(), name.clone()));
                    }
                    origins.keys.push((key.clone(), name.clone()));
                    doc.insert(key, value);
                }
            }
        }
        i += 1;
    }
    doc.remove("include");
    Ok(origins)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}
