//! Security: secrets never leave, the master key is checked whole, clients cannot supply
//! credentials or endpoints, upstream headers stay upstream, and size limits hold
//! (`docs/security.md` is the threat model these tests pin).
//!
//! The secrets below are chosen so that no pattern masks them (no key prefix, no digits): only
//! masking the configured values themselves keeps them out. Every output a secret could reach is
//! captured and searched: `Debug` of the config, router and store, every log line at TRACE (one
//! global `tracing` subscriber, which is why this is its own test binary: `tracing` caches
//! callsite interest per process), `/metrics`, every response head and body (including unknown
//! groups, an upstream that echoes the key in its error body, headers and stream, upstream 4xx,
//! 429 and 5xx, a refused connection), config and reload errors, Redis connection errors, and
//! every key, value and pub/sub message in Redis.
//!
//! Sockets only on 127.0.0.1, real time, waits on events with generous bounds.
#![cfg(feature = "gateway")]

#[cfg(feature = "redis")]
#[path = "../layers/tests/support/redis.rs"]
mod redis_support;

use std::{
    net::SocketAddr,
    path::PathBuf,
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use axum::{body::Body, extract::State, response::Response};
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde_json::{Value, json};
use switchyard::{
    Config,
    gateway::Gateway,
    services::{
        mock::MockUpstream,
        provider::{HttpProvider, ProviderConfig},
    },
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    sync::oneshot,
};
use tower::ServiceExt;

#[path = "support/capture.rs"]
mod capture;
use capture::Capture;

/// The deployments' OpenAI key.
const UPSTREAM_KEY: &str = "plain-upstream-credential";
/// The Azure deployment's key.
const AZURE_KEY: &str = "plain-azure-credential";
/// A credential in a deployment's `extra_headers`.
const EXTRA_SECRET: &str = "plain-extra-header-credential";
/// The gateway's master key.
const MASTER_KEY: &str = "plain-gateway-master-credential";
/// The Redis password (inside `redis_url`, or as `redis_password`).
const REDIS_PASSWORD: &str = "plain-redis-credential";
/// A password inside `redis_url` that `redis_password` overrides.
const REDIS_URL_PASSWORD: &str = "plain-overridden-redis-url-credential";
/// Every secret the outputs are searched for.
const SECRETS: [&str; 6] = [UPSTREAM_KEY, AZURE_KEY, EXTRA_SECRET, MASTER_KEY, REDIS_PASSWORD, REDIS_URL_PASSWORD];

/// Bound on anything a test waits for.
const PATIENCE: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------- captured outputs

/// Installs the process-wide TRACE subscriber once (spans with their fields on open and close)
/// and returns its capture.
fn logs() -> &'static Capture {
    static LOGS: OnceLock<Capture> = OnceLock::new();
    LOGS.get_or_init(|| {
        let capture = Capture::default();
        let writer = capture.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::TRACE)
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber of this binary");
        capture
    })
}

/// Everything a secret could reach, by where it came from.
#[derive(Default)]
struct Outputs(Vec<(String, String)>);

impl Outputs {
    fn add(&mut self, label: impl Into<String>, text: impl Into<String>) {
        self.0.push((label.into(), text.into()));
    }

    fn add_answer(&mut self, label: &str, answer: &Answer) {
        self.add(format!("{label}: head"), format!("{:?} {:?}", answer.status, answer.headers));
        self.add(format!("{label}: body"), answer.text());
    }

    /// Panics naming every output that holds a secret, with the text around it. A JSON text (or
    /// a JSON line, `data: ` lines of a stream included) is also searched as its decoded strings,
    /// so a secret spelled with escapes (`\u0070lain-...`) is found too.
    fn assert_free_of(&self, secrets: &[&str]) {
        let mut leaks = Vec::new();
        for (label, text) in &self.0 {
            for view in views(text) {
                for secret in secrets {
                    if let Some(at) = view.find(secret) {
                        let mut from = at.saturating_sub(120);
                        while !view.is_char_boundary(from) {
                            from -= 1;
                        }
                        let mut to = (at + secret.len() + 120).min(view.len());
                        while !view.is_char_boundary(to) {
                            to += 1;
                        }
                        leaks.push(format!("`{secret}` in {label}: …{}…", &view[from..to]));
                    }
                }
            }
        }
        assert!(leaks.is_empty(), "{} leak(s):\n{}", leaks.len(), leaks.join("\n"));
        assert!(self.0.iter().any(|(_, t)| !t.is_empty()), "nothing was captured");
    }
}

/// `text`, and the decoded strings of `text` and of each of its lines that is JSON.
fn views(text: &str) -> Vec<String> {
    fn strings(value: &Value, out: &mut String) {
        match value {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            Value::Object(map) => map.iter().for_each(|(k, v)| {
                out.push_str(k);
                out.push('\n');
                strings(v, out);
            }),
            _ => {}
        }
    }
    let mut decoded = String::new();
    let candidates = std::iter::once(text).chain(text.lines().map(|l| l.strip_prefix("data: ").unwrap_or(l).trim()));
    for candidate in candidates {
        if let Ok(value) = serde_json::from_str::<Value>(candidate) {
            strings(&value, &mut decoded);
        }
    }
    vec![text.to_owned(), decoded]
}

// ---------------------------------------------------------------- a hostile upstream

/// What the hostile upstream received: every request's headers.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<HeaderMap>>>);

