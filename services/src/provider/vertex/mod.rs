//! Vertex AI (`vertex_ai/<model>`): Google's Gemini and embedding models and Anthropic's Claude on
//! Google Cloud. A deployment speaks one of two dialects, chosen by its model's name ([`wire`]): a
//! `claude*` model is Claude through Anthropic's Messages API at `:rawPredict` /
//! `:streamRawPredict` (the body without `model`, which the URL names, and with
//! `anthropic_version: "vertex-2023-10-16"`), any other Google model is Gemini at
//! `:generateContent` / `:streamGenerateContent?alt=sse`, the body as the Gemini API takes it.
//! Embeddings go to the model's `:predict` ([`predict_body`]); `/v1/messages/count_tokens` to
//! Claude's `count-tokens:rawPredict` ([`claude_count_body`]) or a Gemini model's `:countTokens`
//! ([`gemini_count_body`]). Partner models served through other APIs (Llama, Mistral, AI21, ...)
//! and tuned-model endpoints are refused ([`check_model`]). Every call carries a Google OAuth2
//! access token, obtained in the attempt's future ([`authorize`]) from `vertex_credentials` (a
//! service-account key file or its JSON text) or Application Default Credentials, and cached per
//! credential ([`Tokens`]; the `vertex` feature).
//!
//! The URL is `https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/
//! {location}/publishers/{google|anthropic}/models/{model}:{method}` (`global`:
//! `aiplatform.googleapis.com`; a multi-region such as `us` or `eu`:
//! `aiplatform.{location}.rep.googleapis.com`, as LiteLLM). An `api_base` replaces the origin (and
//! may add a path prefix); the `/v1/projects/...` path follows it.

#[cfg(feature = "vertex")]
mod auth;

use std::{fmt, sync::Arc};

use bytes::Bytes;
use http::{HeaderValue, header};
use http_body_util::Full;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;
use switchyard_dialects::gemini;
use switchyard_layers::{Deployment, Outcome, RouteError, ctx::Endpoint};

#[cfg(feature = "vertex")]
pub(crate) use auth::Tokens;

use super::{
    catalog::{self, Wire},
    members::Members,
    request::{cannot_take, drop_params, invalid, merged_body, misconfigured},
    response::AttemptInfo,
};

/// The `anthropic_version` Claude on Vertex AI requires in the body.
pub(crate) const ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// The location of a deployment that names none (LiteLLM's default).
pub(crate) const DEFAULT_LOCATION: &str = "us-central1";

/// The dialect of a Vertex AI model: Claude speaks Anthropic's Messages API, every other
/// publisher model Gemini's (partner models that speak neither are refused by [`check_model`]).
pub(crate) fn wire(model: &str) -> Wire {
    if model.starts_with("claude") { Wire::Anthropic } else { Wire::Gemini }
}

/// The Vertex AI model names of partner models served through APIs other than Gemini's and
/// Anthropic's (LiteLLM 1.100's `PartnerModelPrefixes` without `claude`): Llama, DeepSeek, Qwen,
/// gpt-oss, MiniMax, Kimi, GLM and Gemma through the OpenAI-compatible `endpoints/openapi`,
/// Mistral and Codestral through `publishers/mistralai`, Jamba through `publishers/ai21`.
const PARTNER_PREFIXES: [&str; 12] = [
    "meta/",
    "deepseek-ai",
    "qwen",
    "openai/gpt-oss-",
    "minimaxai/",
    "moonshotai/",
    "zai-org/",
    "google/gemma-",
    "mistral",
    "codestral",
    "jamba",
    "llama",
];

