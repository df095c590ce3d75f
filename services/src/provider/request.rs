//! Building the upstream request of one attempt: URL, headers and body, from the selected
//! deployment alone (so one deployment's credentials never reach another's host).

use bytes::Bytes;
use http::{HeaderMap, Method, Uri, header};
use http_body_util::Full;
use serde_json::{Map, Value};
use switchyard_layers::{
    Deployment, Outcome, RequestFacts, RouteError, RouteErrorKind,
    ctx::{Endpoint, ResponseOp},
};

use switchyard_dialects::{anthropic, bedrock, chat, cohere, gemini, responses};

use super::{
    catalog::{self, Flavor, ProviderInfo, Route, Wire},
    headers::headers,
    members::Members,
    url::{encode_segment, url},
    vertex,
};

/// Request-body keys removed before the body goes upstream: the ones that steer Switchyard (or
/// LiteLLM's router) and mean nothing to a provider (the per-request timeouts, retry and
/// cooldown overrides, and LiteLLM's testing hooks among them), and
/// LiteLLM's client-side credential keys
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
    "timeout",
    "request_timeout",
    "stream_timeout",
    "cooldown_time",
    "model_group_retry_policy",
    "specific_deployment",
    "mock_response",
    "mock_timeout",
    "mock_testing_fallbacks",
    "mock_testing_context_fallbacks",
    "mock_testing_content_policy_fallbacks",
    "mock_testing_rate_limit_error",
    // LiteLLM's per-request cache controls and switch, read by the gateway's response cache.
    "cache",
    "caching",
    "api_key",
    "api_base",
    "base_url",
    "api_version",
];

/// The `metadata` entries Switchyard reads (tags, the session, and the per-request overrides
/// LiteLLM also takes from `metadata`): removed from a passed-through `metadata` (the whole
/// `metadata` member is removed from a translated body).
pub const METADATA_ROUTING_KEYS: &[&str] = &[
    "tags",
    "session_id",
    "num_retries",
    "timeout",
    "request_timeout",
    "stream_timeout",
    "cooldown_time",
    "model_group_retry_policy",
];

/// Inbound headers forwarded upstream, each with its first value only; every other inbound
/// header is dropped, the client's `authorization` / `api-key` included. `content-type` is
/// always set to `application/json`.
pub const FORWARDED_HEADERS: &[&str] = &["accept", "user-agent", "x-request-id", "traceparent", "tracestate"];

/// Deployment parameters (`litellm_params`) that configure the call rather than the request
/// body: `extra_headers` (a JSON object of strings, sent as headers), `organization` (sent as
/// `OpenAI-Organization`), `azure_ad_token` (Azure: `Authorization: Bearer` when the deployment
/// has no key), Bedrock's AWS credentials, region and endpoint (`aws_*`: signing and URL), Cohere
/// embeddings' `input_type`, Vertex AI's project, locations and credentials (`vertex_*`: URL and
/// access tokens), and LiteLLM client settings that have no meaning here. They are never merged
/// into the body.
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
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "aws_region_name",
    "aws_bedrock_runtime_endpoint",
    "input_type",
    "vertex_project",
    "vertex_location",
    "vertex_count_tokens_location",
    "vertex_credentials",
    "mock_response",
];

/// Azure `api-version` when the deployment names none.
pub const AZURE_DEFAULT_API_VERSION: &str = "2024-10-21";

/// Azure `api-version` of a Responses API call when the deployment names none (the Responses
/// API needs a newer version than chat completions).
pub const AZURE_RESPONSES_API_VERSION: &str = "2025-04-01-preview";

/// Headers an `extra_headers` entry may not set: they belong to the connection (the config
/// loader refuses them too).
pub const CONNECTION_HEADERS: [&str; 8] =
    ["host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer"];

/// The upstream request of one attempt, and what reading its answer needs to know.
pub(crate) struct Built {
    pub(crate) request: http::Request<Full<Bytes>>,
    pub(crate) route: Route,
    /// A chat client asked for the usage chunk of a stream (`stream_options.include_usage`).
    pub(crate) include_usage: bool,
    /// The request still needs its OAuth2 access token (Vertex AI): `vertex::authorize`.
    pub(crate) oauth: bool,
}

