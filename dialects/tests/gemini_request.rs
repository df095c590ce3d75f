//! Chat requests translated for Gemini: golden bodies in the shapes of Google's REST reference
//! examples (`generateContent`, function calling, JSON mode, thinking), and every refusal.

use serde_json::{Value, json};
use switchyard_dialects::chat::ChatRequest;
use switchyard_dialects::gemini::{RequestOptions, request_from_chat};

fn translate(body: Value) -> Result<Value, switchyard_dialects::TranslateError> {
    translate_for("gemini-2.5-flash", body)
}

fn translate_for(model: &str, body: Value) -> Result<Value, switchyard_dialects::TranslateError> {
    let req: ChatRequest = serde_json::from_value(body).expect("a chat request");
    let out = request_from_chat(req, &RequestOptions::new(model))?;
    Ok(serde_json::to_value(out).expect("serializes"))
}

fn refused(body: Value) -> String {
    translate(body).expect_err("refused").field
}

#[test]
fn system_instruction_and_generation_config_as_in_the_text_generation_example() {
    let out = translate(json!({
        "model": "flash",
        "messages": [
            {"role": "system", "content": "You are a cat."},
            {"role": "developer", "content": [{"type": "text", "text": "Your name is Neko."}]},
            {"role": "user", "content": "Hello there"},
        ],
        "temperature": 1.0,
        "top_p": 0.8,
        "top_k": 10,
        "max_completion_tokens": 800,
        "max_tokens": 5,
        "stop": ["Title"],
        "n": 2,
        "seed": 7,
        "presence_penalty": 0.5,
        "frequency_penalty": 0.25,
        "stream": true,
        "stream_options": {"include_usage": true},
        "user": "u-1",
        "store": false,
    }))
    .expect("translates");
    assert_eq!(
        out,
        json!({
            "systemInstruction": {"parts": [{"text": "You are a cat."}, {"text": "Your name is Neko."}]},
            "contents": [{"role": "user", "parts": [{"text": "Hello there"}]}],
            "generationConfig": {
                "temperature": 1.0,
                "topP": 0.8,
                "topK": 10,
                "maxOutputTokens": 800,
                "stopSequences": ["Title"],
                "candidateCount": 2,
                "seed": 7,
                "presencePenalty": 0.5,
                "frequencyPenalty": 0.25,
            },
        })
    );
}

#[test]
fn function_calling_turns_as_in_the_function_calling_example() {
    let out = translate(json!({
        "model": "flash",
        "messages": [
            {"role": "user", "content": "Schedule a meeting with Bob and Alice for 03/14/2025 at 10:00 AM about the Q3 planning."},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "schedule_meeting",
                 "arguments": "{\"attendees\":[\"Bob\",\"Alice\"],\"date\":\"2025-03-14\",\"time\":\"10:00\",\"topic\":\"Q3 planning\"}"}},
                {"id": "call_2__thought__c2lnbmF0dXJl", "type": "function", "function": {"name": "notify", "arguments": ""}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"status\": \"scheduled\"}"},
            {"role": "tool", "tool_call_id": "call_2__thought__c2lnbmF0dXJl", "content": "done"},
            {"role": "user", "content": "Thanks"},
        ],
        "tools": [
            {"type": "function", "function": {
                "name": "schedule_meeting",
                "description": "Schedules a meeting with specified attendees at a given time and date.",
                "parameters": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "attendees": {"type": "array", "items": {"type": "string"}, "description": "List of people attending the meeting."},
                        "date": {"type": "string", "description": "Date of the meeting (e.g., '2024-07-29')"},
                        "time": {"type": "string"},
                        "topic": {"type": ["string", "null"]},
                    },
                    "required": ["attendees", "date", "time", "topic"],
                },
                "strict": true,
            }},
            {"type": "function", "function": {"name": "notify", "parameters": {"type": "object", "properties": {}}}},
        ],
        "tool_choice": "required",
    }))
    .expect("translates");
    assert_eq!(
        out,
        json!({
            "contents": [
                {"role": "user", "parts": [{"text": "Schedule a meeting with Bob and Alice for 03/14/2025 at 10:00 AM about the Q3 planning."}]},
                {"role": "model", "parts": [
                    {"functionCall": {"name": "schedule_meeting", "args": {"attendees": ["Bob", "Alice"], "date": "2025-03-14", "time": "10:00", "topic": "Q3 planning"}}},
                    {"functionCall": {"name": "notify", "args": {}}, "thoughtSignature": "c2lnbmF0dXJl"},
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "schedule_meeting", "response": {"status": "scheduled"}}},
                    {"functionResponse": {"name": "notify", "response": {"content": "done"}}},
                    {"text": "Thanks"},
                ]},
            ],
            "tools": [{"functionDeclarations": [
                {"name": "schedule_meeting",
                 "description": "Schedules a meeting with specified attendees at a given time and date.",
                 "parameters": {
                    "type": "OBJECT",
                    "properties": {
                        "attendees": {"type": "ARRAY", "items": {"type": "STRING"}, "description": "List of people attending the meeting."},
                        "date": {"type": "STRING", "description": "Date of the meeting (e.g., '2024-07-29')"},
                        "time": {"type": "STRING"},
                        "topic": {"type": "STRING", "nullable": true},
                    },
                    "required": ["attendees", "date", "time", "topic"],
                 }},
                {"name": "notify"},
            ]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
        })
    );
}

