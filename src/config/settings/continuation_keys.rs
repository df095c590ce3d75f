//! `router_settings.stream_continuation` (ours): `true`, or `{enabled, max_continuations,
//! max_partial_bytes}` (a mapping turns continuation on unless it says `enabled: false`).

use serde_json::Value;
use switchyard_layers::continuation::ContinuationConfig;

use crate::config::{
    ConfigError,
    convert::{to_u32, to_u64},
    raw::{Flag, Num},
};

/// The path of the key.
const PATH: &str = "router_settings.stream_continuation";

/// Reads `router_settings.stream_continuation`; every error names the path of the bad value.
pub(super) fn stream_continuation(value: Option<Value>) -> Result<ContinuationConfig, ConfigError> {
    let mut config = ContinuationConfig::default();
    let Some(value) = value else { return Ok(config) };
    if let Some(on) = Flag::parse(&value) {
        config.enabled = on;
        return Ok(config);
    }
    let Value::Object(map) = value else {
        return Err(ConfigError::invalid(PATH, format!("expected true, false or a mapping, got {value}")));
    };
    config.enabled = true;
    for (key, v) in map {
        let path = format!("{PATH}.{key}");
        let num = || {
            serde_json::from_value::<Num>(v.clone())
                .map_err(|_| ConfigError::invalid(&path, format!("expected a number, got {v}")))
        };
        match key.as_str() {
            "enabled" => {
                config.enabled = Flag::parse(&v)
                    .ok_or_else(|| ConfigError::invalid(&path, format!("expected true or false, got {v}")))?;
            }
            "max_continuations" => config.max_continuations = to_u32(num()?, &path)?,
            "max_partial_bytes" => {
                let bytes = to_u64(num()?, &path)?;
                if bytes == 0 {
                    return Err(ConfigError::invalid(&path, "must be at least 1"));
                }
                config.max_partial_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
            }
            _ => {
                return Err(ConfigError::invalid(
                    &path,
                    "unknown key (expected enabled, max_continuations or max_partial_bytes)",
                ));
            }
        }
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn off_unless_set_and_a_mapping_turns_it_on() {
        assert!(!stream_continuation(None).expect("default").is_enabled());
        assert!(stream_continuation(Some(json!(true))).expect("flag").is_enabled());
        assert!(!stream_continuation(Some(json!("off"))).expect("flag word").is_enabled());
        let c = stream_continuation(Some(json!({"max_continuations": 2, "max_partial_bytes": "4096"}))).expect("map");
        assert_eq!((c.enabled, c.max_continuations, c.max_partial_bytes), (true, 2, 4096));
        assert!(!stream_continuation(Some(json!({"enabled": false}))).expect("map").is_enabled());
    }

    #[test]
    fn bad_values_name_their_path() {
        let err = stream_continuation(Some(json!({"max_continuation": 2}))).expect_err("typo");
        assert!(err.to_string().contains("router_settings.stream_continuation.max_continuation"), "{err}");
        let err = stream_continuation(Some(json!({"max_continuations": -1}))).expect_err("negative");
        assert!(err.to_string().contains("router_settings.stream_continuation.max_continuations"), "{err}");
        let err = stream_continuation(Some(json!(3))).expect_err("a number");
        assert!(err.to_string().contains("router_settings.stream_continuation"), "{err}");
    }
}
