//! `ChunkTranslator`: one test per streaming rule (docs/dialects/anthropic.md).

use serde_json::{Value, json};
use switchyard_dialects::TranslateError;
use switchyard_dialects::anthropic::{ChunkTranslator, MessagesResponse, Translated, chat_from_response};
use switchyard_dialects::sse::SseEvent;

fn event(data: Value) -> SseEvent {
    let name = data["type"].as_str().map(str::to_owned);
    SseEvent::new(name, data.to_string())
}

fn start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 25, "output_tokens": 1, "cache_read_input_tokens": 100}}})
}

fn text_start(index: u32) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
}

fn text_delta(index: u32, text: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})
}

fn tool_start(index: u32, id: &str, name: &str) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})
}

fn json_delta(index: u32, partial: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": partial}})
}

fn stop(index: u32) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_delta(reason: &str, output: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": {"output_tokens": output}})
}

fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

/// Every chunk's JSON (and "DONE" / the error) in order.
fn run(include_usage: bool, events: Vec<Value>) -> Result<Vec<Value>, TranslateError> {
    let mut chunks = ChunkTranslator::new(1_700_000_000, include_usage);
    let mut out = Vec::new();
    for e in events {
        for t in chunks.push(&event(e))? {
            out.push(match t {
                Translated::Chunk(c) => serde_json::to_value(c).expect("serializes"),
                Translated::Error { kind, message } => json!({"error": kind, "message": message}),
                Translated::Done => json!("DONE"),
                _ => json!("?"),
            });
        }
    }
    Ok(out)
}

fn deltas(chunks: &[Value]) -> Vec<Value> {
    chunks.iter().filter_map(|c| c.get("choices")?.get(0).map(|c| c["delta"].clone())).collect()
}

#[test]
fn message_start_is_a_role_chunk_and_its_id_and_model_stay_on_every_chunk() {
    let out = run(
        false,
        vec![start(), text_start(0), text_delta(0, "Hi"), stop(0), message_delta("end_turn", 3), message_stop()],
    )
    .expect("translates");
    assert_eq!(out[0]["choices"][0]["delta"], json!({"role": "assistant", "content": ""}));
    assert_eq!(out[0]["object"], "chat.completion.chunk");
    assert_eq!(out[0]["choices"][0]["finish_reason"], Value::Null);
    for chunk in &out[..out.len() - 1] {
        assert_eq!(chunk["id"], "msg_1");
        assert_eq!(chunk["model"], "claude-sonnet-4-5");
        assert_eq!(chunk["created"], 1_700_000_000);
    }
}

#[test]
fn text_deltas_are_content_deltas() {
    let out =
        run(false, vec![start(), text_start(0), text_delta(0, "Hello"), text_delta(0, " world")]).expect("translates");
    assert_eq!(deltas(&out)[1..], [json!({"content": "Hello"}), json!({"content": " world"})]);
}

#[test]
fn tool_blocks_are_tool_call_deltas_counted_from_zero() {
    let out = run(
        false,
        vec![
            start(),
            text_start(0),
            text_delta(0, "Let me check."),
            stop(0),
            tool_start(1, "toolu_1", "get_weather"),
            json_delta(1, "{\"city\":"),
            json_delta(1, "\"Paris\"}"),
            stop(1),
            tool_start(2, "toolu_2", "get_time"),
            json_delta(2, "{}"),
            stop(2),
            message_delta("tool_use", 40),
        ],
    )
    .expect("translates");
    let d = deltas(&out);
    assert_eq!(
        d[2],
        json!({"tool_calls": [{"index": 0, "id": "toolu_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]})
    );
    assert_eq!(d[3], json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}));
    assert_eq!(d[4], json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Paris\"}"}}]}));
    assert_eq!(d[5]["tool_calls"][0]["index"], 1);
    assert_eq!(d[5]["tool_calls"][0]["id"], "toolu_2");
    assert_eq!(d[6], json!({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}));
    assert_eq!(out.last().expect("a chunk")["choices"][0]["finish_reason"], "tool_calls");
}

