//! The `/v1/messages` front door's translation: Anthropic requests to the hub
//! (`chat_from_request`), hub answers and streams back to Anthropic (`response_from_chat`,
//! `EventEncoder`), events written as Anthropic writes them, and error bodies. One test per
//! mapping rule of docs/dialects/anthropic.md ("Anthropic in").

use std::{fs, path::PathBuf};

use serde_json::{Value, json};
use switchyard_dialects::anthropic::{
    EventEncoder, MessagesRequest, StreamEvent, chat_from_request, error_json, error_type_for_status,
    response_from_chat,
};
use switchyard_dialects::chat::{ChatCompletion, ChatCompletionChunk};
use switchyard_dialects::sse::SseDecoder;

/// The hub JSON of an Anthropic request body.
fn hub(body: Value) -> Value {
    let req: MessagesRequest = serde_json::from_value(body).expect("an Anthropic request");
    serde_json::to_value(chat_from_request(req).expect("translates")).expect("serializes")
}

/// The refusal of an Anthropic request body: (field, reason).
fn refused(body: Value) -> (String, String) {
    let req: MessagesRequest = serde_json::from_value(body).expect("an Anthropic request");
    let err = chat_from_request(req).expect_err("refused");
    (err.field, err.reason)
}

fn request(messages: Value) -> Value {
    json!({"model": "gpt-4o", "max_tokens": 1024, "messages": messages})
}

// ---------------------------------------------------------------------------------------------
// Requests: golden examples from Anthropic's documentation
// ---------------------------------------------------------------------------------------------

#[test]
fn the_tool_use_guide_conversation_becomes_tool_calls_and_tool_messages() {
    // The tool-use guide's weather example, with its tool result turn.
    let body = json!({
        "model": "claude-opus-4-1", "max_tokens": 1024,
        "tools": [{
            "name": "get_weather",
            "description": "Get the current weather in a given location",
            "input_schema": {"type": "object",
                "properties": {"location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"}},
                "required": ["location"]}
        }],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
        "messages": [
            {"role": "user", "content": "What's the weather like in San Francisco?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "I'll check the current weather in San Francisco for you."},
                {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
                    "input": {"location": "San Francisco, CA"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                    "content": "15 degrees", "is_error": false}
            ]}
        ]
    });
    assert_eq!(
        hub(body),
        json!({
            "model": "claude-opus-4-1",
            "messages": [
                {"role": "user", "content": "What's the weather like in San Francisco?"},
                {"role": "assistant", "content": "I'll check the current weather in San Francisco for you.",
                    "tool_calls": [{"id": "toolu_01A09q90qw90lq917835lq9", "type": "function",
                        "function": {"name": "get_weather", "arguments": "{\"location\":\"San Francisco, CA\"}"}}]},
                {"role": "tool", "tool_call_id": "toolu_01A09q90qw90lq917835lq9", "content": "15 degrees"}
            ],
            "max_tokens": 1024,
            "tools": [{"type": "function", "function": {
                "name": "get_weather",
                "description": "Get the current weather in a given location",
                "parameters": {"type": "object",
                    "properties": {"location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"}},
                    "required": ["location"]}
            }}],
            "tool_choice": "auto",
            "parallel_tool_calls": false
        })
    );
}

#[test]
fn the_vision_guide_images_become_image_url_parts() {
    let body = request(json!([{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQSkZJRg=="}},
        {"type": "image", "source": {"type": "url", "url": "https://upload.wikimedia.org/ant.jpg"}},
        {"type": "text", "text": "Compare these images."}
    ]}]));
    assert_eq!(
        hub(body)["messages"],
        json!([{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQSkZJRg=="}},
            {"type": "image_url", "image_url": {"url": "https://upload.wikimedia.org/ant.jpg"}},
            {"type": "text", "text": "Compare these images."}
        ]}])
    );
}

