//! What a Messages answer holds (thinking, text or a tool call, and why it stopped), whole
//! answers, and Anthropic's error bodies and rate-limit headers for injected failures.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::response::Response;
use base64::Engine;
use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use serde_json::{Value, json};

use super::Call;
use crate::mock::{MockProfile, answer as common};

/// The context window the `context_length_exceeded` error names.
const CONTEXT_WINDOW: u64 = 200_000;
/// When a rate limit the profile gives no `retry_after` for resets: Anthropic's limits are per
/// minute.
const RATE_LIMIT_WINDOW: Duration = Duration::from_secs(60);

/// One content block of an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Block {
    /// Extended thinking: one thinking piece, then its signature.
    Thinking { thinking: String, signature: String },
    /// Text, in the pieces a stream sends (one output token each).
    Text(Vec<String>),
    /// A call of the forced tool with input `{"mock":true}`.
    ToolUse { id: String, name: String },
}

/// The pieces of the tool call's input a stream sends (`input_json_delta`).
pub(super) const TOOL_INPUT_PIECES: [&str; 2] = ["{\"mock\"", ": true}"];

impl Block {
    /// The block as a whole answer holds it.
    fn to_json(&self) -> Value {
        match self {
            Self::Thinking { thinking, signature } => {
                json!({"type": "thinking", "thinking": thinking, "signature": signature})
            }
            Self::Text(pieces) => json!({"type": "text", "text": pieces.concat()}),
            Self::ToolUse { id, name } => json!({"type": "tool_use", "id": id, "name": name, "input": {"mock": true}}),
        }
    }

    /// Output tokens of the block: one per piece a stream sends.
    pub(super) fn tokens(&self) -> u64 {
        let pieces = match self {
            Self::Thinking { .. } => 1,
            Self::Text(pieces) => pieces.len(),
            Self::ToolUse { .. } => TOOL_INPUT_PIECES.len(),
        };
        u64::try_from(pieces).unwrap_or(u64::MAX)
    }
}

/// What an answer holds and why it stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Plan {
    pub(super) blocks: Vec<Block>,
    pub(super) stop_reason: &'static str,
    pub(super) stop_sequence: Option<String>,
}

impl Plan {
    pub(super) fn output_tokens(&self) -> u64 {
        self.blocks.iter().map(Block::tokens).sum()
    }
}

impl Call {
    /// `msg_mock…`, from the request's draw.
    pub(super) fn message_id(&self) -> String {
        format!("msg_mock{:016x}", self.id)
    }

    /// The usage object, with `output_tokens` so far.
    pub(super) fn usage(&self, output_tokens: u64) -> Value {
        json!({
            "input_tokens": self.input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        })
    }

    /// The message object, with `content`.
    pub(super) fn message(&self, content: Vec<Value>, plan: Option<&Plan>, output_tokens: u64) -> Value {
        json!({
            "id": self.message_id(),
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": plan.map(|p| p.stop_reason),
            "stop_sequence": plan.and_then(|p| p.stop_sequence.as_deref()),
            "usage": self.usage(output_tokens),
        })
    }

    /// The answer to this request under `profile`: a thinking block when thinking is on, then a
    /// call of the forced tool or the profile's text pieces, cut by `stop_sequences` and
    /// `max_tokens` (each piece is one output token, the thinking block one more).
    pub(super) fn plan(&self, profile: &MockProfile) -> Plan {
        let mut budget = self.max_tokens;
        let mut blocks = Vec::new();
        if self.thinking && budget > 0 {
            budget -= 1;
            let signature =
                base64::engine::general_purpose::STANDARD.encode(format!("mock-signature-{:016x}", self.id));
            blocks.push(Block::Thinking { thinking: format!("Mock thinking from `{}`.", self.model), signature });
        }
        if budget == 0 {
            return Plan { blocks, stop_reason: "max_tokens", stop_sequence: None };
        }
        if let Some(name) = &self.tool {
            let id = format!("toolu_mock{:016x}", self.id);
            blocks.push(Block::ToolUse { id, name: name.clone() });
            return Plan { blocks, stop_reason: "tool_use", stop_sequence: None };
        }
        let pieces: Vec<String> = (0..profile.chunks).map(|i| common::piece(&self.model, i)).collect();
        let budget = usize::try_from(budget).unwrap_or(usize::MAX);
        let (pieces, stop_reason, stop_sequence) = match self.first_stop(&pieces.concat()) {
            Some((at, seq)) if piece_at(&pieces, at) < budget => (cut_at(pieces, at), "stop_sequence", Some(seq)),
            _ if pieces.len() > budget => (pieces.into_iter().take(budget).collect(), "max_tokens", None),
            _ => (pieces, "end_turn", None),
        };
        blocks.push(Block::Text(pieces));
        Plan { blocks, stop_reason, stop_sequence }
    }

    /// Where the first of `stop_sequences` to occur in `text` starts, and which one it is.
    fn first_stop(&self, text: &str) -> Option<(usize, String)> {
        self.stop_sequences
            .iter()
            .filter(|s| !s.is_empty())
            .filter_map(|s| text.find(s.as_str()).map(|at| (at, s.clone())))
            .min_by_key(|(at, _)| *at)
    }
}

/// The index of the piece holding byte `at` of the pieces' concatenation.
fn piece_at(pieces: &[String], at: usize) -> usize {
    let mut end = 0;
    pieces
        .iter()
        .position(|p| {
            end += p.len();
            at < end
        })
        .unwrap_or(pieces.len())
}

