//! The mock's Google OAuth2 token endpoint and Vertex AI routes.
//!
//! `POST /token` is Google's token endpoint for service accounts (a key's `token_uri`; see
//! [`MockHandle::token_uri`](super::MockHandle::token_uri)): a form body with
//! `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` and an `assertion`, a JWT whose header
//! names `RS256` and whose claims hold `iss`, `scope`, `aud` (this endpoint's URL, ending in
//! `/token`), `iat` and an `exp` at most an hour later. The signature is not verified: the mock
//! does not know the key. The answer is `{"access_token":"ya29.mock-...","expires_in":3599,
//! "token_type":"Bearer"}` (the lifetime set with
//! [`MockHandle::token_lifetime`](super::MockHandle::token_lifetime)); a refusal is Google's `400 {"error":"invalid_grant",
//! "error_description":...}` (`unsupported_grant_type` for another grant), and so is every
//! request while [`MockHandle::refuse_tokens`](super::MockHandle::refuse_tokens) is on (as for a
//! deleted key). Token requests are counted in [`MockStats::token_requests`](super::MockStats)
//! and are not drawn from the profile.
//!
//! `POST /v1/projects/{project}/locations/{location}/publishers/google/models/{model}:{method}`
//! serves the Gemini routes' methods, and `.../publishers/anthropic/models/{model}:rawPredict` /
//! `:streamRawPredict` the Messages API as Claude on Vertex AI takes it (no `model` in the body,
//! `anthropic_version: "vertex-2023-10-16"` instead; the stream per the body's `stream`), both
//! with the same profile draws as every other route. Both need `Authorization: Bearer` with a
//! token this server issued: without one, `401 UNAUTHENTICATED` in Google's error shape.
//!
//! Vertex AI's own methods:
//!
//! - `.../publishers/google/models/{model}:predict`, the text embeddings API: `instances` (one to
//!   250, only one for a `gemini-embedding` model, as Google documents) of `content` with an
//!   optional `task_type` (Google's task names) and `title` (only with `RETRIEVAL_DOCUMENT`), and
//!   optional `parameters` (`autoTruncate`, `outputDimensionality`); any other field is refused
//!   with Google's `400 INVALID_ARGUMENT`. The answer holds one prediction per instance,
//!   `{"embeddings": {"statistics": {"truncated": false, "token_count": n}, "values": [...]}}` (a
//!   unit vector of `outputDimensionality` values, else the profile's length; `n` one per four
//!   bytes of the text, or the profile's prompt tokens), and `metadata.billableCharacterCount`.
//!   Drawn from the profile like every other route (latency, failures, stalls).
//! - `.../publishers/google/models/{model}:countTokens`: `contents` (with `systemInstruction`,
//!   `tools`, `generationConfig`) counted at one token per four bytes of text, answered as
//!   `{"totalTokens", "totalBillableCharacters", "promptTokensDetails"}`. Not drawn from the
//!   profile (as the Anthropic counter).
//! - `.../publishers/anthropic/models/count-tokens:rawPredict`: Claude's token counter, the
//!   Anthropic counter's answer (`model`, a name without `@version`, and `messages` required).

