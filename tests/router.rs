//! The facade: `Router::from_config` builds the stack, and the typed API goes through it.

use std::time::Duration;

use futures_util::StreamExt;
use switchyard::{
    Config, RouteErrorKind, Router,
    layers::Deployment,
    services::{
        openai::{ChatMessage, ChatRequest, EmbeddingRequest},
        profile::{Failure, Latency},
        sim::{SimProfile, SimProvider},
    },
};

const CONFIG: &str = r#"
model_list:
  - model_name: gpt-4o
    litellm_params: { model: azure/gpt-4o-eu, api_key: sk-secret-eu, weight: 3 }
    model_info: { id: eu }
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o, api_key: sk-secret-us, weight: 1 }
    model_info: { id: us }
  - model_name: embed
    litellm_params: { model: openai/text-embedding-3-small }
    model_info: { id: emb }
router_settings:
  model_group_alias:
    gpt4: gpt-4o
    secret-name: { model: gpt-4o, hidden: true }
"#;

fn router_with(sim: SimProvider) -> Router {
    let config = Config::from_yaml_str(CONFIG).expect("valid config");
    Router::builder(&config).seed(11).build(sim).expect("router builds")
}

fn hello(model: &str) -> ChatRequest {
    ChatRequest::new(model, vec![ChatMessage::user("hello")])
}

#[tokio::test(start_paused = true)]
async fn chat_is_served_by_a_deployment_of_the_group_with_its_usage() {
    let router = router_with(SimProvider::new(1));
    let answer = router.chat(hello("gpt-4o")).await.expect("served");
    assert_eq!(&*answer.served.group, "gpt-4o");
    assert!(["eu", "us"].contains(&answer.served.deployment.as_str()));
    assert_eq!(answer.served.attempts, 1);
    assert!(answer.completion.usage.is_some());
    assert!(!answer.completion.choices.is_empty());
}

#[tokio::test(start_paused = true)]
async fn weights_from_the_config_shape_the_traffic() {
    let router = router_with(SimProvider::new(2));
    let mut eu = 0;
    for _ in 0..2_000 {
        if router.chat(hello("gpt-4o")).await.expect("served").served.deployment.as_str() == "eu" {
            eu += 1;
        }
    }
    // weight 3 vs 1: expect 75%; ±4 points is more than 6 sigma at n = 2000.
    assert!((1_420..=1_580).contains(&eu), "eu served {eu} of 2000");
}

#[tokio::test(start_paused = true)]
async fn aliases_resolve_and_hidden_aliases_are_not_listed_in_errors() {
    let router = router_with(SimProvider::new(3));
    let via_alias = router.chat(hello("gpt4")).await.expect("alias resolves");
    assert_eq!(&*via_alias.served.group, "gpt-4o");
    router.chat(hello("secret-name")).await.expect("hidden alias resolves");

    let err = router.chat(hello("gpt-5")).await.expect_err("unknown group");
    assert_eq!(err.kind(), RouteErrorKind::UnknownGroup);
    assert_eq!(err.known_groups(), ["embed", "gpt-4o", "gpt4"]);
    assert!(err.to_string().contains("gpt-5"));
}

#[tokio::test(start_paused = true)]
async fn stream_resolves_at_the_first_chunk_and_ends_cleanly() {
    let ttft = Duration::from_millis(300);
    let sim = SimProvider::new(4).default_profile(
        SimProfile::builder()
            .ttft(Latency::fixed(ttft))
            .chunk_interval(Latency::fixed(Duration::from_millis(20)))
            .chunks(5)
            .build()
            .expect("profile"),
    );
    let router = router_with(sim);
    let start = tokio::time::Instant::now();
    let mut stream = router.chat_stream(hello("gpt-4o")).await.expect("stream starts");
    assert_eq!(start.elapsed(), ttft, "the call resolves at the first content chunk");
    let mut content = String::new();
    let mut chunks = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.expect("no mid-stream failure");
        chunks += 1;
        for c in &chunk.choices {
            content.push_str(c.delta.content.as_deref().unwrap_or(""));
        }
    }
    assert!(chunks >= 5, "{chunks} chunks");
    assert!(!content.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_mid_stream_failure_is_an_error_item_not_a_clean_end() {
    let sim = SimProvider::new(5)
        .default_profile(SimProfile::builder().chunks(6).mid_stream_failure(1.0).build().expect("profile"));
    let router = router_with(sim);
    let mut stream = router.chat_stream(hello("gpt-4o")).await.expect("stream starts");
    let mut last = None;
    while let Some(item) = stream.next().await {
        last = Some(item);
    }
    let err = last.expect("at least one item").expect_err("the stream ends with an error");
    assert_eq!(err.outcome(), Some(switchyard::Outcome::Transport));
}

#[tokio::test(start_paused = true)]
async fn upstream_failures_come_back_typed_with_their_outcome() {
    let sim = SimProvider::new(6).default_profile(
        SimProfile::builder()
            .fail(Failure::RateLimited, 1.0)
            .retry_after(Duration::from_secs(7))
            .build()
            .expect("profile"),
    );
    let router = router_with(sim);
    let err = router.chat(hello("gpt-4o")).await.expect_err("429");
    assert_eq!(err.kind(), RouteErrorKind::Upstream);
    assert_eq!(err.outcome(), Some(switchyard::Outcome::RateLimited));
    assert_eq!(err.retry_after(), Some(Duration::from_secs(7)));
    assert_eq!(err.upstream_status().map(|s| s.as_u16()), Some(429));
}

#[tokio::test(start_paused = true)]
async fn embeddings_go_through_the_same_stack() {
    let router = router_with(SimProvider::new(7));
    let answer = router.embed(EmbeddingRequest::new("embed", "some text")).await.expect("embedded");
    assert_eq!(answer.served.deployment.as_str(), "emb");
    assert!(!answer.embeddings.data.is_empty());
}

#[tokio::test(start_paused = true)]
async fn deployments_added_at_runtime_serve_without_a_restart() {
    let router = router_with(SimProvider::new(8));
    let err = router.chat(hello("mini")).await.expect_err("not yet known");
    assert_eq!(err.kind(), RouteErrorKind::UnknownGroup);
    router
        .registry()
        .add(Deployment::builder("mini", "openai/gpt-4o-mini").id("mini-1").build().expect("deployment"))
        .expect("added");
    let answer = router.chat(hello("mini")).await.expect("served after the add");
    assert_eq!(answer.served.deployment.as_str(), "mini-1");
    router.registry().remove(&"mini-1".into()).expect("removed");
    assert_eq!(router.chat(hello("mini")).await.expect_err("gone").kind(), RouteErrorKind::UnknownGroup);
}

/// The default stack runs the pre-call checks from `router_settings`: tag routing (with the 403
/// refusal), context windows feeding `context_window_fallbacks`, and order tiers.
#[tokio::test(start_paused = true)]
async fn pre_call_checks_from_the_config_route_by_tags_windows_and_order() {
    let config = Config::from_yaml_str(
        r#"
model_list:
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o, tags: [paid], order: 1 }
    model_info: { id: paid, max_input_tokens: 8 }
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o, tags: [paid], order: 2 }
    model_info: { id: paid-backup }
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o-mini, tags: [free] }
    model_info: { id: free, max_input_tokens: 8 }
  - model_name: gpt-4o-long
    litellm_params: { model: openai/gpt-4.1, tags: [free, paid] }
    model_info: { id: long, max_input_tokens: 1000000 }
