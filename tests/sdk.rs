//! The agent front doors with the official Python SDKs as clients: `anthropic` on `/v1/messages`
//! and `openai` on `/v1/responses` and `/v1/chat/completions`, through a loopback gateway and the
//! real HTTP provider to mock upstreams, streamed and not. Each scenario runs a short script from
//! `tests/sdk/` with the interpreter of the virtualenv that `scripts/test` makes
//! (`SWITCHYARD_SDK_PYTHON`) and asserts on the JSON summary it prints: what the SDK parsed, and
//! the requests it put on the wire, which a passthrough must deliver unchanged but for `model`.
#![cfg(feature = "gateway")]

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use http::StatusCode;
use loopback::{Served, healthy, mock};
use serde_json::Value;
use switchyard::{
    Config,
    services::mock::{MockHandle, MockProfile},
};

#[path = "support/loopback.rs"]
mod loopback;

/// The gateway's master key, which the SDKs present as their API key.
const MASTER_KEY: &str = "sk-test-master";
/// Bound on one script; each also stops itself after 60 s.
const PATIENCE: Duration = Duration::from_secs(90);
/// The betas `anthropic_stream.py` asks for.
const BETA: &str = "interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14";

async fn gateway(model_list: &str, router_settings: &str) -> Served {
    let yaml = format!(
        "model_list:\n{model_list}router_settings:\n  num_retries: 0\n{router_settings}\
         general_settings: {{ master_key: {MASTER_KEY} }}\n"
    );
    loopback::serve(Config::from_yaml_str(&yaml).expect("valid config"), 5).await
}

fn deployment(group: &str, model: &str, id: &str, base: &str) -> String {
    format!(
        "  - model_name: {group}\n    litellm_params: {{ model: {model}, api_key: key-{id}, api_base: \"{base}\" }}\n    \
         model_info: {{ id: {id} }}\n"
    )
}

/// The virtualenv's interpreter; a run without it fails rather than passing untested.
fn sdk_python() -> PathBuf {
    std::env::var_os("SWITCHYARD_SDK_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "SWITCHYARD_SDK_PYTHON is unset: run scripts/test, which installs the pinned anthropic and openai \
             SDKs in target/sdk-venv and sets it, or set it to a Python that has them"
        )
    })
}

