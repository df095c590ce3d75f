//! Classifying an attempt's result (status, error body, retry headers, transport errors) with
//! the one classifier, and reading a whole (non-streaming) answer.

use std::{error::Error as StdError, io, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use http_body::Body;
use http_body_util::{BodyExt, Limited};
use serde::Deserialize;
use serde_json::Value;
use switchyard_layers::{
    ApiKey, BoxError, Deployment, DeploymentId, Outcome, RouteBody, RouteError, Usage, outcome::classify,
    redact::redact,
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
}

impl AttemptInfo {
    /// `text` made short and secret-free.
    pub(crate) fn message(&self, text: &str) -> String {
        redact(text, &self.secrets(), MESSAGE_MAX)
    }

    /// What the deployment sends upstream as credentials, any of which an upstream may echo:
    /// its key, `azure_ad_token`, `organization` and the `extra_headers` values (at least 4 bytes
    /// long; shorter ones would mask ordinary words). Read only on a failure.
    fn secrets(&self) -> Vec<&str> {
        let d = &*self.deployment;
        let mut out: Vec<&str> = d.api_key.iter().map(ApiKey::expose).collect();
        out.extend(["azure_ad_token", "organization"].iter().filter_map(|k| d.params.get(*k)?.as_str()));
        if let Some(Value::Object(extra)) = d.params.get("extra_headers") {
            out.extend(extra.values().filter_map(Value::as_str));
        }
        out.retain(|s| s.len() >= 4);
        out
    }

    /// `body` with every occurrence of the deployment's [`secrets`](Self::secrets) replaced by
    /// `***`: as bytes, and in the strings of a JSON body however they are escaped
    /// (`"\u0073k-..."` is the key to the edge, which reads the provider's error as JSON).
    pub(crate) fn mask_secrets(&self, mut body: Bytes) -> Bytes {
        let secrets = self.secrets();
        for secret in &secrets {
            body = mask_bytes(body, secret.as_bytes());
        }
        // Only a backslash can spell a secret in a way the bytes do not show.
        if secrets.is_empty() || !body.contains(&b'\\') {
            return body;
        }
        let Ok(mut value) = serde_json::from_slice::<Value>(&body) else {
            return body;
        };
        let changed = secrets.iter().fold(false, |changed, secret| mask_strings(&mut value, secret) | changed);
        if changed { serde_json::to_vec(&value).map_or(body, Bytes::from) } else { body }
    }

    pub(crate) fn failure(&self, outcome: Outcome, text: &str) -> RouteError {
        RouteError::upstream(outcome, self.id.clone(), self.message(text))
    }
}

/// `body` with every occurrence of `key` replaced by `***`.
fn mask_bytes(body: Bytes, key: &[u8]) -> Bytes {
    if !body.windows(key.len()).any(|w| w == key) {
        return body;
    }
    let mut out = Vec::with_capacity(body.len());
    let mut rest = &body[..];
    while let Some(at) = rest.windows(key.len()).position(|w| w == key) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(b"***");
        rest = &rest[at + key.len()..];
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
    let classified = classify(status, headers, &body);
    let mut outcome = classified.outcome;
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
    if let Some(wait) = classified.retry_after {
        err = err.with_retry_after(wait);
    }
    err
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

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    usage: Option<UsageProbe>,
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

/// A whole 2xx answer: read (bounded), its usage parsed, returned as JSON with status 200.
///
/// A completion whose `finish_reason` is `content_filter` is still a success: the upstream
/// answered, and what to do about a filtered answer is the caller's decision.
pub(crate) async fn whole<B>(info: &AttemptInfo, body: B) -> Result<http::Response<RouteBody>, RouteError>
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
    let answer: Answer = serde_json::from_slice(&bytes)
        .map_err(|e| info.failure(Outcome::Transport, &format!("answer is not a JSON object: {e}")))?;
    let mut body = RouteBody::from(bytes);
    if let Some(usage) = answer.usage.as_ref().and_then(UsageProbe::usage) {
        body = body.with_usage(usage);
    }
    let mut resp = http::Response::new(body);
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(resp)
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
        let info =
            AttemptInfo { id: DeploymentId::new("d"), deployment: Arc::new(deployment), max_bytes: 1024, gap: None };
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
