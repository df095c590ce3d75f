//! Classifying an attempt's result (status, error body, retry headers, transport errors) with
//! the one classifier, and reading a whole (non-streaming) answer.

use std::{borrow::Cow, error::Error as StdError, io, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use http_body::Body;
use http_body_util::{BodyExt, Limited};
use memchr::memmem;
use serde::{Deserialize, de::IgnoredAny};
use serde_json::Value;
use std::time::SystemTime;

use switchyard_dialects::{ErrorClass, anthropic, bedrock, chat, cohere, gemini, responses};
use switchyard_layers::{
    ApiKey, BoxError, Deployment, DeploymentId, Outcome, ResponseId, RouteBody, RouteError, Usage,
    outcome::{classify, content_filtered},
    redact::redact,
};

use super::{
    catalog::{Route, Wire},
    vertex::AccessToken,
};

/// Longest message kept from an upstream error.
const MESSAGE_MAX: usize = 200;

/// What response handling needs to know about the attempt.
#[derive(Clone, Debug)]
pub(crate) struct AttemptInfo {
    pub(crate) id: DeploymentId,
    /// The deployment: its credentials ([`secrets`](Self::secrets)) are masked out of any
    /// message or body that leaves the provider.
    pub(crate) deployment: Arc<Deployment>,
    pub(crate) max_bytes: usize,
    /// Longest gap between two chunks after a stream's commit point.
    pub(crate) gap: Option<Duration>,
    /// The client's dialect and the deployment's.
    pub(crate) route: Route,
    /// A chat client asked for the usage chunk (`stream_options.include_usage`): without it the
    /// usage chunk Switchyard always asks for is recorded but not sent on.
    pub(crate) include_usage: bool,
    /// The id of a Responses API answer translated from another dialect (`resp_...`).
    pub(crate) response_id: Option<String>,
    /// An operation on a stored response (read, delete, cancel), not a new answer.
    pub(crate) operation: bool,
    /// An embeddings request (answered in OpenAI's embeddings list).
    pub(crate) embedding: bool,
    /// A whole conversation answer whose first choice a content filter cut fails as a
    /// `content_policy` failure (a fallback takes it,
    /// [`RouteCtx::content_filter_falls_back`](switchyard_layers::RouteCtx::content_filter_falls_back));
    /// otherwise it is returned as it is.
    pub(crate) filtered_fails: bool,
    /// The OAuth2 access token sent (Vertex AI), masked like the deployment's credentials.
    pub(crate) access_token: Option<AccessToken>,
}

impl AttemptInfo {
    /// `text` made short and secret-free.
    pub(crate) fn message(&self, text: &str) -> String {
        redact(text, &self.secrets(), MESSAGE_MAX)
    }

    /// What the deployment sends upstream as credentials, any of which an upstream may echo:
    /// its key, `azure_ad_token`, `organization`, the AWS keys, Vertex AI's credentials and the
    /// access token sent, and the `extra_headers` values (at least 4 bytes long; shorter ones
    /// would mask ordinary words).
    fn secrets(&self) -> Vec<&str> {
        let d = &*self.deployment;
        let mut out: Vec<&str> = d.api_key.iter().map(ApiKey::expose).collect();
        let credentials = [
            "azure_ad_token",
            "organization",
            "aws_access_key_id",
            "aws_secret_access_key",
            "aws_session_token",
            "vertex_credentials",
        ];
        out.extend(credentials.iter().filter_map(|k| d.params.get(*k)?.as_str()));
        out.extend(self.access_token.as_ref().map(AccessToken::expose));
        if let Some(Value::Object(extra)) = d.params.get("extra_headers") {
            out.extend(extra.values().filter_map(Value::as_str));
        }
        out.retain(|s| s.len() >= 4);
        out
    }

    /// The deployment's [`secrets`](Self::secrets), ready to be searched for in every body and
    /// stream event that leaves the provider.
    pub(crate) fn mask(&self) -> Mask {
        Mask::new(&self.secrets())
    }

    /// `body` with the deployment's secrets masked; see [`Mask::bytes`].
    pub(crate) fn mask_secrets(&self, body: Bytes) -> Bytes {
        self.mask().bytes(body)
    }

    pub(crate) fn failure(&self, outcome: Outcome, text: &str) -> RouteError {
        RouteError::upstream(outcome, self.id.clone(), self.message(text))
    }
}

/// The credentials of one deployment, searched for in what leaves the provider: every answer,
/// error body and stream event, 2xx included (an upstream may echo the key it was sent in any of
/// them). Each occurrence becomes `***`: as bytes, and in the strings of a JSON text however they
/// are escaped (`"\u0073k-..."` is the key to whoever reads the JSON).
///
/// Cheap when nothing matches: one `memmem` search per secret, plus a `memchr` for a backslash;
/// the JSON is parsed only when an escape could spell a secret (a `\u` escape, or any escape
/// when a secret holds `/`, `"`, `\` or a control character).
pub(crate) struct Mask {
    finders: Vec<memmem::Finder<'static>>,
    /// Whether a short escape (`\/`, `\"`, `\\`, `\t`, ...) could spell part of a secret.
    short_escapes: bool,
}

impl Mask {
    /// Masks nothing.
    #[cfg(test)]
    pub(crate) fn none() -> Self {
        Self::new(&[])
    }

    fn new(secrets: &[&str]) -> Self {
        let short_escapes = secrets.iter().any(|s| s.chars().any(|c| matches!(c, '/' | '"' | '\\') || c.is_control()));
        let finders = secrets.iter().map(|s| memmem::Finder::new(s.as_bytes()).into_owned()).collect();
        Self { finders, short_escapes }
    }

    /// `body` masked as bytes, then in its JSON strings (when it is JSON and an escape could spell
    /// a secret). The body is copied only when something was masked.
    pub(crate) fn bytes(&self, body: Bytes) -> Bytes {
        let body = self.raw(body);
        match self.json(&body) {
            Some(masked) => Bytes::from(masked),
            None => body,
        }
    }

    /// `text` (one event's data) with the secrets masked in its JSON strings when an escape could
    /// spell one; raw occurrences are left to [`raw`](Self::raw) on the encoded event.
    pub(crate) fn json_text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.json(text.as_bytes()).map(String::from_utf8) {
            Some(Ok(masked)) => Cow::Owned(masked),
            _ => Cow::Borrowed(text),
        }
    }

    /// `body` with every raw occurrence of a secret replaced by `***`.
    pub(crate) fn raw(&self, mut body: Bytes) -> Bytes {
        for finder in &self.finders {
            body = mask_raw(body, finder);
        }
        body
    }

    /// The JSON text `body` re-serialized with the secrets masked in its strings and object keys,
    /// or `None` when no escape could spell a secret, it is not JSON, or nothing changed.
    fn json(&self, body: &[u8]) -> Option<Vec<u8>> {
        if self.finders.is_empty() || memchr::memchr(b'\\', body).is_none() {
            return None;
        }
        if !self.short_escapes && memmem::find(body, b"\\u").is_none() {
            return None;
        }
        let mut value = serde_json::from_slice::<Value>(body).ok()?;
        let mut changed = false;
        for finder in &self.finders {
            let secret = std::str::from_utf8(finder.needle()).ok()?;
            changed |= mask_strings(&mut value, secret);
        }
        if changed { serde_json::to_vec(&value).ok() } else { None }
    }
}

