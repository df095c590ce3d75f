//! Vertex AI deployments against the mock upstream's token endpoint and Vertex routes: the URL and
//! body per model family, the access token fetched once per credential and sent as a bearer, a
//! refused grant failing the attempt as auth on the deployment, the key in no answer, embeddings
//! through `:predict`, token counts through Claude's and Gemini's counters, and partner models
//! refused by name.

use serde_json::{Value, json};
use switchyard_layers::{Deployment, Outcome, RequestFacts, Usage, ctx::Endpoint};
use switchyard_services::{
    mock::{MockHandle, MockProfile, MockUpstream},
    profile::Failure,
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
async fn a_key_file_path_is_read_once() {
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
    let _ = std::fs::remove_file(path);
}

fn embedding() -> RequestFacts {
    RequestFacts::new().endpoint(Endpoint::Embedding)
}

#[tokio::test]
async fn embeddings_are_a_predict_call_answered_with_the_summed_token_counts() {
    let mock = mock();
    let key = service_account(&mock);
    let provider = provider(ProviderConfig::default());
    let d = vertex(&mock, "text-embedding-005", &key);
    let body = json!({
        "model": "embed", "input": ["What is a router?", "A tower of layers."], "dimensions": 16,
        "task_type": "RETRIEVAL_DOCUMENT", "title": "Switchyard", "encoding_format": "float",
    });
    let answer = send(&provider, attempt(d, embedding(), &body)).await.expect("an answer");
    let usage = answer.body().usage();
    let (text, error, _) = drain(answer.into_body()).await;
    assert!(error.is_none(), "{error:?}: {text}");

    let sent = mock.last_request().expect("recorded");
    assert_eq!(
        sent.path,
        "/v1/projects/switchyard-test/locations/europe-west4/publishers/google/models/text-embedding-005:predict"
    );
    assert!(sent.headers["authorization"].to_str().expect("ascii").starts_with("Bearer ya29.mock-"));
    assert_eq!(
        sent.json().expect("JSON"),
        json!({
            "instances": [
                {"content": "What is a router?", "task_type": "RETRIEVAL_DOCUMENT", "title": "Switchyard"},
                {"content": "A tower of layers.", "task_type": "RETRIEVAL_DOCUMENT", "title": "Switchyard"},
            ],
            "parameters": {"outputDimensionality": 16},
        })
    );
    let list: Value = serde_json::from_str(&text).expect("an embeddings list");
    assert_eq!(list["object"], "list");
    assert_eq!(list["model"], "text-embedding-005");
    let data = list["data"].as_array().expect("data");
    assert_eq!(data.len(), 2);
    assert_eq!(data[1]["index"], 1);
    assert_eq!(data[0]["embedding"].as_array().map(Vec::len), Some(16));
    // The mock counts one token per four bytes: 17 bytes -> 5, 18 bytes -> 5.
    assert_eq!(list["usage"], json!({"prompt_tokens": 10, "total_tokens": 10}));
    assert_eq!(usage, Some(Usage::new(10, 0)), "the usage budgets and cost read");
}

#[tokio::test]
async fn gemini_embedding_takes_one_text_and_more_are_refused_naming_input_before_any_call() {
    let mock = mock();
    let key = service_account(&mock);
    let provider = provider(ProviderConfig::default());
    let d = vertex(&mock, "gemini-embedding-001", &key);
    let one = send(&provider, attempt(d.clone(), embedding(), &json!({"model": "e", "input": "one text"})))
        .await
        .expect("an answer");
    let (text, error, _) = drain(one.into_body()).await;
    assert!(error.is_none(), "{error:?}: {text}");
    assert!(mock.last_request().expect("recorded").path.ends_with("/models/gemini-embedding-001:predict"));

    let two = json!({"model": "e", "input": ["one", "two"]});
    let err = route_error(send(&provider, attempt(d, embedding(), &two)).await);
    assert_eq!(err.outcome(), None, "the request's fault, not the deployment's: {err}");
    assert!(err.to_string().contains("`input`") && err.to_string().contains("gemini-embedding-001"), "{err}");
    assert_eq!(mock.requests(), 1, "nothing sent for the refused request");
}

#[tokio::test]
async fn an_upstream_embedding_failure_is_classified_as_googles_errors_are() {
    let mock = MockUpstream::start(MockProfile::builder().fail(Failure::RateLimited, 1.0).build().expect("a profile"))
        .expect("a loopback port");
    let key = service_account(&mock);
    let provider = provider(ProviderConfig::default());
    let d = vertex(&mock, "text-embedding-005", &key);
    let err = route_error(send(&provider, attempt(d, embedding(), &json!({"model": "e", "input": "x"}))).await);
    assert_eq!(err.outcome(), Some(Outcome::RateLimited), "{err}");
    assert!(err.retry_after().is_some(), "RetryInfo's retryDelay is read: {err}");
}

#[tokio::test]
async fn token_counts_go_to_claudes_counter_and_geminis_count_tokens() {
    let mock = mock();
    let key = service_account(&mock);
    let provider = provider(ProviderConfig::default());
    let count = || RequestFacts::new().endpoint(Endpoint::CountTokens);
    let body = json!({
        "model": "claude", "system": "abcdefgh", "messages": [{"role": "user", "content": "abcd"}],
        "max_tokens": 64, "temperature": 0.5,
    });

    let claude = vertex(&mock, "claude-sonnet-4-5@20250929", &key);
    let answer = send(&provider, attempt(claude, count(), &body)).await.expect("a count");
    let (text, error, _) = drain(answer.into_body()).await;
    assert!(error.is_none(), "{error:?}: {text}");
    // The mock counts a token per four bytes of text: "abcdefgh" 2, "user" 1, "abcd" 1.
    assert_eq!(serde_json::from_str::<Value>(&text).expect("JSON"), json!({"input_tokens": 4}));
    let sent = mock.last_request().expect("recorded");
    assert_eq!(
        sent.path,
        "/v1/projects/switchyard-test/locations/europe-west4/publishers/anthropic/models/count-tokens:rawPredict"
    );
    let sent = sent.json().expect("JSON");
    assert_eq!(sent["model"], "claude-sonnet-4-5", "named without its version");
    assert!(sent.get("max_tokens").is_none() && sent.get("temperature").is_none(), "content only: {sent}");
    assert!(sent.get("anthropic_version").is_none(), "{sent}");

    let gemini = vertex(&mock, "gemini-2.5-flash", &key);
    let answer = send(&provider, attempt(gemini, count(), &body)).await.expect("a count");
    let (text, error, _) = drain(answer.into_body()).await;
    assert!(error.is_none(), "{error:?}: {text}");
    let sent = mock.last_request().expect("recorded");
    assert!(sent.path.ends_with("/publishers/google/models/gemini-2.5-flash:countTokens"), "{}", sent.path);
    assert_eq!(
        sent.json().expect("JSON"),
        json!({
            "contents": [{"role": "user", "parts": [{"text": "abcd"}]}],
            "systemInstruction": {"parts": [{"text": "abcdefgh"}]},
        })
    );
    // "abcd" and "abcdefgh": 12 bytes, 3 tokens.
    assert_eq!(serde_json::from_str::<Value>(&text).expect("JSON"), json!({"input_tokens": 3}));

    let embedder = vertex(&mock, "text-embedding-005", &key);
    let err = route_error(send(&provider, attempt(embedder, count(), &body)).await);
    assert!(err.to_string().contains("has no token counter"), "{err}");
    assert_eq!(err.outcome(), None, "the request's fault: {err}");
    assert_eq!(mock.stats().token_requests, 1);
}

#[tokio::test]
async fn partner_models_other_than_claude_are_refused_naming_the_model_and_nothing_is_sent() {
    let mock = mock();
    let key = service_account(&mock);
    let provider = provider(ProviderConfig::default());
    for model in ["meta/llama-3.3-70b-instruct-maas", "mistral-large-2411@001"] {
        let err =
            route_error(send(&provider, attempt(vertex(&mock, model, &key), RequestFacts::new(), &chat_body())).await);
        assert_eq!(err.outcome(), Some(Outcome::NotFound), "the deployment is misconfigured: {err}");
        let text = err.to_string();
        assert!(
            text.contains(&format!("`{model}`")) && text.contains("gemini-*") && text.contains("claude-*"),
            "{text}"
        );
    }
    assert_eq!(mock.requests(), 0);
    assert_eq!(mock.stats().token_requests, 0, "no token is fetched for a call that cannot be made");
}
