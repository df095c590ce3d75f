//! What a Chat reply holds (text, or a tool plan and a tool call, and why it finished), whole
//! replies, embeddings by type, and Cohere's error bodies for injected failures.

use axum::response::Response;
use base64::Engine;
use bytes::Bytes;
use http::StatusCode;
use rand::{Rng, rngs::SmallRng};
use serde_json::{Map, Value, json};

use super::request::{Chat, Embed};
use crate::mock::{MockProfile, answer as common};

/// The context window the `context_length_exceeded` error names.
const CONTEXT_WINDOW: u64 = 256_000;

/// The pieces of the tool call's arguments a stream sends (`tool-call-delta`).
pub(super) const ARGUMENT_PIECES: [&str; 2] = ["{\"mock\"", ": true}"];

/// What a reply holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Output {
    /// Text, in the pieces a stream sends (one output token each).
    Text(Vec<String>),
    /// A tool plan (in pieces), then a call of the tool with arguments `{"mock":true}`.
    ToolCall { plan: Vec<String>, id: String, name: String },
}

/// What a reply holds and why it finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Plan {
    pub(super) output: Output,
    pub(super) finish_reason: &'static str,
}

impl Plan {
    /// Output tokens: one per piece a stream sends.
    pub(super) fn output_tokens(&self) -> u64 {
        let pieces = match &self.output {
            Output::Text(pieces) => pieces.len(),
            Output::ToolCall { plan, .. } => plan.len() + ARGUMENT_PIECES.len(),
        };
        u64::try_from(pieces).unwrap_or(u64::MAX)
    }
}

/// A UUID-shaped id (Cohere's reply and error ids) from a request's draw.
pub(super) fn uuid(id: u64) -> String {
    let other = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5851_F42D_4C95_7F2D;
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        id >> 32,
        (id >> 16) & 0xffff,
        id & 0xfff,
        other >> 52,
        other & 0xffff_ffff_ffff
    )
}

impl Chat {
    /// The reply's id.
    pub(super) fn reply_id(&self) -> String {
        uuid(self.id)
    }

    /// The answer under `profile`: a tool plan and a call of the chosen tool, or the profile's
    /// text pieces cut by `stop_sequences` (`STOP_SEQUENCE`) and `max_tokens` (`MAX_TOKENS`).
    pub(super) fn plan(&self, profile: &MockProfile) -> Plan {
        if let Some(name) = &self.tool {
            let suffix: String = format!("{:012x}", self.id & 0xffff_ffff_ffff);
            let plan = vec!["I will call ".to_owned(), format!("{name}.")];
            let output = Output::ToolCall { plan, id: format!("{name}_{suffix}"), name: name.clone() };
            return Plan { output, finish_reason: "TOOL_CALL" };
        }
        let mut pieces: Vec<String> = (0..profile.chunks).map(|i| common::piece(&self.model, i)).collect();
        let text = pieces.concat();
        let budget = self.max_tokens.map_or(usize::MAX, |m| usize::try_from(m).unwrap_or(usize::MAX));
        let stop = self.stop_sequences.iter().filter(|s| !s.is_empty()).filter_map(|s| text.find(s.as_str())).min();
        if let Some(at) = stop {
            let cut = cut_at(pieces.clone(), at);
            if cut.len() <= budget {
                return Plan { output: Output::Text(cut), finish_reason: "STOP_SEQUENCE" };
            }
        }
        if pieces.len() > budget {
            pieces.truncate(budget);
            return Plan { output: Output::Text(pieces), finish_reason: "MAX_TOKENS" };
        }
        Plan { output: Output::Text(pieces), finish_reason: "COMPLETE" }
    }

    /// `usage`: billed and counted tokens alike.
    pub(super) fn usage(&self, output_tokens: u64) -> Value {
        let tokens = json!({"input_tokens": self.input_tokens, "output_tokens": output_tokens});
        json!({"billed_units": tokens, "tokens": tokens})
    }

    /// The whole reply, its text padded to `huge` bytes if given.
    fn reply(&self, plan: &Plan, huge: Option<usize>) -> Value {
        let mut message = Map::new();
        message.insert("role".to_owned(), json!("assistant"));
        match &plan.output {
            Output::Text(pieces) => {
                let mut text = pieces.concat();
                if let Some(bytes) = huge {
                    text.extend(std::iter::repeat_n('x', bytes.saturating_sub(text.len())));
                }
                message.insert("content".to_owned(), json!([{"type": "text", "text": text}]));
            }
            Output::ToolCall { plan, id, name } => {
                message.insert("tool_plan".to_owned(), json!(plan.concat()));
                message.insert("tool_calls".to_owned(), json!([tool_call(id, name, &ARGUMENT_PIECES.concat())]));
            }
        }
        json!({
            "id": self.reply_id(),
            "finish_reason": plan.finish_reason,
            "message": message,
            "usage": self.usage(plan.output_tokens()),
        })
    }
}

/// A `ToolCallV2` with `arguments` so far.
pub(super) fn tool_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
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

/// A whole Chat reply.
pub(in crate::mock) fn whole(call: &Chat, profile: &MockProfile) -> Response {
    let reply = call.reply(&call.plan(profile), profile.huge_bytes);
    common::json_response(StatusCode::OK, json_bytes(&reply))
}

/// A `200` whose JSON body is cut in the middle (a malformed answer).
pub(in crate::mock) fn truncated(call: &Chat, profile: &MockProfile) -> Response {
    let body = json_bytes(&call.reply(&call.plan(profile), None));
    common::json_response(StatusCode::OK, body.slice(..body.len() / 2))
}