/// The upstream request for `deployment`, from the client's headers and JSON body.
pub(crate) fn build(
    deployment: &Deployment,
    facts: &RequestFacts,
    drop_previous_response: bool,
    inbound: &HeaderMap,
    body: &[u8],
) -> Result<Built, RouteError> {
    let provider = deployment.provider();
    let info = catalog::lookup(provider).ok_or_else(|| {
        misconfigured(
            deployment,
            format!("provider `{provider}` is not served natively (model `{}`)", deployment.model),
        )
    })?;
    let route = Route::of(info, &deployment.model, facts.endpoint);
    if let Endpoint::ResponseOp(op) = facts.endpoint {
        return response_op(deployment, info, facts, inbound, route, op);
    }
    let vertex = info.flavor == Flavor::Vertex;
    if vertex {
        vertex::check_model(deployment)?;
    }
    // Anthropic's `count_tokens`, Claude's and Gemini's counters on Vertex AI.
    let counter = route.egress == Wire::Anthropic || vertex && vertex::counts_tokens(&deployment.model);
    if facts.endpoint == Endpoint::CountTokens && !counter {
        return Err(invalid(format!(
            "deployment `{}` (provider `{provider}`) has no token counter; count_tokens needs an Anthropic \
             deployment or a Vertex AI one",
            deployment.id
        )));
    }
    let chat_only = route.egress == Wire::Anthropic && facts.endpoint != Endpoint::CountTokens;
    let no_completions =
        matches!(route.egress, Wire::Gemini | Wire::Cohere | Wire::Bedrock) && facts.endpoint == Endpoint::Completion;
    if (chat_only && !facts.endpoint.is_conversation()) || no_completions {
        return Err(invalid(format!(
            "deployment `{}` (provider `{provider}`) does not serve {}",
            deployment.id,
            match facts.endpoint {
                Endpoint::Embedding => "embeddings",
                _ => "legacy completions",
            }
        )));
    }
    let uri = url(deployment, info, facts.endpoint, route, facts.stream && facts.endpoint != Endpoint::Embedding)?;
    let headers = headers(deployment, info, inbound, route)?;
    let include_usage = route.ingress == Wire::OpenAi && facts.stream && asks_usage(body);
    let body = if vertex && facts.endpoint == Endpoint::Embedding {
        // Vertex AI embeds with its own `:predict` API, not Gemini's `batchEmbedContents`.
        vertex::predict_body(deployment, body)?
    } else if drop_previous_response {
        // Routed as a new conversation: the deployment does not hold the one named.
        let mut members = Members::parse(body).map_err(|e| invalid(e.0))?;
        members.remove("previous_response_id");
        body_for(deployment, facts, route, &members.to_bytes())?
    } else {
        body_for(deployment, facts, route, body)?
    };
    let body = match (vertex, route.egress, facts.endpoint) {
        (true, Wire::Anthropic, Endpoint::CountTokens) => vertex::claude_count_body(&body)?,
        (true, Wire::Anthropic, _) => vertex::claude_body(&body)?,
        (true, Wire::Gemini, Endpoint::CountTokens) => vertex::gemini_count_body(&body)?,
        _ => body,
    };
    let mut req = http::Request::new(Full::new(body.clone()));
    *req.method_mut() = Method::POST;
    *req.uri_mut() = uri;
    *req.headers_mut() = headers;
    if route.egress == Wire::Bedrock {
        sign_bedrock(deployment, &mut req, &body)?;
    }
    Ok(Built { request: req, route, include_usage, oauth: vertex })
}

/// Whether `/v1/messages/count_tokens` can be asked of a deployment of provider model `model`
/// (`litellm_params.model`): an Anthropic deployment (`/v1/messages/count_tokens`), or a Vertex
/// AI one of Claude (`count-tokens:rawPredict`) or a Gemini model (`:countTokens`).
///
/// ```
/// use switchyard_services::provider::has_token_counter;
///
/// assert!(has_token_counter("anthropic/claude-sonnet-4-5"));
/// assert!(!has_token_counter("openai/gpt-4o"));
/// assert!(!has_token_counter("gemini/gemini-2.5-flash"));
/// ```
pub fn has_token_counter(model: &str) -> bool {
    match catalog::lookup(catalog::provider_of(model)).map(|info| info.flavor) {
        Some(Flavor::Anthropic) => true,
        Some(Flavor::Vertex) => vertex::counts_tokens(model),
        _ => false,
    }
}

