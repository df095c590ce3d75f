//! `classify_error`, `error_message` and `retry_after`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::HeaderMap;
use switchyard_dialects::anthropic::{ErrorClass, ErrorResponse, classify_error, error_message, retry_after};

fn body(kind: &str, message: &str) -> Vec<u8> {
    serde_json::to_vec(&ErrorResponse::new(kind, message)).expect("serializes")
}

#[test]
fn statuses_and_error_types_map_to_classes() {
    for (status, kind, class) in [
        (400, "invalid_request_error", ErrorClass::BadRequest),
        (401, "authentication_error", ErrorClass::Auth),
        (403, "permission_error", ErrorClass::Auth),
        (404, "not_found_error", ErrorClass::NotFound),
        (413, "request_too_large", ErrorClass::RequestTooLarge),
        (429, "rate_limit_error", ErrorClass::RateLimited),
        (500, "api_error", ErrorClass::ServerError),
        (529, "overloaded_error", ErrorClass::Overloaded),
        (408, "timeout_error", ErrorClass::Timeout),
        (504, "timeout_error", ErrorClass::Timeout),
        (502, "api_error", ErrorClass::ServerError),
        (418, "whatever", ErrorClass::BadRequest),
        (402, "billing_error", ErrorClass::BadRequest),
    ] {
        assert_eq!(classify_error(status, &body(kind, "x")), class, "{status} {kind}");
    }
}

#[test]
fn context_window_phrases_are_context_window_exceeded() {
    for message in [
        "prompt is too long: 215000 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000",
        "Prompt is too long",
    ] {
        assert_eq!(classify_error(400, &body("invalid_request_error", message)), ErrorClass::ContextWindowExceeded);
    }
}

#[test]
fn content_policy_phrases_are_content_policy() {
    let b = body("invalid_request_error", "Output blocked by content filtering policy");
    assert_eq!(classify_error(400, &b), ErrorClass::ContentPolicy);
}

#[test]
fn a_stream_error_event_is_classified_by_its_type() {
    for (kind, class) in [
        ("overloaded_error", ErrorClass::Overloaded),
        ("rate_limit_error", ErrorClass::RateLimited),
        ("api_error", ErrorClass::ServerError),
        ("invalid_request_error", ErrorClass::BadRequest),
        ("something_new", ErrorClass::ServerError),
    ] {
        assert_eq!(classify_error(0, &body(kind, "x")), class, "{kind}");
    }
    assert_eq!(
        classify_error(0, &body("invalid_request_error", "prompt is too long")),
        ErrorClass::ContextWindowExceeded
    );
}

#[test]
fn a_body_that_is_not_an_error_object_is_classified_by_status() {
    for b in [&b"<html>bad gateway</html>"[..], b"[{\"error\":{\"type\":\"rate_limit_error\"}}]", b""] {
        assert_eq!(classify_error(503, b), ErrorClass::ServerError);
        assert_eq!(classify_error(429, b), ErrorClass::RateLimited);
    }
}

#[test]
fn error_message_reads_error_message() {
    assert_eq!(error_message(&body("api_error", "Internal server error")).as_deref(), Some("Internal server error"));
    assert_eq!(error_message(b"not json"), None);
    assert_eq!(error_message(&body("api_error", "")), None);
}

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000) // 2023-11-14T22:13:20Z
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (name, value) in pairs {
        h.insert(*name, value.parse().expect("a header value"));
    }
    h
}

#[test]
fn retry_after_seconds_win() {
    let h = headers(&[("retry-after", "12"), ("anthropic-ratelimit-requests-reset", "2023-11-14T22:20:00Z")]);
    assert_eq!(retry_after(&h, now()), Some(Duration::from_secs(12)));
}

#[test]
fn the_latest_reset_instant_is_used_without_retry_after() {
    let h = headers(&[
        ("anthropic-ratelimit-requests-reset", "2023-11-14T22:13:30Z"),
        ("anthropic-ratelimit-tokens-reset", "2023-11-14T22:14:20Z"),
        ("anthropic-ratelimit-input-tokens-reset", "2023-11-14T22:13:25.5Z"),
        ("anthropic-ratelimit-output-tokens-reset", "garbage"),
    ]);
    assert_eq!(retry_after(&h, now()), Some(Duration::from_secs(60)));
}

#[test]
fn a_reset_in_the_past_is_no_wait() {
    let h = headers(&[("anthropic-ratelimit-tokens-reset", "2023-11-14T22:00:00Z")]);
    assert_eq!(retry_after(&h, now()), Some(Duration::ZERO));
}

#[test]
fn waits_are_capped_at_one_day() {
    let day = Duration::from_secs(86_400);
    assert_eq!(retry_after(&headers(&[("retry-after", "99999999")]), now()), Some(day));
    assert_eq!(
        retry_after(&headers(&[("anthropic-ratelimit-requests-reset", "2030-01-01T00:00:00Z")]), now()),
        Some(day)
    );
}

#[test]
fn no_usable_header_is_no_answer() {
    assert_eq!(retry_after(&HeaderMap::new(), now()), None);
    assert_eq!(retry_after(&headers(&[("retry-after", "-3")]), now()), None);
    assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now()), None);
}
