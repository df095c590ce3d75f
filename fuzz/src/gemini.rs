//! The checks behind the Gemini fuzz targets (`gemini_stream`, `gemini_response`).
//!
//! Like `dialects.rs`, this file uses `switchyard_dialects` and `serde_json` only, so
//! `dialects/tests/fuzz_replay.rs` compiles it into the dialects crate's own tests and
//! replays `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` there, without the fuzzer.

use serde_json::Value;
use switchyard_dialects::chat::{ChatCompletion, ChatCompletionChunk};
use switchyard_dialects::gemini::{
    ChunkTranslator, GenerateContentResponse, blocked, chat_from_response, classify_error, error_message, retry_after,
};
use switchyard_dialects::sse::SseDecoder;
use switchyard_dialects::{StreamItem, TranslateError};

/// The Gemini fuzz targets, by the name of their corpus folder.
pub const GEMINI_TARGETS: [&str; 2] = ["gemini_stream", "gemini_response"];

/// Runs the Gemini check of `target` on `data`; `false` when there is no such target.
pub fn check_gemini(target: &str, data: &[u8]) -> bool {
    match target {
        "gemini_stream" => check_gemini_stream(data),
        "gemini_response" => check_gemini_response(data),
        _ => return false,
    }
    true
}

/// What a stream became: the items until the first failure, and whether the SSE decoder or the
/// translator stopped it.
#[derive(Debug, PartialEq)]
struct Run {
    out: Vec<StreamItem>,
    sse_failed: bool,
    translate_error: Option<TranslateError>,
}

fn run<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Run {
    let mut sse = SseDecoder::new(64 * 1024);
    let mut translator = ChunkTranslator::new("gemini-fuzz", 1_700_000_000, true);
    let mut out = Vec::new();
    for chunk in chunks {
        let events = match sse.push(chunk) {
            Ok(events) => events,
            Err(_) => return Run { out, sse_failed: true, translate_error: None },
        };
        for event in events {
            match translator.push(&event) {
                Ok(items) => out.extend(items),
                Err(e) => return Run { out, sse_failed: false, translate_error: Some(e) },
            }
        }
    }
    out.extend(translator.finish());
    assert!(translator.finish().is_empty(), "finish gave items twice");
    Run { out, sse_failed: false, translate_error: None }
}

/// The first byte seeds a chunking; the rest is a Gemini SSE body.
///
/// Invariants: the body gives the same items, errors and end whether pushed whole, one byte at a
/// time, or in arbitrary chunks (when the SSE decoder's size limit stops it, the items before
/// are a prefix of the longest run's); at most one `Done` or end error, and nothing after it;
/// every chunk is a `chat.completion.chunk` that survives a write/read round trip.
pub fn check_gemini_stream(data: &[u8]) {
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
            assert!(longest.is_some_and(|l| l.starts_with(&r.out)), "items before an error depend on chunking");
        }
    }

    let ends = whole.out.iter().filter(|t| matches!(t, StreamItem::Done | StreamItem::Error { .. })).count();
    assert!(ends <= 1, "the stream ended twice");
    if ends == 1 {
        assert!(
            matches!(whole.out.last(), Some(StreamItem::Done | StreamItem::Error { .. })),
            "something after the end"
        );
    }
    for item in &whole.out {
        if let StreamItem::Chunk(chunk) = item {
            assert_eq!(chunk.object, "chat.completion.chunk");
            let bytes = serde_json::to_vec(chunk).expect("a chunk serializes");
            let back: ChatCompletionChunk = serde_json::from_slice(&bytes).expect("a chunk reads back");
            assert_eq!(&back, chunk, "a chunk changes through JSON");
        }
    }
}

/// Any bytes as a Gemini answer, and as an error body.
///
/// Invariants: reading never panics; the error helpers are total and a retry wait is at most a
/// day; an answer that reads translates into at least one choice (one per candidate), whose tool
/// calls' arguments are the JSON of the function calls' `args`, whose usage adds up, and which
/// survives a write/read round trip; a blocked answer has no candidates.
pub fn check_gemini_response(data: &[u8]) {
    let _ = classify_error(0, data);
    let _ = classify_error(400, data);
    let _ = classify_error(429, data);
    let _ = error_message(data);
    if let Some(wait) = retry_after(data) {
        assert!(wait.as_secs() <= 86_400, "a wait over a day: {wait:?}");
    }
    let Ok(resp) = serde_json::from_slice::<GenerateContentResponse>(data) else { return };
    let candidates = resp.candidates.len();
    let args: Vec<Value> = resp
        .candidates
        .iter()
        .flat_map(|c| c.content.iter().flat_map(|c| c.parts.iter()))
        .filter_map(|p| p.function_call.as_ref())
        .map(|call| call.args.clone().unwrap_or_else(|| serde_json::json!({})))
        .collect();
    if blocked(&resp).is_some() {
        assert_eq!(candidates, 0, "a blocked answer with candidates");
    }
    let chat = chat_from_response(resp, "gemini-fuzz", 1_700_000_000);
    assert_eq!(chat.choices.len(), candidates.max(1));
    let got: Vec<Value> = chat
        .choices
        .iter()
        .flat_map(|c| c.message.tool_calls.iter().flatten())
        .map(|c| serde_json::from_str(&c.function.arguments).expect("arguments are JSON text"))
        .collect();
    assert_eq!(got, args, "function call arguments changed");
    let usage = chat.usage.as_ref().expect("usage is always set");
    assert_eq!(usage.total_tokens, usage.prompt_tokens.saturating_add(usage.completion_tokens));
    let bytes = serde_json::to_vec(&chat).expect("a completion serializes");
    let back: ChatCompletion = serde_json::from_slice(&bytes).expect("a completion reads back");
    assert_eq!(back, chat, "a completion changes through JSON");
}
