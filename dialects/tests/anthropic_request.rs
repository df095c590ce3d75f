//! `request_from_chat`: one test per mapping rule (docs/dialects/anthropic.md).

use serde_json::{Value, json};
use switchyard_dialects::TranslateError;
use switchyard_dialects::anthropic::{RequestOptions, request_from_chat};
use switchyard_dialects::chat::ChatRequest;

/// Options as the provider builds them: the catalog's max output for claude-sonnet-4-5.
fn opts() -> RequestOptions {
    RequestOptions::new("claude-sonnet-4-5", SONNET_MAX_OUTPUT)
}

const SONNET_MAX_OUTPUT: u32 = 64_000;

fn translate_with(body: Value, opts: &RequestOptions) -> Result<Value, TranslateError> {
    let req: ChatRequest = serde_json::from_value(body).expect("a chat request");
    let out = request_from_chat(req, opts)?;
    Ok(serde_json::to_value(out).expect("serializes"))
}

fn translate(body: Value) -> Value {
    translate_with(body, &opts()).expect("translates")
}

fn refused(body: Value) -> TranslateError {
    translate_with(body, &opts()).expect_err("refused")
}

fn chat(messages: Value) -> Value {
    json!({"model": "smart", "messages": messages})
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

#[test]
fn system_and_developer_messages_become_one_system_string_joined_with_newlines() {
    let out = translate(chat(json!([
        {"role": "system", "content": "Be terse."},
        user("hi"),
        {"role": "developer", "content": [{"type": "text", "text": "Answer in French."}]},
    ])));
    assert_eq!(out["system"], "Be terse.\nAnswer in French.");
    assert_eq!(out["messages"], json!([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]));
}

#[test]
fn system_with_cache_control_stays_an_array_of_text_blocks() {
    let out = translate(chat(json!([
        {"role": "system", "content": "Rules."},
        {"role": "system", "content": [{"type": "text", "text": "Long context.", "cache_control": {"type": "ephemeral"}}]},
        user("hi"),
    ])));
    assert_eq!(
        out["system"],
        json!([
            {"type": "text", "text": "Rules."},
            {"type": "text", "text": "Long context.", "cache_control": {"type": "ephemeral"}},
        ])
    );
}

#[test]
fn a_system_image_is_refused_naming_the_part() {
    let err = refused(chat(json!([
        {"role": "system", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]},
        user("hi"),
    ])));
    assert_eq!(err.field, "messages[0].content[0]");
}

#[test]
fn consecutive_messages_of_one_role_are_merged_into_one_turn() {
    let out = translate(chat(
        json!([user("a"), user("b"), {"role": "assistant", "content": "c"}, {"role": "assistant", "content": "d"}]),
    ));
    assert_eq!(
        out["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "c"}, {"type": "text", "text": "d"}]},
        ])
    );
}

#[test]
fn tool_messages_become_tool_results_merged_with_the_next_user_content() {
    let out = translate(chat(json!([
        user("weather?"),
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"Paris\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"Rome\"}"}},
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "25C"}]},
        user("thanks"),
    ])));
    assert_eq!(
        out["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "call_1", "name": "w", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "call_2", "name": "w", "input": {"city": "Rome"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "18C"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": [{"type": "text", "text": "25C"}]},
                {"type": "text", "text": "thanks"},
            ]},
        ])
    );
}

#[test]
fn a_tool_message_without_tool_call_id_is_refused() {
    let err = refused(chat(json!([user("a"), {"role": "tool", "content": "x"}])));
    assert_eq!(err.field, "messages[1].tool_call_id");
}

#[test]
fn a_conversation_starting_with_assistant_is_sent_as_it_is() {
    let out = translate(chat(json!([{"role": "assistant", "content": "Hello!"}, user("hi")])));
    assert_eq!(out["messages"][0]["role"], "assistant");
    assert_eq!(out["messages"][1]["role"], "user");
}

