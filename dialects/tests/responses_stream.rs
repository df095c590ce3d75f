//! Chat streams re-framed as Responses events: the documented sequences for text, parallel
//! function calls, reasoning, a length stop and a failure; sequence numbers; the SDK's required
//! fields of each event; and `inspect_event` on documented events.

mod responses_sdk;

use serde_json::{Value, json};
use switchyard_dialects::chat::ChatCompletionChunk;
use switchyard_dialects::responses::{EventEncoder, EventFacts, StreamEvent, inspect_event};

fn chunk(delta: Value, finish_reason: Option<&str>) -> ChatCompletionChunk {
    serde_json::from_value(json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "llama",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }))
    .expect("a chunk")
}

fn usage_chunk(prompt: u64, completion: u64) -> ChatCompletionChunk {
    serde_json::from_value(json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "llama",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }))
    .expect("a chunk")
}

/// Runs `chunks` then `finish` through a new encoder; checks numbering and the SDK's fields.
fn encode(chunks: &[ChatCompletionChunk]) -> (Vec<StreamEvent>, Vec<Value>) {
    let mut encoder = EventEncoder::new("resp_s1", "llama", 1_700_000_000);
    let mut events = Vec::new();
    for c in chunks {
        events.extend(encoder.push(c));
    }
    events.extend(encoder.finish());
    assert!(encoder.finish().is_empty(), "events after the end");
    assert!(encoder.push(&chunk(json!({"content": "late"}), None)).is_empty(), "events after the end");
    let values = check(&events);
    (events, values)
}

fn check(events: &[StreamEvent]) -> Vec<Value> {
    let mut values = Vec::new();
    for (n, event) in events.iter().enumerate() {
        assert_eq!(event.sequence_number(), n as u64, "sequence numbers count every event from 0");
        let value: Value = serde_json::from_str(&event.to_json()).expect("JSON");
        assert_eq!(value["type"], event.name());
        responses_sdk::check_event(&value);
        values.push(value);
    }
    values
}

fn names(events: &[StreamEvent]) -> Vec<&str> {
    events.iter().map(StreamEvent::name).collect()
}

#[test]
fn a_text_stream_follows_the_documented_sequence() {
    let (events, values) = encode(&[
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "Hi"}), None),
        chunk(json!({"content": " there."}), None),
        chunk(json!({}), Some("stop")),
        usage_chunk(9, 3),
    ]);
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert_eq!(values[0]["response"]["status"], "in_progress");
    assert_eq!(values[0]["response"]["output"], json!([]));
    assert_eq!(
        values[2],
        json!({"type": "response.output_item.added", "sequence_number": 2, "output_index": 0,
        "item": {"type": "message", "id": "msg_s1_0", "role": "assistant", "status": "in_progress", "content": []}})
    );
    assert_eq!(
        values[3],
        json!({"type": "response.content_part.added", "sequence_number": 3, "item_id": "msg_s1_0",
        "output_index": 0, "content_index": 0,
        "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}})
    );
    assert_eq!(
        values[4],
        json!({"type": "response.output_text.delta", "sequence_number": 4, "item_id": "msg_s1_0",
        "output_index": 0, "content_index": 0, "delta": "Hi", "logprobs": []})
    );
    assert_eq!(
        values[6],
        json!({"type": "response.output_text.done", "sequence_number": 6, "item_id": "msg_s1_0",
        "output_index": 0, "content_index": 0, "text": "Hi there.", "logprobs": []})
    );
    assert_eq!(values[8]["item"]["status"], "completed");
    let done = &values[9]["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"][0]["content"][0]["text"], "Hi there.");
    assert_eq!(done["usage"]["total_tokens"], 12);
}

