//! What a Converse answer holds (text pieces or a tool call, and why it stopped), whole answers,
//! and AWS's restJson1 errors for refusals and injected failures.

use std::time::Duration;

use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use rand::{RngCore, rngs::SmallRng};
use serde_json::{Value, json};

use super::converse::Converse;
use crate::mock::{MockProfile, answer as common};

/// The namespace Bedrock's own exceptions carry in `x-amzn-errortype`.
const BEDROCK: &str = "http://internal.amazon.com/coral/com.amazon.bedrock/";
/// The namespace of the exceptions AWS's front end answers before the service (authentication).
pub(super) const CORAL: &str = "http://internal.amazon.com/coral/com.amazon.coral.service/";

/// An error answer: the status, the exception's name and namespace, and the message.
#[derive(Debug)]
pub(super) struct Exception {
    status: StatusCode,
    kind: &'static str,
    namespace: &'static str,
    message: String,
}

impl Exception {
    pub(super) fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self { status, kind, namespace: BEDROCK, message: message.into() }
    }

    /// A refusal by AWS's front end (authentication), in its namespace.
    pub(super) fn coral(kind: &'static str, message: impl Into<String>) -> Self {
        Self { status: StatusCode::FORBIDDEN, kind, namespace: CORAL, message: message.into() }
    }

    /// `400 ValidationException`.
    pub(super) fn validation(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "ValidationException", message)
    }

    /// The restJson1 answer: the status, `x-amzn-errortype: <kind>:<namespace>`,
    /// `x-amzn-requestid`, and `{"message": ...}`.
    pub(super) fn into_response(self, request_id: &str) -> Response {
        let body = json_bytes(&json!({ "message": self.message }));
        let mut resp = common::json_response(self.status, body);
        let headers = resp.headers_mut();
        if let Ok(kind) = HeaderValue::from_str(&format!("{}:{}", self.kind, self.namespace)) {
            headers.insert("x-amzn-errortype", kind);
        }
        insert_request_id(headers, request_id);
        resp
    }
}

/// The injected failure for the profile's status, as Bedrock answers it.
pub(super) fn failure(profile: &MockProfile) -> Exception {
    let status = profile.fail_status;
    if let Some(kind) = profile.error_code.as_deref().and_then(named_exception) {
        return Exception::new(status, kind, format!("{kind} (mock)."));
    }
    if profile.error_code.as_deref() == Some("context_length_exceeded") {
        // The message Bedrock gives when the prompt exceeds the model's context window.
        return Exception::new(status, "ValidationException", "Input is too long for requested model.");
    }
    let (kind, message) = match status.as_u16() {
        400 => ("ValidationException", "Malformed input request, please reformat your input and try again."),
        403 => ("AccessDeniedException", "You don't have access to the model with the specified model ID."),
        404 => {
            ("ResourceNotFoundException", "Could not resolve the foundation model from the provided model identifier.")
        }
        408 => ("ModelTimeoutException", "Model has timed out in processing the request. Try your request again."),
        424 => ("ModelErrorException", "The model returned an error while processing the request (mock)."),
        429 => ("ThrottlingException", "Too many requests, please wait before trying again."),
        503 => ("ServiceUnavailableException", "Bedrock is unable to process your request."),
        500..=599 => (
            "InternalServerException",
            "The system encountered an unexpected error during processing. Try your request again.",
        ),
        _ => ("ValidationException", "mock failure"),
    };
    Exception::new(status, kind, message)
}

/// The exception `code` names, if it names one of Bedrock Runtime's (either case of its first
/// letter: the shape name or the stream member name).
pub(super) fn named_exception(code: &str) -> Option<&'static str> {
    const KINDS: &[&str] = &[
        "AccessDeniedException",
        "InternalServerException",
        "ModelErrorException",
        "ModelNotReadyException",
        "ModelStreamErrorException",
        "ModelTimeoutException",
        "ResourceNotFoundException",
        "ServiceQuotaExceededException",
        "ServiceUnavailableException",
        "ThrottlingException",
        "ValidationException",
    ];
    KINDS.iter().copied().find(|k| k.eq_ignore_ascii_case(code))
}

/// A request id in the shape of AWS's (a UUID), from the request's draw.
pub(super) fn request_id(rng: &mut SmallRng) -> String {
    let (a, b) = (rng.next_u64(), rng.next_u64());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        0x8000 | (b >> 48) & 0x3fff,
        b & 0xffff_ffff_ffff
    )
}

pub(super) fn insert_request_id(headers: &mut http::HeaderMap, request_id: &str) {
    if let Ok(id) = HeaderValue::from_str(request_id) {
        headers.insert("x-amzn-requestid", id);
    }
}

