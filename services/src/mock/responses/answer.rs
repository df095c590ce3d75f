//! What a Responses answer holds (a message of text pieces, or a function call), the response
//! object around it, and OpenAI's error bodies and rate-limit headers for injected failures.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::response::Response;
use http::{HeaderValue, StatusCode};
use serde_json::{Value, json};

use super::{request::Call, store::StoredResponse};
use crate::{
    mock::{MockProfile, answer as common},
    openai::{ApiError, ErrorResponse, wire::to_json},
};

/// The context window the `context_length_exceeded` error stands for.
const CONTEXT_WINDOW: u64 = 128_000;
/// When a rate limit the profile gives no `retry_after` for resets.
const RATE_LIMIT_WINDOW: Duration = Duration::from_secs(60);
/// The request limit the rate-limit headers of an injected `429` report.
const RATE_LIMIT_REQUESTS: u32 = 500;
/// The message of a server error, in an error body or a failed response.
pub(super) const SERVER_ERROR: &str = "The server had an error processing your request. Sorry about that! (mock)";
/// The pieces of a function call's arguments a stream sends (`{"mock":true}`).
pub(super) const ARGUMENT_PIECES: [&str; 2] = ["{\"mock\"", ":true}"];

/// What an answer holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Plan {
    /// A message of text pieces (one output token each); `complete` is false when
    /// `max_output_tokens` cut it.
    Text { pieces: Vec<String>, complete: bool },
    /// A call of `name` with arguments `{"mock":true}`.
    FunctionCall { name: String },
}

impl Plan {
    /// The answer to `call` under `profile`.
    pub(super) fn of(call: &Call, profile: &MockProfile) -> Self {
        if let Some(name) = &call.tool {
            return Self::FunctionCall { name: name.clone() };
        }
        let mut pieces: Vec<String> = (0..profile.chunks).map(|i| common::piece(&call.model, i)).collect();
        let budget = call.max_output_tokens.map_or(usize::MAX, |t| usize::try_from(t).unwrap_or(usize::MAX));
        let complete = pieces.len() <= budget;
        pieces.truncate(budget);
        Self::Text { pieces, complete }
    }

    /// Output tokens: one per piece a stream sends.
    pub(super) fn output_tokens(&self) -> u64 {
        let pieces = match self {
            Self::Text { pieces, .. } => pieces.len(),
            Self::FunctionCall { .. } => ARGUMENT_PIECES.len(),
        };
        u64::try_from(pieces).unwrap_or(u64::MAX)
    }

    pub(super) fn complete(&self) -> bool {
        !matches!(self, Self::Text { complete: false, .. })
    }

    /// The pieces a stream sends as deltas.
    pub(super) fn pieces(&self) -> Vec<String> {
        match self {
            Self::Text { pieces, .. } => pieces.clone(),
            Self::FunctionCall { .. } => ARGUMENT_PIECES.map(str::to_owned).to_vec(),
        }
    }
}

impl Call {
    /// The output item's id: `msg_…` for a message, `fc_…` for a function call.
    pub(super) fn item_id(&self, plan: &Plan) -> String {
        match plan {
            Plan::Text { .. } => format!("msg_{}", self.item_key),
            Plan::FunctionCall { .. } => format!("fc_{}", self.item_key),
        }
    }

    /// The output item: as `response.output_item.added` shows it (`done` false: no content yet,
    /// `in_progress`) or finished, with `text` as the message's text.
    pub(super) fn item(&self, plan: &Plan, done: bool, text: &str) -> Value {
        let id = self.item_id(plan);
        match plan {
            Plan::Text { complete, .. } => {
                let status = match (done, complete) {
                    (false, _) => "in_progress",
                    (true, true) => "completed",
                    (true, false) => "incomplete",
                };
                let content = if done { vec![output_text(text)] } else { Vec::new() };
                json!({"id": id, "type": "message", "status": status, "content": content, "role": "assistant"})
            }
            Plan::FunctionCall { name } => json!({
                "id": id,
                "type": "function_call",
                "status": if done { "completed" } else { "in_progress" },
                "arguments": if done { ARGUMENT_PIECES.concat() } else { String::new() },
                "call_id": format!("call_{}", &self.item_key[..24.min(self.item_key.len())]),
                "name": name,
            }),
        }
    }

    /// The usage object.
    pub(super) fn usage(&self, plan: &Plan) -> Value {
        let output = plan.output_tokens();
        json!({
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": self.input_tokens.saturating_add(output),
        })
    }

