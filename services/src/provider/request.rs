//! Building the upstream request of one attempt: URL, headers and body, from the selected
//! deployment alone (so one deployment's credentials never reach another's host).

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri, header};
use http_body_util::Full;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value};
use switchyard_layers::{Deployment, Outcome, RequestFacts, RouteError, RouteErrorKind, ctx::Endpoint};

use super::catalog::{self, Flavor, ProviderInfo};

/// Request-body keys removed before the body goes upstream: the ones that steer Switchyard (or
/// LiteLLM's router) and mean nothing to a provider, and LiteLLM's client-side credential keys
/// (`api_key`, `api_base`, `base_url`, `api_version`), so a client can neither redirect an
/// attempt nor have its own credentials sent on.
pub const ROUTING_KEYS: &[&str] = &[
    "metadata",
    "fallbacks",
    "context_window_fallbacks",
    "content_policy_fallbacks",
    "num_retries",
    "disable_fallbacks",
    "tags",
    "allowed_model_region",
    "api_key",
    "api_base",
    "base_url",
    "api_version",
];

/// Inbound headers forwarded upstream; every other inbound header is dropped, the client's
/// `authorization` / `api-key` included. `content-type` is always set to `application/json`.
pub const FORWARDED_HEADERS: &[&str] = &["accept", "user-agent", "x-request-id", "traceparent", "tracestate"];

/// Deployment parameters (`litellm_params`) that configure the call rather than the request
/// body: `extra_headers` (a JSON object of strings, sent as headers), `organization` (sent as
/// `OpenAI-Organization`), `azure_ad_token` (Azure: `Authorization: Bearer` when the deployment
/// has no key), and LiteLLM client settings that have no meaning here. They are never merged into
/// the body.
pub const CLIENT_PARAMS: &[&str] = &[
    "extra_headers",
    "organization",
    "azure_ad_token",
    "custom_llm_provider",
    "litellm_credential_name",
    "use_in_pass_through",
    "drop_params",
    "additional_drop_params",
    "api_type",
];

/// Azure `api-version` when the deployment names none.
pub const AZURE_DEFAULT_API_VERSION: &str = "2024-10-21";

/// Headers an `extra_headers` entry may not set: they belong to the connection.
const CONNECTION_HEADERS: [&str; 8] =
    ["host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer"];

const USER_AGENT: &str = concat!("switchyard/", env!("CARGO_PKG_VERSION"));

/// The upstream request for `deployment`, from the client's headers and JSON body.
pub(crate) fn build(
    deployment: &Deployment,
    facts: &RequestFacts,
    inbound: &HeaderMap,
    body: &[u8],
) -> Result<http::Request<Full<Bytes>>, RouteError> {
    let provider = deployment.provider();
    let info = catalog::lookup(provider).ok_or_else(|| {
        misconfigured(
            deployment,
            format!("provider `{provider}` is not served natively (model `{}`)", deployment.model),
        )
    })?;
    let uri = url(deployment, info, facts.endpoint)?;
    let headers = headers(deployment, info, inbound)?;
    let body = rewrite_body(deployment, facts, body)?;
    let mut req = http::Request::new(Full::new(body));
    *req.method_mut() = Method::POST;
    *req.uri_mut() = uri;
    *req.headers_mut() = headers;
    Ok(req)
}

