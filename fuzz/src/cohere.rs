//! The checks behind the Cohere fuzz targets (`cohere_stream`, `cohere_response`).
//!
//! Like `dialects.rs`, this file uses `switchyard_dialects` and `serde_json` only, so
//! `dialects/tests/fuzz_replay.rs` compiles it into the dialects crate's own tests and
//! replays `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` there, without the fuzzer.

use serde_json::Value;
use switchyard_dialects::chat::{ChatCompletion, ChatCompletionChunk};
use switchyard_dialects::cohere::{
    ChatV2Response, ChunkTranslator, EmbedResponse, chat_from_response, classify_error, error_message,
    openai_embeddings_from, response_error,
};
use switchyard_dialects::sse::SseDecoder;
use switchyard_dialects::{StreamItem, TranslateError};

/// The Cohere fuzz targets, by the name of their corpus folder.
pub const COHERE_TARGETS: [&str; 2] = ["cohere_stream", "cohere_response"];

/// Runs the Cohere check of `target` on `data`; `false` when there is no such target.
pub fn check_cohere(target: &str, data: &[u8]) -> bool {
    match target {
        "cohere_stream" => check_cohere_stream(data),
        "cohere_response" => check_cohere_response(data),
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
    let mut translator = ChunkTranslator::new("command-a-03-2025", 1_700_000_000, true);
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
    Run { out, sse_failed: false, translate_error: None }
}

/// The first byte seeds a chunking; the rest is a Cohere v2 chat stream.
///
/// Invariants: the same items, errors and end whether the bytes are pushed whole, one byte at a
/// time, or in arbitrary chunks (when the SSE decoder's size limit stops it, the items before are
/// a prefix of the byte-wise ones); `Done` at most once and last, never after an `Error`; every
/// chunk is a `chat.completion.chunk` of the translator's model that survives a write/read round
/// trip.
pub fn check_cohere_stream(data: &[u8]) {
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

    let done = whole.out.iter().filter(|t| matches!(t, StreamItem::Done)).count();
    assert!(done <= 1, "Done twice");
    if done == 1 {
        assert_eq!(whole.out.last(), Some(&StreamItem::Done), "something after Done");
    }
    let errors = whole.out.iter().filter(|t| matches!(t, StreamItem::Error { .. })).count();
    assert!(errors == 0 || done == 0, "Done after a failure");
    for item in &whole.out {
        if let StreamItem::Chunk(chunk) = item {
            assert_eq!(chunk.object, "chat.completion.chunk");
            assert_eq!(chunk.model, "command-a-03-2025");
            let bytes = serde_json::to_vec(chunk).expect("a chunk serializes");
            let back: ChatCompletionChunk = serde_json::from_slice(&bytes).expect("a chunk reads back");
            assert_eq!(&back, chunk, "a chunk changes through JSON");
        }
    }
}

/// Any bytes as a Cohere v2 chat answer, an embed answer and an error body.
///
/// Invariants: reading never panics; an answer that reads translates into one choice whose tool
/// calls keep their ids and whose arguments are never empty, whose usage adds up, and which
/// survives a write/read round trip; `response_error` is set exactly for `ERROR` / `TIMEOUT`; an
/// embed answer gives a list whose indices count from 0; the error helpers are total.
pub fn check_cohere_response(data: &[u8]) {
    let _ = classify_error(0, data);
    let _ = classify_error(400, data);
    let _ = classify_error(503, data);
    let _ = error_message(data);
    if let Ok(resp) = serde_json::from_slice::<EmbedResponse>(data) {
        let out = openai_embeddings_from(resp, "embed-v4.0");
        assert_eq!(out["object"], "list");
        let data = out["data"].as_array().expect("data is an array");
        for (i, item) in data.iter().enumerate() {
            assert_eq!(item["index"], Value::from(i), "indices count from 0");
        }
    }
    let Ok(resp) = serde_json::from_slice::<ChatV2Response>(data) else { return };
    let failed = resp.finish_reason.as_deref().is_some_and(|r| {
        let r = r.to_ascii_uppercase();
        r == "ERROR" || r == "TIMEOUT"
    });
    assert_eq!(response_error(&resp).is_some(), failed, "response_error disagrees with the finish reason");
    let ids: Vec<String> = resp.message.tool_calls.iter().flatten().map(|c| c.id.clone()).collect();
    let chat = chat_from_response(resp, 1_700_000_000);
    assert_eq!(chat.choices.len(), 1);
    let message = &chat.choices[0].message;
    let got: Vec<String> = message.tool_calls.iter().flatten().map(|c| c.id.clone()).collect();
    assert_eq!(got, ids, "tool calls lost or reordered");
    assert!(message.tool_calls.iter().flatten().all(|c| !c.function.arguments.is_empty()), "empty arguments");
    let usage = chat.usage.as_ref().expect("usage is always set");
    assert_eq!(usage.total_tokens, usage.prompt_tokens.saturating_add(usage.completion_tokens));
    let bytes = serde_json::to_vec(&chat).expect("a completion serializes");
    let back: ChatCompletion = serde_json::from_slice(&bytes).expect("a completion reads back");
    assert_eq!(back, chat, "a completion changes through JSON");
}
