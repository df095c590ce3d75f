//! The URL of an attempt, from the selected deployment alone: `api_base` (or the provider's
//! default) and the path of the endpoint in the deployment's dialect. See `docs/providers.md`
//! ("URL rules").

use http::Uri;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use switchyard_layers::{Deployment, RouteError, ctx::Endpoint};

use super::{
    AZURE_DEFAULT_API_VERSION, AZURE_RESPONSES_API_VERSION,
    catalog::{self, Flavor, ProviderInfo, Route, Wire},
    request::{invalid, misconfigured},
    vertex,
};

/// The URL of the attempt; see `docs/providers.md` ("URL rules").
pub(crate) fn url(
    d: &Deployment,
    info: &ProviderInfo,
    endpoint: Endpoint,
    route: Route,
    stream: bool,
) -> Result<Uri, RouteError> {
    let regional = match info.flavor {
        Flavor::Bedrock => bedrock_endpoint(d)?,
        Flavor::Vertex => Some(vertex::origin(d, endpoint)?),
        _ => None,
    };
    let (base, from_deployment) = match (d.api_base.as_deref().map(str::trim), info.default_base) {
        (Some(b), _) if !b.is_empty() => (b, true),
        (_, Some(default)) => (default, false),
        _ => match regional.as_deref() {
            Some(endpoint) => (endpoint, false),
            None => return Err(misconfigured(d, format!("provider `{}` needs an `api_base`", info.name))),
        },
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
    let endpoint_path = match (endpoint, route.egress) {
        (_, Wire::Responses) => "/responses",
        (Endpoint::Embedding, _) => "/embeddings",
        (Endpoint::Completion, _) => "/completions",
        _ => "/chat/completions",
    };
    match info.flavor {
        Flavor::Azure if route.egress == Wire::Responses => {
            // Azure's Responses API is per resource, not per deployment: the deployment name
            // goes in the body's `model`.
            if let Some(stripped) = path.strip_suffix("/openai") {
                path = stripped.to_owned();
            }
            path.push_str("/openai/responses");
            let version = d.api_version.as_deref().unwrap_or(AZURE_RESPONSES_API_VERSION);
            query.push(format!("api-version={}", encode_segment(version)));
        }
        Flavor::Azure => {
            if let Some(stripped) = path.strip_suffix("/openai") {
                path = stripped.to_owned();
            }
            let name = deployment_name(d)?;
            path = format!("{path}/openai/deployments/{}{endpoint_path}", encode_segment(name));
            let version = d.api_version.as_deref().unwrap_or(AZURE_DEFAULT_API_VERSION);
            query.push(format!("api-version={}", encode_segment(version)));
        }
        Flavor::Anthropic => {
            // LiteLLM appends `/v1/messages` to any base not ending in it; a base ending in
            // `/v1` (as OpenAI-style bases do) gets `/messages` only.
            if !path.ends_with("/v1/messages") {
                path.push_str(if path.ends_with("/v1") { "/messages" } else { "/v1/messages" });
            }
            if endpoint == Endpoint::CountTokens {
                path.push_str("/count_tokens");
            }
        }
        Flavor::Gemini => {
            // `{base}/v1beta/models/{model}:{method}`; a base that names a version keeps it.
            if !(path.ends_with("/v1beta") || path.ends_with("/v1")) {
                path.push_str("/v1beta");
            }
            let method = match (endpoint, stream) {
                (Endpoint::Embedding, _) => "batchEmbedContents",
                (_, true) => "streamGenerateContent",
                _ => "generateContent",
            };
            let model = catalog::upstream_model(&d.model);
            let model = model.strip_prefix("models/").unwrap_or(model);
            path = format!("{path}/models/{}:{method}", encode_segment(model));
            if stream && endpoint != Endpoint::Embedding {
                query.push("alt=sse".to_owned());
            }
        }
        Flavor::Bedrock => {
            // `/model/{modelId}/converse(-stream)`, `/model/{modelId}/invoke` for embeddings; the
            // id (an inference profile or an ARN too) is one percent-encoded segment.
            let id = bedrock_model_id(&d.model);
            let action = match (endpoint, stream) {
                (Endpoint::Embedding, _) => "invoke",
                (_, true) => "converse-stream",
                _ => "converse",
            };
            path = format!("{path}/model/{}/{action}", encode_segment(id));
        }
        Flavor::Vertex => {
            let (vertex_path, vertex_query) = vertex::path(d, &path, route.egress, endpoint, stream)?;
            path = vertex_path;
            query.extend(vertex_query.map(str::to_owned));
        }
        Flavor::Cohere => {
            if !path.ends_with("/v2") {
                path.push_str("/v2");
            }
            path.push_str(if endpoint == Endpoint::Embedding { "/embed" } else { "/chat" });
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

/// The Bedrock model id of a `bedrock/<modelId>` (or `bedrock/converse/<modelId>`) model.
pub(crate) fn bedrock_model_id(model: &str) -> &str {
    let id = catalog::upstream_model(model);
    id.strip_prefix("converse/").unwrap_or(id)
}

/// A Bedrock deployment's endpoint when it has no `api_base`: `aws_bedrock_runtime_endpoint`,
/// else `https://bedrock-runtime.{region}.amazonaws.com` from its region.
fn bedrock_endpoint(d: &Deployment) -> Result<Option<String>, RouteError> {
    let param = |k: &str| d.params.get(k).and_then(serde_json::Value::as_str).map(str::trim).filter(|s| !s.is_empty());
    if let Some(endpoint) = param("aws_bedrock_runtime_endpoint") {
        return Ok(Some(endpoint.to_owned()));
    }
    let region = param("aws_region_name")
        .map(str::to_owned)
        .or_else(|| std::env::var("AWS_REGION").ok())
        .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok())
        .filter(|r| !r.trim().is_empty());
    match region {
        Some(r) if r.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') => {
            Ok(Some(format!("https://bedrock-runtime.{r}.amazonaws.com")))
        }
        Some(r) => Err(misconfigured(d, format!("`aws_region_name` `{r}` is not a region name"))),
        None => Err(misconfigured(d, "a Bedrock deployment needs `aws_region_name` (or AWS_REGION)")),
    }
}

/// The Azure deployment name of `d`, which becomes one path segment of the URL. With a wildcard
/// group (`azure/*`) the client chose it, so a name that is empty or holds a dot segment (`.`,
/// `..`, also percent-encoded or between `/` or `\`) is refused as an invalid request:
/// percent-encoding does not stop every server or proxy from resolving it. Nothing is sent and
/// the deployment is not at fault. Any other name is percent-encoded into the segment.
fn deployment_name(d: &Deployment) -> Result<&str, RouteError> {
    let name = catalog::upstream_model(&d.model);
    let dot_segment = |piece: &str| matches!(&*percent_decode_str(piece).decode_utf8_lossy(), "." | "..");
    if name.is_empty() || name.split(['/', '\\']).any(dot_segment) {
        return Err(invalid(format!(
            "model `{}`: `{name}` cannot be an Azure deployment name (empty, or a `.` or `..` path segment)",
            d.model
        )));
    }
    Ok(name)
}

fn has_path(base: &str) -> bool {
    base.parse::<Uri>().is_ok_and(|u| !u.path().trim_end_matches('/').is_empty())
}

/// Percent-encodes what may not appear raw in a path segment or a query value.
/// Unreserved characters (RFC 3986) stay; everything else is percent-encoded.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

pub(crate) fn encode_segment(s: &str) -> String {
    utf8_percent_encode(s, SEGMENT).to_string()
}

#[cfg(test)]
mod tests {
    use switchyard_layers::Outcome;

    use super::*;

    fn uri_of(d: Deployment, endpoint: Endpoint) -> String {
        let info = catalog::lookup(d.provider()).expect("a supported provider");
        url(&d, info, endpoint, Route::of(info, &d.model, endpoint), false).expect("a URL").to_string()
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
    fn responses_go_to_the_responses_api_of_openai_and_azure_only() {
        let responses = Endpoint::Responses;
        assert_eq!(uri_of(dep("gpt-4o", None), responses), "https://api.openai.com/v1/responses");
        assert_eq!(uri_of(dep("openai/x", Some("http://h:8000")), responses), "http://h:8000/v1/responses");
        let azure = Deployment::builder("g", "azure/gpt-4o").api_base("https://eu.openai.azure.com").build();
        assert_eq!(
            uri_of(azure.expect("valid"), responses),
            "https://eu.openai.azure.com/openai/responses?api-version=2025-04-01-preview"
        );
        // Served by chat completions only: translated.
        assert_eq!(uri_of(dep("hosted_vllm/m", Some("http://v:8000")), responses), "http://v:8000/v1/chat/completions");
        assert_eq!(uri_of(dep("anthropic/claude", None), responses), "https://api.anthropic.com/v1/messages");
        assert_eq!(uri_of(dep("anthropic/claude", None), Endpoint::Messages), "https://api.anthropic.com/v1/messages");
        assert_eq!(uri_of(dep("openai/x", Some("http://h")), Endpoint::Messages), "http://h/v1/chat/completions");
    }

    #[test]
    fn gemini_and_cohere_urls() {
        let gemini = dep("gemini/gemini-2.5-flash", None);
        let info = catalog::lookup("gemini").expect("known");
        let route = Route::of(info, &gemini.model, Endpoint::Chat);
        let at = |endpoint, stream| url(&gemini, info, endpoint, route, stream).expect("a URL").to_string();
        let base = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash";
        assert_eq!(at(Endpoint::Chat, false), format!("{base}:generateContent"));
        assert_eq!(at(Endpoint::Chat, true), format!("{base}:streamGenerateContent?alt=sse"));
        assert_eq!(at(Endpoint::Embedding, false), format!("{base}:batchEmbedContents"));
        assert_eq!(
            uri_of(dep("gemini/m", Some("http://h:9/v1beta")), Endpoint::Chat),
            "http://h:9/v1beta/models/m:generateContent"
        );
        assert_eq!(uri_of(dep("cohere/command-a-03-2025", None), Endpoint::Chat), "https://api.cohere.com/v2/chat");
        assert_eq!(uri_of(dep("cohere/embed-v4.0", Some("http://h:9")), Endpoint::Embedding), "http://h:9/v2/embed");
        assert_eq!(uri_of(dep("cohere_chat/c", Some("http://h/v2")), Endpoint::Messages), "http://h/v2/chat");
    }

    #[test]
    fn misconfigurations_are_not_found_on_the_deployment() {
        let info = catalog::lookup("hosted_vllm").expect("known");
        let err = url(&dep("hosted_vllm/m", None), info, Endpoint::Chat, Route::of(info, "m", Endpoint::Chat), false)
            .expect_err("needs api_base");
        assert_eq!(err.outcome(), Some(Outcome::NotFound));
        assert!(err.to_string().contains("needs an `api_base`"));
        // The builder refuses such a base; the fields are public, so the provider checks again.
        let mut ftp = dep("openai/m", None);
        ftp.api_base = Some("ftp://h".to_owned());
        let err = url(&ftp, info, Endpoint::Chat, Route::of(info, "m", Endpoint::Chat), false).expect_err("bad scheme");
        assert!(err.to_string().contains("ftp"));
    }
}
