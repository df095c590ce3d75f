//! `cohere::ChunkTranslator`: documented streams (text with citations, a tool-calling step with its
//! plan), failures, and properties: every text, plan fragment and tool call arrives, however the
//! bytes are split.

use proptest::{
    prelude::*,
    test_runner::{RngAlgorithm, RngSeed},
};
use serde_json::{Value, json};
use switchyard_dialects::chat::ChatCompletionChunk;
use switchyard_dialects::cohere::ChunkTranslator;
use switchyard_dialects::sse::SseDecoder;
use switchyard_dialects::{ErrorClass, StreamItem};

/// One SSE event as Cohere frames it: `event: <type>` and the JSON on one `data:` line.
fn event(data: &Value) -> String {
    format!("event: {}\ndata: {}\n\n", data["type"].as_str().expect("a type"), data)
}

fn run(body: &[u8], chunks: usize, include_usage: bool) -> Vec<StreamItem> {
    let mut sse = SseDecoder::new(1 << 20);
    let mut translator = ChunkTranslator::new("command-a-03-2025", 1_700_000_000, include_usage);
    let mut out = Vec::new();
    for piece in body.chunks(chunks.max(1)) {
        for e in sse.push(piece).expect("decodes") {
            out.extend(translator.push(&e).expect("translates"));
        }
    }
    out
}

fn chunks(items: &[StreamItem]) -> Vec<&ChatCompletionChunk> {
    items.iter().filter_map(|i| if let StreamItem::Chunk(c) = i { Some(c) } else { None }).collect()
}

fn content(items: &[StreamItem]) -> String {
    chunks(items).iter().filter_map(|c| c.choices.first()?.delta.content.clone()).collect()
}

fn reasoning(items: &[StreamItem]) -> String {
    chunks(items).iter().filter_map(|c| c.choices.first()?.delta.reasoning_content.clone()).collect()
}

/// Tool calls rebuilt from their fragments: (id, name, arguments) by position.
fn tool_calls(items: &[StreamItem]) -> Vec<(String, String, String)> {
    let mut calls: Vec<(String, String, String)> = Vec::new();
    for chunk in chunks(items) {
        for call in chunk.choices.iter().flat_map(|c| c.delta.tool_calls.iter().flatten()) {
            let i = call.index as usize;
            if i == calls.len() {
                calls.push(Default::default());
            }
            let slot = &mut calls[i];
            if let Some(id) = &call.id {
                slot.0.clone_from(id);
            }
            if let Some(f) = &call.function {
                if let Some(name) = &f.name {
                    slot.1.clone_from(name);
                }
                slot.2.push_str(f.arguments.as_deref().unwrap_or_default());
            }
        }
    }
    calls
}

fn start(id: &str) -> Value {
    json!({"type": "message-start", "id": id, "delta": {"message": {"role": "assistant", "content": [],
        "tool_plan": "", "tool_calls": [], "citations": []}}})
}

fn end(reason: &str, input: u64, output: u64) -> Value {
    json!({"type": "message-end", "delta": {"finish_reason": reason, "usage": {
        "billed_units": {"input_tokens": input, "output_tokens": output},
        "tokens": {"input_tokens": input, "output_tokens": output}}}})
}

