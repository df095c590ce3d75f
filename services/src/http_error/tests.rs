use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use switchyard_layers::{Outcome, RouteBody, RouteError, RouteErrorKind};

use super::*;

/// Status, headers and the parsed JSON body of an answer.
async fn read(resp: http::Response<RouteBody>) -> (StatusCode, http::HeaderMap, Value) {
    let (parts, body) = resp.into_parts();
    let bytes = body.collect().await.expect("a whole body").to_bytes();
    let json: Value = serde_json::from_slice(&bytes).expect("a JSON body");
    (parts.status, parts.headers, json)
}

async fn answer(err: impl Into<BoxError>) -> (StatusCode, http::HeaderMap, Value) {
    read(error_response(&err.into())).await
}

fn upstream(outcome: Outcome, message: &str) -> RouteError {
    RouteError::upstream(outcome, "east".into(), message).with_group("gpt-4o".into())
}

fn upstream_answer(outcome: Outcome, status: u16, body: impl Into<String>) -> RouteError {
    let status = StatusCode::from_u16(status).expect("a status");
    upstream(outcome, "upstream said no").with_upstream_response(status, Bytes::from(body.into()))
}

#[tokio::test]
async fn every_answer_is_an_openai_error_with_a_kind_header() {
    let (status, headers, json) =
        answer(RouteError::new(RouteErrorKind::InvalidRequest, "request has no `model`")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers[ERROR_KIND_HEADER], "invalid_request");
    let error = json["error"].as_object().expect("an error object");
    let mut keys: Vec<&str> = error.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "message", "param", "type"]);
    assert_eq!(json["error"]["message"], "request has no `model`");
    assert_eq!(json["error"]["type"], "invalid_request_error");
    assert!(json["error"]["param"].is_null());
}

#[tokio::test]
async fn unknown_group_is_404_model_not_found_listing_the_known_groups() {
    let err = RouteError::unknown_group("gpt-5", vec!["gpt-4o".into(), "gpt-4o-mini".into()]);
    let (status, headers, json) = answer(err).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(headers[ERROR_KIND_HEADER], "unknown_group");
    assert_eq!(json["error"]["code"], "model_not_found");
    assert_eq!(json["error"]["param"], "model");
    let message = json["error"]["message"].as_str().expect("a message");
    assert!(
        message.contains("gpt-5") && message.contains("`gpt-4o`") && message.contains("`gpt-4o-mini`"),
        "{message}"
    );
}

#[tokio::test]
async fn all_cooling_down_is_429_with_retry_after_rounded_up() {
    let err = RouteError::new(RouteErrorKind::AllCoolingDown, "every deployment is cooling down")
        .with_retry_after(Duration::from_millis(2001));
    let (status, headers, json) = answer(err).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers["retry-after"], "3");
    assert_eq!(headers["retry-after-ms"], "2001");
    assert_eq!(headers[ERROR_KIND_HEADER], "all_cooling_down");
    assert_eq!(json["error"]["type"], "rate_limit_error");
    assert_eq!(json["error"]["code"], "all_deployments_cooling_down");
}

#[tokio::test]
async fn retry_after_is_at_least_one_second_and_absent_when_unknown() {
    let err = RouteError::new(RouteErrorKind::RateLimited, "at the limit").with_retry_after(Duration::from_micros(300));
    let (status, headers, json) = answer(err).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers["retry-after"], "1");
    assert_eq!(headers["retry-after-ms"], "1");
    assert_eq!(json["error"]["code"], "rate_limit_exceeded");

    let (_, headers, _) = answer(RouteError::new(RouteErrorKind::RateLimited, "at the limit")).await;
    assert!(!headers.contains_key("retry-after"));
    assert!(!headers.contains_key("retry-after-ms"));
}