/// `body` with every occurrence of `finder`'s needle replaced by `***`.
fn mask_raw(body: Bytes, finder: &memmem::Finder<'_>) -> Bytes {
    let Some(first) = finder.find(&body) else {
        return body;
    };
    let len = finder.needle().len();
    let mut out = Vec::with_capacity(body.len());
    out.extend_from_slice(&body[..first]);
    out.extend_from_slice(b"***");
    let mut rest = &body[first + len..];
    while let Some(at) = finder.find(rest) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(b"***");
        rest = &rest[at + len..];
    }
    out.extend_from_slice(rest);
    Bytes::from(out)
}

/// Replaces `key` by `***` in every string and object key of `value`; whether anything changed.
fn mask_strings(value: &mut Value, key: &str) -> bool {
    match value {
        Value::String(s) if s.contains(key) => {
            *s = s.replace(key, "***");
            true
        }
        Value::Array(items) => items.iter_mut().fold(false, |changed, v| mask_strings(v, key) | changed),
        Value::Object(map) => {
            let mut changed = false;
            for (name, mut v) in std::mem::take(map) {
                changed |= mask_strings(&mut v, key);
                let name = if name.contains(key) {
                    changed = true;
                    name.replace(key, "***")
                } else {
                    name
                };
                map.insert(name, v);
            }
            changed
        }
        _ => false,
    }
}

