//! `bedrock::classify_error` and `error_message`: every documented Bedrock Runtime exception, by
//! header, body `__type`, stream exception type and bare status.

use switchyard_dialects::ErrorClass;
use switchyard_dialects::bedrock::{classify_error, error_message};

#[test]
fn documented_exceptions_map_to_routing_classes() {
    let body = br#"{"message":"something"}"#;
    for (status, kind, class) in [
        (429, "ThrottlingException", ErrorClass::RateLimited),
        (400, "ServiceQuotaExceededException", ErrorClass::RateLimited),
        (503, "ServiceUnavailableException", ErrorClass::Overloaded),
        (429, "ModelNotReadyException", ErrorClass::Overloaded),
        (400, "ValidationException", ErrorClass::BadRequest),
        (403, "AccessDeniedException", ErrorClass::Auth),
        (403, "UnrecognizedClientException", ErrorClass::Auth),
        (403, "ExpiredTokenException", ErrorClass::Auth),
        (404, "ResourceNotFoundException", ErrorClass::NotFound),
        (408, "ModelTimeoutException", ErrorClass::Timeout),
        (424, "ModelErrorException", ErrorClass::ServerError),
        (424, "ModelStreamErrorException", ErrorClass::ServerError),
        (500, "InternalServerException", ErrorClass::ServerError),
    ] {
        assert_eq!(classify_error(status, Some(kind), body), class, "{kind}");
        // The header's long form, and the same type read from the body.
        let header = format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/");
        assert_eq!(classify_error(status, Some(&header), body), class, "{header}");
        let typed = format!(r#"{{"__type":"com.amazon.coral#{kind}","message":"something"}}"#);
        assert_eq!(classify_error(status, None, typed.as_bytes()), class, "__type {kind}");
    }
}

#[test]
fn input_too_long_validation_errors_are_context_window_errors() {
    for message in [
        "Input is too long for requested model.",
        "The model returned the following errors: too many input tokens",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "The model returned the following errors: input length and `max_tokens` exceed context limit: 199000 + 8192 > 204698",
    ] {
        let body = serde_json::json!({"message": message}).to_string();
        assert_eq!(
            classify_error(400, Some("ValidationException"), body.as_bytes()),
            ErrorClass::ContextWindowExceeded
        );
        assert_eq!(classify_error(400, None, body.as_bytes()), ErrorClass::ContextWindowExceeded, "bare 400");
    }
}

#[test]
fn the_status_decides_when_the_type_says_nothing() {
    for (status, class) in [
        (429, ErrorClass::RateLimited),
        (503, ErrorClass::Overloaded),
        (401, ErrorClass::Auth),
        (403, ErrorClass::Auth),
        (404, ErrorClass::NotFound),
        (408, ErrorClass::Timeout),
        (504, ErrorClass::Timeout),
        (413, ErrorClass::RequestTooLarge),
        (400, ErrorClass::BadRequest),
        (424, ErrorClass::ServerError),
        (500, ErrorClass::ServerError),
        (502, ErrorClass::ServerError),
    ] {
        assert_eq!(classify_error(status, None, b"<html>bad gateway</html>"), class, "{status}");
        assert_eq!(classify_error(status, Some("SomethingNewException"), b"{}"), class, "{status}");
    }
}

#[test]
fn the_message_comes_from_message_or_message_capitalised() {
    assert_eq!(error_message(br#"{"message":"Too many tokens"}"#).as_deref(), Some("Too many tokens"));
    assert_eq!(error_message(br#"{"Message":"User is not authorized"}"#).as_deref(), Some("User is not authorized"));
    assert_eq!(error_message(br#"{"message":""}"#), None);
    assert_eq!(error_message(b"[1]"), None);
    assert_eq!(error_message(b""), None);
}