#[tokio::test]
async fn context_window_is_400_context_length_exceeded() {
    let (status, headers, json) =
        answer(RouteError::new(RouteErrorKind::ContextWindowExceeded, "9000 tokens fit no deployment")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(headers[ERROR_KIND_HEADER], "context_window_exceeded");
    assert_eq!(json["error"]["code"], "context_length_exceeded");
    assert_eq!(json["error"]["type"], "invalid_request_error");
}

#[tokio::test]
async fn budget_exceeded_is_429_budget_exceeded() {
    let (status, _, json) = answer(RouteError::new(RouteErrorKind::BudgetExceeded, "budget spent")).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(json["error"]["code"], "budget_exceeded");
    assert_eq!(json["error"]["type"], "budget_exceeded");
}

#[tokio::test]
async fn tag_refusal_is_403_not_allowed_naming_the_tags() {
    let err = RouteError::new(
        RouteErrorKind::NotAllowed,
        "Not allowed to access model due to tags configuration: group `gpt-4o`, request tags [`free`]",
    );
    let (status, headers, json) = answer(err).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(headers[ERROR_KIND_HEADER], "not_allowed");
    assert_eq!(json["error"]["type"], "permission_error");
    assert_eq!(json["error"]["code"], "not_allowed");
    assert!(json["error"]["message"].as_str().is_some_and(|m| m.contains("`free`")));
    assert!(!headers.contains_key("retry-after"));
}

#[tokio::test]
async fn no_candidates_is_503() {
    let (status, headers, json) = answer(RouteError::new(RouteErrorKind::NoCandidates, "no deployment left")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(headers[ERROR_KIND_HEADER], "no_candidates");
    assert_eq!(json["error"]["code"], "no_deployments_available");
}

#[tokio::test]
async fn missing_context_is_500_without_details() {
    let (status, headers, json) =
        answer(RouteError::new(RouteErrorKind::MissingContext, "request has no RouteCtx; add the ingress")).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(headers[ERROR_KIND_HEADER], "missing_context");
    assert_eq!(json["error"]["message"], "internal error");
    assert_eq!(json["error"]["type"], "server_error");
}

#[tokio::test]
async fn ingress_refusals_carry_their_status() {
    let cases = [
        (IngressError::body_too_large(10), StatusCode::PAYLOAD_TOO_LARGE, "body_too_large"),
        (
            IngressError::unsupported_media_type("text/plain"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (IngressError::method_not_allowed(&Method::GET), StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        (IngressError::unknown_endpoint("/v1/models"), StatusCode::NOT_FOUND, "unknown_endpoint"),
        (IngressError::body_read(std::io::Error::other("reset")), StatusCode::BAD_REQUEST, "body_read"),
    ];
    for (err, want, kind) in cases {
        let message = err.to_string();
        let (status, headers, json) = answer(err).await;
        assert_eq!(status, want, "{kind}");
        assert_eq!(headers[ERROR_KIND_HEADER], kind);
        assert_eq!(json["error"]["code"], kind);
        assert_eq!(json["error"]["type"], "invalid_request_error");
        assert_eq!(json["error"]["message"], message.as_str());
        assert_eq!(headers.contains_key("allow"), want == StatusCode::METHOD_NOT_ALLOWED);
    }
}

#[tokio::test]
async fn upstream_timeout_is_504_and_transport_failures_502() {
    let (status, headers, json) = answer(upstream(Outcome::Timeout, "attempt timed out after 30s")).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(headers[ERROR_KIND_HEADER], "upstream");
    assert_eq!(json["error"]["code"], "upstream_timeout");
    assert_eq!(json["error"]["type"], "timeout_error");

    let (status, _, json) =
        answer(upstream(Outcome::Connect, "tcp connect error to https://internal.example:8443")).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert_eq!(json["error"]["code"], "upstream_connect_error");
    let message = json["error"]["message"].as_str().expect("a message");
    assert!(!message.contains("internal.example"), "no upstream address leaks: {message}");
    assert!(message.contains("gpt-4o"), "{message}");

    let (status, _, json) = answer(upstream(Outcome::Transport, "stream cut")).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert_eq!(json["error"]["code"], "upstream_transport_error");
}

#[tokio::test]
async fn upstream_5xx_is_502_unless_it_said_503() {
    let (status, _, json) =
        answer(upstream_answer(Outcome::ServerError, 500, r#"{"error":{"message":"trace at /srv/app.py"}}"#)).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert_eq!(json["error"]["code"], "upstream_server_error");
    assert!(!json["error"]["message"].as_str().expect("a message").contains("app.py"));

    let err = upstream_answer(Outcome::ServerError, 503, "overloaded").with_retry_after(Duration::from_secs(4));
    let (status, headers, json) = answer(err).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(headers["retry-after"], "4");
    assert_eq!(json["error"]["code"], "upstream_unavailable");

    let (status, _, _) = answer(upstream(Outcome::ServerError, "no status known")).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
}

#[tokio::test]
async fn upstream_auth_and_not_found_are_502_without_the_upstream_message() {
    let body =
        r#"{"error":{"message":"Incorrect API key provided: sk-proj-abcdef1234567890XYZ","code":"invalid_api_key"}}"#;
    let (status, headers, json) = answer(upstream_answer(Outcome::Auth, 401, body)).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert_eq!(headers[ERROR_KIND_HEADER], "upstream");
    assert_eq!(json["error"]["code"], "upstream_auth_error");
    assert!(!json.to_string().contains("sk-proj"), "{json}");

    let (status, _, json) = answer(upstream_answer(Outcome::NotFound, 404, r#"{"error":{"message":"no"}}"#)).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert_eq!(json["error"]["code"], "upstream_not_found");
}

#[tokio::test]
async fn upstream_429_passes_through_with_retry_after() {
    let body = r#"{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded","param":null}}"#;
    let err = upstream_answer(Outcome::RateLimited, 429, body).with_retry_after(Duration::from_millis(1500));
    let (status, headers, json) = answer(err).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers["retry-after"], "2");
    assert_eq!(headers["retry-after-ms"], "1500");
    assert_eq!(json["error"]["message"], "Rate limit reached for gpt-4o");
    assert_eq!(json["error"]["type"], "requests");
    assert_eq!(json["error"]["code"], "rate_limit_exceeded");
}

#[tokio::test]
async fn an_upstream_quota_error_answers_429() {
    let body = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
    let (status, _, json) = answer(upstream_answer(Outcome::RateLimited, 403, body)).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(json["error"]["code"], "insufficient_quota");
}

#[tokio::test]
async fn upstream_4xx_pass_through_keeps_status_and_code_but_only_four_fields() {
    let body = r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error",
        "param":"messages","code":"context_length_exceeded","innererror":{"secret":"x"}}}"#;
    let (status, _, json) = answer(upstream_answer(Outcome::ContextWindowExceeded, 400, body)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(json["error"]["code"], "context_length_exceeded");
    assert_eq!(json["error"]["param"], "messages");
    assert!(json["error"].get("innererror").is_none());

    let (status, _, json) =
        answer(upstream_answer(Outcome::BadRequest, 422, r#"{"error":{"message":"bad `temperature`","code":7}}"#))
            .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(json["error"]["code"], 7);
    assert_eq!(json["error"]["type"], "invalid_request_error");
}

#[tokio::test]
async fn passed_through_messages_are_redacted_and_capped() {
    let long = "x ".repeat(5000);
    let body =
        format!(r#"{{"error":{{"message":"key sk-abcdefghijklmnop1234 rejected {long}","code":"content_filter"}}}}"#);
    let (status, _, json) = answer(upstream_answer(Outcome::ContentPolicy, 400, body)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = json["error"]["message"].as_str().expect("a message");
    assert!(!message.contains("abcdefghijklmnop"), "{message}");
    assert!(message.len() <= MAX_MESSAGE + '…'.len_utf8(), "{}", message.len());
}

#[tokio::test]
async fn a_non_json_upstream_4xx_keeps_its_status_with_our_message() {
    let (status, _, json) = answer(upstream_answer(Outcome::ContentPolicy, 400, "<html>nope</html>")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(json["error"]["message"], "upstream said no");
    assert_eq!(json["error"]["code"], "content_filter");
}

#[tokio::test]
async fn a_route_error_deep_in_the_chain_is_found() {
    #[derive(Debug)]
    struct Wrapper(RouteError);
    impl fmt::Display for Wrapper {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("wrapped")
        }
    }
    impl StdError for Wrapper {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&self.0)
        }
    }
    let (status, _, _) = answer(Wrapper(RouteError::new(RouteErrorKind::NoCandidates, "none"))).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn unknown_errors_are_500_without_details_and_timeouts_504() {
    let (status, headers, json) = answer("panic at src/secret.rs:12 with password=hunter2").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(headers[ERROR_KIND_HEADER], "internal");
    assert_eq!(json["error"]["message"], "internal error");

    let elapsed = tokio::time::timeout(Duration::ZERO, std::future::pending::<()>()).await.expect_err("times out");
    let (status, headers, _) = answer(elapsed).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(headers[ERROR_KIND_HEADER], "timeout");
}

#[tokio::test]
async fn into_error_response_keeps_the_cause() {
    let resp = into_error_response(RouteError::new(RouteErrorKind::NoCandidates, "none").into());
    let cause = resp.extensions().get::<ErrorCause>().expect("the cause");
    assert_eq!(cause.route_error().map(RouteError::kind), Some(RouteErrorKind::NoCandidates));
    assert!(cause.ingress_error().is_none());
}