/// A failed exchange: connect failures (nothing sent) are [`Outcome::Connect`], anything after
/// sending is [`Outcome::Transport`]. A `RouteError` from a user's transport is kept as it is.
pub(crate) fn transport_error(info: &AttemptInfo, err: BoxError) -> RouteError {
    if RouteError::find(&*err).is_some() {
        return RouteError::from_boxed(err);
    }
    let outcome = if is_connect(&*err) { Outcome::Connect } else { Outcome::Transport };
    let what = if outcome == Outcome::Connect { "cannot connect" } else { "the exchange broke" };
    info.failure(outcome, &format!("{what}: {}", chain(&*err))).with_source(err)
}

/// hyper-util's `is_connect()` anywhere in the chain, or a refused connection from a user's
/// own transport.
fn is_connect(err: &(dyn StdError + 'static)) -> bool {
    let mut cur = Some(err);
    while let Some(e) = cur {
        if let Some(client) = e.downcast_ref::<hyper_util::client::legacy::Error>() {
            return client.is_connect();
        }
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return io.kind() == io::ErrorKind::ConnectionRefused;
        }
        cur = e.source();
    }
    false
}

/// `error: cause: cause`, the whole chain on one line.
fn chain(err: &(dyn StdError + 'static)) -> String {
    let mut text = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        let s = e.to_string();
        if !text.contains(&s) {
            text.push_str(": ");
            text.push_str(&s);
        }
        cur = e.source();
    }
    text
}

/// The attempt ran out of time.
pub(crate) fn timeout(info: &AttemptInfo, what: &str) -> RouteError {
    info.failure(Outcome::Timeout, what)
}

/// A non-2xx answer, classified from its status, error body and retry headers.
pub(crate) async fn status_error<B>(info: &AttemptInfo, status: StatusCode, headers: &HeaderMap, body: B) -> RouteError
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    // A broken or oversized error body still leaves the status to classify by.
    let body = match Limited::new(body, info.max_bytes).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let (mut outcome, retry_after) = match info.route.egress {
        Wire::Anthropic => anthropic_classified(status.as_u16(), headers, &body),
        Wire::Gemini => {
            let outcome = class_outcome(gemini::classify_error(status.as_u16(), &body));
            let wait = switchyard_layers::outcome::retry_after(headers, SystemTime::now())
                .or_else(|| gemini::retry_after(&body).filter(|_| outcome == Outcome::RateLimited));
            (outcome, wait)
        }
        Wire::Cohere => {
            let outcome = class_outcome(cohere::classify_error(status.as_u16(), &body));
            (outcome, switchyard_layers::outcome::retry_after(headers, SystemTime::now()))
        }
        Wire::Bedrock => {
            let kind = headers.get("x-amzn-errortype").and_then(|v| v.to_str().ok());
            // `ThrottlingException:http://internal.amazon.com/...`: the type is before the colon.
            let kind = kind.map(|k| k.split(':').next().unwrap_or(k));
            let outcome = class_outcome(bedrock::classify_error(status.as_u16(), kind, &body));
            (outcome, switchyard_layers::outcome::retry_after(headers, SystemTime::now()))
        }
        Wire::OpenAi | Wire::Responses => {
            let classified = classify(status, headers, &body);
            (classified.outcome, classified.retry_after)
        }
    };
    let detail = error_message(&body).unwrap_or_default();
    if outcome.is_success() {
        // A redirect (3xx): the `api_base` points at the wrong place.
        outcome = Outcome::NotFound;
    }
    let text = match detail.is_empty() {
        true => format!("upstream answered {status}"),
        false => format!("upstream answered {status}: {detail}"),
    };
    // The body is kept for the edge (a passed-through 4xx shows the provider's message) and for
    // logs: an upstream that echoes the key it was sent must not have it carried further.
    let body = info.mask_secrets(body);
    let mut err = info.failure(outcome, &text).with_upstream_response(status, body);
    if let Some(wait) = retry_after {
        err = err.with_retry_after(wait);
    }
    err
}