/// The URL of the attempt; see `docs/providers.md` ("URL rules").
fn url(d: &Deployment, info: &ProviderInfo, endpoint: Endpoint) -> Result<Uri, RouteError> {
    let (base, from_deployment) = match (d.api_base.as_deref().map(str::trim), info.default_base) {
        (Some(b), _) if !b.is_empty() => (b, true),
        (_, Some(default)) => (default, false),
        _ => return Err(misconfigured(d, format!("provider `{}` needs an `api_base`", info.name))),
    };
    let parsed: Uri = base.parse().map_err(|e| misconfigured(d, format!("`api_base` is not a URL: {e}")))?;
    let (Some(scheme), Some(authority)) = (parsed.scheme_str(), parsed.authority()) else {
        return Err(misconfigured(d, "`api_base` must be an absolute http(s) URL"));
    };
    if scheme != "http" && scheme != "https" {
        return Err(misconfigured(d, format!("`api_base` scheme `{scheme}` is not http or https")));
    }
    let mut path = parsed.path().trim_end_matches('/').to_owned();
    let mut query: Vec<String> = parsed.query().into_iter().filter(|q| !q.is_empty()).map(str::to_owned).collect();
    let endpoint_path = match endpoint {
        Endpoint::Embedding => "/embeddings",
        Endpoint::Completion => "/completions",
        _ => "/chat/completions",
    };
    match info.flavor {
        Flavor::Azure => {
            if let Some(stripped) = path.strip_suffix("/openai") {
                path = stripped.to_owned();
            }
            let name = catalog::upstream_model(&d.model);
            path = format!("{path}/openai/deployments/{}{endpoint_path}", encode_segment(name));
            let version = d.api_version.as_deref().unwrap_or(AZURE_DEFAULT_API_VERSION);
            query.push(format!("api-version={}", encode_segment(version)));
        }
        Flavor::OpenAi => {
            // A host-only base means the server's OpenAI API under `/v1` (vLLM, Ollama, LiteLLM
            // proxies), except for providers whose API lives at the root of their host.
            let root_api = info.default_base.is_some_and(|b| !has_path(b));
            if from_deployment && path.is_empty() && !root_api {
                path.push_str("/v1");
            }
            path.push_str(endpoint_path);
        }
    }
    let path_and_query = if query.is_empty() { path } else { format!("{path}?{}", query.join("&")) };
    Uri::builder()
        .scheme(scheme)
        .authority(authority.as_str())
        .path_and_query(path_and_query)
        .build()
        .map_err(|e| misconfigured(d, format!("cannot build the upstream URL: {e}")))
}

fn has_path(base: &str) -> bool {
    base.parse::<Uri>().is_ok_and(|u| !u.path().trim_end_matches('/').is_empty())
}

/// Percent-encodes what may not appear raw in a path segment or a query value.
/// Unreserved characters (RFC 3986) stay; everything else is percent-encoded.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

fn encode_segment(s: &str) -> String {
    utf8_percent_encode(s, SEGMENT).to_string()
}

fn headers(d: &Deployment, info: &ProviderInfo, inbound: &HeaderMap) -> Result<HeaderMap, RouteError> {
    let mut out = HeaderMap::new();
    for name in FORWARDED_HEADERS {
        for value in inbound.get_all(*name) {
            out.append(HeaderName::from_static(name), value.clone());
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
        (Flavor::OpenAi, None) => {}
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
                out.insert(name.clone(), secret(value, &format!("`extra_headers.{name}`"))?);
            }
        }
        Some(_) => return Err(misconfigured(d, "`extra_headers` must be an object of strings")),
    }
    Ok(out)
}

/// The client's JSON body with the deployment's model, its parameters as defaults, routing keys
/// removed, and `stream` / `stream_options.include_usage` set for streams.
fn rewrite_body(d: &Deployment, facts: &RequestFacts, body: &[u8]) -> Result<Bytes, RouteError> {
    let mut json: Map<String, Value> = match serde_json::from_slice(body) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(invalid("request body must be a JSON object")),
        Err(e) => return Err(invalid(format!("request body is not valid JSON: {e}"))),
    };
    for (key, value) in &d.params {
        if !CLIENT_PARAMS.contains(&key.as_str()) && !json.contains_key(key) {
            json.insert(key.clone(), value.clone());
        }
    }
    for key in ROUTING_KEYS {
        json.remove(*key);
    }
    // For Azure the model is the deployment name, which the URL carries too.
    json.insert("model".to_owned(), Value::String(catalog::upstream_model(&d.model).to_owned()));
    if facts.endpoint != Endpoint::Embedding {
        if facts.stream {
            json.insert("stream".to_owned(), Value::Bool(true));
            let options = json.entry("stream_options").or_insert_with(|| Value::Object(Map::new()));
            if !options.is_object() {
                *options = Value::Object(Map::new());
            }
            if let Value::Object(options) = options {
                options.insert("include_usage".to_owned(), Value::Bool(true));
            }
        } else if json.get("stream").is_some_and(|s| s != &Value::Bool(false)) {
            // The facts decide how the answer is read; a body saying otherwise would be misread.
            json.insert("stream".to_owned(), Value::Bool(false));
            json.remove("stream_options");
        }
    }
    serde_json::to_vec(&json).map(Bytes::from).map_err(|e| invalid(format!("cannot encode the request body: {e}")))
}

