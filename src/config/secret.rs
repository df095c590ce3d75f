//! The fields that hold credentials, read before the document is typed: a credential is a string,
//! and a YAML integer written there is read as its digits (`api_key: 918273645546`; LiteLLM passes
//! such a number on as it is). Any other shape is refused naming the field, and no error ever
//! shows the value, whatever its type: serde's own type errors quote scalars
//! (``invalid type: floating point `1.5` ``), so these fields never reach them.
//!
//! The fields: `litellm_params.api_key`, `azure_ad_token`, `organization`, the values of
//! `extra_headers` and `api_base` (a URL, which may carry a key in its query) in every
//! `model_list` entry; `general_settings.master_key`; `router_settings.redis_password` and
//! `redis_url`. `redis_startup_nodes` and `environment_variables` are read by hand with errors
//! that show no value.

use serde_json::{Map, Value};

use super::ConfigError;

/// `litellm_params` keys sent upstream as credentials (header values).
const CREDENTIAL_PARAMS: [&str; 7] = [
    "api_key",
    "azure_ad_token",
    "organization",
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    // A service-account key file's path or its JSON text: never shown, like the others.
    "vertex_credentials",
];

/// Applies the rules to every credential field of `doc` (after `os.environ/` references are
/// resolved); the shapes around them are left to the typed pass.
pub(crate) fn read_credentials(doc: &mut Value) -> Result<(), ConfigError> {
    if let Some(Value::Array(models)) = doc.get_mut("model_list") {
        for (i, model) in models.iter_mut().enumerate() {
            if let Some(Value::Object(params)) = model.get_mut("litellm_params") {
                litellm_params(params, &format!("model_list[{i}].litellm_params"))?;
            }
        }
    }
    if let Some(key) = doc.get_mut("general_settings").and_then(|g| g.get_mut("master_key")) {
        credential(key, "general_settings.master_key")?;
    }
    if let Some(router) = doc.get_mut("router_settings") {
        if let Some(password) = router.get_mut("redis_password") {
            credential(password, "router_settings.redis_password")?;
        }
        if let Some(url) = router.get_mut("redis_url") {
            url_string(url, "router_settings.redis_url")?;
        }
    }
    Ok(())
}

fn litellm_params(params: &mut Map<String, Value>, at: &str) -> Result<(), ConfigError> {
    for key in CREDENTIAL_PARAMS {
        match params.get_mut(key) {
            // LiteLLM expands a list of organizations into one deployment per organization.
            Some(Value::Array(orgs)) if key == "organization" => {
                for (j, org) in orgs.iter_mut().enumerate() {
                    let path = format!("{at}.{key}[{j}]");
                    if org.is_null() {
                        return Err(ConfigError::type_error(path, "must be a string (an organization id)"));
                    }
                    credential(org, &path)?;
                }
            }
            Some(value) => credential(value, &format!("{at}.{key}"))?,
            None => {}
        }
    }
    if let Some(base) = params.get_mut("api_base") {
        url_string(base, &format!("{at}.api_base"))?;
    }
    match params.get_mut("extra_headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(headers)) => {
            for (name, value) in headers.iter_mut() {
                let path = format!("{at}.extra_headers.{name}");
                if value.is_null() {
                    return Err(ConfigError::type_error(path, "must be a string (a header value)"));
                }
                credential(value, &path)?;
            }
        }
        Some(other) => {
            return Err(ConfigError::type_error(
                format!("{at}.extra_headers"),
                format!("must be a mapping of header names to values, not {}", shape(other)),
            ));
        }
    }
    Ok(())
}

/// A string stays; an integer becomes its digits; `null` is unset; anything else is refused.
fn credential(value: &mut Value, path: &str) -> Result<(), ConfigError> {
    match value {
        Value::Null | Value::String(_) => Ok(()),
        Value::Number(n) if n.is_i64() || n.is_u64() => {
            *value = Value::String(n.to_string());
            Ok(())
        }
        other => Err(ConfigError::type_error(path, format!("must be a string, not {} (quote it)", shape(other)))),
    }
}

/// A URL is a string: a number or a collection is refused (it cannot be one).
fn url_string(value: &Value, path: &str) -> Result<(), ConfigError> {
    match value {
        Value::Null | Value::String(_) => Ok(()),
        other => Err(ConfigError::type_error(path, format!("must be a URL string, not {}", shape(other)))),
    }
}

/// What a value is, in words: never the value itself.
fn shape(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "true or false",
        Value::Number(n) if n.is_f64() => "a number with a fraction or an exponent",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn integers_become_their_digits_and_other_shapes_are_refused_without_the_value() {
        let mut v = json!(918273645546_u64);
        credential(&mut v, "p").expect("an integer is a credential");
        assert_eq!(v, json!("918273645546"));
        let mut v = json!(-42);
        credential(&mut v, "p").expect("a negative integer too");
        assert_eq!(v, json!("-42"));
        for bad in [json!(9182736455.46), json!(true), json!(["918273"]), json!({ "k": "918273" })] {
            let err = credential(&mut bad.clone(), "p").expect_err("refused");
            assert!(!err.to_string().contains("918273"), "{err}");
        }
    }
}
