//! Vertex AI deployments end to end, over loopback HTTP through the gateway and the real HTTP
//! provider to the mock upstream's Google token endpoint and Vertex routes: Gemini and Claude on
//! Vertex, whole and streamed, one access token for many calls, a refused grant failing over as an
//! auth failure of the deployment, and the service-account key in no answer.
#![cfg(all(feature = "gateway", feature = "vertex"))]

use http::StatusCode;
use loopback::{Answer, Served, healthy};
use serde_json::{Value, json};
use switchyard::{Config, services::mock::MockHandle};

#[path = "support/loopback.rs"]
mod loopback;

/// The test-only service-account key of `tests/fixtures` with the mock's `token_uri`, as the JSON
/// text a `vertex_credentials` holds.
fn service_account(mock: &MockHandle) -> String {
    let fixture = include_str!("fixtures/vertex-test-service-account.json");
    let mut key: Value = serde_json::from_str(fixture).expect("the fixture is JSON");
    key["token_uri"] = Value::String(mock.token_uri());
    key.to_string()
}

/// The base64 body of the fixture's private key, which no answer may show.
fn private_key_line() -> String {
    let fixture: Value =
        serde_json::from_str(include_str!("fixtures/vertex-test-service-account.json")).expect("the fixture is JSON");
    let pem = fixture["private_key"].as_str().expect("a PEM key");
    pem.lines().nth(1).expect("a base64 line").to_owned()
}

async fn gateway(config: Value) -> Served {
    loopback::serve(Config::from_yaml_str(&config.to_string()).expect("valid config"), 11).await
}

/// A `vertex_ai/{model}` deployment of group `group` calling `mock` with `key`.
fn vertex(group: &str, model: &str, mock: &MockHandle, key: &str, id: &str) -> Value {
    json!({
        "model_name": group,
        "litellm_params": {
            "model": format!("vertex_ai/{model}"),
            "vertex_project": "switchyard-test",
            "vertex_location": "us-central1",
            "vertex_credentials": key,
            "api_base": mock.origin(),
        },
        "model_info": { "id": id },
    })
}

async fn post(url: String, body: &Value) -> Answer {
    loopback::post(url, &body.to_string(), &[]).await
}

