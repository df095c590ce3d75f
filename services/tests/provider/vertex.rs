//! Vertex AI deployments against the mock upstream's token endpoint and Vertex routes: the URL and
//! body per model family, the access token fetched once per credential and sent as a bearer, a
//! refused grant failing the attempt as auth on the deployment, and the key in no answer.

use serde_json::{Value, json};
use switchyard_layers::{Deployment, Outcome, RequestFacts, ctx::Endpoint};
use switchyard_services::{
    mock::{MockHandle, MockProfile, MockUpstream},
    provider::ProviderConfig,
};

use super::support::{attempt, chat_body, data_events, drain, provider, route_error, send, streaming};

/// The test-only service-account key of `tests/fixtures`, its `token_uri` the mock's.
fn service_account(mock: &MockHandle) -> String {
    let fixture = include_str!("../../../tests/fixtures/vertex-test-service-account.json");
    let mut key: Value = serde_json::from_str(fixture).expect("the fixture is JSON");
    key["token_uri"] = Value::String(mock.token_uri());
    key.to_string()
}

fn mock() -> MockHandle {
    MockUpstream::start(MockProfile::builder().chunks(3).build().expect("a profile")).expect("a loopback port")
}

fn vertex(mock: &MockHandle, model: &str, credentials: &str) -> Deployment {
    Deployment::builder("g", format!("vertex_ai/{model}"))
        .id("vertex-1")
        .api_base(mock.origin())
        .param("vertex_project", "switchyard-test".into())
        .param("vertex_location", "europe-west4".into())
        .param("vertex_credentials", credentials.into())
        .build()
        .expect("valid deployment")
}

#[tokio::test]
async fn gemini_on_vertex_is_called_with_one_cached_access_token() {
    let mock = mock();
    let key = service_account(&mock);
    let provider = provider(ProviderConfig::default());
    let d = vertex(&mock, "gemini-2.5-flash", &key);

    let whole = send(&provider, attempt(d.clone(), RequestFacts::new(), &chat_body())).await.expect("an answer");
    let (text, error, _) = drain(whole.into_body()).await;
    assert!(error.is_none(), "{error:?}");
    let answer: Value = serde_json::from_str(&text).expect("a chat completion");
    assert_eq!(answer["object"], "chat.completion");
    let sent = mock.last_request().expect("recorded");
    assert_eq!(
        sent.path,
        "/v1/projects/switchyard-test/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent"
    );
    let bearer = sent.headers.get("authorization").and_then(|v| v.to_str().ok()).expect("a bearer");
    assert!(bearer.starts_with("Bearer ya29.mock-"), "{bearer}");
    assert!(sent.headers.get("x-goog-api-key").is_none());
    let body = sent.json().expect("JSON");
    assert!(body.get("contents").is_some() && body.get("vertex_credentials").is_none(), "{body}");

    let streamed = send(&provider, attempt(d, streaming(), &chat_body())).await.expect("a stream");
    let (text, error, _) = drain(streamed.into_body()).await;
    assert!(error.is_none(), "{error:?}");
    assert!(!data_events(&text).is_empty());
    let sent = mock.last_request().expect("recorded");
    assert!(sent.path.ends_with("gemini-2.5-flash:streamGenerateContent"), "{}", sent.path);
    assert_eq!(sent.query.as_deref(), Some("alt=sse"));
    assert_eq!(sent.headers.get("authorization").and_then(|v| v.to_str().ok()), Some(bearer));
    assert_eq!(mock.stats().token_requests, 1, "one token, reused");
}

#[tokio::test]
async fn claude_on_vertex_takes_messages_without_model_and_with_the_vertex_version() {
    let mock = mock();
    let key = service_account(&mock);
    let provider = provider(ProviderConfig::default());
    let d = vertex(&mock, "claude-sonnet-4-5@20250929", &key);

    let whole = send(&provider, attempt(d.clone(), RequestFacts::new(), &chat_body())).await.expect("an answer");
    let (text, error, _) = drain(whole.into_body()).await;
    assert!(error.is_none(), "{error:?}: {text}");
    let answer: Value = serde_json::from_str(&text).expect("a chat completion");
    assert_eq!(answer["choices"][0]["message"]["role"], "assistant");
    let sent = mock.last_request().expect("recorded");
    assert_eq!(
        sent.path,
        "/v1/projects/switchyard-test/locations/europe-west4/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
    );
    let body = sent.json().expect("JSON");
    assert_eq!(body.get("model"), None);
    assert_eq!(body["anthropic_version"], "vertex-2023-10-16");
    assert!(sent.headers.get("anthropic-version").is_none() && sent.headers.get("x-api-key").is_none());

    let messages =
        json!({"model": "claude", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}], "stream": true});
    let facts = RequestFacts::new().streaming(true).endpoint(Endpoint::Messages);
    let streamed = send(&provider, attempt(d, facts, &messages)).await.expect("a stream");
    let (text, error, _) = drain(streamed.into_body()).await;
    assert!(error.is_none(), "{error:?}");
    assert!(text.contains("message_stop"), "{text}");
    assert!(mock.last_request().expect("recorded").path.ends_with(":streamRawPredict"));
    assert_eq!(mock.stats().token_requests, 1);
}

#[tokio::test]
async fn a_refused_grant_is_an_auth_failure_of_the_deployment_and_nothing_is_sent() {
    let mock = mock();
    mock.refuse_tokens(true);
    let key = service_account(&mock);
    let provider = provider(ProviderConfig::default());
    let err = route_error(
        send(&provider, attempt(vertex(&mock, "gemini-2.5-flash", &key), RequestFacts::new(), &chat_body())).await,
    );
    assert_eq!(err.outcome(), Some(Outcome::Auth));
    assert_eq!(err.deployment().map(ToString::to_string).as_deref(), Some("vertex-1"));
    assert!(err.to_string().contains("access token"), "{err}");
    assert!(!err.to_string().contains("PRIVATE KEY"), "{err}");
    assert_eq!(mock.requests(), 0, "no call without a token");
    assert!(mock.stats().token_requests >= 1);
}

#[tokio::test]
async fn a_key_file_path_is_read_once_and_embeddings_are_refused() {
    let mock = mock();
    let path = std::env::temp_dir().join(format!("switchyard-vertex-test-{}.json", std::process::id()));
    std::fs::write(&path, service_account(&mock)).expect("a temporary key file");
    let provider = provider(ProviderConfig::default());
    let d = vertex(&mock, "gemini-2.5-flash", path.to_str().expect("a UTF-8 path"));
    for _ in 0..2 {
        let answer = send(&provider, attempt(d.clone(), RequestFacts::new(), &chat_body())).await.expect("an answer");
        assert!(answer.status().is_success());
    }
    assert_eq!(mock.stats().token_requests, 1);
    let embed = RequestFacts::new().endpoint(Endpoint::Embedding);
    let err = route_error(send(&provider, attempt(d, embed, &json!({"model": "e", "input": "hi"}))).await);
    assert!(err.to_string().contains("embeddings"), "{err}");
    let _ = std::fs::remove_file(path);
}
