//! What a `GenerateContentResponse` holds (text or a function call, and why it stopped), whole
//! answers, embeddings, and Google's error bodies for injected failures.

use std::time::Duration;

use axum::response::Response;
use base64::Engine;
use bytes::Bytes;
use http::StatusCode;
use rand::{Rng, rngs::SmallRng};
use serde_json::{Value, json};

use super::request::{Call, Embed, Generate};
use crate::mock::{MockProfile, answer as common};

/// The context window the `context_length_exceeded` error names.
const CONTEXT_WINDOW: u64 = 1_048_576;
/// The `retryDelay` of a 429 when the profile sets no `retry_after`: the rest of a per-minute
/// quota's window, at worst.
const DEFAULT_RETRY_DELAY: Duration = Duration::from_secs(60);

/// What the answer's candidate holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Output {
    /// Text, in the pieces a stream sends (one candidate token each).
    Text(Vec<String>),
    /// A call of this function with args `{"mock":true}` (one candidate token).
    FunctionCall(String),
}

/// What an answer holds and why it stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Plan {
    pub(super) output: Output,
    pub(super) finish_reason: &'static str,
}

impl Plan {
    pub(super) fn candidates_tokens(&self) -> u64 {
        match &self.output {
            Output::Text(pieces) => u64::try_from(pieces.len()).unwrap_or(u64::MAX),
            Output::FunctionCall(_) => 1,
        }
    }
}

impl Generate {
    /// The answer under `profile`: a call of the chosen function, or the profile's text pieces cut
    /// by `stopSequences` (`STOP`) and `maxOutputTokens` (`MAX_TOKENS`).
    pub(super) fn plan(&self, profile: &MockProfile) -> Plan {
        if let Some(name) = &self.function {
            return Plan { output: Output::FunctionCall(name.clone()), finish_reason: "STOP" };
        }
        let mut pieces: Vec<String> = (0..profile.chunks).map(|i| common::piece(&self.model, i)).collect();
        let text = pieces.concat();
        let stop = self.stop_sequences.iter().filter(|s| !s.is_empty()).filter_map(|s| text.find(s.as_str())).min();
        if let Some(at) = stop {
            pieces = cut_at(pieces, at);
        }
        let budget = self.max_output_tokens.map_or(usize::MAX, |m| usize::try_from(m).unwrap_or(usize::MAX));
        if pieces.len() > budget {
            pieces.truncate(budget);
            return Plan { output: Output::Text(pieces), finish_reason: "MAX_TOKENS" };
        }
        Plan { output: Output::Text(pieces), finish_reason: "STOP" }
    }

    /// `responseId`: Google's are short URL-safe base64 strings.
    pub(super) fn response_id(&self) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([self.id.to_le_bytes(), self.id.to_be_bytes()].concat())
    }

    /// `usageMetadata` with `candidates` tokens so far.
    pub(super) fn usage(&self, candidates: u64) -> Value {
        json!({
            "promptTokenCount": self.prompt_tokens,
            "candidatesTokenCount": candidates,
            "totalTokenCount": self.prompt_tokens + candidates,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": self.prompt_tokens}],
        })
    }

    /// A `GenerateContentResponse` of one candidate with `parts` (and `finish_reason` when it is
    /// the last), usage counting `candidates` tokens.
    pub(super) fn response(&self, parts: Vec<Value>, finish_reason: Option<&str>, candidates: u64) -> Value {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        if let Some(reason) = finish_reason {
            candidate["finishReason"] = json!(reason);
        }
        json!({
            "candidates": [candidate],
            "usageMetadata": self.usage(candidates),
            "modelVersion": self.model,
            "responseId": self.response_id(),
        })
    }
}

/// A text part.
pub(super) fn text_part(text: &str) -> Value {
    json!({"text": text})
}

/// A `functionCall` part of `name` with the mock's args.
pub(super) fn function_call_part(name: &str) -> Value {
    json!({"functionCall": {"name": name, "args": {"mock": true}}})
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

/// A whole `GenerateContentResponse`, its text padded to the profile's huge size if any.
pub(in crate::mock) fn whole(call: &Generate, profile: &MockProfile) -> Response {
    let plan = call.plan(profile);
    let part = match &plan.output {
        Output::Text(pieces) => {
            let mut text = pieces.concat();
            if let Some(bytes) = profile.huge_bytes {
                text.extend(std::iter::repeat_n('x', bytes.saturating_sub(text.len())));
            }
            text_part(&text)
        }
        Output::FunctionCall(name) => function_call_part(name),
    };
    let body = call.response(vec![part], Some(plan.finish_reason), plan.candidates_tokens());
    common::json_response(StatusCode::OK, json_bytes(&body))
}

/// A `200` whose JSON body is cut in the middle (a malformed answer).
pub(in crate::mock) fn truncated(call: &Generate, profile: &MockProfile) -> Response {
    let plan = call.plan(profile);
    let body = json_bytes(&call.response(vec![text_part(&common::piece(&call.model, 0))], Some(plan.finish_reason), 1));
    common::json_response(StatusCode::OK, body.slice(..body.len() / 2))
}

/// `{"embedding":{"values":[...]}}`, or `{"embeddings":[...]}` for a batch: unit vectors.
pub(in crate::mock) fn embeddings(call: &Embed, rng: &mut SmallRng) -> Response {
    let mut values = call.dims.iter().map(|&dims| json!({"values": unit_vector(dims, rng)}));
    let body = if call.batch {
        json!({"embeddings": values.collect::<Vec<_>>()})
    } else {
        json!({"embedding": values.next().unwrap_or_else(|| json!({"values": []}))})
    };
    common::json_response(StatusCode::OK, json_bytes(&body))
}

/// A random vector of length 1 with `dims` values (Vertex AI's `:predict` answers them too).
pub(in crate::mock) fn unit_vector(dims: usize, rng: &mut SmallRng) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dims).map(|_| rng.random_range(-1.0..1.0)).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// The injected failure: the profile's status with Google's error body for it; a 429 carries
/// `QuotaFailure`, `Help` and `RetryInfo` details (`retryDelay` from the profile's `retry_after`,
/// a minute without one). Google sends no `Retry-After` header.
pub(in crate::mock) fn failure(call: &Call, profile: &MockProfile) -> Response {
    failure_of(call.model(), call.prompt_tokens(), profile)
}

