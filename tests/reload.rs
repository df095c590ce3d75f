//! Reload applies every setting that can change at run time: one test per setting class through
//! `Router::reload` (in-process, paused clock), then the gateway's `POST /router/reload`: the
//! master key, a stream in flight across a reload, a broken file, and the keys only a restart
//! applies.

use std::{sync::Arc, time::Duration};

use futures_util::StreamExt;
use switchyard::{
    Config, RouteErrorKind, Router,
    layers::{StateStore, state::CooldownState},
    services::{
        openai::{ChatMessage, ChatRequest},
        profile::{Failure, Latency},
        sim::{SimProfile, SimProvider},
    },
};

#[cfg(feature = "gateway")]
#[path = "support/config_file.rs"]
mod config_file;

fn config(yaml: &str) -> Config {
    Config::from_yaml_str(yaml).expect("valid config")
}

fn router(yaml: &str, sim: SimProvider) -> Router {
    Router::builder(&config(yaml)).seed(3).build(sim).expect("router builds")
}

fn reload(router: &Router, yaml: &str) {
    let restart = router.reload(&config(yaml)).expect("reloaded");
    assert!(restart.is_empty(), "nothing needs a restart: {restart:?}");
}

fn hello(model: &str) -> ChatRequest {
    ChatRequest::new(model, vec![ChatMessage::user("hello")])
}

fn failing(kind: Failure) -> SimProfile {
    SimProfile::builder().fail(kind, 1.0).build().expect("valid profile")
}

/// Which deployments served `n` requests for `group` (failures as `error`).
async fn served_by(router: &Router, group: &str, n: usize) -> Vec<String> {
    let mut served = Vec::new();
    for _ in 0..n {
        match router.chat(hello(group)).await {
            Ok(answer) => served.push(answer.served.deployment.to_string()),
            Err(_) => served.push("error".to_owned()),
        }
    }
    served
}

const TWO_PRICES: &str = r#"
model_list:
  - { model_name: g, litellm_params: { model: openai/gpt-4o }, model_info: { id: dear } }
  - { model_name: g, litellm_params: { model: openai/gpt-4o-mini }, model_info: { id: cheap } }
"#;

#[tokio::test(start_paused = true)]
async fn a_reload_changes_the_routing_strategy() {
    let router = router(TWO_PRICES, SimProvider::new(1));
    let before = served_by(&router, "g", 20).await;
    assert!(before.contains(&"dear".to_owned()) && before.contains(&"cheap".to_owned()), "{before:?}");

    reload(&router, &format!("{TWO_PRICES}router_settings: {{ routing_strategy: cost-based-routing }}\n"));
    let after = served_by(&router, "g", 20).await;
    assert!(after.iter().all(|d| d == "cheap"), "the cheapest deployment only: {after:?}");
}

const ONE_BAD: &str = r#"
model_list:
  - { model_name: g, litellm_params: { model: openai/a }, model_info: { id: bad } }
  - { model_name: g, litellm_params: { model: openai/b }, model_info: { id: good } }
"#;

fn one_bad() -> SimProvider {
    SimProvider::new(2).profile("bad", failing(Failure::InternalError))
}

#[tokio::test(start_paused = true)]
async fn a_reload_changes_num_retries_and_the_retry_policy() {
    let no_retries = format!("{ONE_BAD}router_settings: {{ num_retries: 0, disable_cooldowns: true }}\n");
    let router = router(&no_retries, one_bad());
    let before = served_by(&router, "g", 20).await;
    assert!(before.contains(&"error".to_owned()), "no retry after `bad` fails: {before:?}");

    reload(&router, &format!("{ONE_BAD}router_settings: {{ num_retries: 2, disable_cooldowns: true }}\n"));
    let after = served_by(&router, "g", 20).await;
    assert!(after.iter().all(|d| d == "good"), "a retry moves to `good`: {after:?}");

    reload(
        &router,
        &format!(
            "{ONE_BAD}router_settings: {{ num_retries: 2, disable_cooldowns: true, \
             retry_policy: {{ InternalServerErrorRetries: 0 }} }}\n"
        ),
    );
    let policy = served_by(&router, "g", 20).await;
    assert!(policy.contains(&"error".to_owned()), "the policy allows no retry on a 500: {policy:?}");
}