#[test]
fn system_blocks_are_joined_into_one_first_system_message_without_cache_control() {
    // The prompt-caching guide's system prompt.
    let mut body = request(json!([{"role": "user", "content": "Analyze the major themes in Pride and Prejudice."}]));
    body["system"] = json!([
        {"type": "text", "text": "You are an AI assistant tasked with analyzing literary works."},
        {"type": "text", "text": "<the entire contents of Pride and Prejudice>", "cache_control": {"type": "ephemeral"}}
    ]);
    let out = hub(body);
    assert_eq!(
        out["messages"][0],
        json!({"role": "system", "content": "You are an AI assistant tasked with analyzing literary works.\n<the entire contents of Pride and Prejudice>"})
    );
    assert_eq!(out["messages"][1]["role"], "user");
    assert!(!out.to_string().contains("cache_control"));
}

#[test]
fn the_extended_thinking_guide_request_maps_thinking_to_reasoning_effort_and_drops_history_thinking() {
    let body = json!({
        "model": "claude-sonnet-4-5", "max_tokens": 16000,
        "thinking": {"type": "enabled", "budget_tokens": 10000},
        "messages": [
            {"role": "user", "content": "What's the weather in Paris?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "The user wants the weather.", "signature": "EqQBCgIYAhIM"},
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"location": "Paris"}}
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "88°F"}]}
        ]
    });
    let out = hub(body);
    assert_eq!(out["reasoning_effort"], "high");
    assert_eq!(out["max_tokens"], 16000);
    assert_eq!(
        out["messages"][1],
        json!({"role": "assistant", "tool_calls": [{"id": "toolu_01", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris\"}"}}]})
    );
    assert!(!out.to_string().contains("thinking"), "{out}");
}

#[test]
fn thinking_budgets_bucket_as_litellm_does() {
    for (thinking, effort) in [
        (json!({"type": "enabled", "budget_tokens": 1024}), json!("low")),
        (json!({"type": "enabled", "budget_tokens": 2048}), json!("medium")),
        (json!({"type": "enabled", "budget_tokens": 4095}), json!("medium")),
        (json!({"type": "enabled", "budget_tokens": 31999}), json!("high")),
        (json!({"type": "enabled", "budget_tokens": 500}), json!("minimal")),
        (json!({"type": "adaptive"}), json!("medium")),
        (json!({"type": "disabled"}), Value::Null),
    ] {
        let mut body = request(json!([{"role": "user", "content": "hi"}]));
        body["thinking"] = thinking.clone();
        assert_eq!(hub(body)["reasoning_effort"], effort, "{thinking}");
    }
    let mut body = request(json!([{"role": "user", "content": "hi"}]));
    body["thinking"] = json!({"type": "sometimes"});
    assert_eq!(refused(body).0, "thinking.type");
}

// ---------------------------------------------------------------------------------------------
// Requests: one rule each
// ---------------------------------------------------------------------------------------------

#[test]
fn tool_results_come_first_then_the_turns_text_and_images_in_order() {
    let body = request(json!([
        {"role": "user", "content": "run both"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "a", "name": "f", "input": {}},
            {"type": "tool_use", "id": "b", "name": "g", "input": {"x": [1, 2]}}
        ]},
        {"role": "user", "content": [
            {"type": "text", "text": "before"},
            {"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
            {"type": "tool_result", "tool_use_id": "b", "is_error": true, "content": [
                {"type": "text", "text": "failed"},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/shot.png"}}
            ]},
            {"type": "text", "text": "after"}
        ]}
    ]));
    let out = hub(body);
    assert_eq!(out["messages"][1]["tool_calls"][1]["function"]["arguments"], "{\"x\":[1,2]}");
    assert_eq!(
        out["messages"].as_array().expect("messages")[2..],
        [
            json!({"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}),
            json!({"role": "tool", "tool_call_id": "b", "content": "failed"}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "before"},
                {"type": "image_url", "image_url": {"url": "https://example.com/shot.png"}},
                {"type": "text", "text": "after"}
            ]}),
        ]
    );
}

#[test]
fn a_tool_result_without_content_is_an_empty_tool_message() {
    let out = hub(request(json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}])));
    assert_eq!(out["messages"], json!([{"role": "tool", "tool_call_id": "t", "content": ""}]));
}

