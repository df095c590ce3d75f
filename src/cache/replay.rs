//! A cached chat (or text) completion served to a streaming request: the answer re-framed as the
//! server-sent events OpenAI sends (LiteLLM's `convert_to_streaming_response`): one chunk with
//! each choice's whole message as its delta, one with each choice's `finish_reason`, the usage
//! chunk when `stream_options.include_usage` asks for it, then `data: [DONE]`.

use bytes::Bytes;
use serde_json::{Map, Value, json};

/// The server-sent events of `answer` (a `chat.completion` JSON body); `None` when it is not one.
pub(crate) fn chat_stream(answer: &[u8], include_usage: bool) -> Option<Bytes> {
    let Ok(Value::Object(mut answer)) = serde_json::from_slice::<Value>(answer) else { return None };
    let Some(Value::Array(choices)) = answer.remove("choices") else { return None };
    let usage = answer.remove("usage");
    let mut head = Map::new();
    for key in ["id", "created", "model", "system_fingerprint", "service_tier"] {
        if let Some(v) = answer.get(key).filter(|v| !v.is_null()) {
            head.insert(key.to_owned(), v.clone());
        }
    }
    head.insert("object".to_owned(), Value::from("chat.completion.chunk"));
    if include_usage {
        head.insert("usage".to_owned(), Value::Null);
    }
    let chunk = |choices: Vec<Value>| {
        let mut c = head.clone();
        c.insert("choices".to_owned(), Value::Array(choices));
        Value::Object(c)
    };
    let mut deltas = Vec::with_capacity(choices.len());
    let mut finishes = Vec::with_capacity(choices.len());
    for (i, choice) in choices.into_iter().enumerate() {
        let Value::Object(mut choice) = choice else { return None };
        let index = choice.remove("index").unwrap_or_else(|| Value::from(i));
        let mut delta = match choice.remove("message") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        delta.retain(|_, v| !v.is_null());
        delta.entry("role").or_insert_with(|| Value::from("assistant"));
        // A streamed tool call names its position in the list.
        if let Some(Value::Array(calls)) = delta.get_mut("tool_calls") {
            for (j, call) in calls.iter_mut().enumerate() {
                if let Value::Object(call) = call {
                    call.entry("index").or_insert_with(|| Value::from(j));
                }
            }
        }
        let logprobs = choice.remove("logprobs").unwrap_or(Value::Null);
        let finish = choice.remove("finish_reason").filter(|f| !f.is_null()).unwrap_or_else(|| Value::from("stop"));
        deltas.push(json!({ "index": index, "delta": delta, "logprobs": logprobs, "finish_reason": null }));
        finishes.push(json!({ "index": index, "delta": {}, "finish_reason": finish }));
    }
    let mut out = String::new();
    let mut event = |v: &Value| {
        out.push_str("data: ");
        out.push_str(&v.to_string());
        out.push_str("\n\n");
    };
    event(&chunk(deltas));
    event(&chunk(finishes));
    if include_usage {
        let mut last = chunk(Vec::new());
        last["usage"] = usage.unwrap_or(Value::Null);
        event(&last);
    }
    out.push_str("data: [DONE]\n\n");
    Some(Bytes::from(out))
}

