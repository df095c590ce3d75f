//! LiteLLM's provider-side testing hooks: `mock_response` (in the request, else in the
//! deployment's `litellm_params`) answers an attempt without calling the upstream, and
//! `mock_timeout` makes every attempt of the call's first group wait its whole timeout and time
//! out.
//!
//! A mocked answer is built as the upstream answer an OpenAI deployment would give (a JSON body,
//! or server-sent events for a stream) and read by the same code as a real one: classified (an
//! error string gives that error's status and code), translated to the client's dialect
//! (`/v1/messages`, `/v1/responses`), metered and streamed. What a chat answer contains is
//! LiteLLM's `mock_completion`: the content, `"assistant"`, a finish reason of `stop`, usage of
//! 10 prompt and 20 completion tokens, and streams in chunks of three characters. A text
//! completion is the same answer in `/v1/completions`' format (LiteLLM's `text_completion` calls
//! `mock_completion` and converts). An embeddings answer is LiteLLM's `mock_embedding`: the
//! `mock_response` array (or string) as the vector, usage of 10 prompt tokens, and `"error"` is a
//! 500.

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
/// The length of the vector an embeddings answer given as an object without `data` gets
/// (LiteLLM's `mock_embedding` default: 1536 zeros).
const DEFAULT_EMBEDDING_LEN: usize = 1536;

/// What the hooks make of one attempt.
pub(crate) enum Mocked {
    /// The upstream answer to read instead of calling the upstream.
    Answer { route: Route, response: http::Response<Full<Bytes>> },
    /// The attempt ends at its time bound; with no bound at all, `unbounded` is the answer.
    Timeout { route: Route, unbounded: http::Response<Full<Bytes>> },
}

/// The hook that applies to this attempt at `d`, if any: `mock_timeout` on the call's first
/// group, else the request's `mock_response`, else the deployment's. `body` is the client's
/// request (an embeddings answer has one vector per input).
pub(crate) fn mocked(d: &Deployment, ctx: &RouteCtx, body: &[u8]) -> Result<Option<Mocked>, RouteError> {
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
        Endpoint::Chat | Endpoint::Completion | Endpoint::Embedding => Wire::OpenAi,
        Endpoint::Messages => Wire::Anthropic,
        Endpoint::Responses => Wire::Responses,
        // Counting tokens and operations on stored responses are not answers: no hook applies.
        Endpoint::CountTokens | Endpoint::ResponseOp(_) => return Ok(None),
        _ => {
            return Err(RouteError::new(
                RouteErrorKind::InvalidRequest,
                "`mock_response` and `mock_timeout` answer chat completions, completions, embeddings, \
                 `/v1/messages` and `/v1/responses` requests only",
            ));
        }
    };
    // The answer is written as an OpenAI chat completions deployment would give it; the client's
    // dialect is reached by the usual translation.
    let route = Route { ingress, egress: Wire::OpenAi };
    let (endpoint, stream, model) = (facts.endpoint, facts.stream, upstream_model(&d.model));
    if timeout {
        let unbounded = MockResponse::Text(DEFAULT_MOCK_CONTENT.to_owned());
        return Ok(Some(Mocked::Timeout { route, unbounded: answer(&unbounded, endpoint, model, stream, body) }));
    }
    let response = response.unwrap_or_else(|| MockResponse::Text(DEFAULT_MOCK_CONTENT.to_owned()));
    if matches!(response, MockResponse::List(_)) && endpoint != Endpoint::Embedding {
        return Err(RouteError::new(
            RouteErrorKind::InvalidRequest,
            "`mock_response` as an array (an embedding's vector) answers embeddings requests only",
        ));
    }
    Ok(Some(Mocked::Answer { route, response: answer(&response, endpoint, model, stream, body) }))
}

/// The deployment's `litellm_params.mock_response`.
fn deployment_mock(d: &Deployment) -> Result<Option<MockResponse>, RouteError> {
    match d.params.get("mock_response") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(MockResponse::Text(s.clone()))),
        Some(v @ Value::Object(_)) => Ok(Some(MockResponse::Object(Bytes::from(v.to_string())))),
        Some(v @ Value::Array(_)) => Ok(Some(MockResponse::List(Bytes::from(v.to_string())))),
        Some(_) => Err(RouteError::new(
            RouteErrorKind::Upstream,
            format!("deployment `{}`: `litellm_params.mock_response` must be a string, a mapping or a list", d.id),
        )
        .with_outcome(switchyard_layers::Outcome::BadRequest)
        .with_deployment(d.id.clone())),
    }
}

