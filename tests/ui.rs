//! The `/ui` dashboard and the state endpoints it reads.
//!
//! The fast tests call the app in-process; the gateway routes through the real HTTP provider to
//! mock upstreams on loopback, one of which answers 429 so that the router benches it. The
//! browser test (`#[ignore]`, run by `scripts/test --long`) serves the gateway on a loopback port
//! and renders `/ui` in headless Chromium (Debian's `chromium`, installed with apt-get when
//! missing), then checks what the page shows and takes the screenshot of `docs/observability.md`
//! (written to `docs/img/dashboard.png` when `UPDATE_SCREENSHOTS=1`).
#![cfg(feature = "gateway")]

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body::Body as _;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use switchyard::{
    Config,
    gateway::Gateway,
    services::{
        mock::{MockHandle, MockProfile, MockUpstream},
        profile::{Failure, Latency},
        provider::{HttpProvider, ProviderConfig},
    },
};
use tower::ServiceExt;

const KEY: &str = "sk-dashboard-master";
/// Bound on anything a test waits for.
const PATIENCE: Duration = Duration::from_secs(20);
/// The deployment the tests bench: its upstream answers 429.
const LIMITED: &str = "gpt-4o-us";

/// Three mock upstreams: a healthy one, one that answers 429 and one that answers 500.
struct Upstreams {
    healthy: MockHandle,
    limited: MockHandle,
    broken: MockHandle,
}

impl Upstreams {
    fn start() -> Self {
        let ms = |n| Latency::log_normal(Duration::from_millis(n), Duration::from_millis(n * 4));
        let healthy =
            MockProfile::builder().latency(ms(25)).chunk_interval(ms(4)).chunks(6).build().expect("valid profile");
        let limited = MockProfile::builder().fail(Failure::RateLimited, 1.0).build().expect("valid profile");
        let broken = MockProfile::builder().fail(Failure::InternalError, 1.0).build().expect("valid profile");
        Self {
            healthy: MockUpstream::start(healthy).expect("mock upstream"),
            limited: MockUpstream::start(limited).expect("mock upstream"),
            broken: MockUpstream::start(broken).expect("mock upstream"),
        }
    }

    /// `gpt-4o` has a healthy deployment (weight 3) and one answering 429 (weight 1); `claude`
    /// answers 500 and falls back to `gpt-4o`.
    fn config(&self, master_key: bool) -> Config {
        let key = if master_key { format!("general_settings: {{ master_key: {KEY} }}") } else { String::new() };
        let yaml = format!(
            r#"
model_list:
  - model_name: gpt-4o
    litellm_params: {{ model: openai/gpt-4o, api_base: "{}", api_key: sk-upstream, rpm: 600, tpm: 200000, weight: 3 }}
    model_info: {{ id: gpt-4o-eu }}
  - model_name: gpt-4o
    litellm_params: {{ model: openai/gpt-4o, api_base: "{}", api_key: sk-upstream, rpm: 600, weight: 1 }}
    model_info: {{ id: {LIMITED} }}
  - model_name: claude
    litellm_params: {{ model: openai/claude-sonnet, api_base: "{}", api_key: sk-upstream, max_parallel_requests: 8 }}
    model_info: {{ id: claude-main }}
router_settings:
  cooldown_time: 300
  num_retries: 1
  fallbacks: [{{ claude: [gpt-4o] }}]
{key}
"#,
            self.healthy.base_url(),
            self.limited.base_url(),
            self.broken.base_url(),
        );
        Config::from_yaml_str(&yaml).expect("valid config")
    }

    async fn shutdown(self) {
        self.healthy.shutdown().await;
        self.limited.shutdown().await;
        self.broken.shutdown().await;
    }
}

fn gateway(upstreams: &Upstreams, master_key: bool) -> Gateway {
    let provider = HttpProvider::new(ProviderConfig::default().timeout(Duration::from_secs(10))).expect("provider");
    Gateway::builder(upstreams.config(master_key)).provider(provider).seed(3).build().expect("gateway")
}

/// An answer read whole.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_else(|| panic!("no `{name}` header"))
    }
}

async fn send(gw: &Gateway, req: Request<Body>) -> Answer {
    let resp =
        tokio::time::timeout(PATIENCE, gw.router().oneshot(req)).await.expect("answered in time").expect("infallible");
    let (parts, body) = resp.into_parts();
    let body = tokio::time::timeout(PATIENCE, body.collect()).await.expect("body in time").expect("body").to_bytes();
    Answer { status: parts.status, headers: parts.headers, body }
}

