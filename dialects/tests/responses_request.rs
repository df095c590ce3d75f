//! Responses requests to the chat hub: OpenAI's documented examples, each mapped field, and each
//! refusal naming its field.

use serde_json::{Value, json};
use switchyard_dialects::responses::{ResponsesRequest, chat_from_request};

fn translate(body: Value) -> Value {
    let req: ResponsesRequest = serde_json::from_value(body).expect("a Responses request");
    let chat = chat_from_request(req).unwrap_or_else(|e| panic!("refused: {e}"));
    serde_json::to_value(chat).expect("serializes")
}

fn refused(body: Value) -> String {
    let req: ResponsesRequest = serde_json::from_value(body).expect("a Responses request");
    match chat_from_request(req) {
        Ok(chat) => panic!("accepted: {}", serde_json::to_string(&chat).unwrap_or_default()),
        Err(e) => {
            assert!(!e.reason.is_empty());
            e.field
        }
    }
}

#[test]
fn responses_requests_round_trip_to_the_same_json() {
    let body = json!({
        "model": "gpt-4.1",
        "instructions": "Be terse.",
        "input": [
            {"role": "user", "content": "hi"},
            {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
             "content": [{"type": "output_text", "text": "Hello.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}", "status": "completed"},
            {"type": "function_call_output", "call_id": "call_1", "output": "42"},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "hm"}], "encrypted_content": "x"},
            {"type": "item_reference", "id": "msg_0"},
            {"id": "msg_9"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        ],
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": true},
                  {"type": "web_search", "search_context_size": "low"}],
        "tool_choice": {"type": "function", "name": "f"},
        "text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "object"}, "strict": true}, "verbosity": "low"},
        "reasoning": {"effort": "low", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "store": false,
        "service_tier": "flex",
        "prompt_cache_key": "k",
    });
    let req: ResponsesRequest = serde_json::from_value(body.clone()).expect("parses");
    assert_eq!(serde_json::to_value(&req).expect("serializes"), body);
}

/// The first example of OpenAI's README: instructions and a string input.
#[test]
fn instructions_become_a_leading_system_message() {
    let chat = translate(json!({
        "model": "gpt-5.5",
        "instructions": "You are a coding assistant that talks like a pirate.",
        "input": "How do I check if a Python object is an instance of a class?",
    }));
    assert_eq!(
        chat,
        json!({
            "model": "gpt-5.5",
            "messages": [
                {"role": "system", "content": "You are a coding assistant that talks like a pirate."},
                {"role": "user", "content": "How do I check if a Python object is an instance of a class?"},
            ],
        })
    );
}

/// OpenAI's image input example: an http URL and a data URL.
#[test]
fn input_images_become_image_url_parts() {
    let chat = translate(json!({
        "model": "gpt-5.5",
        "input": [{"role": "user", "content": [
            {"type": "input_text", "text": "What is in this image?"},
            {"type": "input_image", "image_url": "https://upload.wikimedia.org/raccoon.jpg"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"},
        ]}],
    }));
    assert_eq!(
        chat["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "What is in this image?"},
            {"type": "image_url", "image_url": {"url": "https://upload.wikimedia.org/raccoon.jpg"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}},
        ]}])
    );
}

/// OpenAI's function calling guide: the tool definition, the model's call, and its output sent
/// back on the next turn.
#[test]
fn function_tools_calls_and_outputs_map_to_chat() {
    let chat = translate(json!({
        "model": "gpt-4.1",
        "input": [
            {"role": "user", "content": "What is the weather like in Paris today?"},
            {"type": "function_call", "id": "fc_12345xyz", "call_id": "call_12345xyz", "name": "get_weather",
             "arguments": "{\"location\":\"Paris, France\"}"},
            {"type": "function_call_output", "call_id": "call_12345xyz", "output": "{\"temperature\": 14}"},
        ],
        "tools": [{
            "type": "function",
            "name": "get_weather",
            "description": "Get current temperature for a given location.",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}},
                           "required": ["location"], "additionalProperties": false},
            "strict": true,
        }],
        "tool_choice": "auto",
        "parallel_tool_calls": false,
    }));
    assert_eq!(
        chat,
        json!({
            "model": "gpt-4.1",
            "messages": [
                {"role": "user", "content": "What is the weather like in Paris today?"},
                {"role": "assistant", "tool_calls": [{"id": "call_12345xyz", "type": "function",
                    "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris, France\"}"}}]},
                {"role": "tool", "tool_call_id": "call_12345xyz", "content": "{\"temperature\": 14}"},
            ],
            "tools": [{"type": "function", "function": {
                "name": "get_weather",
                "description": "Get current temperature for a given location.",
                "parameters": {"type": "object", "properties": {"location": {"type": "string"}},
                               "required": ["location"], "additionalProperties": false},
                "strict": true,
            }}],
            "tool_choice": "auto",
            "parallel_tool_calls": false,
        })
    );
}