    /// The response object with `status`, `output` and `usage`, echoing the request's settings
    /// as OpenAI does (with its defaults for those not given).
    pub(super) fn response(&self, status: &str, output: Vec<Value>, usage: Value) -> Value {
        let echo = |key: &str, default: Value| self.echo.get(key).filter(|v| !v.is_null()).cloned().unwrap_or(default);
        let completed_at = (status == "completed")
            .then(|| SystemTime::now().duration_since(UNIX_EPOCH).map_or(self.created_at, |d| d.as_secs()));
        let incomplete_details = (status == "incomplete").then(|| json!({"reason": "max_output_tokens"}));
        let error = (status == "failed").then(|| json!({"code": "server_error", "message": SERVER_ERROR}));
        let service_tier = match self.echo.get("service_tier").and_then(Value::as_str) {
            None | Some("auto") => "default",
            Some(tier) => tier,
        };
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "background": self.background,
            "completed_at": completed_at,
            "error": error,
            "incomplete_details": incomplete_details,
            "instructions": echo("instructions", Value::Null),
            "max_output_tokens": self.max_output_tokens,
            "max_tool_calls": echo("max_tool_calls", Value::Null),
            "model": self.model,
            "output": output,
            "parallel_tool_calls": echo("parallel_tool_calls", Value::Bool(true)),
            "previous_response_id": self.previous.as_ref().map(|p| p.id().to_owned()),
            "prompt_cache_key": echo("prompt_cache_key", Value::Null),
            "reasoning": echo("reasoning", json!({"effort": null, "summary": null})),
            "safety_identifier": echo("safety_identifier", Value::Null),
            "service_tier": service_tier,
            "store": self.store,
            "temperature": echo("temperature", json!(1.0)),
            "text": echo("text", json!({"format": {"type": "text"}, "verbosity": "medium"})),
            "tool_choice": echo("tool_choice", json!("auto")),
            "tools": self.tools,
            "top_logprobs": echo("top_logprobs", json!(0)),
            "top_p": echo("top_p", json!(1.0)),
            "truncation": echo("truncation", json!("disabled")),
            "usage": usage,
            "user": echo("user", Value::Null),
            "metadata": echo("metadata", json!({})),
        })
    }

    /// The finished response: `completed` (`incomplete` when `max_output_tokens` cut it), or
    /// `failed` without output when the stream ends in an error; the message's text padded to
    /// `pad_to` bytes if given.
    pub(super) fn finished(&self, plan: &Plan, failed: bool, pad_to: Option<usize>) -> Value {
        if failed {
            return self.response("failed", Vec::new(), Value::Null);
        }
        let mut text = plan.pieces().concat();
        if let (Plan::Text { .. }, Some(bytes)) = (plan, pad_to) {
            let pad = bytes.saturating_sub(text.len());
            text.extend(std::iter::repeat_n('x', pad));
        }
        let status = if plan.complete() { "completed" } else { "incomplete" };
        self.response(status, vec![self.item(plan, true, &text)], self.usage(plan))
    }

    /// What the store keeps of this request, answered with `response`.
    pub(super) fn stored(&self, response: Value, request: bytes::Bytes) -> StoredResponse {
        StoredResponse {
            response,
            input: self.input.clone(),
            previous_response_id: self.previous.as_ref().map(|p| p.id().to_owned()),
            request,
        }
    }
}

/// An `output_text` content part.
pub(super) fn output_text(text: &str) -> Value {
    json!({"type": "output_text", "annotations": [], "logprobs": [], "text": text})
}

pub(super) fn ok(body: &Value) -> Response {
    common::json_response(StatusCode::OK, to_json(body))
}

/// A `200` whose JSON body is cut in the middle (a malformed answer).
pub(super) fn truncated(body: &Value) -> Response {
    let body = to_json(body);
    common::json_response(StatusCode::OK, body.slice(..body.len() / 2))
}

/// The injected failure: the profile's status with OpenAI's error body for it, `Retry-After`, and
/// on a `429` the request rate limit's `x-ratelimit-*` headers.
pub(super) fn failure(model: &str, input_tokens: u64, profile: &MockProfile) -> Response {
    let status = profile.fail_status;
    let code = profile.error_code.as_deref();
    let error = match (status.as_u16(), code) {
        (_, Some("context_length_exceeded")) => ApiError::new(format!(
            "Your input exceeds the context window of this model ({CONTEXT_WINDOW} tokens, {} given). Please \
             adjust your input and try again. (mock)",
            input_tokens.max(CONTEXT_WINDOW + 1)
        ))
        .with_type("invalid_request_error")
        .with_param("input"),
        (429, _) => ApiError::new(format!("Rate limit reached for {model} on requests per min (RPM) (mock)."))
            .with_type("requests")
            .with_code("rate_limit_exceeded"),
        (401, _) => ApiError::new("Incorrect API key provided (mock).")
            .with_type("invalid_request_error")
            .with_code("invalid_api_key"),
        (404, _) => ApiError::new(format!("The model `{model}` does not exist or you do not have access to it."))
            .with_type("invalid_request_error")
            .with_code("model_not_found"),
        (500..=599, _) => ApiError::new(SERVER_ERROR).with_type("server_error"),
        _ => ApiError::new(format!("mock failure {}", status.as_u16())).with_type("invalid_request_error"),
    };
    let error = match code {
        Some(code) => error.with_code(code),
        None => error,
    };
    let mut resp = common::json_response(status, to_json(&ErrorResponse::new(error)));
    let headers = resp.headers_mut();
    common::retry_after(headers, profile);
    if status == StatusCode::TOO_MANY_REQUESTS {
        let reset = profile.retry_after.unwrap_or(RATE_LIMIT_WINDOW);
        headers.insert("x-ratelimit-limit-requests", HeaderValue::from(RATE_LIMIT_REQUESTS));
        headers.insert("x-ratelimit-remaining-requests", HeaderValue::from(0));
        if let Ok(reset) = HeaderValue::from_str(&reset_after(reset)) {
            headers.insert("x-ratelimit-reset-requests", reset);
        }
    }
    resp
}

/// A reset delay as OpenAI writes it: `20ms`, `1.5s`, `6m0s`.
fn reset_after(d: Duration) -> String {
    let millis = d.as_millis();
    if millis < 1000 {
        return format!("{millis}ms");
    }
    let (mins, secs) = (millis / 60_000, (millis % 60_000) as f64 / 1000.0);
    if mins == 0 { format!("{secs}s") } else { format!("{mins}m{secs}s") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_delays_are_written_as_openai_writes_them() {
        assert_eq!(reset_after(Duration::from_millis(20)), "20ms");
        assert_eq!(reset_after(Duration::from_millis(1500)), "1.5s");
        assert_eq!(reset_after(Duration::from_secs(2)), "2s");
        assert_eq!(reset_after(Duration::from_secs(360)), "6m0s");
    }
}