#[test]
fn a_conversation_of_system_messages_only_is_refused() {
    let err = refused(chat(json!([{"role": "system", "content": "x"}])));
    assert_eq!(err.field, "messages");
}

#[test]
fn a_final_assistant_prefill_loses_its_trailing_whitespace() {
    let out = translate(chat(json!([user("hi"), {"role": "assistant", "content": "Sure: \n"}])));
    assert_eq!(out["messages"][1]["content"], json!([{"type": "text", "text": "Sure:"}]));
}

#[test]
fn empty_text_is_dropped() {
    let out =
        translate(chat(json!([user(""), user("a"), {"role": "user", "content": [{"type": "text", "text": ""}]}])));
    assert_eq!(out["messages"], json!([{"role": "user", "content": [{"type": "text", "text": "a"}]}]));
}

#[test]
fn the_deprecated_function_role_is_refused() {
    let err = refused(chat(json!([user("a"), {"role": "function", "name": "f", "content": "x"}])));
    assert_eq!(err.field, "messages[1].role");
}

#[test]
fn max_completion_tokens_wins_over_max_tokens() {
    let out = translate(json!({"model": "m", "messages": [user("a")], "max_tokens": 10, "max_completion_tokens": 20}));
    assert_eq!(out["max_tokens"], 20);
    let out = translate(json!({"model": "m", "messages": [user("a")], "max_tokens": 10}));
    assert_eq!(out["max_tokens"], 10);
}

#[test]
fn absent_max_tokens_uses_the_default() {
    let out =
        translate_with(chat(json!([user("a")])), &RequestOptions::new("claude-3-haiku", 1000)).expect("translates");
    assert_eq!(out["max_tokens"], 1000);
    assert_eq!(out["model"], "claude-3-haiku");
}

#[test]
fn stop_string_or_array_becomes_stop_sequences() {
    let out = translate(json!({"model": "m", "messages": [user("a")], "stop": "END"}));
    assert_eq!(out["stop_sequences"], json!(["END"]));
    let out = translate(json!({"model": "m", "messages": [user("a")], "stop": ["a", "b"]}));
    assert_eq!(out["stop_sequences"], json!(["a", "b"]));
}

#[test]
fn temperature_top_p_and_top_k_pass_as_they_are() {
    let out = translate(json!({"model": "m", "messages": [user("a")], "temperature": 1, "top_p": 0.9, "top_k": 40}));
    assert_eq!(out["temperature"], json!(1));
    assert_eq!(out["top_p"], json!(0.9));
    assert_eq!(out["top_k"], json!(40));
}

#[test]
fn user_becomes_metadata_user_id() {
    let out = translate(json!({"model": "m", "messages": [user("a")], "user": "u-42"}));
    assert_eq!(out["metadata"], json!({"user_id": "u-42"}));
}

#[test]
fn text_parts_keep_cache_control() {
    let out = translate(chat(json!([{"role": "user", "content": [
        {"type": "text", "text": "doc", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
    ]}])));
    assert_eq!(out["messages"][0]["content"][0]["cache_control"], json!({"type": "ephemeral", "ttl": "1h"}));
}

#[test]
fn message_cache_control_goes_on_its_string_content() {
    let out = translate(chat(json!([{"role": "user", "content": "doc", "cache_control": {"type": "ephemeral"}}])));
    assert_eq!(
        out["messages"][0]["content"][0],
        json!({"type": "text", "text": "doc", "cache_control": {"type": "ephemeral"}})
    );
}

#[test]
fn a_data_url_image_becomes_a_base64_source() {
    let out = translate(chat(json!([{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "high"}},
    ]}])));
    assert_eq!(
        out["messages"][0]["content"][0],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}})
    );
}

