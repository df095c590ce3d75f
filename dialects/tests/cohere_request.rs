//! `cohere::request_from_chat`: golden translations of Cohere's documented requests, one test per
//! mapping rule, and every refusal (docs/dialects/cohere.md).

use serde_json::{Value, json};
use switchyard_dialects::TranslateError;
use switchyard_dialects::chat::ChatRequest;
use switchyard_dialects::cohere::{RequestOptions, request_from_chat};

fn opts() -> RequestOptions {
    RequestOptions::new("command-a-03-2025")
}

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

fn with(mut body: Value, key: &str, value: Value) -> Value {
    body[key] = value;
    body
}

fn hi() -> Value {
    chat(json!([{"role": "user", "content": "hi"}]))
}

/// The tool-use example of Cohere's documentation (docs.cohere.com/docs/tool-use): a weather tool,
/// the model's plan and call, the tool's result, sent back as an OpenAI client would.
#[test]
fn documented_tool_use_conversation_is_golden() {
    let out = translate(json!({
        "model": "smart",
        "messages": [
            {"role": "system", "content": "## Task and Context\nYou help people answer their questions."},
            {"role": "user", "content": "What's the weather in Toronto?"},
            {"role": "assistant", "content": null,
             "reasoning_content": "I will search for the weather in Toronto.",
             "tool_calls": [{"id": "get_weather_1byjy32y4hvq", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"location\":\"Toronto\"}"}}]},
            {"role": "tool", "tool_call_id": "get_weather_1byjy32y4hvq",
             "content": [{"type": "text", "text": "{\"temperature\": {\"current\": \"29C\"}}"}]},
        ],
        "tools": [{"type": "function", "function": {
            "name": "get_weather",
            "description": "gets the weather of a given location",
            "parameters": {"type": "object", "properties": {"location": {"type": "string",
                "description": "the location to get weather, example: San Fransisco, CA"}}, "required": ["location"]},
        }}],
        "temperature": 0.3,
        "max_completion_tokens": 500,
        "stream": true,
    }));
    assert_eq!(
        out,
        json!({
            "model": "command-a-03-2025",
            "messages": [
                {"role": "system", "content": "## Task and Context\nYou help people answer their questions."},
                {"role": "user", "content": "What's the weather in Toronto?"},
                {"role": "assistant", "tool_plan": "I will search for the weather in Toronto.",
                 "tool_calls": [{"id": "get_weather_1byjy32y4hvq", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"location\":\"Toronto\"}"}}]},
                {"role": "tool", "tool_call_id": "get_weather_1byjy32y4hvq",
                 "content": [{"type": "text", "text": "{\"temperature\": {\"current\": \"29C\"}}"}]},
            ],
            "tools": [{"type": "function", "function": {
                "name": "get_weather",
                "description": "gets the weather of a given location",
                "parameters": {"type": "object", "properties": {"location": {"type": "string",
                    "description": "the location to get weather, example: San Fransisco, CA"}}, "required": ["location"]},
            }}],
            "temperature": 0.3,
            "max_tokens": 500,
            "stream": true,
        })
    );
}