/// The upstream answer a mock stands for, for a request to `endpoint` (chat, completions or
/// embeddings; the other dialects are translated from chat). `body` is the client's request.
fn answer(
    mock: &MockResponse,
    endpoint: Endpoint,
    model: &str,
    stream: bool,
    body: &[u8],
) -> http::Response<Full<Bytes>> {
    let completion = endpoint == Endpoint::Completion;
    let text = match mock {
        MockResponse::Object(raw) if endpoint == Endpoint::Embedding => return embeddings_object(raw, model),
        MockResponse::Object(raw) => return object_answer(raw, model, stream, completion),
        MockResponse::List(raw) => return embeddings(vector(raw), model, inputs(body)),
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
        // `mock_embedding` raises `Exception("Mock error")`, which LiteLLM maps to a 500.
        "error" if endpoint == Endpoint::Embedding => error(500, "server_error", None, "Mock error"),
        // LiteLLM's `Embedding.embedding` is `list | str`: a string is the vector as written.
        vector if endpoint == Endpoint::Embedding => embeddings(Value::from(vector), model, inputs(body)),
        content if stream && completion => sse_response(&completion_chunks(content, model)),
        content if stream => sse_response(&text_chunks(content, model)),
        content if completion => json_response(StatusCode::OK, &text_completion(content, model)),
        content => json_response(StatusCode::OK, &chat_completion(content, model)),
    }
}

