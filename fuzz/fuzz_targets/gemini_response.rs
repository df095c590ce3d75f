//! Fuzz target `gemini_response`: see `switchyard_fuzz::gemini::check_gemini_response` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchyard_fuzz::gemini::check_gemini_response(data));
