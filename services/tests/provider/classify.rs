//! Every attempt result is classified once: statuses, error-body codes, retry headers,
//! connect failures, broken exchanges, timeouts and size limits.

use std::time::Duration;

use switchyard_layers::{ApiKey, Deployment, Outcome, RequestFacts, RouteError, RouteErrorKind};
use switchyard_services::provider::ProviderConfig;
use tokio::time::Instant;

use crate::support::{PATIENCE, Reply, Server, attempt, chat_body, provider, route_error, send};

fn deployment(server: &Server) -> Deployment {
    Deployment::builder("gpt-4o", "openai/gpt-4o")
        .id("east")
        .api_base(format!("{}/v1", server.base()))
        .api_key(ApiKey::new("sk-east-secret-0000"))
        .build()
        .expect("valid deployment")
}

/// The error of one attempt answered with `reply`.
async fn failure(reply: Reply) -> RouteError {
    let server = Server::start().await;
    server.reply(reply);
    let req = attempt(deployment(&server), RequestFacts::new(), &chat_body());
    route_error(send(&provider(ProviderConfig::default()), req).await)
}

#[tokio::test]
async fn rate_limited_with_retry_after() {
    let body =
        r#"{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}"#;
    let err =
        failure(Reply::Json { status: 429, headers: vec![("retry-after", "7".to_owned())], body: body.to_owned() })
            .await;
    assert_eq!(err.kind(), RouteErrorKind::Upstream);
    assert_eq!(err.outcome(), Some(Outcome::RateLimited));
    assert_eq!(err.retry_after(), Some(Duration::from_secs(7)));
    assert_eq!(err.deployment().map(|d| d.as_str()), Some("east"));
    assert_eq!(err.upstream_status().map(|s| s.as_u16()), Some(429));
    assert_eq!(err.upstream_body().map(|b| &b[..]), Some(body.as_bytes()));
    assert!(err.message().contains("Rate limit reached for gpt-4o"), "{}", err.message());
}

#[tokio::test]
async fn retry_after_ms_wins_over_retry_after() {
    let headers = vec![("retry-after", "7".to_owned()), ("retry-after-ms", "250".to_owned())];
    let err = failure(Reply::Json { status: 429, headers, body: "{}".to_owned() }).await;
    assert_eq!(err.retry_after(), Some(Duration::from_millis(250)));
}

#[tokio::test]
async fn context_length_exceeded_is_its_own_outcome() {
    let body = r#"{"error":{"message":"This model's maximum context length is 128000 tokens","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let err = failure(Reply::json(400, body)).await;
    assert_eq!(err.outcome(), Some(Outcome::ContextWindowExceeded));
    assert_eq!(err.upstream_status().map(|s| s.as_u16()), Some(400));
}

#[tokio::test]
async fn content_filter_refusal_is_content_policy() {
    let body = r#"{"error":{"message":"The response was filtered","type":null,"param":"prompt","code":"content_filter","status":400}}"#;
    assert_eq!(failure(Reply::json(400, body)).await.outcome(), Some(Outcome::ContentPolicy));
}