#[test]
fn thinking_deltas_are_reasoning_content_and_the_signature_closes_the_thinking_block() {
    let out = run(
        false,
        vec![
            start(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "2+2"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": " is 4"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQB"}}),
            stop(0),
        ],
    )
    .expect("translates");
    let d = deltas(&out);
    assert_eq!(d[1], json!({"reasoning_content": "2+2", "thinking_blocks": [{"type": "thinking", "thinking": "2+2"}]}));
    assert_eq!(
        d[3],
        json!({"reasoning_content": "", "thinking_blocks": [{"type": "thinking", "thinking": "2+2 is 4", "signature": "EqQB"}]})
    );
}

#[test]
fn message_delta_maps_the_stop_reason() {
    for (reason, finish) in
        [("end_turn", "stop"), ("max_tokens", "length"), ("tool_use", "tool_calls"), ("refusal", "content_filter")]
    {
        let out = run(false, vec![start(), message_delta(reason, 2)]).expect("translates");
        assert_eq!(out[1]["choices"][0]["finish_reason"], finish);
        assert_eq!(out[1]["choices"][0]["delta"], json!({}));
    }
}

#[test]
fn message_stop_ends_with_a_usage_chunk_when_asked_then_done() {
    let events = vec![start(), text_start(0), text_delta(0, "Hi"), message_delta("end_turn", 15), message_stop()];
    let out = run(true, events.clone()).expect("translates");
    let usage = &out[out.len() - 2];
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 125);
    assert_eq!(usage["usage"]["completion_tokens"], 15);
    assert_eq!(usage["usage"]["total_tokens"], 140);
    assert_eq!(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 100);
    assert_eq!(out.last(), Some(&json!("DONE")));
    let out = run(false, events).expect("translates");
    assert!(out[out.len() - 2].get("usage").is_none());
    assert_eq!(out.last(), Some(&json!("DONE")));
}

#[test]
fn usage_counts_input_from_message_start_and_cumulative_output_from_message_delta() {
    let mut chunks = ChunkTranslator::new(0, false);
    assert_eq!(chunks.usage(), None);
    chunks.push(&event(start())).expect("translates");
    assert_eq!(chunks.usage(), Some((125, 1)));
    chunks.push(&event(message_delta("end_turn", 7))).expect("translates");
    chunks.push(&event(message_delta("end_turn", 9))).expect("translates");
    assert_eq!(chunks.usage(), Some((125, 9)));
}

#[test]
fn ping_and_unknown_events_give_nothing() {
    let out =
        run(false, vec![json!({"type": "ping"}), json!({"type": "brand_new_event", "x": 1}), json!({"no": "type"})])
            .expect("translates");
    assert!(out.is_empty());
}

#[test]
fn an_error_event_is_translated_error() {
    let out = run(
        false,
        vec![start(), json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})],
    )
    .expect("translates");
    assert_eq!(out[1], json!({"error": "overloaded_error", "message": "Overloaded"}));
}

#[test]
fn malformed_json_is_a_translate_error() {
    let mut chunks = ChunkTranslator::new(0, false);
    chunks.push(&event(start())).expect("translates");
    let err = chunks.push(&SseEvent::new(None, "{\"type\": \"content_block_delta\"".to_owned())).expect_err("refused");
    assert_eq!(err.field, "events[1].data");
    let err = chunks
        .push(&event(json!({"type": "content_block_delta", "delta": {"type": "text_delta", "text": "x"}})))
        .expect_err("no index");
    assert_eq!(err.field, "events[2].data");
}

#[test]
fn events_after_message_stop_give_nothing() {
    let out = run(false, vec![start(), message_stop(), text_delta(0, "late"), message_stop()]).expect("translates");
    assert_eq!(out.len(), 2);
}

