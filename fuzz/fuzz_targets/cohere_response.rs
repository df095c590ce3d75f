//! Fuzz target `cohere_response`: see `switchyard_fuzz::cohere::check_cohere_response` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchyard_fuzz::cohere::check_cohere_response(data));