/// OpenAI's chat stream of two parallel calls after some text: call fragments by index, the
/// finish reason, then the usage chunk.
#[test]
fn text_and_two_parallel_function_calls() {
    let call = |index: u32, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut call = json!({"index": index, "function": {"arguments": args}});
        if let (Some(id), Some(name)) = (id, name) {
            call["id"] = json!(id);
            call["type"] = json!("function");
            call["function"]["name"] = json!(name);
        }
        chunk(json!({"tool_calls": [call]}), None)
    };
    let (events, values) = encode(&[
        chunk(json!({"role": "assistant", "content": "Checking."}), None),
        call(0, Some("call_a"), Some("get_weather"), ""),
        call(0, None, None, "{\"city\":"),
        call(0, None, None, "\"Paris\"}"),
        call(1, Some("call_b"), Some("get_weather"), ""),
        call(1, None, None, "{\"city\":\"Rome\"}"),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(30, 40),
    ]);
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert_eq!(
        values[8],
        json!({"type": "response.output_item.added", "sequence_number": 8, "output_index": 1,
        "item": {"type": "function_call", "id": "fc_s1_1", "call_id": "call_a", "name": "get_weather",
                 "arguments": "", "status": "in_progress"}})
    );
    assert_eq!(
        values[9],
        json!({"type": "response.function_call_arguments.delta", "sequence_number": 9,
        "item_id": "fc_s1_1", "output_index": 1, "delta": "{\"city\":"})
    );
    assert_eq!(
        values[13],
        json!({"type": "response.function_call_arguments.done", "sequence_number": 13,
        "item_id": "fc_s1_1", "output_index": 1, "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"})
    );
    assert_eq!(
        values[16]["item"],
        json!({"type": "function_call", "id": "fc_s1_2", "call_id": "call_b",
        "name": "get_weather", "arguments": "{\"city\":\"Rome\"}", "status": "completed"})
    );
    let output = &values[17]["response"]["output"];
    assert_eq!(output.as_array().map(Vec::len), Some(3));
    assert_eq!(output[1]["call_id"], "call_a");
    assert_eq!(output[2]["arguments"], "{\"city\":\"Rome\"}");
    assert_eq!(values[17]["response"]["usage"]["input_tokens"], 30);
}

#[test]
fn reasoning_streams_as_a_summary_before_the_message() {
    let (events, values) = encode(&[
        chunk(json!({"role": "assistant", "reasoning_content": "Think"}), None),
        chunk(json!({"reasoning_content": "ing."}), None),
        chunk(json!({"content": "Answer."}), None),
        chunk(json!({}), Some("stop")),
    ]);
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert_eq!(values[2]["item"], json!({"type": "reasoning", "id": "rs_s1_0", "summary": []}));
    assert_eq!(
        values[4],
        json!({"type": "response.reasoning_summary_text.delta", "sequence_number": 4,
        "item_id": "rs_s1_0", "output_index": 0, "summary_index": 0, "delta": "Think"})
    );
    assert_eq!(values[6]["text"], "Thinking.");
    assert_eq!(values[8]["item"]["summary"], json!([{"type": "summary_text", "text": "Thinking."}]));
    assert_eq!(values[9]["output_index"], 1);
    assert_eq!(values[15]["response"]["usage"], Value::Null);
}

#[test]
fn a_length_stop_ends_with_response_incomplete() {
    let (events, values) = encode(&[chunk(json!({"content": "Once upon"}), None), chunk(json!({}), Some("length"))]);
    assert_eq!(names(&events).last(), Some(&"response.incomplete"));
    let response = &values[values.len() - 1]["response"];
    assert_eq!(response["status"], "incomplete");
    assert_eq!(response["incomplete_details"], json!({"reason": "max_output_tokens"}));
    assert_eq!(response["output"][0]["status"], "incomplete");
    let done = values.iter().find(|v| v["type"] == "response.output_item.done").expect("a done item");
    assert_eq!(done["item"]["status"], "incomplete");
}

#[test]
fn a_failure_mid_stream_ends_with_response_failed() {
    let mut encoder = EventEncoder::new("resp_f", "llama", 1);
    let mut events = encoder.push(&chunk(json!({"content": "Par"}), None));
    events.extend(encoder.failed("server_error", "the upstream closed the stream"));
    assert!(encoder.finish().is_empty());
    assert!(encoder.failed("server_error", "again").is_empty());
    let values = check(&events);
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.failed",
        ]
    );
    let response = &values[5]["response"];
    assert_eq!(response["status"], "failed");
    assert_eq!(response["error"], json!({"code": "server_error", "message": "the upstream closed the stream"}));
    assert_eq!(response["output"][0]["status"], "incomplete");
    assert_eq!(response["output"][0]["content"][0]["text"], "Par");
}

#[test]
fn a_failure_before_any_chunk_still_starts_the_stream() {
    let mut encoder = EventEncoder::new("resp_f", "llama", 1);
    let events = encoder.failed("rate_limit_exceeded", "slow down");
    check(&events);
    assert_eq!(names(&events), ["response.created", "response.in_progress", "response.failed"]);
}