/// One content block of an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Block {
    /// Text, in the pieces a stream sends (one output token each).
    Text(Vec<String>),
    /// A call of the chosen tool with input `{"mock":true}`.
    ToolUse { id: String, name: String },
}

/// The pieces of the tool call's input a stream sends (`delta.toolUse.input`).
pub(super) const TOOL_INPUT_PIECES: [&str; 2] = ["{\"mock\"", ": true}"];

impl Block {
    /// The block as a whole answer holds it.
    fn to_json(&self) -> Value {
        match self {
            Self::Text(pieces) => json!({"text": pieces.concat()}),
            Self::ToolUse { id, name } => json!({"toolUse": {"toolUseId": id, "name": name, "input": {"mock": true}}}),
        }
    }

    /// Output tokens of the block: one per piece a stream sends.
    fn tokens(&self) -> u64 {
        let pieces = match self {
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
}

impl Plan {
    pub(super) fn output_tokens(&self) -> u64 {
        self.blocks.iter().map(Block::tokens).sum()
    }
}

impl Converse {
    /// The answer under `profile`: a call of the chosen tool, or the profile's text pieces cut by
    /// `stopSequences` and `maxTokens` (each piece one output token).
    pub(super) fn plan(&self, profile: &MockProfile) -> Plan {
        if let Some(name) = &self.tool {
            let id = format!("tooluse_mock{:016x}", self.id);
            return Plan { blocks: vec![Block::ToolUse { id, name: name.clone() }], stop_reason: "tool_use" };
        }
        let pieces: Vec<String> = (0..profile.chunks).map(|i| common::piece(&self.model, i)).collect();
        let budget = self.max_tokens.map_or(usize::MAX, |m| usize::try_from(m).unwrap_or(usize::MAX));
        let (mut pieces, mut stop_reason) = match self.first_stop(&pieces.concat()) {
            Some(at) => (cut_at(pieces, at), "stop_sequence"),
            None => (pieces, "end_turn"),
        };
        if pieces.len() > budget {
            pieces.truncate(budget);
            stop_reason = "max_tokens";
        }
        Plan { blocks: vec![Block::Text(pieces)], stop_reason }
    }

    /// Where the first of `stopSequences` to occur in `text` starts.
    fn first_stop(&self, text: &str) -> Option<usize> {
        self.stop_sequences.iter().filter(|s| !s.is_empty()).filter_map(|s| text.find(s.as_str())).min()
    }

    /// `{"inputTokens","outputTokens","totalTokens"}`.
    pub(super) fn usage(&self, output_tokens: u64) -> Value {
        json!({
            "inputTokens": self.input_tokens,
            "outputTokens": output_tokens,
            "totalTokens": self.input_tokens.saturating_add(output_tokens),
        })
    }
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

/// `{"latencyMs": ...}`: the profile's latency drawn for the request.
pub(super) fn metrics(latency: Duration) -> Value {
    json!({ "latencyMs": u64::try_from(latency.as_millis()).unwrap_or(u64::MAX) })
}

/// A whole `ConverseResponse`, its text padded to the profile's huge size if any; with
/// `malformed`, a `200` whose JSON is cut in the middle.
pub(super) fn whole(
    call: &Converse,
    plan: &Plan,
    profile: &MockProfile,
    latency: Duration,
    malformed: bool,
    request_id: &str,
) -> Response {
    let content: Vec<Value> = plan
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
    let answer = json!({
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": plan.stop_reason,
        "usage": call.usage(plan.output_tokens()),
        "metrics": metrics(latency),
    });
    let mut body = json_bytes(&answer);
    if malformed {
        body = body.slice(..body.len() / 2);
    }
    let mut resp = common::json_response(StatusCode::OK, body);
    insert_request_id(resp.headers_mut(), request_id);
    resp
}

pub(super) fn json_bytes(value: &Value) -> Bytes {
    // A `Value` always serializes.
    Bytes::from(serde_json::to_vec(value).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_sequence_cuts_inside_a_piece_and_drops_what_follows() {
        let pieces: Vec<String> = ["ab", "cd", "ef"].map(str::to_owned).to_vec();
        assert_eq!(cut_at(pieces.clone(), 3), ["ab", "c"]);
        assert_eq!(cut_at(pieces.clone(), 2), ["ab"]);
        assert_eq!(cut_at(pieces, 0), Vec::<String>::new());
    }

    #[test]
    fn request_ids_look_like_uuids() {
        use rand::SeedableRng;
        let id = request_id(&mut SmallRng::seed_from_u64(1));
        let parts: Vec<usize> = id.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12], "{id}");
    }
}
