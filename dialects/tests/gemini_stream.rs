//! Gemini streams (`streamGenerateContent?alt=sse`) re-framed as chat completion chunks: text,
//! thoughts, function calls, usage, the end of the body, a blocked prompt, an error event, and
//! the same chunks however the bytes are split.

use std::time::Duration;

use serde_json::{Value, json};
use switchyard_dialects::gemini::ChunkTranslator;
use switchyard_dialects::sse::SseDecoder;
use switchyard_dialects::{ErrorClass, StreamItem};

/// The SSE body Gemini sends for `events` (`data: <json>\r\n\r\n` each).
fn sse(events: &[Value]) -> Vec<u8> {
    events.iter().flat_map(|e| format!("data: {e}\r\n\r\n").into_bytes()).collect()
}

fn run_split(body: &[u8], split: usize, include_usage: bool) -> Vec<StreamItem> {
    let mut decoder = SseDecoder::new(1 << 20);
    let mut chunks = ChunkTranslator::new("gemini-2.5-flash", 1_700_000_000, include_usage);
    let mut out = Vec::new();
    for piece in body.chunks(split.max(1)) {
        for event in decoder.push(piece).expect("decodes") {
            out.extend(chunks.push(&event).expect("translates"));
        }
    }
    out.extend(chunks.finish());
    out
}

fn run(body: &[u8]) -> Vec<StreamItem> {
    run_split(body, body.len(), true)
}

fn chunk(item: &StreamItem) -> Value {
    match item {
        StreamItem::Chunk(c) => serde_json::to_value(c).expect("serializes"),
        other => panic!("not a chunk: {other:?}"),
    }
}

fn text_stream() -> Vec<u8> {
    sse(&[
        json!({"candidates": [{"content": {"parts": [{"text": "The"}], "role": "model"}, "index": 0}],
               "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}, "modelVersion": "gemini-2.5-flash", "responseId": "abc"}),
        json!({"candidates": [{"content": {"parts": [{"text": " sky is"}], "role": "model"}, "index": 0}],
               "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}, "responseId": "abc"}),
        json!({"candidates": [{"content": {"parts": [{"text": " blue."}], "role": "model"}, "finishReason": "STOP", "index": 0}],
               "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 5, "totalTokenCount": 14}, "responseId": "abc"}),
    ])
}

#[test]
fn text_deltas_then_finish_then_usage_then_done() {
    let out = run(&text_stream());
    assert_eq!(out.len(), 6);
    assert_eq!(
        chunk(&out[0]),
        json!({"id": "chatcmpl-abc", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "gemini-2.5-flash",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": "The"}, "finish_reason": null}]})
    );
    assert_eq!(chunk(&out[1])["choices"][0]["delta"], json!({"content": " sky is"}));
    assert_eq!(chunk(&out[2])["choices"][0]["delta"], json!({"content": " blue."}));
    assert_eq!(chunk(&out[3])["choices"][0], json!({"index": 0, "delta": {}, "finish_reason": "stop"}));
    assert_eq!(chunk(&out[4])["choices"], json!([]));
    assert_eq!(chunk(&out[4])["usage"], json!({"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}));
    assert_eq!(out[5], StreamItem::Done);
}

#[test]
fn without_include_usage_there_is_no_usage_chunk_but_usage_is_known() {
    let body = text_stream();
    let out = run_split(&body, body.len(), false);
    assert_eq!(out.len(), 5);
    assert_eq!(out[4], StreamItem::Done);
}

#[test]
fn thoughts_and_function_calls() {
    let body = sse(&[
        json!({"candidates": [{"content": {"parts": [{"text": "**Checking the weather**", "thought": true}], "role": "model"}, "index": 0}]}),
        json!({"candidates": [{"content": {"parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "SIG"},
            {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}}], "role": "model"},
            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 10, "thoughtsTokenCount": 30, "totalTokenCount": 60}}),
    ]);
    let out = run(&body);
    assert_eq!(
        chunk(&out[0])["choices"][0]["delta"],
        json!({"role": "assistant", "content": "", "reasoning_content": "**Checking the weather**"})
    );
    let calls = &chunk(&out[1])["choices"][0]["delta"]["tool_calls"];
    assert_eq!(calls[0]["index"], 0);
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"], json!({"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}));
    assert!(calls[0]["id"].as_str().is_some_and(|id| id.starts_with("call_") && id.ends_with("__thought__SIG")));
    assert_eq!(calls[1]["index"], 1);
    assert_eq!(calls[1]["function"]["arguments"], "{\"city\":\"Rome\"}");
    assert_eq!(chunk(&out[2])["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(
        chunk(&out[3])["usage"],
        json!({"prompt_tokens": 20, "completion_tokens": 40, "total_tokens": 60,
               "completion_tokens_details": {"reasoning_tokens": 30}})
    );
    assert_eq!(out[4], StreamItem::Done);
}

#[test]
fn the_same_answer_streamed_or_whole_has_the_same_call_ids() {
    let event = json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {"a": 1}}}], "role": "model"},
        "finishReason": "STOP", "index": 0}], "responseId": "same"});
    let out = run(&sse(std::slice::from_ref(&event)));
    let streamed = chunk(&out[0])["choices"][0]["delta"]["tool_calls"][0]["id"].clone();
    let whole = switchyard_dialects::gemini::chat_from_response(
        serde_json::from_value(event).expect("an answer"),
        "gemini-2.5-flash",
        1_700_000_000,
    );
    assert_eq!(streamed, json!(whole.choices[0].message.tool_calls.as_ref().expect("calls")[0].id));
}