#[test]
fn the_json_tool_call_streams_as_content_and_finishes_with_stop() {
    let out = run(
        false,
        vec![
            start(),
            tool_start(0, "toolu_1", "json_tool_call"),
            json_delta(0, "{\"answer\""),
            json_delta(0, ": 4}"),
            stop(0),
            message_delta("tool_use", 9),
        ],
    )
    .expect("translates");
    let d = deltas(&out);
    assert_eq!(d[1..3], [json!({"content": "{\"answer\""}), json!({"content": ": 4}"})]);
    assert_eq!(out.last().expect("a chunk")["choices"][0]["finish_reason"], "stop");
}

/// The `json_tool_call` answer of a stream split into `fragments`: its content, and the content
/// of the same answer whole (`chat_from_response`).
fn json_answer_streamed_and_whole(fragments: &[&str]) -> (String, String) {
    let mut events = vec![start(), tool_start(0, "toolu_1", "json_tool_call")];
    events.extend(fragments.iter().map(|f| json_delta(0, f)));
    events.extend([stop(0), message_delta("tool_use", 9), message_stop()]);
    let streamed: String =
        deltas(&run(false, events).expect("translates")).iter().filter_map(|d| d["content"].as_str()).collect();
    let input: Value = serde_json::from_str(&fragments.concat()).expect("the fragments make JSON");
    let answer: MessagesResponse = serde_json::from_value(json!({"id": "msg_1", "type": "message",
        "role": "assistant", "model": "claude-sonnet-4-5", "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "json_tool_call", "input": input}],
        "usage": {"input_tokens": 25, "output_tokens": 9}}))
    .expect("an answer");
    let whole = chat_from_response(answer, 0).choices[0].message.content.clone().expect("content");
    (streamed, whole)
}

#[test]
fn a_streamed_json_tool_call_gives_the_content_of_the_whole_answer() {
    for fragments in [
        &["{\"values\": [1, ", "2]}"][..],
        &["{", " \"val", "ues\" ", ":", " {\"a\": 1} }"],
        &["{\"values\": [1], \"n\": 2}"],
        &["{\"answer\"", ": 4}"],
        &["{\"", "v", "alid\": true}"],
        &["[1, 2]"],
    ] {
        let (streamed, whole) = json_answer_streamed_and_whole(fragments);
        let streamed: Value = serde_json::from_str(&streamed).unwrap_or_else(|e| panic!("{fragments:?}: {e}"));
        let whole: Value = serde_json::from_str(&whole).expect("JSON");
        assert_eq!(streamed, whole, "{fragments:?}");
    }
}

#[test]
fn a_values_wrapper_is_held_until_its_block_stops_and_sent_unwrapped() {
    let out = run(
        false,
        vec![
            start(),
            tool_start(0, "toolu_1", "json_tool_call"),
            json_delta(0, "{\"values\""),
            json_delta(0, ": [1, 2]}"),
            stop(0),
            message_delta("tool_use", 9),
        ],
    )
    .expect("translates");
    assert_eq!(deltas(&out)[1..], [json!({"content": "[1,2]"}), json!({})]);
    assert_eq!(out.last().expect("a chunk")["choices"][0]["finish_reason"], "stop");
}

#[test]
fn a_json_answer_is_held_back_only_while_it_could_open_a_values_wrapper() {
    let out = run(
        false,
        vec![
            start(),
            tool_start(0, "toolu_1", "json_tool_call"),
            json_delta(0, "{\""),
            json_delta(0, "va"),
            json_delta(0, "lid\": true"),
            json_delta(0, "}"),
        ],
    )
    .expect("translates");
    assert_eq!(deltas(&out)[1..], [json!({"content": "{\"valid\": true"}), json!({"content": "}"})]);
}

#[test]
fn a_held_json_answer_is_sent_before_the_finish_when_its_block_never_stops() {
    let out = run(
        false,
        vec![
            start(),
            tool_start(0, "toolu_1", "json_tool_call"),
            json_delta(0, "{\"values\": 7}"),
            message_delta("tool_use", 9),
        ],
    )
    .expect("translates");
    assert_eq!(deltas(&out)[1..], [json!({"content": "7"}), json!({})]);
}
