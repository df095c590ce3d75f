//! Reading one HTTP request into a routable one: method, endpoint, content type, bounded body,
//! and the OpenAI JSON parsed once.

use std::{pin::Pin, time::Duration};

use bytes::Bytes;
use http::{HeaderMap, Method, header};
use http_body::Body;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::{Map, Value};
use switchyard_layers::{ApiKey, BoxError, RouteCtx, RouteError, RouteErrorKind, ctx::Endpoint};

use super::IngressError;
use crate::openai::{FactsError, parse_quality_tier, read_facts};

/// What the layer configured.
#[derive(Clone, Copy, Debug)]
pub(super) struct ReadConfig {
    pub(super) max_body_bytes: usize,
    pub(super) endpoint: Option<Endpoint>,
}

/// Checks the request, buffers its body and puts a [`RouteCtx`] with the request's facts into
/// its extensions (keeping every other extension and header).
pub(super) async fn read_request<B>(req: http::Request<B>, config: ReadConfig) -> Result<http::Request<Bytes>, BoxError>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let (mut parts, body) = req.into_parts();
    let mut body = std::pin::pin!(body);
    let endpoint = match check_head(&parts, config) {
        Ok(endpoint) => endpoint,
        Err(e) => {
            drain(body.as_mut()).await;
            return Err(e.into());
        }
    };
    let azure_deployment = azure_deployment(parts.uri.path()).map(str::to_owned);
    let mut body = read_body(body, config.max_body_bytes).await?;

    let mut read = read_facts(&body, endpoint);
    // An Azure-style request names its deployment in the path and may leave `model` out; the
    // name becomes the body's `model`, so every layer below sees a standard body.
    if matches!(read, Err(FactsError::Invalid(_)))
        && let Some(completed) = azure_deployment.as_deref().and_then(|name| with_model(&body, name))
    {
        body = completed;
        read = read_facts(&body, endpoint);
    }
    let (model, facts) = read.map_err(|e| match e {
        FactsError::ClientCredential(field) => BoxError::from(IngressError::client_credentials(field)),
        FactsError::Invalid(err) => err.into(),
    })?;
    let mut facts = facts.with_body(body.clone());
    facts.prompt_prefix = super::prefix::prompt_prefix(&body);
    if facts.session.is_none() {
        facts.session = header_text(&parts.headers, SESSION_HEADER).map(str::to_owned);
    }
    facts.caller = caller_key(&parts.headers).map(ApiKey::new);
    if let Some(value) = parts.headers.get(MIN_QUALITY_TIER_HEADER) {
        let tier = value.to_str().ok().and_then(parse_quality_tier).ok_or_else(|| {
            RouteError::new(
                RouteErrorKind::InvalidRequest,
                format!("the `{MIN_QUALITY_TIER_HEADER}` header must be a non-negative integer"),
            )
        })?;
        // Both given: both are minimums, so the larger holds.
        facts.min_quality_tier = Some(facts.min_quality_tier.map_or(tier, |t| t.max(tier)));
    }
    parts.extensions.insert(RouteCtx::with_facts(model, facts));
    Ok(http::Request::from_parts(parts, body))
}

/// The header a client may name its session with when the body has no `metadata.session_id`.
pub(super) const SESSION_HEADER: &str = "x-session-id";

/// The header a client may give its minimum quality tier with (beside `metadata.min_quality_tier`;
/// the larger holds), read by the quality pre-router.
pub const MIN_QUALITY_TIER_HEADER: &str = "x-switchyard-min-quality-tier";

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok().map(str::trim).filter(|v| !v.is_empty())
}

/// The caller's own key (`Authorization: Bearer`, `api-key`, `x-api-key`), for key affinity only:
/// it is never forwarded upstream and never logged (`ApiKey` masks it).
fn caller_key(headers: &HeaderMap) -> Option<&str> {
    header_text(headers, "authorization")
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .or_else(|| header_text(headers, "api-key"))
        .or_else(|| header_text(headers, "x-api-key"))
}

/// The endpoint named by the end of `path`, so any prefix (`/v1`, `/openai/deployments/{name}`,
/// a mount point) works.
pub(super) fn endpoint_of(path: &str) -> Option<Endpoint> {
    let path = path.trim_end_matches('/');
    if path.ends_with("/v1/messages") || path == "/messages" {
        Some(Endpoint::Messages)
    } else if path.ends_with("/v1/responses") || path == "/responses" {
        Some(Endpoint::Responses)
    } else if path.ends_with("/chat/completions") {
        Some(Endpoint::Chat)
    } else if path.ends_with("/embeddings") {
        Some(Endpoint::Embedding)
    } else if path.ends_with("/completions") {
        Some(Endpoint::Completion)
    } else {
        None
    }
}

/// `{name}` in an Azure OpenAI path, `/openai/deployments/{name}/chat/completions`.
pub(super) fn azure_deployment(path: &str) -> Option<&str> {
    let (_, rest) = path.split_once("/openai/deployments/")?;
    rest.split('/').next().filter(|name| !name.is_empty())
}

/// JSON only: `application/json` (parameters allowed) or any `application/*+json`. A missing
/// content type, `text/plain` and form encodings are refused (415): they are what a web page can
/// send cross-origin without a preflight, and every OpenAI and Anthropic SDK sends
/// `application/json`.
fn check_content_type(headers: &HeaderMap) -> Result<(), IngressError> {
    if is_json_content_type(headers) {
        return Ok(());
    }
    let text = headers.get(header::CONTENT_TYPE).map(|v| String::from_utf8_lossy(v.as_bytes())).unwrap_or_default();
    Err(IngressError::unsupported_media_type(&text))
}