#[test]
fn a_body_that_ends_before_the_finish_reason_is_an_error() {
    let body = sse(&[json!({"candidates": [{"content": {"parts": [{"text": "The"}], "role": "model"}, "index": 0}]})]);
    let out = run(&body);
    assert!(matches!(out.last(), Some(StreamItem::Error { class: ErrorClass::ServerError, .. })), "{out:?}");
    assert!(matches!(run(b"").as_slice(), [StreamItem::Error { class: ErrorClass::ServerError, .. }]));
}

#[test]
fn a_blocked_prompt_is_a_content_policy_error() {
    let body = sse(&[json!({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 4}})]);
    let out = run(&body);
    assert_eq!(
        out,
        vec![StreamItem::Error {
            class: ErrorClass::ContentPolicy,
            message: "Gemini blocked the prompt: SAFETY".to_owned(),
            retry_after: None
        }]
    );
}

#[test]
fn an_error_event_mid_stream() {
    let body = [
        sse(&[json!({"candidates": [{"content": {"parts": [{"text": "Hi"}], "role": "model"}, "index": 0}]})]),
        sse(&[json!({"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}]}})]),
    ]
    .concat();
    let out = run(&body);
    assert_eq!(out.len(), 2);
    assert_eq!(
        out[1],
        StreamItem::Error {
            class: ErrorClass::RateLimited,
            message: "quota".to_owned(),
            retry_after: Some(Duration::from_secs(7))
        }
    );
}

#[test]
fn a_safety_stop_is_content_filter() {
    let body = sse(&[json!({"candidates": [{"finishReason": "SAFETY", "index": 0,
        "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true}]}]})]);
    let out = run(&body);
    assert_eq!(chunk(&out[1])["choices"][0]["finish_reason"], "content_filter");
    assert_eq!(out.last(), Some(&StreamItem::Done));
}

#[test]
fn data_that_is_not_an_answer_is_refused_naming_the_event() {
    let mut decoder = SseDecoder::new(1024);
    let mut chunks = ChunkTranslator::new("m", 0, false);
    let events = decoder.push(b"data: {\"candidates\": []}\n\ndata: [1, 2]\n\n").expect("decodes");
    assert!(chunks.push(&events[0]).is_ok());
    assert_eq!(chunks.push(&events[1]).expect_err("refused").field, "events[1].data");
}

#[test]
fn splitting_the_bytes_anywhere_gives_the_same_items() {
    let body = [text_stream(), sse(&[])].concat();
    let whole = run(&body);
    for split in [1, 2, 3, 7, 64] {
        assert_eq!(run_split(&body, split, true), whole, "split {split}");
    }
}