/// An Anthropic error answer classified by the dialect (`error.type`, the status and the
/// message), with the wait from `retry-after` or the `anthropic-ratelimit-*-reset` instants.
fn anthropic_classified(status: u16, headers: &HeaderMap, body: &[u8]) -> (Outcome, Option<Duration>) {
    let outcome = class_outcome(anthropic::classify_error(status, body));
    let now = SystemTime::now();
    let retry_after = switchyard_layers::outcome::retry_after(headers, now).or_else(|| {
        // The reset instants say when the window opens again; only a rate limit waits for them.
        (outcome == Outcome::RateLimited).then(|| anthropic::retry_after(headers, now)).flatten()
    });
    (outcome, retry_after)
}

/// The one outcome class of each dialect's error class.
pub(crate) fn class_outcome(class: ErrorClass) -> Outcome {
    use ErrorClass as C;
    match class {
        C::RateLimited => Outcome::RateLimited,
        C::ContextWindowExceeded => Outcome::ContextWindowExceeded,
        C::ContentPolicy => Outcome::ContentPolicy,
        C::Auth => Outcome::Auth,
        C::NotFound => Outcome::NotFound,
        C::Timeout => Outcome::Timeout,
        C::Overloaded | C::ServerError => Outcome::ServerError,
        C::BadRequest | C::RequestTooLarge => Outcome::BadRequest,
        _ => Outcome::ServerError,
    }
}

/// `error.message`, a string `error`, or a top-level `message` of an error body.
pub(crate) fn error_message(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let text = match value.get("error") {
        Some(Value::Object(e)) => e.get("message").and_then(Value::as_str),
        Some(Value::String(s)) => Some(s.as_str()),
        _ => value.get("message").and_then(Value::as_str),
    };
    text.map(str::to_owned)
}

/// The parts of a 2xx answer that matter here: its usage, and whether it is an error envelope.
#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    usage: Option<UsageProbe>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    choices: Option<IgnoredAny>,
    #[serde(default)]
    data: Option<IgnoredAny>,
    #[serde(default)]
    object: Option<IgnoredAny>,
}

impl Answer {
    /// The `error` of a 2xx body that is an error envelope rather than an answer: a JSON object
    /// whose `error` is an object or a non-empty string, with no (non-null) `choices`, `data` or
    /// `object`, which every chat, completion and embedding answer has. An answer that also
    /// carries an `error` member stays an answer.
    fn error_envelope(&self) -> Option<&Value> {
        if self.choices.is_some() || self.data.is_some() || self.object.is_some() {
            return None;
        }
        self.error.as_ref().filter(|e| match e {
            Value::Object(_) => true,
            Value::String(s) => !s.is_empty(),
            _ => false,
        })
    }
}

