//! ConverseStream bodies: real event-stream frames (built with `aws-smithy-eventstream`'s
//! encoder, CRCs included) through `EventStreamDecoder` and `ChunkTranslator`.

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use proptest::prelude::*;
use serde_json::{Value, json};
use switchyard_dialects::bedrock::{ChunkTranslator, Event, EventStreamDecoder};
use switchyard_dialects::chat::ChatCompletionChunk;
use switchyard_dialects::{ErrorClass, StreamItem};

fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut message = Message::new(payload.to_vec());
    for (name, value) in headers {
        message = message.add_header(Header::new(name.to_string(), HeaderValue::String(value.to_string().into())));
    }
    let mut out = Vec::new();
    write_message_to(&message, &mut out).expect("a frame");
    out
}

fn event(kind: &str, payload: Value) -> Vec<u8> {
    frame(
        &[(":event-type", kind), (":content-type", "application/json"), (":message-type", "event")],
        payload.to_string().as_bytes(),
    )
}

fn exception(kind: &str, message: &str) -> Vec<u8> {
    frame(
        &[(":exception-type", kind), (":content-type", "application/json"), (":message-type", "exception")],
        json!({"message": message}).to_string().as_bytes(),
    )
}

/// Text, then a tool call whose input arrives in two fragments, then the stop and the usage
/// (Bedrock adds a `p` padding field to every event).
fn text_and_tool_stream() -> Vec<u8> {
    [
        event("messageStart", json!({"role": "assistant", "p": "abcd"})),
        event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "Let me check"}, "p": "ab"})),
        event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": " the radio."}})),
        event("contentBlockStop", json!({"contentBlockIndex": 0})),
        event(
            "contentBlockStart",
            json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "top_song"}}}),
        ),
        event("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"sign\": "}}})),
        event("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "\"WZPZ\"}"}}})),
        event("contentBlockStop", json!({"contentBlockIndex": 1})),
        event("messageStop", json!({"stopReason": "tool_use"})),
        event(
            "metadata",
            json!({"usage": {"inputTokens": 20, "outputTokens": 9, "totalTokens": 40, "cacheReadInputTokens": 11},
                "metrics": {"latencyMs": 512}}),
        ),
    ]
    .concat()
}

fn decode<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<Event> {
    let mut decoder = EventStreamDecoder::new(1 << 16);
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(decoder.push(chunk).expect("decodes"));
    }
    decoder.finish().expect("ends on a frame boundary");
    events
}

fn translate(events: &[Event], include_usage: bool) -> Vec<StreamItem> {
    let mut translator = ChunkTranslator::new("anthropic.claude-3-haiku-20240307-v1:0", 1_700_000_000, include_usage);
    let mut out = Vec::new();
    for event in events {
        out.extend(translator.push(event).expect("translates"));
    }
    out.extend(translator.finish());
    out
}

fn chunks(items: &[StreamItem]) -> Vec<&ChatCompletionChunk> {
    items.iter().filter_map(|i| if let StreamItem::Chunk(c) = i { Some(c) } else { None }).collect()
}

#[test]
fn frames_decode_the_same_split_at_every_byte_boundary() {
    let body = text_and_tool_stream();
    let whole = decode([&body[..]]);
    assert_eq!(whole.len(), 10);
    assert_eq!(whole[0].event_type, "messageStart");
    assert_eq!(whole[0].message_type, "event");
    for k in 0..=body.len() {
        assert_eq!(decode([&body[..k], &body[k..]]), whole, "split at {k}");
    }
    assert_eq!(decode(body.chunks(1)), whole);
}