impl Received {
    fn all(&self) -> Vec<HeaderMap> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// An OpenAI-compatible upstream that does everything a client must never see: it echoes the key
/// it was sent (in error bodies, raw and JSON-escaped, in headers and mid-stream), sets cookies,
/// hop-by-hop and `x-` headers. The body's `model` picks the behaviour.
async fn hostile(State(received): State<Received>, headers: HeaderMap, body: Bytes) -> Response {
    received.0.lock().unwrap_or_else(|e| e.into_inner()).push(headers.clone());
    let key = headers
        .get("authorization")
        .or_else(|| headers.get("api-key"))
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim_start_matches("Bearer ").to_owned())
        .unwrap_or_default();
    let tenant = headers.get("x-tenant").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    // The key with its first character as a JSON escape: the same string to any JSON reader.
    let escaped = match key.chars().next() {
        Some(c) => format!("\\u{:04x}{}", u32::from(c), &key[c.len_utf8()..]),
        None => String::new(),
    };
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let model = request["model"].as_str().unwrap_or_default().to_owned();
    let stream = request["stream"] == true;
    let error = |code: &str| {
        format!(
            r#"{{"error":{{"message":"Incorrect API key provided: {key}. Escaped: {escaped}. Tenant: {tenant}","type":"{key}","param":"{escaped}","code":"{code}","key":"{key}"}}}}"#
        )
    };
    let (status, body, content_type) = match model.as_str() {
        "echo-401" => (401, error("invalid_api_key"), "application/json"),
        "echo-400" => (400, error(&key), "application/json"),
        "echo-context" => (400, error("context_length_exceeded"), "application/json"),
        "echo-429" => (429, error("rate_limit_exceeded"), "application/json"),
        "echo-500" => (500, error("server_error"), "application/json"),
        "echo-text" => (502, format!("<html>bad gateway for {key}</html>"), "text/html"),
        "stream-error" => {
            let chunk = chunk_json(&model, "hi");
            let err = error("server_error");
            (200, format!("data: {chunk}\n\ndata: {err}\n\n"), "text/event-stream")
        }
        _ if stream => {
            let chunk = chunk_json(&model, "hi");
            (200, format!("data: {chunk}\n\ndata: [DONE]\n\n"), "text/event-stream")
        }
        _ => {
            let answer = json!({
                "id": "c1", "object": "chat.completion", "created": 0, "model": model,
                "choices": [{ "index": 0, "message": { "role": "assistant", "content": "hi" }, "finish_reason": "stop" }],
                "usage": { "prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4 }
            });
            (200, answer.to_string(), "application/json")
        }
    };
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .header("set-cookie", format!("session={key}; HttpOnly"))
        .header("x-foo", format!("bar {key}"))
        .header("x-upstream-key", key.clone())
        .header("x-tenant", tenant.clone())
        .header("www-authenticate", format!("Bearer realm=\"{key}\""))
        .header("keep-alive", "timeout=5")
        .header("connection", "close")
        .header("retry-after", "1")
        .body(Body::from(body))
        .unwrap_or_default()
}

fn chunk_json(model: &str, content: &str) -> String {
    json!({
        "id": "c1", "object": "chat.completion.chunk", "created": 0, "model": model,
        "choices": [{ "index": 0, "delta": { "content": content }, "finish_reason": null }]
    })
    .to_string()
}

/// Serves [`hostile`] on a loopback port until the returned sender is dropped.
async fn start_hostile() -> (SocketAddr, Received, oneshot::Sender<()>) {
    let received = Received::default();
    let app = axum::Router::new().fallback(hostile).with_state(received.clone());
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
    (addr, received, stop)
}

/// One deployment per hostile behaviour, an Azure one, one whose upstream refuses connections,
/// and a master key; `extra` is appended to `router_settings`.
fn hostile_config(upstream: SocketAddr, refused: &str, extra: &str) -> String {
    let base = format!("http://{upstream}/v1");
    let mut yaml = String::from("model_list:\n");
    for name in ["ok", "echo-401", "echo-400", "echo-context", "echo-429", "echo-500", "echo-text", "stream-error"] {
        yaml.push_str(&format!(
            "  - model_name: {name}\n    litellm_params: {{ model: openai/{name}, api_base: \"{base}\", api_key: {UPSTREAM_KEY}, \
             extra_headers: {{ x-tenant: {EXTRA_SECRET} }} }}\n    model_info: {{ id: {name}-1 }}\n"
        ));
    }
    yaml.push_str(&format!(
        "  - model_name: azure-400\n    litellm_params: {{ model: azure/echo-400, api_base: \"http://{upstream}\", \
         api_key: {AZURE_KEY}, api_version: \"2024-10-21\" }}\n    model_info: {{ id: azure-1 }}\n"
    ));
    yaml.push_str(&format!(
        "  - model_name: unreachable\n    litellm_params: {{ model: openai/gone, api_base: \"{refused}\", api_key: {UPSTREAM_KEY} }}\n    \
         model_info: {{ id: unreachable-1 }}\n"
    ));
    yaml.push_str(&format!(
        "router_settings:\n  num_retries: 0\n{extra}general_settings: {{ master_key: {MASTER_KEY} }}\n"
    ));
    yaml
}

fn provider() -> HttpProvider {
    HttpProvider::new(ProviderConfig::default().timeout(Duration::from_secs(10))).expect("provider")
}

// ---------------------------------------------------------------- talking to the gateway

/// An answer read whole.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    fn error_kind(&self) -> &str {
        self.headers.get("x-switchyard-error").and_then(|v| v.to_str().ok()).unwrap_or_default()
    }
}

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Serves `gw` on a loopback port; the server stops when the returned sender is dropped.
async fn serve(gw: &Gateway) -> (String, oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("address"));
    let (stop, stopped) = oneshot::channel::<()>();
    let gw = gw.clone();
    tokio::spawn(async move {
        let _ = gw
            .serve(listener, async move {
                let _ = stopped.await;
            })
            .await;
    });
    (origin, stop)
}