#[test]
fn an_http_image_url_becomes_a_url_source() {
    let out = translate(chat(json!([{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
    ]}])));
    assert_eq!(
        out["messages"][0]["content"][0],
        json!({"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}})
    );
}

#[test]
fn any_other_image_url_is_refused_naming_the_field() {
    for url in ["ftp://example.com/cat.jpg", "data:image/png,rawbytes", "cat.jpg"] {
        let err = refused(chat(json!([user("look"), {"role": "user", "content": [
            {"type": "text", "text": "this"},
            {"type": "image_url", "image_url": {"url": url}},
        ]}])));
        assert_eq!(err.field, "messages[1].content[1].image_url.url", "{url}");
    }
}

#[test]
fn an_unknown_content_part_is_refused_naming_the_part() {
    let err = refused(chat(json!([{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}])));
    assert_eq!(err.field, "messages[0].content[0]");
    assert!(err.reason.contains("input_audio"), "{}", err.reason);
}

#[test]
fn function_tools_become_input_schema_tools_with_an_empty_object_default() {
    let out = translate(json!({"model": "m", "messages": [user("a")], "tools": [
        {"type": "function", "function": {"name": "w", "description": "weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": true}},
        {"type": "function", "function": {"name": "now"}, "cache_control": {"type": "ephemeral"}},
    ]}));
    assert_eq!(
        out["tools"],
        json!([
            {"name": "w", "description": "weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
            {"name": "now", "input_schema": {"type": "object", "properties": {}}, "cache_control": {"type": "ephemeral"}},
        ])
    );
}

#[test]
fn a_tool_of_another_type_is_refused() {
    let err =
        refused(json!({"model": "m", "messages": [user("a")], "tools": [{"type": "custom", "custom": {"name": "x"}}]}));
    assert_eq!(err.field, "tools[0].type");
}

fn weather_tool() -> Value {
    json!([{"type": "function", "function": {"name": "w"}}])
}

#[test]
fn tool_choice_modes_and_names_map_to_anthropic_kinds() {
    for (choice, expected) in [
        (json!("auto"), json!({"type": "auto"})),
        (json!("required"), json!({"type": "any"})),
        (json!("none"), json!({"type": "none"})),
        (json!({"type": "function", "function": {"name": "w"}}), json!({"type": "tool", "name": "w"})),
    ] {
        let out =
            translate(json!({"model": "m", "messages": [user("a")], "tools": weather_tool(), "tool_choice": choice}));
        assert_eq!(out["tool_choice"], expected);
    }
    let err =
        refused(json!({"model": "m", "messages": [user("a")], "tools": weather_tool(), "tool_choice": "sometimes"}));
    assert_eq!(err.field, "tool_choice");
}

#[test]
fn parallel_tool_calls_false_disables_parallel_tool_use_on_auto_when_no_choice_is_given() {
    let with_tools = |extra: Value| {
        let mut body =
            json!({"model": "m", "messages": [user("a")], "tools": weather_tool(), "parallel_tool_calls": false});
        body.as_object_mut().expect("an object").extend(extra.as_object().expect("an object").clone());
        translate(body)
    };
    let out = with_tools(json!({}));
    assert_eq!(out["tool_choice"], json!({"type": "auto", "disable_parallel_tool_use": true}));
    let out = with_tools(json!({"tool_choice": "required"}));
    assert_eq!(out["tool_choice"], json!({"type": "any", "disable_parallel_tool_use": true}));
    let out = with_tools(json!({"tool_choice": "none"}));
    assert_eq!(out["tool_choice"], json!({"type": "none"}));
}

/// Anthropic answers "tool_choice may only be specified while providing tools" with a 400.
#[test]
fn tool_choice_and_parallel_tool_calls_without_tools_are_dropped() {
    for extra in [
        json!({"parallel_tool_calls": false}),
        json!({"parallel_tool_calls": true}),
        json!({"tool_choice": "auto"}),
        json!({"tool_choice": "none", "parallel_tool_calls": false}),
        json!({"tool_choice": "required", "tools": []}),
        json!({"tool_choice": {"type": "function", "function": {"name": "w"}}}),
    ] {
        let mut body = json!({"model": "m", "messages": [user("a")]});
        body.as_object_mut().expect("an object").extend(extra.as_object().expect("an object").clone());
        let out = translate(body);
        assert!(out.get("tool_choice").is_none(), "{extra}: {out}");
        assert!(out.get("parallel_tool_calls").is_none(), "{extra}: {out}");
    }
}

#[test]
fn an_invalid_tool_choice_is_refused_even_without_tools() {
    let err = refused(json!({"model": "m", "messages": [user("a")], "tool_choice": "sometimes"}));
    assert_eq!(err.field, "tool_choice");
}

#[test]
fn assistant_tool_call_arguments_are_parsed_into_input() {
    let out = translate(chat(json!([user("a"), {"role": "assistant", "content": "Let me check.", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": [1, 2], \"b\": null}"}},
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": ""}},
    ]}])));
    assert_eq!(
        out["messages"][1]["content"],
        json!([
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "c1", "name": "f", "input": {"a": [1, 2], "b": null}},
            {"type": "tool_use", "id": "c2", "name": "g", "input": {}},
        ])
    );
}

