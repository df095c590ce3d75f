//! LiteLLM's provider-side testing hooks: `mock_response` (in the request, else in the
//! deployment's `litellm_params`) answers an attempt without calling the upstream, and
//! `mock_timeout` makes every attempt of the call's first group wait its whole timeout and time
//! out.
//!
//! A mocked answer is built as the upstream answer an OpenAI chat completions deployment would
//! give (a JSON body, or server-sent events for a stream) and read by the same code as a real
//! one: classified (an error string gives that error's status and code), translated to the
//! client's dialect (`/v1/messages`, `/v1/responses`), metered and streamed. What it contains is
//! LiteLLM's `mock_completion`: the content, `"assistant"`, a finish reason of `stop`, usage of
//! 10 prompt and 20 completion tokens, and streams in chunks of three characters.

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body_util::Full;
use rand::{RngCore, SeedableRng, rngs::SmallRng};
use serde_json::{Map, Value, json};
use switchyard_layers::{
    Deployment, RouteCtx, RouteError, RouteErrorKind,
    ctx::{Endpoint, MockResponse},
};

use super::catalog::{Route, Wire, upstream_model};

/// LiteLLM's `DEFAULT_MOCK_RESPONSE_PROMPT_TOKEN_COUNT`.
const MOCK_PROMPT_TOKENS: u64 = 10;
/// LiteLLM's `DEFAULT_MOCK_RESPONSE_COMPLETION_TOKEN_COUNT`.
const MOCK_COMPLETION_TOKENS: u64 = 20;
/// LiteLLM's answer to `mock_timeout` when no timeout bounds the attempt.
const DEFAULT_MOCK_CONTENT: &str = "This is a mock request";

/// What the hooks make of one attempt.
pub(crate) enum Mocked {
    /// The upstream answer to read instead of calling the upstream.
    Answer { route: Route, response: http::Response<Full<Bytes>> },
    /// The attempt never answers: it ends at its time bound.
    Timeout { route: Route },
}

/// The hook that applies to this attempt at `d`, if any: `mock_timeout` on the call's first
/// group, else the request's `mock_response`, else the deployment's.
pub(crate) fn mocked(d: &Deployment, ctx: &RouteCtx) -> Result<Option<Mocked>, RouteError> {
    let facts = ctx.facts();
    let timeout = facts.mock.timeout && ctx.hop == 0;
    let response = match &facts.mock.response {
        Some(r) => Some(r.clone()),
        None => deployment_mock(d)?,
    };
    if !timeout && response.is_none() {
        return Ok(None);
    }
    let ingress = match facts.endpoint {
        Endpoint::Chat => Wire::OpenAi,
        Endpoint::Messages => Wire::Anthropic,
        Endpoint::Responses => Wire::Responses,
        // Counting tokens and operations on stored responses are not answers: no hook applies.
        Endpoint::CountTokens | Endpoint::ResponseOp(_) => return Ok(None),
        _ => {
            return Err(RouteError::new(
                RouteErrorKind::InvalidRequest,
                "`mock_response` and `mock_timeout` answer chat completions, `/v1/messages` and `/v1/responses` \
                 requests only",
            ));
        }
    };
    // The answer is written as an OpenAI chat completions deployment would give it; the client's
    // dialect is reached by the usual translation.
    let route = Route { ingress, egress: Wire::OpenAi };
    if timeout {
        return Ok(Some(Mocked::Timeout { route }));
    }
    let response = response.unwrap_or_else(|| MockResponse::Text(DEFAULT_MOCK_CONTENT.to_owned()));
    let stream = facts.stream;
    let model = upstream_model(&d.model);
    Ok(Some(Mocked::Answer { route, response: answer(&response, model, stream) }))
}

/// The deployment's `litellm_params.mock_response`.
fn deployment_mock(d: &Deployment) -> Result<Option<MockResponse>, RouteError> {
    match d.params.get("mock_response") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(MockResponse::Text(s.clone()))),
        Some(v @ Value::Object(_)) => Ok(Some(MockResponse::Object(Bytes::from(v.to_string())))),
        Some(_) => Err(RouteError::new(
            RouteErrorKind::Upstream,
            format!("deployment `{}`: `litellm_params.mock_response` must be a string or a mapping", d.id),
        )
        .with_outcome(switchyard_layers::Outcome::BadRequest)
        .with_deployment(d.id.clone())),
    }
}