/// Signs a Bedrock attempt with SigV4 (or gives it its bearer API key), with the deployment's
/// credentials, else the environment's.
#[cfg(feature = "bedrock")]
fn sign_bedrock(d: &Deployment, req: &mut http::Request<Full<Bytes>>, body: &[u8]) -> Result<(), RouteError> {
    use super::sigv4;
    let auth = sigv4::AwsAuth::of(d)
        .ok_or_else(|| misconfigured(d, "no AWS credentials: set aws_access_key_id and aws_secret_access_key"))?;
    let region = sigv4::region(d).unwrap_or_else(|| "us-east-1".to_owned());
    // The signature covers `host`: set it as the connection will send it.
    if let Some(authority) = req.uri().authority().map(|a| a.as_str().to_owned()) {
        let host = http::HeaderValue::from_str(&authority).map_err(|_| misconfigured(d, "the endpoint's host"))?;
        req.headers_mut().insert(header::HOST, host);
    }
    sigv4::sign_request(req, body, &auth, &region, "bedrock", std::time::SystemTime::now())
        .map_err(|e| misconfigured(d, e))
}

/// Without the `bedrock` feature no deployment is a Bedrock one (the catalog does not list it).
#[cfg(not(feature = "bedrock"))]
fn sign_bedrock(d: &Deployment, _: &mut http::Request<Full<Bytes>>, _: &[u8]) -> Result<(), RouteError> {
    Err(misconfigured(d, "Bedrock needs the `bedrock` feature"))
}

/// `GET` / `DELETE {base}/responses/{id}` or `POST {base}/responses/{id}/cancel` at a deployment
/// that serves the Responses API.
fn response_op(
    d: &Deployment,
    info: &ProviderInfo,
    facts: &RequestFacts,
    inbound: &HeaderMap,
    route: Route,
    op: ResponseOp,
) -> Result<Built, RouteError> {
    if route.egress != Wire::Responses {
        return Err(invalid(format!(
            "deployment `{}` (provider `{}`) does not serve the Responses API; its responses are not stored",
            d.id,
            d.provider()
        )));
    }
    let id = facts.previous_response.as_deref().filter(|id| !id.is_empty()).ok_or_else(|| invalid("no response id"))?;
    let base = url(d, info, Endpoint::Responses, route, false)?;
    let (path, query) = match base.path_and_query() {
        Some(pq) => (pq.path().to_owned(), pq.query().map(str::to_owned)),
        None => ("/responses".to_owned(), None),
    };
    let (method, suffix) = match op {
        ResponseOp::Get => (Method::GET, ""),
        ResponseOp::Delete => (Method::DELETE, ""),
        _ => (Method::POST, "/cancel"),
    };
    let mut path = format!("{path}/{}{suffix}", encode_segment(id));
    if let Some(q) = query {
        path = format!("{path}?{q}");
    }
    let mut parts = base.into_parts();
    parts.path_and_query =
        Some(path.parse().map_err(|e| invalid(format!("response id `{id}` cannot be part of a URL: {e}")))?);
    let uri = Uri::from_parts(parts).map_err(|e| invalid(format!("cannot build the upstream URL: {e}")))?;
    let mut headers = headers(d, info, inbound, route)?;
    let body = if method == Method::POST { Bytes::from_static(b"{}") } else { Bytes::new() };
    if body.is_empty() {
        headers.remove(header::CONTENT_TYPE);
    }
    let mut req = http::Request::new(Full::new(body));
    *req.method_mut() = method;
    *req.uri_mut() = uri;
    *req.headers_mut() = headers;
    Ok(Built { request: req, route, include_usage: false, oauth: false })
}

/// Whether a chat body sets `stream_options.include_usage: true`.
pub(crate) fn asks_usage(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Options {
        #[serde(default)]
        include_usage: Option<bool>,
    }
    Members::parse(body)
        .ok()
        .and_then(|m| m.get("stream_options").and_then(|raw| serde_json::from_str::<Options>(raw.get()).ok()))
        .and_then(|o| o.include_usage)
        .unwrap_or(false)
}