/// Sends `req` and reads the answer; a body that ends with an error (a stream cut after its
/// commit point) is kept up to the error, with the error's text after it.
async fn send(req: Request<Full<Bytes>>) -> Answer {
    let resp = tokio::time::timeout(PATIENCE, client().request(req)).await.expect("answered in time").expect("answer");
    let (parts, mut body) = resp.into_parts();
    let mut read = Vec::new();
    let reading = async {
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(frame) => read.extend_from_slice(frame.data_ref().map_or(&b""[..], |d| &d[..])),
                Err(e) => {
                    read.extend_from_slice(format!("\n[body error: {e}]").as_bytes());
                    break;
                }
            }
        }
    };
    tokio::time::timeout(PATIENCE, reading).await.expect("body in time");
    Answer { status: parts.status, headers: parts.headers, body: Bytes::from(read) }
}

fn post(url: String, body: &Value) -> Request<Full<Bytes>> {
    Request::post(url)
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {MASTER_KEY}"))
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request")
}

fn get(url: String) -> Request<Full<Bytes>> {
    Request::get(url).header("authorization", format!("Bearer {MASTER_KEY}")).body(Full::default()).expect("request")
}

fn chat(model: &str, stream: bool) -> Value {
    json!({ "model": model, "stream": stream, "messages": [{ "role": "user", "content": "hello" }] })
}

/// An in-process call of the gateway's app.
async fn call(gw: &Gateway, req: Request<Body>) -> Answer {
    let resp =
        tokio::time::timeout(PATIENCE, gw.router().oneshot(req)).await.expect("answered in time").expect("infallible");
    let (parts, body) = resp.into_parts();
    let body = tokio::time::timeout(PATIENCE, body.collect()).await.expect("body in time").expect("body").to_bytes();
    Answer { status: parts.status, headers: parts.headers, body }
}

