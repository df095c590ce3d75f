//! The checks behind the Bedrock fuzz targets (`bedrock_stream`, `bedrock_response`).
//!
//! Like `dialects.rs`, this file uses `switchyard_dialects` and `serde_json` only, so
//! `dialects/tests/fuzz_replay.rs` compiles it into the dialects crate's own tests and
//! replays `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` there, without the fuzzer.

use serde_json::Value;
use switchyard_dialects::bedrock::{
    ChunkTranslator, ContentBlock, ConverseResponse, EventStreamDecoder, chat_from_response, classify_error,
    error_message, openai_embeddings_from,
};
use switchyard_dialects::chat::{ChatCompletion, ChatCompletionChunk};
use switchyard_dialects::{StreamItem, TranslateError};

/// The Bedrock fuzz targets, by the name of their corpus folder.
pub const BEDROCK_TARGETS: [&str; 2] = ["bedrock_stream", "bedrock_response"];

/// Runs the Bedrock check of `target` on `data`; `false` when there is no such target.
pub fn check_bedrock(target: &str, data: &[u8]) -> bool {
    match target {
        "bedrock_stream" => check_bedrock_stream(data),
        "bedrock_response" => check_bedrock_response(data),
        _ => return false,
    }
    true
}

/// What a body became: the items until the first failure, and the decoder's or the translator's
/// error that stopped it.
#[derive(Debug, PartialEq)]
struct Run {
    out: Vec<StreamItem>,
    decode_error: Option<TranslateError>,
    translate_error: Option<TranslateError>,
}

fn run<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Run {
    let mut decoder = EventStreamDecoder::new(16 * 1024);
    let mut translator = ChunkTranslator::new("anthropic.claude-3-haiku-20240307-v1:0", 1_700_000_000, true);
    let mut out = Vec::new();
    for chunk in chunks {
        let events = match decoder.push(chunk) {
            Ok(events) => events,
            Err(e) => return Run { out, decode_error: Some(e), translate_error: None },
        };
        for event in events {
            match translator.push(&event) {
                Ok(items) => out.extend(items),
                Err(e) => return Run { out, decode_error: None, translate_error: Some(e) },
            }
        }
    }
    if let Err(e) = decoder.finish() {
        return Run { out, decode_error: Some(e), translate_error: None };
    }
    out.extend(translator.finish());
    Run { out, decode_error: None, translate_error: None }
}

/// The first byte seeds a chunking; the rest is a ConverseStream body (event-stream frames).
///
/// Invariants: the same bytes give the same items and errors whether pushed whole, one byte at a
/// time, or in arbitrary chunks, except that a push the decoder fails drops the items of its
/// earlier frames (then the items are prefixes of the byte-wise ones, and the decoder's error is
/// the same unless the translator stopped the byte-wise run first); `Done` comes at most once, last; a run that ends without error ends with `Done` or
/// an `Error` item; every chunk is a `chat.completion.chunk` that survives a write/read round trip.
pub fn check_bedrock_stream(data: &[u8]) {
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
        let take = (seed % 37) as usize % (rest.len() + 1);
        let (chunk, tail) = rest.split_at(take);
        chunks.push(chunk);
        rest = tail;
    }
    let random = run(chunks.iter().copied());

    let runs = [&whole, &bytewise, &random];
    if runs.iter().all(|r| r.decode_error.is_none()) {
        assert_eq!(whole, bytewise, "the translation depends on chunking");
        assert_eq!(whole, random, "the translation depends on chunking");
    } else {
        // A failing push loses its earlier frames' items: the byte-wise run loses none.
        for r in [&whole, &random] {
            assert!(bytewise.out.starts_with(&r.out), "items before an error depend on chunking");
        }
        if bytewise.translate_error.is_none() {
            assert_eq!(whole.decode_error, bytewise.decode_error, "the decoder's error depends on chunking");
        }
    }

    let done = bytewise.out.iter().filter(|i| matches!(i, StreamItem::Done)).count();
    assert!(done <= 1, "Done twice");
    if done == 1 {
        assert_eq!(bytewise.out.last(), Some(&StreamItem::Done), "something after Done");
    }
    if bytewise.decode_error.is_none() && bytewise.translate_error.is_none() {
        assert!(
            matches!(bytewise.out.last(), Some(StreamItem::Done | StreamItem::Error { .. })),
            "a finished stream ends with neither Done nor an error"
        );
    }
    for item in &bytewise.out {
        if let StreamItem::Chunk(chunk) = item {
            assert_eq!(chunk.object, "chat.completion.chunk");
            let bytes = serde_json::to_vec(chunk).expect("a chunk serializes");
            let back: ChatCompletionChunk = serde_json::from_slice(&bytes).expect("a chunk reads back");
            assert_eq!(&back, chunk, "a chunk changes through JSON");
        }
    }
}

/// Any bytes as a Converse answer, as an error body, and as embeddings answers.
///
/// Invariants: reading never panics; an answer that reads translates into one choice whose tool
/// calls' arguments are JSON text equal to the tool inputs, whose usage adds up, and which
/// survives a write/read round trip; the error and embeddings helpers are total.
pub fn check_bedrock_response(data: &[u8]) {
    for status in [0, 400, 429, 503] {
        let _ = classify_error(status, None, data);
        let _ = classify_error(status, Some("ValidationException"), data);
    }
    let _ = error_message(data);
    if let Ok(Value::Array(answers)) = serde_json::from_slice::<Value>(data) {
        let _ = openai_embeddings_from("amazon.titan-embed-text-v2:0", &answers);
        let _ = openai_embeddings_from("cohere.embed-english-v3", &answers);
    }
    let Ok(resp) = serde_json::from_slice::<ConverseResponse>(data) else { return };
    let inputs: Vec<Value> = resp
        .output
        .message
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolUse(t) if t.name != "json_tool_call" => Some(t.input.clone()),
            _ => None,
        })
        .collect();
    let chat = chat_from_response(resp, "anthropic.claude-3-haiku-20240307-v1:0", 1_700_000_000);
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