#[test]
fn an_assistant_turn_of_thinking_only_gives_no_message() {
    let out = hub(request(json!([
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}]},
        {"role": "user", "content": "b"}
    ])));
    assert_eq!(out["messages"], json!([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]));
}

#[test]
fn assistant_text_blocks_are_joined() {
    let out = hub(request(json!([
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello, "}, {"type": "text", "text": "world"}]}
    ])));
    assert_eq!(out["messages"][1], json!({"role": "assistant", "content": "Hello, world"}));
}

#[test]
fn sampling_stop_sequences_metadata_and_top_k_map() {
    let mut body = request(json!([{"role": "user", "content": "hi"}]));
    body["temperature"] = json!(0.5);
    body["top_p"] = json!(0.9);
    body["top_k"] = json!(40);
    body["stop_sequences"] = json!(["END", "\n\nHuman:"]);
    body["metadata"] = json!({"user_id": "user-42"});
    let out = hub(body);
    assert_eq!(out["temperature"], 0.5);
    assert_eq!(out["top_p"], 0.9);
    assert_eq!(out["top_k"], 40, "passed through under its name, as LiteLLM does");
    assert_eq!(out["stop"], json!(["END", "\n\nHuman:"]));
    assert_eq!(out["user"], "user-42");
}

#[test]
fn a_streamed_request_asks_for_the_usage_chunk() {
    let mut body = request(json!([{"role": "user", "content": "hi"}]));
    body["stream"] = json!(true);
    let out = hub(body);
    assert_eq!(out["stream"], true);
    assert_eq!(out["stream_options"], json!({"include_usage": true}));
}

#[test]
fn tool_choices_map() {
    let tools = json!([{"name": "f", "input_schema": {"type": "object"}}, {"type": "custom", "name": "g", "input_schema": {"type": "object"}}]);
    for (choice, expected) in [
        (json!({"type": "auto"}), json!("auto")),
        (json!({"type": "any"}), json!("required")),
        (json!({"type": "none"}), json!("none")),
        (json!({"type": "tool", "name": "g"}), json!({"type": "function", "function": {"name": "g"}})),
    ] {
        let mut body = request(json!([{"role": "user", "content": "hi"}]));
        body["tools"] = tools.clone();
        body["tool_choice"] = choice;
        let out = hub(body);
        assert_eq!(out["tool_choice"], expected);
        assert_eq!(out["tools"][1]["function"]["name"], "g");
        assert!(out.get("parallel_tool_calls").is_none());
    }
    let mut body = request(json!([{"role": "user", "content": "hi"}]));
    body["tools"] = tools;
    body["tool_choice"] = json!({"type": "sometimes"});
    assert_eq!(refused(body).0, "tool_choice.type");
}

#[test]
fn a_tool_choice_without_tools_is_dropped() {
    let mut body = request(json!([{"role": "user", "content": "hi"}]));
    body["tool_choice"] = json!({"type": "any", "disable_parallel_tool_use": true});
    let out = hub(body);
    assert!(out.get("tool_choice").is_none() && out.get("parallel_tool_calls").is_none(), "{out}");
}

#[test]
fn server_tools_are_refused_naming_the_tool_and_its_type() {
    for (i, tool) in [
        json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5}),
        json!({"type": "bash_20250124", "name": "bash"}),
        json!({"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"}),
        json!({"type": "computer_20250124", "name": "computer", "display_width_px": 1024, "display_height_px": 768}),
    ]
    .into_iter()
    .enumerate()
    {
        let kind = tool["type"].as_str().expect("a type").to_owned();
        let mut body = request(json!([{"role": "user", "content": "hi"}]));
        body["tools"] = json!([{"name": "f", "input_schema": {"type": "object"}}, tool]);
        let (field, reason) = refused(body);
        assert_eq!(field, "tools[1]", "case {i}");
        assert!(reason.contains(&kind), "{reason}");
    }
}

