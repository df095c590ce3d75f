//! Gemini, Cohere and Bedrock deployments end to end, over loopback HTTP through the gateway and
//! the real HTTP provider to mock upstreams that speak each vendor's wire format (Google's
//! `generateContent` with SSE, Cohere's v2 events, AWS event-stream frames signed with SigV4):
//! chat completions, `/v1/messages` and `/v1/responses` in, whole and streamed, embeddings, error
//! classes, and one fallback chain across four vendors (OpenAI → Anthropic → Gemini → Bedrock).
#![cfg(all(feature = "gateway", feature = "bedrock"))]

use http::StatusCode;
use serde_json::{Value, json};
use switchyard::services::mock::{BedrockAuth, MockHandle, MockProfile};
use switchyard::services::profile::Failure;

#[path = "support/loopback.rs"]
mod loopback;

use loopback::{Answer, gateway, healthy, mock};

fn failing(status: u16) -> MockHandle {
    loopback::failing(StatusCode::from_u16(status).expect("status"))
}

/// A Bedrock mock that accepts SigV4 from `AKIDTEST` in `us-east-1`.
fn bedrock(profile: MockProfile) -> MockHandle {
    let m = mock(profile);
    m.set_bedrock_auth(BedrockAuth::new().access_key_id("AKIDTEST").region("us-east-1"));
    m
}

async fn post(url: String, body: &Value) -> Answer {
    loopback::post(url, &body.to_string(), &[]).await
}

fn deployment(group: &str, params: &str, id: &str) -> String {
    format!("  - model_name: {group}\n    litellm_params: {{ {params} }}\n    model_info: {{ id: {id} }}\n")
}

fn gemini_params(m: &MockHandle) -> String {
    format!("model: gemini/gemini-2.5-flash, api_key: g-key-secret, api_base: \"{}\"", m.origin())
}

fn cohere_params(m: &MockHandle) -> String {
    format!("model: cohere/command-a-03-2025, api_key: co-key-secret, api_base: \"{}\"", m.origin())
}

fn bedrock_params(m: &MockHandle, model: &str) -> String {
    format!(
        "model: bedrock/{model}, aws_access_key_id: AKIDTEST, aws_secret_access_key: bedrock-secret-key, \
         aws_region_name: us-east-1, api_base: \"{}\"",
        m.origin()
    )
}

