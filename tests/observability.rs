//! Every attempt is a `tracing` span that says where traffic went. In its own test binary:
//! `tracing` caches callsite interest per process, so a test that installs a scoped subscriber
//! must not race other tests hitting the same callsites without one.

use switchyard::{
    Config, Router,
    services::{
        openai::{ChatMessage, ChatRequest},
        sim::SimProvider,
    },
};

#[path = "support/capture.rs"]
mod capture;
use capture::Capture;

const CONFIG: &str = r#"
model_list:
  - model_name: gpt-4o
    litellm_params: { model: azure/gpt-4o-eu, api_key: sk-secret-eu, weight: 3 }
    model_info: { id: eu }
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o, api_key: sk-secret-us, weight: 1 }
    model_info: { id: us }
router_settings:
  model_group_alias: { gpt4: gpt-4o }
"#;

fn router_with(sim: SimProvider) -> Router {
    let config = Config::from_yaml_str(CONFIG).expect("valid config");
    Router::builder(&config).seed(11).build(sim).expect("router builds")
}

fn hello(model: &str) -> ChatRequest {
    ChatRequest::new(model, vec![ChatMessage::user("hello")])
}

#[tokio::test(start_paused = true)]
async fn every_attempt_is_a_span_naming_where_traffic_went() {
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let router = router_with(SimProvider::new(9));
    let answer = router.chat(hello("gpt4")).await.expect("served");
    drop(_guard);

    let log = capture.text();
    let line = log.lines().find(|l| l.contains("attempt")).unwrap_or_else(|| panic!("no attempt span in:\n{log}"));
    for needle in [
        "requested=\"gpt4\"".to_owned(),
        "group=gpt-4o".to_owned(),
        format!("switchyard.deployment.id={}", answer.served.deployment),
        format!("gen_ai.request.model=\"{}\"", answer.served.model.split_once('/').map_or("", |(_, m)| m)),
        "attempt=1".to_owned(),
        "outcome=\"success\"".to_owned(),
    ] {
        assert!(line.contains(&needle), "`{needle}` missing from: {line}");
    }
    assert!(!log.contains("sk-secret"), "an api key reached the log");
}