fn temp_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("switchyard-security-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

// ---------------------------------------------------------------- secrets

/// Every output of a gateway whose upstream echoes the key, searched for every secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_reach_logs_metrics_debug_headers_or_error_bodies() {
    let logs = logs();
    let mut out = Outputs::default();
    let (upstream, received, _stop_upstream) = start_hostile().await;
    let refused = MockUpstream::refused_base_url().expect("a refused port");

    // Redis is configured with a password in its URL and another in `redis_password`, and is
    // down: the store logs its connection errors and the gateway runs degraded.
    #[cfg(feature = "redis")]
    let (redis_extra, _dead_redis) = {
        let mut server = redis_support::RedisServer::start();
        server.kill();
        let extra = format!(
            "  redis_url: redis://switchyard:{REDIS_URL_PASSWORD}@127.0.0.1:{}/0\n  redis_password: {REDIS_PASSWORD}\n  \
             redis_response_timeout: 0.2\n",
            server.port()
        );
        (extra, server)
    };
    #[cfg(not(feature = "redis"))]
    let redis_extra = String::new();

    let yaml = hostile_config(upstream, &refused, &redis_extra);
    let path = temp_file("leaks.yaml");
    std::fs::write(&path, &yaml).expect("write the config");
    let config = Config::from_path(&path).expect("valid config");
    out.add("Debug of the config", format!("{config:?} {config:#?}"));
    for d in &config.deployments {
        out.add(format!("Debug of deployment {}", d.id), format!("{d:?} {d:#?}"));
    }
    out.add(
        "Debug of the layer configs and the Redis settings",
        format!("{:?} {:?} {:?} {:?}", config.retry, config.cooldown, config.precall, config.redis),
    );
    let builder = Gateway::builder(config).provider(provider()).config_path(&path).seed(3);
    out.add("Debug of the gateway builder", format!("{builder:?}"));
    let gw = builder.build().expect("gateway");
    out.add("Debug of the router", format!("{:?}", gw.routing()));
    out.add("Debug of the registry", format!("{:?}", gw.routing().registry()));
    let (origin, _stop) = serve(&gw).await;
    let url = |path: &str| format!("{origin}{path}");

    // Served answers, whole and streamed.
    for stream in [false, true] {
        let answer = send(post(url("/v1/chat/completions"), &chat("ok", stream))).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
        out.add_answer(&format!("ok (stream: {stream})"), &answer);
    }
    // Every failure the upstream can cause, and our own.
    let failures = [
        ("echo-401", StatusCode::BAD_GATEWAY),
        ("echo-400", StatusCode::BAD_REQUEST),
        ("echo-context", StatusCode::BAD_REQUEST),
        ("echo-429", StatusCode::TOO_MANY_REQUESTS),
        ("echo-500", StatusCode::BAD_GATEWAY),
        ("echo-text", StatusCode::BAD_GATEWAY),
        ("azure-400", StatusCode::BAD_REQUEST),
        ("unreachable", StatusCode::BAD_GATEWAY),
        ("no-such-group", StatusCode::NOT_FOUND),
    ];
    for (model, status) in failures {
        let answer = send(post(url("/v1/chat/completions"), &chat(model, false))).await;
        assert_eq!(answer.status, status, "{model}: {}", answer.text());
        out.add_answer(model, &answer);
        // Again, now that the deployment may be cooling down.
        let again = send(post(url("/v1/chat/completions"), &chat(model, true))).await;
        out.add_answer(&format!("{model} again, streamed"), &again);
    }
    let cut = send(post(url("/v1/chat/completions"), &chat("stream-error", true))).await;
    out.add_answer("a stream whose upstream sends an error event echoing the key", &cut);
    // The upstream did receive the keys it echoed.
    let seen = received.all();
    let sent =
        |name: &str, value: &str| seen.iter().any(|h| h.get(name).is_some_and(|v| v.as_bytes() == value.as_bytes()));
    assert!(sent("authorization", &format!("Bearer {UPSTREAM_KEY}")), "the OpenAI key was sent upstream");
    assert!(sent("api-key", AZURE_KEY), "the Azure key was sent upstream");
    assert!(sent("x-tenant", EXTRA_SECRET), "the extra header was sent upstream");

    // Refusals of the gateway itself.
    let wrong = Request::get(url("/v1/models"))
        .header("authorization", format!("Bearer {MASTER_KEY}x"))
        .body(Full::default())
        .expect("request");
    out.add_answer("wrong master key", &send(wrong).await);
    let credentials =
        json!({ "model": "ok", "messages": [], "api_key": UPSTREAM_KEY, "api_base": "http://evil.example" });
    out.add_answer("client credentials", &send(post(url("/v1/chat/completions"), &credentials)).await);

    // Operations endpoints and metrics.
    for path in
        ["/v1/models", "/router/deployments", "/router/state", "/router/events", "/health/readiness", "/metrics"]
    {
        let answer = send(get(url(path))).await;
        assert!(answer.status.is_success(), "{path}: {} {}", answer.status, answer.text());
        out.add_answer(path, &answer);
    }
    // A bad config file on reload: a YAML error on the key's line, then a type error beside it.
    std::fs::write(&path, format!("{yaml}\n  - model_name: [broken\n    api_key: {UPSTREAM_KEY}\n")).expect("write");
    let answer = send(post(url("/router/reload"), &json!({}))).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.text());
    out.add_answer("reload of a broken file", &answer);
    let bad_rpm =
        yaml.replacen("api_key: plain-upstream-credential,", "api_key: plain-upstream-credential, rpm: -5,", 1);
    std::fs::write(&path, bad_rpm).expect("write");
    out.add_answer("reload of an invalid file", &send(post(url("/router/reload"), &json!({}))).await);
    std::fs::write(&path, &yaml).expect("write");
    let answer = send(post(url("/router/reload"), &json!({}))).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    out.add_answer("reload", &answer);

    // Config errors, shown both ways.
    let broken = [
        format!(
            "model_list:\n  - model_name: a\n    litellm_params: {{ model: openai/a, api_key: {UPSTREAM_KEY}, rpm: -5 }}\n"
        ),
        format!("model_list:\n  - model_name: a\n    litellm_params: {{ model: openai/a, api_key: {UPSTREAM_KEY}\n"),
        format!(
            "model_list:\n  - model_name: a\n    litellm_params: {{ model: openai/a, api_key: [{UPSTREAM_KEY}] }}\n"
        ),
        format!("model_list: []\ngeneral_settings: {{ master_key: [{MASTER_KEY}] }}\n"),
        format!("model_list: []\ngeneral_settings: {{ master_key: {MASTER_KEY}, master_key: {MASTER_KEY} }}\n"),
        format!("model_list: []\nrouter_settings: {{ redis_url: \"http://u:{REDIS_PASSWORD}@cache:6379\" }}\n"),
        format!("model_list: []\nrouter_settings: {{ redis_host: \"u:{REDIS_PASSWORD}@cache\" }}\n"),
        format!(
            "model_list: []\nrouter_settings: {{ redis_url: \"redis://u:{REDIS_PASSWORD}@cache:6379\", redis_ssl: true }}\n"
        ),
        format!(
            "model_list:\n  - model_name: \"*\"\n    litellm_params: {{ model: \"*\", api_key: {UPSTREAM_KEY} }}\n"
        ),
    ];
    for (i, text) in broken.iter().enumerate() {
        let err = Config::from_yaml_str(text).expect_err("a broken config");
        out.add(format!("config error {i}"), format!("{err} {err:?}"));
    }

    // Redis down: readiness says so, and the store's errors were logged.
    #[cfg(feature = "redis")]
    {
        let ready = send(get(url("/health/readiness"))).await;
        assert_eq!(ready.json()["state"]["degraded"], true, "{}", ready.text());
        out.add("Debug of the store", format!("{:?}", gw.routing().store()));
    }

    drop(_stop);
    let log = logs.text();
    assert!(log.contains("answered"), "the request log was captured:\n{log}");
    assert!(log.contains("attempt"), "attempt spans were captured");
    out.add("the TRACE log", log);
    out.assert_free_of(&SECRETS);
    if let Some(dir) = path.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Every key, value and pub/sub message the gateway writes to Redis, with keys in its config
