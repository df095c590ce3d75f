//! Classifying an attempt's result (status, error body, retry headers, transport errors) with
//! the one classifier, and reading a whole (non-streaming) answer.

use std::{error::Error as StdError, io, time::Duration};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use http_body::Body;
use http_body_util::{BodyExt, Limited};
use serde::Deserialize;
use serde_json::Value;
use switchyard_layers::{
    ApiKey, BoxError, DeploymentId, Outcome, RouteBody, RouteError, Usage, outcome::classify, redact::redact,
};

/// Longest message kept from an upstream error.
const MESSAGE_MAX: usize = 200;

/// What response handling needs to know about the attempt.
#[derive(Clone, Debug)]
pub(crate) struct AttemptInfo {
    pub(crate) id: DeploymentId,
    /// The deployment's own key, masked out of any message that leaves the provider.
    pub(crate) key: Option<ApiKey>,
    pub(crate) max_bytes: usize,
    /// Longest gap between two chunks after a stream's commit point.
    pub(crate) gap: Option<Duration>,
}

impl AttemptInfo {
    /// `text` made short and secret-free.
    pub(crate) fn message(&self, text: &str) -> String {
        let known: Vec<&str> = self.key.iter().map(ApiKey::expose).collect();
        redact(text, &known, MESSAGE_MAX)
    }

    pub(crate) fn failure(&self, outcome: Outcome, text: &str) -> RouteError {
        RouteError::upstream(outcome, self.id.clone(), self.message(text))
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
        let info = AttemptInfo {
            id: DeploymentId::new("d"),
            key: Some(ApiKey::new("k-123-secret")),
            max_bytes: 1024,
            gap: None,
        };
        assert!(!info.message("bad key k-123-secret given").contains("k-123-secret"));
    }
}