const FAILING_GROUPS: &str = r#"
model_list:
  - { model_name: g, litellm_params: { model: openai/g }, model_info: { id: g1 } }
  - { model_name: small, litellm_params: { model: openai/small }, model_info: { id: small1 } }
  - { model_name: strict, litellm_params: { model: openai/strict }, model_info: { id: strict1 } }
  - { model_name: h, litellm_params: { model: openai/h }, model_info: { id: h1 } }
"#;

#[tokio::test(start_paused = true)]
async fn a_reload_changes_the_fallback_tables() {
    let sim = SimProvider::new(3)
        .profile("g1", failing(Failure::InternalError))
        .profile("small1", failing(Failure::ContextWindowExceeded))
        .profile("strict1", failing(Failure::ContentFilter));
    let router = router(&format!("{FAILING_GROUPS}router_settings: {{ num_retries: 0 }}\n"), sim);
    for group in ["g", "small", "strict"] {
        assert!(router.chat(hello(group)).await.is_err(), "{group}: no fallback yet");
    }

    reload(
        &router,
        &format!(
            "{FAILING_GROUPS}router_settings:\n  num_retries: 0\n  fallbacks: [{{ g: [h] }}]\n  \
             context_window_fallbacks: [{{ small: [h] }}]\n  content_policy_fallbacks: [{{ strict: [h] }}]\n"
        ),
    );
    for group in ["g", "small", "strict"] {
        let answer = router.chat(hello(group)).await.unwrap_or_else(|e| panic!("{group} falls back: {e}"));
        assert_eq!(answer.served.deployment.as_str(), "h1", "{group}");
        assert_eq!(answer.served.hops, 1, "{group}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_reload_changes_the_cooldown_rules() {
    let router =
        router(&format!("{ONE_BAD}router_settings: {{ num_retries: 1, disable_cooldowns: true }}\n"), one_bad());
    served_by(&router, "g", 10).await;
    assert!(router.cooldowns().await.is_empty(), "cooldowns disabled");

    // The failure counts live in the store and carry over: a generous policy keeps `bad` serving.
    reload(
        &router,
        &format!(
            "{ONE_BAD}router_settings: {{ num_retries: 1, allowed_fails: 0, cooldown_time: 60, \
             allowed_fails_policy: {{ InternalServerErrorAllowedFails: 1000 }} }}\n"
        ),
    );
    served_by(&router, "g", 10).await;
    assert!(router.cooldowns().await.is_empty(), "1000 fails allowed per minute");

    reload(&router, &format!("{ONE_BAD}router_settings: {{ num_retries: 1, allowed_fails: 0, cooldown_time: 60 }}\n"));
    served_by(&router, "g", 10).await;
    let cooling = router.cooldowns().await;
    assert!(
        cooling.iter().any(|c| c.deployment.as_str() == "bad" && matches!(c.state, CooldownState::CoolingDown(_))),
        "{cooling:?}"
    );
    // `cooldown_time: 60`: still benched after 30 s.
    tokio::time::sleep(Duration::from_secs(30)).await;
    let cooling = router.cooldowns().await;
    assert!(cooling.iter().any(|c| c.deployment.as_str() == "bad"), "{cooling:?}");
}

#[tokio::test(start_paused = true)]
async fn a_reload_changes_rpm_and_parallel_limits() {
    let limited = "model_list:\n  - { model_name: g, litellm_params: { model: openai/g, rpm: 1 }, model_info: { id: g1 } }\n\
                   router_settings: { enforce_rate_limits: true }\n";
    let router = router(limited, SimProvider::new(4));
    router.chat(hello("g")).await.expect("the first request of the minute");
    let err = router.chat(hello("g")).await.expect_err("rpm 1");
    assert_eq!(err.kind(), RouteErrorKind::RateLimited);

    let roomy =
        "model_list:\n  - { model_name: g, litellm_params: { model: openai/g, rpm: 100 }, model_info: { id: g1 } }\n";
    reload(&router, roomy);
    router.chat(hello("g")).await.expect("rpm 100");

    // One parallel request per deployment: a stream held open takes the only slot.
    reload(&router, &format!("{roomy}router_settings: {{ default_max_parallel_requests: 1 }}\n"));
    let held = router.chat_stream(hello("g")).await.expect("stream started");
    let err = router.chat(hello("g")).await.expect_err("the only slot is taken");
    assert_eq!(err.kind(), RouteErrorKind::RateLimited, "{err}");
    drop(held);
    reload(&router, roomy);
    let held = router.chat_stream(hello("g")).await.expect("stream started");
    router.chat(hello("g")).await.expect("no parallel limit any more");
    drop(held);
}

#[tokio::test(start_paused = true)]
async fn a_reload_changes_the_provider_budgets() {
    let yaml = "model_list:\n  - { model_name: g, litellm_params: { model: openai/gpt-4o }, model_info: { id: g1 } }\n";
    let router = router(yaml, SimProvider::new(5));
    router.chat(hello("g")).await.expect("no budget");

    reload(
        &router,
        &format!(
            "{yaml}router_settings:\n  provider_budget_config: {{ openai: {{ budget_limit: 0, time_period: 1d }} }}\n"
        ),
    );
    let err = router.chat(hello("g")).await.expect_err("the openai budget is spent");
    assert_eq!(err.kind(), RouteErrorKind::BudgetExceeded, "{err}");

    reload(&router, yaml);
    router.chat(hello("g")).await.expect("no budget again");
}

const TAGGED: &str = r#"
model_list:
  - { model_name: g, litellm_params: { model: openai/g, tags: [paid] }, model_info: { id: paid } }
  - { model_name: g, litellm_params: { model: openai/g, tags: [free] }, model_info: { id: free } }
"#;

#[tokio::test(start_paused = true)]
async fn a_reload_turns_tag_filtering_on() {
    let router = router(TAGGED, SimProvider::new(6));
    let paid = || hello("g").param("metadata", serde_json::json!({ "tags": ["paid"] }));
    let mut before = Vec::new();
    for _ in 0..20 {
        before.push(router.chat(paid()).await.expect("served").served.deployment.to_string());
    }
    assert!(before.contains(&"free".to_owned()), "tags are ignored: {before:?}");

    reload(&router, &format!("{TAGGED}router_settings: {{ enable_tag_filtering: true }}\n"));
    for _ in 0..20 {
        assert_eq!(router.chat(paid()).await.expect("served").served.deployment.as_str(), "paid");
    }
}

#[tokio::test(start_paused = true)]
async fn a_reload_turns_pre_call_checks_on() {
    let yaml = "model_list:\n  - { model_name: g, litellm_params: { model: openai/g }, model_info: { id: g1, max_input_tokens: 8 } }\n";
    let router = router(yaml, SimProvider::new(7));
    let long = || ChatRequest::new("g", vec![ChatMessage::user("many words ".repeat(50))]);
    router.chat(long()).await.expect("the window is not checked");

    reload(&router, &format!("{yaml}router_settings: {{ enable_pre_call_checks: true }}\n"));
    let err = router.chat(long()).await.expect_err("over the window");
    assert_eq!(err.kind(), RouteErrorKind::ContextWindowExceeded, "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_refused_reload_changes_nothing() {
    let router =
        router(&format!("{ONE_BAD}router_settings: {{ num_retries: 2, disable_cooldowns: true }}\n"), one_bad());
    // Valid YAML, but an alias to no group: refused by the checks before anything is built.
    let mut broken = config(ONE_BAD);
    broken.retry.num_retries = 0;
    broken.aliases.push(switchyard::config::Alias::new("x", "nowhere", false));
    assert!(router.reload(&broken).is_err());
    let after = served_by(&router, "g", 20).await;
    assert!(after.iter().all(|d| d == "good"), "still two retries: {after:?}");
    assert!(router.registry().resolve("x").is_err());
}

#[tokio::test(start_paused = true)]
async fn a_stream_in_flight_finishes_on_the_stack_it_started_on() {
    let slow = SimProfile::builder()
        .chunks(10)
        .chunk_interval(Latency::fixed(Duration::from_millis(20)))
        .build()
        .expect("valid profile");
    let yaml = "model_list:\n  - { model_name: g, litellm_params: { model: openai/g }, model_info: { id: g1 } }\n";
    let router = router(yaml, SimProvider::new(8).default_profile(slow));
    let mut stream = router.chat_stream(hello("g")).await.expect("stream started");

    reload(
        &router,
        &format!(
            "{yaml}router_settings: {{ routing_strategy: least-busy, num_retries: 0, default_max_parallel_requests: 1 }}\n"
        ),
    );
    let mut chunks = 0;
    while let Some(chunk) = stream.next().await {
        chunk.expect("no error mid-stream");
        chunks += 1;
    }
    assert!(chunks >= 10, "{chunks}");
    assert_eq!(router.store().local().in_flight(&"g1".into()), 0, "the stream released its slot");
    router.chat(hello("g")).await.expect("the slot is free for the new stack");
}

#[tokio::test(start_paused = true)]
async fn a_call_in_flight_falls_back_over_the_deployments_it_started_with() {
    let yaml = "model_list:\n  - { model_name: g, litellm_params: { model: openai/g }, model_info: { id: g1 } }\n  \
                - { model_name: h, litellm_params: { model: openai/h }, model_info: { id: h1 } }\n\
                router_settings: { num_retries: 0, fallbacks: [{ g: [h] }] }\n";
    // `g1` fails after 100 ms, so the call is still on `g` when the reload lands.
    let slow_failure = SimProfile::builder()
        .fail(Failure::InternalError, 1.0)
        .error_latency(Latency::fixed(Duration::from_millis(100)))
        .build()
        .expect("valid profile");
    let router = router(yaml, SimProvider::new(4).profile("g1", slow_failure));
    let call = tokio::spawn({
        let router = router.clone();
        async move { router.chat(hello("g")).await }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;

    // The new config has no `h` and no fallback: one swap of the stack and its deployments.
    reload(
        &router,
        "model_list:\n  - { model_name: g, litellm_params: { model: openai/g }, model_info: { id: g1 } }\n",
    );
    assert!(router.registry().resolve("h").is_err(), "new calls no longer see `h`");

    let answer = call.await.expect("task").expect("the call in flight falls back as its stack said");
    assert_eq!(answer.served.deployment.as_str(), "h1");
    router.chat(hello("g")).await.expect_err("a new call has no fallback to `h`");
}

const WITH_REDIS: &str = r#"
model_list:
  - { model_name: g, litellm_params: { model: openai/g }, model_info: { id: g1 } }
router_settings: { redis_host: localhost, redis_namespace: blue, num_retries: 0, timeout: 30 }
"#;

#[tokio::test(start_paused = true)]
async fn a_redis_namespace_change_waits_for_a_restart_and_says_so() {
    let store = Arc::new(StateStore::memory());
    let router = Router::builder(&config(WITH_REDIS)).store(store.clone()).build(SimProvider::new(9)).expect("router");
    let changed = WITH_REDIS.replace("blue", "green").replace("timeout: 30", "timeout: 60");
    let restart = router.reload(&config(&changed)).expect("the rest is applied");
    assert_eq!(
        restart,
        [
            "router_settings.redis_namespace changed: restart to apply",
            "router_settings.timeout changed: restart to apply"
        ]
    );
    assert!(Arc::ptr_eq(router.store(), &store), "the same store");
    router.chat(hello("g")).await.expect("still routing");
    // Nothing changed since the last reload but against the settings the router was built with.
    assert_eq!(router.reload(&config(&changed)).expect("applied").len(), 2);
    assert!(router.reload(&config(WITH_REDIS)).expect("applied").is_empty());
}

#[cfg(feature = "gateway")]
mod gateway {
    use axum::body::Body;
    use http::{Request, StatusCode};
    use http_body_util::BodyExt;
    use serde_json::{Value, json};
    use switchyard::gateway::Gateway;
    use tower::ServiceExt;

    use super::*;
    use crate::config_file::ConfigFile;

    const PATIENCE: Duration = Duration::from_secs(20);

    fn gateway(file: &ConfigFile, sim: SimProvider) -> Gateway {
        let config = Config::from_path(file.path()).expect("config");
        Gateway::builder(config).provider(sim).config_path(file.path()).seed(1).build().expect("gateway")
    }

    async fn send(gw: &Gateway, key: &str, path: &str, body: Value) -> (StatusCode, http::HeaderMap, Value) {
        let req = Request::post(path)
            .header("authorization", format!("Bearer {key}"))
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .expect("request");
        let resp =
            tokio::time::timeout(PATIENCE, gw.router().oneshot(req)).await.expect("in time").expect("infallible");
        let (parts, body) = resp.into_parts();
        let body = tokio::time::timeout(PATIENCE, body.collect()).await.expect("in time").expect("body").to_bytes();
        let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
        (parts.status, parts.headers, json)
    }

    fn chat(group: &str) -> Value {
        json!({ "model": group, "messages": [{ "role": "user", "content": "hi" }] })
    }

    const BEFORE: &str = r#"
model_list:
  - { model_name: g, litellm_params: { model: openai/g }, model_info: { id: g1 } }
  - { model_name: h, litellm_params: { model: openai/h }, model_info: { id: h1 } }
router_settings: { num_retries: 0 }
general_settings: { master_key: sk-old }
"#;

    const AFTER: &str = r#"
model_list:
  - { model_name: g, litellm_params: { model: openai/g }, model_info: { id: g1 } }
  - { model_name: h, litellm_params: { model: openai/h }, model_info: { id: h1 } }
router_settings: { num_retries: 0, fallbacks: [{ g: [h] }] }
general_settings: { master_key: sk-new }
"#;

    #[tokio::test]
    async fn post_reload_applies_router_settings_and_the_master_key() {
        let file = ConfigFile::new(BEFORE);
        let gw = gateway(&file, SimProvider::new(1).profile("g1", failing(Failure::InternalError)));
        let (status, _, _) = send(&gw, "sk-old", "/v1/chat/completions", chat("g")).await;
        assert!(status.is_server_error(), "{status}");

        file.write(AFTER);
        let (status, _, summary) = send(&gw, "sk-old", "/router/reload", json!({})).await;
        assert_eq!(status, StatusCode::OK, "{summary}");
        assert_eq!(summary["warnings"], json!([]), "{summary}");

        let (status, _, _) = send(&gw, "sk-old", "/v1/chat/completions", chat("g")).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "the old key is gone");
        let (status, headers, _) = send(&gw, "sk-new", "/v1/chat/completions", chat("g")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers["x-switchyard-deployment-id"], "h1", "the new fallback table");
    }

    #[tokio::test]
    async fn a_broken_file_changes_no_setting() {
        let file = ConfigFile::new(BEFORE);
        let gw = gateway(&file, SimProvider::new(2).profile("g1", failing(Failure::InternalError)));
        file.write(&AFTER.replace("num_retries: 0,", "num_retries: 0, retry_policy: { NoSuchErrorRetries: 1 },"));
        let (status, _, answer) = send(&gw, "sk-old", "/router/reload", json!({})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(answer.to_string().contains("retry_policy"), "{answer}");
        let (status, _, _) = send(&gw, "sk-old", "/v1/chat/completions", chat("g")).await;
        assert!(status.is_server_error(), "still no fallback, still the old key: {status}");
    }

    #[tokio::test]
    async fn restart_only_keys_are_named_in_the_summary() {
        let file = ConfigFile::new(WITH_REDIS);
        let config = Config::from_path(file.path()).expect("config");
        let gw = Gateway::builder(config)
            .provider(SimProvider::new(3))
            .config_path(file.path())
            .store(Arc::new(StateStore::memory()))
            .build()
            .expect("gateway");
        file.write(&format!(
            "{}general_settings: {{ edge: {{ max_connections: 100 }} }}\n",
            WITH_REDIS.replace("blue", "green")
        ));
        let summary = gw.reload_from_file().await.expect("the rest is applied");
        assert_eq!(
            summary.warnings,
            [
                "router_settings.redis_namespace changed: restart to apply",
                "general_settings.edge changed: restart to apply"
            ]
        );
        assert_eq!(gw.routing().store().backend_name(), "memory");
    }

    #[tokio::test]
    async fn a_reload_re_reads_the_included_files() {
        let models = ConfigFile::new(
            "model_list:\n  - { model_name: k, litellm_params: { model: openai/k }, model_info: { id: k1 } }\n",
        );
        let name = models.path().file_name().and_then(|n| n.to_str()).expect("a file name").to_owned();
        let main = ConfigFile::new(&format!("include: [{name}]\n{BEFORE}"));
        let gw = gateway(&main, SimProvider::new(4));
        let (_, headers, _) = send(&gw, "sk-old", "/v1/chat/completions", chat("k")).await;
        assert_eq!(headers["x-switchyard-deployment-id"], "k1");

        models.write(
            "model_list:\n  - { model_name: k, litellm_params: { model: openai/k2 }, model_info: { id: k2 } }\n",
        );
        let summary = gw.reload_from_file().await.expect("reloaded");
        assert_eq!(summary.added, ["k2"]);
        let (_, headers, _) = send(&gw, "sk-old", "/v1/chat/completions", chat("k")).await;
        assert_eq!(headers["x-switchyard-deployment-id"], "k2");
    }
}
