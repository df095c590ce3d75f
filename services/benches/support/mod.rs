//! What the provider benchmarks share: an OpenAI chat completion answer, the chat request every
//! case sends, and an answer made from a static JSON body.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use serde_json::json;
use switchyard_layers::{ApiKey, Deployment};

/// OpenAI's documented chat completion with a tool call, as the baseline's upstream answers.
pub(crate) const OPENAI_ANSWER: &str = r#"{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion","created":1741569952,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":"I'll check the current weather in Paris for you, and then tell you whether an umbrella is a good idea.","tool_calls":[{"id":"call_12345xyz","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":\"celsius\"}"}}],"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":472,"completion_tokens":91,"total_tokens":563}}"#;

/// A chat request with a system prompt, a question and one tool: what every case sends.
pub(crate) fn chat_body() -> Bytes {
    let body = json!({
        "model": "assistant",
        "messages": [
            {"role": "system", "content": "You are a helpful assistant for travellers. Answer briefly, in the language of the question, and use the tools when the answer depends on current conditions."},
            {"role": "user", "content": "What is the weather in Paris today, and should I bring an umbrella? I will be walking around the Marais in the afternoon."}
        ],
        "max_tokens": 512,
        "temperature": 0.2,
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}],
        "tool_choice": "auto"
    });
    Bytes::from(body.to_string())
}

/// The answer of a transport that answers at once.
pub(crate) type Answer = std::future::Ready<Result<http::Response<Full<Bytes>>, Infallible>>;

/// A 200 `application/json` answer with `body`.
pub(crate) fn json_answer(body: &'static str) -> Answer {
    let mut resp = http::Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    std::future::ready(Ok(resp))
}

/// The baseline: an OpenAI deployment whose key goes in a header, no signing, no token.
pub(crate) fn openai() -> Deployment {
    Deployment::builder("assistant", "openai/gpt-4.1")
        .api_base("http://upstream.invalid/v1")
        .api_key(ApiKey::new("sk-bench-key"))
        .build()
        .expect("valid")
}
