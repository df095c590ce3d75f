//! `cohere::chat_from_response`, `response_error`, error classification and the Embed API:
//! golden translations of Cohere's documented answers (docs/dialects/cohere.md).

use serde_json::{Value, json};
use switchyard_dialects::ErrorClass;
use switchyard_dialects::cohere::{
    ChatV2Response, EmbedResponse, chat_from_response, classify_error, embed_request_from_openai, error_message,
    openai_embeddings_from, response_error,
};

fn answer(body: Value) -> Value {
    let resp: ChatV2Response = serde_json::from_value(body).expect("a Cohere answer");
    serde_json::to_value(chat_from_response(resp, 1_700_000_000)).expect("serializes")
}

/// The answer of the Chat API reference (docs.cohere.com/reference/chat).
#[test]
fn documented_text_answer_is_golden() {
    let out = answer(json!({
        "id": "c14c80c3-18eb-4519-9460-6c92edd8cfb4",
        "finish_reason": "COMPLETE",
        "message": {"role": "assistant", "content": [{"type": "text",
            "text": "LLMs stand for Large Language Models, which are a type of neural network model."}]},
        "usage": {"billed_units": {"input_tokens": 5, "output_tokens": 418},
                  "tokens": {"input_tokens": 71, "output_tokens": 418}},
    }));
    assert_eq!(
        out,
        json!({
            "id": "c14c80c3-18eb-4519-9460-6c92edd8cfb4",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                "content": "LLMs stand for Large Language Models, which are a type of neural network model."}}],
            "usage": {"prompt_tokens": 71, "completion_tokens": 418, "total_tokens": 489},
        })
    );
}

/// The tool-calling answer of the tool-use guide (docs.cohere.com/docs/tool-use).
#[test]
fn documented_tool_call_answer_is_golden() {
    let out = answer(json!({
        "id": "d9c8f4e3-7b51-4c1e-9b2b-3d6b0f7a1e2c",
        "finish_reason": "TOOL_CALL",
        "message": {"role": "assistant", "tool_plan": "I will search for the weather in Toronto.",
            "tool_calls": [{"id": "get_weather_1byjy32y4hvq", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"location\":\"Toronto\"}"}}]},
        "usage": {"billed_units": {"input_tokens": 37, "output_tokens": 28},
                  "tokens": {"input_tokens": 1048, "output_tokens": 62}},
    }));
    assert_eq!(
        out["choices"][0],
        json!({"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "reasoning_content": "I will search for the weather in Toronto.",
            "tool_calls": [{"id": "get_weather_1byjy32y4hvq", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"location\":\"Toronto\"}"}}],
        }})
    );
    assert_eq!(out["usage"], json!({"prompt_tokens": 1048, "completion_tokens": 62, "total_tokens": 1110}));
}

/// The grounded answer of the RAG guide (docs.cohere.com/docs/retrieval-augmented-generation-rag).
#[test]
fn citations_are_kept_under_provider_specific_fields() {
    let citation = json!({"start": 36, "end": 51, "text": "tug-of-war game", "type": "TEXT_CONTENT",
        "sources": [{"type": "document", "id": "doc:1",
            "document": {"id": "doc:1", "text": "Company picnic: tug-of-war, three-legged race."}}]});
    let out = answer(json!({
        "id": "1", "finish_reason": "COMPLETE",
        "message": {"role": "assistant",
            "content": [{"type": "text", "text": "The team-building activities include a tug-of-war game."}],
            "citations": [citation]},
    }));
    assert_eq!(out["choices"][0]["message"]["provider_specific_fields"], json!({"citations": [citation]}));
}

#[test]
fn thinking_items_and_the_tool_plan_become_reasoning_content() {
    let out = answer(json!({"id": "1", "finish_reason": "COMPLETE", "message": {
        "content": [{"type": "thinking", "thinking": "Let me think. "}, {"type": "text", "text": "4"}],
        "tool_plan": "Then plan."}}));
    assert_eq!(out["choices"][0]["message"]["reasoning_content"], "Let me think. Then plan.");
    assert_eq!(out["choices"][0]["message"]["content"], "4");
}

#[test]
fn finish_reasons_map_to_openai_ones() {
    for (reason, finish) in [
        ("COMPLETE", "stop"),
        ("STOP_SEQUENCE", "stop"),
        ("MAX_TOKENS", "length"),
        ("TOOL_CALL", "tool_calls"),
        ("max_tokens", "length"),
        ("SOMETHING_NEW", "stop"),
    ] {
        let out = answer(json!({"id": "1", "finish_reason": reason, "message": {}}));
        assert_eq!(out["choices"][0]["finish_reason"], finish, "{reason}");
    }
}

#[test]
fn error_and_timeout_answers_are_failures_of_their_class() {
    let read = |reason: &str| -> ChatV2Response {
        serde_json::from_value(json!({"id": "1", "finish_reason": reason, "message": {}})).expect("reads")
    };
    assert_eq!(response_error(&read("ERROR")).map(|e| e.0), Some(ErrorClass::ServerError));
    assert_eq!(response_error(&read("TIMEOUT")).map(|e| e.0), Some(ErrorClass::Timeout));
    assert_eq!(response_error(&read("COMPLETE")), None);
}

#[test]
fn usage_falls_back_to_billed_units_and_reads_float_counts() {
    let out = answer(json!({"id": "1", "finish_reason": "COMPLETE", "message": {},
        "usage": {"billed_units": {"input_tokens": 12.0, "output_tokens": 3}, "cached_tokens": 4}}));
    assert_eq!(
        out["usage"],
        json!({"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15,
        "prompt_tokens_details": {"cached_tokens": 4}})
    );
}