fn request(method: &str, path: &str, key: Option<&str>, body: Option<&Value>) -> Request<Body> {
    let mut req = Request::builder().method(method).uri(path);
    if let Some(key) = key {
        req = req.header("authorization", format!("Bearer {key}"));
    }
    match body {
        Some(b) => req.header("content-type", "application/json").body(Body::from(b.to_string())),
        None => req.body(Body::empty()),
    }
    .expect("request")
}

fn chat(model: &str, stream: bool, key: Option<&str>) -> Request<Body> {
    let body = json!({ "model": model, "stream": stream, "messages": [{ "role": "user", "content": "hello" }] });
    request("POST", "/v1/chat/completions", key, Some(&body))
}

/// `id`'s entry in `GET /router/state`.
fn deployment<'a>(state: &'a Value, id: &str) -> &'a Value {
    state["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["deployments"].as_array().into_iter().flatten())
        .find(|d| d["id"] == id)
        .unwrap_or_else(|| panic!("no deployment `{id}` in {state}"))
}

async fn state(gw: &Gateway, key: Option<&str>) -> Value {
    let answer = send(gw, request("GET", "/router/state", key, None)).await;
    assert_eq!(answer.status, StatusCode::OK);
    answer.json()
}

/// Sends `gpt-4o` calls (every third one streamed) until the 429 deployment is benched, then a
/// few more, and two `claude` calls that fall back; returns the state.
async fn drive_traffic(gw: &Gateway, key: Option<&str>) -> Value {
    let mut benched = false;
    for i in 0..60 {
        let answer = send(gw, chat("gpt-4o", i % 3 == 0, key)).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", String::from_utf8_lossy(&answer.body));
        if !benched {
            benched = deployment(&state(gw, key).await, LIMITED)["state"] == "cooling_down";
        } else if i >= 24 {
            break;
        }
    }
    assert!(benched, "the 429 deployment was never picked");
    for _ in 0..2 {
        let answer = send(gw, chat("claude", false, key)).await;
        assert_eq!(answer.status, StatusCode::OK, "claude falls back to gpt-4o");
        assert_eq!(answer.header("x-switchyard-model-group"), "gpt-4o");
    }
    state(gw, key).await
}