/// The upstream answer a mock stands for.
pub(crate) fn answer(mock: &MockResponse, model: &str, stream: bool) -> http::Response<Full<Bytes>> {
    let text = match mock {
        MockResponse::Object(raw) => return object_answer(raw, model, stream),
        MockResponse::Text(text) => text.as_str(),
        _ => DEFAULT_MOCK_CONTENT,
    };
    // LiteLLM's error strings (`_handle_mock_potential_exceptions`, `mock_completion`).
    let error = |status: u16, kind: &str, code: Option<&str>, message: &str| {
        let mut error = json!({ "message": message, "type": kind });
        if let Some(code) = code {
            error["code"] = Value::from(code);
        }
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        json_response(status, &json!({ "error": error }))
    };
    match text {
        "litellm.RateLimitError" => {
            error(429, "rate_limit_error", Some("rate_limit_exceeded"), "this is a mock rate limit error")
        }
        "litellm.ContextWindowExceededError" => error(
            400,
            "invalid_request_error",
            Some("context_length_exceeded"),
            "this is a mock context window exceeded error",
        ),
        "litellm.InternalServerError" => error(500, "server_error", None, "this is a mock internal server error"),
        t if t.starts_with("Exception: content_filter_policy") => {
            error(400, "invalid_request_error", Some("content_filter"), t)
        }
        // LiteLLM raises it as the stream is read, before its first chunk: an overloaded upstream.
        t if t.starts_with("Exception: mock_streaming_error") => {
            error(529, "overloaded_error", None, "This is a mock error raised mid-stream")
        }
        content if stream => sse_response(&text_chunks(content, model)),
        content => json_response(StatusCode::OK, &completion(content, model)),
    }
}

/// A chat completion id, as OpenAI writes them.
fn completion_id() -> String {
    let mut rng = SmallRng::from_os_rng();
    format!("chatcmpl-mock{:016x}{:08x}", rng.next_u64(), rng.next_u32())
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn usage() -> Value {
    json!({
        "prompt_tokens": MOCK_PROMPT_TOKENS,
        "completion_tokens": MOCK_COMPLETION_TOKENS,
        "total_tokens": MOCK_PROMPT_TOKENS + MOCK_COMPLETION_TOKENS,
    })
}

/// A non-streaming chat completion with `content`.
fn completion(content: &str, model: &str) -> Value {
    json!({
        "id": completion_id(),
        "object": "chat.completion",
        "created": now(),
        "model": model,
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": content },
            "finish_reason": "stop",
        }],
        "usage": usage(),
    })
}

