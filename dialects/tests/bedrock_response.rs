//! `bedrock::chat_from_response` on documented Converse answers, stop reasons and usage; and the
//! embeddings bodies and answers.

use serde_json::{Value, json};
use switchyard_dialects::bedrock::{
    ConverseResponse, chat_from_response, embed_request, finish_reason, openai_embeddings_from,
};

const MODEL: &str = "anthropic.claude-3-5-sonnet-20240620-v1:0";

fn answer(body: Value) -> ConverseResponse {
    serde_json::from_value(body).expect("a Converse answer")
}

/// The model's answer of the Bedrock user guide's tool-use walkthrough.
#[test]
fn documented_tool_use_answer_becomes_a_tool_call() {
    let chat = chat_from_response(
        answer(json!({
            "output": {"message": {"role": "assistant", "content": [{"toolUse": {
                "toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "top_song", "input": {"sign": "WZPZ"}}}]}},
            "stopReason": "tool_use",
            "usage": {"inputTokens": 375, "outputTokens": 56, "totalTokens": 431},
            "metrics": {"latencyMs": 1321}
        })),
        MODEL,
        1_700_000_000,
    );
    assert_eq!(
        serde_json::to_value(&chat).expect("serializes"),
        json!({
            "id": "chatcmpl-bedrock-1700000000", "object": "chat.completion", "created": 1_700_000_000u64,
            "model": MODEL,
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "type": "function",
                    "function": {"name": "top_song", "arguments": "{\"sign\":\"WZPZ\"}"}}]}}],
            "usage": {"prompt_tokens": 375, "completion_tokens": 56, "total_tokens": 431,
                "prompt_tokens_details": {"cached_tokens": 0},
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        })
    );
}

#[test]
fn text_reasoning_and_unknown_blocks_are_kept() {
    let chat = chat_from_response(
        answer(json!({
            "output": {"message": {"role": "assistant", "content": [
                {"reasoningContent": {"reasoningText": {"text": "Count.", "signature": "c2ln"}}},
                {"reasoningContent": {"redactedContent": "ZW5j"}},
                {"text": "The answer "}, {"text": "is 4."},
                {"citationsContent": {"citations": []}}
            ]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 35, "cacheReadInputTokens": 12,
                "cacheWriteInputTokens": 8}
        })),
        MODEL,
        1,
    );
    let message = &chat.choices[0].message;
    assert_eq!(message.content.as_deref(), Some("The answer is 4."));
    assert_eq!(message.reasoning_content.as_deref(), Some("Count."));
    assert_eq!(
        message.thinking_blocks,
        Some(vec![
            json!({"type": "thinking", "thinking": "Count.", "signature": "c2ln"}),
            json!({"type": "redacted_thinking", "data": "ZW5j"})
        ])
    );
    assert_eq!(
        message.extra["provider_specific_fields"],
        json!({"content_blocks": [{"citationsContent": {"citations": []}}]})
    );
    let usage = chat.usage.expect("usage");
    assert_eq!((usage.prompt_tokens, usage.completion_tokens, usage.total_tokens), (30, 5, 35));
    assert_eq!(usage.cache_read_input_tokens, Some(12));
    assert_eq!(usage.cache_creation_input_tokens, Some(8));
    assert_eq!(usage.prompt_tokens_details.and_then(|d| d.cached_tokens), Some(12));
}

#[test]
fn the_json_tool_of_response_format_becomes_the_content() {
    let chat = chat_from_response(
        answer(json!({
            "output": {"message": {"role": "assistant", "content": [
                {"toolUse": {"toolUseId": "t", "name": "json_tool_call", "input": {"x": 1}}}]}},
            "stopReason": "tool_use", "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}
        })),
        MODEL,
        1,
    );
    assert_eq!(chat.choices[0].message.content.as_deref(), Some("{\"x\":1}"));
    assert_eq!(chat.choices[0].message.tool_calls, None);
    assert_eq!(chat.choices[0].finish_reason.as_deref(), Some("stop"));
}

#[test]
fn stop_reasons_map_to_openai_finish_reasons() {
    for (stop, finish) in [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("tool_use", "tool_calls"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("guardrail_intervened", "content_filter"),
        ("content_filtered", "content_filter"),
        ("malformed_model_output", "stop"),
        ("malformed_tool_use", "stop"),
        ("something_new", "stop"),
    ] {
        assert_eq!(finish_reason(stop), finish, "{stop}");
    }
}

#[test]
fn an_answer_without_output_or_usage_still_translates() {
    let chat = chat_from_response(answer(json!({})), MODEL, 1);
    assert_eq!(chat.choices[0].message.content, None);
    assert_eq!(chat.choices[0].finish_reason, None);
    assert_eq!(chat.usage.map(|u| u.total_tokens), Some(0));
}

#[test]
fn titan_embeds_one_text_per_call_and_sums_its_token_counts() {
    let bodies = embed_request("amazon.titan-embed-text-v2:0", &json!(["a", "b"])).expect("bodies");
    assert_eq!(bodies, [json!({"inputText": "a"}), json!({"inputText": "b"})]);
    let list = openai_embeddings_from(
        "amazon.titan-embed-text-v2:0",
        &[
            json!({"embedding": [0.1, 0.2], "inputTextTokenCount": 2}),
            json!({"embedding": [0.3], "inputTextTokenCount": 1}),
        ],
    )
    .expect("a list");
    assert_eq!(
        list,
        json!({"object": "list", "model": "amazon.titan-embed-text-v2:0",
            "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]},
                     {"object": "embedding", "index": 1, "embedding": [0.3]}],
            "usage": {"prompt_tokens": 3, "total_tokens": 3}})
    );
}

#[test]
fn cohere_embeds_up_to_96_texts_per_call() {
    let texts: Vec<String> = (0..100).map(|i| format!("t{i}")).collect();
    let bodies = embed_request("cohere.embed-multilingual-v3", &json!(texts)).expect("bodies");
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["texts"].as_array().map(Vec::len), Some(96));
    assert_eq!(bodies[1]["texts"], json!(["t96", "t97", "t98", "t99"]));
    assert_eq!(bodies[1]["input_type"], "search_document");
    let list = openai_embeddings_from(
        "cohere.embed-multilingual-v3",
        &[
            json!({"id": "1", "embeddings": [[1.0], [2.0]], "response_type": "embeddings_floats"}),
            json!({"id": "2", "embeddings": {"float": [[3.0]]}, "response_type": "embeddings_by_type"}),
        ],
    )
    .expect("a list");
    let indices: Vec<u64> = list["data"].as_array().expect("data").iter().filter_map(|d| d["index"].as_u64()).collect();
    assert_eq!(indices, [0, 1, 2]);
    assert_eq!(list["data"][2]["embedding"], json!([3.0]));
    assert_eq!(list["usage"]["prompt_tokens"], 0);
}

#[test]
fn embeddings_refuse_what_cannot_cross() {
    assert_eq!(embed_request("meta.llama3-8b-instruct-v1:0", &json!("a")).expect_err("refused").field, "model");
    assert_eq!(embed_request("amazon.titan-embed-text-v1", &json!([1, 2])).expect_err("refused").field, "input[0]");
    assert_eq!(embed_request("amazon.titan-embed-text-v1", &json!([])).expect_err("refused").field, "input");
    assert_eq!(
        openai_embeddings_from("amazon.titan-embed-text-v1", &[json!({"embedding": "x"})]).expect_err("refused").field,
        "answers[0].embedding"
    );
    assert_eq!(
        openai_embeddings_from("cohere.embed-english-v3", &[json!({"embeddings": {"int8": [[1]]}})])
            .expect_err("refused")
            .field,
        "answers[0].embeddings"
    );
}