/// Refuses a Vertex AI model this provider cannot call: a partner model other than Claude (see
/// [`PARTNER_PREFIXES`]), or a tuned model's endpoint (an all-digit id), naming the model and
/// what is served. The deployment is at fault, not the request: it fails as misconfigured (it
/// cools down and fallbacks serve).
pub(crate) fn check_model(d: &Deployment) -> Result<(), RouteError> {
    let model = catalog::upstream_model(&d.model);
    if let Some(what) = unserved(model) {
        return Err(misconfigured(
            d,
            format!(
                "Vertex AI model `{model}` is {what}; `vertex_ai/` serves Google's Gemini models (`gemini-*`), its \
                 text embedding models (`text-embedding-*`, `text-multilingual-embedding-*`, `gemini-embedding-*`) \
                 and Anthropic's Claude (`claude-*`)"
            ),
        ));
    }
    Ok(())
}

/// What `model` is when this provider cannot call it: a partner model served through another API,
/// a tuned model's endpoint (an all-digit id), or nothing at all.
fn unserved(model: &str) -> Option<&'static str> {
    if model.is_empty() {
        Some("empty")
    } else if model.bytes().all(|b| b.is_ascii_digit()) {
        Some("a tuned model's endpoint")
    } else if PARTNER_PREFIXES.iter().any(|p| model.starts_with(p)) {
        Some("a partner model Switchyard does not call")
    } else {
        None
    }
}

/// Whether `/v1/messages/count_tokens` can be asked of a Vertex AI deployment of `model`
/// (`vertex_ai/...`): Claude's `count-tokens:rawPredict` and Gemini's `:countTokens` count; an
/// embedding model or a refused partner model does not.
pub(crate) fn counts_tokens(model: &str) -> bool {
    let upstream = catalog::upstream_model(model);
    !upstream.contains("embedding") && unserved(upstream).is_none()
}

fn param<'a>(d: &'a Deployment, key: &str) -> Option<&'a str> {
    d.params.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
}

