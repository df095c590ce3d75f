//! The fuzz corpora (`fuzz/corpus/<target>/`) and the inputs that once broke a target
//! (`fuzz/regressions/<target>/`) replayed through the very checks the fuzz targets run, as
//! ordinary tests: no fuzzer, no nightly features. See `docs/fuzzing.md`.

use std::{
    fs,
    panic::{AssertUnwindSafe, catch_unwind},
    path::{Path, PathBuf},
};

#[allow(dead_code, unreachable_pub)]
#[path = "../fuzz/src/lib.rs"]
mod fuzz_checks;

/// Every file under `fuzz/<kind>/<target>/`, sorted (an absent folder has none).
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join(kind).join(target);
    let mut files: Vec<PathBuf> = match fs::read_dir(&dir) {
        Ok(entries) => entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_file()).collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

/// Feeds every corpus and regression input of `target` to its check; a failure names the file.
fn replay(target: &str) {
    let corpus = inputs("corpus", target);
    assert!(!corpus.is_empty(), "fuzz/corpus/{target}/ has no seeds");
    for path in corpus.iter().chain(&inputs("regressions", target)) {
        let data = fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let outcome = catch_unwind(AssertUnwindSafe(|| fuzz_checks::check(target, &data)));
        match outcome {
            Ok(known) => assert!(known, "no check for target {target}"),
            Err(_) => panic!("{} fails the {target} check (see the panic above)", path.display()),
        }
    }
}

#[test]
fn every_target_has_a_replay_test() {
    assert_eq!(fuzz_checks::TARGETS, ["config", "ingress", "sse", "classify", "retry_after"]);
}

#[test]
fn config_inputs_replay() {
    replay("config");
}

#[test]
fn ingress_inputs_replay() {
    replay("ingress");
}

#[test]
fn sse_inputs_replay() {
    replay("sse");
}

#[test]
fn classify_inputs_replay() {
    replay("classify");
}

#[test]
fn retry_after_inputs_replay() {
    replay("retry_after");
}
