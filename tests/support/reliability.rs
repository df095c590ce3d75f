//! What `tests/reliability.rs` and `tests/reliability_long.rs` share: a gateway served on a
//! loopback port in front of mock upstreams, an HTTP client that reads answers to their end (or
//! their error), the classification of every answer, and event-driven waits for the in-flight
//! counters. Included with `#[path = "support/reliability.rs"] mod reliability_support;`.

// Each including test binary uses only some of these items.
#![allow(dead_code)]

use std::{
    fmt::Write as _,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use serde_json::{Value, json};
use switchyard::services::{
    mock::{MockHandle, MockProfile, MockProfileBuilder, MockUpstream},
    profile::{Failure, Latency},
};
use switchyard::{
    Config,
    gateway::Gateway,
    layers::{DeploymentId, StateStore},
    services::provider::{HttpProvider, ProviderConfig},
};
use tokio::sync::oneshot;

fn start_mock(profile: MockProfileBuilder) -> MockHandle {
    MockUpstream::start(profile.build().expect("valid profile")).expect("mock upstream")
}

/// The bound of every wait on an event that should come much sooner (a loaded 2-core CI machine).
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

pub(crate) type HttpClient = Client<HttpConnector, Full<Bytes>>;

pub(crate) fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).pool_max_idle_per_host(256).build_http()
}

/// A gateway served on `127.0.0.1:0`.
pub(crate) struct Served {
    pub(crate) origin: String,
    pub(crate) gateway: Gateway,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Served {
    /// Builds the gateway of `yaml` over the HTTP provider (`max_response_bytes` as given) and
    /// serves it.
    pub(crate) async fn start(yaml: &str, max_response_bytes: usize) -> Self {
        let config = Config::from_yaml_str(yaml).unwrap_or_else(|e| panic!("config: {e}\n{yaml}"));
        Self::start_with(config, max_response_bytes, None).await
    }

    pub(crate) async fn start_with(
        config: Config,
        max_response_bytes: usize,
        store: Option<std::sync::Arc<StateStore>>,
    ) -> Self {
        let provider = HttpProvider::new(
            ProviderConfig::default().max_response_bytes(max_response_bytes).connect_timeout(Duration::from_secs(2)),
        )
        .expect("provider");
        let mut builder = Gateway::builder(config).provider(provider).seed(11).max_body_bytes(64 * 1024);
        if let Some(store) = store {
            builder = builder.store(store);
        }
        let gateway = builder.build().expect("gateway");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let origin = format!("http://{}", listener.local_addr().expect("address"));
        let (stop, stopped) = oneshot::channel::<()>();
        let gw = gateway.clone();
        let task = tokio::spawn(async move {
            gw.serve(listener, async move {
                let _ = stopped.await;
            })
            .await
        });
        Self { origin, gateway, stop: Some(stop), task }
    }

    pub(crate) fn store(&self) -> &StateStore {
        self.gateway.routing().store()
    }

    /// Stops the server and waits for it.
    pub(crate) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = tokio::time::timeout(PATIENCE, &mut self.task).await;
    }
}

/// A chat request (streamed or not) for `model`, as JSON.
pub(crate) fn chat_body(model: &str, stream: bool) -> Value {
    json!({ "model": model, "stream": stream, "messages": [{ "role": "user", "content": "hello there, how are you?" }] })
}

pub(crate) fn post(origin: &str, body: &Value) -> Request<Full<Bytes>> {
    post_raw(origin, "application/json", Bytes::from(body.to_string()))
}

pub(crate) fn post_raw(origin: &str, content_type: &str, body: Bytes) -> Request<Full<Bytes>> {
    Request::post(format!("{origin}/v1/chat/completions"))
        .header("content-type", content_type)
        .body(Full::new(body))
        .expect("request")
}

/// How one answer ended.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    /// The body as text, up to where it ended (or broke).
    pub(crate) text: String,
    /// Whether the body ended cleanly (`false`: the connection broke mid-body).
    pub(crate) clean_end: bool,
    /// From sending the request to the end of the body.
    pub(crate) elapsed: Duration,
}

/// What an answer was.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// 200 with a whole completion, or a whole stream ending in `[DONE]`.
    Served,
    /// An error answer with an OpenAI error body and `x-switchyard-error`: its code.
    Refused(String),
    /// A stream that ended with one error event and no `[DONE]`: the event's code.
    StreamError(String),
    /// The client went away after the answer's head (a soak's deliberate cancellation).
    Cancelled,
    /// Anything else: a broken promise.
    Untyped(String),
}

