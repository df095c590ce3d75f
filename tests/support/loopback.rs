//! A gateway on a loopback port in front of mock upstreams, and an HTTP client for it: what the
//! end-to-end tests of the front doors, the vendors, Vertex and the SDKs share. Each test file
//! uses part of it.
#![allow(dead_code)]

use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde_json::Value;
use switchyard::{
    Config,
    gateway::Gateway,
    services::{
        mock::{MockHandle, MockProfile, MockUpstream},
        provider::{HttpProvider, ProviderConfig},
    },
};
use tokio::sync::oneshot;

/// Bound on anything a test waits for.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

pub(crate) fn mock(profile: MockProfile) -> MockHandle {
    MockUpstream::start(profile).expect("mock upstream")
}

pub(crate) fn healthy() -> MockHandle {
    mock(MockProfile::builder().build().expect("valid profile"))
}

pub(crate) fn failing(status: StatusCode) -> MockHandle {
    mock(MockProfile::builder().fail_status(status, 1.0).build().expect("valid profile"))
}

/// A gateway served on a loopback port; stops when dropped.
pub(crate) struct Served {
    pub(crate) origin: String,
    _stop: oneshot::Sender<()>,
}

/// The gateway of `yaml` (seed 5) on a loopback port, through the real HTTP provider.
pub(crate) async fn gateway(yaml: &str) -> Served {
    serve(Config::from_yaml_str(yaml).expect("valid config"), 5).await
}

/// The gateway of `config` on a loopback port, through the real HTTP provider.
pub(crate) async fn serve(config: Config, seed: u64) -> Served {
    let provider = HttpProvider::new(ProviderConfig::default().timeout(Duration::from_secs(10))).expect("provider");
    let gw = Gateway::builder(config).provider(provider).seed(seed).build().expect("gateway");
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

pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: Bytes,
}

impl Answer {
    /// The body as text (lossy).
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The data of each server-sent event.
    pub(crate) fn data(&self) -> Vec<String> {
        self.text()
            .split("\n\n")
            .flat_map(|block| block.lines().filter_map(|l| l.strip_prefix("data: ")).map(str::to_owned))
            .collect()
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("JSON answer ({e}): {:?}", self.body))
    }

    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default()
    }

    /// The text of an OpenAI chat stream's deltas.
    pub(crate) fn streamed_text(&self) -> String {
        self.events()
            .iter()
            .filter_map(|(_, c)| c["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
            .collect()
    }

    /// The server-sent events of a streamed answer: `(event name, data as JSON)`; data that is
    /// not JSON (`[DONE]`) as a JSON string.
    pub(crate) fn events(&self) -> Vec<(String, Value)> {
        let text = std::str::from_utf8(&self.body).expect("utf-8 stream");
        text.split("\n\n")
            .filter(|block| !block.trim().is_empty())
            .map(|block| {
                let mut name = String::new();
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(n) = line.strip_prefix("event: ") {
                        name = n.to_owned();
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data.push_str(d);
                    }
                }
                let json = serde_json::from_str(&data).unwrap_or(Value::String(data));
                (name, json)
            })
            .collect()
    }
}

/// A streamed answer read until its body ends or breaks (a stream that fails after its commit
/// point ends with an error, not a clean end): what arrived before.
pub(crate) async fn post_until_broken(url: String, body: &str) -> Answer {
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let req = Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::copy_from_slice(body.as_bytes())))
        .expect("request");
    let resp = tokio::time::timeout(PATIENCE, client.request(req)).await.expect("in time").expect("answer");
    let (parts, mut body) = resp.into_parts();
    let mut data = Vec::new();
    while let Some(frame) = tokio::time::timeout(PATIENCE, body.frame()).await.expect("in time") {
        match frame {
            Ok(frame) => data.extend_from_slice(frame.data_ref().map_or(&[][..], |d| &d[..])),
            Err(_) => break,
        }
    }
    Answer { status: parts.status, headers: parts.headers, body: Bytes::from(data) }
}

pub(crate) async fn send(method: &str, url: String, body: Option<Bytes>, headers: &[(&str, &str)]) -> Answer {
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let mut req = Request::builder().method(method).uri(url);
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(Full::new(body.unwrap_or_default())).expect("request");
    let resp = tokio::time::timeout(PATIENCE, client.request(req)).await.expect("in time").expect("answer");
    let (parts, body) = resp.into_parts();
    let body = tokio::time::timeout(PATIENCE, body.collect()).await.expect("in time").expect("body").to_bytes();
    Answer { status: parts.status, headers: parts.headers, body }
}

pub(crate) async fn post(url: String, body: &str, headers: &[(&str, &str)]) -> Answer {
    send("POST", url, Some(Bytes::copy_from_slice(body.as_bytes())), headers).await
}
