//! The gateway's edge against hostile and careless clients: connection limits (header-read and
//! idle timeouts, the connection cap, HTTP/2), browsers (cross-origin requests, DNS rebinding,
//! content types, CORS only when configured) and request ids (`docs/security.md`).
//!
//! Connection tests serve on 127.0.0.1:0 with short limits and real time; every wait has a
//! generous bound, and nothing sleeps for synchronisation: a test waits for the server to close
//! the connection or to answer.
#![cfg(feature = "gateway")]

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use switchyard::{
    Config,
    gateway::{ConnectionLimits, Gateway, GatewayBuilder},
    services::{
        profile::Latency,
        sim::{SimProfile, SimProvider},
    },
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    sync::oneshot,
    time::Instant,
};
use tower::ServiceExt;

/// Bound on anything a test waits for.
const PATIENCE: Duration = Duration::from_secs(20);

const OPEN: &str = r#"
model_list:
  - { model_name: gpt-4o, litellm_params: { model: openai/gpt-4o }, model_info: { id: a } }
"#;

const KEYED: &str = r#"
model_list:
  - { model_name: gpt-4o, litellm_params: { model: openai/gpt-4o }, model_info: { id: a } }
general_settings: { master_key: sk-edge-master }
"#;

fn sim(latency: Duration) -> SimProvider {
    let l = Latency::fixed(latency);
    let profile = SimProfile::builder().latency(l).ttft(l).chunk_interval(Latency::fixed(Duration::from_millis(1)));
    SimProvider::new(3).default_profile(profile.build().expect("valid profile"))
}

fn builder(yaml: &str) -> GatewayBuilder {
    Gateway::builder(Config::from_yaml_str(yaml).expect("valid config")).provider(sim(Duration::from_millis(1))).seed(5)
}

/// The header-read and idle timeouts of the tests that measure them.
const HEAD: Duration = Duration::from_millis(300);
const IDLE: Duration = Duration::from_millis(800);

/// Short limits, so that the tests see them fire.
fn short() -> ConnectionLimits {
    ConnectionLimits::default().header_read_timeout(Duration::from_millis(300)).idle_timeout(Duration::from_millis(600))
}

/// Serves `gw` on a loopback port; the server stops when the returned sender is dropped.
async fn serve(gw: Gateway) -> (String, oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address").to_string();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = gw
            .serve(listener, async move {
                let _ = stopped.await;
            })
            .await;
    });
    (addr, stop)
}

/// Reads until the server closes the connection (or resets it); the bytes read before.
async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    let reading = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(PATIENCE, reading).await.expect("the server closed the connection in time");
    got
}

/// Reads one whole response (head and a `content-length` body) from a kept-alive connection.
async fn read_response(stream: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    let reading = async {
        loop {
            let n = stream.read(&mut buf).await.expect("read");
            assert!(n > 0, "the connection closed before a whole answer: {:?}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got);
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text[..end]
                    .lines()
                    .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned()))
                    .and_then(|v| v.parse::<usize>().ok())
                    .unwrap_or(0);
                if got.len() >= end + 4 + length {
                    return text.into_owned();
                }
            }
        }
    };
    tokio::time::timeout(PATIENCE, reading).await.expect("answered in time")
}

