//! Whole chat answers as responses: status, output items, ids, usage, and the SDK's required
//! fields.

mod responses_sdk;

use serde_json::{Value, json};
use switchyard_dialects::chat::ChatCompletion;
use switchyard_dialects::responses::{Response, ResponseStatus, ResponsesRequest, response_from_chat, usage_of};

fn answer(message: Value, finish_reason: &str) -> ChatCompletion {
    serde_json::from_value(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000, "model": "llama-3.3",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52,
                  "prompt_tokens_details": {"cached_tokens": 8},
                  "completion_tokens_details": {"reasoning_tokens": 5}},
    }))
    .expect("a chat completion")
}

fn translate(message: Value, finish_reason: &str) -> Value {
    let resp = response_from_chat(answer(message, finish_reason), "resp_abc", 1_700_000_001);
    let value = serde_json::to_value(&resp).expect("serializes");
    responses_sdk::check_response(&value);
    value
}

#[test]
fn a_text_answer_is_a_completed_message() {
    let resp = translate(json!({"role": "assistant", "content": "Paris."}), "stop");
    assert_eq!(
        resp,
        json!({
            "id": "resp_abc",
            "object": "response",
            "created_at": 1_700_000_001,
            "status": "completed",
            "error": null,
            "incomplete_details": null,
            "instructions": null,
            "max_output_tokens": null,
            "model": "llama-3.3",
            "output": [{"type": "message", "id": "msg_abc_0", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "Paris.", "annotations": [], "logprobs": []}]}],
            "parallel_tool_calls": true,
            "previous_response_id": null,
            "reasoning": null,
            "temperature": null,
            "tool_choice": "auto",
            "tools": [],
            "top_p": null,
            "usage": {"input_tokens": 40, "input_tokens_details": {"cached_tokens": 8, "cache_write_tokens": 0},
                      "output_tokens": 12, "output_tokens_details": {"reasoning_tokens": 5}, "total_tokens": 52},
            "user": null,
            "metadata": {},
        })
    );
}

#[test]
fn reasoning_text_and_tool_calls_become_items_in_order() {
    let resp = translate(
        json!({"role": "assistant", "content": "Let me check.", "reasoning_content": "The user wants weather.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"Paris\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"Rome\"}"}},
        ]}),
        "tool_calls",
    );
    assert_eq!(resp["status"], "completed");
    assert_eq!(
        resp["output"],
        json!([
            {"type": "reasoning", "id": "rs_abc_0", "summary": [{"type": "summary_text", "text": "The user wants weather."}]},
            {"type": "message", "id": "msg_abc_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Let me check.", "annotations": [], "logprobs": []}]},
            {"type": "function_call", "id": "fc_abc_2", "call_id": "call_1", "name": "w",
             "arguments": "{\"city\":\"Paris\"}", "status": "completed"},
            {"type": "function_call", "id": "fc_abc_3", "call_id": "call_2", "name": "w",
             "arguments": "{\"city\":\"Rome\"}", "status": "completed"},
        ])
    );
}

#[test]
fn tool_calls_without_text_have_no_message() {
    let resp = translate(
        json!({"role": "assistant", "content": null,
               "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]}),
        "tool_calls",
    );
    let kinds: Vec<&str> = resp["output"].as_array().into_iter().flatten().filter_map(|i| i["type"].as_str()).collect();
    assert_eq!(kinds, ["function_call"]);
}

#[test]
fn length_makes_the_response_incomplete_for_max_output_tokens() {
    let resp = translate(json!({"role": "assistant", "content": "Once upon a"}), "length");
    assert_eq!(resp["status"], "incomplete");
    assert_eq!(resp["incomplete_details"], json!({"reason": "max_output_tokens"}));
    assert_eq!(resp["output"][0]["status"], "incomplete");
}

#[test]
fn content_filter_makes_the_response_incomplete_for_content_filter() {
    let resp = translate(json!({"role": "assistant", "content": ""}), "content_filter");
    assert_eq!(resp["status"], "incomplete");
    assert_eq!(resp["incomplete_details"], json!({"reason": "content_filter"}));
}

#[test]
fn a_refusal_is_a_refusal_part() {
    let resp = translate(json!({"role": "assistant", "content": null, "refusal": "I can't help with that."}), "stop");
    assert_eq!(resp["output"][0]["content"], json!([{"type": "refusal", "refusal": "I can't help with that."}]));
}

#[test]
fn anthropic_cache_counts_map_to_input_details() {
    let mut chat = answer(json!({"role": "assistant", "content": "ok"}), "stop");
    chat.usage = serde_json::from_value(json!({"prompt_tokens": 100, "completion_tokens": 3, "total_tokens": 103,
        "cache_creation_input_tokens": 20, "cache_read_input_tokens": 70}))
    .ok();
    let resp = response_from_chat(chat, "resp_1", 1);
    let usage = resp.usage.expect("usage");
    assert_eq!(usage.input_tokens_details.cached_tokens, 70);
    assert_eq!(usage.input_tokens_details.cache_write_tokens, 20);
    assert_eq!(usage.total_tokens, 103);
}

#[test]
fn echoed_request_settings_appear_on_the_response() {
    let req: ResponsesRequest = serde_json::from_value(json!({
        "model": "m", "input": "hi", "instructions": "Be terse.", "max_output_tokens": 50,
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": true}],
        "tool_choice": "required", "parallel_tool_calls": false, "temperature": 0.5,
        "text": {"format": {"type": "text"}}, "metadata": {"k": "v"}, "user": "u",
    }))
    .expect("parses");
    let mut resp = response_from_chat(answer(json!({"role": "assistant", "content": "ok"}), "stop"), "resp_1", 1);
    resp.echo_request(&req);
    let value = serde_json::to_value(&resp).expect("serializes");
    responses_sdk::check_response(&value);
    assert_eq!(value["instructions"], "Be terse.");
    assert_eq!(value["max_output_tokens"], 50);
    assert_eq!(
        value["tools"],
        json!([{"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": true}])
    );
    assert_eq!(value["tool_choice"], "required");
    assert_eq!(value["parallel_tool_calls"], false);
    assert_eq!(value["temperature"], 0.5);
    assert_eq!(value["text"], json!({"format": {"type": "text"}}));
    assert_eq!(value["metadata"], json!({"k": "v"}));
}

/// OpenAI's documented response object reads into `Response`, and `usage_of` finds its usage.
#[test]
fn a_documented_openai_response_reads_back() {
    let body = json!({
        "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
        "object": "response",
        "created_at": 1_741_476_542,
        "status": "completed",
        "error": null,
        "incomplete_details": null,
        "instructions": null,
        "max_output_tokens": null,
        "model": "gpt-4.1-2025-04-14",
        "output": [{
            "type": "message",
            "id": "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "In a peaceful grove beneath a silver moon...", "annotations": []}]
        }],
        "parallel_tool_calls": true,
        "previous_response_id": null,
        "reasoning": {"effort": null, "summary": null},
        "store": true,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {"input_tokens": 36, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 87,
                  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 123},
        "user": null,
        "metadata": {}
    });
    let resp: Response = serde_json::from_value(body.clone()).expect("reads");
    assert_eq!(resp.status, ResponseStatus::Completed);
    assert_eq!(resp.output_text(), "In a peaceful grove beneath a silver moon...");
    assert_eq!(usage_of(body.to_string().as_bytes()), Some((36, 87)));
    assert_eq!(usage_of(br#"{"id": "resp_1", "usage": null}"#), None);
}