router_settings:
  enable_pre_call_checks: true
  enable_tag_filtering: true
  context_window_fallbacks: [{ gpt-4o: [gpt-4o-long] }]
"#,
    )
    .expect("valid config");
    let router = Router::builder(&config).seed(5).build(SimProvider::new(5)).expect("router builds");
    let tagged = |tags: serde_json::Value, text: &str| {
        ChatRequest::new("gpt-4o", vec![ChatMessage::user(text)]).param("metadata", serde_json::json!({ "tags": tags }))
    };
    for _ in 0..10 {
        let answer = router.chat(tagged(serde_json::json!(["paid"]), "hi")).await.expect("served");
        assert_eq!(answer.served.deployment.as_str(), "paid", "tier 1 of the paid deployments");
    }
    let long = "many words ".repeat(50);
    let answer = router.chat(tagged(serde_json::json!(["paid"]), &long)).await.expect("served");
    assert_eq!(answer.served.deployment.as_str(), "paid-backup", "tier 2 when tier 1's window is too small");
    let answer = router.chat(tagged(serde_json::json!(["free"]), "hi")).await.expect("served");
    assert_eq!(answer.served.deployment.as_str(), "free");
    let answer = router.chat(tagged(serde_json::json!(["free"]), &long)).await.expect("served");
    assert_eq!(answer.served.deployment.as_str(), "long", "no free deployment fits: context_window_fallbacks");
    assert_eq!(answer.served.hops, 1);

    let err = router.chat(tagged(serde_json::json!(["enterprise"]), "hi")).await.expect_err("no match, no default");
    assert_eq!(err.kind(), RouteErrorKind::NotAllowed);
    assert_eq!(err.http_status(), http::StatusCode::FORBIDDEN);
}

/// A loopback upstream that accepts connections, reads what comes and never answers.
async fn silent_upstream() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            held.push(sock);
        }
    });
    (addr, task)
}

#[tokio::test]
async fn the_configured_router_timeouts_replace_the_default_ones() {
    let (addr, task) = silent_upstream().await;
    for settings in [
        "router_settings: { num_retries: 0, timeout: 0.3, stream_timeout: 0.2 }",
        "router_settings: { num_retries: 0 }\nlitellm_settings: { request_timeout: 0.3 }",
    ] {
        let yaml = format!(
            "model_list:\n  - model_name: m\n    litellm_params: {{ model: openai/m, api_base: 'http://{addr}/v1', api_key: k }}\n{settings}\n"
        );
        let config = Config::from_yaml_str(&yaml).expect("valid config");
        let router = Router::builder(&config).build_http().expect("router builds");
        let started = tokio::time::Instant::now();
        let bounded = Duration::from_secs(30);
        let err = tokio::time::timeout(bounded, router.chat(hello("m"))).await.expect("not the 600 s default");
        let err = err.expect_err("a silent upstream times out");
        assert_eq!(err.outcome(), Some(switchyard::layers::Outcome::Timeout), "{settings}: {err}");
        assert!(err.to_string().contains("300ms"), "{settings}: {err}");
        let stream = tokio::time::timeout(bounded, router.chat_stream(hello("m"))).await.expect("not the 60 s default");
        let Err(err) = stream else { panic!("{settings}: a silent upstream streamed") };
        let expected = if settings.contains("stream_timeout") { "200ms" } else { "300ms" };
        assert!(err.to_string().contains(expected), "{settings}: {err}");
        assert!(started.elapsed() < bounded);
    }
    task.abort();
}
