//! `bedrock::request_from_chat`: golden translations from the Converse documentation's examples,
//! and every refusal.

use serde_json::{Value, json};
use switchyard_dialects::bedrock::{RequestOptions, request_from_chat};
use switchyard_dialects::chat::ChatRequest;

const CLAUDE: &str = "anthropic.claude-3-5-sonnet-20240620-v1:0";

fn translate(model_id: &str, body: Value) -> Result<Value, switchyard_dialects::TranslateError> {
    let req: ChatRequest = serde_json::from_value(body).expect("a chat request");
    request_from_chat(req, &RequestOptions::new(model_id)).map(|r| serde_json::to_value(r).expect("serializes"))
}

fn refused(body: Value) -> String {
    translate(CLAUDE, body).expect_err("refused").field
}

/// The tool-use walkthrough of the Bedrock user guide ("Call a tool with the Converse API"):
/// the `top_song` tool, the user's question, the model's `toolUse` and the `toolResult`.
#[test]
fn documented_tool_use_conversation_translates_to_the_documented_body() {
    let body = translate(
        CLAUDE,
        json!({
            "model": "claude",
            "messages": [
                {"role": "user", "content": "What is the most popular song on WZPZ?"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                    "type": "function", "function": {"name": "top_song", "arguments": "{\"sign\": \"WZPZ\"}"}}]},
                {"role": "tool", "tool_call_id": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                    "content": "{\"song\": \"Elemental Hotel\", \"artist\": \"8 Storey Hike\"}"}
            ],
            "tools": [{"type": "function", "function": {"name": "top_song",
                "description": "Get the most popular song played on a radio station.",
                "parameters": {"type": "object", "properties": {"sign": {"type": "string",
                    "description": "The call sign for the radio station for which you want the most popular song. Example calls signs are WZPZ and WKRP."}},
                    "required": ["sign"]}}}],
            "tool_choice": {"type": "function", "function": {"name": "top_song"}}
        }),
    )
    .expect("translates");
    assert_eq!(
        body,
        json!({
            "messages": [
                {"role": "user", "content": [{"text": "What is the most popular song on WZPZ?"}]},
                {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                    "name": "top_song", "input": {"sign": "WZPZ"}}}]},
                {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                    "content": [{"text": "{\"song\": \"Elemental Hotel\", \"artist\": \"8 Storey Hike\"}"}]}}]}
            ],
            "toolConfig": {
                "tools": [{"toolSpec": {"name": "top_song",
                    "description": "Get the most popular song played on a radio station.",
                    "inputSchema": {"json": {"type": "object", "properties": {"sign": {"type": "string",
                        "description": "The call sign for the radio station for which you want the most popular song. Example calls signs are WZPZ and WKRP."}},
                        "required": ["sign"]}}}}],
                "toolChoice": {"tool": {"name": "top_song"}}
            }
        })
    );
}

#[test]
fn system_messages_become_system_blocks_and_consecutive_turns_merge() {
    let body = translate(
        "meta.llama3-1-70b-instruct-v1:0",
        json!({"model": "m", "messages": [
            {"role": "system", "content": "Be terse."},
            {"role": "developer", "content": [{"type": "text", "text": "Answer in French."}]},
            {"role": "user", "content": "Hi"},
            {"role": "user", "content": [{"type": "text", "text": "again"}, {"type": "image_url",
                "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
            {"role": "assistant", "content": "Bonjour"},
            {"role": "assistant", "content": "   "},
            {"role": "user", "content": "Merci"}
        ], "max_completion_tokens": 64, "max_tokens": 10, "temperature": 0.2, "top_p": 1, "stop": ["", "END"]}),
    )
    .expect("translates");
    assert_eq!(
        body,
        json!({
            "messages": [
                {"role": "user", "content": [{"text": "Hi"}, {"text": "again"},
                    {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}}]},
                {"role": "assistant", "content": [{"text": "Bonjour"}]},
                {"role": "user", "content": [{"text": "Merci"}]}
            ],
            "system": [{"text": "Be terse."}, {"text": "Answer in French."}],
            "inferenceConfig": {"maxTokens": 64, "temperature": 0.2, "topP": 1, "stopSequences": ["END"]}
        })
    );
}

#[test]
fn consecutive_tool_results_share_one_user_turn_with_cache_points() {
    let body = translate(
        CLAUDE,
        json!({"model": "m", "messages": [
            {"role": "system", "content": "Long prompt", "cache_control": {"type": "ephemeral"}},
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"role": "assistant", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "b", "type": "function", "function": {"name": "weather", "arguments": ""}}]},
            {"role": "tool", "tool_call_id": "a", "content": "sunny"},
            {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "rain"}]},
            {"role": "user", "content": "Thanks"}
        ], "tools": [{"type": "function", "function": {"name": "weather"}, "cache_control": {"type": "ephemeral"}}]}),
    )
    .expect("translates");
    assert_eq!(body["system"], json!([{"text": "Long prompt"}, {"cachePoint": {"type": "default"}}]));
    assert_eq!(
        body["messages"][1]["content"][1],
        json!({"toolUse": {"toolUseId": "b", "name": "weather", "input": {}}})
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [
            {"toolResult": {"toolUseId": "a", "content": [{"text": "sunny"}]}},
            {"toolResult": {"toolUseId": "b", "content": [{"text": "rain"}]}},
            {"text": "Thanks"}
        ]})
    );
    assert_eq!(
        body["toolConfig"]["tools"],
        json!([{"toolSpec": {"name": "weather", "inputSchema": {"json": {"type": "object", "properties": {}}}}},
            {"cachePoint": {"type": "default"}}])
    );
}

