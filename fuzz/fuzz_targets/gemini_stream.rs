//! Fuzz target `gemini_stream`: see `switchyard_fuzz::gemini::check_gemini_stream` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchyard_fuzz::gemini::check_gemini_stream(data));
