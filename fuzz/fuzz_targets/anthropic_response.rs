//! Fuzz target `anthropic_response`: see `switchyard_fuzz::dialects::check_anthropic_response` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchyard_fuzz::dialects::check_anthropic_response(data));
