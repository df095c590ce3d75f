//! The required fields of the official Python SDK's types (`openai-python`,
//! `src/openai/types/responses/`), so tests can check that what the dialect writes parses there.

#![allow(dead_code)]

use serde_json::Value;

fn require(value: &Value, keys: &[&str], what: &str) {
    for key in keys {
        assert!(value.get(key).is_some(), "{what} lacks `{key}`: {value}");
    }
}

/// `Response` (response.py).
pub(crate) fn check_response(response: &Value) {
    require(
        response,
        &["id", "created_at", "model", "object", "output", "parallel_tool_calls", "tool_choice", "tools"],
        "Response",
    );
    assert_eq!(response["object"], "response");
    assert!(response["created_at"].is_number());
    for item in response["output"].as_array().expect("output is an array") {
        check_item(item);
    }
    if let Some(usage) = response.get("usage").filter(|u| !u.is_null()) {
        require(
            usage,
            &["input_tokens", "input_tokens_details", "output_tokens", "output_tokens_details", "total_tokens"],
            "ResponseUsage",
        );
        require(&usage["input_tokens_details"], &["cached_tokens", "cache_write_tokens"], "InputTokensDetails");
        require(&usage["output_tokens_details"], &["reasoning_tokens"], "OutputTokensDetails");
    }
    if let Some(error) = response.get("error").filter(|e| !e.is_null()) {
        require(error, &["code", "message"], "ResponseError");
    }
}

/// `ResponseOutputItem` for the kinds the dialect writes.
pub(crate) fn check_item(item: &Value) {
    match item["type"].as_str() {
        Some("message") => {
            require(item, &["id", "content", "role", "status"], "ResponseOutputMessage");
            assert_eq!(item["role"], "assistant");
            for part in item["content"].as_array().expect("content is an array") {
                check_part(part);
            }
        }
        Some("function_call") => require(item, &["arguments", "call_id", "name"], "ResponseFunctionToolCall"),
        Some("reasoning") => {
            require(item, &["id", "summary"], "ResponseReasoningItem");
            for part in item["summary"].as_array().expect("summary is an array") {
                require(part, &["text", "type"], "Summary");
                assert_eq!(part["type"], "summary_text");
            }
        }
        other => panic!("unexpected item type {other:?}: {item}"),
    }
}

/// A message content part: `ResponseOutputText` or `ResponseOutputRefusal`.
pub(crate) fn check_part(part: &Value) {
    match part["type"].as_str() {
        Some("output_text") => require(part, &["annotations", "text"], "ResponseOutputText"),
        Some("refusal") => require(part, &["refusal"], "ResponseOutputRefusal"),
        other => panic!("unexpected part type {other:?}: {part}"),
    }
}

/// A stream event (response_*_event.py).
pub(crate) fn check_event(event: &Value) {
    require(event, &["type", "sequence_number"], "event");
    let name = event["type"].as_str().expect("type is a string");
    let keys: &[&str] = match name {
        "response.created"
        | "response.in_progress"
        | "response.completed"
        | "response.incomplete"
        | "response.failed" => {
            check_response(&event["response"]);
            &["response"]
        }
        "response.output_item.added" | "response.output_item.done" => {
            check_item(&event["item"]);
            &["item", "output_index"]
        }
        "response.content_part.added" | "response.content_part.done" => {
            check_part(&event["part"]);
            &["content_index", "item_id", "output_index", "part"]
        }
        "response.output_text.delta" => &["content_index", "delta", "item_id", "logprobs", "output_index"],
        "response.output_text.done" => &["content_index", "item_id", "logprobs", "output_index", "text"],
        "response.function_call_arguments.delta" => &["delta", "item_id", "output_index"],
        "response.function_call_arguments.done" => &["arguments", "item_id", "name", "output_index"],
        "response.reasoning_summary_part.added" | "response.reasoning_summary_part.done" => {
            require(&event["part"], &["text", "type"], "Part");
            &["item_id", "output_index", "part", "summary_index"]
        }
        "response.reasoning_summary_text.delta" => &["delta", "item_id", "output_index", "summary_index"],
        "response.reasoning_summary_text.done" => &["item_id", "output_index", "summary_index", "text"],
        other => panic!("unexpected event type {other}"),
    };
    require(event, keys, name);
}