const LIVENESS: &[u8] = b"GET /health/liveliness HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_finishes_its_request_head_is_disconnected() {
    let (addr, _stop) = serve(builder(OPEN).connection_limits(short()).build().expect("gateway")).await;
    let mut stream = TcpStream::connect(&addr).await.expect("connect");
    // A head that never ends: 32 KiB of one header, no blank line.
    let partial = format!("POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\nx-pad: {}", "a".repeat(32 * 1024));
    stream.write_all(partial.as_bytes()).await.expect("write");
    let answer = read_until_closed(&mut stream).await;
    assert!(!String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"), "no request was served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_sends_nothing_is_closed_after_the_header_read_timeout() {
    let (addr, _stop) = serve(builder(OPEN).connection_limits(short()).build().expect("gateway")).await;
    // The server's clock starts when it accepts, after the connect began (not necessarily after
    // this task sees it complete: on a loaded machine the server may accept first).
    let opened = Instant::now();
    let mut stream = TcpStream::connect(&addr).await.expect("connect");
    assert!(read_until_closed(&mut stream).await.is_empty());
    assert!(opened.elapsed() >= Duration::from_millis(300), "closed before the timeout");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let limits = short().header_read_timeout(Duration::from_millis(200)).idle_timeout(Duration::from_millis(800));
    let (addr, _stop) = serve(builder(OPEN).connection_limits(limits).build().expect("gateway")).await;
    let mut stream = TcpStream::connect(&addr).await.expect("connect");
    stream.write_all(LIVENESS).await.expect("write");
    assert!(read_response(&mut stream).await.starts_with("HTTP/1.1 200"));
    let answered = Instant::now();
    // Kept alive past the header-read timeout, and a second request on it is served.
    tokio::time::sleep(Duration::from_millis(400)).await;
    // The server's idle clock starts after it answers, so after this instant: measuring from
    // here (not from when the answer was read) holds however late this side reads.
    let asked_again = Instant::now();
    stream.write_all(LIVENESS).await.expect("write");
    assert!(read_response(&mut stream).await.starts_with("HTTP/1.1 200"), "kept alive past the head timeout");
    assert!(asked_again - answered >= Duration::from_millis(400));
    // Then closed once idle for the idle timeout.
    assert!(read_until_closed(&mut stream).await.is_empty());
    assert!(asked_again.elapsed() >= Duration::from_millis(800), "closed before the idle timeout");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_in_flight_outlives_the_idle_and_header_read_timeouts() {
    let limits = short().header_read_timeout(Duration::from_millis(100)).idle_timeout(Duration::from_millis(200));
    let gw = Gateway::builder(Config::from_yaml_str(OPEN).expect("valid config"))
        .provider(sim(Duration::from_millis(1200)))
        .connection_limits(limits)
        .build()
        .expect("gateway");
    let (addr, _stop) = serve(gw).await;
    let mut stream = TcpStream::connect(&addr).await.expect("connect");
    let body = json!({ "model": "gpt-4o", "messages": [{ "role": "user", "content": "hi" }] }).to_string();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let answer = read_response(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("chat.completion"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_wait_until_one_closes() {
    let limits = ConnectionLimits::default().max_connections(1);
    let (addr, _stop) = serve(builder(OPEN).connection_limits(limits).build().expect("gateway")).await;
    let mut first = TcpStream::connect(&addr).await.expect("connect");
    first.write_all(LIVENESS).await.expect("write");
    assert!(read_response(&mut first).await.starts_with("HTTP/1.1 200"));

    // The kernel completes the handshake (backlog), but the gateway does not serve it yet.
    let mut second = TcpStream::connect(&addr).await.expect("connect");
    second.write_all(LIVENESS).await.expect("write");
    let mut byte = [0u8; 1];
    let early = tokio::time::timeout(Duration::from_millis(300), second.read(&mut byte)).await;
    assert!(early.is_err(), "a connection over the cap was served");

    drop(first);
    let answer = read_response(&mut second).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_over_the_limit_is_refused() {
    let limits = ConnectionLimits::default().max_header_bytes(16 * 1024);
    let (addr, _stop) = serve(builder(OPEN).connection_limits(limits).build().expect("gateway")).await;
    let mut stream = TcpStream::connect(&addr).await.expect("connect");
    let head =
        format!("GET /health/liveliness HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: {}\r\n\r\n", "a".repeat(32 * 1024));
    // The server may stop reading and close while the rest is still being written.
    let _ = stream.write_all(head.as_bytes()).await;
    let answer = String::from_utf8_lossy(&read_until_closed(&mut stream).await).into_owned();
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 431"), "{answer}");

    // Still serving.
    let mut stream = TcpStream::connect(&addr).await.expect("connect");
    stream.write_all(LIVENESS).await.expect("write");
    assert!(read_response(&mut stream).await.starts_with("HTTP/1.1 200"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_is_served_with_the_same_limits() {
    let (addr, _stop) = serve(builder(OPEN).connection_limits(short()).build().expect("gateway")).await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(true)
        .build_http::<Full<Bytes>>();
    for _ in 0..2 {
        let req = Request::get(format!("http://{addr}/health/liveliness")).body(Full::default()).expect("request");
        let resp = tokio::time::timeout(PATIENCE, client.request(req)).await.expect("in time").expect("answer");
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.version(), http::Version::HTTP_2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_http2_connection_is_closed_after_the_idle_timeout() {
    let limits = ConnectionLimits::default().header_read_timeout(Duration::from_secs(5)).idle_timeout(IDLE);
    let (addr, _stop) = serve(builder(OPEN).connection_limits(limits).build().expect("gateway")).await;
    let tcp = TcpStream::connect(&addr).await.expect("connect");
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), hyper_util::rt::TokioIo::new(tcp))
            .await
            .expect("HTTP/2 handshake");
    let closed = tokio::spawn(conn);
    // The server's idle clock starts when its answer ends, so after this instant.
    let asked = Instant::now();
    let req = Request::get(format!("http://{addr}/health/liveliness")).body(Full::<Bytes>::default()).expect("request");
    let resp = tokio::time::timeout(PATIENCE, sender.send_request(req)).await.expect("in time").expect("answer");
    assert_eq!((resp.status(), resp.version()), (StatusCode::OK, http::Version::HTTP_2));
    resp.into_body().collect().await.expect("body");
    // Then the server sends GOAWAY and the connection ends, with no request from this side.
    let ended = tokio::time::timeout(PATIENCE, closed).await.expect("the server closed the idle connection in time");
    assert!(ended.expect("connection task").is_ok(), "closed gracefully");
    assert!(asked.elapsed() >= IDLE, "closed before the idle timeout");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_connection_that_never_sends_a_request_is_closed_after_the_header_read_timeout() {
    // The idle timeout is far beyond the test's patience: only the header-read timeout can close.
    let limits = ConnectionLimits::default().header_read_timeout(HEAD).idle_timeout(Duration::from_secs(600));
    let (addr, _stop) = serve(builder(OPEN).connection_limits(limits).build().expect("gateway")).await;
    let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    // An empty SETTINGS frame: length 0, type 4, no flags, stream 0.
    let settings = [0u8, 0, 0, 4, 0, 0, 0, 0, 0];
    let whole: Vec<u8> = preface.iter().chain(&settings).copied().collect();
    // A client that stops inside the preface, and one that completes the handshake but never
    // sends HEADERS.
    for sent in [&preface[..10], &whole[..]] {
        // Before the connect: the server's clock starts at its accept, which may come first.
        let opened = Instant::now();
        let mut stream = TcpStream::connect(&addr).await.expect("connect");
        stream.write_all(sent).await.expect("write");
        let answer = read_until_closed(&mut stream).await;
        assert!(!answer.windows(8).any(|w| w == b"HTTP/1.1"), "no request was served");
        assert!(opened.elapsed() >= HEAD, "closed before the header-read timeout");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_timeout_set_in_the_config_applies_to_served_connections() {
    // 0.8 s, and a header-read timeout that cannot be the one that fires.
    let yaml = format!("{OPEN}general_settings: {{ edge: {{ idle_timeout: 0.8, header_read_timeout: 5 }} }}\n");
    let (addr, _stop) = serve(builder(&yaml).build().expect("gateway")).await;
    let mut stream = TcpStream::connect(&addr).await.expect("connect");
    let asked = Instant::now();
    stream.write_all(LIVENESS).await.expect("write");
    assert!(read_response(&mut stream).await.starts_with("HTTP/1.1 200"));
    // The default (75 s) would outlast the wait's bound.
    assert!(read_until_closed(&mut stream).await.is_empty());
    assert!(asked.elapsed() >= IDLE, "closed before the configured idle timeout");
}

#[test]
fn edge_limits_set_in_the_config_are_checked_like_the_builders() {
    let yaml = format!("{OPEN}general_settings: {{ edge: {{ max_header_bytes: 16384, max_connections: 2 }} }}\n");
    assert!(builder(&yaml).build().is_ok());
    // The builder's limits replace the config's.
    let replaced = builder(&yaml).connection_limits(ConnectionLimits::default().idle_timeout(Duration::ZERO)).build();
    assert!(replaced.is_err_and(|e| e.to_string().contains("idle_timeout")));
}

#[test]
fn limits_that_cannot_be_served_refuse_to_build() {
    let err = builder(OPEN).connection_limits(ConnectionLimits::default().max_header_bytes(1024)).build();
    assert!(err.is_err_and(|e| e.to_string().contains("max_header_bytes")));
    let err = builder(OPEN).connection_limits(ConnectionLimits::default().idle_timeout(Duration::ZERO)).build();
    assert!(err.is_err_and(|e| e.to_string().contains("idle_timeout")));
}

// ---- browsers ----

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

async fn call(gw: &Gateway, req: Request<Body>) -> Answer {
    let resp = tokio::time::timeout(PATIENCE, gw.router().oneshot(req)).await.expect("in time").expect("infallible");
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.expect("body").to_bytes();
    Answer { status: parts.status, headers: parts.headers, body: serde_json::from_slice(&body).unwrap_or(Value::Null) }
}

fn chat_body() -> Body {
    Body::from(json!({ "model": "gpt-4o", "messages": [{ "role": "user", "content": "hi" }] }).to_string())
}

fn code(a: &Answer) -> &str {
    a.body["error"]["code"].as_str().unwrap_or_default()
}

async fn benched(gw: &Gateway) -> bool {
    let state = call(gw, Request::get("/router/deployments").body(Body::empty()).expect("request")).await;
    state.body["deployments"][0]["cooldown"]["status"] != "available"
}

#[tokio::test]
async fn a_simple_cross_origin_post_is_refused_before_routing() {
    let gw = builder(OPEN).build().expect("gateway");
    // What a page on another site can send without a preflight: text/plain, no credentials.
    let req = Request::post("/v1/chat/completions")
        .header("host", "127.0.0.1:4000")
        .header("origin", "https://evil.example")
        .header("content-type", "text/plain")
        .body(chat_body())
        .expect("request");
    let answer = call(&gw, req).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert_eq!(code(&answer), "origin_not_allowed");
    assert!(!answer.headers.contains_key("access-control-allow-origin"), "no CORS by default");

    // A week-long bench from a cross-origin form post is refused too.
    let req = Request::post("/router/deployments/a/cooldown")
        .header("origin", "https://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(r#"{"seconds":604800}"#))
        .expect("request");
    assert_eq!(call(&gw, req).await.status, StatusCode::FORBIDDEN);
    assert!(!benched(&gw).await);
}

#[tokio::test]
async fn bodies_must_be_declared_json() {
    let gw = builder(OPEN).build().expect("gateway");
    for content_type in
        [None, Some("text/plain"), Some("application/x-www-form-urlencoded"), Some("multipart/form-data")]
    {
        let mut req = Request::post("/v1/chat/completions");
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        let answer = call(&gw, req.body(chat_body()).expect("request")).await;
        assert_eq!(answer.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{content_type:?}");
        assert_eq!(code(&answer), "unsupported_media_type");
    }
    for content_type in ["application/json", "application/json; charset=utf-8", "Application/JSON"] {
        let req = Request::post("/v1/chat/completions").header("content-type", content_type);
        assert_eq!(call(&gw, req.body(chat_body()).expect("request")).await.status, StatusCode::OK, "{content_type}");
    }

    // The bench endpoint reads a body too.
    let req = Request::post("/router/deployments/a/cooldown")
        .header("content-type", "text/plain")
        .body(Body::from(r#"{"seconds":604800}"#))
        .expect("request");
    assert_eq!(call(&gw, req).await.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(!benched(&gw).await);
    let req = Request::post("/router/deployments/a/cooldown")
        .header("content-type", "application/json")
        .body(Body::from(r#"{"seconds":60}"#))
        .expect("request");
    assert_eq!(call(&gw, req).await.status, StatusCode::OK);
    assert!(benched(&gw).await);
}

#[tokio::test]
async fn without_a_master_key_a_rebinding_host_name_cannot_read_the_state() {
    let gw = builder(OPEN).build().expect("gateway");
    let state = |host: &str, origin: Option<&str>| {
        let mut req = Request::get("/router/state").header("host", host);
        if let Some(origin) = origin {
            req = req.header("origin", origin);
        }
        req.body(Body::empty()).expect("request")
    };
    // The page's own origin, on a name that now resolves to 127.0.0.1: same-origin for the
    // browser, so only the host name gives it away.
    let rebound = call(&gw, state("rebind.evil.example:4000", Some("http://rebind.evil.example:4000"))).await;
    assert_eq!(rebound.status, StatusCode::FORBIDDEN);
    assert_eq!(code(&rebound), "host_not_allowed");
    assert_eq!(call(&gw, state("rebind.evil.example:4000", None)).await.status, StatusCode::FORBIDDEN);

    for host in ["127.0.0.1:4000", "localhost:4000", "[::1]:4000", "10.0.0.7"] {
        assert_eq!(call(&gw, state(host, None)).await.status, StatusCode::OK, "{host}");
    }
    // The dashboard's own requests: same origin, a local host.
    assert_eq!(call(&gw, state("127.0.0.1:4000", Some("http://127.0.0.1:4000"))).await.status, StatusCode::OK);

    let named = builder(OPEN).allowed_hosts(["gateway.internal"]).build().expect("gateway");
    assert_eq!(call(&named, state("gateway.internal:4000", None)).await.status, StatusCode::OK);
    assert_eq!(call(&named, state("other.internal:4000", None)).await.status, StatusCode::FORBIDDEN);

    // With a master key, any host name is served to whoever has the key.
    let keyed = builder(KEYED).build().expect("gateway");
    let req = Request::get("/router/state")
        .header("host", "gateway.example.com")
        .header("authorization", "Bearer sk-edge-master")
        .body(Body::empty())
        .expect("request");
    assert_eq!(call(&keyed, req).await.status, StatusCode::OK);
}

#[tokio::test]
async fn allowed_hosts_and_origins_set_in_the_config_apply() {
    let yaml = format!(
        "{OPEN}general_settings: {{ edge: {{ allowed_hosts: [gateway.internal], allowed_origins: ['https://chat.example.com'] }} }}\n"
    );
    let gw = builder(&yaml).build().expect("gateway");
    let state = |host: &str, origin: &str| {
        Request::get("/router/state")
            .header("host", host)
            .header("origin", origin)
            .body(Body::empty())
            .expect("request")
    };
    let answer = call(&gw, state("gateway.internal:4000", "https://chat.example.com")).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.headers["access-control-allow-origin"], "https://chat.example.com");
    let other_host = call(&gw, state("other.internal:4000", "https://chat.example.com")).await;
    assert_eq!((other_host.status, code(&other_host)), (StatusCode::FORBIDDEN, "host_not_allowed"));
    let other_origin = call(&gw, state("gateway.internal:4000", "https://evil.example")).await;
    assert_eq!((other_origin.status, code(&other_origin)), (StatusCode::FORBIDDEN, "origin_not_allowed"));
}

#[tokio::test]
async fn cors_is_answered_only_for_configured_origins() {
    let gw = builder(KEYED).allowed_origins(["https://chat.example.com"]).build().expect("gateway");
    let preflight = Request::options("/v1/chat/completions")
        .header("origin", "https://chat.example.com")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization, content-type")
        .body(Body::empty())
        .expect("request");
    let answer = call(&gw, preflight).await;
    assert!(answer.status.is_success(), "{}", answer.status);
    assert_eq!(answer.headers["access-control-allow-origin"], "https://chat.example.com");

    let req = Request::post("/v1/chat/completions")
        .header("origin", "https://chat.example.com")
        .header("content-type", "application/json")
        .header("authorization", "Bearer sk-edge-master")
        .body(chat_body())
        .expect("request");
    let answer = call(&gw, req).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.headers["access-control-allow-origin"], "https://chat.example.com");

    let req = Request::post("/v1/chat/completions")
        .header("origin", "https://other.example.com")
        .header("content-type", "application/json")
        .header("authorization", "Bearer sk-edge-master")
        .body(chat_body())
        .expect("request");
    let answer = call(&gw, req).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(!answer.headers.contains_key("access-control-allow-origin"));
}

// ---- request ids ----

/// A provider that records the request headers it receives, then lets the simulator answer.
fn recording(
    seen: Arc<Mutex<Vec<HeaderMap>>>,
) -> impl Clone
+ Send
+ Sync
+ 'static
+ tower::Service<
    Request<Bytes>,
    Response = http::Response<switchyard::layers::RouteBody>,
    Error = switchyard::layers::BoxError,
    Future: Send + 'static,
> {
    let inner = sim(Duration::from_millis(1));
    tower::service_fn(move |req: Request<Bytes>| {
        seen.lock().expect("lock").push(req.headers().clone());
        inner.clone().oneshot(req)
    })
}

#[tokio::test]
async fn exactly_one_validated_request_id_goes_upstream_and_back() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let gw = Gateway::builder(Config::from_yaml_str(OPEN).expect("valid config"))
        .provider(recording(seen.clone()))
        .build()
        .expect("gateway");
    let long = "x".repeat(2014);
    let send = |first: &str, second: &str| {
        Request::post("/v1/chat/completions")
            .header("content-type", "application/json")
            .header("x-request-id", first)
            .header("x-request-id", second)
            .body(chat_body())
            .expect("request")
    };

    let answer = call(&gw, send("req-1", &long)).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.headers.get_all("x-request-id").iter().collect::<Vec<_>>(), ["req-1"]);
    let upstream = seen.lock().expect("lock").pop().expect("called");
    assert_eq!(upstream.get_all("x-request-id").iter().collect::<Vec<_>>(), ["req-1"]);

    // An unacceptable first value is replaced, and the valid-looking second one is not kept.
    let answer = call(&gw, send("has space", "req-2")).await;
    let ids: Vec<_> = answer.headers.get_all("x-request-id").iter().cloned().collect();
    assert_eq!(ids.len(), 1);
    assert!(ids[0] != "has space" && ids[0] != "req-2", "{:?}", ids[0]);
    let upstream = seen.lock().expect("lock").pop().expect("called");
    assert_eq!(upstream.get_all("x-request-id").iter().cloned().collect::<Vec<_>>(), ids);
}

/// A gateway whose embeddings are 512 numbers long: a JSON answer of several KiB.
fn large_json_gateway() -> Gateway {
    let profile = SimProfile::builder().embedding_dims(512).build().expect("valid profile");
    Gateway::builder(Config::from_yaml_str(OPEN).expect("valid config"))
        .provider(SimProvider::new(3).default_profile(profile))
        .build()
        .expect("gateway")
}

async fn raw_call(gw: &Gateway, path: &str, body: Value, accept_encoding: Option<&str>) -> http::Response<Bytes> {
    let mut req = Request::post(path).header("content-type", "application/json");
    if let Some(encoding) = accept_encoding {
        req = req.header("accept-encoding", encoding);
    }
    let req = req.body(Body::from(body.to_string())).expect("request");
    let resp = tokio::time::timeout(PATIENCE, gw.router().oneshot(req)).await.expect("in time").expect("infallible");
    let (parts, body) = resp.into_parts();
    let body = tokio::time::timeout(PATIENCE, body.collect()).await.expect("in time").expect("body").to_bytes();
    http::Response::from_parts(parts, body)
}

#[tokio::test]
async fn a_large_json_answer_is_gzipped_only_for_a_client_that_accepts_gzip() {
    let gw = large_json_gateway();
    let embed = json!({ "model": "gpt-4o", "input": "hello" });

    let plain = raw_call(&gw, "/v1/embeddings", embed.clone(), None).await;
    assert_eq!(plain.status(), StatusCode::OK);
    assert!(!plain.headers().contains_key("content-encoding"));
    assert!(plain.body().len() >= 1024, "the answer is large: {} bytes", plain.body().len());
    let _: Value = serde_json::from_slice(plain.body()).expect("JSON as it is");

    let gzipped = raw_call(&gw, "/v1/embeddings", embed.clone(), Some("br;q=1.0, gzip;q=0.5")).await;
    assert_eq!(gzipped.status(), StatusCode::OK);
    assert_eq!(gzipped.headers()["content-encoding"], "gzip");
    assert_eq!(gzipped.headers()["vary"], "accept-encoding");
    assert!(!gzipped.headers().contains_key("content-length"));
    assert_eq!(gzipped.body()[..2], [0x1f, 0x8b], "a gzip member");
    assert!(gzipped.body().len() < plain.body().len());
    // The routing headers and the request id are still there.
    assert_eq!(gzipped.headers()["x-switchyard-model-group"], "gpt-4o");
    assert!(gzipped.headers().contains_key("x-request-id"));

    // An encoding the gateway does not speak, or gzip refused: the answer as it is.
    for refused in ["br", "gzip;q=0, identity"] {
        let answer = raw_call(&gw, "/v1/embeddings", embed.clone(), Some(refused)).await;
        assert!(!answer.headers().contains_key("content-encoding"), "{refused}");
        let _: Value = serde_json::from_slice(answer.body()).expect("JSON as it is");
    }
}

#[tokio::test]
async fn streams_and_small_answers_are_never_compressed() {
    let gw = large_json_gateway();
    let chat = |stream: bool| json!({ "model": "gpt-4o", "stream": stream, "messages": [{ "role": "user", "content": "hi" }] });

    let stream = raw_call(&gw, "/v1/chat/completions", chat(true), Some("gzip")).await;
    assert_eq!(stream.status(), StatusCode::OK);
    assert!(stream.headers()["content-type"].to_str().expect("ascii").starts_with("text/event-stream"));
    assert!(!stream.headers().contains_key("content-encoding"), "a stream is never compressed");
    assert!(!stream.headers().contains_key("vary"));
    let text = std::str::from_utf8(stream.body()).expect("plain text events");
    assert!(text.contains("data: [DONE]"), "{text}");

    let small = raw_call(&gw, "/v1/chat/completions", chat(false), Some("gzip")).await;
    assert_eq!(small.status(), StatusCode::OK);
    assert!(small.body().len() < 1024, "{} bytes", small.body().len());
    assert!(!small.headers().contains_key("content-encoding"), "not worth compressing");
    let _: Value = serde_json::from_slice(small.body()).expect("JSON as it is");
}

/// A provider that panics on every call: a bug anywhere below the edge.
fn panicking() -> impl tower::Service<
    Request<Bytes>,
    Response = http::Response<switchyard::layers::RouteBody>,
    Error = switchyard::layers::BoxError,
    Future: Send + 'static,
> + Clone
+ Send
+ Sync
+ 'static {
    tower::service_fn(|_req: Request<Bytes>| async move {
        if true {
            panic!("a provider bug");
        }
        Ok(http::Response::new(switchyard::layers::RouteBody::empty()))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_while_answering_is_a_500_and_the_connection_serves_the_next_request() {
    let gw = Gateway::builder(Config::from_yaml_str(OPEN).expect("valid config"))
        .provider(panicking())
        .build()
        .expect("gateway");
    let (addr, _stop) = serve(gw).await;
    let mut stream = TcpStream::connect(&addr).await.expect("connect");
    let chat = json!({ "model": "gpt-4o", "messages": [{ "role": "user", "content": "hi" }] }).to_string();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-request-id: req-panic\r\ncontent-length: {}\r\n\r\n{chat}",
        chat.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let answer = read_response(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 500"), "{answer}");
    let lower = answer.to_ascii_lowercase();
    assert!(lower.contains("x-switchyard-error: internal_error"), "{answer}");
    assert!(lower.contains("x-request-id: req-panic"), "{answer}");
    let body: Value = serde_json::from_str(&answer[answer.find("\r\n\r\n").expect("head") + 4..]).expect("JSON");
    assert_eq!(body["error"]["type"], "server_error");
    assert_eq!(body["error"]["code"], "internal_error");
    assert!(!answer.contains("a provider bug"), "the panic is not shown to the client");

    // The same connection serves the next request.
    stream.write_all(LIVENESS).await.expect("write");
    let answer = read_response(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}