#[test]
fn text_tool_call_and_usage_become_hub_chunks_then_done() {
    let out = translate(&decode([&text_and_tool_stream()[..]]), true);
    let chunks = chunks(&out);
    assert_eq!(chunks[0].choices[0].delta.role.as_deref(), Some("assistant"));
    let text: String = chunks.iter().filter_map(|c| c.choices.first()?.delta.content.clone()).collect();
    assert_eq!(text, "Let me check the radio.");
    let calls: Vec<_> = chunks.iter().filter_map(|c| c.choices.first()?.delta.tool_calls.clone()).flatten().collect();
    assert_eq!(calls[0].id.as_deref(), Some("tooluse_1"));
    assert_eq!(calls[0].function.as_ref().and_then(|f| f.name.as_deref()), Some("top_song"));
    let arguments: String = calls.iter().filter_map(|c| c.function.as_ref()?.arguments.clone()).collect();
    assert_eq!(serde_json::from_str::<Value>(&arguments).expect("JSON"), json!({"sign": "WZPZ"}));
    assert!(calls.iter().all(|c| c.index == 0));
    let finish: Vec<_> = chunks.iter().filter_map(|c| c.choices.first()?.finish_reason.clone()).collect();
    assert_eq!(finish, ["tool_calls"]);
    let usage = chunks.last().and_then(|c| c.usage.clone()).expect("a usage chunk");
    assert!(chunks.last().is_some_and(|c| c.choices.is_empty()));
    assert_eq!((usage.prompt_tokens, usage.completion_tokens, usage.total_tokens), (31, 9, 40));
    assert_eq!(usage.prompt_tokens_details.and_then(|d| d.cached_tokens), Some(11));
    assert_eq!(out.last(), Some(&StreamItem::Done));
    assert_eq!(out.iter().filter(|i| **i == StreamItem::Done).count(), 1);
}

#[test]
fn without_include_usage_the_stream_ends_with_the_finish_chunk_and_done() {
    let out = translate(&decode([&text_and_tool_stream()[..]]), false);
    assert!(chunks(&out).iter().all(|c| c.usage.is_none()));
    assert_eq!(out.last(), Some(&StreamItem::Done));
}

#[test]
fn an_exception_mid_stream_is_one_classified_error_and_ends_the_answer() {
    let body = [
        event("messageStart", json!({"role": "assistant"})),
        event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "Hel"}})),
        exception("throttlingException", "Too many requests, please wait before trying again."),
        event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "lo"}})),
    ]
    .concat();
    let events = decode([&body[..]]);
    assert_eq!(events[2].message_type, "exception");
    assert_eq!(events[2].event_type, "throttlingException");
    let out = translate(&events, true);
    assert_eq!(out.len(), 3);
    assert_eq!(
        out[2],
        StreamItem::Error {
            class: ErrorClass::RateLimited,
            message: "Too many requests, please wait before trying again.".to_owned(),
            retry_after: None,
        }
    );
}

#[test]
fn stream_exceptions_are_classified_by_type() {
    for (kind, message, class) in [
        ("modelStreamErrorException", "boom", ErrorClass::ServerError),
        ("internalServerException", "oops", ErrorClass::ServerError),
        ("serviceUnavailableException", "busy", ErrorClass::Overloaded),
        ("validationException", "Input is too long for requested model.", ErrorClass::ContextWindowExceeded),
        ("validationException", "bad field", ErrorClass::BadRequest),
        ("somethingNewException", "?", ErrorClass::ServerError),
    ] {
        let out = translate(&decode([&exception(kind, message)[..]]), false);
        assert!(matches!(&out[0], StreamItem::Error { class: c, .. } if *c == class), "{kind}: {out:?}");
    }
}

#[test]
fn an_unmodeled_error_message_carries_its_code_and_text() {
    let body = frame(
        &[(":message-type", "error"), (":error-code", "InternalFailure"), (":error-message", "internal failure")],
        b"",
    );
    let events = decode([&body[..]]);
    assert_eq!(events[0].message_type, "error");
    assert_eq!(events[0].event_type, "InternalFailure");
    let out = translate(&events, false);
    assert_eq!(
        out,
        [StreamItem::Error {
            class: ErrorClass::ServerError,
            message: "internal failure".to_owned(),
            retry_after: None
        }]
    );
}

#[test]
fn reasoning_deltas_become_reasoning_content_and_signed_thinking_blocks() {
    let body = [
        event("messageStart", json!({"role": "assistant"})),
        event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Think"}}})),
        event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "ing."}}})),
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig=="}}}),
        ),
        event("contentBlockStop", json!({"contentBlockIndex": 0})),
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"reasoningContent": {"redactedContent": "ZW5j"}}}),
        ),
        event("contentBlockDelta", json!({"contentBlockIndex": 2, "delta": {"text": "42"}})),
        event("messageStop", json!({"stopReason": "end_turn"})),
        event(
            "metadata",
            json!({"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}, "metrics": {"latencyMs": 1}}),
        ),
    ]
    .concat();
    let out = translate(&decode([&body[..]]), false);
    let chunks = chunks(&out);
    let reasoning: String = chunks.iter().filter_map(|c| c.choices.first()?.delta.reasoning_content.clone()).collect();
    assert_eq!(reasoning, "Thinking.");
    assert_eq!(
        chunks[3].choices[0].delta.thinking_blocks,
        Some(vec![json!({"type": "thinking", "thinking": "Thinking.", "signature": "sig=="})])
    );
    assert_eq!(
        chunks[4].choices[0].delta.thinking_blocks,
        Some(vec![json!({"type": "redacted_thinking", "data": "ZW5j"})])
    );
    assert_eq!(chunks[5].choices[0].delta.content.as_deref(), Some("42"));
    assert_eq!(chunks[6].choices[0].finish_reason.as_deref(), Some("stop"));
}

