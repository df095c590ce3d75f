//! The headers of an attempt: the few a client's request may pass on, the deployment's
//! credentials in its provider's scheme, the dialect's version headers, `extra_headers`.

use http::{HeaderMap, HeaderName, HeaderValue, header};
use serde_json::Value;
use switchyard_dialects::anthropic;
use switchyard_layers::{Deployment, RouteError};

use super::{
    CONNECTION_HEADERS, FORWARDED_HEADERS,
    catalog::{Flavor, ProviderInfo, Route, Wire},
    request::misconfigured,
};

const ANTHROPIC_VERSION: &str = "anthropic-version";
const ANTHROPIC_BETA: &str = "anthropic-beta";

const USER_AGENT: &str = concat!("switchyard/", env!("CARGO_PKG_VERSION"));

pub(crate) fn headers(
    d: &Deployment,
    info: &ProviderInfo,
    inbound: &HeaderMap,
    route: Route,
) -> Result<HeaderMap, RouteError> {
    let mut out = HeaderMap::new();
    // One value each, the first: a second `x-request-id` or `traceparent` would reach the
    // upstream unchecked by whatever validated the first.
    for name in FORWARDED_HEADERS {
        if let Some(value) = inbound.get(*name) {
            out.insert(HeaderName::from_static(name), value.clone());
        }
    }
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if !out.contains_key(header::USER_AGENT) {
        out.insert(header::USER_AGENT, HeaderValue::from_static(USER_AGENT));
    }
    let secret = |v: &str, what: &str| {
        HeaderValue::from_str(v)
            .map(|mut h| {
                h.set_sensitive(true);
                h
            })
            .map_err(|_| misconfigured(d, format!("the deployment's {what} is not a valid header value")))
    };
    let string_param = |key: &str| d.params.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    // An Anthropic client's own `anthropic-version` and `anthropic-beta` go on (they choose the
    // API it speaks); `extra_headers` below may override the version, and their betas join the
    // client's. Claude on Vertex AI takes its version in the body (`vertex::claude_body`), its
    // betas as here.
    if info.flavor == Flavor::Anthropic {
        let version = match inbound.get(ANTHROPIC_VERSION).filter(|_| route.ingress == Wire::Anthropic) {
            Some(v) => v.clone(),
            None => HeaderValue::from_static(anthropic::DEFAULT_VERSION),
        };
        out.insert(HeaderName::from_static(ANTHROPIC_VERSION), version);
    }
    if route.egress == Wire::Anthropic
        && route.ingress == Wire::Anthropic
        && let Some(beta) = inbound.get(ANTHROPIC_BETA)
    {
        out.insert(HeaderName::from_static(ANTHROPIC_BETA), beta.clone());
    }
    match (info.flavor, d.api_key.as_ref().filter(|k| !k.expose().is_empty())) {
        (Flavor::Azure, Some(key)) => {
            out.insert(HeaderName::from_static("api-key"), secret(key.expose(), "api_key")?);
        }
        (Flavor::Azure, None) => {
            if let Some(token) = string_param("azure_ad_token") {
                out.insert(header::AUTHORIZATION, secret(&format!("Bearer {token}"), "azure_ad_token")?);
            }
        }
        (Flavor::OpenAi, Some(key)) => {
            out.insert(header::AUTHORIZATION, secret(&format!("Bearer {}", key.expose()), "api_key")?);
        }
        (Flavor::Anthropic, Some(key)) => {
            out.insert(HeaderName::from_static("x-api-key"), secret(key.expose(), "api_key")?);
        }
        (Flavor::Gemini, Some(key)) => {
            out.insert(HeaderName::from_static("x-goog-api-key"), secret(key.expose(), "api_key")?);
        }
        (Flavor::Cohere, Some(key)) => {
            out.insert(header::AUTHORIZATION, secret(&format!("Bearer {}", key.expose()), "api_key")?);
        }
        (Flavor::OpenAi | Flavor::Anthropic | Flavor::Gemini | Flavor::Cohere, None) => {}
        // Signed (or given its bearer key) once the body is known: `request::build`.
        (Flavor::Bedrock, _) => {}
        // An OAuth2 access token, fetched in the attempt's future: `vertex::authorize`.
        (Flavor::Vertex, _) => {}
    }
    if info.flavor == Flavor::OpenAi
        && let Some(org) = string_param("organization")
    {
        out.insert(HeaderName::from_static("openai-organization"), secret(org, "organization")?);
    }
    match d.params.get("extra_headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(extra)) => {
            for (name, value) in extra {
                let Value::String(value) = value else {
                    return Err(misconfigured(d, format!("`extra_headers.{name}` must be a string")));
                };
                let name = HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| misconfigured(d, format!("`extra_headers` has an invalid header name `{name}`")))?;
                if CONNECTION_HEADERS.contains(&name.as_str()) {
                    return Err(misconfigured(d, format!("`extra_headers` may not set `{name}`")));
                }
                let value = match out.get(ANTHROPIC_BETA).filter(|_| name == ANTHROPIC_BETA) {
                    // Both the client and the deployment ask for betas: all of them apply.
                    Some(client) => format!("{},{value}", String::from_utf8_lossy(client.as_bytes())),
                    None => value.clone(),
                };
                out.insert(name.clone(), secret(&value, &format!("`extra_headers.{name}`"))?);
            }
        }
        Some(_) => return Err(misconfigured(d, "`extra_headers` must be an object of strings")),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use switchyard_layers::{ApiKey, ctx::Endpoint};

    use super::*;
    use crate::provider::catalog;

    #[test]
    fn azure_without_key_uses_the_ad_token() {
        let d = Deployment::builder("g", "azure/x").param("azure_ad_token", "tok".into()).build().expect("valid");
        let info = catalog::lookup("azure").expect("known");
        let h = headers(&d, info, &HeaderMap::new(), Route::of(info, &d.model, Endpoint::Chat)).expect("headers");
        assert_eq!(h.get(header::AUTHORIZATION).map(|v| v.as_bytes()), Some(&b"Bearer tok"[..]));
        let d = d.to_builder().api_key(ApiKey::new("k")).build().expect("valid");
        let h = headers(&d, info, &HeaderMap::new(), Route::of(info, &d.model, Endpoint::Chat)).expect("headers");
        assert!(h.get(header::AUTHORIZATION).is_none());
        assert_eq!(h.get("api-key").map(|v| v.as_bytes()), Some(&b"k"[..]));
    }
}