#[test]
fn consecutive_function_calls_join_the_preceding_assistant_message() {
    let chat = translate(json!({
        "model": "m",
        "input": [
            {"role": "user", "content": "weather in Paris and Rome?"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "Checking ", "annotations": []},
                                              {"type": "output_text", "text": "both.", "annotations": []}]},
            {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{\"city\":\"Paris\"}"},
            {"type": "function_call", "call_id": "c2", "name": "w", "arguments": "{\"city\":\"Rome\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "14"},
            {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "19"}]},
            {"type": "function_call", "call_id": "c3", "name": "w", "arguments": "{}"},
        ],
    }));
    assert_eq!(
        chat["messages"],
        json!([
            {"role": "user", "content": "weather in Paris and Rome?"},
            {"role": "assistant", "content": "Checking both.", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"Rome\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "14"},
            {"role": "tool", "tool_call_id": "c2", "content": "19"},
            {"role": "assistant", "tool_calls": [{"id": "c3", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
        ])
    );
}

#[test]
fn roles_keep_their_names_and_refusals_become_text() {
    let chat = translate(json!({
        "model": "m",
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Rules."}]},
            {"type": "message", "role": "system", "content": "More rules."},
            {"role": "user", "content": "do it"},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]},
        ],
    }));
    assert_eq!(
        chat["messages"],
        json!([
            {"role": "developer", "content": "Rules."},
            {"role": "system", "content": "More rules."},
            {"role": "user", "content": "do it"},
            {"role": "assistant", "content": "I can't."},
        ])
    );
}

#[test]
fn reasoning_items_are_dropped() {
    let chat = translate(json!({
        "model": "o4-mini",
        "input": [
            {"role": "user", "content": "hi"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"},
            {"role": "assistant", "content": "Hello."},
        ],
    }));
    assert_eq!(
        chat["messages"],
        json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello."}])
    );
}

#[test]
fn sampling_limits_and_formats_map() {
    let chat = translate(json!({
        "model": "m",
        "input": "hi",
        "max_output_tokens": 256,
        "temperature": 1,
        "top_p": 0.9,
        "user": "u-1",
        "stream": true,
        "reasoning": {"effort": "high", "summary": "detailed"},
        "text": {"format": {"type": "json_schema", "name": "answer", "description": "The answer.",
                            "schema": {"type": "object", "properties": {"a": {"type": "number"}}}, "strict": true},
                 "verbosity": "low"},
        "tool_choice": {"type": "function", "name": "f"},
        "tools": [{"type": "function", "name": "f", "parameters": null, "strict": null}],
    }));
    assert_eq!(
        chat,
        json!({
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 256,
            "temperature": 1,
            "top_p": 0.9,
            "user": "u-1",
            "stream": true,
            "stream_options": {"include_usage": true},
            "reasoning_effort": "high",
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "answer", "description": "The answer.",
                "schema": {"type": "object", "properties": {"a": {"type": "number"}}}, "strict": true}},
            "verbosity": "low",
            "tool_choice": {"type": "function", "function": {"name": "f"}},
            "tools": [{"type": "function", "function": {"name": "f"}}],
        })
    );
}

#[test]
fn text_formats_map_to_response_format() {
    let json_object = translate(json!({"model": "m", "input": "hi", "text": {"format": {"type": "json_object"}}}));
    assert_eq!(json_object["response_format"], json!({"type": "json_object"}));
    let text = translate(json!({"model": "m", "input": "hi", "text": {"format": {"type": "text"}}}));
    assert_eq!(text.get("response_format"), None);
}

#[test]
fn stored_state_and_openai_only_settings_are_dropped_or_passed() {
    let chat = translate(json!({
        "model": "m",
        "input": "hi",
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "truncation": "auto",
        "background": false,
        "metadata": {"k": "v"},
        "top_logprobs": 3,
        "max_tool_calls": 2,
        "stream_options": {"include_obfuscation": false},
        "context_management": [{"type": "compaction"}],
        "safety_identifier": "s",
        "prompt_cache_key": "k",
        "service_tier": "flex",
    }));
    assert_eq!(
        chat,
        json!({
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "safety_identifier": "s",
            "prompt_cache_key": "k",
            "service_tier": "flex",
        })
    );
}

#[test]
fn tool_choice_modes_pass() {
    for mode in ["auto", "none", "required"] {
        let chat = translate(json!({"model": "m", "input": "hi", "tool_choice": mode}));
        assert_eq!(chat["tool_choice"], mode);
        let chat = translate(json!({"model": "m", "input": "hi", "tool_choice": {"type": mode}}));
        assert_eq!(chat["tool_choice"], mode);
    }
}