/// [`failure`] of a call of `model` whose prompt holds `prompt_tokens` (Vertex AI's routes, whose
/// calls are not [`Call`]s, answer the same).
pub(in crate::mock) fn failure_of(model: &str, prompt_tokens: u64, profile: &MockProfile) -> Response {
    let status = profile.fail_status;
    let message = match (status.as_u16(), profile.error_code.as_deref()) {
        (_, Some("context_length_exceeded")) => format!(
            "The input token count ({}) exceeds the maximum number of tokens allowed ({CONTEXT_WINDOW}).",
            prompt_tokens.max(CONTEXT_WINDOW + 1)
        ),
        (400, _) => "Request contains an invalid argument.".to_owned(),
        (401, _) => "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or \
                     other valid authentication credential."
            .to_owned(),
        (403, _) => "The caller does not have permission".to_owned(),
        (404, _) => format!(
            "models/{model} is not found for API version v1beta, or is not supported for generateContent. Call \
             ListModels to see the list of available models and their supported methods."
        ),
        (429, _) => "You exceeded your current quota, please check your plan and billing details. For more \
                     information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
            .to_owned(),
        (500, _) => "An internal error has occurred. Please retry or report in \
                     https://developers.generativeai.google/guide/troubleshooting"
            .to_owned(),
        (503, _) => "The model is overloaded. Please try again later.".to_owned(),
        (504, _) => "Deadline expired before operation could complete.".to_owned(),
        (code, _) => format!("mock failure {code}"),
    };
    let details = if status == StatusCode::TOO_MANY_REQUESTS {
        quota_details(model, &duration_json(profile.retry_after.unwrap_or(DEFAULT_RETRY_DELAY)))
    } else {
        Vec::new()
    };
    error_response(status, &message, details)
}

/// Google's 429 details: which quota, where to read about it, and when to retry.
fn quota_details(model: &str, retry_delay: &str) -> Vec<Value> {
    vec![
        json!({
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                "quotaId": "GenerateRequestsPerMinutePerProjectPerModel",
                "quotaDimensions": {"location": "global", "model": model},
            }],
        }),
        json!({
            "@type": "type.googleapis.com/google.rpc.Help",
            "links": [{
                "description": "Learn more about Gemini API quotas",
                "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
            }],
        }),
        json!({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}),
    ]
}

/// A `google.protobuf.Duration` in JSON: `7s`, `1.500s`.
fn duration_json(d: Duration) -> String {
    match d.subsec_millis() {
        0 => format!("{}s", d.as_secs()),
        ms => format!("{}.{ms:03}s", d.as_secs()),
    }
}

/// The canonical code name of an HTTP status, as Google's `status` field spells it.
fn status_name(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        500..=599 => "INTERNAL",
        _ => "FAILED_PRECONDITION",
    }
}

/// `{"error":{"code","message","status"[,"details"]}}`, as a body and as a stream's error.
pub(super) fn error_body(status: StatusCode, message: &str, details: Vec<Value>) -> Value {
    let mut error = json!({"code": status.as_u16(), "message": message, "status": status_name(status)});
    if !details.is_empty() {
        error["details"] = Value::Array(details);
    }
    json!({ "error": error })
}

/// Google's error answer with `status`.
pub(in crate::mock) fn error_response(status: StatusCode, message: &str, details: Vec<Value>) -> Response {
    common::json_response(status, json_bytes(&error_body(status, message, details)))
}

pub(super) fn json_bytes(value: &Value) -> Bytes {
    // A `Value` always serializes.
    Bytes::from(serde_json::to_vec(value).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_written_as_protobuf_json() {
        assert_eq!(duration_json(Duration::from_secs(7)), "7s");
        assert_eq!(duration_json(Duration::from_millis(1500)), "1.500s");
    }

    #[test]
    fn a_stop_sequence_cuts_inside_a_piece() {
        let pieces: Vec<String> = ["ab", "cd", "ef"].map(str::to_owned).to_vec();
        assert_eq!(cut_at(pieces.clone(), 3), ["ab", "c"]);
        assert_eq!(cut_at(pieces, 2), ["ab"]);
    }
}
