//! The checks behind the fuzz targets of `switchyard-dialects` (`anthropic_stream`,
//! `anthropic_response`, `anthropic_request`, `responses_request`).
//!
//! Unlike the rest of this crate, this file uses `switchyard_dialects` and `serde_json` only, so
//! `dialects/tests/fuzz_replay.rs` compiles it into the dialects crate's own tests and replays
//! `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` there, without the fuzzer.

use serde_json::Value;
use switchyard_dialects::TranslateError;
use switchyard_dialects::anthropic::{
    self, ChunkTranslator, ContentBlock, MessageContent, MessagesRequest, MessagesResponse, Translated,
    chat_from_request, chat_from_response, classify_error, error_message,
};
use switchyard_dialects::chat::{ChatCompletion, ChatCompletionChunk, ChatRequest, Role};
use switchyard_dialects::responses::{self, ResponsesRequest};
use switchyard_dialects::sse::SseDecoder;

/// The dialect fuzz targets, by the name of their corpus folder.
pub const DIALECT_TARGETS: [&str; 4] =
    ["anthropic_stream", "anthropic_response", "anthropic_request", "responses_request"];

/// Runs the dialect check of `target` on `data`; `false` when there is no such target.
pub fn check_dialect(target: &str, data: &[u8]) -> bool {
    match target {
        "anthropic_stream" => check_anthropic_stream(data),
        "anthropic_response" => check_anthropic_response(data),
        "anthropic_request" => check_anthropic_request(data),
        "responses_request" => check_responses_request(data),
        _ => return false,
    }
    true
}

/// What a stream became: the translations until the first failure, and whether the SSE decoder
/// or the translator stopped it.
#[derive(Debug, PartialEq)]
struct Run {
    out: Vec<Translated>,
    sse_failed: bool,
    translate_error: Option<TranslateError>,
}

fn run<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Run {
    let mut sse = SseDecoder::new(64 * 1024);
    let mut translator = ChunkTranslator::new(1_700_000_000, true);
    let mut out = Vec::new();
    for chunk in chunks {
        let events = match sse.push(chunk) {
            Ok(events) => events,
            Err(_) => return Run { out, sse_failed: true, translate_error: None },
        };
        for event in events {
            match translator.push(&event) {
                Ok(translated) => out.extend(translated),
                Err(e) => return Run { out, sse_failed: false, translate_error: Some(e) },
            }
        }
    }
    Run { out, sse_failed: false, translate_error: None }
}

/// The first byte seeds a chunking; the rest is an Anthropic stream.
///
/// Invariants: the stream gives the same chunks, errors and end whether pushed whole, one byte
/// at a time, or in arbitrary chunks (when the SSE decoder's size limit stops it, the chunks
/// before are a prefix of the byte-wise ones); `Done` comes last, once; every chunk is a
/// `chat.completion.chunk` that survives a write/read round trip.
pub fn check_anthropic_stream(data: &[u8]) {
    let Some((&control, stream)) = data.split_first() else { return };
    let whole = run([stream]);
    let bytewise = run(stream.chunks(1));
    let mut seed = u64::from(control) ^ (stream.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut chunks = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let take = (seed % 23) as usize % (rest.len() + 1);
        let (chunk, tail) = rest.split_at(take);
        chunks.push(chunk);
        rest = tail;
    }
    let random = run(chunks.iter().copied());

    if !(whole.sse_failed || bytewise.sse_failed || random.sse_failed) {
        assert_eq!(whole, bytewise, "the translation depends on chunking");
        assert_eq!(whole, random, "the translation depends on chunking");
    } else {
        let longest = [&whole, &bytewise, &random].into_iter().max_by_key(|r| r.out.len()).map(|r| &r.out);
        for r in [&whole, &bytewise, &random] {
            assert!(longest.is_some_and(|l| l.starts_with(&r.out)), "chunks before an error depend on chunking");
        }
    }

    let done = whole.out.iter().filter(|t| matches!(t, Translated::Done)).count();
    assert!(done <= 1, "Done twice");
    if done == 1 {
        assert_eq!(whole.out.last(), Some(&Translated::Done), "something after Done");
    }
    for t in &whole.out {
        if let Translated::Chunk(chunk) = t {
            assert_eq!(chunk.object, "chat.completion.chunk");
            let bytes = serde_json::to_vec(chunk).expect("a chunk serializes");
            let back: ChatCompletionChunk = serde_json::from_slice(&bytes).expect("a chunk reads back");
            assert_eq!(&back, chunk, "a chunk changes through JSON");
        }
    }
}

/// Any bytes as an Anthropic answer, and as an error body.
///
/// Invariants: reading never panics; an answer that reads translates into one choice whose tool
/// calls' arguments are JSON text equal to the tool inputs, whose usage adds up, and which
/// survives a write/read round trip; the error helpers are total.
pub fn check_anthropic_response(data: &[u8]) {
    let _ = classify_error(0, data);
    let _ = classify_error(400, data);
    let _ = error_message(data);
    let Ok(resp) = serde_json::from_slice::<MessagesResponse>(data) else { return };
    let inputs: Vec<Value> = resp
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse(t) if t.name != "json_tool_call" => Some(t.input.clone()),
            _ => None,
        })
        .collect();
    let chat = chat_from_response(resp, 1_700_000_000);
    assert_eq!(chat.choices.len(), 1);
    let args: Vec<Value> = chat.choices[0]
        .message
        .tool_calls
        .iter()
        .flatten()
        .map(|c| serde_json::from_str(&c.function.arguments).expect("arguments are JSON text"))
        .collect();
    assert_eq!(args, inputs, "tool inputs changed");
    let usage = chat.usage.as_ref().expect("usage is always set");
    assert_eq!(usage.total_tokens, usage.prompt_tokens.saturating_add(usage.completion_tokens));
    let bytes = serde_json::to_vec(&chat).expect("a completion serializes");
    let back: ChatCompletion = serde_json::from_slice(&bytes).expect("a completion reads back");
    assert_eq!(back, chat, "a completion changes through JSON");
}

