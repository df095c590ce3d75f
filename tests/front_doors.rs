//! The agent front doors end to end, over loopback HTTP through the gateway and the real HTTP
//! provider to mock upstreams that speak each vendor's wire format: Anthropic's `/v1/messages`
//! and OpenAI's `/v1/responses`, passed through to a deployment of the same dialect (compared
//! byte for byte at the mock) or translated to one of another; errors in the client's dialect; a
//! cross-dialect fallback in the middle of a call; conversations that stay on the deployment
//! that holds them; prompt-cache affinity measured as a cache-hit routing rate.
#![cfg(feature = "gateway")]

use http::StatusCode;
use serde_json::json;
use switchyard::{
    Config,
    services::mock::{MockHandle, MockProfile},
};

#[path = "support/loopback.rs"]
mod loopback;

use loopback::{failing, gateway, healthy, mock, post, post_until_broken, send};

fn deployment(group: &str, model: &str, id: &str, base: &str) -> String {
    format!(
        "  - model_name: {group}\n    litellm_params: {{ model: {model}, api_key: key-{id}, api_base: \"{base}\" }}\n    \
         model_info: {{ id: {id} }}\n"
    )
}

/// A `gpt` group of two OpenAI deployments, `a` and `b`, each on its own mock (`settings`
/// appended to the config), behind a gateway.
async fn two_openai_deployments(settings: &str) -> (MockHandle, MockHandle, loopback::Served) {
    let (a, b) = (healthy(), healthy());
    let yaml = format!(
        "model_list:\n{}{}{settings}",
        deployment("gpt", "openai/gpt-4o", "a", &a.base_url()),
        deployment("gpt", "openai/gpt-4o", "b", &b.base_url()),
    );
    let gw = gateway(&yaml).await;
    (a, b, gw)
}