/// The image example of Cohere's documentation (docs.cohere.com/docs/image-inputs).
#[test]
fn image_parts_cross_as_image_url_items_with_their_detail() {
    let out = translate(chat(json!([{"role": "user", "content": [
        {"type": "text", "text": "Describe the logos!"},
        {"type": "image_url", "image_url": {"url": "https://cohere.com/favicon-32x32.png", "detail": "high"}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]}])));
    assert_eq!(
        out["messages"][0]["content"],
        json!([
            {"type": "text", "text": "Describe the logos!"},
            {"type": "image_url", "image_url": {"url": "https://cohere.com/favicon-32x32.png", "detail": "high"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ])
    );
}

#[test]
fn developer_messages_become_system_messages_in_place() {
    let out = translate(chat(json!([
        {"role": "user", "content": "a"},
        {"role": "developer", "content": [{"type": "text", "text": "Be terse."}]},
    ])));
    assert_eq!(out["messages"][1], json!({"role": "system", "content": [{"type": "text", "text": "Be terse."}]}));
}

#[test]
fn sampling_parameters_take_cohere_names() {
    let body = json!({"model": "smart", "messages": [{"role": "user", "content": "hi"}],
        "stop": "END", "top_p": 0.5, "top_k": 40, "seed": 7, "frequency_penalty": 0.2, "presence_penalty": 0.1,
        "max_tokens": 100});
    let out = translate(body);
    assert_eq!(out["stop_sequences"], json!(["END"]));
    assert_eq!(out["p"], json!(0.5));
    assert_eq!(out["k"], json!(40));
    assert_eq!(out["seed"], json!(7));
    assert_eq!(out["frequency_penalty"], json!(0.2));
    assert_eq!(out["presence_penalty"], json!(0.1));
    assert_eq!(out["max_tokens"], json!(100));
    assert!(out.get("top_p").is_none() && out.get("top_k").is_none() && out.get("stop").is_none());
}

#[test]
fn max_completion_tokens_wins_over_max_tokens() {
    let out = translate(with(with(hi(), "max_tokens", json!(10)), "max_completion_tokens", json!(20)));
    assert_eq!(out["max_tokens"], json!(20));
}

#[test]
fn tool_choice_required_and_none_are_cohere_modes_and_auto_is_the_default() {
    let tools = json!([{"type": "function", "function": {"name": "f"}}]);
    let body = with(hi(), "tools", tools);
    assert_eq!(translate(with(body.clone(), "tool_choice", json!("required")))["tool_choice"], "REQUIRED");
    assert_eq!(translate(with(body.clone(), "tool_choice", json!("none")))["tool_choice"], "NONE");
    assert!(translate(with(body, "tool_choice", json!("auto"))).get("tool_choice").is_none());
}

#[test]
fn tool_choice_without_tools_is_not_sent() {
    assert!(translate(with(hi(), "tool_choice", json!("required"))).get("tool_choice").is_none());
}

#[test]
fn a_tool_without_parameters_gets_an_empty_object_schema() {
    let out = translate(with(hi(), "tools", json!([{"type": "function", "function": {"name": "now"}}])));
    assert_eq!(out["tools"][0]["function"]["parameters"], json!({"type": "object", "properties": {}}));
}

#[test]
fn strict_tools_is_set_only_when_every_tool_is_strict() {
    let strict =
        json!({"type": "function", "function": {"name": "a", "strict": true, "parameters": {"type": "object"}}});
    let loose = json!({"type": "function", "function": {"name": "b", "parameters": {"type": "object"}}});
    assert_eq!(translate(with(hi(), "tools", json!([strict.clone()])))["strict_tools"], json!(true));
    assert!(translate(with(hi(), "tools", json!([strict, loose]))).get("strict_tools").is_none());
}

#[test]
fn response_format_json_schema_becomes_json_object_with_the_schema() {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    let format = json!({"type": "json_schema", "json_schema": {"name": "person", "schema": schema, "strict": true}});
    let out = translate(with(hi(), "response_format", format));
    assert_eq!(out["response_format"], json!({"type": "json_object", "json_schema": schema}));
    let out = translate(with(hi(), "response_format", json!({"type": "json_object"})));
    assert_eq!(out["response_format"], json!({"type": "json_object"}));
    let out = translate(with(hi(), "response_format", json!({"type": "text"})));
    assert_eq!(out["response_format"], json!({"type": "text"}));
}

#[test]
fn reasoning_effort_becomes_a_thinking_budget_and_none_disables_thinking() {
    let out = translate(with(hi(), "reasoning_effort", json!("medium")));
    assert_eq!(out["thinking"], json!({"type": "enabled", "token_budget": 2048}));
    let out = translate(with(hi(), "reasoning_effort", json!("none")));
    assert_eq!(out["thinking"], json!({"type": "disabled"}));
}

#[test]
fn a_native_thinking_object_wins_over_reasoning_effort() {
    let body = with(
        with(hi(), "reasoning_effort", json!("high")),
        "thinking",
        json!({"type": "enabled", "token_budget": 31000}),
    );
    assert_eq!(translate(body)["thinking"], json!({"type": "enabled", "token_budget": 31000}));
}

#[test]
fn cohere_native_fields_pass_through_and_user_is_dropped() {
    let body = with(
        with(with(hi(), "documents", json!(["The sky is blue."])), "citation_options", json!({"mode": "FAST"})),
        "user",
        json!("u-1"),
    );
    let out = translate(body);
    assert_eq!(out["documents"], json!(["The sky is blue."]));
    assert_eq!(out["citation_options"], json!({"mode": "FAST"}));
    assert!(out.get("user").is_none());
}

#[test]
fn a_translated_field_wins_over_a_passed_through_one_of_the_same_name() {
    let out = translate(with(with(hi(), "top_p", json!(0.5)), "p", json!(0.9)));
    assert_eq!(out["p"], json!(0.5));
}

#[test]
fn an_assistant_turn_without_content_or_calls_gets_empty_text() {
    let out = translate(chat(json!([{"role": "user", "content": "a"}, {"role": "assistant", "content": null}])));
    assert_eq!(out["messages"][1], json!({"role": "assistant", "content": ""}));
}

#[test]
fn reasoning_content_without_tool_calls_is_not_sent() {
    let out = translate(chat(json!([
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b", "reasoning_content": "thought"},
    ])));
    assert_eq!(out["messages"][1], json!({"role": "assistant", "content": "b"}));
}

#[test]
fn a_client_tool_plan_wins_over_reasoning_content() {
    let out = translate(chat(json!([
        {"role": "user", "content": "a"},
        {"role": "assistant", "reasoning_content": "r", "tool_plan": "plan",
         "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    ])));
    assert_eq!(out["messages"][1]["tool_plan"], "plan");
}

// Refusals: each names its field.

#[test]
fn every_unsupported_parameter_is_refused_naming_it() {
    let cases = [
        ("n", json!(2)),
        ("logprobs", json!(true)),
        ("top_logprobs", json!(3)),
        ("logit_bias", json!({"1": 5})),
        ("parallel_tool_calls", json!(false)),
        ("modalities", json!(["text", "audio"])),
        ("audio", json!({"voice": "alloy"})),
    ];
    for (field, value) in cases {
        assert_eq!(refused(with(hi(), field, value.clone())).field, field, "{field}");
        let dropped = translate_with(with(hi(), field, value), &opts().drop_unsupported(true)).expect("dropped");
        assert!(dropped.get(field).is_none(), "{field} passed with drop_unsupported");
    }
}

#[test]
fn harmless_values_of_unsupported_parameters_are_accepted() {
    for (field, value) in [("n", json!(1)), ("logprobs", json!(false)), ("parallel_tool_calls", json!(true))] {
        assert!(translate(with(hi(), field, value)).get(field).is_none(), "{field}");
    }
}

#[test]
fn a_forced_named_tool_is_refused_and_dropped_with_drop_unsupported() {
    let body = with(
        with(hi(), "tools", json!([{"type": "function", "function": {"name": "f"}}])),
        "tool_choice",
        json!({"type": "function", "function": {"name": "f"}}),
    );
    assert_eq!(refused(body.clone()).field, "tool_choice");
    let out = translate_with(body, &opts().drop_unsupported(true)).expect("dropped");
    assert!(out.get("tool_choice").is_none());
}

#[test]
fn malformed_requests_are_refused_naming_the_field() {
    let cases = [
        (chat(json!([])), "messages"),
        (chat(json!([{"role": "user"}])), "messages[0].content"),
        (chat(json!([{"role": "function", "name": "f", "content": "x"}])), "messages[0].role"),
        (chat(json!([{"role": "tool", "content": "x"}])), "messages[0].tool_call_id"),
        (
            chat(
                json!([{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}]}]),
            ),
            "messages[0].content[0]",
        ),
        (
            chat(json!([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "ftp://x/y.png"}}]}])),
            "messages[0].content[0].image_url.url",
        ),
        (
            chat(
                json!([{"role": "system", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}]),
            ),
            "messages[0].content[0]",
        ),
        (
            chat(
                json!([{"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}]),
            ),
            "messages[0].content[0]",
        ),
        (
            chat(
                json!([{"role": "tool", "tool_call_id": "1", "content": [{"type": "image_url", "image_url": {"url": "https://x"}}]}]),
            ),
            "messages[0].content[0]",
        ),
        (with(hi(), "tools", json!([{"type": "web_search"}])), "tools[0].type"),
        (with(hi(), "tool_choice", json!("sometimes")), "tool_choice"),
        (with(hi(), "response_format", json!({"type": "yaml"})), "response_format.type"),
        (
            with(hi(), "response_format", json!({"type": "json_schema", "json_schema": {"name": "x"}})),
            "response_format.json_schema.schema",
        ),
        (with(hi(), "reasoning_effort", json!("extreme")), "reasoning_effort"),
        (with(hi(), "thinking", json!("on")), "thinking"),
        (with(hi(), "top_k", json!(-1)), "top_k"),
    ];
    for (body, field) in cases {
        let err = translate_with(body.clone(), &opts()).expect_err(field);
        assert_eq!(err.field, field, "{body}");
    }
}