#[test]
fn reasoning_effort_becomes_claude_thinking_with_room_for_the_answer() {
    let body = translate(
        CLAUDE,
        json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}],
        "reasoning_effort": "medium", "tools": [{"type": "function", "function": {"name": "f"}}],
        "tool_choice": "required"}),
    )
    .expect("translates");
    assert_eq!(body["additionalModelRequestFields"], json!({"thinking": {"type": "enabled", "budget_tokens": 2048}}));
    assert_eq!(body["inferenceConfig"], json!({"maxTokens": 2048 + 4096}));
    // Claude refuses a forced tool while thinking.
    assert_eq!(body["toolConfig"]["toolChoice"], json!({"auto": {}}));

    let capped = translate(
        CLAUDE,
        json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}],
        "reasoning_effort": "high", "max_tokens": 2000}),
    )
    .expect("translates");
    assert_eq!(capped["additionalModelRequestFields"]["thinking"]["budget_tokens"], 1999);
    let too_small = translate(
        CLAUDE,
        json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}],
        "reasoning_effort": "low", "max_tokens": 512}),
    )
    .expect("translates");
    assert!(too_small.get("additionalModelRequestFields").is_none());

    let oss = translate(
        "openai.gpt-oss-120b-1:0",
        json!({"model": "m",
        "messages": [{"role": "user", "content": "Hi"}], "reasoning_effort": "low"}),
    )
    .expect("translates");
    assert_eq!(oss["additionalModelRequestFields"], json!({"reasoning_effort": "low"}));
}

#[test]
fn model_specific_and_converse_fields_go_where_bedrock_reads_them() {
    let body = translate(
        "us.amazon.nova-pro-v1:0",
        json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}], "top_k": 20,
            "guardrailConfig": {"guardrailIdentifier": "gr", "guardrailVersion": "DRAFT", "trace": "enabled"},
            "performanceConfig": {"latency": "optimized"}, "service_tier": "auto",
            "requestMetadata": {"team": "a"}, "custom_knob": 3, "user": "u-1", "stream": true,
            "stream_options": {"include_usage": true}}),
    )
    .expect("translates");
    assert_eq!(
        body,
        json!({
            "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
            "guardrailConfig": {"guardrailIdentifier": "gr", "guardrailVersion": "DRAFT", "trace": "enabled"},
            "performanceConfig": {"latency": "optimized"},
            "requestMetadata": {"team": "a"},
            "serviceTier": {"type": "default"},
            "additionalModelRequestFields": {"inferenceConfig": {"topK": 20}, "custom_knob": 3}
        })
    );
}

#[test]
fn response_format_json_schema_forces_the_json_tool() {
    let body = translate(
        CLAUDE,
        json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "a",
            "schema": {"properties": {"x": {"type": "integer"}}}}}}),
    )
    .expect("translates");
    assert_eq!(
        body["toolConfig"],
        json!({"tools": [{"toolSpec": {"name": "json_tool_call", "inputSchema": {"json":
            {"properties": {"x": {"type": "integer"}}, "type": "object"}}}}],
            "toolChoice": {"tool": {"name": "json_tool_call"}}})
    );
    let plain = translate(
        CLAUDE,
        json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}],
        "response_format": {"type": "json_object"}}),
    )
    .expect("translates");
    assert!(plain.get("toolConfig").is_none());
}

#[test]
fn tool_choice_none_leaves_the_tools_out() {
    let body = translate(
        CLAUDE,
        json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}],
        "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "none"}),
    )
    .expect("translates");
    assert!(body.get("toolConfig").is_none());
}

#[test]
fn parallel_tool_calls_false_reaches_claude_as_anthropic_setting() {
    let body = translate(
        CLAUDE,
        json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}],
        "tools": [{"type": "function", "function": {"name": "f"}}], "parallel_tool_calls": false}),
    )
    .expect("translates");
    assert_eq!(
        body["additionalModelRequestFields"],
        json!({"tool_choice": {"type": "auto", "disable_parallel_tool_use": true}})
    );
}