#[test]
fn the_json_tool_of_response_format_streams_as_content() {
    let body = [
        event("messageStart", json!({"role": "assistant"})),
        event(
            "contentBlockStart",
            json!({"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t", "name": "json_tool_call"}}}),
        ),
        event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{\"x\":"}}})),
        event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": " 1}"}}})),
        event("messageStop", json!({"stopReason": "tool_use"})),
        event(
            "metadata",
            json!({"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}, "metrics": {"latencyMs": 1}}),
        ),
    ]
    .concat();
    let out = translate(&decode([&body[..]]), false);
    let chunks = chunks(&out);
    let text: String = chunks.iter().filter_map(|c| c.choices.first()?.delta.content.clone()).collect();
    assert_eq!(text, "{\"x\": 1}");
    assert!(chunks.iter().all(|c| c.choices.first().is_none_or(|c| c.delta.tool_calls.is_none())));
    assert_eq!(chunks.last().and_then(|c| c.choices[0].finish_reason.as_deref()), Some("stop"));
}

#[test]
fn a_body_ending_before_message_stop_is_a_server_error_and_after_it_a_done() {
    let cut = [event("messageStart", json!({"role": "assistant"}))].concat();
    let out = translate(&decode([&cut[..]]), true);
    assert!(matches!(out.last(), Some(StreamItem::Error { class: ErrorClass::ServerError, .. })));

    let no_metadata =
        [event("messageStart", json!({"role": "assistant"})), event("messageStop", json!({"stopReason": "end_turn"}))]
            .concat();
    let out = translate(&decode([&no_metadata[..]]), true);
    assert_eq!(out.last(), Some(&StreamItem::Done));
    assert_eq!(chunks(&out).last().and_then(|c| c.usage.as_ref()).map(|u| u.total_tokens), Some(0));
}

#[test]
fn metadata_before_message_stop_still_ends_after_the_finish() {
    let body = [
        event("messageStart", json!({"role": "assistant"})),
        event(
            "metadata",
            json!({"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}, "metrics": {"latencyMs": 1}}),
        ),
        event("messageStop", json!({"stopReason": "max_tokens"})),
    ]
    .concat();
    let out = translate(&decode([&body[..]]), true);
    assert_eq!(out.len(), 4);
    assert_eq!(chunks(&out)[1].choices[0].finish_reason.as_deref(), Some("length"));
    assert_eq!(out.last(), Some(&StreamItem::Done));
}

#[test]
fn a_corrupt_frame_stops_the_stream_for_good() {
    let mut body = event("messageStart", json!({"role": "assistant"}));
    let last = body.len() - 1;
    body[last] ^= 0xff;
    let mut decoder = EventStreamDecoder::new(1 << 16);
    let err = decoder.push(&body).expect_err("checksum mismatch");
    assert_eq!(err.field, "frames[0]");
    assert_eq!(decoder.push(&event("messageStop", json!({"stopReason": "end_turn"}))), Err(err.clone()));
    assert_eq!(decoder.finish(), Err(err));
}

#[test]
fn a_frame_larger_than_the_limit_is_refused_from_its_prelude() {
    let body = event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "x".repeat(200)}}));
    let mut decoder = EventStreamDecoder::new(64);
    let err = decoder.push(&body[..4]).expect_err("too large");
    assert!(err.reason.contains("larger than the limit"), "{err}");
}

#[test]
fn a_body_ending_inside_a_frame_is_an_error() {
    let body = event("messageStart", json!({"role": "assistant"}));
    let mut decoder = EventStreamDecoder::new(1 << 16);
    assert!(decoder.push(&body[..body.len() - 1]).expect("incomplete").is_empty());
    assert!(decoder.finish().is_err());
}