#[test]
fn an_empty_stream_completes_with_one_empty_message() {
    let (events, values) = encode(&[chunk(json!({"role": "assistant"}), None), chunk(json!({}), Some("stop"))]);
    assert_eq!(names(&events).len(), 8);
    assert_eq!(values[7]["response"]["output"][0]["content"][0]["text"], "");
}

#[test]
fn the_encoder_response_tracks_the_output_so_far() {
    let mut encoder = EventEncoder::new("resp_t", "llama", 1);
    encoder.push(&chunk(json!({"content": "Hel"}), None));
    encoder.push(&chunk(json!({"content": "lo"}), None));
    let so_far = encoder.response();
    assert_eq!(so_far.output_text(), "Hello");
    assert_eq!(so_far.status.as_str(), "in_progress");
}

#[test]
fn inspect_event_reads_documented_events() {
    let created = inspect_event(
        r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","created_at":1741290958,"status":"in_progress","error":null,"incomplete_details":null,"instructions":"You are a helpful assistant.","max_output_tokens":null,"model":"gpt-4.1-2025-04-14","output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":null,"user":null,"metadata":{}}}"#,
    );
    assert_eq!(created.response_id.as_deref(), Some("resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654"));
    assert!(!created.content && !created.done);

    let added_message = inspect_event(
        r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","type":"message","status":"in_progress","role":"assistant","content":[]},"sequence_number":2}"#,
    );
    assert_eq!(added_message, EventFacts::default());
    let delta = inspect_event(
        r#"{"type":"response.output_text.delta","item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"delta":"Hi","sequence_number":4}"#,
    );
    assert!(delta.content);
    let empty = inspect_event(
        r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"","sequence_number":4}"#,
    );
    assert!(!empty.content);
    let call = inspect_event(
        r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"","status":"in_progress"},"sequence_number":5}"#,
    );
    assert!(call.content);
    let args = inspect_event(
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"","sequence_number":6}"#,
    );
    assert!(args.content);
    let reasoning = inspect_event(
        r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"**Thinking**","sequence_number":3}"#,
    );
    assert!(reasoning.content);

    let completed = inspect_event(
        r#"{"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","object":"response","created_at":1741290958,"status":"completed","output":[],"usage":{"input_tokens":37,"input_tokens_details":{"cached_tokens":0},"output_tokens":11,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":48}}}"#,
    );
    assert!(completed.done);
    assert_eq!(completed.usage, Some((37, 11)));
    let incomplete = inspect_event(
        r#"{"type":"response.incomplete","sequence_number":9,"response":{"id":"resp_1","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":5,"output_tokens":16,"total_tokens":21}}}"#,
    );
    assert!(incomplete.done);
    assert_eq!(incomplete.usage, Some((5, 16)));

    let failed = inspect_event(
        r#"{"type":"response.failed","sequence_number":3,"response":{"id":"resp_1","object":"response","status":"failed","error":{"code":"server_error","message":"The model failed to generate a response."},"usage":null}}"#,
    );
    assert!(failed.done);
    assert_eq!(failed.error, Some(("server_error".to_owned(), "The model failed to generate a response.".to_owned())));
    let error = inspect_event(
        r#"{"type":"error","code":"ERR_SOMETHING","message":"Something went wrong","param":null,"sequence_number":1}"#,
    );
    assert_eq!(error.error, Some(("ERR_SOMETHING".to_owned(), "Something went wrong".to_owned())));
    assert!(!error.done);

    assert_eq!(inspect_event("not json"), EventFacts::default());
    assert_eq!(inspect_event("[DONE]"), EventFacts::default());
}

/// What the encoder writes reads back through `inspect_event` as what it means.
#[test]
fn inspect_event_agrees_with_the_encoder() {
    let (events, _) = encode(&[
        chunk(json!({"content": "Hi"}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(3, 4),
    ]);
    let facts: Vec<EventFacts> = events.iter().map(|e| inspect_event(&e.to_json())).collect();
    assert_eq!(facts[0].response_id.as_deref(), Some("resp_s1"));
    let first_content = facts.iter().position(|f| f.content);
    assert_eq!(first_content.map(|i| events[i].name()), Some("response.output_text.delta"));
    assert!(facts.last().is_some_and(|f| f.done && f.usage == Some((3, 4))));
    assert_eq!(facts.iter().filter(|f| f.done).count(), 1);
}
