//! Fuzz target `retry_after`: see `switchyard_fuzz::check_retry_after` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchyard_fuzz::check_retry_after(data));