/// The client's JSON body with the deployment's parameters as defaults (the request wins) and the
/// routing keys removed, edited member by member (no tree is built: a huge member of any kind
/// costs its bytes, nothing more).
pub(crate) fn merged_body<'a>(d: &Deployment, body: &'a [u8]) -> Result<Members<'a>, RouteError> {
    let mut members = Members::parse(body).map_err(|e| invalid(e.0))?;
    for (key, value) in &d.params {
        if !CLIENT_PARAMS.contains(&key.as_str()) && !members.contains(key) {
            let value = serde_json::to_vec(value).map_err(|e| invalid(format!("cannot encode `{key}`: {e}")))?;
            members.set(key, value);
        }
    }
    for key in ROUTING_KEYS {
        members.remove(key);
    }
    Ok(members)
}

/// `max_tokens` sent to Anthropic when the request names none: the model's largest output from
/// the catalog, else this (LiteLLM's `DEFAULT_ANTHROPIC_CHAT_MAX_TOKENS`).
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 4096;

/// The client's chat completion (the hub) translated to an Anthropic Messages request
/// (`switchyard_dialects::anthropic::request_from_chat`): a field that cannot be carried is a
/// 400 naming it, and the deployment is not at fault.
fn anthropic_body(d: &Deployment, facts: &RequestFacts, body: &[u8]) -> Result<Bytes, RouteError> {
    let request = hub_request(d, facts, body)?;
    let model = catalog::upstream_model(&d.model);
    // The deployment's own `max_output_tokens` (its `model_info`, else the catalog's).
    let default_max_tokens = d.max_output_tokens.unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS);
    let mut options = anthropic::RequestOptions::new(model, default_max_tokens);
    options.drop_unsupported = drop_params(d);
    let translated = anthropic::request_from_chat(request, &options).map_err(|e| cannot_take(d, "anthropic", &e))?;
    encode(&translated)
}

/// A chat completion body (the hub) as typed, with the deployment's parameters as defaults, the
/// routing keys removed and `stream` as the facts say, for translation to another dialect.
fn hub_request(d: &Deployment, facts: &RequestFacts, body: &[u8]) -> Result<chat::ChatRequest, RouteError> {
    let mut members = merged_body(d, body)?;
    members.set("stream", bool_json(facts.stream));
    members.remove("stream_options");
    serde_json::from_slice(&members.to_bytes())
        .map_err(|e| invalid(format!("request body is not a chat completion request: {e}")))
}

/// LiteLLM's `drop_params` on the deployment: drop what the dialect cannot take instead of
/// refusing it.
pub(crate) fn drop_params(d: &Deployment) -> bool {
    d.params.get("drop_params").and_then(Value::as_bool).unwrap_or(false)
}

/// The hub request as a Gemini `generateContent` body, or an embeddings request as
/// `batchEmbedContents`.
fn gemini_body(d: &Deployment, facts: &RequestFacts, body: &[u8]) -> Result<Bytes, RouteError> {
    let model = catalog::upstream_model(&d.model);
    if facts.endpoint == Endpoint::Embedding {
        let input = embedding_input(body)?;
        let request = gemini::embed_request_from_openai(&input, model).map_err(|e| cannot_take(d, "gemini", &e))?;
        return encode(&request);
    }
    let request = hub_request(d, facts, body)?;
    let options = gemini::RequestOptions::new(model).drop_unsupported(drop_params(d));
    encode(&gemini::request_from_chat(request, &options).map_err(|e| cannot_take(d, "gemini", &e))?)
}

/// The hub request as a Cohere v2 chat body, or an embeddings request as a v2 embed body.
fn cohere_body(d: &Deployment, facts: &RequestFacts, body: &[u8]) -> Result<Bytes, RouteError> {
    let model = catalog::upstream_model(&d.model);
    if facts.endpoint == Endpoint::Embedding {
        let input = embedding_input(body)?;
        let input_type = d.params.get("input_type").and_then(Value::as_str);
        let request =
            cohere::embed_request_from_openai(&input, model, input_type).map_err(|e| cannot_take(d, "cohere", &e))?;
        return encode(&request);
    }
    let request = hub_request(d, facts, body)?;
    let options = cohere::RequestOptions::new(model).drop_unsupported(drop_params(d));
    encode(&cohere::request_from_chat(request, &options).map_err(|e| cannot_take(d, "cohere", &e))?)
}