// ---------------------------------------------------------------- fast tests (CI)

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_endpoint_reports_the_benched_deployment_with_reason_status_and_countdown() {
    let upstreams = Upstreams::start();
    let gw = gateway(&upstreams, true);
    let state = drive_traffic(&gw, Some(KEY)).await;

    assert_eq!(state["master_key"], true);
    assert_eq!(state["window_seconds"], 60);
    let names: Vec<&str> =
        state["groups"].as_array().expect("groups").iter().filter_map(|g| g["name"].as_str()).collect();
    assert_eq!(names, ["gpt-4o", "claude"], "config order");

    let us = deployment(&state, LIMITED);
    assert_eq!(us["state"], "cooling_down", "{us}");
    assert_eq!(us["cooldown"]["status"], "cooling_down");
    assert_eq!(us["cooldown"]["http_status"], 429);
    let reason = us["cooldown"]["reason"].as_str().expect("a reason");
    assert!(reason.starts_with("rate limited"), "{reason}");
    let left = us["cooldown"]["until_seconds"].as_f64().expect("a countdown");
    assert!(left > 200.0 && left <= 300.0, "cooldown_time is 300 s: {left}");
    assert!(us["window"]["errors_by_class"]["rate_limited"].as_u64() >= Some(1), "{us}");
    assert_eq!(us["weight_share"], 0.25);

    let eu = deployment(&state, "gpt-4o-eu");
    assert_eq!(eu["state"], "healthy");
    assert_eq!(eu["weight_share"], 0.75);
    assert!(eu["traffic_share"].as_f64() > Some(0.5), "{eu}");
    assert!(eu["window"]["attempts"].as_u64() >= Some(20), "{eu}");
    assert!(eu["window"]["latency_ms"]["p50"].as_f64() > Some(1.0), "{eu}");
    assert!(eu["window"]["ttft_ms"]["p99"].as_f64().is_some(), "streams record TTFT: {eu}");
    assert_eq!(eu["rpm"]["limit"], 600);
    assert!(eu["rpm"]["used"].as_u64() >= Some(20), "{eu}");
    assert_eq!(eu["window"]["series"]["attempts"].as_array().map(Vec::len), Some(60));

    let claude = deployment(&state, "claude-main");
    assert_eq!(claude["parallel"]["limit"], 8);
    assert!(claude["window"]["errors_by_class"]["server_error"].as_u64() >= Some(2), "{claude}");

    upstreams.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_feed_shows_cooldowns_fallbacks_and_operator_actions() {
    let upstreams = Upstreams::start();
    let gw = gateway(&upstreams, true);
    drive_traffic(&gw, Some(KEY)).await;

    let feed = send(&gw, request("GET", "/router/events", Some(KEY), None)).await.json();
    let events = feed["events"].as_array().expect("events");
    let set = events
        .iter()
        .find(|e| e["kind"] == "cooldown_set" && e["deployment"] == LIMITED)
        .unwrap_or_else(|| panic!("no cooldown event in {feed}"));
    assert_eq!(
        (set["group"].as_str(), set["status"].as_u64(), set["by"].as_str()),
        (Some("gpt-4o"), Some(429), Some("router"))
    );
    assert!(set["at_ms"].as_u64() > Some(1_600_000_000_000), "a wall-clock timestamp: {set}");
    let hop = events.iter().find(|e| e["kind"] == "fallback").unwrap_or_else(|| panic!("no fallback in {feed}"));
    assert_eq!(
        (hop["from"].as_str(), hop["to"].as_str(), hop["reason"].as_str()),
        (Some("claude"), Some("gpt-4o"), Some("server_error"))
    );
    assert!(events.iter().any(|e| e["kind"] == "fallback_succeeded"), "{feed}");
    let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order: {seqs:?}");

    // An operator's bench and re-admission are in the feed too, after the last event seen.
    let last = feed["last_seq"].as_u64().expect("last_seq");
    let bench = json!({ "seconds": 60, "reason": "maintenance <b>window</b>" });
    let answer = send(&gw, request("POST", "/router/deployments/gpt-4o-eu/cooldown", Some(KEY), Some(&bench))).await;
    assert_eq!(answer.status, StatusCode::OK);
    let answer = send(&gw, request("DELETE", "/router/deployments/gpt-4o-eu/cooldown", Some(KEY), None)).await;
    assert_eq!(answer.status, StatusCode::OK);
    let page = send(&gw, request("GET", &format!("/router/events?after={last}"), Some(KEY), None)).await.json();
    let kinds: Vec<(&str, &str)> = page["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| (e["kind"].as_str().unwrap_or(""), e["deployment"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(kinds, [("cooldown_set", "gpt-4o-eu"), ("cooldown_lifted", "gpt-4o-eu")], "{page}");
    assert_eq!(page["events"][0]["by"], "operator");
    assert_eq!(page["events"][0]["reason"], "maintenance <b>window</b>", "kept as text; the page escapes it");
    assert_eq!(page["events"][1]["how"], "operator");

    let refused = send(&gw, request("GET", "/router/events?after=x", Some(KEY), None)).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    upstreams.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_sends_routing_events_as_server_sent_events() {
    let upstreams = Upstreams::start();
    let gw = gateway(&upstreams, true);
    let resp = gw.router().oneshot(request("GET", "/router/events/stream", Some(KEY), None)).await.expect("infallible");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut body = resp.into_body();

    let bench = json!({ "seconds": 30 });
    let answer = send(&gw, request("POST", "/router/deployments/claude-main/cooldown", Some(KEY), Some(&bench))).await;
    assert_eq!(answer.status, StatusCode::OK);
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !text.contains("\n\n") {
        let frame =
            tokio::time::timeout_at(deadline, std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)))
                .await
                .expect("an event in time")
                .expect("the stream stays open")
                .expect("a frame");
        if let Ok(data) = frame.into_data() {
            text.push_str(&String::from_utf8_lossy(&data));
        }
    }
    assert!(text.starts_with("event: routing\n"), "{text}");
    let data = text.lines().find_map(|l| l.strip_prefix("data: ")).expect("data line");
    let event: Value = serde_json::from_str(data).expect("event JSON");
    assert_eq!((event["kind"].as_str(), event["deployment"].as_str()), (Some("cooldown_set"), Some("claude-main")));
    upstreams.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_served_open_with_its_content_type_and_csp_while_its_data_needs_the_key() {
    let upstreams = Upstreams::start();
    let gw = gateway(&upstreams, true);
    for (path, content_type, needle) in [
        ("/ui", "text/html; charset=utf-8", "<title>Switchyard"),
        ("/ui/app.js", "text/javascript; charset=utf-8", "sessionStorage"),
        ("/ui/app.css", "text/css; charset=utf-8", ".badge"),
    ] {
        let answer = send(&gw, request("GET", path, None, None)).await;
        assert_eq!(answer.status, StatusCode::OK, "{path} is open");
        assert_eq!(answer.header("content-type"), content_type, "{path}");
        let csp = answer.header("content-security-policy");
        for directive in ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"] {
            assert!(csp.contains(directive), "{path}: `{directive}` missing from {csp}");
        }
        assert!(!csp.contains("unsafe-inline") && !csp.contains("http"), "{csp}");
        assert_eq!(answer.header("x-content-type-options"), "nosniff");
        assert!(String::from_utf8_lossy(&answer.body).contains(needle), "{path}");
    }
    let page = String::from_utf8_lossy(&send(&gw, request("GET", "/ui", None, None)).await.body).into_owned();
    assert!(
        !page.contains("<script>") && !page.contains("style=") && !page.contains("://"),
        "no inline code, nothing remote"
    );
    let js = String::from_utf8_lossy(&send(&gw, request("GET", "/ui/app.js", None, None)).await.body).into_owned();
    for unsafe_sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "localStorage", "eval("] {
        assert!(!js.contains(unsafe_sink), "app.js uses `{unsafe_sink}`");
    }
    let slash = send(&gw, request("GET", "/ui/", None, None)).await;
    assert_eq!((slash.status, slash.header("location")), (StatusCode::PERMANENT_REDIRECT, "../ui"));

    for path in ["/router/state", "/router/events", "/router/events/stream"] {
        let answer = send(&gw, request("GET", path, None, None)).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{path} needs the key");
    }
    let bench = send(&gw, request("POST", "/router/deployments/gpt-4o-eu/cooldown", None, None)).await;
    assert_eq!(bench.status, StatusCode::UNAUTHORIZED);
    upstreams.shutdown().await;
}