/// A deployment that cannot be called as configured: the deployment is at fault (not the
/// caller), so the attempt fails like a missing endpoint (`Outcome::NotFound`), which cools the
/// deployment down and lets fallbacks serve.
fn misconfigured(d: &Deployment, message: impl Into<String>) -> RouteError {
    let message = format!("deployment `{}` is misconfigured: {}", d.id, message.into());
    RouteError::upstream(Outcome::NotFound, d.id.clone(), message)
}

fn invalid(message: impl Into<String>) -> RouteError {
    RouteError::new(RouteErrorKind::InvalidRequest, message)
}

#[cfg(test)]
mod tests {
    use switchyard_layers::ApiKey;

    use super::*;

    fn uri_of(d: Deployment, endpoint: Endpoint) -> String {
        let info = catalog::lookup(d.provider()).expect("a supported provider");
        url(&d, info, endpoint).expect("a URL").to_string()
    }

    fn dep(model: &str, base: Option<&str>) -> Deployment {
        let mut b = Deployment::builder("g", model).id("d");
        if let Some(base) = base {
            b = b.api_base(base);
        }
        b.build().expect("valid deployment")
    }

    #[test]
    fn url_rules() {
        let chat = Endpoint::Chat;
        assert_eq!(uri_of(dep("gpt-4o", None), chat), "https://api.openai.com/v1/chat/completions");
        assert_eq!(uri_of(dep("openai/x", Some("http://h:8000")), chat), "http://h:8000/v1/chat/completions");
        assert_eq!(uri_of(dep("openai/x", Some("http://h:8000/")), chat), "http://h:8000/v1/chat/completions");
        assert_eq!(uri_of(dep("openai/x", Some("http://h/v1/")), Endpoint::Embedding), "http://h/v1/embeddings");
        assert_eq!(uri_of(dep("openai/x", Some("http://h/api/v2")), chat), "http://h/api/v2/chat/completions");
        assert_eq!(
            uri_of(dep("perplexity/s", Some("https://api.perplexity.ai")), chat),
            "https://api.perplexity.ai/chat/completions"
        );
        assert_eq!(uri_of(dep("groq/l", None), Endpoint::Completion), "https://api.groq.com/openai/v1/completions");
        let azure = Deployment::builder("g", "azure/gpt 4o")
            .api_base("https://eu.openai.azure.com/openai/")
            .api_version("2024-06-01")
            .build()
            .expect("valid deployment");
        assert_eq!(
            uri_of(azure, chat),
            "https://eu.openai.azure.com/openai/deployments/gpt%204o/chat/completions?api-version=2024-06-01"
        );
    }

    #[test]
    fn misconfigurations_are_not_found_on_the_deployment() {
        let info = catalog::lookup("hosted_vllm").expect("known");
        let err = url(&dep("hosted_vllm/m", None), info, Endpoint::Chat).expect_err("needs api_base");
        assert_eq!(err.outcome(), Some(Outcome::NotFound));
        assert!(err.to_string().contains("needs an `api_base`"));
        let err = url(&dep("openai/m", Some("ftp://h")), info, Endpoint::Chat).expect_err("bad scheme");
        assert!(err.to_string().contains("ftp"));
    }

    #[test]
    fn azure_without_key_uses_the_ad_token() {
        let d = Deployment::builder("g", "azure/x").param("azure_ad_token", "tok".into()).build().expect("valid");
        let info = catalog::lookup("azure").expect("known");
        let h = headers(&d, info, &HeaderMap::new()).expect("headers");
        assert_eq!(h.get(header::AUTHORIZATION).map(|v| v.as_bytes()), Some(&b"Bearer tok"[..]));
        let d = d.to_builder().api_key(ApiKey::new("k")).build().expect("valid");
        let h = headers(&d, info, &HeaderMap::new()).expect("headers");
        assert!(h.get(header::AUTHORIZATION).is_none());
        assert_eq!(h.get("api-key").map(|v| v.as_bytes()), Some(&b"k"[..]));
    }
}
