//! Vertex AI deployments end to end, over loopback HTTP through the gateway and the real HTTP
//! provider to the mock upstream's Google token endpoint and Vertex routes: Gemini and Claude on
//! Vertex, whole and streamed, one access token for many calls, a refused grant failing over as an
//! auth failure of the deployment, and the service-account key in no answer.
#![cfg(all(feature = "gateway", feature = "vertex"))]

use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde_json::{Value, json};
use switchyard::{
    Config,
    gateway::Gateway,
    services::{
        mock::{MockHandle, MockProfile, MockUpstream},
        provider::{HttpProvider, ProviderConfig},
    },
};
use tokio::sync::oneshot;

const PATIENCE: Duration = Duration::from_secs(20);

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

fn healthy() -> MockHandle {
    MockUpstream::start(MockProfile::builder().build().expect("valid profile")).expect("mock upstream")
}

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

struct Served {
    origin: String,
    _stop: oneshot::Sender<()>,
}

async fn gateway(config: Value) -> Served {
    let config = Config::from_yaml_str(&config.to_string()).expect("valid config");
    let provider = HttpProvider::new(ProviderConfig::default().timeout(Duration::from_secs(10))).expect("provider");
    let gw = Gateway::builder(config).provider(provider).seed(11).build().expect("gateway");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("address"));
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = gw
            .serve(listener, async move {
                let _ = stopped.await;
            })
            .await;
    });
    Served { origin, _stop: stop }
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

struct Answer {
    status: StatusCode,
    body: Bytes,
}

impl Answer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("JSON answer ({e}): {}", self.text()))
    }

    /// The data of each server-sent event.
    fn data(&self) -> Vec<String> {
        self.text()
            .split("\n\n")
            .flat_map(|block| block.lines().filter_map(|l| l.strip_prefix("data: ")).map(str::to_owned))
            .collect()
    }
}

async fn post(url: String, body: &Value) -> Answer {
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let req = Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request");
    let resp = tokio::time::timeout(PATIENCE, client.request(req)).await.expect("in time").expect("answer");
    let (parts, body) = resp.into_parts();
    let body = tokio::time::timeout(PATIENCE, body.collect()).await.expect("in time").expect("body").to_bytes();
    Answer { status: parts.status, body }
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