#[test]
fn a_tool_call_without_arguments_gets_an_empty_object() {
    let out = answer(json!({"id": "1", "finish_reason": "TOOL_CALL", "message": {
        "tool_calls": [{"id": "now_0", "type": "function", "function": {"name": "now"}}]}}));
    assert_eq!(out["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"], "{}");
}

// Errors.

#[test]
fn error_statuses_classify_as_routing_classes() {
    let body = br#"{"id": "e1", "message": "something"}"#;
    for (status, class) in [
        (400, ErrorClass::BadRequest),
        (401, ErrorClass::Auth),
        (403, ErrorClass::Auth),
        (404, ErrorClass::NotFound),
        (413, ErrorClass::RequestTooLarge),
        (422, ErrorClass::BadRequest),
        (429, ErrorClass::RateLimited),
        (498, ErrorClass::Auth),
        (499, ErrorClass::Timeout),
        (500, ErrorClass::ServerError),
        (501, ErrorClass::BadRequest),
        (502, ErrorClass::ServerError),
        (503, ErrorClass::Overloaded),
        (504, ErrorClass::Timeout),
        (408, ErrorClass::Timeout),
        (0, ErrorClass::ServerError),
    ] {
        assert_eq!(classify_error(status, body), class, "{status}");
    }
}

#[test]
fn too_many_tokens_is_a_context_window_error() {
    let body = br#"{"message":"too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 4437. Try using a shorter prompt, or enabling prompt truncating."}"#;
    assert_eq!(classify_error(400, body), ErrorClass::ContextWindowExceeded);
    assert_eq!(classify_error(0, body), ErrorClass::ContextWindowExceeded);
    assert_eq!(classify_error(429, body), ErrorClass::RateLimited);
}

#[test]
fn an_invalid_token_message_is_auth_whatever_the_4xx() {
    assert_eq!(classify_error(400, br#"{"message":"invalid api token"}"#), ErrorClass::Auth);
}

#[test]
fn error_message_reads_cohere_and_proxy_shapes_and_only_objects() {
    assert_eq!(error_message(br#"{"message":"m"}"#).as_deref(), Some("m"));
    assert_eq!(error_message(br#"{"error":{"message":"m"}}"#).as_deref(), Some("m"));
    assert_eq!(error_message(br#"{"error":"m"}"#).as_deref(), Some("m"));
    assert_eq!(error_message(br#"[{"message":"m"}]"#), None);
    assert_eq!(error_message(b"not json"), None);
}

// Embeddings.

#[test]
fn embeddings_request_defaults_to_search_document_and_float() {
    let req = embed_request_from_openai(&json!("hello"), "embed-v4.0", None).expect("translates");
    assert_eq!(
        serde_json::to_value(req).expect("serializes"),
        json!({
        "model": "embed-v4.0", "input_type": "search_document", "texts": ["hello"], "embedding_types": ["float"]})
    );
    let req = embed_request_from_openai(&json!(["a"]), "embed-v4.0", Some("search_query")).expect("translates");
    assert_eq!(req.input_type, "search_query");
}

#[test]
fn data_uri_inputs_are_embedded_as_images() {
    let req = embed_request_from_openai(&json!(["data:image/png;base64,iVBORw0KGgo="]), "embed-v4.0", None)
        .expect("translates");
    let out = serde_json::to_value(req).expect("serializes");
    assert_eq!(out["input_type"], "image");
    assert_eq!(out["images"], json!(["data:image/png;base64,iVBORw0KGgo="]));
    assert!(out.get("texts").is_none());
}

#[test]
fn embedding_inputs_cohere_cannot_take_are_refused() {
    for (input, field) in [
        (json!([]), "input"),
        (json!([1, 2, 3]), "input[0]"),
        (json!([[1, 2]]), "input[0]"),
        (json!(42), "input"),
        (json!(["text", "data:image/png;base64,AA=="]), "input"),
    ] {
        assert_eq!(embed_request_from_openai(&input, "m", None).expect_err("refused").field, field, "{input}");
    }
}

/// The answer of the Embed API reference (docs.cohere.com/reference/embed).
#[test]
fn documented_embed_answer_becomes_an_openai_list() {
    let resp: EmbedResponse = serde_json::from_value(json!({
        "id": "da6e531f-54c6-4a73-bf92-f60566d8d753",
        "embeddings": {"float": [[0.016296387, -0.008354187], [-0.0128479, 0.0041389465]]},
        "texts": ["hello", "goodbye"],
        "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": 2}},
        "response_type": "embeddings_by_type",
    }))
    .expect("reads");
    assert_eq!(
        openai_embeddings_from(resp, "embed-v4.0"),
        json!({
            "object": "list",
            "data": [
                {"object": "embedding", "index": 0, "embedding": [0.016296387, -0.008354187]},
                {"object": "embedding", "index": 1, "embedding": [-0.0128479, 0.0041389465]},
            ],
            "model": "embed-v4.0",
            "usage": {"prompt_tokens": 2, "total_tokens": 2},
        })
    );
}

#[test]
fn without_float_embeddings_the_first_type_present_is_used() {
    let resp: EmbedResponse = serde_json::from_value(
        json!({"id": "1", "embeddings": {"int8": [[1, -2]]}, "meta": {"tokens": {"input_tokens": 3}}}),
    )
    .expect("reads");
    let out = openai_embeddings_from(resp, "m");
    assert_eq!(out["data"][0]["embedding"], json!([1, -2]));
    assert_eq!(out["usage"]["prompt_tokens"], 3);
}