#[test]
fn server_state_is_refused_naming_its_field() {
    let base = |extra: Value| {
        let mut body = json!({"model": "m", "input": "hi"});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        body
    };
    assert_eq!(refused(base(json!({"previous_response_id": "resp_1"}))), "previous_response_id");
    assert_eq!(refused(base(json!({"conversation": "conv_1"}))), "conversation");
    assert_eq!(refused(base(json!({"prompt": {"id": "pmpt_1"}}))), "prompt");
    assert_eq!(refused(base(json!({"background": true}))), "background");
    assert_eq!(refused(base(json!({"moderation": {"input": true}}))), "moderation");
}

#[test]
fn built_in_tools_are_refused_naming_the_tool() {
    for kind in [
        "web_search",
        "web_search_preview",
        "file_search",
        "code_interpreter",
        "computer_use_preview",
        "image_generation",
        "mcp",
        "local_shell",
        "shell",
        "custom",
        "apply_patch",
    ] {
        let req: ResponsesRequest = serde_json::from_value(json!({
            "model": "m", "input": "hi",
            "tools": [{"type": "function", "name": "f", "parameters": {}}, {"type": kind}],
        }))
        .expect("parses");
        let err = chat_from_request(req).expect_err("refused");
        assert_eq!(err.field, "tools[1]");
        assert!(err.reason.contains(kind), "{err}");
    }
    assert_eq!(refused(json!({"model": "m", "input": "hi", "tools": [{"type": "function"}]})), "tools[0].name");
}

#[test]
fn unmappable_content_is_refused_naming_its_path() {
    let input = |item: Value| json!({"model": "m", "input": [{"role": "user", "content": "hi"}, item]});
    assert_eq!(
        refused(input(
            json!({"role": "user", "content": [{"type": "input_image", "file_id": "file-1", "detail": "auto"}]})
        )),
        "input[1].content[0].file_id"
    );
    assert_eq!(
        refused(input(json!({"role": "user", "content": [{"type": "input_file", "file_id": "file-1"}]}))),
        "input[1].content[0].file_id"
    );
    assert_eq!(
        refused(input(json!({"role": "user", "content": [{"type": "input_file", "file_url": "https://x/a.pdf"}]}))),
        "input[1].content[0].file_url"
    );
    assert_eq!(
        refused(input(json!({"role": "user", "content": [{"type": "input_audio", "data": "x"}]}))),
        "input[1].content[0]"
    );
    assert_eq!(
        refused(input(json!({"role": "system", "content": [{"type": "input_image", "image_url": "https://x/a.png"}]}))),
        "input[1].content[0]"
    );
    assert_eq!(refused(input(json!({"type": "item_reference", "id": "msg_1"}))), "input[1]");
    assert_eq!(refused(input(json!({"type": "web_search_call", "id": "ws_1"}))), "input[1]");
    assert_eq!(refused(input(json!({"role": "tool", "content": "x"}))), "input[1]");
    assert_eq!(
        refused(input(
            json!({"type": "function_call_output", "call_id": "c", "output": [{"type": "input_file", "file_id": "f"}]})
        )),
        "input[1].output[0].file_id"
    );
    assert_eq!(refused(json!({"model": "m", "input": []})), "input");
    assert_eq!(refused(json!({"model": "m", "input": "hi", "tool_choice": {"type": "web_search"}})), "tool_choice");
    assert_eq!(refused(json!({"model": "m", "input": "hi", "tool_choice": "sometimes"})), "tool_choice");
    assert_eq!(
        refused(json!({"model": "m", "input": "hi", "text": {"format": {"type": "grammar"}}})),
        "text.format.type"
    );
    assert_eq!(
        refused(json!({"model": "m", "input": "hi", "text": {"format": {"type": "json_schema", "name": "n"}}})),
        "text.format.schema"
    );
}

#[test]
fn inline_files_become_chat_file_parts() {
    let chat = translate(json!({"model": "m", "input": [{"role": "user", "content": [
        {"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBER"},
    ]}]}));
    assert_eq!(
        chat["messages"][0]["content"],
        json!([
            {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBER"}},
        ])
    );
}

#[test]
fn chat_parameters_sent_along_land_in_their_typed_fields() {
    let req: ResponsesRequest =
        serde_json::from_value(json!({"model": "m", "input": "hi", "seed": 7, "stop": "\n", "top_k": 5}))
            .expect("parses");
    let chat = chat_from_request(req).expect("translates");
    assert_eq!(chat.seed, Some(7));
    assert_eq!(serde_json::to_value(&chat.stop).expect("serializes"), json!("\n"));
    assert_eq!(chat.extra.get("top_k"), Some(&json!(5)));
    assert_eq!(refused(json!({"model": "m", "input": "hi", "n": "two"})), "n");
}