fn env(key: &str) -> Option<String> {
    std::env::var(key).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// `vertex_location`, else `VERTEXAI_LOCATION`, else [`DEFAULT_LOCATION`]; a location is a
/// lower-case name (`us-central1`, `europe-west4`, `global`, `us`), as LiteLLM checks it: it
/// becomes part of the host. A token count goes to `vertex_count_tokens_location` when the
/// deployment sets one (LiteLLM's parameter: Claude counts tokens in fewer regions than it answers
/// in).
fn location(d: &Deployment, endpoint: Endpoint) -> Result<String, RouteError> {
    let count_location =
        (endpoint == Endpoint::CountTokens).then(|| param(d, "vertex_count_tokens_location")).flatten();
    let location =
        count_location.or_else(|| param(d, "vertex_location")).map(str::to_owned).or_else(|| env("VERTEXAI_LOCATION"));
    let location = location.unwrap_or_else(|| DEFAULT_LOCATION.to_owned());
    let mut bytes = location.bytes();
    let valid = bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if valid {
        Ok(location)
    } else {
        Err(misconfigured(d, format!("`vertex_location` `{location}` is not a location")))
    }
}

/// `vertex_project`, else `VERTEXAI_PROJECT`, else `GOOGLE_CLOUD_PROJECT`.
fn project(d: &Deployment) -> Result<String, RouteError> {
    param(d, "vertex_project")
        .map(str::to_owned)
        .or_else(|| env("VERTEXAI_PROJECT"))
        .or_else(|| env("GOOGLE_CLOUD_PROJECT"))
        .ok_or_else(|| misconfigured(d, "a Vertex AI deployment needs `vertex_project` (or VERTEXAI_PROJECT)"))
}

/// The API origin of the deployment's location for a call to `endpoint`, used when it has no
/// `api_base`.
pub(crate) fn origin(d: &Deployment, endpoint: Endpoint) -> Result<String, RouteError> {
    let location = location(d, endpoint)?;
    Ok(match location.as_str() {
        "global" => "https://aiplatform.googleapis.com".to_owned(),
        multi if !multi.contains('-') => format!("https://aiplatform.{multi}.rep.googleapis.com"),
        regional => format!("https://{regional}-aiplatform.googleapis.com"),
    })
}

/// Path-segment encoding that keeps `@`, which Vertex AI model versions hold
/// (`claude-sonnet-4-5@20250929`) and a path segment may carry as it is (RFC 3986 `pchar`).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~').remove(b'@');

/// The path after the base (whose own path, without a trailing `/v1`, is `prefix`) and the query,
/// for a call to `endpoint` in `egress`'s dialect.
pub(crate) fn path(
    d: &Deployment,
    prefix: &str,
    egress: Wire,
    endpoint: Endpoint,
    stream: bool,
) -> Result<(String, Option<&'static str>), RouteError> {
    let (project, location) = (project(d)?, location(d, endpoint)?);
    let mut model = catalog::upstream_model(&d.model);
    let (publisher, method, query) = match (egress, endpoint, stream) {
        // Claude's counter is a model of its own; the body names the model counted for.
        (Wire::Anthropic, Endpoint::CountTokens, _) => {
            model = "count-tokens";
            ("anthropic", "rawPredict", None)
        }
        (Wire::Anthropic, _, false) => ("anthropic", "rawPredict", None),
        (Wire::Anthropic, _, true) => ("anthropic", "streamRawPredict", None),
        (_, Endpoint::Embedding, _) => ("google", "predict", None),
        (_, Endpoint::CountTokens, _) => ("google", "countTokens", None),
        (_, _, false) => ("google", "generateContent", None),
        (_, _, true) => ("google", "streamGenerateContent", Some("alt=sse")),
    };
    let prefix = prefix.strip_suffix("/v1").unwrap_or(prefix);
    let encode = |s: &str| utf8_percent_encode(s, SEGMENT).to_string();
    let path = format!(
        "{prefix}/v1/projects/{}/locations/{location}/publishers/{publisher}/models/{}:{method}",
        encode(&project),
        encode(model),
    );
    Ok((path, query))
}

/// A Messages request as Claude on Vertex AI takes it: without `model` (the URL names it), with
/// `anthropic_version`.
pub(crate) fn claude_body(body: &[u8]) -> Result<Bytes, RouteError> {
    let mut members = Members::parse(body).map_err(|e| invalid(e.0))?;
    members.remove("model");
    members.set_str("anthropic_version", ANTHROPIC_VERSION);
    Ok(Bytes::from(members.to_bytes()))
}

/// A token count as Claude on Vertex AI's `count-tokens:rawPredict` takes it: the Messages
/// request's content (the passthrough body, `model` already the deployment's) with the model
/// named without its `@version` (the counter refuses versioned names, as LiteLLM found), and no
/// `anthropic_version` (Google's documented body has none).
pub(crate) fn claude_count_body(body: &[u8]) -> Result<Bytes, RouteError> {
    let mut members = Members::parse(body).map_err(|e| invalid(e.0))?;
    let model = members.get("model").and_then(|raw| serde_json::from_str::<String>(raw.get()).ok());
    if let Some(model) = model {
        let unversioned = model.split_once('@').map_or(model.as_str(), |(name, _)| name);
        members.set_str("model", unversioned);
    }
    members.remove("anthropic_version");
    Ok(Bytes::from(members.to_bytes()))
}

/// A Gemini model's `:countTokens` body from the `generateContent` body translated for it: its
/// contents, system instruction and tools.
pub(crate) fn gemini_count_body(generate: &[u8]) -> Result<Bytes, RouteError> {
    let request: gemini::GenerateContentRequest =
        serde_json::from_slice(generate).map_err(|e| invalid(format!("cannot build the token count request: {e}")))?;
    let count = gemini::CountTokensRequest::from_generate(request);
    serde_json::to_vec(&count).map(Bytes::from).map_err(|e| invalid(format!("cannot encode the request body: {e}")))
}

/// An OpenAI embeddings request (with the deployment's parameters as defaults and the routing
/// keys removed) as the model's `:predict` body; a field it cannot carry is a 400 naming it.
pub(crate) fn predict_body(d: &Deployment, body: &[u8]) -> Result<Bytes, RouteError> {
    let members = merged_body(d, body)?;
    let request: serde_json::Map<String, Value> = serde_json::from_slice(&members.to_bytes())
        .map_err(|e| invalid(format!("request body is not an embeddings request: {e}")))?;
    let options = gemini::PredictOptions::new(catalog::upstream_model(&d.model)).drop_unsupported(drop_params(d));
    let predict =
        gemini::predict_request_from_openai(&request, &options).map_err(|e| cannot_take(d, "vertex_ai", &e))?;
    serde_json::to_vec(&predict).map(Bytes::from).map_err(|e| invalid(format!("cannot encode the request body: {e}")))
}

/// An access token sent upstream: masked in every answer of its attempt, never printed.
#[derive(Clone)]
pub(crate) struct AccessToken(Arc<str>);

impl AccessToken {
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AccessToken(***)")
    }
}