#[test]
fn blocks_without_a_chat_equivalent_are_refused_naming_them() {
    let document =
        json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"}});
    let (field, reason) =
        refused(request(json!([{"role": "user", "content": [{"type": "text", "text": "read"}, document]}])));
    assert_eq!(field, "messages[0].content[1]");
    assert!(reason.contains("document"), "{reason}");

    let (field, _) = refused(request(json!([{"role": "user", "content": [
        {"type": "image", "source": {"type": "file", "file_id": "file_011"}}
    ]}])));
    assert_eq!(field, "messages[0].content[0].source");

    let (field, _) = refused(request(json!([{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "search_result", "source": "s", "title": "t", "content": []}]}
    ]}])));
    assert_eq!(field, "messages[0].content[0].content[0]");

    let mut body = request(json!([{"role": "user", "content": "hi"}]));
    body["system"] = json!([{"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]);
    assert_eq!(refused(body).0, "system[0]");
}

#[test]
fn anthropic_only_top_level_fields_are_refused_or_dropped_and_others_pass() {
    let mut body = request(json!([{"role": "user", "content": "hi"}]));
    body["container"] = json!("container_1");
    assert_eq!(refused(body).0, "container");
    let mut body = request(json!([{"role": "user", "content": "hi"}]));
    body["mcp_servers"] = json!([{"type": "url", "url": "https://mcp.example.com", "name": "x"}]);
    assert_eq!(refused(body).0, "mcp_servers");

    let mut body = request(json!([{"role": "user", "content": "hi"}]));
    body["service_tier"] = json!("standard_only");
    body["context_management"] = json!({"edits": [{"type": "clear_tool_uses_20250919"}]});
    body["seed"] = json!(7);
    let out = hub(body);
    assert!(out.get("service_tier").is_none() && out.get("context_management").is_none(), "{out}");
    assert_eq!(out["seed"], 7);
}

#[test]
fn structured_output_becomes_a_strict_json_schema_response_format() {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false});
    let expected =
        json!({"type": "json_schema", "json_schema": {"name": "structured_output", "schema": schema, "strict": true}});
    let mut body = request(json!([{"role": "user", "content": "hi"}]));
    body["output_format"] = json!({"type": "json_schema", "schema": schema});
    assert_eq!(hub(body)["response_format"], expected);

    let mut body = request(json!([{"role": "user", "content": "hi"}]));
    body["output_config"] = json!({"format": {"type": "json_schema", "schema": schema}, "effort": "low"});
    let out = hub(body);
    assert_eq!(out["response_format"], expected);
    assert_eq!(out["reasoning_effort"], "low");
    assert!(out.get("output_config").is_none());
}

// ---------------------------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------------------------

fn completion(message: Value, finish_reason: Value, usage: Value) -> ChatCompletion {
    serde_json::from_value(
        json!({"id": "chatcmpl-9", "object": "chat.completion", "created": 1, "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}], "usage": usage}),
    )
    .expect("a completion")
}

#[test]
fn an_answer_with_reasoning_text_and_tool_calls_becomes_blocks_in_that_order() {
    let answer = completion(
        json!({"role": "assistant", "content": "Checking both.", "reasoning_content": "Two cities.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": ""}},
            {"id": "call_3", "type": "function", "function": {"name": "broken", "arguments": "{\"cut"}}
        ]}),
        json!("tool_calls"),
        json!({"prompt_tokens": 100, "completion_tokens": 30, "total_tokens": 130, "prompt_tokens_details": {"cached_tokens": 64}}),
    );
    let out = serde_json::to_value(response_from_chat(answer)).expect("serializes");
    assert_eq!(
        out,
        json!({
            "id": "chatcmpl-9", "type": "message", "role": "assistant", "model": "gpt-4o-2024-08-06",
            "content": [
                {"type": "thinking", "thinking": "Two cities.", "signature": ""},
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "call_2", "name": "get_time", "input": {}},
                {"type": "tool_use", "id": "call_3", "name": "broken", "input": "{\"cut"}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 36, "output_tokens": 30, "cache_read_input_tokens": 64}
        })
    );
}