/// A chat completion id (`chatcmpl-`), or a text completion's (`cmpl-`), as OpenAI writes them.
fn completion_id(completion: bool) -> String {
    let mut rng = SmallRng::from_os_rng();
    let prefix = if completion { "cmpl" } else { "chatcmpl" };
    format!("{prefix}-mock{:016x}{:08x}", rng.next_u64(), rng.next_u32())
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
fn chat_completion(content: &str, model: &str) -> Value {
    json!({
        "id": completion_id(false),
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
    let (id, created) = (completion_id(false), now());
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

/// A non-streaming text completion with `text` (LiteLLM's `convert_chat_to_text_completion` of
/// the chat answer).
fn text_completion(text: &str, model: &str) -> Value {
    json!({
        "id": completion_id(true),
        "object": "text_completion",
        "created": now(),
        "model": model,
        "choices": [{ "text": text, "index": 0, "logprobs": null, "finish_reason": "stop" }],
        "usage": usage(),
    })
}

/// The chunks of a streamed text completion with `text`: three characters at a time, then the
/// finish reason, then the usage (LiteLLM's `TextCompletionStreamWrapper` over the chat mock).
fn completion_chunks(text: &str, model: &str) -> Vec<Value> {
    let (id, created) = (completion_id(true), now());
    let chunk = |choices: Value| json!({ "id": id, "object": "text_completion", "created": created, "model": model, "choices": choices });
    let chars: Vec<char> = text.chars().collect();
    let mut chunks: Vec<Value> = chars
        .chunks(3)
        .map(|piece| {
            let piece: String = piece.iter().collect();
            chunk(json!([{ "text": piece, "index": 0, "logprobs": null, "finish_reason": null }]))
        })
        .collect();
    chunks.push(chunk(json!([{ "text": "", "index": 0, "logprobs": null, "finish_reason": "stop" }])));
    let mut last = chunk(json!([]));
    last["usage"] = usage();
    chunks.push(last);
    chunks
}

/// How many inputs an embeddings request carries: one vector is answered for each (a string or
/// a list of token ids is one input; a list of strings or of token lists is one per item).
fn inputs(body: &[u8]) -> usize {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default)]
        input: Value,
    }
    match serde_json::from_slice::<Probe>(body).map(|p| p.input) {
        Ok(Value::Array(items)) if items.first().is_some_and(|i| i.is_string() || i.is_array()) => items.len(),
        _ => 1,
    }
}

/// A `mock_response` array as the vector it stands for.
fn vector(raw: &[u8]) -> Value {
    serde_json::from_slice(raw).unwrap_or_else(|_| Value::Array(Vec::new()))
}

/// OpenAI's embeddings list with `vector` for each of `inputs`, and LiteLLM's mock usage of 10
/// prompt tokens.
fn embeddings(vector: Value, model: &str, inputs: usize) -> http::Response<Full<Bytes>> {
    let data: Vec<Value> =
        (0..inputs.max(1)).map(|index| json!({ "object": "embedding", "index": index, "embedding": vector })).collect();
    json_response(
        StatusCode::OK,
        &json!({
            "object": "list",
            "data": data,
            "model": model,
            "usage": { "prompt_tokens": MOCK_PROMPT_TOKENS, "total_tokens": MOCK_PROMPT_TOKENS },
        }),
    )
}

/// A `mock_response` object for an embeddings request: the whole embeddings list, with the
/// members it leaves out filled in (`data`: one vector of 1536 zeros, LiteLLM's default).
fn embeddings_object(raw: &[u8], model: &str) -> http::Response<Full<Bytes>> {
    let mut object = match serde_json::from_slice::<Value>(raw) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let mut fill = |key: &str, value: Value| {
        object.entry(key.to_owned()).or_insert(value);
    };
    fill("object", Value::from("list"));
    fill("data", json!([{ "object": "embedding", "index": 0, "embedding": vec![0.0; DEFAULT_EMBEDDING_LEN] }]));
    fill("model", Value::from(model));
    fill("usage", json!({ "prompt_tokens": MOCK_PROMPT_TOKENS, "total_tokens": MOCK_PROMPT_TOKENS }));
    json_response(StatusCode::OK, &Value::Object(object))
}

/// A `mock_response` object: the whole answer (LiteLLM's `ModelResponse(**mock_response)`), with
/// the members it leaves out filled in; for a stream, one chunk carrying each choice's message as
/// its delta (LiteLLM's `convert_model_response_to_streaming`). A text completion's choices
/// carry `text` and stream as they are.
fn object_answer(raw: &[u8], model: &str, stream: bool, completion: bool) -> http::Response<Full<Bytes>> {
    let mut object = match serde_json::from_slice::<Value>(raw) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let mut fill = |key: &str, value: Value| {
        object.entry(key.to_owned()).or_insert(value);
    };
    fill("id", Value::from(completion_id(completion)));
    fill("created", Value::from(now()));
    fill("model", Value::from(model));
    let choice = if completion {
        json!({ "text": "", "index": 0, "logprobs": null, "finish_reason": "stop" })
    } else {
        json!({ "index": 0, "message": { "role": "assistant", "content": null }, "finish_reason": "stop" })
    };
    fill("choices", json!([choice]));
    fill("usage", usage());
    let kind = if completion { "text_completion" } else { "chat.completion" };
    if !stream {
        object.insert("object".to_owned(), Value::from(kind));
        return json_response(StatusCode::OK, &Value::Object(object));
    }
    let usage = object.remove("usage").unwrap_or_else(usage);
    let choices = match object.remove("choices") {
        Some(Value::Array(choices)) => choices,
        _ => Vec::new(),
    };
    let choices: Vec<Value> = if completion {
        choices
    } else {
        choices
            .into_iter()
            .enumerate()
            .map(|(i, mut c)| {
                let delta = c.get_mut("message").map(Value::take).unwrap_or_else(|| json!({}));
                let finish = c.get("finish_reason").cloned().unwrap_or_else(|| Value::from("stop"));
                let index = c.get("index").cloned().unwrap_or_else(|| Value::from(i));
                json!({ "index": index, "delta": delta, "finish_reason": finish })
            })
            .collect()
    };
    let kind = if completion { "text_completion" } else { "chat.completion.chunk" };
    object.insert("object".to_owned(), Value::from(kind));
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

    fn chat(mock: &MockResponse, model: &str, stream: bool) -> http::Response<Full<Bytes>> {
        answer(mock, Endpoint::Chat, model, stream, b"{}")
    }

    async fn text(resp: http::Response<Full<Bytes>>) -> (StatusCode, String) {
        let status = resp.status();
        let bytes = resp.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[tokio::test]
    async fn a_text_mock_is_a_chat_completion_with_litellms_usage() {
        let (status, body) = text(chat(&MockResponse::Text("hi there".into()), "gpt-4o", false)).await;
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
        let (_, body) = text(chat(&MockResponse::Text("abcdefg".into()), "m", true)).await;
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
        let status = |s: &str| chat(&MockResponse::Text(s.into()), "m", false).status().as_u16();
        assert_eq!(status("litellm.RateLimitError"), 429);
        assert_eq!(status("litellm.ContextWindowExceededError"), 400);
        assert_eq!(status("litellm.InternalServerError"), 500);
        assert_eq!(status("Exception: content_filter_policy blocked"), 400);
        assert_eq!(status("Exception: mock_streaming_error"), 529);
        let (_, body) = text(chat(&MockResponse::Text("litellm.ContextWindowExceededError".into()), "m", false)).await;
        assert!(body.contains("context_length_exceeded"), "{body}");
    }

    #[tokio::test]
    async fn an_object_mock_is_the_whole_answer_with_defaults_filled() {
        let raw = Bytes::from_static(
            br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"length"}]}"#,
        );
        let (_, body) = text(chat(&MockResponse::Object(raw.clone()), "m", false)).await;
        let v: Value = serde_json::from_str(&body).expect("json");
        assert_eq!((v["choices"][0]["finish_reason"].as_str(), v["model"].as_str()), (Some("length"), Some("m")));
        let (_, body) = text(chat(&MockResponse::Object(raw), "m", true)).await;
        let first = body.split("\n\n").next().and_then(|e| e.strip_prefix("data: ")).expect("an event");
        let chunk: Value = serde_json::from_str(first).expect("json");
        assert_eq!(chunk["choices"][0]["delta"], json!({"role": "assistant", "content": "x"}));
        assert_eq!(chunk["choices"][0]["finish_reason"], "length");
        assert!(body.ends_with("data: [DONE]\n\n"));
    }

    #[tokio::test]
    async fn an_embeddings_mock_is_the_vector_of_each_input() {
        let list = MockResponse::List(Bytes::from_static(b"[0.5,1]"));
        let body = br#"{"model":"e","input":["a","b"]}"#;
        let (status, out) = text(answer(&list, Endpoint::Embedding, "e", false, body)).await;
        let v: Value = serde_json::from_str(&out).expect("json");
        assert_eq!(status, StatusCode::OK);
        assert_eq!(v["object"], "list");
        assert_eq!(v["data"][1], json!({"object": "embedding", "index": 1, "embedding": [0.5, 1]}));
        assert_eq!(v["usage"], json!({"prompt_tokens": 10, "total_tokens": 10}));
        let error = answer(&MockResponse::Text("error".into()), Endpoint::Embedding, "e", false, body);
        assert_eq!(error.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let (_, out) =
            text(answer(&MockResponse::Object(Bytes::from_static(b"{}")), Endpoint::Embedding, "e", false, b"{}"))
                .await;
        let v: Value = serde_json::from_str(&out).expect("json");
        assert_eq!(v["data"][0]["embedding"].as_array().map(Vec::len), Some(1536));
    }

    #[tokio::test]
    async fn a_completions_mock_is_a_text_completion() {
        let mock = MockResponse::Text("abcd".into());
        let (_, out) = text(answer(&mock, Endpoint::Completion, "m", false, b"{}")).await;
        let v: Value = serde_json::from_str(&out).expect("json");
        assert_eq!(v["object"], "text_completion");
        assert_eq!(v["choices"][0], json!({"text": "abcd", "index": 0, "logprobs": null, "finish_reason": "stop"}));
        assert!(v["id"].as_str().is_some_and(|id| id.starts_with("cmpl-")));
        let (_, body) = text(answer(&mock, Endpoint::Completion, "m", true, b"{}")).await;
        let pieces: Vec<String> = body
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter_map(|v| v["choices"][0]["text"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(pieces, ["abc", "d", ""]);
    }
}