/// Runs `tests/sdk/<script>` with `args` against the gateway and returns the JSON summary it
/// prints. The SDKs see no `ANTHROPIC_*` or `OPENAI_*` variable of the caller's environment.
async fn run(gw: &Served, script: &str, args: &[&str]) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk").join(script);
    let mut command = std::process::Command::new(sdk_python());
    command
        .arg(&path)
        .args(args)
        .env("SWITCHYARD_GATEWAY_URL", &gw.origin)
        .env("SWITCHYARD_MASTER_KEY", MASTER_KEY)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null());
    let vendor =
        |name: &OsString| name.to_str().is_some_and(|n| n.starts_with("ANTHROPIC_") || n.starts_with("OPENAI_"));
    for (name, _) in std::env::vars_os().filter(|(name, _)| vendor(name)) {
        command.env_remove(name);
    }
    let output = tokio::time::timeout(PATIENCE, tokio::task::spawn_blocking(move || command.output()))
        .await
        .unwrap_or_else(|_| panic!("{script} {args:?} ran out of time"))
        .expect("the script's thread")
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", sdk_python().display()));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{script} {args:?} failed ({}):\n{stderr}", output.status);
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{script} {args:?} printed no JSON summary ({e}):\n{}\n{stderr}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// The body the SDK sent, as a passthrough must deliver it: `model` is the deployment's.
fn with_model(summary: &Value, request: usize, from: &str, to: &str) -> String {
    let body = summary["sent"][request]["body"].as_str().expect("a recorded request body");
    for separator in [":", ": "] {
        let needle = format!(r#""model"{separator}"{from}""#);
        if body.matches(&needle).count() == 1 {
            return body.replacen(&needle, &format!(r#""model"{separator}"{to}""#), 1);
        }
    }
    panic!("the SDK's body names the model {from} once: {body}")
}

fn body_text(mock: &MockHandle) -> String {
    let seen = mock.last_request().expect("the mock was called");
    String::from_utf8(seen.body.to_vec()).expect("utf-8 body")
}

fn block_types(message: &Value) -> Vec<&str> {
    message["content"].as_array().expect("content blocks").iter().filter_map(|b| b["type"].as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_sdk_message_passes_through_to_an_anthropic_deployment_unchanged_but_the_model() {
    let claude = healthy();
    let gw = gateway(&deployment("claude", "anthropic/claude-sonnet-4-5", "claude-1", &claude.origin()), "").await;
    let out = run(&gw, "anthropic_messages.py", &["claude"]).await;
    let message = &out["message"];
    assert_eq!(message["type"], "message", "{out}");
    assert_eq!(message["role"], "assistant");
    assert!(out["text"].as_str().is_some_and(|t| !t.is_empty()), "{out}");
    assert_eq!(message["stop_reason"], "end_turn");

    let sent = &out["sent"][0];
    // Older SDKs present the key as `x-api-key`; 2.16 sends `Authorization: Bearer`.
    let headers = &sent["headers"];
    let presented =
        headers["x-api-key"].as_str().or(headers["authorization"].as_str().and_then(|a| a.strip_prefix("Bearer ")));
    assert_eq!(presented, Some(MASTER_KEY), "{headers}");
    let seen = claude.last_request().expect("the mock was called");
    assert_eq!(seen.path, "/v1/messages");
    assert_eq!(body_text(&claude), with_model(&out, 0, "claude", "claude-sonnet-4-5"), "only the model changed");
    assert_eq!(seen.headers["anthropic-version"], sent["headers"]["anthropic-version"].as_str().expect("version"));
    assert_eq!(seen.headers["x-api-key"], "key-claude-1", "the deployment's key, never the master key");
    assert!(seen.headers.get("authorization").is_none(), "{:?}", seen.headers);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_sdk_streams_an_agent_request_with_thinking_tools_cache_control_and_betas() {
    let claude = healthy();
    let gw = gateway(&deployment("claude", "anthropic/claude-sonnet-4-5", "claude-1", &claude.origin()), "").await;
    let out = run(&gw, "anthropic_stream.py", &["claude"]).await;
    let events: Vec<&str> = out["events"].as_array().expect("events").iter().filter_map(Value::as_str).collect();
    assert_eq!(events.first(), Some(&"message_start"), "{events:?}");
    assert!(events.contains(&"content_block_delta"), "{events:?}");
    assert_eq!(events.last(), Some(&"message_stop"), "{events:?}");
    let message = &out["message"];
    assert_eq!(block_types(message), ["thinking", "text"], "{message}");
    assert!(message["content"][0]["signature"].as_str().is_some_and(|s| !s.is_empty()), "{message}");
    assert!(out["text"].as_str().is_some_and(|t| !t.is_empty()), "{out}");

    assert_eq!(out["sent"][0]["headers"]["anthropic-beta"], BETA);
    let seen = claude.last_request().expect("the mock was called");
    assert_eq!(body_text(&claude), with_model(&out, 0, "claude", "claude-sonnet-4-5"), "only the model changed");
    assert_eq!(seen.headers["anthropic-beta"], BETA);
    let body = seen.json().expect("JSON");
    assert_eq!(body["stream"], true);
    assert_eq!(body["tools"][0]["cache_control"]["type"], "ephemeral");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_sdk_is_answered_in_its_dialect_by_an_openai_deployment() {
    let openai = healthy();
    let gw = gateway(&deployment("claude", "openai/gpt-4o", "gpt-1", &openai.base_url()), "").await;
    let out = run(&gw, "anthropic_messages.py", &["claude"]).await;
    assert_eq!(out["message"]["type"], "message", "{out}");
    assert!(out["text"].as_str().is_some_and(|t| !t.is_empty()), "{out}");
    assert!(out["message"]["usage"]["input_tokens"].as_u64().is_some_and(|n| n > 0), "{out}");
    let seen = openai.last_request().expect("the mock was called");
    assert_eq!(seen.path, "/v1/chat/completions");
    let body = seen.json().expect("JSON");
    assert_eq!(body["model"], "gpt-4o");
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["tools"][0]["function"]["name"], "ls");

    let out = run(&gw, "anthropic_stream.py", &["claude"]).await;
    let events: Vec<&str> = out["events"].as_array().expect("events").iter().filter_map(Value::as_str).collect();
    assert_eq!(events.first(), Some(&"message_start"), "{events:?}");
    assert_eq!(events.last(), Some(&"message_stop"), "{events:?}");
    assert_eq!(block_types(&out["message"]), ["text"], "{out}");
    assert!(out["text"].as_str().is_some_and(|t| !t.is_empty()), "{out}");
    assert!(out["message"]["usage"]["output_tokens"].as_u64().is_some_and(|n| n > 0), "{out}");
    let body = openai.last_request().expect("called").json().expect("JSON");
    assert_eq!(body["stream"], true);
    assert_eq!(body["tools"][0]["function"]["name"], "ls");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_sdk_gets_a_message_when_the_claude_group_falls_back_to_an_openai_group() {
    let claude = mock(
        MockProfile::builder().fail_status(StatusCode::from_u16(529).expect("status"), 1.0).build().expect("profile"),
    );
    let openai = healthy();
    let model_list = format!(
        "{}{}",
        deployment("claude", "anthropic/claude-sonnet-4-5", "claude-1", &claude.origin()),
        deployment("gpt", "openai/gpt-4o", "gpt-1", &openai.base_url()),
    );
    let gw = gateway(&model_list, "  fallbacks: [{\"claude\": [\"gpt\"]}]\n").await;
    let out = run(&gw, "anthropic_messages.py", &["claude"]).await;
    assert_eq!(out["message"]["type"], "message", "{out}");
    assert!(out["text"].as_str().is_some_and(|t| !t.is_empty()), "{out}");
    let out = run(&gw, "anthropic_stream.py", &["claude"]).await;
    assert_eq!(out["message"]["type"], "message", "{out}");
    assert!(out["text"].as_str().is_some_and(|t| !t.is_empty()), "{out}");
    assert_eq!(out["sent"].as_array().map(Vec::len), Some(1), "the SDK did not retry: {out}");
    assert_eq!(claude.requests(), 2, "claude was tried first, each time");
    assert_eq!(openai.requests(), 2, "and gpt answered");
}

/// What `openai_responses.py` saw of a plain and a streamed response.
fn assert_responses(out: &Value) {
    let first = &out["first"];
    assert_eq!(first["object"], "response", "{out}");
    assert_eq!(first["status"], "completed", "{out}");
    assert!(out["first_text"].as_str().is_some_and(|t| !t.is_empty()), "{out}");
    let events: Vec<&str> = out["events"].as_array().expect("events").iter().filter_map(Value::as_str).collect();
    assert_eq!(events.first(), Some(&"response.created"), "{events:?}");
    assert!(events.contains(&"response.output_text.delta"), "{events:?}");
    assert_eq!(events.last(), Some(&"response.completed"), "{events:?}");
    assert!(out["completed_text"].as_str().is_some_and(|t| !t.is_empty()), "{out}");
    assert!(out["completed"]["usage"]["total_tokens"].as_u64().is_some_and(|n| n > 0), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_sdk_responses_pass_through_and_continue_retrieve_and_delete_on_their_deployment() {
    let openai = healthy();
    let gw = gateway(&deployment("gpt", "openai/gpt-4o", "gpt-1", &openai.base_url()), "").await;
    let out = run(&gw, "openai_responses.py", &["gpt", "--conversation"]).await;
    assert_responses(&out);
    assert_eq!(out["sent"][0]["headers"]["authorization"], format!("Bearer {MASTER_KEY}"));
    assert_ne!(out["second"]["id"], out["first"]["id"]);
    assert_eq!(out["second"]["previous_response_id"], out["first"]["id"], "{out}");
    assert_eq!(out["retrieved_id"], out["first"]["id"]);
    assert_eq!(out["after_delete"], "not found");
    assert_eq!(openai.stats().response_continuations, 1);
    let seen = openai.last_request().expect("the mock was called");
    assert_eq!(seen.path, format!("/v1/responses/{}", out["first"]["id"].as_str().expect("an id")));
    assert_eq!(seen.headers["authorization"], "Bearer key-gpt-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_sdk_responses_are_translated_for_a_chat_only_deployment() {
    let vllm = healthy();
    let gw = gateway(&deployment("llama", "hosted_vllm/llama-3", "vllm-1", &vllm.base_url()), "").await;
    let out = run(&gw, "openai_responses.py", &["llama"]).await;
    assert_responses(&out);
    assert!(out["first"]["id"].as_str().is_some_and(|id| id.starts_with("resp_")), "{out}");
    let seen = vllm.last_request().expect("the mock was called");
    assert_eq!(seen.path, "/v1/chat/completions");
    assert_eq!(seen.json().expect("JSON")["stream"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_sdk_chat_stream_with_include_usage_ends_with_a_usage_chunk() {
    let openai = healthy();
    let gw = gateway(&deployment("gpt", "openai/gpt-4o", "gpt-1", &openai.base_url()), "").await;
    let out = run(&gw, "openai_chat_stream.py", &["gpt"]).await;
    assert!(out["text"].as_str().is_some_and(|t| !t.is_empty()), "{out}");
    assert_eq!(out["finish_reasons"], serde_json::json!(["stop"]), "{out}");
    let usage = out["usage"].as_array().expect("usage chunks");
    assert_eq!(usage.len(), 1, "{out}");
    assert!(usage[0]["total_tokens"].as_u64().is_some_and(|n| n > 0), "{out}");
    assert_eq!(out["last_has_choices"], false, "the usage chunk comes last, without choices");
}

/// The `openai` SDK reads a stream broken after its first text and continued on the group's
/// other deployment (`stream_continuation`) as one stream: the text of both, one finish reason,
/// the continuation's usage chunk last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_sdk_reads_a_continued_chat_stream_as_one_stream() {
    let broken = mock(MockProfile::builder().chunks(6).stream_error(2, 1.0).build().expect("valid profile"));
    let whole = healthy();
    let list = format!(
        "  - model_name: gpt\n    litellm_params: {{ model: openai/gpt-4o, api_key: k, api_base: \"{}\", order: 1 }}\n    \
         model_info: {{ id: a }}\n  - model_name: gpt\n    litellm_params: {{ model: openai/gpt-4o, api_key: k, \
         api_base: \"{}\", order: 2 }}\n    model_info: {{ id: b }}\n",
        broken.base_url(),
        whole.base_url(),
    );
    let gw = gateway(&list, "  stream_continuation: true\n").await;
    let out = run(&gw, "openai_chat_stream.py", &["gpt"]).await;
    assert_eq!(broken.requests(), 1, "the first tier started the answer");
    let sent = whole.last_request().expect("b continued").json().expect("JSON");
    let partial = sent["messages"].as_array().and_then(|m| m.last()).map(|m| m["content"].clone()).expect("partial");
    let text = out["text"].as_str().expect("text");
    assert!(text.starts_with(partial.as_str().expect("a string")) && text.len() > 5, "{out}");
    assert_eq!(out["finish_reasons"], serde_json::json!(["stop"]), "{out}");
    assert_eq!(out["usage"].as_array().map(Vec::len), Some(1), "{out}");
    assert_eq!(out["last_has_choices"], false, "{out}");
}

/// The `openai` SDK reads a stream the response cache made of a whole cached answer: the text,
/// the finish reason and the usage chunk, with no second upstream call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_sdk_reads_a_chat_stream_served_from_the_response_cache() {
    let openai = healthy();
    let cache = "litellm_settings:\n  cache: true\n  cache_params: { type: local }\n";
    let gw = gateway(&deployment("gpt", "openai/gpt-4o", "gpt-1", &openai.base_url()), cache).await;
    let body = r#"{"model": "gpt", "messages": [{"role": "user", "content": "Hi"}]}"#;
    let auth = format!("Bearer {MASTER_KEY}");
    let whole = loopback::post(format!("{}/v1/chat/completions", gw.origin), body, &[("authorization", &auth)]).await;
    assert_eq!(whole.status, StatusCode::OK);
    assert_eq!(whole.header("x-switchyard-cache"), "miss");
    let text = whole.json()["choices"][0]["message"]["content"].as_str().expect("content").to_owned();
    let out = run(&gw, "openai_chat_stream.py", &["gpt"]).await;
    assert_eq!(out["text"], text.as_str(), "{out}");
    assert_eq!(out["finish_reasons"], serde_json::json!(["stop"]), "{out}");
    let usage = out["usage"].as_array().expect("usage chunks");
    assert_eq!(usage.len(), 1, "{out}");
    assert_eq!(out["last_has_choices"], false, "{out}");
    assert_eq!(openai.requests(), 1, "the stream came from the cache");
}