/// A Claude Code style request: system blocks with a cache marker, thinking, tools, a tool-use
/// turn with its result, written with the spaces Python's `json.dumps` puts in.
const CLAUDE_CODE_BODY: &str = r#"{"model": "claude", "max_tokens": 1024, "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}], "messages": [{"role": "user", "content": [{"type": "text", "text": "List the files."}]}, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "ls", "input": {"path": "."}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "a.rs\nb.rs"}]}], "tools": [{"name": "ls", "description": "List files", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}], "metadata": {"user_id": "u-1"}, "temperature": 1.0}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_pass_through_to_an_anthropic_deployment_byte_for_byte_except_model_and_credentials() {
    let claude = healthy();
    let yaml =
        format!("model_list:\n{}", deployment("claude", "anthropic/claude-sonnet-4-5", "claude-1", &claude.origin()));
    let gw = gateway(&yaml).await;
    let beta = "interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14";
    let headers = [("anthropic-version", "2023-06-01"), ("anthropic-beta", beta), ("x-api-key", "client-key")];
    let answer = post(format!("{}/v1/messages", gw.origin), CLAUDE_CODE_BODY, &headers).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let json = answer.json();
    assert_eq!(json["type"], "message");
    assert_eq!(json["role"], "assistant");
    assert_eq!(answer.header("x-switchyard-deployment-id"), "claude-1");

    let seen = claude.last_request().expect("the mock was called");
    let expected = CLAUDE_CODE_BODY.replace(r#""model": "claude""#, r#""model": "claude-sonnet-4-5""#);
    assert_eq!(std::str::from_utf8(&seen.body).expect("utf-8"), expected, "only the model changed");
    assert_eq!(seen.path, "/v1/messages");
    assert_eq!(seen.headers["anthropic-beta"], beta);
    assert_eq!(seen.headers["anthropic-version"], "2023-06-01");
    assert_eq!(seen.headers["x-api-key"], "key-claude-1", "the deployment's key, never the client's");
    assert!(seen.headers.get("authorization").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_message_to_an_anthropic_deployment_relays_its_events() {
    let claude = healthy();
    let yaml = format!("model_list:\n{}", deployment("claude", "anthropic/claude-sonnet-4-5", "c", &claude.origin()));
    let gw = gateway(&yaml).await;
    let body = r#"{"model":"claude","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let answer = post(format!("{}/v1/messages", gw.origin), body, &[]).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.header("content-type").starts_with("text/event-stream"));
    let events = answer.events();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).filter(|n| *n != "ping").collect();
    assert_eq!(names.first(), Some(&"message_start"), "{names:?}");
    assert_eq!(names.last(), Some(&"message_stop"), "{names:?}");
    assert!(names.contains(&"content_block_delta"));
    for (name, data) in &events {
        assert_eq!(data["type"], name.as_str(), "each event's type is its name");
    }
    assert!(!answer.body.windows(6).any(|w| w == b"[DONE]"), "no OpenAI end marker in an Anthropic stream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_to_an_openai_deployment_are_translated_both_ways() {
    let openai = healthy();
    let yaml = format!("model_list:\n{}", deployment("claude", "openai/gpt-4o", "gpt", &openai.base_url()));
    let gw = gateway(&yaml).await;
    let answer = post(format!("{}/v1/messages", gw.origin), CLAUDE_CODE_BODY, &[]).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let json = answer.json();
    assert_eq!(json["type"], "message");
    assert!(json["content"].as_array().is_some_and(|c| !c.is_empty()), "{json}");
    assert!(json["stop_reason"].is_string(), "{json}");
    assert!(json["usage"]["input_tokens"].as_u64().is_some(), "{json}");

    let seen = openai.last_request().expect("the mock was called").json().expect("JSON");
    assert_eq!(seen["model"], "gpt-4o");
    assert_eq!(seen["messages"][0]["role"], "system");
    let roles: Vec<&str> =
        seen["messages"].as_array().expect("messages").iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"], "tool results become tool messages");
    assert_eq!(seen["messages"][2]["tool_calls"][0]["id"], "toolu_01");
    assert_eq!(seen["tools"][0]["function"]["name"], "ls");

    // Streamed: Anthropic's event sequence, from OpenAI chunks.
    let body = r#"{"model":"claude","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let answer = post(format!("{}/v1/messages", gw.origin), body, &[]).await;
    assert_eq!(answer.status, StatusCode::OK);
    let events = answer.events();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"), "{names:?}");
    assert_eq!(&names[names.len() - 2..], ["message_delta", "message_stop"], "{names:?}");
    assert!(names.contains(&"content_block_start") && names.contains(&"content_block_stop"), "{names:?}");
    let delta = &events[events.len() - 2].1;
    assert!(delta["usage"]["output_tokens"].as_u64().is_some_and(|n| n > 0), "usage at the end: {delta}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fallback_from_an_anthropic_group_to_an_openai_group_still_answers_in_the_anthropic_dialect() {
    let claude = failing(StatusCode::from_u16(529).expect("status"));
    let openai = healthy();
    let yaml = format!(
        "model_list:\n{}{}router_settings:\n  num_retries: 0\n  fallbacks: [{{\"claude\": [\"gpt\"]}}]\n",
        deployment("claude", "anthropic/claude-sonnet-4-5", "claude-1", &claude.origin()),
        deployment("gpt", "openai/gpt-4o", "gpt-1", &openai.base_url()),
    );
    let gw = gateway(&yaml).await;
    for stream in [false, true] {
        let body = json!({"model": "claude", "max_tokens": 64, "stream": stream,
            "messages": [{"role": "user", "content": "hi"}]})
        .to_string();
        let answer = post(format!("{}/v1/messages", gw.origin), &body, &[]).await;
        assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
        assert_eq!(answer.header("x-switchyard-deployment-id"), "gpt-1");
        assert_eq!(answer.header("x-switchyard-attempted-fallbacks"), "1");
        if stream {
            assert_eq!(answer.events().first().map(|(n, _)| n.as_str()), Some("message_start"));
        } else {
            assert_eq!(answer.json()["type"], "message");
        }
    }
    assert!(claude.requests() >= 2, "claude was tried first");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_of_the_messages_endpoint_are_in_anthropics_shape() {
    let claude = healthy();
    let yaml = format!("model_list:\n{}", deployment("claude", "anthropic/claude-sonnet-4-5", "c", &claude.origin()));
    let gw = gateway(&yaml).await;
    let body = r#"{"model":"nope","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}"#;
    let answer = post(format!("{}/v1/messages", gw.origin), body, &[]).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    let json = answer.json();
    assert_eq!(json["type"], "error");
    assert_eq!(json["error"]["type"], "not_found_error");
    assert!(json["error"]["message"].as_str().is_some_and(|m| m.contains("claude")), "names the known groups: {json}");
    let answer = post(format!("{}/v1/messages", gw.origin), "{oops", &[]).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.json()["error"]["type"], "invalid_request_error");
    // The OpenAI endpoints keep OpenAI's shape.
    let answer = post(format!("{}/v1/chat/completions", gw.origin), body, &[]).await;
    assert_eq!(answer.json()["error"]["code"], "model_not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_tokens_is_answered_locally() {
    let claude = healthy();
    let yaml = format!("model_list:\n{}", deployment("claude", "anthropic/claude-sonnet-4-5", "c", &claude.origin()));
    let gw = gateway(&yaml).await;
    let answer = post(format!("{}/v1/messages/count_tokens", gw.origin), CLAUDE_CODE_BODY, &[]).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let tokens = answer.json()["input_tokens"].as_u64().expect("a count");
    assert!((10..200).contains(&tokens), "an estimate of a short conversation: {tokens}");
    assert_eq!(claude.requests(), 0, "no upstream call");
    let unknown = post(format!("{}/v1/messages/count_tokens", gw.origin), r#"{"model":"x","messages":[]}"#, &[]).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.json()["type"], "error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_pass_through_and_conversations_stay_on_the_deployment_that_holds_them() {
    let (a, b, gw) = two_openai_deployments("").await;
    let body = r#"{"model": "gpt", "input": "Tell me a story.", "store": true}"#;
    let first = post(format!("{}/v1/responses", gw.origin), body, &[]).await;
    assert_eq!(first.status, StatusCode::OK, "{:?}", first.body);
    let json = first.json();
    assert_eq!(json["object"], "response");
    let id = json["id"].as_str().expect("an id").to_owned();
    let holder = first.header("x-switchyard-deployment-id").to_owned();
    let (held, other) = if holder == "a" { (&a, &b) } else { (&b, &a) };
    let seen = held.last_request().expect("called");
    assert_eq!(seen.path, "/v1/responses");
    assert_eq!(std::str::from_utf8(&seen.body).expect("utf-8"), body.replace(r#""gpt""#, r#""gpt-4o""#));

    for turn in 0..8 {
        let body = json!({"model": "gpt", "input": format!("And then? ({turn})"), "previous_response_id": id});
        let next = post(format!("{}/v1/responses", gw.origin), &body.to_string(), &[]).await;
        assert_eq!(next.status, StatusCode::OK, "{:?}", next.body);
        assert_eq!(next.header("x-switchyard-deployment-id"), holder, "turn {turn} reaches the holder");
        assert_eq!(next.header("x-switchyard-affinity"), "conversation");
    }
    assert_eq!(held.stats().response_continuations, 8);
    assert_eq!(other.stats().response_continuations, 0);

    let got = send("GET", format!("{}/v1/responses/{id}", gw.origin), None, &[]).await;
    assert_eq!(got.status, StatusCode::OK, "{:?}", got.body);
    assert_eq!(got.json()["id"], id.as_str());
    let deleted = send("DELETE", format!("{}/v1/responses/{id}", gw.origin), None, &[]).await;
    assert_eq!(deleted.status, StatusCode::OK, "{:?}", deleted.body);
    assert_eq!(deleted.json()["deleted"], true);
    let gone = send("GET", format!("{}/v1/responses/{id}", gw.origin), None, &[]).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND, "deleted upstream: {:?}", gone.body);
    let unknown = send("GET", format!("{}/v1/responses/resp_never", gw.origin), None, &[]).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.json()["error"]["code"], "response_not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_whose_deployment_is_benched_is_refused_not_moved() {
    let (a, b, gw) = two_openai_deployments("").await;
    let first = post(format!("{}/v1/responses", gw.origin), r#"{"model":"gpt","input":"hi"}"#, &[]).await;
    let id = first.json()["id"].as_str().expect("an id").to_owned();
    let holder = first.header("x-switchyard-deployment-id").to_owned();
    let bench = post(format!("{}/router/deployments/{holder}/cooldown", gw.origin), r#"{"seconds":60}"#, &[]).await;
    assert!(bench.status.is_success(), "{:?}", bench.body);
    let body = json!({"model": "gpt", "input": "more", "previous_response_id": id}).to_string();
    let next = post(format!("{}/v1/responses", gw.origin), &body, &[]).await;
    assert_eq!(next.status, StatusCode::SERVICE_UNAVAILABLE, "{:?}", next.body);
    assert_eq!(next.json()["error"]["code"], "conversation_unavailable");
    assert_eq!(a.stats().response_continuations + b.stats().response_continuations, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_to_a_chat_only_deployment_are_translated_both_ways() {
    let vllm = healthy();
    let yaml = format!("model_list:\n{}", deployment("llama", "hosted_vllm/llama-3", "v", &vllm.base_url()));
    let gw = gateway(&yaml).await;
    let body = r#"{"model":"llama","instructions":"Be brief.","input":[{"role":"user","content":"hi"}]}"#;
    let answer = post(format!("{}/v1/responses", gw.origin), body, &[]).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let json = answer.json();
    assert_eq!(json["object"], "response");
    assert_eq!(json["status"], "completed");
    assert!(json["id"].as_str().is_some_and(|id| id.starts_with("resp_")));
    assert_eq!(json["output"][0]["type"], "message");
    assert!(json["usage"]["total_tokens"].as_u64().is_some_and(|n| n > 0), "{json}");
    let seen = vllm.last_request().expect("called");
    assert_eq!(seen.path, "/v1/chat/completions");
    let seen = seen.json().expect("JSON");
    assert_eq!(seen["messages"][0], json!({"role": "system", "content": "Be brief."}));

    let body = r#"{"model":"llama","input":"hi","stream":true}"#;
    let answer = post(format!("{}/v1/responses", gw.origin), body, &[]).await;
    assert_eq!(answer.status, StatusCode::OK);
    let events = answer.events();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"response.created"), "{names:?}");
    assert_eq!(names.last(), Some(&"response.completed"), "{names:?}");
    assert!(names.contains(&"response.output_text.delta"), "{names:?}");
    let numbers: Vec<u64> = events.iter().filter_map(|(_, d)| d["sequence_number"].as_u64()).collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "sequence numbers increase: {numbers:?}");

    // A built-in tool cannot cross: a 400 naming it, no upstream call.
    let calls = vllm.requests();
    let body = r#"{"model":"llama","input":"hi","tools":[{"type":"web_search_preview"}]}"#;
    let refused = post(format!("{}/v1/responses", gw.origin), body, &[]).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{:?}", refused.body);
    assert!(refused.json()["error"]["message"].as_str().is_some_and(|m| m.contains("tools[0]")));
    assert_eq!(vllm.requests(), calls);
}

/// How often a request with a cacheable prefix reaches the deployment that served that prefix
/// last, over `rounds` rounds of `prefixes` conversations on four deployments.
async fn cache_hit_rate(prompt_cache_ttl: Option<u64>) -> f64 {
    let upstream = healthy();
    let mut yaml = String::from("model_list:\n");
    for id in ["d1", "d2", "d3", "d4"] {
        yaml.push_str(&deployment("claude", "openai/gpt-4o", id, &upstream.base_url()));
    }
    // Usage-based routing sends each request to the least-used deployment, so without affinity
    // the repeats of a prefix move around.
    yaml.push_str("router_settings:\n  routing_strategy: usage-based-routing-v2\n");
    if let Some(ttl) = prompt_cache_ttl {
        yaml.push_str(&format!("  prompt_cache_affinity_ttl: {ttl}\n"));
    }
    let gw = gateway(&yaml).await;
    let (prefixes, rounds) = (6, 8);
    let mut last: Vec<Option<String>> = vec![None; prefixes];
    let (mut hits, mut repeats) = (0u32, 0u32);
    let mut used = std::collections::BTreeSet::new();
    for round in 0..rounds {
        for (p, seen) in last.iter_mut().enumerate() {
            let body = json!({"model": "claude", "max_tokens": 16,
                "system": [{"type": "text", "text": format!("Project {p} handbook."), "cache_control": {"type": "ephemeral"}}],
                "messages": [{"role": "user", "content": format!("question {round}")}]});
            let answer = post(format!("{}/v1/messages", gw.origin), &body.to_string(), &[]).await;
            assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
            let served = answer.header("x-switchyard-deployment-id").to_owned();
            used.insert(served.clone());
            if let Some(before) = seen.as_ref() {
                repeats += 1;
                hits += u32::from(*before == served);
                if prompt_cache_ttl.is_none() {
                    assert_eq!(answer.header("x-switchyard-affinity"), "prompt_cache", "the header says why");
                }
            }
            *seen = Some(served);
        }
    }
    assert!(used.len() > 1, "the prefixes spread over the deployments: {used:?}");
    // `/router/state` counts the answers an affinity chose, per deployment.
    let state = send("GET", format!("{}/router/state", gw.origin), None, &[]).await.json();
    let shown: u64 = state["groups"][0]["deployments"]
        .as_array()
        .expect("deployments")
        .iter()
        .filter_map(|d| d["window"]["affinity_hits"].as_u64())
        .sum();
    assert_eq!(shown, if prompt_cache_ttl.is_none() { u64::from(repeats) } else { 0 }, "{state}");
    f64::from(hits) / f64::from(repeats)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_cache_affinity_keeps_a_cached_prefix_on_its_deployment() {
    let with = cache_hit_rate(None).await;
    let without = cache_hit_rate(Some(0)).await;
    println!("cache-hit routing rate: {with:.2} with prompt-cache affinity, {without:.2} without (4 deployments)");
    assert!(with >= 0.99, "every repeat of a prefix reaches its deployment: {with}");
    assert!(without < 0.6, "without affinity the strategy spreads them: {without}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_tokens_asks_an_anthropic_deployment_when_configured() {
    let claude = healthy();
    let yaml = format!(
        "model_list:\n{}general_settings:\n  count_tokens: upstream\n",
        deployment("claude", "anthropic/claude-sonnet-4-5", "c", &claude.origin())
    );
    let gw = gateway(&yaml).await;
    let body = r#"{"model": "claude", "max_tokens": 64, "system": "abcdefgh", "messages": [{"role": "user", "content": "abcd"}]}"#;
    let headers = [("anthropic-beta", "token-counting-2024-11-01")];
    let answer = post(format!("{}/v1/messages/count_tokens", gw.origin), body, &headers).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    // The mock counts a token per four bytes of text: "abcdefgh" 2, "user" 1, "abcd" 1.
    assert_eq!(answer.json(), json!({"input_tokens": 4}));
    let seen = claude.last_request().expect("asked upstream");
    assert_eq!(seen.path, "/v1/messages/count_tokens");
    assert_eq!(seen.headers["anthropic-beta"], "token-counting-2024-11-01");
    let sent = seen.json().expect("JSON");
    assert_eq!(sent["model"], "claude-sonnet-4-5");
    assert!(sent.get("max_tokens").is_none(), "the counter takes the content only: {sent}");
    assert!(Config::from_yaml_str("model_list: []\ngeneral_settings: {count_tokens: exact}\n").is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_conversation_fallback_a_benched_holder_gives_way_to_a_new_conversation() {
    let (a, b, gw) = two_openai_deployments("router_settings:\n  conversation_fallback: true\n").await;
    let first = post(format!("{}/v1/responses", gw.origin), r#"{"model":"gpt","input":"hi"}"#, &[]).await;
    let id = first.json()["id"].as_str().expect("an id").to_owned();
    let holder = first.header("x-switchyard-deployment-id").to_owned();
    let other = if holder == "a" { &b } else { &a };
    let bench = post(format!("{}/router/deployments/{holder}/cooldown", gw.origin), r#"{"seconds":60}"#, &[]).await;
    assert!(bench.status.is_success(), "{:?}", bench.body);
    let body = json!({"model": "gpt", "input": "more", "previous_response_id": id}).to_string();
    let next = post(format!("{}/v1/responses", gw.origin), &body, &[]).await;
    assert_eq!(next.status, StatusCode::OK, "{:?}", next.body);
    assert_ne!(next.header("x-switchyard-deployment-id"), holder);
    let sent = other.last_request().expect("the other deployment served").json().expect("JSON");
    assert!(sent.get("previous_response_id").is_none(), "a new conversation: {sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_after_the_first_event_ends_the_stream_with_one_error_event_in_the_clients_dialect() {
    // The upstream fails after two content chunks, past the commit point: no fallback can hide
    // it, so the stream ends with one error event in the client's dialect.
    let broken = || mock(MockProfile::builder().chunks(6).stream_error(2, 1.0).build().expect("valid profile"));
    let (claude, openai) = (broken(), broken());
    let yaml = format!(
        "model_list:\n{}{}",
        deployment("claude", "anthropic/claude-sonnet-4-5", "c", &claude.origin()),
        deployment("gpt", "openai/gpt-4o", "g", &openai.base_url()),
    );
    let gw = gateway(&yaml).await;
    for group in ["claude", "gpt"] {
        let body = json!({"model": group, "max_tokens": 64, "stream": true,
            "messages": [{"role": "user", "content": "hi"}]})
        .to_string();
        let answer = post_until_broken(format!("{}/v1/messages", gw.origin), &body).await;
        assert_eq!(answer.status, StatusCode::OK, "committed before the failure");
        let events = answer.events();
        let (name, data) = events.last().expect("events");
        assert_eq!(name, "error", "{group}: {events:?}");
        assert_eq!(data["type"], "error");
        assert!(data["error"]["type"].is_string() && data["error"]["message"].is_string(), "{data}");
        assert_eq!(events.iter().filter(|(n, _)| n == "error").count(), 1, "{group}: one error event");
        assert!(!events.iter().any(|(n, _)| n == "message_stop"), "{group}: never a clean end");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_response_is_cancelled_at_the_deployment_that_holds_it() {
    let (a, b, gw) = two_openai_deployments("").await;
    let created =
        post(format!("{}/v1/responses", gw.origin), r#"{"model":"gpt","input":"long job","background":true}"#, &[])
            .await;
    assert_eq!(created.status, StatusCode::OK, "{:?}", created.body);
    let id = created.json()["id"].as_str().expect("an id").to_owned();
    let holder = created.header("x-switchyard-deployment-id").to_owned();
    let cancelled = post(format!("{}/v1/responses/{id}/cancel", gw.origin), "{}", &[]).await;
    assert_eq!(cancelled.status, StatusCode::OK, "{:?}", cancelled.body);
    assert_eq!(cancelled.json()["status"], "cancelled");
    let held = if holder == "a" { &a } else { &b };
    assert_eq!(held.last_request().expect("called").path, format!("/v1/responses/{id}/cancel"));
}