/// Any bytes as an Anthropic Messages request (the `/v1/messages` front door's ingress), through
/// `chat_from_request`.
///
/// Invariants: reading and translating never panic; a refusal names a field; a translated
/// request keeps the model and `max_tokens`, has a system message at most first and one `tool`
/// message per `tool_result` block; when every tool result answers a call of the assistant turn
/// just before it, every `tool` message follows the assistant's tool calls or another `tool`
/// message (OpenAI's rule); the hub request serializes to JSON that reads back the same.
pub fn check_anthropic_request(data: &[u8]) {
    let Ok(req) = serde_json::from_slice::<MessagesRequest>(data) else { return };
    let (model, max_tokens) = (req.model.clone(), req.max_tokens);
    let (results, answers_calls) = tool_results(&req);
    let chat = match chat_from_request(req) {
        Ok(chat) => chat,
        Err(e) => {
            assert!(!e.field.is_empty(), "a refusal without a field: {e}");
            return;
        }
    };
    assert_eq!(chat.model, model);
    assert_eq!(chat.max_tokens, Some(max_tokens));
    assert_eq!(chat.messages.iter().filter(|m| m.role == Role::Tool).count(), results, "tool messages");
    for (i, message) in chat.messages.iter().enumerate() {
        match message.role {
            Role::System => assert_eq!(i, 0, "a system message after the first"),
            Role::Tool => {
                assert!(message.tool_call_id.is_some(), "tool message {i} without tool_call_id");
                if answers_calls {
                    let before = i.checked_sub(1).map(|j| &chat.messages[j]);
                    assert!(
                        before.is_some_and(
                            |m| m.role == Role::Tool || (m.role == Role::Assistant && m.tool_calls.is_some())
                        ),
                        "tool message {i} does not follow tool calls"
                    );
                }
            }
            _ => {}
        }
    }
    let bytes = serde_json::to_vec(&chat).expect("a hub request serializes");
    let back: ChatRequest = serde_json::from_slice(&bytes).expect("a hub request reads back");
    assert_eq!(back, chat, "a hub request changes through JSON");
}

/// How many `tool_result` blocks the user turns have, and whether each answers a `tool_use` of
/// the assistant turn just before.
fn tool_results(req: &MessagesRequest) -> (usize, bool) {
    let mut count = 0;
    let mut answers = true;
    let mut calls: Vec<&str> = Vec::new();
    for message in &req.messages {
        let blocks: &[ContentBlock] = match &message.content {
            MessageContent::Blocks(blocks) => blocks,
            _ => &[],
        };
        if message.role == anthropic::Role::Assistant {
            calls = blocks
                .iter()
                .filter_map(|b| if let ContentBlock::ToolUse(t) = b { Some(t.id.as_str()) } else { None })
                .collect();
            continue;
        }
        for block in blocks {
            if let ContentBlock::ToolResult(r) = block {
                count += 1;
                answers &= calls.contains(&r.tool_use_id.as_str());
            }
        }
        calls.clear();
    }
    (count, answers)
}

/// Any bytes as a Responses request, through `responses::chat_from_request`.
///
/// Invariants: reading and translating never panic; a request that reads survives a write/read
/// round trip; a refusal names a field; a translation keeps the model, has at least one message,
/// carries every function call's `call_id` in order, and survives a write/read round trip.
pub fn check_responses_request(data: &[u8]) {
    use switchyard_dialects::chat::ChatRequest;

    let Ok(req) = serde_json::from_slice::<ResponsesRequest>(data) else { return };
    let written = serde_json::to_value(&req).expect("a parsed ResponsesRequest serializes");
    let reread: ResponsesRequest = serde_json::from_value(written.clone()).expect("a written request reads back");
    assert_eq!(serde_json::to_value(&reread).expect("serializes"), written, "ResponsesRequest round trip");

    let model = req.model.clone();
    let call_ids: Vec<String> = match &req.input {
        Some(responses::Input::Items(items)) => items
            .iter()
            .filter_map(|item| match item {
                responses::InputItem::FunctionCall(call) => Some(call.call_id.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let chat = match responses::chat_from_request(req) {
        Ok(chat) => chat,
        Err(e) => {
            assert!(!e.field.is_empty(), "a refusal names no field: {e}");
            return;
        }
    };
    assert_eq!(chat.model, model, "the model changed");
    assert!(!chat.messages.is_empty(), "a translation without messages");
    let ids: Vec<String> =
        chat.messages.iter().flat_map(|m| m.tool_calls.iter().flatten()).map(|c| c.id.clone()).collect();
    assert_eq!(ids, call_ids, "function calls lost or reordered");
    let bytes = serde_json::to_vec(&chat).expect("a chat request serializes");
    let back: ChatRequest = serde_json::from_slice(&bytes).expect("a translated chat request reads back");
    assert_eq!(back, chat, "a translated chat request changes through JSON");
}
