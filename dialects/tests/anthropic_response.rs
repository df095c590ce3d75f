//! `chat_from_response`: one test per mapping rule (docs/dialects/anthropic.md).

use serde_json::{Value, json};
use switchyard_dialects::anthropic::{MessagesResponse, chat_from_response};

fn answer(content: Value, stop_reason: &str) -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": content, "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5}})
}

fn translate(body: Value) -> Value {
    let resp: MessagesResponse = serde_json::from_value(body).expect("an Anthropic answer");
    serde_json::to_value(chat_from_response(resp, 1_700_000_000)).expect("serializes")
}

#[test]
fn id_model_created_and_object_are_set() {
    let out = translate(answer(json!([{"type": "text", "text": "Hi"}]), "end_turn"));
    assert_eq!(out["id"], "msg_1");
    assert_eq!(out["model"], "claude-sonnet-4-5");
    assert_eq!(out["created"], 1_700_000_000);
    assert_eq!(out["object"], "chat.completion");
    assert_eq!(out["choices"][0]["index"], 0);
    assert_eq!(out["choices"][0]["message"]["role"], "assistant");
}

#[test]
fn text_blocks_are_joined_into_content() {
    let out =
        translate(answer(json!([{"type": "text", "text": "Hello, "}, {"type": "text", "text": "world"}]), "end_turn"));
    assert_eq!(out["choices"][0]["message"]["content"], "Hello, world");
}

#[test]
fn tool_use_blocks_become_tool_calls_with_json_arguments() {
    let out = translate(answer(
        json!([
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}},
        ]),
        "tool_use",
    ));
    let message = &out["choices"][0]["message"];
    assert_eq!(message["content"], "Checking.");
    assert_eq!(message["tool_calls"][0]["id"], "toolu_1");
    assert_eq!(message["tool_calls"][0]["type"], "function");
    assert_eq!(message["tool_calls"][0]["function"]["name"], "get_weather");
    let args: Value = serde_json::from_str(message["tool_calls"][0]["function"]["arguments"].as_str().expect("text"))
        .expect("JSON arguments");
    assert_eq!(args, json!({"city": "Paris"}));
    assert_eq!(message["tool_calls"][1]["function"]["arguments"], "{}");
    assert_eq!(out["choices"][0]["finish_reason"], "tool_calls");
}

#[test]
fn a_tool_only_answer_has_null_content() {
    let out = translate(answer(json!([{"type": "tool_use", "id": "t", "name": "f", "input": {}}]), "tool_use"));
    assert_eq!(out["choices"][0]["message"]["content"], Value::Null);
    assert!(out["choices"][0]["message"].as_object().expect("object").contains_key("content"));
}

#[test]
fn thinking_becomes_reasoning_content_and_thinking_blocks() {
    let out = translate(answer(
        json!([
            {"type": "thinking", "thinking": "2+2 is 4.", "signature": "EqQBCgIYAhIM"},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"},
            {"type": "text", "text": "4"},
        ]),
        "end_turn",
    ));
    let message = &out["choices"][0]["message"];
    assert_eq!(message["reasoning_content"], "2+2 is 4.");
    assert_eq!(
        message["thinking_blocks"],
        json!([
            {"type": "thinking", "thinking": "2+2 is 4.", "signature": "EqQBCgIYAhIM"},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"},
        ])
    );
    assert_eq!(message["content"], "4");
}

#[test]
fn stop_reasons_map_to_finish_reasons() {
    for (stop, finish) in [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("pause_turn", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        ("something_new", "stop"),
    ] {
        let out = translate(answer(json!([{"type": "text", "text": "x"}]), stop));
        assert_eq!(out["choices"][0]["finish_reason"], finish, "{stop}");
    }
}

#[test]
fn usage_counts_cached_prompt_tokens_as_litellm_does() {
    let mut body = answer(json!([{"type": "text", "text": "x"}]), "end_turn");
    body["usage"] = json!({"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000});
    let out = translate(body);
    assert_eq!(
        out["usage"],
        json!({"prompt_tokens": 1110, "completion_tokens": 5, "total_tokens": 1115,
            "prompt_tokens_details": {"cached_tokens": 1000},
            "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000})
    );
}

#[test]
fn the_json_tool_call_becomes_the_content_with_finish_reason_stop() {
    let out = translate(answer(
        json!([{"type": "tool_use", "id": "t", "name": "json_tool_call", "input": {"answer": 4}}]),
        "tool_use",
    ));
    let choice = &out["choices"][0];
    assert_eq!(choice["message"]["content"], "{\"answer\":4}");
    assert!(choice["message"].get("tool_calls").is_none());
    assert_eq!(choice["finish_reason"], "stop");
}

#[test]
fn the_json_tool_call_values_wrapper_is_unwrapped() {
    let out = translate(answer(
        json!([{"type": "tool_use", "id": "t", "name": "json_tool_call", "input": {"values": [1, 2]}}]),
        "tool_use",
    ));
    assert_eq!(out["choices"][0]["message"]["content"], "[1,2]");
}

#[test]
fn the_json_tool_call_next_to_client_tools_is_appended_to_the_content() {
    let out = translate(answer(
        json!([
            {"type": "tool_use", "id": "t1", "name": "json_tool_call", "input": {"a": 1}},
            {"type": "tool_use", "id": "t2", "name": "lookup", "input": {}},
        ]),
        "tool_use",
    ));
    let choice = &out["choices"][0];
    assert_eq!(choice["message"]["content"], "{\"a\":1}");
    assert_eq!(choice["message"]["tool_calls"].as_array().map(Vec::len), Some(1));
    assert_eq!(choice["finish_reason"], "tool_calls");
}

#[test]
fn unknown_blocks_never_fail_the_decode_and_are_kept() {
    let out = translate(answer(
        json!([
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
            {"type": "text"},
            {"type": "text", "text": "Found it.", "citations": [{"type": "web_search_result_location", "url": "https://x"}]},
        ]),
        "end_turn",
    ));
    let message = &out["choices"][0]["message"];
    assert_eq!(message["content"], "Found it.");
    assert_eq!(message["provider_specific_fields"]["content_blocks"].as_array().map(Vec::len), Some(3));
    assert_eq!(message["provider_specific_fields"]["content_blocks"][0]["type"], "server_tool_use");
}