/// The pieces up to byte `at` of their concatenation (the last one cut, dropped when empty).
fn cut_at(pieces: Vec<String>, at: usize) -> Vec<String> {
    let mut start = 0;
    let mut out = Vec::new();
    for mut piece in pieces {
        if start + piece.len() > at {
            // `at` is where a stop sequence starts: a character boundary.
            piece.truncate(at - start);
            if !piece.is_empty() {
                out.push(piece);
            }
            break;
        }
        start += piece.len();
        out.push(piece);
    }
    out
}

/// A whole answer: a `message` echoing the model asked for, its text padded to the profile's
/// huge size if any.
pub(in crate::mock) fn whole(call: &Call, profile: &MockProfile) -> Response {
    let plan = call.plan(profile);
    let content = plan
        .blocks
        .iter()
        .map(|block| {
            let mut block = block.to_json();
            if let (Some(bytes), Some(Value::String(text))) = (profile.huge_bytes, block.get_mut("text")) {
                let pad = bytes.saturating_sub(text.len());
                text.extend(std::iter::repeat_n('x', pad));
            }
            block
        })
        .collect();
    let body = json_bytes(&call.message(content, Some(&plan), plan.output_tokens()));
    common::json_response(StatusCode::OK, body)
}

/// A `200` whose JSON body is cut in the middle (a malformed answer).
pub(in crate::mock) fn truncated(call: &Call, profile: &MockProfile) -> Response {
    let plan = call.plan(profile);
    let content = plan.blocks.iter().map(Block::to_json).collect();
    let body = json_bytes(&call.message(content, Some(&plan), plan.output_tokens()));
    common::json_response(StatusCode::OK, body.slice(..body.len() / 2))
}

/// The injected failure: the profile's status with Anthropic's error body for it, `Retry-After`,
/// and on a 429 the request rate limit's `anthropic-ratelimit-requests-remaining: 0` and
/// `anthropic-ratelimit-requests-reset`.
pub(in crate::mock) fn failure(call: &Call, profile: &MockProfile) -> Response {
    let status = profile.fail_status;
    let (kind, message) = match (status.as_u16(), profile.error_code.as_deref()) {
        (_, Some("context_length_exceeded")) => (
            "invalid_request_error",
            format!(
                "prompt is too long: {} tokens > {CONTEXT_WINDOW} maximum",
                if call.input_tokens > CONTEXT_WINDOW { call.input_tokens } else { 210_000 }
            ),
        ),
        (401, _) => ("authentication_error", "invalid x-api-key".to_owned()),
        (402, _) => ("billing_error", "Your credit balance is too low to access the Anthropic API (mock).".to_owned()),
        (403, _) => {
            ("permission_error", "Your API key does not have permission to use the specified resource.".to_owned())
        }
        (404, _) => ("not_found_error", format!("model: {}", call.model)),
        (413, _) => ("request_too_large", "Request exceeds the maximum allowed number of bytes.".to_owned()),
        (429, _) => (
            "rate_limit_error",
            "This request would exceed the rate limit for your organization of requests per minute (mock).".to_owned(),
        ),
        (504, _) => ("timeout_error", "Request timed out (mock).".to_owned()),
        (529, _) => ("overloaded_error", "Overloaded".to_owned()),
        (500..=599, _) => ("api_error", "Internal server error".to_owned()),
        (code, _) => ("invalid_request_error", format!("mock failure {code}")),
    };
    let mut resp = error_response(status, kind, &message);
    let headers = resp.headers_mut();
    common::retry_after(headers, profile);
    if status == StatusCode::TOO_MANY_REQUESTS {
        let reset = SystemTime::now() + profile.retry_after.unwrap_or(RATE_LIMIT_WINDOW);
        headers.insert("anthropic-ratelimit-requests-remaining", HeaderValue::from(0));
        if let Ok(reset) = HeaderValue::from_str(&rfc3339(reset)) {
            headers.insert("anthropic-ratelimit-requests-reset", reset);
        }
    }
    resp
}

/// `{"type":"error","error":{"type":kind,"message":message}}` with `status`.
pub(in crate::mock) fn error_response(status: StatusCode, kind: &str, message: &str) -> Response {
    common::json_response(status, json_bytes(&error_body(kind, message)))
}

/// Anthropic's error object, as a body and as the data of an `error` event.
pub(super) fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

pub(super) fn json_bytes(value: &Value) -> Bytes {
    // A `Value` always serializes.
    Bytes::from(serde_json::to_vec(value).unwrap_or_default())
}

/// `t` as an RFC 3339 instant in UTC, whole seconds (`2026-01-01T00:00:00Z`).
fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (H. Hinnant's `civil_from_days`), counted in
    // 400-year eras from 0000-03-01 so that leap days end each year.
    let z = days + 719_468;
    let (era, doe) = (z / 146_097, z % 146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = era * 400 + yoe + u64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_utc_instants() {
        let at = |secs| UNIX_EPOCH + Duration::from_secs(secs);
        assert_eq!(rfc3339(at(0)), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(at(951_782_400)), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(at(1_767_225_599)), "2025-12-31T23:59:59Z");
        assert_eq!(rfc3339(at(1_767_225_600 + 3_723)), "2026-01-01T01:02:03Z");
    }

    #[test]
    fn a_stop_sequence_cuts_inside_a_piece_and_drops_what_follows() {
        let pieces: Vec<String> = ["ab", "cd", "ef"].map(str::to_owned).to_vec();
        assert_eq!(piece_at(&pieces, 3), 1);
        assert_eq!(cut_at(pieces.clone(), 3), ["ab", "c"]);
        assert_eq!(cut_at(pieces.clone(), 2), ["ab"]);
        assert_eq!(cut_at(pieces, 0), Vec::<String>::new());
    }
}