#[test]
fn gemini_3_gets_call_ids_and_a_placeholder_signature() {
    let out = translate_for(
        "gemini-3-pro-preview",
        json!({
            "model": "pro",
            "messages": [
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
            ],
            "reasoning_effort": "medium",
        }),
    )
    .expect("translates");
    assert_eq!(
        out["contents"][1]["parts"][0],
        json!({"functionCall": {"id": "call_a", "name": "weather", "args": {}},
               "thoughtSignature": "c2tpcF90aG91Z2h0X3NpZ25hdHVyZV92YWxpZGF0b3I="})
    );
    assert_eq!(
        out["contents"][2]["parts"][0],
        json!({"functionResponse": {"id": "call_a", "name": "weather", "response": {"content": "sunny"}}})
    );
    assert_eq!(out["generationConfig"]["thinkingConfig"], json!({"includeThoughts": true, "thinkingLevel": "high"}));
}

#[test]
fn tool_choice_modes_and_a_named_function() {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}]);
    let cases = [
        (json!("auto"), json!({"mode": "AUTO"})),
        (json!("none"), json!({"mode": "NONE"})),
        (json!("required"), json!({"mode": "ANY"})),
        (json!({"type": "function", "function": {"name": "f"}}), json!({"mode": "ANY", "allowedFunctionNames": ["f"]})),
    ];
    for (choice, expected) in cases {
        let out = translate(json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "tools": tools, "tool_choice": choice}))
        .expect("translates");
        assert_eq!(out["toolConfig"]["functionCallingConfig"], expected);
    }
    // Without tools there is nothing to configure.
    let out = translate(json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tool_choice": "none"}))
        .expect("translates");
    assert!(out.get("toolConfig").is_none());
}