/// The status an error envelope stands for when the HTTP status says nothing (a 2xx answer, an
/// in-stream error event): a 4xx/5xx number in `error.code` or `error.status` (a JSON number or a
/// numeric string), else one of the well-known `code` / `type` words (`invalid_api_key`,
/// `authentication_error`: 401; `permission_error`: 403; `model_not_found`: 404;
/// `rate_limit_exceeded`, `rate_limit_error`: 429), else 500. [`classify`] then reads the body's
/// codes as for any error answer (`context_length_exceeded`, `content_filter`, ... win).
pub(crate) fn envelope_status(error: &Value) -> StatusCode {
    let numeric = [error.get("code"), error.get("status")].into_iter().flatten().find_map(|v| {
        let n = match v {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        }?;
        let status = StatusCode::from_u16(u16::try_from(n).ok()?).ok()?;
        (status.is_client_error() || status.is_server_error()).then_some(status)
    });
    if let Some(status) = numeric {
        return status;
    }
    let words = [error.get("code"), error.get("type")].into_iter().flatten().filter_map(Value::as_str);
    for word in words {
        let status = match word {
            "invalid_api_key" | "authentication_error" | "invalid_authentication" | "unauthorized" => {
                StatusCode::UNAUTHORIZED
            }
            "permission_error" | "permission_denied" | "PermissionDenied" => StatusCode::FORBIDDEN,
            "model_not_found" | "not_found_error" | "DeploymentNotFound" => StatusCode::NOT_FOUND,
            "rate_limit_exceeded" | "rate_limit_error" | "RateLimitExceeded" => StatusCode::TOO_MANY_REQUESTS,
            _ => continue,
        };
        return status;
    }
    StatusCode::INTERNAL_SERVER_ERROR
}

