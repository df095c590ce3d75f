//! The request probe's memory bound (`docs/security.md`, "Hostile input"): a routing key of the
//! wrong type is refused without its value being built, so a hostile body cannot make one request
//! allocate many times its size.
//!
//! Allocation is measured, not RSS: this binary's global allocator is `mockalloc`'s counting
//! wrapper around `System` (the workspace forbids the `unsafe_code` a hand-written one needs), which
//! is why these tests are a binary of their own.

use std::alloc::System;

use mockalloc::Mockalloc;
use switchyard::{layers::ctx::Endpoint, services::facts_from_json};

#[global_allocator]
static ALLOCATOR: Mockalloc<System> = Mockalloc(System);

/// The ingress's default body limit.
const BODY: usize = 8 * 1024 * 1024;

/// `{"model":"x","messages":[],<prefix>[0,0,...]<suffix>}`, `BODY` bytes long.
fn body_with(prefix: &str, suffix: &str) -> Vec<u8> {
    let head = format!(r#"{{"model":"x","messages":[],{prefix}[0"#);
    let tail = format!("]{suffix}}}");
    let mut body = head.into_bytes();
    while body.len() + 2 + tail.len() <= BODY {
        body.extend_from_slice(b",0");
    }
    body.extend_from_slice(tail.as_bytes());
    body
}

#[test]
fn a_wrongly_typed_routing_key_is_refused_after_allocating_less_than_the_body() {
    let cases = [
        (r#""fallbacks":"#, "", "`fallbacks` must hold group names"),
        (r#""tags":"#, "", "`tags` must hold strings"),
        (r#""metadata":{"tags":"#, "}", "`metadata.tags` must hold strings"),
        (r#""metadata":{"session_id":"#, "}", "`metadata.session_id` must be a string"),
        (r#""num_retries":"#, "", "`num_retries` must be an integer"),
        (r#""stream":"#, "", "`stream` must be a boolean"),
        (r#""disable_fallbacks":"#, "", "`disable_fallbacks` must be a boolean"),
        (r#""allowed_model_region":"#, "", "`allowed_model_region` must be a string"),
        (r#""timeout":"#, "", "`timeout` must be a positive number of seconds"),
        (r#""stream_timeout":"#, "", "`stream_timeout` must be a positive number of seconds"),
    ];
    for (prefix, suffix, expected) in cases {
        let body = body_with(prefix, suffix);
        let mut message = String::new();
        let info = mockalloc::record_allocs(|| match facts_from_json(&body, Endpoint::Chat) {
            Ok(_) => message.push_str("accepted"),
            Err(e) => message = e.to_string(),
        });
        assert!(message.contains(expected), "{prefix}: {message}");
        assert!(
            info.peak_mem() < (BODY / 8) as u64,
            "{prefix}: the probe allocated up to {} bytes at once for a {BODY}-byte body",
            info.peak_mem()
        );
    }
}

#[test]
fn the_model_of_the_wrong_type_is_refused_after_allocating_less_than_the_body() {
    let mut body = br#"{"messages":[],"model":[0"#.to_vec();
    while body.len() + 4 <= BODY {
        body.extend_from_slice(b",0");
    }
    body.extend_from_slice(b"]}");
    let mut message = String::new();
    let info = mockalloc::record_allocs(|| {
        message = facts_from_json(&body, Endpoint::Chat).map(|_| String::new()).unwrap_or_else(|e| e.to_string())
    });
    assert!(message.contains("`model` must be a string, got sequence"), "{message}");
    assert!(info.peak_mem() < (BODY / 8) as u64, "peak {} bytes", info.peak_mem());
}

#[test]
fn images_are_found_in_a_large_conversation_without_building_it() {
    // An 8 MiB conversation: many text parts with escapes, then one image part at the very end.
    let mut body = br#"{"model":"x","messages":[{"role":"user","content":["#.to_vec();
    let part = br#"{"type":"text","text":"some \"quoted\" text \u00e9 and more"},"#;
    let tail = br#"{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}"#;
    while body.len() + part.len() + tail.len() <= BODY {
        body.extend_from_slice(part);
    }
    body.extend_from_slice(tail);
    let mut images = None;
    let info = mockalloc::record_allocs(|| images = facts_from_json(&body, Endpoint::Chat).ok().map(|(_, f)| f.images));
    assert_eq!(images, Some(true));
    assert!(info.peak_mem() < (BODY / 8) as u64, "peak {} bytes", info.peak_mem());
}