// ---------------------------------------------------------------- in a real browser

/// Debian's Chromium: found on the PATH, else installed with apt-get (as root). `None` when
/// neither works.
fn chromium() -> Option<PathBuf> {
    let find = || {
        ["chromium", "chromium-browser", "google-chrome"].iter().find_map(|name| {
            std::env::var_os("PATH")
                .map(|paths| std::env::split_paths(&paths).map(|p| p.join(name)).collect::<Vec<_>>())
                .unwrap_or_default()
                .into_iter()
                .find(|p| p.is_file())
        })
    };
    if let Some(found) = find() {
        return Some(found);
    }
    eprintln!("chromium is missing: installing Debian's chromium and chromium-driver with apt-get");
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if apt(&["update", "-qq"]) && apt(&["install", "-y", "-qq", "chromium", "chromium-driver"]) {
        return find();
    }
    None
}

/// Runs headless Chromium on `url` with `action` (`--dump-dom` or `--screenshot=...`) after
/// the page has had `budget` of virtual time; returns its standard output.
fn render(chromium: &Path, profile: &Path, url: &str, action: &str, budget: Duration) -> String {
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--hide-scrollbars",
            "--window-size=1920,1080",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--virtual-time-budget={}", budget.as_millis()))
        .arg(action)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    loop {
        match child.try_wait().expect("chromium runs") {
            Some(_) => break,
            None if started.elapsed() > Duration::from_secs(90) => {
                let _ = child.kill();
                panic!("chromium did not finish within 90 s");
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    let out = child.wait_with_output().expect("chromium output");
    assert!(out.status.success(), "chromium failed: {:?}", out.status);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_event_stream_does_not_hold_the_graceful_shutdown() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let upstreams = Upstreams::start();
    let gw = gateway(&upstreams, true); // the default grace period: 30 s
    let (origin, stop, server) = serve(&gw).await;
    let mut conn = tokio::net::TcpStream::connect(origin.trim_start_matches("http://")).await.expect("connect");
    let head = format!("GET /router/events/stream HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer {KEY}\r\n\r\n");
    conn.write_all(head.as_bytes()).await.expect("request");
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(PATIENCE, conn.read(&mut buf)).await.expect("headers in time").expect("read");
        assert!(n > 0, "the stream closed before its headers");
        got.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&got));
    let _ = stop.send(());
    let done = tokio::time::timeout(Duration::from_secs(10), server).await;
    assert!(done.is_ok(), "serve() waited for the open event stream instead of ending it");
    upstreams.shutdown().await;
}

/// The `<tr>` of deployment `id` in a dumped DOM.
fn row<'a>(dom: &'a str, id: &str) -> &'a str {
    let marker = format!("data-deployment=\"{id}\"");
    let at = dom.find(&marker).unwrap_or_else(|| panic!("no row for `{id}` in the page:\n{dom}"));
    let start = dom[..at].rfind("<tr").expect("row start");
    let end = dom[at..].find("</tr>").map(|e| at + e).expect("row end");
    &dom[start..end]
}