/// `usage` of a completion, a stream chunk, or an embedding answer (no completion tokens).
#[derive(Deserialize)]
pub(crate) struct UsageProbe {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

impl UsageProbe {
    pub(crate) fn usage(&self) -> Option<Usage> {
        Some(Usage::new(self.prompt_tokens?, self.completion_tokens.unwrap_or(0)))
    }
}

/// A whole 2xx answer: read (bounded), its usage parsed, the deployment's secrets masked,
/// returned as JSON with status 200.
///
/// A 2xx body that is an error envelope ([`Answer::error_envelope`]) is the failure it
/// describes: classified from the envelope as the same body under the status it stands for
/// ([`envelope_status`]) would be. A chat completion whose first `finish_reason` is
/// `content_filter` (or whose `choices` are empty) is a `content_policy` failure when a fallback
/// can serve the request instead ([`AttemptInfo::filtered_fails`], LiteLLM's
/// `_should_raise_content_policy_error`), and a success otherwise.
pub(crate) async fn whole<B>(
    info: &AttemptInfo,
    status: StatusCode,
    headers: &HeaderMap,
    body: B,
) -> Result<http::Response<RouteBody>, RouteError>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let bytes = match Limited::new(body, info.max_bytes).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            let text = format!("answer larger than {} bytes", info.max_bytes);
            return Err(info.failure(Outcome::Transport, &text));
        }
        Err(e) => return Err(transport_error(info, e)),
    };
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let route = info.route;
    // The answer in the hub (chat completions) unless it passes through, with its usage.
    let (bytes, usage, mut response_id) = match route.egress {
        // A token count or a stored response's operation: the upstream's answer as it is.
        _ if info.operation && route.egress == Wire::Anthropic => (bytes, None, None),
        // A Gemini model's count on Vertex AI, answered as Anthropic's counter answers.
        Wire::Gemini if info.operation => {
            let answer: gemini::CountTokensResponse = serde_json::from_slice(&bytes)
                .map_err(|e| info.failure(Outcome::Transport, &format!("answer is not a token count: {e}")))?;
            (encode_answer(info, &gemini::anthropic_count_from(&answer))?, None, None)
        }
        Wire::OpenAi => {
            let usage = chat_answer(info, status, headers, &bytes)?;
            (bytes, usage, None)
        }
        Wire::Anthropic => {
            let message = anthropic_message(info, status, headers, &bytes)?;
            let usage = Usage::new(message.usage.prompt_tokens(), message.usage.output_tokens);
            if route.is_passthrough() {
                (bytes, Some(usage), None)
            } else {
                let completion = anthropic::chat_from_response(message, now);
                (encode_answer(info, &completion)?, Some(usage), None)
            }
        }
        Wire::Responses => {
            let (usage, id) = responses_answer(info, status, headers, &bytes)?;
            (bytes, usage, id)
        }
        Wire::Gemini | Wire::Cohere | Wire::Bedrock => {
            let (bytes, usage) = translated_answer(info, &bytes, now)?;
            (bytes, usage, None)
        }
    };
    // A chat completion a content filter cut goes to the content-policy fallbacks, checked on the
    // hub answer (an Anthropic passthrough or a Responses answer has none).
    let hub_chat = match route.egress {
        Wire::Responses => false,
        Wire::Anthropic => !route.is_passthrough(),
        _ => true,
    };
    if info.filtered_fails && hub_chat && !info.operation && !info.embedding && content_filtered(&bytes) {
        return Err(info.failure(Outcome::ContentPolicy, "Response output was blocked."));
    }
    // The hub answer in the client's dialect.
    let bytes = match (route.ingress, route.is_passthrough()) {
        _ if info.operation => bytes,
        (Wire::Anthropic, false) => {
            let completion = hub_answer(info, &bytes)?;
            encode_answer(info, &anthropic::response_from_chat(completion))?
        }
        (Wire::Responses, false) => {
            let completion = hub_answer(info, &bytes)?;
            let id = info.response_id.clone().unwrap_or_else(|| format!("resp_{}", completion.id));
            let answer = responses::response_from_chat(completion, &id, now);
            response_id = Some(id);
            encode_answer(info, &answer)?
        }
        _ => bytes,
    };
    let mut body = RouteBody::from(info.mask_secrets(bytes));
    if let Some(usage) = usage {
        body = body.with_usage(usage);
    }
    let mut resp = http::Response::new(body);
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(id) = response_id.filter(|_| !info.operation) {
        resp.extensions_mut().insert(ResponseId::new(id));
    }
    Ok(resp)
}