fn chat(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "stream_options": {"include_usage": true},
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_vendor_answers_chat_completions_whole_and_streamed() {
    let (g, c, b) = (healthy(), healthy(), bedrock(MockProfile::builder().build().expect("profile")));
    let yaml = format!(
        "model_list:\n{}{}{}",
        deployment("gemini", &gemini_params(&g), "g1"),
        deployment("cohere", &cohere_params(&c), "c1"),
        deployment("bedrock", &bedrock_params(&b, "us.anthropic.claude-3-5-sonnet-20241022-v2:0"), "b1"),
    );
    let gw = gateway(&yaml).await;
    for (group, upstream, path) in [
        ("gemini", &g, "/v1beta/models/gemini-2.5-flash:generateContent"),
        ("cohere", &c, "/v2/chat"),
        ("bedrock", &b, "/model/us.anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse"),
    ] {
        let answer = post(format!("{}/v1/chat/completions", gw.origin), &chat(group, false)).await;
        assert_eq!(answer.status, StatusCode::OK, "{group}: {:?}", answer.body);
        let json = answer.json();
        assert_eq!(json["object"], "chat.completion", "{group}");
        assert!(json["choices"][0]["message"]["content"].as_str().is_some_and(|t| !t.is_empty()), "{group}: {json}");
        assert_eq!(json["choices"][0]["finish_reason"], "stop", "{group}");
        assert!(json["usage"]["prompt_tokens"].as_u64().is_some_and(|n| n > 0), "{group}: {json}");
        let seen = upstream.last_request().expect("called");
        assert_eq!(seen.path, path, "{group}");
        let body = String::from_utf8_lossy(&seen.body).into_owned();
        assert!(!body.contains("secret"), "{group}: no credential in the body: {body}");

        let answer = post(format!("{}/v1/chat/completions", gw.origin), &chat(group, true)).await;
        assert_eq!(answer.status, StatusCode::OK, "{group}: {:?}", answer.body);
        assert!(!answer.streamed_text().is_empty(), "{group}: text arrives");
        let events = answer.events();
        assert_eq!(events.last().map(|(_, d)| d), Some(&json!("[DONE]")), "{group}");
        let usage = events.iter().rev().find_map(|(_, c)| c["usage"].is_object().then(|| c["usage"].clone()));
        assert!(usage.is_some_and(|u| u["completion_tokens"].as_u64().is_some_and(|n| n > 0)), "{group}: usage");
    }
    let signed = b.last_request().expect("called");
    let auth = signed.headers["authorization"].to_str().expect("ascii");
    assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTEST/"), "{auth}");
    assert!(auth.contains("/us-east-1/bedrock/aws4_request"), "{auth}");
    assert_eq!(g.last_request().expect("called").headers["x-goog-api-key"], "g-key-secret");
    assert_eq!(c.last_request().expect("called").headers["authorization"], "Bearer co-key-secret");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_call_falls_back_across_four_vendors() {
    let openai = failing(500);
    let claude = failing(529);
    let gemini = failing(503);
    let b = bedrock(MockProfile::builder().build().expect("profile"));
    let yaml = format!(
        "model_list:\n{}{}{}{}router_settings:\n  num_retries: 0\n  fallbacks: [{{\"gpt\": [\"claude\", \"gemini\", \"bedrock\"]}}]\n",
        deployment("gpt", &format!("model: openai/gpt-4o, api_key: k, api_base: \"{}\"", openai.base_url()), "o1"),
        deployment(
            "claude",
            &format!("model: anthropic/claude-sonnet-4-5, api_key: k, api_base: \"{}\"", claude.origin()),
            "a1"
        ),
        deployment("gemini", &gemini_params(&gemini), "g1"),
        deployment("bedrock", &bedrock_params(&b, "amazon.nova-pro-v1:0"), "b1"),
    );
    let gw = gateway(&yaml).await;
    for stream in [false, true] {
        let answer = post(format!("{}/v1/chat/completions", gw.origin), &chat("gpt", stream)).await;
        assert_eq!(answer.status, StatusCode::OK, "stream {stream}: {:?}", answer.body);
        assert_eq!(answer.header("x-switchyard-deployment-id"), "b1");
        assert_eq!(answer.header("x-switchyard-attempted-fallbacks"), "3");
        if stream {
            assert!(!answer.streamed_text().is_empty());
        } else {
            assert_eq!(answer.json()["object"], "chat.completion");
        }
    }
    for m in [&openai, &claude, &gemini] {
        assert_eq!(m.stats().failures, 2, "each vendor failed once per call");
    }
    // The Anthropic front door rides the same chain and is answered in its own dialect.
    let body = json!({"model": "gpt", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]});
    let answer = post(format!("{}/v1/messages", gw.origin), &body).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    assert_eq!(answer.json()["type"], "message");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_front_doors_reach_every_vendor() {
    let (g, c, b) = (healthy(), healthy(), bedrock(MockProfile::builder().build().expect("profile")));
    let yaml = format!(
        "model_list:\n{}{}{}",
        deployment("gemini", &gemini_params(&g), "g1"),
        deployment("cohere", &cohere_params(&c), "c1"),
        deployment("bedrock", &bedrock_params(&b, "meta.llama3-70b-instruct-v1:0"), "b1"),
    );
    let gw = gateway(&yaml).await;
    for group in ["gemini", "cohere", "bedrock"] {
        let body = json!({"model": group, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]});
        let answer = post(format!("{}/v1/messages", gw.origin), &body).await;
        assert_eq!(answer.status, StatusCode::OK, "{group}: {:?}", answer.body);
        assert_eq!(answer.json()["type"], "message", "{group}");
        let mut streamed = body.clone();
        streamed["stream"] = json!(true);
        let answer = post(format!("{}/v1/messages", gw.origin), &streamed).await;
        let names: Vec<String> = answer.events().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names.first().map(String::as_str), Some("message_start"), "{group}: {names:?}");
        assert_eq!(names.last().map(String::as_str), Some("message_stop"), "{group}: {names:?}");

        let body = json!({"model": group, "input": "hi"});
        let answer = post(format!("{}/v1/responses", gw.origin), &body).await;
        assert_eq!(answer.status, StatusCode::OK, "{group}: {:?}", answer.body);
        assert_eq!(answer.json()["status"], "completed", "{group}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_reach_gemini_cohere_and_bedrock() {
    let (g, c, b) = (healthy(), healthy(), bedrock(MockProfile::builder().build().expect("profile")));
    let yaml = format!(
        "model_list:\n{}{}{}",
        deployment(
            "g-embed",
            &format!("model: gemini/text-embedding-004, api_key: k, api_base: \"{}\"", g.origin()),
            "ge"
        ),
        deployment("c-embed", &format!("model: cohere/embed-v4.0, api_key: k, api_base: \"{}\"", c.origin()), "ce"),
        deployment("b-embed", &bedrock_params(&b, "amazon.titan-embed-text-v2:0"), "be"),
    );
    let gw = gateway(&yaml).await;
    for (group, inputs) in [("g-embed", json!(["a", "b"])), ("c-embed", json!(["a", "b"])), ("b-embed", json!("a"))] {
        let answer = post(format!("{}/v1/embeddings", gw.origin), &json!({"model": group, "input": inputs})).await;
        assert_eq!(answer.status, StatusCode::OK, "{group}: {:?}", answer.body);
        let json = answer.json();
        assert_eq!(json["object"], "list", "{group}");
        let n = if inputs.is_array() { 2 } else { 1 };
        assert_eq!(json["data"].as_array().map(Vec::len), Some(n), "{group}: {json}");
        assert!(json["data"][0]["embedding"].as_array().is_some_and(|e| !e.is_empty()), "{group}");
    }
    // Titan embeds one input per call: several are refused naming `input`, nothing is sent.
    let calls = b.requests();
    let answer = post(format!("{}/v1/embeddings", gw.origin), &json!({"model": "b-embed", "input": ["a", "b"]})).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(answer.json()["error"]["message"].as_str().is_some_and(|m| m.contains("input")));
    assert_eq!(b.requests(), calls);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vendor_errors_are_classified_and_credentials_never_leak() {
    // A rate limit on each vendor comes back as a 429, and the vendor's key never in the answer.
    let (g, c, b) = (
        failing(429),
        failing(429),
        bedrock(MockProfile::builder().fail(Failure::RateLimited, 1.0).build().expect("profile")),
    );
    let yaml = format!(
        "model_list:\n{}{}{}router_settings:\n  num_retries: 0\n",
        deployment("gemini", &gemini_params(&g), "g1"),
        deployment("cohere", &cohere_params(&c), "c1"),
        deployment("bedrock", &bedrock_params(&b, "amazon.nova-pro-v1:0"), "b1"),
    );
    let gw = gateway(&yaml).await;
    for group in ["gemini", "cohere", "bedrock"] {
        let answer = post(format!("{}/v1/chat/completions", gw.origin), &chat(group, false)).await;
        assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS, "{group}: {:?}", answer.body);
        let text = String::from_utf8_lossy(&answer.body);
        assert!(!text.contains("secret"), "{group}: {text}");
    }
    // Gemini's RetryInfo (the mock's default 60 s) becomes the client's Retry-After.
    let answer = post(format!("{}/v1/chat/completions", gw.origin), &chat("gemini", false)).await;
    let wait: u64 = answer.header("retry-after").parse().unwrap_or(0);
    assert!(wait >= 1, "a wait from Gemini's RetryInfo: {:?}", answer.headers);
}