#[test]
fn finish_reasons_map_to_stop_reasons() {
    for (finish, stop) in [
        (json!("stop"), json!("end_turn")),
        (json!("length"), json!("max_tokens")),
        (json!("tool_calls"), json!("tool_use")),
        (json!("function_call"), json!("tool_use")),
        (json!("content_filter"), json!("refusal")),
        (json!("something_new"), json!("end_turn")),
        (Value::Null, Value::Null),
    ] {
        let answer = completion(json!({"role": "assistant", "content": "x"}), finish.clone(), json!(null));
        let out = serde_json::to_value(response_from_chat(answer)).expect("serializes");
        assert_eq!(out.get("stop_reason").cloned().unwrap_or(Value::Null), stop, "{finish}");
        assert_eq!(out["usage"], json!({"input_tokens": 0, "output_tokens": 0}));
    }
}

#[test]
fn an_answer_without_choices_is_an_empty_message() {
    let answer: ChatCompletion = serde_json::from_value(
        json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": []}),
    )
    .expect("a completion");
    let out = response_from_chat(answer);
    assert!(out.content.is_empty());
    assert_eq!(out.stop_reason, None);
}

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------

fn chunk(delta: Value, finish_reason: Value) -> ChatCompletionChunk {
    serde_json::from_value(
        json!({"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}),
    )
    .expect("a chunk")
}

fn usage_chunk(prompt: u64, completion: u64, cached: Option<u64>) -> ChatCompletionChunk {
    let mut usage =
        json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion});
    if let Some(c) = cached {
        usage["prompt_tokens_details"] = json!({"cached_tokens": c});
    }
    serde_json::from_value(
        json!({"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o", "choices": [], "usage": usage}),
    )
    .expect("a chunk")
}

/// The wire JSON of every event the chunks give, `finish()` included.
fn encode(chunks: &[ChatCompletionChunk]) -> Vec<Value> {
    let mut encoder = EventEncoder::new();
    let mut events: Vec<StreamEvent> = chunks.iter().flat_map(|c| encoder.push(c)).collect();
    events.extend(encoder.finish());
    assert!(encoder.finish().is_empty(), "finish twice gives nothing");
    events
        .iter()
        .map(|e| {
            let value: Value = serde_json::from_str(&e.to_json()).expect("JSON");
            assert_eq!(value["type"], e.name());
            value
        })
        .collect()
}

fn start() -> Value {
    json!({"type": "message_start", "message": {"id": "chatcmpl-7", "type": "message", "role": "assistant", "content": [],
        "model": "gpt-4o", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 0, "output_tokens": 0}}})
}

#[test]
fn a_text_stream_is_one_text_block() {
    let events = encode(&[
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": "Hello"}), Value::Null),
        chunk(json!({"content": " world"}), Value::Null),
        chunk(json!({}), json!("stop")),
        usage_chunk(12, 2, Some(8)),
    ]);
    assert_eq!(
        events,
        [
            start(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " world"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                "usage": {"output_tokens": 2, "input_tokens": 4, "cache_read_input_tokens": 8}}),
            json!({"type": "message_stop"}),
        ]
    );
}

#[test]
fn thinking_then_text_are_two_blocks() {
    let events = encode(&[
        chunk(json!({"role": "assistant", "reasoning_content": "Let me "}), Value::Null),
        chunk(json!({"reasoning_content": "think."}), Value::Null),
        chunk(json!({"content": "42"}), Value::Null),
        chunk(json!({}), json!("length")),
    ]);
    assert_eq!(
        events,
        [
            start(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "think."}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "42"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens", "stop_sequence": null}, "usage": {"output_tokens": 0}}),
            json!({"type": "message_stop"}),
        ]
    );
}