/// The tool-calling step of Cohere's streaming guide (docs.cohere.com/docs/tool-use-streaming):
/// "What's the weather in Madrid and Brasilia?".
fn documented_tool_stream() -> String {
    let mut body = event(&start("fba98ad3-e5a1-413c-a8de-84fbf9baabf7"));
    for piece in ["I", " will", " search", " for", " the", " weather", " in", " Madrid", " and", " Brasilia", "."] {
        body += &event(&json!({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": piece}}}));
    }
    for (index, (id, city)) in
        [("get_weather_p0dage9q1nv4", "Madrid"), ("get_weather_cfwfh3wzkbrs", "Brasilia")].into_iter().enumerate()
    {
        body += &event(&json!({"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": {
            "id": id, "type": "function", "function": {"name": "get_weather", "arguments": ""}}}}}));
        for piece in ["{\n    \"", "location", "\":", " \"", city, "\"", "\n", "}"] {
            body += &event(&json!({"type": "tool-call-delta", "index": index, "delta": {"message": {"tool_calls": {
                "function": {"arguments": piece}}}}}));
        }
        body += &event(&json!({"type": "tool-call-end", "index": index}));
    }
    body + &event(&end("TOOL_CALL", 37, 28))
}

/// The response-generation step of the same guide, with its citations.
fn documented_text_stream() -> String {
    let mut body = event(&start("e8f9afc1-0888-46f0-a9ed-eb0e5a51e17f"));
    body += &event(
        &json!({"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}}),
    );
    for piece in ["It", " is", " currently", " 24", "°C in", " Madrid", "."] {
        body +=
            &event(&json!({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": piece}}}}));
    }
    body += &event(&json!({"type": "citation-start", "index": 0, "delta": {"message": {"citations": {
        "start": 19, "end": 23, "text": "24°C", "type": "TEXT_CONTENT",
        "sources": [{"type": "tool", "id": "get_weather_p0dage9q1nv4:0", "tool_output": {"temperature": "24C"}}]}}}}));
    body += &event(&json!({"type": "citation-end", "index": 0}));
    body += &event(&json!({"type": "content-end", "index": 0}));
    body + &event(&end("COMPLETE", 1209, 34))
}

#[test]
fn documented_tool_calling_stream_gives_the_plan_the_calls_and_tool_calls_finish() {
    let out = run(documented_tool_stream().as_bytes(), usize::MAX, true);
    let first = chunks(&out)[0];
    assert_eq!(first.id, "fba98ad3-e5a1-413c-a8de-84fbf9baabf7");
    assert_eq!(first.model, "command-a-03-2025");
    assert_eq!(first.choices[0].delta.role.as_deref(), Some("assistant"));
    assert_eq!(reasoning(&out), "I will search for the weather in Madrid and Brasilia.");
    assert_eq!(
        tool_calls(&out),
        vec![
            (
                "get_weather_p0dage9q1nv4".to_owned(),
                "get_weather".to_owned(),
                "{\n    \"location\": \"Madrid\"\n}".to_owned()
            ),
            (
                "get_weather_cfwfh3wzkbrs".to_owned(),
                "get_weather".to_owned(),
                "{\n    \"location\": \"Brasilia\"\n}".to_owned()
            ),
        ]
    );
    let all = chunks(&out);
    let finish = all[all.len() - 2];
    assert_eq!(finish.choices[0].finish_reason.as_deref(), Some("tool_calls"));
    let usage = all[all.len() - 1];
    assert!(usage.choices.is_empty());
    assert_eq!(
        usage.usage.as_ref().map(|u| (u.prompt_tokens, u.completion_tokens, u.total_tokens)),
        Some((37, 28, 65))
    );
    assert_eq!(out.last(), Some(&StreamItem::Done));
}

#[test]
fn documented_text_stream_gives_the_text_its_citation_and_stop() {
    let out = run(documented_text_stream().as_bytes(), 7, false);
    assert_eq!(content(&out), "It is currently 24°C in Madrid.");
    let citations: Vec<&Value> =
        chunks(&out).iter().filter_map(|c| c.choices.first()?.delta.extra.get("provider_specific_fields")).collect();
    assert_eq!(citations.len(), 1);
    assert_eq!(citations[0]["citations"][0]["text"], "24°C");
    let all = chunks(&out);
    assert_eq!(all.last().and_then(|c| c.choices[0].finish_reason.as_deref()), Some("stop"));
    assert!(all.iter().all(|c| c.usage.is_none()), "a usage chunk without include_usage");
    assert_eq!(out.last(), Some(&StreamItem::Done));
}

#[test]
fn thinking_deltas_become_reasoning_content() {
    let body = event(&start("1"))
        + &event(
            &json!({"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "thinking", "thinking": ""}}}}),
        )
        + &event(
            &json!({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"thinking": "Hmm."}}}}),
        )
        + &event(&json!({"type": "content-delta", "index": 1, "delta": {"message": {"content": {"text": "4"}}}}))
        + &event(&end("COMPLETE", 1, 1));
    let out = run(body.as_bytes(), usize::MAX, false);
    assert_eq!(reasoning(&out), "Hmm.");
    assert_eq!(content(&out), "4");
}

#[test]
fn an_error_or_timeout_finish_is_a_stream_failure_of_its_class_without_done() {
    for (reason, class) in [("ERROR", ErrorClass::ServerError), ("TIMEOUT", ErrorClass::Timeout)] {
        let body = event(&start("1"))
            + &event(&json!({"type": "message-end", "delta": {"finish_reason": reason, "error": "upstream broke"}}));
        let out = run(body.as_bytes(), usize::MAX, true);
        assert_eq!(
            out.last(),
            Some(&StreamItem::Error { class, message: "upstream broke".to_owned(), retry_after: None })
        );
        assert!(!out.contains(&StreamItem::Done), "{reason}");
    }
}

#[test]
fn events_after_message_end_and_unknown_events_give_nothing() {
    let body = event(&start("1"))
        + &event(&json!({"type": "debug", "prompt": "..."}))
        + &event(&end("COMPLETE", 1, 1))
        + &event(&json!({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "late"}}}}));
    let out = run(body.as_bytes(), usize::MAX, false);
    assert_eq!(out.iter().filter(|i| matches!(i, StreamItem::Chunk(_))).count(), 2);
    assert_eq!(out.last(), Some(&StreamItem::Done));
}

#[test]
fn data_that_is_not_an_event_is_an_error_naming_it() {
    let mut sse = SseDecoder::new(1024);
    let mut translator = ChunkTranslator::new("m", 0, false);
    let events = sse.push(b"data: {\"type\":\"message-start\"}\n\ndata: [1]\n\n").expect("decodes");
    assert!(translator.push(&events[0]).is_ok());
    assert_eq!(translator.push(&events[1]).expect_err("refused").field, "events[1].data");
    let events = sse
        .push(b"data: {\"type\":\"content-delta\",\"delta\":{\"message\":{\"content\":{\"text\":5}}}}\n\n")
        .expect("decodes");
    assert_eq!(translator.push(&events[0]).expect_err("refused").field, "events[2].data");
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(20),
        rng_algorithm: RngAlgorithm::ChaCha,
        ..ProptestConfig::default()
    }
}

fn text() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zé\"\\\\ \n✓{}:]{0,10}").expect("a valid regex")
}