async fn serve(
    gw: &Gateway,
) -> (String, tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<std::io::Result<()>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("address"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let gw = gw.clone();
    let task = tokio::spawn(async move {
        gw.serve(listener, async move {
            let _ = stopped.await;
        })
        .await
    });
    (origin, stop, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts headless Chromium (installs it with apt-get when missing); scripts/test --long"]
async fn the_dashboard_shows_the_benched_deployment_cooling_down_in_chromium() {
    let began = Instant::now();
    let Some(chromium) = tokio::task::spawn_blocking(chromium).await.expect("task") else {
        eprintln!("SKIPPED: no chromium on the PATH and `apt-get install chromium chromium-driver` failed");
        return;
    };
    let upstreams = Upstreams::start();
    let gw = gateway(&upstreams, false);
    drive_traffic(&gw, None).await;
    let (origin, stop, server) = serve(&gw).await;
    let profile = std::env::temp_dir().join(format!("switchyard-ui-{}", std::process::id()));
    let url = format!("{origin}/ui");

    let dom = {
        let (chromium, profile, url) = (chromium.clone(), profile.join("dom"), url.clone());
        tokio::task::spawn_blocking(move || render(&chromium, &profile, &url, "--dump-dom", Duration::from_secs(4)))
            .await
            .expect("task")
    };
    let us = row(&dom, LIMITED);
    assert!(us.contains("data-state=\"cooling_down\""), "{us}");
    assert!(us.contains(">cooling down</span>"), "the badge: {us}");
    assert!(us.contains("HTTP 429"), "the status: {us}");
    assert!(us.contains("rate limited: "), "the reason: {us}");
    let countdown = us.split("class=\"countdown\"").nth(1).expect("a countdown");
    let shown = countdown.split_once('>').and_then(|(_, rest)| rest.split_once('<')).map(|(t, _)| t).unwrap_or("");
    assert!(shown.starts_with('4') || shown.starts_with('3') || shown.starts_with('5'), "minutes left: {shown:?}");
    assert!(shown.contains("m "), "{shown:?}");
    let eu = row(&dom, "gpt-4o-eu");
    assert!(eu.contains("data-state=\"healthy\""), "{eu}");
    assert!(eu.contains("<polyline"), "latency chart drawn: {eu}");
    assert!(dom.contains("data-kind=\"cooldown_set\""), "the feed shows the cooldown");
    assert!(dom.contains("data-kind=\"fallback\""), "the feed shows the fallback");
    assert!(dom.contains("data-status=\"live\""), "the page is polling");

    let shot = profile.join("dashboard.png");
    {
        let (chromium, profile, url, arg) =
            (chromium.clone(), profile.join("shot"), url.clone(), format!("--screenshot={}", shot.display()));
        tokio::task::spawn_blocking(move || render(&chromium, &profile, &url, &arg, Duration::from_secs(4)))
            .await
            .expect("task");
    }
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "a PNG with content ({} bytes)", png.len());
    if std::env::var_os("UPDATE_SCREENSHOTS").is_some() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/img/dashboard.png");
        std::fs::write(&docs, &png).expect("write docs/img/dashboard.png");
        eprintln!("wrote {}", docs.display());
    }

    // With a master key, the page asks for it instead of showing anything.
    let _ = stop.send(());
    tokio::time::timeout(PATIENCE, server).await.expect("stopped in time").expect("task").expect("clean stop");
    let keyed = gateway(&upstreams, true);
    let (origin, stop, server) = serve(&keyed).await;
    let dom = {
        let (chromium, profile, url) = (chromium.clone(), profile.join("key"), format!("{origin}/ui"));
        tokio::task::spawn_blocking(move || render(&chromium, &profile, &url, "--dump-dom", Duration::from_secs(2)))
            .await
            .expect("task")
    };
    assert!(dom.contains("data-status=\"auth\""), "asks for the key:\n{dom}");
    let form =
        dom.split("id=\"key-form\"").nth(1).and_then(|f| f.split_once('>')).map(|(attrs, _)| attrs).unwrap_or("");
    assert!(!form.contains("hidden"), "the key form shows: {form}");
    assert!(!dom.contains("data-deployment="), "nothing shown without the key");

    let _ = stop.send(());
    tokio::time::timeout(PATIENCE, server).await.expect("stopped in time").expect("task").expect("clean stop");
    let _ = std::fs::remove_dir_all(&profile);
    upstreams.shutdown().await;
    eprintln!("browser test took {:.1} s", began.elapsed().as_secs_f64());
}
