//! Gemini answers as chat completions: golden translations of answers in the shapes of Google's
//! documented examples (text, function calls with thought signatures, thinking, safety stops, a
//! blocked prompt, several candidates, log probabilities) and their usage.

use serde_json::{Value, json};
use switchyard_dialects::gemini::{GenerateContentResponse, blocked, chat_from_response};

fn answer(body: Value) -> GenerateContentResponse {
    serde_json::from_value(body).expect("a Gemini answer")
}

fn translate(body: Value) -> Value {
    serde_json::to_value(chat_from_response(answer(body), "gemini-2.5-flash", 1_700_000_000)).expect("serializes")
}

#[test]
fn text_answer_with_usage() {
    let out = translate(json!({
        "candidates": [{"content": {"parts": [{"text": "AI learns patterns "}, {"text": "from data."}], "role": "model"},
                        "finishReason": "STOP", "avgLogprobs": -0.1, "index": 0}],
        "usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": 5, "totalTokenCount": 13,
                          "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 8}]},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "mAitaLmkHPPlz7IPvtfUqQ4",
    }));
    assert_eq!(
        out,
        json!({
            "id": "chatcmpl-mAitaLmkHPPlz7IPvtfUqQ4",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "gemini-2.5-flash",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "AI learns patterns from data."}}],
            "usage": {"prompt_tokens": 8, "completion_tokens": 5, "total_tokens": 13},
        })
    );
}

#[test]
fn function_calls_with_thoughts_and_signatures() {
    let out = translate(json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"text": "I need the weather for Paris and London.", "thought": true},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "SIG_A"},
            {"functionCall": {"name": "get_weather", "args": {"city": "London"}}},
        ]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 15, "thoughtsTokenCount": 4,
                          "cachedContentTokenCount": 6, "totalTokenCount": 31},
        "responseId": "r1",
    }));
    let message = &out["choices"][0]["message"];
    assert_eq!(out["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(message["content"], Value::Null);
    assert_eq!(message["reasoning_content"], "I need the weather for Paris and London.");
    let calls = message["tool_calls"].as_array().expect("tool calls");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["function"], json!({"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}));
    assert_eq!(calls[1]["function"], json!({"name": "get_weather", "arguments": "{\"city\":\"London\"}"}));
    let first = calls[0]["id"].as_str().expect("an id");
    assert!(first.starts_with("call_") && first.ends_with("__thought__SIG_A"), "{first}");
    let second = calls[1]["id"].as_str().expect("an id");
    assert!(second.starts_with("call_") && !second.contains("__thought__"), "{second}");
    assert_ne!(first.split("__").next(), Some(second));
    assert_eq!(
        out["usage"],
        json!({"prompt_tokens": 12, "completion_tokens": 19, "total_tokens": 31,
               "prompt_tokens_details": {"cached_tokens": 6}, "cache_read_input_tokens": 6,
               "completion_tokens_details": {"reasoning_tokens": 4}})
    );
    // The same answer gets the same ids: deterministic, not random.
    let again = translate(json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "SIG_A"}]},
            "finishReason": "STOP", "index": 0}],
        "responseId": "r1",
    }));
    assert_eq!(again["choices"][0]["message"]["tool_calls"][0]["id"], calls[0]["id"]);
}

#[test]
fn gemini_call_ids_are_kept() {
    let out = translate(json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"id": "fc_1", "name": "f", "args": {}}}]}, "finishReason": "STOP"}]}));
    assert_eq!(out["choices"][0]["message"]["tool_calls"][0]["id"], "fc_1");
}

#[test]
fn finish_reasons_map_as_litellm() {
    for (reason, finish) in [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("BLOCKLIST", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("SPII", "content_filter"),
        ("IMAGE_SAFETY", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "stop"),
        ("SOMETHING_NEW", "stop"),
    ] {
        let out = translate(json!({"candidates": [{"finishReason": reason, "index": 0}]}));
        assert_eq!(out["choices"][0]["finish_reason"], finish, "{reason}");
        assert_eq!(out["choices"][0]["message"]["content"], Value::Null);
    }
}

#[test]
fn a_blocked_prompt_is_reported_and_gives_an_empty_filtered_choice() {
    let body = json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT",
        "safetyRatings": [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH"}]},
        "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}});
    assert_eq!(blocked(&answer(body.clone())).as_deref(), Some("Gemini blocked the prompt: PROHIBITED_CONTENT"));
    let out = translate(body);
    assert_eq!(out["choices"][0]["finish_reason"], "content_filter");
    assert_eq!(out["usage"]["prompt_tokens"], 9);
    assert_eq!(blocked(&answer(json!({"candidates": [{"finishReason": "SAFETY"}]}))), None);
    assert_eq!(
        blocked(&answer(json!({"promptFeedback": {"blockReason": "OTHER", "blockReasonMessage": "no"}}))).as_deref(),
        Some("Gemini blocked the prompt: OTHER: no")
    );
}

#[test]
fn several_candidates_are_several_choices() {
    let out = translate(json!({"candidates": [
        {"content": {"role": "model", "parts": [{"text": "A"}]}, "finishReason": "STOP", "index": 0},
        {"content": {"role": "model", "parts": [{"text": "B"}]}, "finishReason": "MAX_TOKENS", "index": 1},
    ]}));
    assert_eq!(out["choices"][1]["index"], 1);
    assert_eq!(out["choices"][1]["message"]["content"], "B");
    assert_eq!(out["choices"][1]["finish_reason"], "length");
}

#[test]
fn log_probabilities_and_unmodelled_parts() {
    let out = translate(json!({"candidates": [{
        "content": {"role": "model", "parts": [{"text": "Hi"},
            {"executableCode": {"language": "PYTHON", "code": "print(1)"}}]},
        "finishReason": "STOP",
        "logprobsResult": {
            "topCandidates": [{"candidates": [{"token": "Hi", "tokenId": 1, "logProbability": -0.1},
                                              {"token": "Hey", "tokenId": 2, "logProbability": -2.5}]}],
            "chosenCandidates": [{"token": "Hi", "tokenId": 1, "logProbability": -0.1}]},
    }]}));
    assert_eq!(
        out["choices"][0]["logprobs"],
        json!({"content": [{"token": "Hi", "logprob": -0.1, "bytes": null, "top_logprobs": [
            {"token": "Hi", "logprob": -0.1, "bytes": null}, {"token": "Hey", "logprob": -2.5, "bytes": null}]}]})
    );
    assert_eq!(
        out["choices"][0]["message"]["provider_specific_fields"],
        json!({"parts": [{"executableCode": {"language": "PYTHON", "code": "print(1)"}}]})
    );
}

#[test]
fn candidates_token_count_that_already_includes_thoughts_is_not_added_twice() {
    let out = translate(json!({"candidates": [{"finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 9, "thoughtsTokenCount": 4, "totalTokenCount": 19}}));
    assert_eq!(out["usage"]["completion_tokens"], 9);
    assert_eq!(out["usage"]["total_tokens"], 19);
}
