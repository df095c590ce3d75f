//! `general_settings`: the master key, `count_tokens` and `edge` (the gateway's HTTP server).

use switchyard_layers::ApiKey;

use crate::config::{
    Config, ConfigError,
    convert::{NOT_SUPPORTED, Warnings},
    http_server,
    raw::RawGeneralSettings,
};

pub(super) fn general(c: &mut Config, gs: RawGeneralSettings, w: &mut Warnings) -> Result<(), ConfigError> {
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