/// Whether `headers` declare a JSON body: `Content-Type: application/json` (any parameters, any
/// case) or `application/<anything>+json`.
///
/// ```
/// use http::{HeaderMap, HeaderValue, header::CONTENT_TYPE};
/// use switchyard_services::ingress::is_json_content_type;
///
/// let mut headers = HeaderMap::new();
/// assert!(!is_json_content_type(&headers));
/// headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json; charset=utf-8"));
/// assert!(is_json_content_type(&headers));
/// headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
/// assert!(!is_json_content_type(&headers));
/// ```
pub fn is_json_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return false;
    };
    let Ok(text) = value.to_str() else {
        return false;
    };
    let essence = text.split(';').next().unwrap_or_default().trim();
    match essence.split_once('/') {
        Some((kind, sub)) => {
            let sub = sub.to_ascii_lowercase();
            kind.eq_ignore_ascii_case("application") && (sub == "json" || (sub.len() > 5 && sub.ends_with("+json")))
        }
        None => false,
    }
}

/// The method, endpoint and content type, checked before the body is read.
fn check_head(parts: &http::request::Parts, config: ReadConfig) -> Result<Endpoint, IngressError> {
    if parts.method != Method::POST {
        return Err(IngressError::method_not_allowed(&parts.method));
    }
    let path = parts.uri.path();
    let endpoint = config.endpoint.or_else(|| endpoint_of(path)).ok_or_else(|| IngressError::unknown_endpoint(path))?;
    check_content_type(&parts.headers)?;
    Ok(endpoint)
}

/// Request body a refusal still reads and throws away, past what it already read, so that a
/// client still sending its body receives the answer instead of a connection reset (hyper closes
/// a connection whose request body was not read; Go's `net/http` discards up to 256 KiB the same
/// way). A larger body is refused without it: the client gets the reset.
const DRAIN_MAX_BYTES: u64 = 256 << 10;
/// Longest a refusal waits for the rest of a body it drains.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(1);

/// Reads and discards what is left of `body` when the length it still announces is within
/// [`DRAIN_MAX_BYTES`] (or unknown), for at most that many bytes and [`DRAIN_TIMEOUT`].
async fn drain<B>(mut body: Pin<&mut B>)
where
    B: Body<Data = Bytes>,
{
    if body.size_hint().lower() > DRAIN_MAX_BYTES {
        return;
    }
    let discard = async {
        let mut read = 0u64;
        while read <= DRAIN_MAX_BYTES {
            match body.as_mut().frame().await {
                Some(Ok(frame)) => read += frame.data_ref().map_or(0, |d| d.len() as u64),
                _ => return,
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, discard).await;
}

/// The whole body, refused past `limit` bytes (before reading when its length is announced).
async fn read_body<B>(mut body: Pin<&mut B>, limit: usize) -> Result<Bytes, IngressError>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let limit_bytes = u64::try_from(limit).unwrap_or(u64::MAX);
    if body.size_hint().lower() > limit_bytes {
        drain(body).await;
        return Err(IngressError::body_too_large(limit));
    }
    match Limited::new(body.as_mut(), limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<LengthLimitError>() => {
            drain(body).await;
            Err(IngressError::body_too_large(limit))
        }
        Err(e) => Err(IngressError::body_read(e)),
    }
}

/// `body` with `"model": name` added, when it is a JSON object without a `model` key.
fn with_model(body: &[u8], name: &str) -> Option<Bytes> {
    let mut object: Map<String, Value> = serde_json::from_slice(body).ok()?;
    if object.contains_key("model") {
        return None;
    }
    object.insert("model".to_owned(), Value::String(name.to_owned()));
    serde_json::to_vec(&object).ok().map(Bytes::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_come_from_the_end_of_the_path() {
        assert_eq!(endpoint_of("/v1/chat/completions"), Some(Endpoint::Chat));
        assert_eq!(endpoint_of("/chat/completions/"), Some(Endpoint::Chat));
        assert_eq!(endpoint_of("/v1/completions"), Some(Endpoint::Completion));
        assert_eq!(endpoint_of("/v1/embeddings"), Some(Endpoint::Embedding));
        assert_eq!(endpoint_of("/openai/deployments/gpt4/chat/completions"), Some(Endpoint::Chat));
        assert_eq!(endpoint_of("/v1/models"), None);
        assert_eq!(endpoint_of("/"), None);
    }

    #[test]
    fn azure_deployment_names_come_from_the_path() {
        assert_eq!(azure_deployment("/openai/deployments/gpt-4o/chat/completions"), Some("gpt-4o"));
        assert_eq!(azure_deployment("/openai/deployments//chat/completions"), None);
        assert_eq!(azure_deployment("/v1/chat/completions"), None);
    }

    #[test]
    fn content_types() {
        let check = |ct: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, ct.parse().expect("header value"));
            check_content_type(&h).is_ok()
        };
        assert!(check("application/json"));
        assert!(check("Application/JSON; charset=utf-8"));
        assert!(check("application/vnd.api+json"));
        // What a web page can post cross-origin without a preflight: refused.
        assert!(check_content_type(&HeaderMap::new()).is_err());
        assert!(!check(""));
        assert!(!check("application/x-www-form-urlencoded"));
        assert!(!check("text/plain"));
        assert!(!check("application/+json"));
        assert!(!check("text/html"));
        assert!(!check("multipart/form-data; boundary=x"));
        assert!(!check("json"));
    }

    #[test]
    fn a_model_is_added_only_when_absent() {
        let added = with_model(br#"{"messages":[]}"#, "gpt-4o").expect("added");
        let v: Value = serde_json::from_slice(&added).expect("json");
        assert_eq!(v["model"], "gpt-4o");
        assert!(with_model(br#"{"model":null}"#, "gpt-4o").is_none());
        assert!(with_model(b"[1]", "gpt-4o").is_none());
    }
}
