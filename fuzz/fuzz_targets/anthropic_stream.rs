//! Fuzz target `anthropic_stream`: see `switchyard_fuzz::dialects::check_anthropic_stream` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchyard_fuzz::dialects::check_anthropic_stream(data));
