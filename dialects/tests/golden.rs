//! Golden files (`tests/golden/`, see its README): documented Anthropic answers and streams, and
//! chat requests, through the translation in both directions, compared with the committed
//! expected output. `UPDATE_GOLDEN=1 cargo test --test golden` rewrites the expected files
//! (review the diff before committing it).

use std::{
    fs,
    path::{Path, PathBuf},
};

use serde_json::{Value, json};
use switchyard_dialects::anthropic::{
    ChunkTranslator, MessagesResponse, RequestOptions, Translated, chat_from_response, request_from_chat,
};
use switchyard_dialects::chat::ChatRequest;
use switchyard_dialects::sse::SseDecoder;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The files of `tests/golden/` whose names end with `suffix`, sorted.
fn files(suffix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir())
        .expect("tests/golden exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(suffix)))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no golden file ends with {suffix}");
    out
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Compares `actual` with the expected file `name`, or writes it under `UPDATE_GOLDEN`.
fn check(name: String, actual: Value) {
    let path = dir().join(&name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let text = serde_json::to_string_pretty(&actual).expect("serializes") + "\n";
        fs::write(&path, text).expect("writes the golden file");
        return;
    }
    let expected = read_json(&path);
    assert_eq!(actual, expected, "{name} differs (UPDATE_GOLDEN=1 rewrites it)");
}

fn stem<'a>(path: &'a Path, suffix: &str) -> &'a str {
    let name = path.file_name().and_then(|n| n.to_str()).expect("a UTF-8 name");
    name.strip_suffix(suffix).expect("the suffix")
}

#[test]
fn chat_requests_round_trip_to_the_same_json() {
    let mut paths = files(".chat.json");
    paths.push(dir().join("chat_roundtrip.json"));
    for path in paths {
        let value = read_json(&path);
        let req: ChatRequest =
            serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(serde_json::to_value(&req).expect("serializes"), value, "{}", path.display());
    }
}

#[test]
fn chat_requests_translate_to_the_expected_anthropic_requests() {
    let opts = RequestOptions::new("claude-sonnet-4-5-20250929", 4096);
    for path in files(".chat.json") {
        let req: ChatRequest = serde_json::from_value(read_json(&path)).expect("a chat request");
        let out = request_from_chat(req, &opts).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        check(
            format!("{}.anthropic.expected.json", stem(&path, ".chat.json")),
            serde_json::to_value(out).expect("serializes"),
        );
    }
}

#[test]
fn anthropic_answers_translate_to_the_expected_chat_completions() {
    for path in files(".anthropic.json") {
        let resp: MessagesResponse =
            serde_json::from_value(read_json(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let out = chat_from_response(resp, 1_700_000_000);
        check(
            format!("{}.chat.expected.json", stem(&path, ".anthropic.json")),
            serde_json::to_value(out).expect("serializes"),
        );
    }
}

#[test]
fn anthropic_streams_translate_to_the_expected_chunks() {
    for path in files(".sse") {
        let bytes = fs::read(&path).expect("reads");
        let mut sse = SseDecoder::new(1 << 20);
        let mut chunks = ChunkTranslator::new(1_700_000_000, true);
        let mut out = Vec::new();
        for event in sse.push(&bytes).expect("decodes") {
            for t in chunks.push(&event).unwrap_or_else(|e| panic!("{}: {e}", path.display())) {
                out.push(match t {
                    Translated::Chunk(c) => serde_json::to_value(c).expect("serializes"),
                    Translated::Error { kind, message } => json!({"error": {"type": kind, "message": message}}),
                    Translated::Done => json!("[DONE]"),
                    _ => unreachable!("no other kind"),
                });
            }
        }
        assert_eq!(out.last(), Some(&json!("[DONE]")), "{}", path.display());
        check(format!("{}.chunks.expected.json", stem(&path, ".sse")), Value::Array(out));
    }
}