/// The server-sent events of `answer` (a `text_completion` JSON body), as OpenAI streams a
/// completion: one chunk with each choice's whole text, one with each choice's `finish_reason`,
/// the usage chunk when asked for, then `data: [DONE]`; `None` when it is not one.
pub(crate) fn completion_stream(answer: &[u8], include_usage: bool) -> Option<Bytes> {
    let Ok(Value::Object(mut answer)) = serde_json::from_slice::<Value>(answer) else { return None };
    let Some(Value::Array(choices)) = answer.remove("choices") else { return None };
    let usage = answer.remove("usage");
    let mut head = Map::new();
    for key in ["id", "created", "model", "system_fingerprint"] {
        if let Some(v) = answer.get(key).filter(|v| !v.is_null()) {
            head.insert(key.to_owned(), v.clone());
        }
    }
    head.insert("object".to_owned(), Value::from("text_completion"));
    let chunk = |choices: Vec<Value>, usage: Option<Value>| {
        let mut c = head.clone();
        c.insert("choices".to_owned(), Value::Array(choices));
        if let Some(usage) = usage {
            c.insert("usage".to_owned(), usage);
        }
        Value::Object(c)
    };
    let mut texts = Vec::with_capacity(choices.len());
    let mut finishes = Vec::with_capacity(choices.len());
    for (i, choice) in choices.into_iter().enumerate() {
        let Value::Object(mut choice) = choice else { return None };
        let index = choice.remove("index").unwrap_or_else(|| Value::from(i));
        let text = choice.remove("text").unwrap_or_else(|| Value::from(""));
        let logprobs = choice.remove("logprobs").unwrap_or(Value::Null);
        let finish = choice.remove("finish_reason").filter(|f| !f.is_null()).unwrap_or_else(|| Value::from("stop"));
        texts.push(json!({ "index": index, "text": text, "logprobs": logprobs, "finish_reason": null }));
        finishes.push(json!({ "index": index, "text": "", "logprobs": null, "finish_reason": finish }));
    }
    let mut out = String::new();
    for event in [chunk(texts, None), chunk(finishes, None)]
        .into_iter()
        .chain(include_usage.then(|| chunk(Vec::new(), Some(usage.unwrap_or(Value::Null)))))
    {
        out.push_str("data: ");
        out.push_str(&event.to_string());
        out.push_str("\n\n");
    }
    out.push_str("data: [DONE]\n\n");
    Some(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(b: &Bytes) -> Vec<String> {
        std::str::from_utf8(b)
            .unwrap()
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| e.strip_prefix("data: ").expect("data field").to_owned())
            .collect()
    }

    #[test]
    fn a_completion_becomes_chunks_then_done() {
        let answer = json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 7, "model": "gpt-4o",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello", "refusal": null}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
        });
        let sse = chat_stream(answer.to_string().as_bytes(), true).unwrap();
        let events = events(&sse);
        assert_eq!(events.len(), 4);
        assert_eq!(events[3], "[DONE]");
        let first: Value = serde_json::from_str(&events[0]).unwrap();
        assert_eq!(first["object"], "chat.completion.chunk");
        assert_eq!(first["id"], "chatcmpl-1");
        assert_eq!(first["choices"][0]["delta"], json!({"role": "assistant", "content": "hello"}));
        assert_eq!(first["usage"], Value::Null);
        let second: Value = serde_json::from_str(&events[1]).unwrap();
        assert_eq!(second["choices"][0]["finish_reason"], "stop");
        let usage: Value = serde_json::from_str(&events[2]).unwrap();
        assert_eq!(usage["choices"], json!([]));
        assert_eq!(usage["usage"]["total_tokens"], 4);
    }

    #[test]
    fn tool_calls_get_their_index_and_no_usage_chunk_unless_asked() {
        let answer = json!({
            "id": "c", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ]}, "finish_reason": "tool_calls"}]
        });
        let events = events(&chat_stream(answer.to_string().as_bytes(), false).unwrap());
        assert_eq!(events.len(), 3);
        let first: Value = serde_json::from_str(&events[0]).unwrap();
        assert!(first.get("usage").is_none());
        assert_eq!(first["choices"][0]["delta"]["tool_calls"][0]["index"], 0);
        assert!(first["choices"][0]["delta"].get("content").is_none());
        let second: Value = serde_json::from_str(&events[1]).unwrap();
        assert_eq!(second["choices"][0]["finish_reason"], "tool_calls");
    }

    #[test]
    fn a_text_completion_streams_as_text_chunks() {
        let answer = json!({
            "id": "cmpl-1", "object": "text_completion", "created": 3, "model": "gpt-3.5-turbo-instruct",
            "choices": [{"index": 0, "text": "four", "logprobs": null, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}
        });
        let events = events(&completion_stream(answer.to_string().as_bytes(), true).unwrap());
        assert_eq!(events.len(), 4);
        let first: Value = serde_json::from_str(&events[0]).unwrap();
        assert_eq!(first["object"], "text_completion");
        assert_eq!(first["choices"][0]["text"], "four");
        let second: Value = serde_json::from_str(&events[1]).unwrap();
        assert_eq!(second["choices"][0]["finish_reason"], "length");
        let usage: Value = serde_json::from_str(&events[2]).unwrap();
        assert_eq!(usage["usage"]["total_tokens"], 3);
        assert_eq!(events[3], "[DONE]");
    }

    #[test]
    fn anything_else_is_not_replayed() {
        assert!(chat_stream(b"not json", false).is_none());
        assert!(chat_stream(br#"{"data": []}"#, false).is_none());
    }
}