/// Without the `vertex` feature no deployment is a Vertex AI one (the catalog does not list it),
/// and no token is ever asked for.
#[cfg(not(feature = "vertex"))]
#[derive(Debug, Default)]
pub(crate) struct Tokens;

#[cfg(not(feature = "vertex"))]
impl Tokens {
    async fn access_token(&self, _: &Deployment) -> Result<AccessToken, String> {
        Err("Vertex AI needs the `vertex` feature".to_owned())
    }
}

/// Puts the deployment's access token on `req` as `Authorization: Bearer` (sensitive), and in
/// `info` so that answers mask it. A token that cannot be had fails the attempt as
/// [`Outcome::Auth`] on the deployment (it cools down; fallbacks serve), its message masked.
pub(crate) async fn authorize(
    tokens: &Tokens,
    req: &mut http::Request<Full<Bytes>>,
    info: &mut AttemptInfo,
) -> Result<(), RouteError> {
    let token = tokens
        .access_token(&info.deployment)
        .await
        .map_err(|e| info.failure(Outcome::Auth, &format!("no Vertex AI access token: {e}")))?;
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
        .map_err(|_| info.failure(Outcome::Auth, "the Vertex AI access token is not a valid header value"))?;
    value.set_sensitive(true);
    req.headers_mut().insert(header::AUTHORIZATION, value);
    info.access_token = Some(token);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dep(model: &str, params: &[(&str, &str)]) -> Deployment {
        let mut b = Deployment::builder("g", model).id("d");
        for (k, v) in params {
            b = b.param(*k, Value::String((*v).to_owned()));
        }
        b.build().expect("valid deployment")
    }

    #[test]
    fn claude_models_speak_anthropic_and_the_others_gemini() {
        assert_eq!(wire("claude-sonnet-4-5@20250929"), Wire::Anthropic);
        assert_eq!(wire("gemini-2.5-flash"), Wire::Gemini);
        assert_eq!(wire("gemini-2.0-flash-001"), Wire::Gemini);
    }

    #[test]
    fn the_host_follows_the_location() {
        let at = |location: &str| {
            origin(&dep("vertex_ai/m", &[("vertex_location", location)]), Endpoint::Chat).expect("a host")
        };
        assert_eq!(at("europe-west4"), "https://europe-west4-aiplatform.googleapis.com");
        assert_eq!(at("global"), "https://aiplatform.googleapis.com");
        assert_eq!(at("eu"), "https://aiplatform.eu.rep.googleapis.com");
        let bad = origin(&dep("vertex_ai/m", &[("vertex_location", "evil.com/x")]), Endpoint::Chat)
            .expect_err("not a location");
        assert_eq!(bad.outcome(), Some(Outcome::NotFound));
    }

    #[test]
    fn the_path_names_project_location_publisher_model_and_method() {
        let d = dep("vertex_ai/claude-sonnet-4-5@20250929", &[("vertex_project", "p-1")]);
        let (claude, query) = path(&d, "", Wire::Anthropic, Endpoint::Messages, true).expect("a path");
        assert_eq!(
            claude,
            "/v1/projects/p-1/locations/us-central1/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
        );
        assert_eq!(query, None);
        let d = dep("vertex_ai/gemini-2.5-flash", &[("vertex_project", "p-1"), ("vertex_location", "global")]);
        let (gemini, query) = path(&d, "/proxy/v1", Wire::Gemini, Endpoint::Chat, true).expect("a path");
        assert_eq!(
            gemini,
            "/proxy/v1/projects/p-1/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent"
        );
        assert_eq!(query, Some("alt=sse"));
    }

    #[test]
    fn embeddings_predict_and_token_counts_go_to_their_own_methods() {
        let d = dep("vertex_ai/text-embedding-005", &[("vertex_project", "p")]);
        let (embed, query) = path(&d, "", Wire::Gemini, Endpoint::Embedding, false).expect("a path");
        assert_eq!(embed, "/v1/projects/p/locations/us-central1/publishers/google/models/text-embedding-005:predict");
        assert_eq!(query, None);
        let d = dep("vertex_ai/gemini-2.5-pro", &[("vertex_project", "p")]);
        let (count, _) = path(&d, "", Wire::Gemini, Endpoint::CountTokens, false).expect("a path");
        assert!(count.ends_with("/publishers/google/models/gemini-2.5-pro:countTokens"), "{count}");
        let params = [
            ("vertex_project", "p"),
            ("vertex_location", "us-east5"),
            ("vertex_count_tokens_location", "europe-west1"),
        ];
        let d = dep("vertex_ai/claude-sonnet-4-5@20250929", &params);
        let (count, _) = path(&d, "", Wire::Anthropic, Endpoint::CountTokens, false).expect("a path");
        assert_eq!(count, "/v1/projects/p/locations/europe-west1/publishers/anthropic/models/count-tokens:rawPredict");
        assert_eq!(
            origin(&d, Endpoint::CountTokens).expect("a host"),
            "https://europe-west1-aiplatform.googleapis.com"
        );
        assert_eq!(origin(&d, Endpoint::Messages).expect("a host"), "https://us-east5-aiplatform.googleapis.com");
    }

    #[test]
    fn claude_counts_name_the_model_without_its_version() {
        let body = claude_count_body(br#"{"model":"claude-sonnet-4-5@20250929","messages":[]}"#).expect("an object");
        let body: Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(body, serde_json::json!({"model": "claude-sonnet-4-5", "messages": []}));
    }

    #[test]
    fn partner_models_and_tuned_endpoints_are_refused_by_name() {
        for model in ["meta/llama-3.3-70b-instruct-maas", "mistral-large@2411", "jamba-1.5-large", "1234567890"] {
            let err = check_model(&dep(&format!("vertex_ai/{model}"), &[])).expect_err("refused");
            assert_eq!(err.outcome(), Some(Outcome::NotFound), "{model}");
            assert!(err.to_string().contains(&format!("`{model}`")), "{err}");
            assert!(err.to_string().contains("claude-*"), "{err}");
            assert!(!counts_tokens(&format!("vertex_ai/{model}")), "{model}");
        }
        for model in ["gemini-2.5-flash", "claude-sonnet-4-5@20250929", "text-embedding-005"] {
            assert!(check_model(&dep(&format!("vertex_ai/{model}"), &[])).is_ok(), "{model}");
        }
        assert!(counts_tokens("vertex_ai/claude-sonnet-4-5@20250929") && counts_tokens("vertex_ai/gemini-2.5-flash"));
        assert!(!counts_tokens("vertex_ai/text-embedding-005"));
    }

    #[test]
    fn claude_bodies_lose_the_model_and_gain_the_vertex_version() {
        let body = claude_body(br#"{"model":"claude","max_tokens":5,"messages":[]}"#).expect("an object");
        let body: Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(body.get("model"), None);
        assert_eq!(body["anthropic_version"], ANTHROPIC_VERSION);
        assert_eq!(body["max_tokens"], 5);
    }

    #[test]
    fn access_tokens_never_print() {
        assert_eq!(format!("{:?}", AccessToken(Arc::from("ya29.secret"))), "AccessToken(***)");
    }
}