proptest! {
    #![proptest_config(config())]

    /// Every plan fragment, tool call (id, name, arguments) and text fragment arrives, in order,
    /// with the usage, whatever the split of the bytes.
    #[test]
    fn everything_arrives_however_the_bytes_are_split(
        plan in proptest::collection::vec(text(), 0..4),
        calls in proptest::collection::vec(("[a-z_]{1,8}", proptest::collection::vec(text(), 0..4)), 0..4),
        texts in proptest::collection::vec(text(), 0..6),
        split in 1usize..64,
        (input, output) in (0u64..100_000, 0u64..100_000),
    ) {
        let mut body = event(&start("gen-1"));
        for piece in &plan {
            body += &event(&json!({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": piece}}}));
        }
        for (index, (name, args)) in calls.iter().enumerate() {
            body += &event(&json!({"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": {
                "id": format!("call_{index}"), "type": "function", "function": {"name": name, "arguments": ""}}}}}));
            for piece in args {
                body += &event(&json!({"type": "tool-call-delta", "index": index, "delta": {"message": {"tool_calls": {
                    "function": {"arguments": piece}}}}}));
            }
            body += &event(&json!({"type": "tool-call-end", "index": index}));
        }
        body += &event(&json!({"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}}));
        for piece in &texts {
            body += &event(&json!({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": piece}}}}));
        }
        body += &event(&end(if calls.is_empty() { "COMPLETE" } else { "TOOL_CALL" }, input, output));

        let whole = run(body.as_bytes(), usize::MAX, true);
        prop_assert_eq!(&run(body.as_bytes(), split, true), &whole);
        prop_assert_eq!(reasoning(&whole), plan.concat());
        prop_assert_eq!(content(&whole), texts.concat());
        let expected: Vec<(String, String, String)> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| (format!("call_{i}"), name.clone(), args.concat()))
            .collect();
        prop_assert_eq!(tool_calls(&whole), expected);
        let usage = chunks(&whole).last().and_then(|c| c.usage.clone()).expect("a usage chunk");
        prop_assert_eq!((usage.prompt_tokens, usage.completion_tokens), (input, output));
        prop_assert_eq!(whole.last(), Some(&StreamItem::Done));
        prop_assert_eq!(whole.iter().filter(|i| matches!(i, StreamItem::Done)).count(), 1);
    }
}
