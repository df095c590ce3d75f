//! Mid-stream continuation end to end (`router_settings.stream_continuation`), over loopback HTTP
//! through the gateway and the real HTTP provider to mock OpenAI upstreams: a chat stream that
//! breaks after its first text is continued on the group's other deployment and the client reads
//! one well-formed stream; off (the default), it ends with the error event as before.
#![cfg(feature = "gateway")]

use std::{sync::Arc, time::Duration};

use http::StatusCode;
use serde_json::{Value, json};
use switchyard::{
    Config,
    gateway::Gateway,
    services::{
        mock::{MockHandle, MockProfile},
        provider::{HttpProvider, ProviderConfig},
    },
};

#[path = "support/loopback.rs"]
mod loopback;

use loopback::{Answer, gateway, healthy, mock, post_until_broken};

/// A mock whose streams break with an error event after two of their six content chunks.
fn breaking() -> MockHandle {
    mock(MockProfile::builder().chunks(6).stream_error(2, 1.0).build().expect("valid profile"))
}

fn deployment(id: &str, base: &str) -> String {
    format!(
        "  - model_name: gpt\n    litellm_params: {{ model: openai/gpt-4o, api_key: key-{id}, api_base: \"{base}\" }}\n    \
         model_info: {{ id: {id} }}\n"
    )
}

/// A `gpt` group of `a` (on `first`) and `b` (on `second`), with `settings` appended.
fn config(first: &MockHandle, second: &MockHandle, settings: &str) -> String {
    format!("model_list:\n{}{}{settings}", deployment("a", &first.base_url()), deployment("b", &second.base_url()),)
}

const BODY: &str = r#"{"model":"gpt","stream":true,"messages":[{"role":"user","content":"Tell me a story."}]}"#;

/// Posts the streamed chat request until deployment `a` is the one that starts the answer.
async fn started_by_a(origin: &str) -> Answer {
    for _ in 0..40 {
        let answer = post_until_broken(format!("{origin}/v1/chat/completions"), BODY).await;
        assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
        if answer.header("x-switchyard-deployment-id") == "a" {
            return answer;
        }
    }
    panic!("deployment a never started an answer");
}