use std::{
    collections::HashSet,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

use axum::{
    Json,
    extract::{Path, State},
    response::{IntoResponse, Response},
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, Uri, header};
use parking_lot::Mutex;
use percent_encoding::percent_decode_str;
use rand::{RngCore, SeedableRng, rngs::SmallRng};
use serde_json::{Value, json};

use super::{
    answer::{json_response, pause, stalled},
    anthropic, gemini,
    server::{MockState, RecordedRequest, count_answer, serve_messages},
};

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The tokens this server issued, whether it refuses to issue more, and their lifetime.
#[derive(Debug)]
pub(super) struct Tokens {
    issued: Mutex<HashSet<String>>,
    pub(super) refusing: AtomicBool,
    /// The `expires_in` of new tokens, in seconds.
    pub(super) lifetime_secs: AtomicU64,
}

impl Default for Tokens {
    fn default() -> Self {
        Self { issued: Mutex::default(), refusing: AtomicBool::new(false), lifetime_secs: AtomicU64::new(3599) }
    }
}

impl Tokens {
    fn knows(&self, headers: &HeaderMap) -> bool {
        let bearer = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let token = bearer.and_then(|b| b.strip_prefix("Bearer "));
        token.is_some_and(|t| self.issued.lock().contains(t))
    }
}

/// `POST /token`: the JWT-bearer grant.
pub(super) async fn token(State(s): State<Arc<MockState>>, body: Bytes) -> Response {
    s.counters.token_requests.fetch_add(1, Ordering::Relaxed);
    let refuse = |error: &str, description: &str| {
        (StatusCode::BAD_REQUEST, Json(json!({ "error": error, "error_description": description }))).into_response()
    };
    let form = String::from_utf8_lossy(&body);
    let field = |name: &str| {
        form.split('&').filter_map(|pair| pair.split_once('=')).find(|(k, _)| *k == name).map(|(_, v)| {
            let v = v.replace('+', " ");
            percent_decode_str(&v).decode_utf8_lossy().into_owned()
        })
    };
    match field("grant_type") {
        Some(grant) if grant == JWT_BEARER => {}
        Some(grant) => return refuse("unsupported_grant_type", &format!("Invalid grant_type: {grant}")),
        None => return refuse("invalid_request", "Missing required parameter: grant_type"),
    }
    let Some(assertion) = field("assertion") else {
        return refuse("invalid_request", "Missing required parameter: assertion");
    };
    if let Err(problem) = check_assertion(&assertion) {
        return refuse("invalid_grant", &format!("Invalid JWT: {problem}"));
    }
    if s.google.refusing.load(Ordering::Relaxed) {
        return refuse("invalid_grant", "Invalid JWT Signature.");
    }
    let token = format!("ya29.mock-{:016x}", SmallRng::from_os_rng().next_u64());
    s.google.issued.lock().insert(token.clone());
    let expires_in = s.google.lifetime_secs.load(Ordering::Relaxed);
    Json(json!({ "access_token": token, "expires_in": expires_in, "token_type": "Bearer" })).into_response()
}

/// The JWT's shape and claims, as Google's token endpoint checks them (all but the signature).
fn check_assertion(jwt: &str) -> Result<(), &'static str> {
    let mut parts = jwt.split('.');
    let (Some(head), Some(claims), Some(signature), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("Token must be a short-lived token (60 minutes) and in a reasonable timeframe.");
    };
    // base64url, with or without padding (gcp_auth pads).
    let bytes = |part: &str| URL_SAFE_NO_PAD.decode(part.trim_end_matches('='));
    let decode = |part: &str| -> Option<Value> { serde_json::from_slice(&bytes(part).ok()?).ok() };
    let head = decode(head).ok_or("Unable to parse the JWT header.")?;
    if head["alg"] != "RS256" {
        return Err("Unsupported algorithm.");
    }
    let claims = decode(claims).ok_or("Unable to parse the JWT claims.")?;
    if bytes(signature).map_or(true, |s| s.is_empty()) {
        return Err("Invalid JWT Signature.");
    }
    let text = |key: &str| claims[key].as_str().filter(|s| !s.is_empty());
    if text("iss").is_none() {
        return Err("No issuer.");
    }
    if text("scope").is_none() {
        return Err("No scope.");
    }
    if !text("aud").is_some_and(|aud| aud.ends_with("/token")) {
        return Err("Invalid audience.");
    }
    match (claims["iat"].as_i64(), claims["exp"].as_i64()) {
        (Some(iat), Some(exp)) if exp > iat && exp - iat <= 3600 => Ok(()),
        _ => Err("Token must be a short-lived token (60 minutes) and in a reasonable timeframe."),
    }
}

/// Google's answer to a call without a valid access token.
fn unauthenticated(s: &MockState, req: RecordedRequest) -> Response {
    s.record(req);
    let message = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or \
                   other valid authentication credential.";
    let error = json!({ "error": { "code": 401, "message": message, "status": "UNAUTHENTICATED" } });
    (StatusCode::UNAUTHORIZED, Json(error)).into_response()
}

