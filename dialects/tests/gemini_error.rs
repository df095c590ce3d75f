//! Gemini and Vertex AI error answers classified for routing, with `google.rpc.RetryInfo`.

use std::time::Duration;

use serde_json::json;
use switchyard_dialects::ErrorClass;
use switchyard_dialects::gemini::{classify_error, error_message, retry_after};

fn body(code: u16, status: &str, message: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"error": {"code": code, "message": message, "status": status}})).expect("json")
}

#[test]
fn statuses_classify_as_the_routing_classes() {
    let cases = [
        (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", ErrorClass::RateLimited),
        (400, "INVALID_ARGUMENT", "Request contains an invalid argument.", ErrorClass::BadRequest),
        (400, "FAILED_PRECONDITION", "User location is not supported for the API use.", ErrorClass::BadRequest),
        (403, "PERMISSION_DENIED", "The caller does not have permission", ErrorClass::Auth),
        (401, "UNAUTHENTICATED", "Request had invalid authentication credentials.", ErrorClass::Auth),
        (404, "NOT_FOUND", "models/gemini-0 is not found for API version v1beta", ErrorClass::NotFound),
        (500, "INTERNAL", "An internal error has occurred.", ErrorClass::ServerError),
        (503, "UNAVAILABLE", "The model is overloaded. Please try again later.", ErrorClass::Overloaded),
        (504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete.", ErrorClass::Timeout),
        (413, "", "Request payload size exceeds the limit", ErrorClass::RequestTooLarge),
    ];
    for (code, status, message, class) in cases {
        assert_eq!(classify_error(code, &body(code, status, message)), class, "{code} {status}");
        // Inside a stream there is no HTTP status: the body's code decides, then its status.
        assert_eq!(classify_error(0, &body(code, status, message)), class, "stream {code} {status}");
    }
    assert_eq!(classify_error(0, &body(0, "RESOURCE_EXHAUSTED", "quota")), ErrorClass::RateLimited);
    assert_eq!(classify_error(0, &body(0, "UNAVAILABLE", "x")), ErrorClass::Overloaded);
    assert_eq!(classify_error(0, &body(0, "DEADLINE_EXCEEDED", "x")), ErrorClass::Timeout);
    assert_eq!(classify_error(0, &body(0, "PERMISSION_DENIED", "x")), ErrorClass::Auth);
    assert_eq!(classify_error(0, b"not json"), ErrorClass::ServerError);
    assert_eq!(classify_error(502, b"<html>Bad Gateway</html>"), ErrorClass::ServerError);
}

#[test]
fn token_limit_messages_are_context_window_exceeded() {
    for message in [
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        "Unable to submit request because the input token count is 40000 but model only supports up to 32768.",
    ] {
        assert_eq!(classify_error(400, &body(400, "INVALID_ARGUMENT", message)), ErrorClass::ContextWindowExceeded);
    }
}

#[test]
fn an_invalid_api_key_is_auth_although_gemini_says_400() {
    let body = json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
        "status": "INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}});
    assert_eq!(classify_error(400, &serde_json::to_vec(&body).expect("json")), ErrorClass::Auth);
}

#[test]
fn retry_delay_comes_from_retry_info() {
    let body = json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "details": [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric":
            "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaValue": "10"}]},
        {"@type": "type.googleapis.com/google.rpc.Help", "links": [{"description": "Learn more", "url": "https://ai.google.dev"}]},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34s"},
    ]}});
    let bytes = serde_json::to_vec(&body).expect("json");
    assert_eq!(classify_error(429, &bytes), ErrorClass::RateLimited);
    assert_eq!(retry_after(&bytes), Some(Duration::from_secs(34)));
    assert_eq!(
        error_message(&bytes).as_deref(),
        Some("You exceeded your current quota, please check your plan and billing details.")
    );

    let fraction = br#"{"error": {"code": 429, "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}]}}"#;
    assert_eq!(retry_after(fraction), Some(Duration::from_millis(1500)));
    let huge = br#"{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "9999999999s"}]}}"#;
    assert_eq!(retry_after(huge), Some(Duration::from_secs(86_400)));
    for none in [
        &br#"{"error": {"code": 429, "message": "quota"}}"#[..],
        br#"{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "-1s"}]}}"#,
        br#"{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "soon"}]}}"#,
        b"[]",
    ] {
        assert_eq!(retry_after(none), None);
    }
}

#[test]
fn vertex_wraps_errors_in_an_array() {
    let body = br#"[{"error": {"code": 429, "message": "Resource exhausted. Please try again later.", "status": "RESOURCE_EXHAUSTED"}}]"#;
    assert_eq!(classify_error(429, body), ErrorClass::RateLimited);
    assert_eq!(error_message(body).as_deref(), Some("Resource exhausted. Please try again later."));
    assert_eq!(error_message(b"{}"), None);
}
