//! The corpora of the dialect fuzz targets (`fuzz/corpus/<target>/`) and the inputs that once
//! broke one (`fuzz/regressions/<target>/`), replayed through the very checks the targets run
//! (`fuzz/src/dialects.rs`, `gemini.rs`, `cohere.rs`, `bedrock.rs`), as ordinary tests: no fuzzer,
//! no nightly features.

use std::{
    fs,
    panic::{AssertUnwindSafe, catch_unwind},
    path::{Path, PathBuf},
};

#[allow(dead_code, unreachable_pub)]
#[path = "../../fuzz/src/dialects.rs"]
mod checks;

#[allow(dead_code, unreachable_pub)]
#[path = "../../fuzz/src/gemini.rs"]
mod gemini;

#[allow(dead_code, unreachable_pub)]
#[path = "../../fuzz/src/cohere.rs"]
mod cohere;

#[allow(dead_code, unreachable_pub)]
#[path = "../../fuzz/src/bedrock.rs"]
mod bedrock;

/// Every file under `fuzz/<kind>/<target>/`, sorted (an absent folder has none).
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz").join(kind).join(target);
    let mut files: Vec<PathBuf> = match fs::read_dir(&dir) {
        Ok(entries) => entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_file()).collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

fn replay(target: &str) {
    replay_with(target, checks::check_dialect);
}

/// Every seed and regression of `target` through `check` (which says whether it knows the target).
fn replay_with(target: &str, check: fn(&str, &[u8]) -> bool) {
    let corpus = inputs("corpus", target);
    assert!(!corpus.is_empty(), "fuzz/corpus/{target}/ has no seeds");
    for path in corpus.iter().chain(&inputs("regressions", target)) {
        let data = fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let outcome = catch_unwind(AssertUnwindSafe(|| check(target, &data)));
        match outcome {
            Ok(known) => assert!(known, "no check for target {target}"),
            Err(_) => panic!("{} fails the {target} check (see the panic above)", path.display()),
        }
    }
}

#[test]
fn every_dialect_target_has_a_replay_test() {
    assert_eq!(
        checks::DIALECT_TARGETS,
        ["anthropic_stream", "anthropic_response", "anthropic_request", "responses_request"]
    );
}

#[test]
fn anthropic_stream_inputs_replay() {
    replay("anthropic_stream");
}

#[test]
fn anthropic_response_inputs_replay() {
    replay("anthropic_response");
}

#[test]
fn anthropic_request_inputs_replay() {
    replay("anthropic_request");
}

#[test]
fn responses_request_inputs_replay() {
    replay("responses_request");
}

#[test]
fn every_vendor_target_has_a_replay_test() {
    assert_eq!(gemini::GEMINI_TARGETS, ["gemini_stream", "gemini_response"]);
    assert_eq!(cohere::COHERE_TARGETS, ["cohere_stream", "cohere_response"]);
    assert_eq!(bedrock::BEDROCK_TARGETS, ["bedrock_stream", "bedrock_response"]);
}

#[test]
fn gemini_inputs_replay() {
    for target in gemini::GEMINI_TARGETS {
        replay_with(target, gemini::check_gemini);
    }
}

#[test]
fn cohere_inputs_replay() {
    for target in cohere::COHERE_TARGETS {
        replay_with(target, cohere::check_cohere);
    }
}

#[test]
fn bedrock_inputs_replay() {
    for target in bedrock::BEDROCK_TARGETS {
        replay_with(target, bedrock::check_bedrock);
    }
}