#[tokio::test]
async fn a_filtered_completion_is_still_a_success() {
    let server = Server::start().await;
    let body = r#"{"id":"c","object":"chat.completion","created":1,"model":"gpt-4o",
        "choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"content_filter"}],
        "usage":{"prompt_tokens":5,"completion_tokens":0,"total_tokens":5}}"#;
    server.reply(Reply::json(200, body));
    let req = attempt(deployment(&server), RequestFacts::new(), &chat_body());
    let resp = send(&provider(ProviderConfig::default()), req).await.expect("a 200 answer");
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn server_errors_and_bad_credentials() {
    let err = failure(Reply::json(500, r#"{"error":{"message":"The server had an error"}}"#)).await;
    assert_eq!(err.outcome(), Some(Outcome::ServerError));
    let err = failure(Reply::json(503, "<html>unavailable</html>")).await;
    assert_eq!(err.outcome(), Some(Outcome::ServerError));
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-east-secret-0000.","type":"invalid_request_error","code":"invalid_api_key"}}"#;
    let err = failure(Reply::json(401, body)).await;
    assert_eq!(err.outcome(), Some(Outcome::Auth));
    assert!(!err.to_string().contains("sk-east-secret-0000"), "the key is masked: {err}");
}

#[tokio::test]
async fn connection_refused_is_a_connect_failure() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let deployment = Deployment::builder("gpt-4o", "openai/gpt-4o")
        .api_base(format!("http://{addr}/v1"))
        .build()
        .expect("valid deployment");
    let err = route_error(
        send(&provider(ProviderConfig::default()), attempt(deployment, RequestFacts::new(), &chat_body())).await,
    );
    assert_eq!(err.outcome(), Some(Outcome::Connect));
    assert!(err.message().contains("cannot connect"), "{}", err.message());
}

#[tokio::test]
async fn a_reset_after_the_request_was_read_is_a_transport_failure() {
    assert_eq!(failure(Reply::Reset).await.outcome(), Some(Outcome::Transport));
    assert_eq!(failure(Reply::Close).await.outcome(), Some(Outcome::Transport));
}

#[tokio::test]
async fn a_silent_upstream_times_out() {
    let server = Server::start().await;
    server.reply(Reply::Hang);
    let slow = deployment(&server).to_builder().timeout(Duration::from_millis(300)).build().expect("valid");
    let started = Instant::now();
    let err =
        route_error(send(&provider(ProviderConfig::default()), attempt(slow, RequestFacts::new(), &chat_body())).await);
    assert_eq!(err.outcome(), Some(Outcome::Timeout));
    assert!(started.elapsed() < PATIENCE);
    assert!(err.message().contains("300ms"), "{}", err.message());
}

#[tokio::test]
async fn the_call_deadline_caps_the_attempt() {
    let server = Server::start().await;
    server.reply(Reply::Hang);
    let config = ProviderConfig::default().timeout(Duration::from_secs(600));
    let mut req = attempt(deployment(&server), RequestFacts::new(), &chat_body());
    if let Some(ctx) = req.extensions_mut().get_mut::<switchyard_layers::RouteCtx>() {
        ctx.deadline = Some(Instant::now() + Duration::from_millis(300));
    }
    let err = route_error(send(&provider(config), req).await);
    assert_eq!(err.outcome(), Some(Outcome::Timeout));
    assert!(err.message().contains("deadline"), "{}", err.message());
}

#[tokio::test]
async fn an_answer_over_the_size_limit_fails() {
    let server = Server::start().await;
    let big = format!(r#"{{"id":"c","choices":[],"pad":"{}"}}"#, "x".repeat(4096));
    server.reply(Reply::json(200, big));
    let config = ProviderConfig::default().max_response_bytes(1024);
    let err =
        route_error(send(&provider(config), attempt(deployment(&server), RequestFacts::new(), &chat_body())).await);
    assert_eq!(err.outcome(), Some(Outcome::Transport));
    assert!(err.message().contains("1024 bytes"), "{}", err.message());
}

#[tokio::test]
async fn a_deployment_without_a_base_is_misconfigured_not_a_panic() {
    let deployment = Deployment::builder("llama", "hosted_vllm/llama").id("vllm-1").build().expect("valid");
    let err = route_error(
        send(&provider(ProviderConfig::default()), attempt(deployment, RequestFacts::new(), &chat_body())).await,
    );
    assert_eq!(err.outcome(), Some(Outcome::NotFound));
    assert!(err.message().contains("api_base"), "{}", err.message());
}

/// The result of one attempt answered `200 OK` with `body` (and `headers`).
async fn answered_200(headers: Vec<(&'static str, String)>, body: &str) -> Result<String, RouteError> {
    let server = Server::start().await;
    server.reply(Reply::Json { status: 200, headers, body: body.to_owned() });
    let resp =
        send(&provider(ProviderConfig::default()), attempt(deployment(&server), RequestFacts::new(), &chat_body()))
            .await
            .map_err(RouteError::from_boxed)?;
    let bytes = http_body_util::BodyExt::collect(resp.into_body()).await.expect("the body reads").to_bytes();
    Ok(String::from_utf8(bytes.to_vec()).expect("utf-8"))
}

#[tokio::test]
async fn a_200_carrying_an_error_envelope_is_the_failure_it_describes() {
    let auth = r#"{"error":{"message":"Incorrect API key provided: sk-east-secret-0000.","type":"invalid_request_error","code":"invalid_api_key"}}"#;
    let err = answered_200(Vec::new(), auth).await.expect_err("an error envelope is no answer");
    assert_eq!(err.kind(), RouteErrorKind::Upstream);
    assert_eq!(err.outcome(), Some(Outcome::Auth));
    assert_eq!(err.deployment().map(|d| d.as_str()), Some("east"));
    assert!(err.message().contains("Incorrect API key provided"), "{}", err.message());
    assert!(!err.to_string().contains("sk-east-secret-0000"), "the key is masked: {err}");

    for (body, outcome) in [
        (r#"{"error":{"message":"too long","code":"context_length_exceeded"}}"#, Outcome::ContextWindowExceeded),
        (r#"{"error":{"message":"filtered","code":"content_filter"}}"#, Outcome::ContentPolicy),
        (r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#, Outcome::RateLimited),
        (r#"{"error":{"message":"quota","type":"insufficient_quota"}}"#, Outcome::RateLimited),
        (r#"{"error":{"message":"slow down","code":429}}"#, Outcome::RateLimited),
        (r#"{"error":{"message":"slow down","code":"429"}}"#, Outcome::RateLimited),
        (r#"{"error":{"message":"no such model","code":"model_not_found"}}"#, Outcome::NotFound),
        (r#"{"error":{"message":"denied","type":"permission_error"}}"#, Outcome::Auth),
        (r#"{"error":{"message":"bad","code":400}}"#, Outcome::BadRequest),
        (r#"{"error":{"message":"The server had an error"}}"#, Outcome::ServerError),
        (r#"{"error":"model is loading"}"#, Outcome::ServerError),
        (r#"{"error":{"message":"bad","type":"invalid_request_error"},"id":"x"}"#, Outcome::ServerError),
    ] {
        let err = answered_200(Vec::new(), body).await.expect_err(body);
        assert_eq!(err.outcome(), Some(outcome), "{body}");
    }
    let err = answered_200(vec![("retry-after", "7".to_owned())], r#"{"error":{"code":"rate_limit_exceeded"}}"#)
        .await
        .expect_err("rate limited");
    assert_eq!(err.retry_after(), Some(Duration::from_secs(7)));
}

#[tokio::test]
async fn answers_that_also_carry_an_error_member_stay_successes() {
    for body in [
        r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"error":null}"#,
        r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"error":{"message":"partial"}}"#,
        r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1]}],"error":{"message":"x"}}"#,
        r#"{"object":"chat.completion","error":{"message":"odd but an answer"}}"#,
        r#"{"id":"c","error":null}"#,
        r#"{"id":"c","error":""}"#,
    ] {
        answered_200(Vec::new(), body).await.unwrap_or_else(|e| panic!("{body} is an answer: {e}"));
    }
}

#[tokio::test]
async fn a_200_answer_echoing_the_deployments_credentials_reaches_the_client_masked() {
    let body = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant",
        "content":"your key is sk-east-secret-0000, or \u0073k-east-secret-0000, team tenant-secret"},"finish_reason":"stop"}]}"#;
    let server = Server::start().await;
    server.reply(Reply::json(200, body));
    let deployment = deployment(&server)
        .to_builder()
        .param("extra_headers", serde_json::json!({"x-tenant": "tenant-secret"}))
        .build()
        .expect("valid deployment");
    let resp = send(&provider(ProviderConfig::default()), attempt(deployment, RequestFacts::new(), &chat_body()))
        .await
        .expect("a 200 answer");
    let bytes = http_body_util::BodyExt::collect(resp.into_body()).await.expect("the body reads").to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    assert!(!text.contains("sk-east-secret-0000") && !text.contains("tenant-secret"), "{text}");
    let json: serde_json::Value = serde_json::from_slice(&bytes).expect("still JSON");
    assert_eq!(json["choices"][0]["message"]["content"], "your key is ***, or ***, team ***");
}