/// `POST /v1/projects/{project}/locations/{location}/publishers/google/models/{model}:{method}`.
pub(super) async fn google_models(
    State(s): State<Arc<MockState>>,
    Path((_project, _location, model_and_method)): Path<(String, String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let authorized = s.google.knows(&headers);
    let req = RecordedRequest::new(method, &uri, headers, body);
    if !authorized {
        return unauthenticated(&s, req);
    }
    match model_and_method.rsplit_once(':') {
        Some((model, "predict")) if !model.is_empty() => predict(&s, model, req).await,
        Some((model, "countTokens")) if !model.is_empty() => {
            s.record(req.clone());
            count_contents(&req.body)
        }
        _ => gemini::serve(&s, &model_and_method, req, false).await,
    }
}

/// Google's `400 INVALID_ARGUMENT`.
fn invalid(message: impl Into<String>) -> Response {
    gemini::error_response(StatusCode::BAD_REQUEST, &message.into(), Vec::new())
}

/// The task types Vertex AI's text embedding models take.
const TASK_TYPES: [&str; 8] = [
    "RETRIEVAL_QUERY",
    "RETRIEVAL_DOCUMENT",
    "SEMANTIC_SIMILARITY",
    "CLASSIFICATION",
    "CLUSTERING",
    "QUESTION_ANSWERING",
    "FACT_VERIFICATION",
    "CODE_RETRIEVAL_QUERY",
];

/// A `:predict` call of a text embedding model, read: each instance's text length, and the
/// output dimensionality asked for.
struct Predict {
    chars: Vec<usize>,
    dims: Option<usize>,
}

/// Reads a text embeddings `:predict` body as Vertex AI does.
fn read_predict(model: &str, body: &[u8]) -> Result<Predict, String> {
    let Ok(Value::Object(req)) = serde_json::from_slice::<Value>(body) else {
        return Err(String::from("Invalid JSON payload received. Unexpected token."));
    };
    if let Some(unknown) = req.keys().find(|k| !matches!(k.as_str(), "instances" | "parameters" | "labels")) {
        return Err(format!("Invalid JSON payload received. Unknown name \"{unknown}\": Cannot find field."));
    }
    let instances = match req.get("instances") {
        Some(Value::Array(instances)) if !instances.is_empty() => instances,
        _ => return Err(String::from("instances is required and must not be empty.")),
    };
    let most = if model.starts_with("gemini-embedding") { 1 } else { 250 };
    if instances.len() > most {
        return Err(format!(
            "Unable to submit request because the model {model} supports up to {most} instances per request, but \
             {} were provided.",
            instances.len()
        ));
    }
    let mut chars = Vec::with_capacity(instances.len());
    for (i, instance) in instances.iter().enumerate() {
        let Value::Object(instance) = instance else {
            return Err(format!("instances[{i}] must be an object."));
        };
        if let Some(unknown) = instance.keys().find(|k| !matches!(k.as_str(), "content" | "task_type" | "title")) {
            return Err(format!("Unknown field \"{unknown}\" in instances[{i}]."));
        }
        let Some(content) = instance.get("content").and_then(Value::as_str) else {
            return Err(format!("instances[{i}].content is required and must be a string."));
        };
        let task = instance.get("task_type").map(|t| t.as_str().filter(|t| TASK_TYPES.contains(t)));
        if let Some(None) = task {
            return Err(format!("instances[{i}].task_type is not a valid task type."));
        }
        if instance.contains_key("title") && task != Some(Some("RETRIEVAL_DOCUMENT")) {
            return Err(String::from("Title is only valid with task_type=RETRIEVAL_DOCUMENT."));
        }
        chars.push(content.len());
    }
    let mut dims = None;
    match req.get("parameters") {
        None => {}
        Some(Value::Object(parameters)) => {
            for (name, value) in parameters {
                match (name.as_str(), value) {
                    ("autoTruncate", Value::Bool(_)) => {}
                    ("outputDimensionality", v) if v.as_u64().is_some_and(|d| d > 0) => {
                        dims = v.as_u64().and_then(|d| usize::try_from(d).ok());
                    }
                    _ => return Err(format!("Invalid value for parameters.{name}.")),
                }
            }
        }
        Some(_) => return Err(String::from("parameters must be an object.")),
    }
    Ok(Predict { chars, dims })
}

/// `:predict` of a text embedding model, drawn from the profile.
async fn predict(s: &MockState, model: &str, req: RecordedRequest) -> Response {
    let body = req.body.clone();
    let (profile, draws, mut rng) = s.admit(req);
    let call = match read_predict(model, &body) {
        Ok(call) => call,
        Err(refusal) => return invalid(refusal),
    };
    let tokens = |chars: usize| {
        profile.prompt_tokens.unwrap_or_else(|| u64::try_from(chars).unwrap_or(u64::MAX).div_ceil(4).max(1))
    };
    let mut shutdown = s.shutdown.clone();
    pause(draws.latency, &mut shutdown).await;
    if draws.fail {
        s.counters.failures.fetch_add(1, Ordering::Relaxed);
        return gemini::failure_of(model, call.chars.iter().map(|&c| tokens(c)).sum(), &profile);
    }
    if draws.stall {
        s.counters.stalls.fetch_add(1, Ordering::Relaxed);
        return stalled(false, shutdown);
    }
    let dims = call.dims.unwrap_or(profile.embedding_dims);
    let predictions: Vec<Value> = call
        .chars
        .iter()
        .map(|&chars| {
            json!({"embeddings": {
                "statistics": {"truncated": false, "token_count": tokens(chars)},
                "values": gemini::unit_vector(dims, &mut rng),
            }})
        })
        .collect();
    let billable: usize = call.chars.iter().sum();
    let answer = json!({"predictions": predictions, "metadata": {"billableCharacterCount": billable}});
    json_response(StatusCode::OK, Bytes::from(answer.to_string()))
}

/// The bytes of text under `text` keys in `value` (a content's parts, a system instruction's).
fn text_bytes(value: &Value) -> usize {
    match value {
        Value::Array(items) => items.iter().map(text_bytes).sum(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match (k.as_str(), v) {
                ("text", Value::String(text)) => text.len(),
                _ => text_bytes(v),
            })
            .sum(),
        _ => 0,
    }
}

/// `:countTokens` of a Gemini model on Vertex AI.
fn count_contents(body: &[u8]) -> Response {
    let Ok(Value::Object(req)) = serde_json::from_slice::<Value>(body) else {
        return invalid("Invalid JSON payload received. Unexpected token.");
    };
    const FIELDS: [&str; 10] = [
        "model",
        "instances",
        "contents",
        "systemInstruction",
        "system_instruction",
        "tools",
        "generationConfig",
        "generation_config",
        "toolConfig",
        "tool_config",
    ];
    if let Some(unknown) = req.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return invalid(format!("Invalid JSON payload received. Unknown name \"{unknown}\": Cannot find field."));
    }
    let Some(Value::Array(contents)) = req.get("contents").filter(|c| c.as_array().is_some_and(|c| !c.is_empty()))
    else {
        return invalid("Unable to submit request because it has an empty contents field.");
    };
    let system = req.get("systemInstruction").or_else(|| req.get("system_instruction"));
    let chars = text_bytes(&Value::Array(contents.clone())) + system.map_or(0, text_bytes);
    let tokens = u64::try_from(chars).unwrap_or(u64::MAX).div_ceil(4);
    let answer = json!({
        "totalTokens": tokens,
        "totalBillableCharacters": chars,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": tokens}],
    });
    json_response(StatusCode::OK, Bytes::from(answer.to_string()))
}