#[test]
fn a_malformed_payload_of_a_known_event_is_refused_naming_it() {
    let mut translator = ChunkTranslator::new("m", 0, false);
    let err = translator.push(&Event::new("contentBlockDelta", "{not json")).expect_err("refused");
    assert_eq!(err.field, "events[0].payload");
    assert!(translator.push(&Event::new("somethingNew", "{}")).expect("ignored").is_empty());
}

/// One generated answer: text blocks and tool calls (name, input fragments), in order.
#[derive(Clone, Debug)]
enum Block {
    Text(Vec<String>),
    Tool(String, Vec<String>),
}

fn block() -> impl Strategy<Value = Block> {
    prop_oneof![
        prop::collection::vec("[a-zA-Z0-9 .,!é\u{1F600}]{1,12}", 1..4).prop_map(Block::Text),
        ("[a-z_]{1,10}", prop::collection::vec("[a-z0-9\":{} ]{0,8}", 1..4)).prop_map(|(n, f)| Block::Tool(n, f)),
    ]
}

proptest! {
    /// Every text fragment, tool call (id, name, whole input) and the usage arrive, in order,
    /// whatever the chunking of the body.
    #[test]
    fn every_text_tool_call_and_usage_arrives(
        blocks in prop::collection::vec(block(), 0..6),
        splits in prop::collection::vec(0usize..4096, 0..8),
        input_tokens in 0u64..100_000,
        output_tokens in 0u64..100_000,
    ) {
        let mut body = event("messageStart", json!({"role": "assistant"}));
        let (mut text, mut calls) = (String::new(), Vec::new());
        for (i, block) in blocks.iter().enumerate() {
            match block {
                Block::Text(parts) => {
                    for part in parts {
                        body.extend(event("contentBlockDelta", json!({"contentBlockIndex": i, "delta": {"text": part}})));
                        text.push_str(part);
                    }
                }
                Block::Tool(name, fragments) => {
                    let id = format!("tooluse_{i}");
                    body.extend(event("contentBlockStart",
                        json!({"contentBlockIndex": i, "start": {"toolUse": {"toolUseId": id, "name": name}}})));
                    for fragment in fragments {
                        body.extend(event("contentBlockDelta",
                            json!({"contentBlockIndex": i, "delta": {"toolUse": {"input": fragment}}})));
                    }
                    calls.push((id, name.clone(), fragments.concat()));
                }
            }
            body.extend(event("contentBlockStop", json!({"contentBlockIndex": i})));
        }
        body.extend(event("messageStop", json!({"stopReason": if calls.is_empty() { "end_turn" } else { "tool_use" }})));
        body.extend(event("metadata", json!({"usage": {"inputTokens": input_tokens, "outputTokens": output_tokens,
            "totalTokens": input_tokens + output_tokens}, "metrics": {"latencyMs": 1}})));

        let mut cuts: Vec<usize> = splits.into_iter().map(|s| s % (body.len() + 1)).collect();
        cuts.sort_unstable();
        let mut pieces = Vec::new();
        let mut from = 0;
        for cut in cuts.into_iter().chain([body.len()]) {
            pieces.push(&body[from..cut]);
            from = cut;
        }
        let out = translate(&decode(pieces), true);
        let chunks = chunks(&out);

        let got_text: String = chunks.iter().filter_map(|c| c.choices.first()?.delta.content.clone()).collect();
        prop_assert_eq!(got_text, text);
        let mut got_calls: Vec<(String, String, String)> = Vec::new();
        for delta in chunks.iter().filter_map(|c| c.choices.first()?.delta.tool_calls.clone()).flatten() {
            let position = delta.index as usize;
            let function = delta.function.unwrap_or_default();
            if position == got_calls.len() {
                got_calls.push((delta.id.unwrap_or_default(), function.name.unwrap_or_default(), String::new()));
            }
            got_calls[position].2.push_str(&function.arguments.unwrap_or_default());
        }
        prop_assert_eq!(got_calls, calls.clone());
        let usage = chunks.last().and_then(|c| c.usage.clone()).expect("a usage chunk");
        prop_assert_eq!((usage.prompt_tokens, usage.completion_tokens), (input_tokens, output_tokens));
        let finish: Vec<_> = chunks.iter().filter_map(|c| c.choices.first()?.finish_reason.clone()).collect();
        prop_assert_eq!(finish, [if calls.is_empty() { "stop" } else { "tool_calls" }]);
        prop_assert_eq!(out.last(), Some(&StreamItem::Done));
    }
}