/// The hub request as a Bedrock Converse body, or an embeddings request as the `InvokeModel` body
/// of the model's family (Titan takes one input per call: more is refused naming `input`).
fn bedrock_body(d: &Deployment, facts: &RequestFacts, body: &[u8]) -> Result<Bytes, RouteError> {
    let id = super::url::bedrock_model_id(&d.model);
    if facts.endpoint == Endpoint::Embedding {
        let input = embedding_input(body)?;
        let mut bodies = bedrock::embed_request(id, &input).map_err(|e| cannot_take(d, "bedrock", &e))?;
        if bodies.len() != 1 {
            let e =
                switchyard_dialects::TranslateError::new("input", "this Bedrock model embeds one input per request");
            return Err(cannot_take(d, "bedrock", &e));
        }
        return encode(&bodies.remove(0));
    }
    let request = hub_request(d, facts, body)?;
    let options = bedrock::RequestOptions::new(id).drop_unsupported(drop_params(d));
    encode(&bedrock::request_from_chat(request, &options).map_err(|e| cannot_take(d, "bedrock", &e))?)
}

/// The `input` of an OpenAI embeddings request.
fn embedding_input(body: &[u8]) -> Result<Value, RouteError> {
    let members = Members::parse(body).map_err(|e| invalid(e.0))?;
    let raw = members.get("input").ok_or_else(|| invalid("an embeddings request needs `input`"))?;
    serde_json::from_str(raw.get()).map_err(|e| invalid(format!("`input` is not valid JSON: {e}")))
}

/// The client's JSON body with the deployment's model, its parameters as defaults, routing keys
/// removed, and `stream` / `stream_options.include_usage` set for streams.
fn rewrite_body(d: &Deployment, facts: &RequestFacts, body: &[u8]) -> Result<Bytes, RouteError> {
    let mut members = merged_body(d, body)?;
    // For Azure the model is the deployment name, which the URL carries too.
    members.set_str("model", catalog::upstream_model(&d.model));
    if facts.endpoint != Endpoint::Embedding {
        if facts.stream {
            members.set("stream", bool_json(true));
            let mut options = match members.get("stream_options") {
                Some(raw) => serde_json::from_str::<Map<String, Value>>(raw.get()).unwrap_or_default(),
                None => Map::new(),
            };
            options.insert("include_usage".to_owned(), Value::Bool(true));
            members.set("stream_options", serde_json::to_vec(&options).unwrap_or_else(|_| b"{}".to_vec()));
        } else if members.get("stream").is_some_and(|s| s.get() != "false") {
            // The facts decide how the answer is read; a body saying otherwise would be misread.
            members.set("stream", bool_json(false));
            members.remove("stream_options");
        }
    }
    Ok(Bytes::from(members.to_bytes()))
}

/// A request in the deployment's own dialect (Anthropic Messages to Anthropic, Responses to
/// OpenAI): byte-faithful except `model` (the deployment's), the routing keys Switchyard reads
/// (removed: the upstream would refuse them) and, inside `metadata`, the routing entries
/// ([`METADATA_ROUTING_KEYS`]). Deployment parameters are not merged: they are named in the chat
/// completions dialect.
fn passthrough_members<'a>(d: &Deployment, body: &'a [u8]) -> Result<Members<'a>, RouteError> {
    let mut members = Members::parse(body).map_err(|e| invalid(e.0))?;
    members.set_str("model", catalog::upstream_model(&d.model));
    for key in ROUTING_KEYS.iter().filter(|k| **k != "metadata") {
        members.remove(key);
    }
    if let Some(raw) = members.get("metadata")
        && let Ok(Value::Object(mut metadata)) = serde_json::from_str::<Value>(raw.get())
        && METADATA_ROUTING_KEYS.iter().any(|k| metadata.contains_key(*k))
    {
        for key in METADATA_ROUTING_KEYS {
            metadata.remove(*key);
        }
        if metadata.is_empty() {
            members.remove("metadata");
        } else {
            members.set("metadata", serde_json::to_vec(&metadata).unwrap_or_else(|_| b"{}".to_vec()));
        }
    }
    Ok(members)
}