/// and in its traffic: none holds a secret. The gateway logs in with a password in its URL.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_reach_redis() {
    use std::{
        io::{BufRead, BufReader},
        process::{Command, Stdio},
        sync::mpsc,
    };

    let logs = logs();
    let server = redis_support::RedisServer::start();
    let acl = format!(">{REDIS_PASSWORD}");
    assert_eq!(server.command(&["ACL", "SETUSER", "switchyard", "on", &acl, "~*", "&*", "+@all"]), "OK");
    let port = server.port().to_string();

    // Everything published and every command run, as another client sees them, from before the
    // gateway starts. The children are ours; they end when dropped below.
    let watch = |args: &[&str]| {
        let mut child = Command::new("redis-cli")
            .args(["-p", &port, "--no-raw"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-cli");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let first = rx.recv_timeout(PATIENCE).expect("redis-cli answered");
        (child, rx, first)
    };
    let (mut subscriber, published, _) = watch(&["PSUBSCRIBE", "*"]);
    let (mut monitor, monitored, _) = watch(&["MONITOR"]);

    let (upstream, _received, _stop_upstream) = start_hostile().await;
    let refused = MockUpstream::refused_base_url().expect("a refused port");
    let extra = format!(
        "  redis_url: redis://switchyard:{REDIS_PASSWORD}@127.0.0.1:{port}/0\n  redis_namespace: sec\n  \
         allowed_fails: 0\n  cooldown_time: 30\n"
    );
    // A second deployment of `echo-429` so that its 429 cools it down (a single-deployment group
    // is never cooled down), which writes and publishes a cooldown with its reason.
    let mut yaml = hostile_config(upstream, &refused, &extra);
    let second = format!(
        "  - model_name: echo-429\n    litellm_params: {{ model: openai/echo-429, api_base: \"http://{upstream}/v1\", \
         api_key: {UPSTREAM_KEY}, rpm: 1000, tpm: 1000000 }}\n    model_info: {{ id: echo-429-2 }}\n"
    );
    yaml = yaml.replacen("router_settings:\n", &format!("{second}router_settings:\n"), 1);
    let config = Config::from_yaml_str(&yaml).expect("valid config");
    let gw = Gateway::builder(config).provider(provider()).seed(5).build().expect("gateway");
    tokio::time::timeout(PATIENCE, gw.routing().store().ready()).await.expect("connected to Redis");
    let (origin, stop) = serve(&gw).await;
    let url = format!("{origin}/v1/chat/completions");

    for model in ["ok", "echo-429", "echo-429", "echo-500", "echo-401", "unreachable", "azure-400"] {
        for stream in [false, true] {
            let mut body = chat(model, stream);
            body["metadata"] = json!({ "session_id": "s-1" });
            let _ = send(post(url.clone(), &body)).await;
        }
    }
    tokio::time::timeout(PATIENCE, gw.routing().store().flush()).await.expect("state written");
    drop(stop);

    // A cooldown message reached the subscriber: pub/sub traffic was captured.
    let mut messages = Vec::new();
    while !messages.iter().any(|m: &String| m.contains("echo-429")) {
        match published.recv_timeout(PATIENCE) {
            Ok(line) => messages.push(line),
            Err(e) => panic!("no cooldown message was published ({e}); got {messages:?}"),
        }
    }

    let mut out = Outputs::default();
    let mut cursor = "0".to_owned();
    let mut keys = Vec::new();
    loop {
        let reply = server.command(&["SCAN", &cursor, "COUNT", "1000"]);
        let mut lines = reply.lines();
        cursor = lines.next().unwrap_or("0").to_owned();
        keys.extend(lines.map(str::to_owned));
        if cursor == "0" {
            break;
        }
    }
    assert!(keys.iter().any(|k| k.starts_with("sec")), "the gateway wrote its state: {keys:?}");
    for key in &keys {
        let kind = server.command(&["TYPE", key]);
        let value = match kind.as_str() {
            "string" => server.command(&["GET", key]),
            "hash" => server.command(&["HGETALL", key]),
            "list" => server.command(&["LRANGE", key, "0", "-1"]),
            "set" => server.command(&["SMEMBERS", key]),
            "zset" => server.command(&["ZRANGE", key, "0", "-1", "WITHSCORES"]),
            "stream" => server.command(&["XRANGE", key, "-", "+"]),
            other => format!("({other})"),
        };
        out.add(format!("redis key `{key}` ({kind})"), format!("{key} {value}"));
    }
    out.add("redis CLIENT LIST", server.command(&["CLIENT", "LIST"]));
    out.add("redis SLOWLOG", server.command(&["SLOWLOG", "GET", "128"]));
    // The watchers end; each reader thread then drains its pipe to the end and hangs up.
    for child in [&mut subscriber, &mut monitor] {
        let _ = child.kill();
        let _ = child.wait();
    }
    let drain = |rx: mpsc::Receiver<String>, into: &mut Vec<String>| {
        loop {
            match rx.recv_timeout(PATIENCE) {
                Ok(line) => into.push(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("redis-cli output did not end"),
            }
        }
    };
    drain(published, &mut messages);
    out.add("redis pub/sub messages", messages.join("\n"));
    let mut commands = Vec::new();
    drain(monitored, &mut commands);
    assert!(commands.iter().any(|c| c.contains("sec")), "MONITOR saw the gateway's commands");
    out.add("every command the gateway sent (MONITOR)", commands.join("\n"));
    out.add("the TRACE log", logs.text());
    out.assert_free_of(&SECRETS);
}

// ---------------------------------------------------------------- the master key

fn key_gateway() -> Gateway {
    let yaml = format!(
        "model_list:\n  - {{ model_name: m, litellm_params: {{ model: openai/m }}, model_info: {{ id: m-1 }} }}\n\
         general_settings: {{ master_key: {MASTER_KEY} }}\n"
    );
    Gateway::builder(Config::from_yaml_str(&yaml).expect("valid config"))
        .provider(switchyard::services::sim::SimProvider::new(1))
        .build()
        .expect("gateway")
}

fn models_with(header: &str, value: &str) -> Request<Body> {
    Request::get("/v1/models").header(header, value).body(Body::empty()).expect("request")
}

/// The comparison is whole-key: the right key passes in each header LiteLLM accepts; a wrong key
/// of the same length, a prefix, the key with more after it, a different case, an empty key and
/// a non-Bearer scheme are all refused with the same 401.
#[tokio::test]
async fn the_master_key_is_accepted_only_whole_in_each_accepted_header() {
    let _ = logs();
    let gw = key_gateway();
    for (header, value) in [
        ("authorization", format!("Bearer {MASTER_KEY}")),
        ("authorization", format!("bearer  {MASTER_KEY} ")),
        ("api-key", MASTER_KEY.to_owned()),
        ("x-api-key", MASTER_KEY.to_owned()),
        ("x-litellm-api-key", MASTER_KEY.to_owned()),
    ] {
        let answer = call(&gw, models_with(header, &value)).await;
        assert_eq!(answer.status, StatusCode::OK, "{header}: {value}");
    }
    let same_length: String = MASTER_KEY.chars().rev().collect();
    let last_wrong = format!("{}X", &MASTER_KEY[..MASTER_KEY.len() - 1]);
    let first_wrong = format!("X{}", &MASTER_KEY[1..]);
    let long = format!("{MASTER_KEY}{}", "x".repeat(4096));
    let refused = [
        same_length,
        last_wrong,
        first_wrong,
        MASTER_KEY[..MASTER_KEY.len() - 1].to_owned(),
        MASTER_KEY[..1].to_owned(),
        format!("{MASTER_KEY}x"),
        long,
        MASTER_KEY.to_uppercase(),
        String::new(),
    ];
    for wrong in &refused {
        for header in ["api-key", "x-api-key", "x-litellm-api-key"] {
            let answer = call(&gw, models_with(header, wrong)).await;
            assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{header}: {wrong}");
            assert_eq!(answer.error_kind(), "invalid_api_key");
        }
        let answer = call(&gw, models_with("authorization", &format!("Bearer {wrong}"))).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "Bearer {wrong}");
        assert_eq!(answer.headers["www-authenticate"], "Bearer");
    }
    for (header, value) in [("authorization", format!("Basic {MASTER_KEY}")), ("authorization", MASTER_KEY.to_owned())]
    {
        let answer = call(&gw, models_with(header, &value)).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{header}: {value}");
    }
    let none = call(&gw, Request::get("/v1/models").body(Body::empty()).expect("request")).await;
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
    // Every refusal reads the same: nothing tells how close a guess was.
    let a = call(&gw, models_with("x-api-key", &MASTER_KEY[..MASTER_KEY.len() - 1])).await;
    let b = call(&gw, models_with("x-api-key", "x")).await;
    assert_eq!(a.body, b.body);
}

/// Whatever key the client presented never reaches an upstream: the upstream sees the
/// deployment's key only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_key_is_not_forwarded_upstream() {
    let _ = logs();
    let (upstream, received, _stop_upstream) = start_hostile().await;
    let refused = MockUpstream::refused_base_url().expect("a refused port");
    let config = Config::from_yaml_str(&hostile_config(upstream, &refused, "")).expect("valid config");
    let gw = Gateway::builder(config).provider(provider()).build().expect("gateway");
    let mut req = post("/v1/chat/completions".to_owned(), &chat("ok", false)).map(Body::new);
    for name in ["api-key", "x-api-key", "x-litellm-api-key"] {
        req.headers_mut().insert(name, http::HeaderValue::from_static(MASTER_KEY));
    }
    assert_eq!(call(&gw, req).await.status, StatusCode::OK);
    let seen = received.all();
    assert_eq!(seen.len(), 1);
    for (name, value) in &seen[0] {
        assert!(!value.as_bytes().windows(MASTER_KEY.len()).any(|w| w == MASTER_KEY.as_bytes()), "{name} forwarded");
    }
    assert_eq!(seen[0]["authorization"], format!("Bearer {UPSTREAM_KEY}").as_str());
}