#[test]
fn json_mode_and_json_schema() {
    let out = translate(json!({"model": "m", "messages": [{"role": "user", "content": "list"}],
        "response_format": {"type": "json_object"}}))
    .expect("translates");
    assert_eq!(out["generationConfig"], json!({"responseMimeType": "application/json"}));

    let schema = json!({"type": "object", "properties": {"recipe_name": {"type": "string"}},
        "required": ["recipe_name"], "additionalProperties": false});
    let out = translate(json!({"model": "m", "messages": [{"role": "user", "content": "list"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": schema, "strict": true}}}))
    .expect("translates");
    assert_eq!(out["generationConfig"], json!({"responseMimeType": "application/json", "responseJsonSchema": schema}));
}

#[test]
fn reasoning_effort_becomes_a_thinking_budget_as_litellm() {
    for (effort, budget, include) in
        [("minimal", 128, true), ("low", 1024, true), ("medium", 2048, true), ("high", 4096, true), ("none", 0, false)]
    {
        let out = translate(
            json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "reasoning_effort": effort}),
        )
        .expect("translates");
        assert_eq!(
            out["generationConfig"]["thinkingConfig"],
            json!({"includeThoughts": include, "thinkingBudget": budget}),
            "{effort}"
        );
    }
    let out = translate(json!({"model": "m", "messages": [{"role": "user", "content": "x"}],
        "thinking": {"type": "enabled", "budget_tokens": 512}}))
    .expect("translates");
    assert_eq!(out["generationConfig"]["thinkingConfig"], json!({"includeThoughts": true, "thinkingBudget": 512}));
}

#[test]
fn images_inline_and_by_uri_and_native_fields_pass() {
    let out = translate(json!({
        "model": "m",
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "Caption these"},
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png?x=1"}},
            {"type": "image_url", "image_url": {"url": "https://example.com/photo", "format": "image/webp"}},
        ]}],
        "safety_settings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_ONLY_HIGH"}],
        "cached_content": "cachedContents/abc",
        "logprobs": true,
        "top_logprobs": 3,
    }))
    .expect("translates");
    assert_eq!(
        out["contents"][0]["parts"],
        json!([
            {"text": "Caption these"},
            {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQ"}},
            {"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/cat.png?x=1"}},
            {"fileData": {"mimeType": "image/webp", "fileUri": "https://example.com/photo"}},
        ])
    );
    assert_eq!(
        out["safetySettings"],
        json!([{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_ONLY_HIGH"}])
    );
    assert_eq!(out["cachedContent"], "cachedContents/abc");
    assert_eq!(out["generationConfig"], json!({"responseLogprobs": true, "logprobs": 3}));
}

#[test]
fn consecutive_turns_of_a_role_merge() {
    let out = translate(json!({"model": "m", "messages": [
        {"role": "user", "content": "a"}, {"role": "user", "content": ""}, {"role": "user", "content": "b"},
        {"role": "assistant", "content": "c"}, {"role": "assistant", "content": [{"type": "text", "text": "d"}]},
    ]}))
    .expect("translates");
    assert_eq!(
        out["contents"],
        json!([
            {"role": "user", "parts": [{"text": "a"}, {"text": "b"}]},
            {"role": "model", "parts": [{"text": "c"}, {"text": "d"}]},
        ])
    );
}

#[test]
fn every_refusal_names_its_field() {
    let user = json!([{"role": "user", "content": "hi"}]);
    let with = |extra: Value| {
        let mut body = json!({"model": "m", "messages": user});
        for (k, v) in extra.as_object().expect("an object") {
            body[k] = v.clone();
        }
        refused(body)
    };
    assert_eq!(with(json!({"logit_bias": {"1": 2}})), "logit_bias");
    assert_eq!(with(json!({"modalities": ["text", "audio"]})), "modalities");
    assert_eq!(with(json!({"audio": {"voice": "x"}})), "audio");
    assert_eq!(with(json!({"parallel_tool_calls": false})), "parallel_tool_calls");
    assert_eq!(with(json!({"prediction": {"type": "content"}})), "prediction");
    assert_eq!(with(json!({"top_k": -1})), "top_k");
    assert_eq!(with(json!({"reasoning_effort": "extreme"})), "reasoning_effort");
    assert_eq!(with(json!({"thinking": {"type": "sometimes"}})), "thinking");
    assert_eq!(with(json!({"safety_settings": {"a": 1}})), "safety_settings");
    assert_eq!(with(json!({"cached_content": 3})), "cached_content");
    assert_eq!(
        with(json!({"tool_choice": "sometimes", "tools": [{"type": "function", "function": {"name": "f"}}]})),
        "tool_choice"
    );
    assert_eq!(with(json!({"tools": [{"type": "web_search"}]})), "tools[0].type");
    assert_eq!(
        with(json!({"tools": [{"type": "function", "function": {"name": "a__thought__b"}}]})),
        "tools[0].function.name"
    );
    assert_eq!(
        with(
            json!({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"$ref": "#/$defs/missing"}}}]})
        ),
        "tools[0].function.parameters"
    );
    assert_eq!(with(json!({"response_format": {"type": "xml"}})), "response_format.type");
    assert_eq!(
        with(json!({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}})),
        "response_format.json_schema.schema"
    );

    assert_eq!(refused(json!({"model": "m", "messages": [{"role": "system", "content": "only"}]})), "messages");
    assert_eq!(
        refused(
            json!({"model": "m", "messages": [{"role": "system", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}]})
        ),
        "messages[0].content[0]"
    );
    assert_eq!(
        refused(
            json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]})
        ),
        "messages[0].content[0]"
    );
    assert_eq!(
        refused(
            json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "ftp://x"}}]}]})
        ),
        "messages[0].content[0].image_url.url"
    );
    assert_eq!(
        refused(
            json!({"model": "m", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{not json"}}]}]})
        ),
        "messages[1].tool_calls[0].function.arguments"
    );
    assert_eq!(
        refused(
            json!({"model": "m", "messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "r"}]})
        ),
        "messages[1].tool_call_id"
    );
    assert_eq!(
        refused(
            json!({"model": "m", "messages": [{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "nope", "content": "r"}]})
        ),
        "messages[1].tool_call_id"
    );
    assert_eq!(
        refused(
            json!({"model": "m", "messages": [{"role": "user", "content": "a"}, {"role": "function", "content": "r"}]})
        ),
        "messages[1].name"
    );
}

#[test]
fn drop_params_drops_what_would_be_refused() {
    let req: ChatRequest =
        serde_json::from_value(json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
        "logit_bias": {"1": 2}, "parallel_tool_calls": false, "prediction": {"type": "content"}, "audio": {}}))
        .expect("a chat request");
    let out =
        request_from_chat(req, &RequestOptions::new("gemini-2.5-pro").drop_unsupported(true)).expect("translates");
    assert_eq!(
        serde_json::to_value(out).expect("serializes"),
        json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    );
}