/// `POST /v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:rawPredict`
/// (and `:streamRawPredict`).
pub(super) async fn anthropic_models(
    State(s): State<Arc<MockState>>,
    Path((_project, _location, model_and_method)): Path<(String, String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let authorized = s.google.knows(&headers);
    let req = RecordedRequest::new(method, &uri, headers, body);
    if !authorized {
        return unauthenticated(&s, req);
    }
    match model_and_method.rsplit_once(':') {
        Some(("count-tokens", "rawPredict")) => {
            s.record(req.clone());
            let versioned = serde_json::from_slice::<Value>(&req.body)
                .ok()
                .and_then(|b| b["model"].as_str().map(|m| m.contains('@')))
                .unwrap_or(false);
            if versioned {
                let message = "The model name must not carry a version (`@...`) for token counting.";
                return invalid(message);
            }
            count_answer(&req.body)
        }
        Some((model, "rawPredict" | "streamRawPredict")) if !model.is_empty() => {
            serve_messages(&s, req, anthropic::Host::Vertex { model }).await
        }
        _ => {
            s.record(req);
            let message = format!("Publisher model `{model_and_method}` was not found or has no such method.");
            let error = json!({ "error": { "code": 404, "message": message, "status": "NOT_FOUND" } });
            (StatusCode::NOT_FOUND, Json(error)).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &Value) -> String {
        let part = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
        format!("{}.{}.{}", part(&json!({"alg": "RS256", "typ": "JWT"})), part(claims), URL_SAFE_NO_PAD.encode("sig"))
    }

    #[test]
    fn assertions_are_checked_as_google_checks_them() {
        let good = json!({"iss": "a@b", "scope": "s", "aud": "http://h/token", "iat": 10, "exp": 3610});
        assert_eq!(check_assertion(&jwt(&good)), Ok(()));
        let long = json!({"iss": "a@b", "scope": "s", "aud": "http://h/token", "iat": 10, "exp": 3611});
        assert!(check_assertion(&jwt(&long)).is_err());
        let elsewhere = json!({"iss": "a@b", "scope": "s", "aud": "http://h/other", "iat": 10, "exp": 20});
        assert_eq!(check_assertion(&jwt(&elsewhere)), Err("Invalid audience."));
        assert!(check_assertion("not-a-jwt").is_err());
    }
}
