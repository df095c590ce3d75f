//! Fuzz target `bedrock_response`: see `switchyard_fuzz::bedrock::check_bedrock_response` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchyard_fuzz::bedrock::check_bedrock_response(data));
