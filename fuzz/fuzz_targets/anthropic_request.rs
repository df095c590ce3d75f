//! Fuzz target `anthropic_request`: see `switchyard_fuzz::dialects::check_anthropic_request` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchyard_fuzz::dialects::check_anthropic_request(data));