/// The chunks of a streamed answer with `content`: three characters at a time (LiteLLM's
/// `mock_completion_streaming_obj`), then the finish reason, then the usage.
fn text_chunks(content: &str, model: &str) -> Vec<Value> {
    let (id, created) = (completion_id(), now());
    let chunk = |choices: Value| json!({ "id": id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": choices });
    let chars: Vec<char> = content.chars().collect();
    let mut chunks: Vec<Value> = chars
        .chunks(3)
        .map(|piece| {
            let piece: String = piece.iter().collect();
            chunk(json!([{ "index": 0, "delta": { "role": "assistant", "content": piece }, "finish_reason": null }]))
        })
        .collect();
    chunks.push(chunk(json!([{ "index": 0, "delta": {}, "finish_reason": "stop" }])));
    let mut last = chunk(json!([]));
    last["usage"] = usage();
    chunks.push(last);
    chunks
}

/// A `mock_response` object: the whole answer (LiteLLM's `ModelResponse(**mock_response)`), with
/// the members it leaves out filled in; for a stream, one chunk carrying each choice's message as
/// its delta (LiteLLM's `convert_model_response_to_streaming`).
fn object_answer(raw: &[u8], model: &str, stream: bool) -> http::Response<Full<Bytes>> {
    let mut object = match serde_json::from_slice::<Value>(raw) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let mut fill = |key: &str, value: Value| {
        object.entry(key.to_owned()).or_insert(value);
    };
    fill("id", Value::from(completion_id()));
    fill("created", Value::from(now()));
    fill("model", Value::from(model));
    fill(
        "choices",
        json!([{ "index": 0, "message": { "role": "assistant", "content": null }, "finish_reason": "stop" }]),
    );
    fill("usage", usage());
    if !stream {
        object.insert("object".to_owned(), Value::from("chat.completion"));
        return json_response(StatusCode::OK, &Value::Object(object));
    }
    let usage = object.remove("usage").unwrap_or_else(usage);
    let choices: Vec<Value> = match object.remove("choices") {
        Some(Value::Array(choices)) => choices
            .into_iter()
            .enumerate()
            .map(|(i, mut c)| {
                let delta = c.get_mut("message").map(Value::take).unwrap_or_else(|| json!({}));
                let finish = c.get("finish_reason").cloned().unwrap_or_else(|| Value::from("stop"));
                let index = c.get("index").cloned().unwrap_or_else(|| Value::from(i));
                json!({ "index": index, "delta": delta, "finish_reason": finish })
            })
            .collect(),
        _ => Vec::new(),
    };
    object.insert("object".to_owned(), Value::from("chat.completion.chunk"));
    let mut first = object.clone();
    first.insert("choices".to_owned(), Value::Array(choices));
    let mut last = object;
    last.insert("choices".to_owned(), json!([]));
    last.insert("usage".to_owned(), usage);
    sse_response(&[Value::Object(first), Value::Object(last)])
}

fn json_response(status: StatusCode, body: &Value) -> http::Response<Full<Bytes>> {
    let mut resp = http::Response::new(Full::new(Bytes::from(body.to_string())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

fn sse_response(chunks: &[Value]) -> http::Response<Full<Bytes>> {
    let mut out = String::new();
    for chunk in chunks {
        out.push_str("data: ");
        out.push_str(&chunk.to_string());
        out.push_str("\n\n");
    }
    out.push_str("data: [DONE]\n\n");
    let mut resp = http::Response::new(Full::new(Bytes::from(out)));
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    resp
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    async fn text(resp: http::Response<Full<Bytes>>) -> (StatusCode, String) {
        let status = resp.status();
        let bytes = resp.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[tokio::test]
    async fn a_text_mock_is_a_chat_completion_with_litellms_usage() {
        let (status, body) = text(answer(&MockResponse::Text("hi there".into()), "gpt-4o", false)).await;
        assert_eq!(status, StatusCode::OK);
        let v: Value = serde_json::from_str(&body).expect("json");
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["model"], "gpt-4o");
        assert_eq!(v["choices"][0]["message"]["content"], "hi there");
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
        assert_eq!(v["usage"]["total_tokens"], 30);
    }

    #[tokio::test]
    async fn a_streamed_mock_comes_three_characters_at_a_time() {
        let (_, body) = text(answer(&MockResponse::Text("abcdefg".into()), "m", true)).await;
        let pieces: Vec<String> = body
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .filter(|d| *d != "[DONE]")
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter_map(|v| v["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(pieces, ["abc", "def", "g"]);
        assert!(body.ends_with("data: [DONE]\n\n"));
    }

    #[tokio::test]
    async fn litellms_error_strings_are_upstream_errors() {
        let status = |s: &str| answer(&MockResponse::Text(s.into()), "m", false).status().as_u16();
        assert_eq!(status("litellm.RateLimitError"), 429);
        assert_eq!(status("litellm.ContextWindowExceededError"), 400);
        assert_eq!(status("litellm.InternalServerError"), 500);
        assert_eq!(status("Exception: content_filter_policy blocked"), 400);
        assert_eq!(status("Exception: mock_streaming_error"), 529);
        let (_, body) =
            text(answer(&MockResponse::Text("litellm.ContextWindowExceededError".into()), "m", false)).await;
        assert!(body.contains("context_length_exceeded"), "{body}");
    }

    #[tokio::test]
    async fn an_object_mock_is_the_whole_answer_with_defaults_filled() {
        let raw = Bytes::from_static(
            br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"length"}]}"#,
        );
        let (_, body) = text(answer(&MockResponse::Object(raw.clone()), "m", false)).await;
        let v: Value = serde_json::from_str(&body).expect("json");
        assert_eq!((v["choices"][0]["finish_reason"].as_str(), v["model"].as_str()), (Some("length"), Some("m")));
        let (_, body) = text(answer(&MockResponse::Object(raw), "m", true)).await;
        let first = body.split("\n\n").next().and_then(|e| e.strip_prefix("data: ")).expect("an event");
        let chunk: Value = serde_json::from_str(first).expect("json");
        assert_eq!(chunk["choices"][0]["delta"], json!({"role": "assistant", "content": "x"}));
        assert_eq!(chunk["choices"][0]["finish_reason"], "length");
        assert!(body.ends_with("data: [DONE]\n\n"));
    }
}
