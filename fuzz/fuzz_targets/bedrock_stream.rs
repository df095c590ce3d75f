//! Fuzz target `bedrock_stream`: see `switchyard_fuzz::bedrock::check_bedrock_stream` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchyard_fuzz::bedrock::check_bedrock_stream(data));