impl Answer {
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    pub(crate) fn kind(&self) -> Kind {
        let stream = self.header("content-type").starts_with("text/event-stream");
        if self.status == StatusCode::OK && !stream {
            let v: Option<Value> = serde_json::from_str(&self.text).ok();
            return match v {
                Some(v) if v["object"] == "chat.completion" && self.clean_end => Kind::Served,
                _ => Kind::Untyped(format!("200 without a whole completion: {:.200}", self.text)),
            };
        }
        if self.status == StatusCode::OK {
            let events: Vec<&str> = self.text.split("\n\n").filter_map(|e| e.trim().strip_prefix("data: ")).collect();
            let errors: Vec<Value> = events
                .iter()
                .filter_map(|e| serde_json::from_str::<Value>(e).ok())
                .filter(|v| v.get("error").is_some())
                .collect();
            let done = events.last() == Some(&"[DONE]");
            return match (done, errors.as_slice()) {
                (true, []) if self.clean_end => Kind::Served,
                (false, [e]) => match e["error"]["code"].as_str() {
                    Some(code) if events.last().is_some_and(|l| l.contains("\"error\"")) => {
                        Kind::StreamError(code.to_owned())
                    }
                    _ => Kind::Untyped(format!("error event without a code or not last: {:.300}", self.text)),
                },
                _ => Kind::Untyped(format!("stream neither done nor failed once: {:.300}", self.text)),
            };
        }
        let code = self.header("x-switchyard-error").to_owned();
        let body: Option<Value> = serde_json::from_str(&self.text).ok();
        match body {
            Some(b) if !code.is_empty() && b["error"]["message"].is_string() => Kind::Refused(code),
            _ => Kind::Untyped(format!("{} without a typed error: {:.200}", self.status, self.text)),
        }
    }
}

/// Sends `req` and reads the answer to its end (or its break).
pub(crate) async fn send(client: &HttpClient, req: Request<Full<Bytes>>) -> Result<Answer, String> {
    let start = Instant::now();
    let resp = client.request(req).await.map_err(|e| format!("no answer: {e:?}"))?;
    let (parts, mut body) = resp.into_parts();
    let mut text = String::new();
    let clean_end = loop {
        match body.frame().await {
            None => break true,
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    text.push_str(&String::from_utf8_lossy(&data));
                }
            }
            Some(Err(_)) => break false,
        }
    };
    Ok(Answer { status: parts.status, headers: parts.headers, text, clean_end, elapsed: start.elapsed() })
}

/// Waits until no request is in flight on any of `ids` (each release wakes the wait), or panics
/// after `PATIENCE` naming the counts.
pub(crate) async fn drained(store: &StateStore, ids: &[&str]) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    for id in ids {
        let id = DeploymentId::from(*id);
        let watch = store.local().watch_slots(&id);
        loop {
            let freed = watch.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if watch.in_flight() == 0 {
                break;
            }
            if tokio::time::timeout_at(deadline, freed).await.is_err() {
                panic!("{} still in flight on `{id}` after {PATIENCE:?}", watch.in_flight());
            }
        }
    }
}

/// `p`-quantile of `samples` (sorted in place), in milliseconds.
pub(crate) fn quantile_ms(samples: &mut [Duration], p: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.sort_unstable();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[i].as_secs_f64() * 1e3
}

/// A table row of counts: `kind=n` sorted.
pub(crate) fn tally(kinds: &std::collections::BTreeMap<Kind, u64>) -> String {
    let mut out = String::new();
    for (k, n) in kinds {
        let _ = write!(out, "{k:?}={n} ");
    }
    out
}

/// The mixed fleet of the soaks: healthy, flaky (503s, some streams cut or malformed after their
/// first chunks), rate-limited (429s with `Retry-After`),
/// slow (with a parallel-request limit), in group `mixed`; plus group `capped`, whose deployment
/// has a gateway-side `rpm` limit.
pub(crate) struct Fleet {
    pub(crate) mocks: Vec<(&'static str, MockHandle)>,
}

impl Fleet {
    pub(crate) fn start(seed: u64) -> Self {
        let ms = Duration::from_millis;
        let b = || MockProfile::builder().seed(seed).chunks(4).chunk_interval(Latency::fixed(ms(1)));
        let mocks = vec![
            ("healthy", start_mock(b().latency(Latency::fixed(ms(1))))),
            (
                "flaky",
                start_mock(
                    b().latency(Latency::fixed(ms(2)))
                        .fail(Failure::Unavailable, 0.2)
                        .stream_cut(2, 0.05)
                        .malformed_chunk(3, 0.02),
                ),
            ),
            ("throttled", start_mock(b().fail(Failure::RateLimited, 0.3).retry_after(ms(200)))),
            ("slow", start_mock(b().latency(Latency::log_normal(ms(20), ms(80))))),
            ("capped", start_mock(b())),
        ];
        Self { mocks }
    }

    /// The config: `capped` admits `rpm_cap` requests a minute (`enforce_rate_limits`).
    pub(crate) fn yaml(&self, rpm_cap: u32) -> String {
        let mut yaml = String::from("model_list:\n");
        for (name, m) in &self.mocks {
            let (group, extra) = match *name {
                "capped" => ("capped", format!(", rpm: {rpm_cap}")),
                "slow" => ("mixed", ", timeout: 5, stream_timeout: 5, max_parallel_requests: 8".to_owned()),
                _ => ("mixed", ", timeout: 5, stream_timeout: 5".to_owned()),
            };
            yaml += &format!(
                "  - model_name: {group}\n    litellm_params: {{ model: openai/m, api_base: \"{}\", api_key: sk-mock{extra} }}\n    model_info: {{ id: {name} }}\n",
                m.base_url()
            );
        }
        // `capped`'s rpm is a hard limit (LiteLLM reads it as a weight under simple-shuffle).
        yaml + "router_settings:\n  num_retries: 2\n  cooldown_time: 0.2\n  enforce_rate_limits: true\n"
    }

    pub(crate) fn ids(&self) -> Vec<&'static str> {
        self.mocks.iter().map(|(n, _)| *n).collect()
    }
}
