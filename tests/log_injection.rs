//! Text that a client or an upstream chose never breaks a log line (issue 17, item 4).
//!
//! A client's model name reaches the logs through a wildcard group and the call span's
//! `otel.name`, a request's own `fallbacks` names through the fallback layer's warnings, and an
//! upstream's error message through the cooldown event's reason. Each carries CR/LF (a forged
//! line), ANSI escapes (terminal control), a Unicode line separator and a bidirectional override;
//! the formatted TRACE output must keep every one of them escaped inside its field.
//!
//! In its own test binary: it installs the process-wide subscriber.
#![cfg(feature = "gateway")]

use std::{net::SocketAddr, time::Duration};

use axum::{body::Body, response::Response};
use serde_json::json;
use switchyard::{
    Config, Router,
    services::{
        openai::{ChatMessage, ChatRequest},
        provider::{HttpProvider, ProviderConfig},
    },
};
use tokio::sync::oneshot;

#[path = "support/capture.rs"]
mod capture;
use capture::Capture;

/// What every hostile text carries: a forged log line, a terminal escape, a Unicode line
/// separator and a right-to-left override.
const HOSTILE: &str =
    "\r\n2026-12-02T00:00:00.000000Z  INFO switchyard: FORGED line\u{1b}[2J\u{1b}]0;owned\u{7}\u{2028}\u{202e}";

/// An OpenAI-compatible upstream that refuses every key with an OpenAI error whose message
/// carries [`HOSTILE`].
async fn refusing() -> Response {
    let body = json!({ "error": {
        "message": format!("Incorrect API key provided.{HOSTILE}"),
        "type": "invalid_request_error", "param": null, "code": "invalid_api_key"
    }});
    Response::builder()
        .status(401)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_default()
}

async fn start_upstream() -> (SocketAddr, oneshot::Sender<()>) {
    let app = axum::Router::new().fallback(refusing);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the upstream");
    let addr = listener.local_addr().expect("upstream address");
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await;
    });
    (addr, stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_and_upstream_text_cannot_forge_log_lines_or_reach_the_terminal() {
    let capture = Capture::default();
    let writer = capture.clone();
    tracing::subscriber::set_global_default(
        tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::TRACE)
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
            .finish(),
    )
    .expect("the only subscriber of this binary");

    let (upstream, _stop) = start_upstream().await;
    let config = Config::from_yaml_str(&format!(
        r#"
model_list:
  - model_name: "openai/*"
    litellm_params: {{ model: "openai/*", api_base: "http://{upstream}/v1", api_key: sk-test }}
    model_info: {{ id: wild }}
router_settings: {{ num_retries: 1, allowed_fails: 0 }}
"#
    ))
    .expect("valid config");
    let provider = HttpProvider::new(ProviderConfig::default().timeout(Duration::from_secs(10))).expect("provider");
    let router = Router::builder(&config).seed(4).build(provider).expect("router builds");

    let mut req = ChatRequest::new(format!("openai/gpt-4o{HOSTILE}"), vec![ChatMessage::user("hello")]);
    req.extra.insert("fallbacks".into(), json!([format!("no-such-group{HOSTILE}")]));
    let err = tokio::time::timeout(Duration::from_secs(20), router.chat(req))
        .await
        .expect("answered in time")
        .expect_err("the upstream refuses every key");
    assert_eq!(err.upstream_status().map(|s| s.as_u16()), Some(401), "{err}");

    let log = capture.text();
    // Each hostile text was logged (escaped), so the test saw the fields it means to check.
    for (place, needle) in [
        ("the call span's otel.name", r"otel.name=chat openai/gpt-4o\r\n2026-12-02"),
        ("the attempt span's otel.name", r"otel.name=chat gpt-4o\r\n2026-12-02"),
        ("the cooldown reason", r"Incorrect API key provided.\r\n2026-12-02"),
        ("the skipped fallback", r"name=no-such-group\r\n2026-12-02"),
    ] {
        assert!(log.contains(needle), "{place} was not logged escaped (`{needle}`):\n{log}");
    }
    // And none of it reached the output raw.
    for (what, raw) in
        [("CR", "\r"), ("ESC", "\u{1b}"), ("BEL", "\u{7}"), ("U+2028", "\u{2028}"), ("U+202E", "\u{202e}")]
    {
        assert!(!log.contains(raw), "a raw {what} reached the log:\n{log:?}");
    }
    for line in log.lines() {
        assert!(!line.starts_with("2026-12-02T00:00:00.000000Z"), "a forged line: {line:?}");
    }
}