/// A whole 2xx answer of a dialect that is always translated (Gemini, Cohere): the hub answer
/// (a chat completion, or OpenAI's embeddings list) and its usage, or the failure it describes (a
/// blocked prompt, an error finish).
fn translated_answer(info: &AttemptInfo, bytes: &[u8], now: u64) -> Result<(Bytes, Option<Usage>), RouteError> {
    let model = info.deployment.model.split_once('/').map_or(&*info.deployment.model, |(_, m)| m).to_owned();
    let not_an_answer =
        |e: serde_json::Error| info.failure(Outcome::Transport, &format!("answer is not readable: {e}"));
    let completion = match info.route.egress {
        // Vertex AI's `:predict`, with the token counts Gemini's `batchEmbedContents` lacks.
        Wire::Gemini if info.embedding && info.deployment.provider() == "vertex_ai" => {
            let answer = serde_json::from_slice(bytes).map_err(not_an_answer)?;
            let list = gemini::openai_embeddings_from_predict(answer, &model)
                .map_err(|e| info.failure(Outcome::Transport, &format!("answer is not readable: {e}")))?;
            let tokens = list["usage"]["prompt_tokens"].as_u64().unwrap_or(0);
            return Ok((encode_answer(info, &list)?, Some(Usage::new(tokens, 0))));
        }
        Wire::Gemini if info.embedding => {
            let answer = serde_json::from_slice(bytes).map_err(not_an_answer)?;
            return Ok((encode_answer(info, &gemini::openai_embeddings_from(answer, &model))?, None));
        }
        Wire::Cohere if info.embedding => {
            let answer = serde_json::from_slice(bytes).map_err(not_an_answer)?;
            return Ok((encode_answer(info, &cohere::openai_embeddings_from(answer, &model))?, None));
        }
        Wire::Bedrock if info.embedding => {
            let answer: Value = serde_json::from_slice(bytes).map_err(not_an_answer)?;
            let id = super::url::bedrock_model_id(&info.deployment.model);
            let list = bedrock::openai_embeddings_from(id, &[answer])
                .map_err(|e| info.failure(Outcome::Transport, &format!("answer is not readable: {e}")))?;
            return Ok((encode_answer(info, &list)?, None));
        }
        Wire::Bedrock => {
            let answer: bedrock::ConverseResponse = serde_json::from_slice(bytes).map_err(not_an_answer)?;
            bedrock::chat_from_response(answer, super::url::bedrock_model_id(&info.deployment.model), now)
        }
        Wire::Gemini => {
            let answer: gemini::GenerateContentResponse = serde_json::from_slice(bytes).map_err(not_an_answer)?;
            if let Some(reason) = gemini::blocked(&answer) {
                return Err(info.failure(Outcome::ContentPolicy, &format!("the prompt was blocked: {reason}")));
            }
            gemini::chat_from_response(answer, &model, now)
        }
        _ => {
            let answer: cohere::ChatV2Response = serde_json::from_slice(bytes).map_err(not_an_answer)?;
            if let Some((class, message)) = cohere::response_error(&answer) {
                return Err(info.failure(class_outcome(class), &format!("upstream failed the answer: {message}")));
            }
            let mut completion = cohere::chat_from_response(answer, now);
            completion.model = model;
            completion
        }
    };
    let usage = completion.usage.as_ref().map(|u| Usage::new(u.prompt_tokens, u.completion_tokens));
    Ok((encode_answer(info, &completion)?, usage))
}

