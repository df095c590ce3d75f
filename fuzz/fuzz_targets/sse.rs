//! Fuzz target `sse`: see `switchyard_fuzz::check_sse` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchyard_fuzz::check_sse(data));
