//! Fuzz target `cohere_stream`: see `switchyard_fuzz::cohere::check_cohere_stream` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchyard_fuzz::cohere::check_cohere_stream(data));