/// The body of an attempt, by the client's dialect and the deployment's.
fn body_for(d: &Deployment, facts: &RequestFacts, wire: Route, body: &[u8]) -> Result<Bytes, RouteError> {
    match (wire.ingress, wire.egress) {
        (Wire::OpenAi, Wire::OpenAi) => rewrite_body(d, facts, body),
        (Wire::OpenAi, Wire::Anthropic) => anthropic_body(d, facts, body),
        (Wire::OpenAi, Wire::Gemini) => gemini_body(d, facts, body),
        (Wire::OpenAi, Wire::Cohere) => cohere_body(d, facts, body),
        (Wire::OpenAi, Wire::Bedrock) => bedrock_body(d, facts, body),
        (Wire::Anthropic, Wire::Anthropic) | (Wire::Responses, Wire::Responses) => {
            let mut members = passthrough_members(d, body)?;
            if facts.endpoint == Endpoint::CountTokens {
                // The counter takes the request's content, not how to answer it.
                for key in ["max_tokens", "stream", "temperature", "top_p", "top_k", "stop_sequences", "metadata"] {
                    members.remove(key);
                }
            }
            Ok(Bytes::from(members.to_bytes()))
        }
        (Wire::Anthropic, egress) => {
            let counted;
            let body = if facts.endpoint == Endpoint::CountTokens {
                // A token count names no `max_tokens`, which a Messages request needs; it is not
                // sent (the counter takes the content only).
                let mut members = Members::parse(body).map_err(|e| invalid(e.0))?;
                if !members.contains("max_tokens") {
                    members.set("max_tokens", b"1".to_vec());
                }
                counted = members.to_bytes();
                &counted[..]
            } else {
                body
            };
            let request: anthropic::MessagesRequest = serde_json::from_slice(body)
                .map_err(|e| invalid(format!("request body is not an Anthropic Messages request: {e}")))?;
            let hub = anthropic::chat_from_request(request).map_err(|e| cannot_take(d, d.provider(), &e))?;
            hub_to(d, facts, egress, &hub)
        }
        (Wire::Responses, egress) => {
            let request: responses::ResponsesRequest = serde_json::from_slice(body)
                .map_err(|e| invalid(format!("request body is not a Responses API request: {e}")))?;
            let hub = responses::chat_from_request(request).map_err(|e| cannot_take(d, d.provider(), &e))?;
            hub_to(d, facts, egress, &hub)
        }
        (Wire::OpenAi, Wire::Responses) => Err(invalid("a chat request cannot go to the Responses API")),
        // No client speaks these dialects to the gateway.
        (Wire::Gemini | Wire::Cohere | Wire::Bedrock, _) => Err(invalid("no front door speaks this dialect")),
    }
}

/// A request translated to the hub, sent on in the deployment's dialect.
fn hub_to(d: &Deployment, facts: &RequestFacts, egress: Wire, hub: &chat::ChatRequest) -> Result<Bytes, RouteError> {
    let bytes = encode(hub)?;
    match egress {
        Wire::Anthropic => anthropic_body(d, facts, &bytes),
        Wire::Gemini => gemini_body(d, facts, &bytes),
        Wire::Cohere => cohere_body(d, facts, &bytes),
        Wire::Bedrock => bedrock_body(d, facts, &bytes),
        _ => rewrite_body(d, facts, &bytes),
    }
}

fn encode<T: serde::Serialize>(value: &T) -> Result<Bytes, RouteError> {
    serde_json::to_vec(value).map(Bytes::from).map_err(|e| invalid(format!("cannot encode the request body: {e}")))
}

fn bool_json(b: bool) -> Vec<u8> {
    if b { b"true".to_vec() } else { b"false".to_vec() }
}

/// A request the deployment's dialect cannot carry: a 400 naming the field; the deployment is
/// not at fault.
pub(crate) fn cannot_take(d: &Deployment, provider: &str, e: &switchyard_dialects::TranslateError) -> RouteError {
    invalid(format!("deployment `{}` (provider `{provider}`) cannot take this request: {e}", d.id))
}

/// A deployment that cannot be called as configured: the deployment is at fault (not the
/// caller), so the attempt fails like a missing endpoint (`Outcome::NotFound`), which cools the
/// deployment down and lets fallbacks serve.
pub(crate) fn misconfigured(d: &Deployment, message: impl Into<String>) -> RouteError {
    let message = format!("deployment `{}` is misconfigured: {}", d.id, message.into());
    RouteError::upstream(Outcome::NotFound, d.id.clone(), message)
}

pub(crate) fn invalid(message: impl Into<String>) -> RouteError {
    RouteError::new(RouteErrorKind::InvalidRequest, message)
}