/// A whole 2xx chat completion, completion or embedding answer: its usage, or the failure of a
/// body that is an error envelope ([`Answer::error_envelope`]), classified from the envelope as
/// the same body under the status it stands for ([`envelope_status`]) would be.
fn chat_answer(
    info: &AttemptInfo,
    status: StatusCode,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<Option<Usage>, RouteError> {
    let answer: Answer = serde_json::from_slice(bytes)
        .map_err(|e| info.failure(Outcome::Transport, &format!("answer is not a JSON object: {e}")))?;
    // serde reads a struct from a JSON array too; an envelope is an object.
    if bytes.trim_ascii_start().first() == Some(&b'{')
        && let Some(error) = answer.error_envelope()
    {
        let classified = classify(envelope_status(error), headers, bytes);
        let detail = error_message(bytes).unwrap_or_default();
        let text = format!("upstream answered {status} with an error: {detail}");
        let mut err = info.failure(classified.outcome, &text);
        if let Some(wait) = classified.retry_after {
            err = err.with_retry_after(wait);
        }
        return Err(err);
    }
    Ok(answer.usage.as_ref().and_then(UsageProbe::usage))
}

/// A whole 2xx Responses API answer: its usage and id, or the failure of a body that carries an
/// `error` (a failed response) instead of an answer.
fn responses_answer(
    info: &AttemptInfo,
    status: StatusCode,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<(Option<Usage>, Option<String>), RouteError> {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        status: Option<String>,
        #[serde(default)]
        error: Option<Value>,
    }
    let probe: Probe = serde_json::from_slice(bytes)
        .map_err(|e| info.failure(Outcome::Transport, &format!("answer is not a JSON object: {e}")))?;
    let error = probe.error.as_ref().filter(|e| e.is_object());
    if let Some(error) = error.filter(|_| probe.status.as_deref() != Some("completed")) {
        let classified = classify(envelope_status(error), headers, bytes);
        let detail = error_message(bytes).unwrap_or_default();
        let mut err = info.failure(classified.outcome, &format!("upstream answered {status} with an error: {detail}"));
        if let Some(wait) = classified.retry_after {
            err = err.with_retry_after(wait);
        }
        return Err(err);
    }
    let usage = responses::usage_of(bytes).map(|(input, output)| Usage::new(input, output));
    Ok((usage, probe.id))
}

/// A hub answer read back for translation into the client's dialect.
fn hub_answer(info: &AttemptInfo, bytes: &[u8]) -> Result<chat::ChatCompletion, RouteError> {
    serde_json::from_slice(bytes)
        .map_err(|e| info.failure(Outcome::Transport, &format!("answer is not a chat completion: {e}")))
}

fn encode_answer<T: serde::Serialize>(info: &AttemptInfo, answer: &T) -> Result<Bytes, RouteError> {
    serde_json::to_vec(answer)
        .map(Bytes::from)
        .map_err(|e| info.failure(Outcome::Transport, &format!("cannot encode the translated answer: {e}")))
}

/// A whole 2xx Anthropic answer. A 2xx body that is an Anthropic error (`{"type":"error",...}`)
/// is the failure it describes; one that is no message at all is a broken exchange.
fn anthropic_message(
    info: &AttemptInfo,
    status: StatusCode,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<anthropic::MessagesResponse, RouteError> {
    match serde_json::from_slice::<anthropic::MessagesResponse>(bytes) {
        Ok(message) => Ok(message),
        Err(e) => {
            if serde_json::from_slice::<anthropic::ErrorResponse>(bytes).is_ok() {
                // No error status: classified from the error's `type` and message alone.
                let (outcome, retry_after) = anthropic_classified(0, headers, bytes);
                let detail = error_message(bytes).unwrap_or_default();
                let mut err = info.failure(outcome, &format!("upstream answered {status} with an error: {detail}"));
                if let Some(wait) = retry_after {
                    err = err.with_retry_after(wait);
                }
                return Err(err);
            }
            Err(info.failure(Outcome::Transport, &format!("answer is not an Anthropic message: {e}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_from_common_shapes() {
        assert_eq!(error_message(br#"{"error":{"message":"slow down"}}"#).as_deref(), Some("slow down"));
        assert_eq!(error_message(br#"{"error":"bad"}"#).as_deref(), Some("bad"));
        assert_eq!(error_message(br#"{"message":"oops"}"#).as_deref(), Some("oops"));
        assert_eq!(error_message(b"<html>"), None);
    }

    #[test]
    fn messages_never_carry_the_deployments_key() {
        let deployment = Deployment::builder("g", "openai/m")
            .id("d")
            .api_key(ApiKey::new("k-123-secret"))
            .param("extra_headers", serde_json::json!({ "x-tenant": "tenant-secret" }))
            .build()
            .expect("valid deployment");
        let info = AttemptInfo {
            id: DeploymentId::new("d"),
            deployment: Arc::new(deployment),
            max_bytes: 1024,
            gap: None,
            route: Route { ingress: Wire::OpenAi, egress: Wire::OpenAi },
            include_usage: false,
            response_id: None,
            operation: false,
            embedding: false,
            filtered_fails: false,
            access_token: None,
        };
        assert!(!info.message("bad key k-123-secret given").contains("k-123-secret"));
        assert!(!info.message("tenant tenant-secret unknown").contains("tenant-secret"));
        let body = info.mask_secrets(Bytes::from_static(b"{\"error\":\"k-123-secret, k-123-secret!\"}"));
        assert_eq!(&body[..], b"{\"error\":\"***, ***!\"}");
        let escaped = info.mask_secrets(Bytes::from_static(
            br#"{"error":{"message":"\u006b-123-secret \u0074enant-secret","k-123-secret":1}}"#,
        ));
        let value: Value = serde_json::from_slice(&escaped).expect("still JSON");
        assert_eq!(value["error"]["message"], "*** ***");
        assert_eq!(value["error"]["***"], 1);
    }
}