/// An `EmbedByTypeResponse`: for each requested type, one embedding per input, from one unit
/// vector per input.
pub(in crate::mock) fn embeddings(call: &Embed, rng: &mut SmallRng) -> Response {
    let vectors: Vec<Vec<f32>> = (0..call.inputs).map(|_| unit_vector(call.dims, rng)).collect();
    let embeddings: Map<String, Value> =
        call.types.iter().map(|&kind| (kind.to_owned(), vectors.iter().map(|v| encode(kind, v)).collect())).collect();
    let mut billed = json!({"input_tokens": call.input_tokens});
    if call.images > 0 {
        billed["images"] = json!(call.images);
    }
    let mut body = json!({
        "id": uuid(call.id),
        "embeddings": embeddings,
        "meta": {"api_version": {"version": "2"}, "billed_units": billed},
        "response_type": "embeddings_by_type",
    });
    if let Some(texts) = &call.texts {
        body["texts"] = json!(texts);
    }
    common::json_response(StatusCode::OK, json_bytes(&body))
}

/// `v` as an embedding of type `kind`: floats, bytes scaled from `-1..1`, sign bits packed eight
/// to a byte, or the floats' little-endian bytes in base64.
fn encode(kind: &str, v: &[f32]) -> Value {
    // Components are in -1..=1, so the scaled values fit their byte types.
    #[allow(clippy::cast_possible_truncation)]
    let scale = |x: f32, lo: f32, hi: f32| (((x + 1.0) / 2.0) * (hi - lo) + lo).round().clamp(lo, hi) as i32;
    let bits = || {
        v.chunks(8).map(|byte| byte.iter().enumerate().fold(0u8, |acc, (i, x)| acc | (u8::from(*x > 0.0) << (7 - i))))
    };
    match kind {
        "int8" => json!(v.iter().map(|&x| scale(x, -128.0, 127.0)).collect::<Vec<_>>()),
        "uint8" => json!(v.iter().map(|&x| scale(x, 0.0, 255.0)).collect::<Vec<_>>()),
        "binary" => json!(bits().map(|b| i32::from(b) - 128).collect::<Vec<_>>()),
        "ubinary" => json!(bits().collect::<Vec<_>>()),
        "base64" => {
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            json!(base64::engine::general_purpose::STANDARD.encode(bytes))
        }
        _ => json!(v),
    }
}

fn unit_vector(dims: usize, rng: &mut SmallRng) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dims).map(|_| rng.random_range(-1.0..1.0)).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// The injected failure: the profile's status with Cohere's error body for it, and `Retry-After`
/// when the profile sets a delay.
pub(in crate::mock) fn failure(model: &str, input_tokens: u64, id: u64, profile: &MockProfile) -> Response {
    let status = profile.fail_status;
    let message = match (status.as_u16(), profile.error_code.as_deref()) {
        (_, Some("context_length_exceeded")) => format!(
            "too many tokens: total number of tokens in the prompt cannot exceed {CONTEXT_WINDOW} - received {}. \
             Try using a shorter prompt, or enabling prompt truncating.",
            input_tokens.max(CONTEXT_WINDOW + 1)
        ),
        (400, _) => "invalid request: the request could not be processed (mock).".to_owned(),
        (401, _) => "invalid api token".to_owned(),
        (402, _) => "Please add or update your payment method to continue using the API (mock).".to_owned(),
        (404, _) => format!(
            "model '{model}' not found, make sure the correct model ID was used and that you have access to the model."
        ),
        (429, _) => "You are using a Trial key, which is limited to 10 API calls / minute. Upgrade to a Production \
                     key to increase your rate limit."
            .to_owned(),
        (499, _) => "request cancelled by user (mock)".to_owned(),
        (500, _) => "internal server error, this has been reported to our developers".to_owned(),
        (503, _) => "service unavailable: the server is overloaded, please try again later (mock)".to_owned(),
        (504, _) => "gateway timeout: the request took too long to process (mock)".to_owned(),
        (code, _) => format!("mock failure {code}"),
    };
    let mut resp = error_response(status, &message, id);
    common::retry_after(resp.headers_mut(), profile);
    resp
}

/// `{"id","message"}` with `status`.
pub(super) fn error_response(status: StatusCode, message: &str, id: u64) -> Response {
    common::json_response(status, json_bytes(&json!({"id": uuid(id), "message": message})))
}

pub(super) fn json_bytes(value: &Value) -> Bytes {
    // A `Value` always serializes.
    Bytes::from(serde_json::to_vec(value).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_uuid_shaped() {
        let id = uuid(0x0123_4567_89ab_cdef);
        let shape: String = id.chars().map(|c| if c.is_ascii_hexdigit() { 'h' } else { c }).collect();
        assert_eq!(shape, "hhhhhhhh-hhhh-hhhh-hhhh-hhhhhhhhhhhh", "{id}");
    }

    #[test]
    fn embeddings_are_encoded_by_type() {
        let v = [1.0, -1.0, 0.5, -0.5, 0.0, 0.1, -0.1, 0.9, 0.2];
        assert_eq!(encode("int8", &v[..2]), json!([127, -128]));
        assert_eq!(encode("uint8", &v[..2]), json!([255, 0]));
        // Sign bits 1,0,1,0,0,1,0,1 then 1: two bytes, the second padded with zeros.
        assert_eq!(encode("ubinary", &v), json!([0b1010_0101, 0b1000_0000]));
        assert_eq!(encode("binary", &v), json!([0b1010_0101 - 128, 0]));
    }
}