/// The chunks of a chat stream (every event but `[DONE]`).
fn chunks(answer: &Answer) -> Vec<Value> {
    answer.events().into_iter().map(|(_, data)| data).filter(|d| d != "[DONE]").collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_stream_is_continued_on_the_other_deployment_and_spliced_into_one_stream() {
    let (a, b) = (breaking(), healthy());
    let gw = gateway(&config(&a, &b, "router_settings:\n  stream_continuation: true\n")).await;
    let answer = started_by_a(&gw.origin).await;

    let chunks = chunks(&answer);
    assert!(chunks.iter().all(|c| c.get("error").is_none()), "no error event: {chunks:?}");
    assert_eq!(answer.data().iter().filter(|d| *d == "[DONE]").count(), 1, "one [DONE]");
    assert!(answer.text().ends_with("data: [DONE]\n\n"), "a clean end");
    let id = &chunks[0]["id"];
    assert!(chunks.iter().all(|c| &c["id"] == id && c["model"] == chunks[0]["model"]), "one id and model: {chunks:?}");
    let roles = chunks.iter().filter(|c| c["choices"][0]["delta"].get("role").is_some()).count();
    assert_eq!(roles, 1, "one role chunk: {chunks:?}");
    let finishes = chunks.iter().filter(|c| !c["choices"][0]["finish_reason"].is_null()).count();
    assert_eq!(finishes, 1, "one finish reason");

    // The continuation asked `b` to go on from the text the client already had.
    let sent = b.last_request().expect("b continued the answer").json().expect("JSON");
    let messages = sent["messages"].as_array().expect("messages");
    let last = messages.last().expect("a last message");
    assert_eq!(last["role"], "assistant");
    let partial = last["content"].as_str().expect("the partial text");
    assert!(!partial.is_empty());
    let text = answer.streamed_text();
    assert!(text.starts_with(partial) && text.len() > partial.len(), "{partial:?} then more: {text:?}");
    assert_eq!(messages[0], json!({"role": "user", "content": "Tell me a story."}), "the original request");

    let metrics = loopback::send("GET", format!("{}/metrics", gw.origin), None, &[]).await.text();
    let line = metrics
        .lines()
        .find(|l| l.starts_with("switchyard_stream_continuations_total{") && l.contains("deployment=\"b\""))
        .unwrap_or_else(|| panic!("the continuation is counted: {metrics}"));
    assert!(line.contains("group=\"gpt\""), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_by_default_a_broken_stream_ends_with_the_error_event() {
    let (a, b) = (breaking(), healthy());
    let gw = gateway(&config(&a, &b, "")).await;
    let answer = started_by_a(&gw.origin).await;
    let chunks = chunks(&answer);
    assert!(chunks.last().expect("chunks").get("error").is_some(), "ends with the error event: {chunks:?}");
    assert_eq!(chunks.iter().filter(|c| c.get("error").is_some()).count(), 1);
    assert!(!answer.data().iter().any(|d| d == "[DONE]"), "never a clean end");
    assert!(b.last_request().is_none(), "nobody was asked to continue");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_continuation_cannot_be_made_the_stream_ends_with_one_error_event() {
    // Both deployments break: the continuation on `b` breaks too, and with one continuation
    // allowed the client gets the error event once, after the text of both.
    let (a, b) = (breaking(), breaking());
    let gw = gateway(&config(&a, &b, "router_settings:\n  stream_continuation: {max_continuations: 1}\n")).await;
    let answer = started_by_a(&gw.origin).await;
    let chunks = chunks(&answer);
    assert_eq!(chunks.iter().filter(|c| c.get("error").is_some()).count(), 1, "{chunks:?}");
    assert!(chunks.last().expect("chunks").get("error").is_some());
    assert!(!answer.data().iter().any(|d| d == "[DONE]"));
    let sent = b.last_request().expect("b was asked to continue").json().expect("JSON");
    assert_eq!(sent["messages"].as_array().and_then(|m| m.last()).map(|m| m["role"].clone()), Some(json!("assistant")));
}

#[test]
fn an_unknown_continuation_key_fails_the_load_naming_its_path() {
    let yaml = "model_list: []\nrouter_settings:\n  stream_continuation: {max_continuation: 2}\n";
    let err = Config::from_yaml_str(yaml).expect_err("a typo");
    assert!(err.to_string().contains("router_settings.stream_continuation.max_continuation"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_continuation_may_come_from_an_anthropic_deployment_where_the_partial_text_is_a_prefill() {
    let (a, claude) = (breaking(), healthy());
    let yaml = format!(
        "model_list:\n{}  - model_name: gpt\n    litellm_params: {{ model: anthropic/claude-sonnet-4-5, api_key: key-b, \
         api_base: \"{}\" }}\n    model_info: {{ id: b }}\nrouter_settings:\n  stream_continuation: true\n",
        deployment("a", &a.base_url()),
        claude.origin(),
    );
    let gw = gateway(&yaml).await;
    let answer = started_by_a(&gw.origin).await;
    let chunks = chunks(&answer);
    assert!(chunks.iter().all(|c| c.get("error").is_none()), "no error event: {chunks:?}");
    assert!(chunks.iter().all(|c| c["id"] == chunks[0]["id"] && c["model"] == chunks[0]["model"]), "{chunks:?}");
    assert_eq!(answer.data().iter().filter(|d| *d == "[DONE]").count(), 1);
    let sent = claude.last_request().expect("claude continued").json().expect("JSON");
    let last = sent["messages"].as_array().and_then(|m| m.last()).cloned().expect("a last message");
    assert_eq!(last["role"], "assistant", "Anthropic's prefill: {sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_turns_continuation_on() {
    let (a, b) = (breaking(), healthy());
    let provider = HttpProvider::new(ProviderConfig::default().timeout(Duration::from_secs(10))).expect("provider");
    let config = |settings: &str| Config::from_yaml_str(&config(&a, &b, settings)).expect("valid config");
    let gw = Arc::new(Gateway::builder(config("")).provider(provider).seed(5).build().expect("gateway"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("address"));
    let serving = gw.clone();
    let server = tokio::spawn(async move { serving.serve(listener, std::future::pending()).await });

    let before = started_by_a(&origin).await;
    assert!(chunks(&before).last().expect("chunks").get("error").is_some(), "off: the error event");

    gw.reload(config("router_settings:\n  stream_continuation: {max_continuations: 2}\n")).await.expect("reloaded");
    let after = started_by_a(&origin).await;
    assert!(chunks(&after).iter().all(|c| c.get("error").is_none()), "on after the reload");
    assert_eq!(after.data().iter().filter(|d| *d == "[DONE]").count(), 1);
    server.abort();
}