fn chat(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "stream_options": {"include_usage": true},
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_and_claude_on_vertex_answer_whole_and_streamed_with_one_token() {
    let mock = healthy();
    let key = service_account(&mock);
    let gw = gateway(json!({ "model_list": [
        vertex("gemini", "gemini-2.5-flash", &mock, &key, "vg"),
        vertex("claude", "claude-sonnet-4-5@20250929", &mock, &key, "vc"),
    ]}))
    .await;
    let secret = private_key_line();
    for (group, publisher, method) in [("gemini", "google", "generateContent"), ("claude", "anthropic", "rawPredict")] {
        let answer = post(format!("{}/v1/chat/completions", gw.origin), &chat(group, false)).await;
        assert_eq!(answer.status, StatusCode::OK, "{group}: {}", answer.text());
        let json = answer.json();
        assert_eq!(json["object"], "chat.completion", "{group}");
        assert!(json["choices"][0]["message"]["content"].as_str().is_some_and(|t| !t.is_empty()), "{group}: {json}");
        assert!(json["usage"]["prompt_tokens"].as_u64().is_some_and(|n| n > 0), "{group}: {json}");
        assert!(!answer.text().contains(&secret), "{group}: no key in the answer");
        let seen = mock.last_request().expect("called");
        assert!(
            seen.path.starts_with("/v1/projects/switchyard-test/locations/us-central1/publishers/"),
            "{}",
            seen.path
        );
        assert!(seen.path.contains(&format!("/publishers/{publisher}/models/")), "{}", seen.path);
        assert!(seen.path.ends_with(&format!(":{method}")), "{}", seen.path);
        let bearer = seen.headers["authorization"].to_str().expect("ascii");
        assert!(bearer.starts_with("Bearer ya29.mock-"), "{bearer}");
        let body = String::from_utf8_lossy(&seen.body).into_owned();
        assert!(!body.contains("vertex_") && !body.contains(&secret), "{group}: no parameter in the body: {body}");

        let answer = post(format!("{}/v1/chat/completions", gw.origin), &chat(group, true)).await;
        assert_eq!(answer.status, StatusCode::OK, "{group}: {}", answer.text());
        let data = answer.data();
        assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{group}");
        let text: String = data
            .iter()
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
            .collect();
        assert!(!text.is_empty(), "{group}: text arrives");
        assert!(!answer.text().contains(&secret), "{group}: no key in the stream");
        assert!(mock.last_request().expect("called").path.contains(&format!(":stream{}", capitalized(method))));
    }
    assert_eq!(mock.stats().token_requests, 1, "one access token for every call of one credential");
}

fn capitalized(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_on_vertex_serves_the_messages_front_door() {
    let mock = healthy();
    let key = service_account(&mock);
    let gw =
        gateway(json!({ "model_list": [vertex("claude", "claude-sonnet-4-5@20250929", &mock, &key, "vc")] })).await;
    let messages = json!({"model": "claude", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]});
    let answer = post(format!("{}/v1/messages", gw.origin), &messages).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.json()["type"], "message");
    let sent = mock.last_request().expect("called").json().expect("JSON");
    assert_eq!(sent["anthropic_version"], "vertex-2023-10-16");
    assert_eq!(sent.get("model"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_grant_is_an_auth_failure_and_the_call_falls_back() {
    let refusing = healthy();
    refusing.refuse_tokens(true);
    let fallback = healthy();
    let (bad_key, good_key) = (service_account(&refusing), service_account(&fallback));
    let gw = gateway(json!({
        "model_list": [
            vertex("primary", "gemini-2.5-flash", &refusing, &bad_key, "v-refused"),
            vertex("backup", "gemini-2.5-flash", &fallback, &good_key, "v-backup"),
        ],
        "router_settings": { "fallbacks": [{ "primary": ["backup"] }] },
    }))
    .await;
    let answer = post(format!("{}/v1/chat/completions", gw.origin), &chat("primary", false)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(refusing.requests(), 0, "nothing is sent without a token");
    assert!(refusing.stats().token_requests >= 1);
    assert_eq!(fallback.stats().requests, 1);

    // Without a fallback the client sees the deployment's credentials refused (a gateway error,
    // not its own), with no key in it.
    let gw =
        gateway(json!({ "model_list": [vertex("only", "gemini-2.5-flash", &refusing, &bad_key, "v-only")] })).await;
    let answer = post(format!("{}/v1/chat/completions", gw.origin), &chat("only", false)).await;
    assert_eq!(answer.status, StatusCode::BAD_GATEWAY, "{}", answer.text());
    assert_eq!(answer.json()["error"]["code"], "upstream_auth_error");
    let text = answer.text();
    assert!(!text.contains(&private_key_line()) && !text.contains("PRIVATE KEY"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_on_vertex_answer_openais_list_with_usage() {
    let mock = healthy();
    let key = service_account(&mock);
    let gw = gateway(json!({ "model_list": [
        vertex("embed", "text-embedding-005", &mock, &key, "ve"),
        vertex("gemini-embed", "gemini-embedding-001", &mock, &key, "vge"),
    ]}))
    .await;
    let body = json!({"model": "embed", "input": ["hello there", "general kenobi"], "dimensions": 8,
        "task_type": "SEMANTIC_SIMILARITY"});
    let answer = post(format!("{}/v1/embeddings", gw.origin), &body).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let json = answer.json();
    assert_eq!(json["object"], "list");
    assert_eq!(json["data"].as_array().map(Vec::len), Some(2));
    assert_eq!(json["data"][0]["embedding"].as_array().map(Vec::len), Some(8));
    // One token per four bytes in the mock: 11 bytes -> 3, 14 bytes -> 4.
    assert_eq!(json["usage"]["prompt_tokens"], 7, "{json}");
    let seen = mock.last_request().expect("called");
    assert_eq!(
        seen.path,
        "/v1/projects/switchyard-test/locations/us-central1/publishers/google/models/text-embedding-005:predict"
    );
    let sent = seen.json().expect("JSON");
    assert_eq!(sent["instances"][1], json!({"content": "general kenobi", "task_type": "SEMANTIC_SIMILARITY"}));
    assert_eq!(sent["parameters"], json!({"outputDimensionality": 8}));

    let two = json!({"model": "gemini-embed", "input": ["a", "b"]});
    let refused = post(format!("{}/v1/embeddings", gw.origin), &two).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text());
    assert!(refused.text().contains("input"), "{}", refused.text());
    assert_eq!(mock.stats().token_requests, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_tokens_upstream_asks_claude_and_gemini_on_vertex() {
    let mock = healthy();
    let key = service_account(&mock);
    let gw = gateway(json!({
        "model_list": [
            vertex("claude", "claude-sonnet-4-5@20250929", &mock, &key, "vc"),
            vertex("gemini", "gemini-2.5-flash", &mock, &key, "vg"),
        ],
        "general_settings": { "count_tokens": "upstream" },
    }))
    .await;
    let body = |model: &str| json!({"model": model, "max_tokens": 64, "system": "abcdefgh", "messages": [{"role": "user", "content": "abcd"}]});
    let answer = post(format!("{}/v1/messages/count_tokens", gw.origin), &body("claude")).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    // The mock's Anthropic counter: "abcdefgh" 2, "user" 1, "abcd" 1.
    assert_eq!(answer.json(), json!({"input_tokens": 4}));
    let seen = mock.last_request().expect("asked upstream");
    assert!(seen.path.ends_with("/publishers/anthropic/models/count-tokens:rawPredict"), "{}", seen.path);
    assert_eq!(seen.json().expect("JSON")["model"], "claude-sonnet-4-5");

    let answer = post(format!("{}/v1/messages/count_tokens", gw.origin), &body("gemini")).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    // The mock's countTokens: 12 bytes of text, 3 tokens.
    assert_eq!(answer.json(), json!({"input_tokens": 3}));
    assert!(mock.last_request().expect("asked upstream").path.ends_with("/models/gemini-2.5-flash:countTokens"));
    assert_eq!(mock.requests(), 2);
}

/// Marks the process [`application_default_credentials_child_call`] runs in as the child of
/// [`application_default_credentials_are_read_from_google_application_credentials`], and names
/// the mock it calls.
const ADC_CHILD_MOCK: &str = "SWITCHYARD_TEST_VERTEX_ADC_MOCK";

/// Application Default Credentials: a deployment without `vertex_credentials` gets its token from
/// the key file `GOOGLE_APPLICATION_CREDENTIALS` names. The variable is the process's (the
/// workspace forbids `unsafe`, so no `set_var`): this test runs its own binary again, filtered to
/// the child test below, with the variable pointing at a key whose `token_uri` is this process's
/// mock, and checks that the child's call succeeded and went through the mock's token endpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn application_default_credentials_are_read_from_google_application_credentials() {
    let mock = healthy();
    let path = std::env::temp_dir().join(format!("switchyard-vertex-adc-{}.json", std::process::id()));
    std::fs::write(&path, service_account(&mock)).expect("a temporary key file");
    let exe = std::env::current_exe().expect("the test binary");
    let mut child = std::process::Command::new(exe);
    child
        .args(["application_default_credentials_child_call", "--exact", "--nocapture", "--test-threads=1"])
        .env("GOOGLE_APPLICATION_CREDENTIALS", &path)
        .env(ADC_CHILD_MOCK, mock.origin())
        .env_remove("VERTEXAI_PROJECT")
        .env_remove("VERTEXAI_LOCATION");
    // The mock serves on this runtime while the child runs.
    let output = tokio::task::spawn_blocking(move || child.output()).await.expect("joined").expect("the child runs");
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "child failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("1 passed"), "the child test ran: {stdout}");
    assert_eq!(mock.stats().token_requests, 1, "the token came from the key's token_uri: the mock");
    assert_eq!(mock.requests(), 1, "one Vertex AI call");
    let seen = mock.last_request().expect("called");
    assert!(seen.headers["authorization"].to_str().expect("ascii").starts_with("Bearer ya29.mock-"));
}

/// The child half of
/// [`application_default_credentials_are_read_from_google_application_credentials`]: outside that
/// test's child process (no [`ADC_CHILD_MOCK`]) it has nothing to call and returns at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn application_default_credentials_child_call() {
    let Ok(origin) = std::env::var(ADC_CHILD_MOCK) else {
        return;
    };
    let gw = gateway(json!({ "model_list": [{
        "model_name": "adc",
        "litellm_params": {
            "model": "vertex_ai/gemini-2.5-flash",
            "vertex_project": "switchyard-test",
            "vertex_location": "us-central1",
            "api_base": origin,
        },
    }]}))
    .await;
    let answer = post(format!("{}/v1/chat/completions", gw.origin), &chat("adc", false)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.json()["object"], "chat.completion");
}