#[test]
fn unparseable_tool_call_arguments_are_refused_naming_the_field() {
    let err = refused(chat(json!([user("a"), user("b"), {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{\"a\":"}},
    ]}])));
    assert_eq!(err.field, "messages[2].tool_calls[1].function.arguments");
}

#[test]
fn assistant_thinking_blocks_go_back_first_and_reasoning_content_alone_is_not_sent() {
    let out = translate(chat(json!([user("a"), {"role": "assistant", "content": "4",
        "reasoning_content": "2+2",
        "thinking_blocks": [{"type": "thinking", "thinking": "2+2", "signature": "sig"}, {"type": "redacted_thinking", "data": "xyz"}]},
        user("b"), {"role": "assistant", "content": "5", "reasoning_content": "unsigned"}, user("c")])));
    assert_eq!(
        out["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "2+2", "signature": "sig"},
            {"type": "redacted_thinking", "data": "xyz"},
            {"type": "text", "text": "4"},
        ])
    );
    assert_eq!(out["messages"][3]["content"], json!([{"type": "text", "text": "5"}]));
}

#[test]
fn response_format_json_schema_forces_the_json_tool_call() {
    let schema = json!({"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]});
    let out = translate(json!({"model": "m", "messages": [user("a")], "response_format": {
        "type": "json_schema", "json_schema": {"name": "math", "schema": schema, "strict": true}}}));
    assert_eq!(out["tools"], json!([{"name": "json_tool_call", "input_schema": schema}]));
    assert_eq!(out["tool_choice"], json!({"type": "tool", "name": "json_tool_call"}));
}

#[test]
fn response_format_json_object_forces_an_open_object_tool() {
    let out = translate(json!({"model": "m", "messages": [user("a")], "response_format": {"type": "json_object"}}));
    assert_eq!(
        out["tools"],
        json!([{"name": "json_tool_call", "input_schema": {"type": "object", "additionalProperties": true, "properties": {}}}])
    );
    assert_eq!(out["tool_choice"], json!({"type": "tool", "name": "json_tool_call"}));
}

#[test]
fn response_format_text_changes_nothing() {
    let out = translate(json!({"model": "m", "messages": [user("a")], "response_format": {"type": "text"}}));
    assert!(out.get("tools").is_none() && out.get("tool_choice").is_none());
}

#[test]
fn response_format_with_thinking_offers_the_tool_without_forcing_it() {
    let out = translate(json!({"model": "m", "messages": [user("a")], "reasoning_effort": "low",
        "tool_choice": "auto", "response_format": {"type": "json_object"}}));
    assert_eq!(out["tools"][0]["name"], "json_tool_call");
    assert_eq!(out["tool_choice"], json!({"type": "auto"}));
}

#[test]
fn a_client_tool_named_json_tool_call_is_refused_with_response_format() {
    let err = refused(json!({"model": "m", "messages": [user("a")], "response_format": {"type": "json_object"},
        "tools": [{"type": "function", "function": {"name": "json_tool_call"}}]}));
    assert_eq!(err.field, "tools[0].function.name");
}

#[test]
fn reasoning_effort_maps_to_litellm_thinking_budgets() {
    for (effort, budget) in [("minimal", 1024), ("low", 1024), ("medium", 2048), ("high", 4096)] {
        let out =
            translate(json!({"model": "m", "messages": [user("a")], "reasoning_effort": effort, "max_tokens": 20000}));
        assert_eq!(out["thinking"], json!({"type": "enabled", "budget_tokens": budget}), "{effort}");
        assert_eq!(out["max_tokens"], 20000);
    }
    let out = translate(json!({"model": "m", "messages": [user("a")], "reasoning_effort": "none"}));
    assert!(out.get("thinking").is_none());
    let err = refused(json!({"model": "m", "messages": [user("a")], "reasoning_effort": "extreme"}));
    assert_eq!(err.field, "reasoning_effort");
}

#[test]
fn thinking_without_max_tokens_sends_the_models_max_output_with_the_budget_inside_it() {
    let out = translate(json!({"model": "m", "messages": [user("a")], "reasoning_effort": "high"}));
    assert_eq!(out["max_tokens"], SONNET_MAX_OUTPUT);
    assert_eq!(out["thinking"], json!({"type": "enabled", "budget_tokens": 4096}));
}

#[test]
fn thinking_never_takes_max_tokens_above_the_models_max_output() {
    for max_output in [1025, 4096, 8192, 16_384, 32_000, 64_000, 128_000] {
        for effort in ["minimal", "low", "medium", "high", "xhigh", "max"] {
            let body = json!({"model": "m", "messages": [user("a")], "reasoning_effort": effort});
            let out = translate_with(body, &RequestOptions::new("claude", max_output)).expect("translates");
            let max_tokens = out["max_tokens"].as_u64().expect("max_tokens");
            let budget = out["thinking"]["budget_tokens"].as_u64().expect("a budget");
            assert_eq!(max_tokens, u64::from(max_output), "{effort} on {max_output}");
            assert!(budget < max_tokens, "{effort} on {max_output}: budget {budget}");
        }
    }
}

#[test]
fn an_effort_budget_that_does_not_fit_is_lowered_below_max_tokens() {
    let body = json!({"model": "m", "messages": [user("a")], "reasoning_effort": "max"});
    let out = translate_with(body, &RequestOptions::new("claude-3-7-sonnet", 8192)).expect("translates");
    assert_eq!(out["max_tokens"], 8192);
    assert_eq!(out["thinking"], json!({"type": "enabled", "budget_tokens": 8191}));
    let out = translate(json!({"model": "m", "messages": [user("a")], "reasoning_effort": "high", "max_tokens": 2000}));
    assert_eq!(out["max_tokens"], 2000);
    assert_eq!(out["thinking"], json!({"type": "enabled", "budget_tokens": 1999}));
}

#[test]
fn an_effort_is_left_off_when_not_even_the_minimum_budget_fits() {
    let out = translate(json!({"model": "m", "messages": [user("a")], "reasoning_effort": "low", "max_tokens": 1024}));
    assert_eq!(out["max_tokens"], 1024);
    assert!(out.get("thinking").is_none(), "{out}");
}

#[test]
fn explicit_thinking_without_max_tokens_is_sent_as_given_under_the_models_max_output() {
    let out = translate(
        json!({"model": "m", "messages": [user("a")], "thinking": {"type": "enabled", "budget_tokens": 10000}}),
    );
    assert_eq!(out["max_tokens"], SONNET_MAX_OUTPUT);
    assert_eq!(out["thinking"], json!({"type": "enabled", "budget_tokens": 10000}));
}

#[test]
fn explicit_thinking_passes_through_and_wins_over_reasoning_effort() {
    let out = translate(json!({"model": "m", "messages": [user("a")], "reasoning_effort": "low",
        "thinking": {"type": "enabled", "budget_tokens": 5000}, "max_tokens": 9000}));
    assert_eq!(out["thinking"], json!({"type": "enabled", "budget_tokens": 5000}));
    let err = refused(json!({"model": "m", "messages": [user("a")], "thinking": "yes"}));
    assert_eq!(err.field, "thinking");
}

#[test]
fn unsupported_parameters_are_refused_naming_the_field() {
    for (field, value) in [
        ("n", json!(2)),
        ("logprobs", json!(true)),
        ("top_logprobs", json!(3)),
        ("logit_bias", json!({"50256": -100})),
        ("presence_penalty", json!(0.5)),
        ("frequency_penalty", json!(0.5)),
        ("seed", json!(7)),
        ("modalities", json!(["text", "audio"])),
        ("audio", json!({"voice": "alloy", "format": "wav"})),
    ] {
        let mut body = chat(json!([user("a")]));
        body[field] = value;
        let err = refused(body);
        assert_eq!(err.field, field);
        assert!(err.to_string().starts_with(&format!("`{field}`: ")), "{err}");
    }
}

#[test]
fn unsupported_parameters_are_dropped_with_drop_unsupported() {
    let body =
        json!({"model": "m", "messages": [user("a")], "n": 3, "seed": 1, "logprobs": true, "presence_penalty": 1});
    let out = translate_with(body, &opts().drop_unsupported(true)).expect("translates");
    for field in ["n", "seed", "logprobs", "presence_penalty"] {
        assert!(out.get(field).is_none(), "{field}");
    }
}

#[test]
fn no_op_values_of_unsupported_parameters_are_accepted() {
    let out =
        translate(json!({"model": "m", "messages": [user("a")], "n": 1, "logprobs": false, "modalities": ["text"]}));
    assert!(out.get("n").is_none() && out.get("logprobs").is_none() && out.get("modalities").is_none());
}

#[test]
fn stream_is_copied_and_stream_options_consumed() {
    let out = translate(
        json!({"model": "m", "messages": [user("a")], "stream": true, "stream_options": {"include_usage": true}}),
    );
    assert_eq!(out["stream"], true);
    assert!(out.get("stream_options").is_none());
}

#[test]
fn unknown_fields_pass_through_verbatim() {
    let out = translate(json!({"model": "m", "messages": [user("a")],
        "service_tier": "auto", "mcp_servers": [{"type": "url", "url": "https://mcp.example.com", "name": "x"}],
        "container": "container_1", "store": false}));
    assert_eq!(out["service_tier"], "auto");
    assert_eq!(out["mcp_servers"][0]["name"], "x");
    assert_eq!(out["container"], "container_1");
    assert_eq!(out["store"], false);
}

#[test]
fn a_translated_field_wins_over_a_passed_through_one_of_the_same_name() {
    let out = translate(json!({"model": "m", "messages": [user("a")], "user": "u1", "metadata": {"tag": "x"},
        "stop": "a", "stop_sequences": ["b"]}));
    assert_eq!(out["metadata"], json!({"user_id": "u1"}));
    assert_eq!(out["stop_sequences"], json!(["a"]));
    let out = translate(json!({"model": "m", "messages": [user("a")], "stop_sequences": ["b"]}));
    assert_eq!(out["stop_sequences"], json!(["b"]));
}

#[test]
fn the_output_body_has_no_duplicate_keys() {
    let req: ChatRequest = serde_json::from_value(json!({"model": "m", "messages": [user("a")], "user": "u1",
        "metadata": {"tag": "x"}, "top_k": 3, "thinking": {"type": "enabled", "budget_tokens": 1024}}))
    .expect("a chat request");
    let text = serde_json::to_string(&request_from_chat(req, &opts()).expect("translates")).expect("serializes");
    for key in ["\"metadata\"", "\"top_k\"", "\"thinking\""] {
        assert_eq!(text.matches(key).count(), 1, "{key} in {text}");
    }
}