// ---------------------------------------------------------------- client-side credentials

/// `api_key`, `api_base` and `base_url` in a body are refused before routing with a typed 400
/// naming the key, however the name is escaped; nothing reaches an upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_side_credentials_are_refused_with_a_typed_400_naming_the_field() {
    let _ = logs();
    let (upstream, received, _stop_upstream) = start_hostile().await;
    let refused = MockUpstream::refused_base_url().expect("a refused port");
    let config = Config::from_yaml_str(&hostile_config(upstream, &refused, "")).expect("valid config");
    let gw = Gateway::builder(config).provider(provider()).build().expect("gateway");
    let bodies = [
        ("api_key", r#"{"model":"ok","messages":[],"api_key":"sk-mine"}"#),
        ("api_base", r#"{"model":"ok","messages":[],"api_base":"http://evil.example/v1"}"#),
        ("base_url", r#"{"model":"ok","messages":[],"base_url":"http://evil.example/v1"}"#),
        ("api_key", r#"{"model":"ok","messages":[],"api\u005fkey":"sk-mine"}"#),
        ("api_base", r#"{"model":"ok","messages":[],"\u0061\u0070\u0069_base":{"url":"http://evil.example"}}"#),
        ("api_key", r#"{"messages":[],"api_key":"sk-mine"}"#),
    ];
    for (field, body) in bodies {
        for path in ["/v1/chat/completions", "/openai/deployments/ok/chat/completions"] {
            let req = Request::post(path)
                .header("authorization", format!("Bearer {MASTER_KEY}"))
                .header("content-type", "application/json")
                .body(Body::from(body))
                .expect("request");
            let answer = call(&gw, req).await;
            assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{path} {body}: {}", answer.text());
            assert_eq!(answer.error_kind(), "client_credentials_not_allowed", "{body}");
            let error = &answer.json()["error"];
            assert_eq!(error["code"], "client_credentials_not_allowed");
            assert_eq!(error["type"], "invalid_request_error");
            let message = error["message"].as_str().unwrap_or_default();
            assert!(message.contains(&format!("`{field}` is not allowed")), "{message}");
        }
    }
    assert!(received.all().is_empty(), "a refused request reached the upstream");
    // `null` is no credential, and the words in a message are not keys.
    let fine = r#"{"model":"ok","messages":[{"role":"user","content":"my api_key and base_url"}],"api_key":null}"#;
    let req = Request::post("/v1/chat/completions")
        .header("authorization", format!("Bearer {MASTER_KEY}"))
        .header("content-type", "application/json")
        .body(Body::from(fine))
        .expect("request");
    assert_eq!(call(&gw, req).await.status, StatusCode::OK);
}

/// A wildcard group whose provider comes from the requested name would let a client pick the
/// host the deployment's key goes to: such a config is refused, naming the key to fix.
#[test]
fn a_config_letting_the_client_choose_the_provider_host_is_refused() {
    let deployment = |group: &str, model: &str, base: &str| {
        format!(
            "model_list:\n  - model_name: \"{group}\"\n    litellm_params: {{ model: \"{model}\", api_key: k{base} }}\n"
        )
    };
    // A provider model that is a wildcard is no provider Switchyard serves: refused as such.
    for (group, model) in [("*", "*"), ("openai/*", "*"), ("*", "*/x"), ("my-*", "*")] {
        let err = Config::from_yaml_str(&deployment(group, model, "")).expect_err(&format!("{group} -> {model}"));
        assert!(err.to_string().contains("model_list[0].litellm_params.model"), "{err}");
    }
    // Wildcard counts that differ use the requested name whole: under a group whose prefix is a
    // wildcard, the client names the provider.
    for (group, model) in [("*", "openai/*/*"), ("*-*", "openai/*"), ("*/*", "groq/*")] {
        let err = Config::from_yaml_str(&deployment(group, model, "")).expect_err(&format!("{group} -> {model}"));
        let text = err.to_string();
        assert!(text.contains("model_list[0].litellm_params.model"), "{text}");
        assert!(text.contains("set `api_base`"), "{text}");
    }
    for (group, model, base) in [
        ("openai/*", "openai/*", ""),
        ("*", "openai/*", ""),
        ("groq/*", "groq/*", ""),
        ("openai/*", "openai/*/*", ""),
        ("*", "*", ", api_base: \"http://127.0.0.1:9/v1\""),
        ("gpt-4o", "openai/gpt-4o", ""),
    ] {
        let yaml = deployment(group, model, base);
        assert!(Config::from_yaml_str(&yaml).is_ok(), "{group} -> {model}{base}");
    }
}

// ---------------------------------------------------------------- upstream headers

/// Nothing of an upstream's head reaches the client: not its cookies, `x-` headers, hop-by-hop
/// headers or challenge, on a served answer, a stream, or an error passed through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_headers_are_not_forwarded_to_the_client() {
    let _ = logs();
    let (upstream, received, _stop_upstream) = start_hostile().await;
    let refused = MockUpstream::refused_base_url().expect("a refused port");
    let config = Config::from_yaml_str(&hostile_config(upstream, &refused, "")).expect("valid config");
    let gw = Gateway::builder(config).provider(provider()).build().expect("gateway");
    let (origin, _stop) = serve(&gw).await;
    for (model, stream) in [("ok", false), ("ok", true), ("echo-400", false), ("echo-429", false), ("echo-401", false)]
    {
        let answer = send(post(format!("{origin}/v1/chat/completions"), &chat(model, stream))).await;
        for name in
            ["set-cookie", "x-foo", "x-upstream-key", "x-tenant", "www-authenticate", "keep-alive", "connection"]
        {
            assert!(!answer.headers.contains_key(name), "{model} (stream: {stream}): `{name}` forwarded");
        }
        if model == "ok" {
            assert_eq!(answer.status, StatusCode::OK);
            assert!(!answer.headers.contains_key("retry-after"), "an upstream's retry-after on a 200 is not ours");
        }
        for (name, value) in &answer.headers {
            let v = value.to_str().unwrap_or_default();
            assert!(!v.contains("plain-"), "{model}: `{name}: {v}` carries a secret");
        }
    }
    assert_eq!(received.all().len(), 5);
}

// ---------------------------------------------------------------- size limits

/// A body over `max_body_bytes` is refused with 413 naming the limit, whether its length is
/// announced or it arrives in chunks, and before the upstream is called.
#[tokio::test]
async fn a_body_over_the_limit_is_refused_with_413_naming_the_limit() {
    let _ = logs();
    let yaml = format!(
        "model_list:\n  - {{ model_name: m, litellm_params: {{ model: openai/m }}, model_info: {{ id: m-1 }} }}\n\
         general_settings: {{ master_key: {MASTER_KEY} }}\n"
    );
    let gw = Gateway::builder(Config::from_yaml_str(&yaml).expect("valid config"))
        .provider(switchyard::services::sim::SimProvider::new(1))
        .max_body_bytes(1024)
        .build()
        .expect("gateway");
    let big = json!({ "model": "m", "messages": [{ "role": "user", "content": "x".repeat(2000) }] }).to_string();
    let announced = Request::post("/v1/chat/completions")
        .header("authorization", format!("Bearer {MASTER_KEY}"))
        .header("content-type", "application/json")
        .header("content-length", big.len())
        .body(Body::from(big.clone()))
        .expect("request");
    let chunks: Vec<Result<Bytes, std::io::Error>> =
        big.as_bytes().chunks(100).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
    let chunked = Request::post("/v1/chat/completions")
        .header("authorization", format!("Bearer {MASTER_KEY}"))
        .header("content-type", "application/json")
        .body(Body::from_stream(futures_util::stream::iter(chunks)))
        .expect("request");
    for req in [announced, chunked] {
        let answer = call(&gw, req).await;
        assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", answer.text());
        assert_eq!(answer.error_kind(), "body_too_large");
        let message = answer.json()["error"]["message"].as_str().unwrap_or_default().to_owned();
        assert!(message.contains("1024 bytes"), "{message}");
    }
    // At the limit is fine.
    let small = json!({ "model": "m", "messages": [{ "role": "user", "content": "hi" }] }).to_string();
    let req = Request::post("/v1/chat/completions")
        .header("authorization", format!("Bearer {MASTER_KEY}"))
        .header("content-type", "application/json")
        .body(Body::from(small))
        .expect("request");
    assert_eq!(call(&gw, req).await.status, StatusCode::OK);
}

/// Writes `head` (and nothing more) on a new connection and reads until the server closes it or
/// has sent a whole response head. `Ok(status)` for a response, `Err` if the connection broke
/// before one arrived.
async fn raw_exchange(addr: &str, head: Vec<u8>) -> Result<u16, std::io::Error> {
    let mut stream = TcpStream::connect(addr).await?;
    let (mut read, mut write) = stream.split();
    // The write side stays open: hyper closes a connection whose client half-closed it.
    let writing = async {
        let _ = write.write_all(&head).await;
    };
    let reading = async {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = read.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
            if got.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
        let text = String::from_utf8_lossy(&got).into_owned();
        text.split(' ')
            .nth(1)
            .and_then(|s| s.parse::<u16>().ok())
            .ok_or_else(|| std::io::Error::other(format!("no status line in {text:?}")))
    };
    let ((), status) = tokio::time::timeout(PATIENCE, async { tokio::join!(writing, reading) })
        .await
        .map_err(|_| std::io::Error::other("no answer in time"))?;
    status
}

/// Too many request headers, or a head larger than hyper's buffer, is refused with 431 (or the
/// connection is closed) and the gateway keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_count_and_size_limits_hold_without_a_crash() {
    let _ = logs();
    let gw = key_gateway();
    let (origin, _stop) = serve(&gw).await;
    let addr = origin.trim_start_matches("http://").to_owned();
    let request = |extra: &str| {
        format!(
            "GET /v1/models HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {MASTER_KEY}\r\n{extra}connection: close\r\n\r\n"
        )
        .into_bytes()
    };
    assert_eq!(raw_exchange(&addr, request("")).await.expect("answered"), 200);

    // hyper's default: at most 100 headers.
    let many: String = (0..150).map(|i| format!("x-h-{i}: v\r\n")).collect();
    assert_eq!(raw_exchange(&addr, request(&many)).await.expect("answered"), 431, "too many headers");

    // hyper's default read buffer: a head over ~400 KiB is refused. The server may close the
    // connection while the rest is still arriving, which can reset it before the 431 is read.
    let big = format!("x-big: {}\r\n", "a".repeat(512 * 1024));
    match raw_exchange(&addr, request(&big)).await {
        Ok(status) => assert_eq!(status, 431, "a head over the buffer"),
        Err(e) => assert!(
            matches!(e.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe),
            "the connection ended with {e}"
        ),
    }
    // A header line that is not a header.
    assert_eq!(raw_exchange(&addr, request("not a header\r\n")).await.expect("answered"), 400);

    // Still serving.
    assert_eq!(raw_exchange(&addr, request("")).await.expect("answered"), 200);
    let answer = send(get(format!("{origin}/v1/models"))).await;
    assert_eq!(answer.status, StatusCode::OK);
}