#[test]
fn two_parallel_tool_calls_are_two_tool_use_blocks() {
    let call = |index: u32, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut function = json!({"arguments": args});
        if let Some(n) = name {
            function["name"] = json!(n);
        }
        let mut c = json!({"index": index, "function": function});
        if let Some(id) = id {
            c["id"] = json!(id);
            c["type"] = json!("function");
        }
        chunk(json!({"tool_calls": [c]}), Value::Null)
    };
    let events = encode(&[
        chunk(json!({"role": "assistant", "content": null}), Value::Null),
        call(0, Some("call_a"), Some("get_weather"), ""),
        call(0, None, None, "{\"city\":"),
        call(0, None, None, "\"Paris\"}"),
        call(1, Some("call_b"), Some("get_time"), "{\"tz\":\"CET\"}"),
        chunk(json!({}), json!("tool_calls")),
        usage_chunk(50, 20, None),
    ]);
    assert_eq!(
        events,
        [
            start(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "call_a", "name": "get_weather", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"city\":"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "\"Paris\"}"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "call_b", "name": "get_time", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"tz\":\"CET\"}"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
                "usage": {"output_tokens": 20, "input_tokens": 50}}),
            json!({"type": "message_stop"}),
        ]
    );
}

#[test]
fn an_encoder_that_saw_no_chunk_still_writes_a_whole_message() {
    let names: Vec<String> = encode(&[]).iter().map(|e| e["type"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(names, ["message_start", "message_delta", "message_stop"]);
    let mut encoder = EventEncoder::new();
    assert_eq!(encoder.usage(), None);
    encoder.finish();
    assert!(encoder.push(&chunk(json!({"content": "late"}), Value::Null)).is_empty(), "nothing after finish");
}

#[test]
fn usage_is_reported_once_seen() {
    let mut encoder = EventEncoder::new();
    encoder.push(&chunk(json!({"content": "x"}), json!("stop")));
    assert_eq!(encoder.usage(), None);
    encoder.push(&usage_chunk(30, 5, Some(10)));
    assert_eq!(encoder.usage(), Some((30, 5)));
}

#[test]
fn anthropics_documented_stream_events_round_trip_through_from_json_and_to_json() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut seen = 0;
    for name in ["stream_basic.sse", "stream_thinking.sse", "stream_tool_use.sse"] {
        let bytes = fs::read(dir.join(name)).expect("reads");
        for event in SseDecoder::new(1 << 20).push(&bytes).expect("decodes") {
            let original: Value = serde_json::from_str(&event.data).expect("JSON");
            let parsed = StreamEvent::from_json(&event.data).expect("an event");
            assert_eq!(parsed.name(), event.event.as_deref().unwrap_or_default(), "{name}");
            let written = parsed.to_json();
            assert_eq!(serde_json::from_str::<Value>(&written).expect("JSON"), original, "{name}: {written}");
            assert_eq!(StreamEvent::from_json(&written).expect("reads back"), parsed);
            seen += 1;
        }
    }
    assert!(seen > 30);
    // An unknown event is written as the value it was (its keys in serde_json's order).
    let unknown = json!({"type": "future_event", "payload": [1, {"a": null}]});
    let written = StreamEvent::from_json(&unknown.to_string()).expect("an event").to_json();
    assert_eq!(serde_json::from_str::<Value>(&written).expect("JSON"), unknown);
    let error = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    assert_eq!(StreamEvent::from_json(error).expect("an event").to_json(), error);
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

#[test]
fn statuses_map_to_anthropic_error_types() {
    for (status, kind) in [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (413, "request_too_large"),
        (429, "rate_limit_error"),
        (529, "overloaded_error"),
        (503, "overloaded_error"),
        (500, "api_error"),
        (502, "api_error"),
        (504, "api_error"),
        (408, "invalid_request_error"),
        (422, "invalid_request_error"),
    ] {
        assert_eq!(error_type_for_status(status), kind, "{status}");
    }
}

#[test]
fn error_bodies_are_anthropics_envelope() {
    let body = error_json("rate_limit_error", "slow down: \"now\"\n");
    assert_eq!(body, r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down: \"now\"\n"}}"#);
    let value: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(value["error"]["message"], "slow down: \"now\"\n");
}