#[test]
fn every_unsupported_parameter_is_refused_naming_it() {
    let base = |extra: Value| {
        let mut body = json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}]});
        for (k, v) in extra.as_object().expect("an object") {
            body[k] = v.clone();
        }
        body
    };
    for (field, extra) in [
        ("n", json!({"n": 2})),
        ("logprobs", json!({"logprobs": true})),
        ("top_logprobs", json!({"top_logprobs": 2})),
        ("logit_bias", json!({"logit_bias": {"1": 2}})),
        ("presence_penalty", json!({"presence_penalty": 0.5})),
        ("frequency_penalty", json!({"frequency_penalty": 0.5})),
        ("seed", json!({"seed": 7})),
        ("modalities", json!({"modalities": ["text", "audio"]})),
        ("audio", json!({"audio": {"voice": "alloy"}})),
        ("top_k", json!({"top_k": -1})),
        ("reasoning_effort", json!({"reasoning_effort": "extreme"})),
        ("service_tier", json!({"service_tier": "scale"})),
        ("additionalModelRequestFields", json!({"additionalModelRequestFields": [1]})),
        ("tool_choice", json!({"tool_choice": "sometimes"})),
        ("tools[0].type", json!({"tools": [{"type": "web_search"}]})),
        ("tools[0].function.name", json!({"tools": [{"type": "function", "function": {"name": "get weather"}}]})),
        ("response_format.type", json!({"response_format": {"type": "yaml"}})),
        (
            "response_format.json_schema.schema",
            json!({"response_format": {"type": "json_schema", "json_schema": {"name": "a"}}}),
        ),
        (
            "tools",
            json!({"tools": [{"type": "function", "function": {"name": "json_tool_call"}}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {}}}}),
        ),
    ] {
        assert_eq!(refused(base(extra)), field);
    }
    let nova = translate("amazon.nova-lite-v1:0", base(json!({"reasoning_effort": "high"}))).expect_err("refused");
    assert_eq!(nova.field, "reasoning_effort");

    for (field, messages) in [
        ("messages", json!([{"role": "system", "content": "only a system prompt"}])),
        ("messages[1]", json!([{"role": "system", "content": "s"}, {"role": "assistant", "content": "prefill first"}])),
        ("messages[0].role", json!([{"role": "function", "name": "f", "content": "x"}])),
        (
            "messages[0].content[0]",
            json!([{"role": "system", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]}]),
        ),
        (
            "messages[0].content[0].image_url.url",
            json!([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}]),
        ),
        (
            "messages[0].content[0].image_url.url",
            json!([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/tiff;base64,AA=="}}]}]),
        ),
        (
            "messages[0].content[0].image_url.url",
            json!([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png,rawbytes"}}]}]),
        ),
        (
            "messages[0].content[0]",
            json!([{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}]}]),
        ),
        (
            "messages[1].content[0]",
            json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]}]),
        ),
        (
            "messages[1].tool_calls[0].function.arguments",
            json!([{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{oops"}}]}]),
        ),
        (
            "messages[1].tool_calls[0].function.arguments",
            json!([{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "[1]"}}]}]),
        ),
        (
            "messages[1].thinking_blocks[0]",
            json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x", "thinking_blocks": [{"type": "unknown"}]}]),
        ),
        ("messages[1].tool_call_id", json!([{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}])),
        (
            "messages[1].content[0]",
            json!([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "a", "content": [{"type": "file", "file": {}}]}]),
        ),
        (
            "tools",
            json!([{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "a", "content": "x"}]),
        ),
    ] {
        assert_eq!(refused(json!({"model": "m", "messages": messages})), field, "{messages}");
    }
    // `none` cannot leave out the tools a conversation with tool calls needs.
    let body = json!({"model": "m", "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "none",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "a", "content": "x"}]});
    assert_eq!(refused(body), "tool_choice");
}

#[test]
fn drop_params_drops_what_would_be_refused() {
    let req: ChatRequest = serde_json::from_value(json!({"model": "m", "n": 3, "seed": 1, "logprobs": true,
        "reasoning_effort": "high", "service_tier": "scale", "messages": [{"role": "user", "content": "Hi"}]}))
    .expect("a chat request");
    let body = request_from_chat(req, &RequestOptions::new("mistral.mistral-large-2402-v1:0").drop_unsupported(true))
        .expect("translates");
    assert_eq!(
        serde_json::to_value(body).expect("serializes"),
        json!({"messages": [{"role": "user", "content": [{"text": "Hi"}]}]})
    );
}
