//! The agent front doors against chat completions, in the same run: what the gateway adds to a
//! `/v1/messages` or `/v1/responses` request, passed through or translated, beside what it adds to
//! a `/v1/chat/completions` request.
//!
//! Every request goes through the gateway's request path without its listening socket: the
//! ingress (`IngressLayer`: the endpoint from the path, the body read and parsed) over
//! `Router::service()` (the default stack, memory store) over `HttpProvider::new` (hyper over
//! loopback) to a loopback upstream, all on one current-thread tokio runtime. The client's own
//! hop to the gateway (hyper's server, axum's routing, the master key, the request id) is the
//! same for every endpoint, so it is left out: it would add a second loopback round trip's noise
//! to every number and nothing that tells the front doors apart.
//!
//! The upstream replays answers recorded from a `MockUpstream` (no latency, no pause between
//! chunks) at startup: by path (chat, messages, responses) and by the body's `stream`, each
//! stream event a frame of its own, over connections with `TCP_NODELAY`. Replayed, the upstream
//! costs the same in every dialect and next to nothing; the mock's own server leaves Nagle's
//! algorithm on, and a streamed answer written in many small writes then sometimes waits for a
//! delayed ACK (about 40 ms on loopback), which would swamp what is measured here. The
//! upstream's remaining time is taken out by the `direct` cases: the same hyper client calling
//! the upstream's endpoint itself, with the same body. What the gateway adds to a request is its
//! case's time minus the direct call of the dialect the deployment speaks (a `/v1/messages`
//! request to an OpenAI deployment reaches the chat endpoint).
//!
//! Cases (each with one system prompt and a user message of about 1 KB, in its dialect):
//!
//! - `direct chat`, `direct messages`, `direct responses`: the mock's endpoints called directly;
//! - `chat -> openai`: `/v1/chat/completions` to `openai/gpt-4o`, the baseline;
//! - `messages -> anthropic (passthrough)`: `/v1/messages` to `anthropic/claude-sonnet-4-5`;
//! - `messages -> openai (translated)`: `/v1/messages` to `openai/gpt-4o`;
//! - `responses -> openai (passthrough)`: `/v1/responses` to `openai/gpt-4o`;
//! - `responses -> vllm (translated)`: `/v1/responses` to `hosted_vllm/llama-3` (chat only).
//!
//! Shapes: `whole` (a 64-token answer), `stream 8` and `stream 64` (8 or 64 content chunks, read
//! to the end). The cost of one streamed chunk is `(stream 64 - stream 8) / 56`, which leaves the
//! per-stream work out.
//!
//! After the criterion groups, an interleaved pass measures every case again, once per round in
//! a freshly shuffled order, each call timed alone, so that all medians see the same machine
//! (this VM's speed drifts between benchmarks seconds apart), and prints the medians, the added
//! time per request and per chunk, the ratios against chat completions and against each door's
//! passthrough, and the connections the upstreams accepted (0 when the pools stay warm).
//!
//! ```text
//! cargo bench --bench front_doors -- --quick
//! ```
//!
//! `FRONT_DOORS_ROUNDS` sets the interleaved rounds (default 2,000). Under `cargo test --benches`
//! each criterion function runs once and the interleaved pass makes three rounds.

use std::{
    convert::Infallible,
    hint::black_box,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use criterion::{Criterion, criterion_group};
use futures_util::stream;
use http::{HeaderValue, Request, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::{TokioExecutor, TokioIo},
};
use rand::{SeedableRng, rngs::SmallRng, seq::SliceRandom};
use serde::Deserialize;
use serde_json::json;
use switchyard::{
    Config, Router, RouterService,
    services::{
        ingress::{Ingress, IngressLayer},
        mock::{MockProfile, MockUpstream},
        profile::Latency,
        provider::{HttpProvider, ProviderConfig},
    },
};
use tokio::runtime::Runtime;
use tower::{Layer, ServiceExt};

/// Content chunks of the short and the long stream (the long one also sets the whole answer).
const SHORT: u32 = 8;
const LONG: u32 = 64;

/// Interleaved rounds when measuring, and under `cargo test --benches`.
const ROUNDS: usize = 2_000;
const ROUNDS_TEST: usize = 3;

/// Whether criterion measures (`cargo bench`), rather than running each function once as a test.
fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test")
}

/// The endpoint a client calls.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Door {
    Chat,
    Messages,
    Responses,
}

/// Where a case's request goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    /// The mock's own endpoint for the door, called by the bench's client.
    Direct,
    /// The gateway's stack, to the group of this deployment kind.
    Stack(Kind),
}

/// The deployment kinds of the bench config (one group each per mock).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    OpenAi,
    Anthropic,
    Vllm,
}

impl Kind {
    fn group(self, chunks: u32) -> String {
        let name = match self {
            Kind::OpenAi => "gpt",
            Kind::Anthropic => "claude",
            Kind::Vllm => "llama",
        };
        format!("{name}-{chunks}")
    }
}

#[derive(Clone, Copy)]
struct Case {
    name: &'static str,
    door: Door,
    target: Target,
}

impl Case {
    /// The direct call whose time this case's added time is measured against: the mock endpoint
    /// the deployment's dialect reaches.
    fn baseline(self) -> Option<usize> {
        let upstream = match self.target {
            Target::Direct => return None,
            Target::Stack(Kind::Anthropic) => Door::Messages,
            Target::Stack(Kind::OpenAi) if self.door == Door::Responses => Door::Responses,
            Target::Stack(_) => Door::Chat,
        };
        CASES.iter().position(|c| c.target == Target::Direct && c.door == upstream)
    }
}

const CASES: [Case; 8] = [
    Case { name: "direct chat", door: Door::Chat, target: Target::Direct },
    Case { name: "direct messages", door: Door::Messages, target: Target::Direct },
    Case { name: "direct responses", door: Door::Responses, target: Target::Direct },
    Case { name: "chat -> openai", door: Door::Chat, target: Target::Stack(Kind::OpenAi) },
    Case { name: "messages -> anthropic (passthrough)", door: Door::Messages, target: Target::Stack(Kind::Anthropic) },
    Case { name: "messages -> openai (translated)", door: Door::Messages, target: Target::Stack(Kind::OpenAi) },
    Case { name: "responses -> openai (passthrough)", door: Door::Responses, target: Target::Stack(Kind::OpenAi) },
    Case { name: "responses -> vllm (translated)", door: Door::Responses, target: Target::Stack(Kind::Vllm) },
];

/// The chat baseline's index in [`CASES`].
const CHAT: usize = 3;

/// Whole answers, and the two stream lengths.
#[derive(Clone, Copy)]
struct Shape {
    name: &'static str,
    stream: bool,
    chunks: u32,
}

const SHAPES: [Shape; 3] = [
    Shape { name: "whole", stream: false, chunks: LONG },
    Shape { name: "stream 8", stream: true, chunks: SHORT },
    Shape { name: "stream 64", stream: true, chunks: LONG },
];

/// A system prompt and a user message of about 1 KB, the same text in every dialect.
fn texts() -> (String, String) {
    const LINE: &str = "The quick brown fox jumps over the lazy dog while the committee reviews results. ";
    let system = "You are a careful assistant. Answer briefly and precisely.".to_owned();
    (system, LINE.repeat(13))
}

/// The body of `door`'s request to `model`.
fn body(door: Door, model: &str, stream: bool) -> Bytes {
    let (system, user) = texts();
    let value = match door {
        Door::Chat => {
            let mut v = json!({"model": model, "max_tokens": 256, "stream": stream,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]});
            if stream {
                // What the provider asks of an OpenAI upstream, so the direct call reads the same stream.
                v["stream_options"] = json!({"include_usage": true});
            }
            v
        }
        Door::Messages => json!({"model": model, "max_tokens": 256, "stream": stream, "system": system,
            "messages": [{"role": "user", "content": user}]}),
        Door::Responses => json!({"model": model, "max_output_tokens": 256, "stream": stream, "store": false,
            "instructions": system, "input": user}),
    };
    Bytes::from(value.to_string())
}

/// One case in one shape, ready to send.
struct Prepared {
    uri: http::Uri,
    body: Bytes,
    /// A direct call to the mock's Messages endpoint needs Anthropic's headers.
    anthropic_headers: bool,
    direct: bool,
}

impl Prepared {
    fn new(case: Case, shape: Shape, mocks: &Mocks) -> Self {
        let upstream = mocks.of(shape.chunks);
        match case.target {
            Target::Direct => {
                Self::direct(endpoint(case.door, &upstream.base_url(), &upstream.origin()), case.door, shape.stream)
            }
            Target::Stack(kind) => {
                let path = match case.door {
                    Door::Chat => "/v1/chat/completions",
                    Door::Messages => "/v1/messages",
                    Door::Responses => "/v1/responses",
                };
                Self {
                    uri: http::Uri::from_static(path),
                    body: body(case.door, &kind.group(shape.chunks), shape.stream),
                    anthropic_headers: false,
                    direct: false,
                }
            }
        }
    }

    /// `door`'s question asked of the upstream at `uri` itself, with the provider's model name.
    fn direct(uri: String, door: Door, stream: bool) -> Self {
        let model = if door == Door::Messages { "claude-sonnet-4-5" } else { "gpt-4o" };
        Self {
            uri: uri.parse().expect("a valid URI"),
            body: body(door, model, stream),
            anthropic_headers: door == Door::Messages,
            direct: true,
        }
    }

    fn request(&self) -> Request<Full<Bytes>> {
        let mut req = Request::post(self.uri.clone()).header("content-type", "application/json");
        if self.anthropic_headers {
            req = req.header("x-api-key", "sk-ant-bench").header("anthropic-version", "2023-06-01");
        }
        req.body(Full::new(self.body.clone())).expect("a valid request")
    }
}

/// `door`'s endpoint on an upstream whose base URL is `base` (`http://host:port/v1`) and
/// origin `origin`.
fn endpoint(door: Door, base: &str, origin: &str) -> String {
    match door {
        Door::Chat => format!("{base}/chat/completions"),
        Door::Messages => format!("{origin}/v1/messages"),
        Door::Responses => format!("{base}/responses"),
    }
}

/// The door an upstream path belongs to.
fn door_of(path: &str) -> Option<Door> {
    if path.ends_with("/chat/completions") {
        Some(Door::Chat)
    } else if path.ends_with("/messages") {
        Some(Door::Messages)
    } else if path.ends_with("/responses") {
        Some(Door::Responses)
    } else {
        None
    }
}

/// A recorded answer: its content type and its frames (a stream's events one frame each).
struct Recorded {
    content_type: HeaderValue,
    frames: Vec<Bytes>,
}

/// An answer body made of recorded frames.
type Replayed = StreamBody<stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, Infallible>>>>;

/// What the replaying upstream reads of a request body.
#[derive(Deserialize)]
struct Streamed {
    #[serde(default)]
    stream: bool,
}

/// The answers of one upstream, `[door][streamed]`, recorded from a `MockUpstream`.
struct Answers(Vec<[Recorded; 2]>);

impl Answers {
    /// Asks a mock of `chunks` content chunks, without latency, each door's question whole and
    /// streamed.
    async fn record(chunks: u32) -> Self {
        let profile = MockProfile::builder()
            .latency(Latency::ZERO)
            .chunk_interval(Latency::ZERO)
            .chunks(chunks)
            .build()
            .expect("a valid mock profile");
        let mock = MockUpstream::start(profile).expect("a mock upstream");
        let client = client();
        let mut answers = Vec::new();
        for door in [Door::Chat, Door::Messages, Door::Responses] {
            let ask = async |stream: bool| {
                let uri = endpoint(door, &mock.base_url(), &mock.origin());
                let p = Prepared::direct(uri, door, stream);
                let resp = client.request(p.request()).await.expect("the mock answers");
                let content_type = resp.headers().get(header::CONTENT_TYPE).cloned().expect("a content type");
                let status = resp.status();
                let body = resp.into_body().collect().await.expect("a whole body").to_bytes();
                assert_eq!(status, StatusCode::OK, "the mock: {}", String::from_utf8_lossy(&body));
                Recorded { content_type, frames: if stream { events(&body) } else { vec![body] } }
            };
            answers.push([ask(false).await, ask(true).await]);
        }
        mock.shutdown().await;
        Self(answers)
    }

    async fn answer(&self, req: Request<hyper::body::Incoming>) -> Result<http::Response<Replayed>, Infallible> {
        let door = door_of(req.uri().path());
        let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        let Some(door) = door else {
            let mut resp = http::Response::new(StreamBody::new(stream::iter(Vec::new())));
            *resp.status_mut() = StatusCode::NOT_FOUND;
            return Ok(resp);
        };
        let streamed = serde_json::from_slice::<Streamed>(&body).is_ok_and(|b| b.stream);
        let recorded = &self.0[door as usize][usize::from(streamed)];
        let frames: Vec<_> = recorded.frames.iter().map(|f| Ok(Frame::data(f.clone()))).collect();
        let mut resp = http::Response::new(StreamBody::new(stream::iter(frames)));
        resp.headers_mut().insert(header::CONTENT_TYPE, recorded.content_type.clone());
        Ok(resp)
    }
}

/// A stream's events, each with its blank line.
fn events(body: &Bytes) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut start = 0;
    while let Some(at) = body[start..].windows(2).position(|w| w == b"\n\n") {
        let end = start + at + 2;
        out.push(body.slice(start..end));
        start = end;
    }
    if start < body.len() {
        out.push(body.slice(start..));
    }
    out
}

/// An upstream replaying [`Answers`] on a loopback port, `TCP_NODELAY` on every connection.
struct Upstream {
    addr: SocketAddr,
    /// Connections accepted (a kept-alive pool opens few).
    accepted: Arc<AtomicU64>,
}

impl Upstream {
    async fn start(answers: Answers) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
        let addr = listener.local_addr().expect("an address");
        let answers = Arc::new(answers);
        let accepted = Arc::new(AtomicU64::new(0));
        let counter = accepted.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::Relaxed);
                tcp.set_nodelay(true).expect("TCP_NODELAY");
                let answers = answers.clone();
                let service = hyper::service::service_fn(move |req| {
                    let answers = answers.clone();
                    async move { answers.answer(req).await }
                });
                tokio::spawn(async move {
                    let _ =
                        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tcp), service).await;
                });
            }
        });
        Self { addr, accepted }
    }

    fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// The two upstreams: one per stream length (whole answers come from the long one).
struct Mocks {
    short: Upstream,
    long: Upstream,
}

impl Mocks {
    async fn start() -> Self {
        let short = Upstream::start(Answers::record(SHORT).await).await;
        let long = Upstream::start(Answers::record(LONG).await).await;
        Self { short, long }
    }

    fn of(&self, chunks: u32) -> &Upstream {
        if chunks == SHORT { &self.short } else { &self.long }
    }

    /// Connections both upstreams accepted.
    fn accepted(&self) -> u64 {
        self.short.accepted.load(Ordering::Relaxed) + self.long.accepted.load(Ordering::Relaxed)
    }
}

/// A hyper client as the bench's and the provider's: keep-alive, `TCP_NODELAY`.
fn client() -> Client<HttpConnector, Full<Bytes>> {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new()).build(connector)
}

/// The bench config: a `gpt-N`, `claude-N` and `llama-N` group on the mock of `N` chunks.
fn config(mocks: &Mocks) -> Config {
    let mut yaml = String::from("model_list:\n");
    for chunks in [SHORT, LONG] {
        let mock = mocks.of(chunks);
        for (kind, model, base) in [
            (Kind::OpenAi, "openai/gpt-4o", mock.base_url()),
            (Kind::Anthropic, "anthropic/claude-sonnet-4-5", mock.origin()),
            (Kind::Vllm, "hosted_vllm/llama-3", mock.base_url()),
        ] {
            let group = kind.group(chunks);
            yaml.push_str(&format!(
                "  - model_name: {group}\n    litellm_params: {{ model: {model}, api_key: key-{group}, api_base: \"{base}\" }}\n    \
                 model_info: {{ id: {group} }}\n"
            ));
        }
    }
    Config::from_yaml_str(&yaml).expect("a valid bench config")
}

/// Everything a call needs.
struct Bench {
    rt: Runtime,
    mocks: Mocks,
    stack: Ingress<RouterService>,
    client: Client<HttpConnector, Full<Bytes>>,
    /// `prepared[shape][case]`.
    prepared: Vec<Vec<Prepared>>,
}

impl Bench {
    fn new() -> Self {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let (mocks, stack, client) = rt.block_on(async {
            let mocks = Mocks::start().await;
            let provider =
                HttpProvider::new(ProviderConfig::default().timeout(Duration::from_secs(10))).expect("a provider");
            let router = Router::builder(&config(&mocks)).seed(1).build(provider).expect("a router");
            let stack = IngressLayer::new(1 << 20).layer(router.service());
            (mocks, stack, client())
        });
        let prepared = SHAPES
            .iter()
            .map(|&shape| CASES.iter().map(|&case| Prepared::new(case, shape, &mocks)).collect())
            .collect();
        let bench = Self { rt, mocks, stack, client, prepared };
        bench.verify();
        bench
    }

    /// One call, its answer read to the end: the answer's status and body.
    async fn call(&self, p: &Prepared) -> (StatusCode, Bytes) {
        if p.direct {
            let resp = self.client.request(p.request()).await.expect("the mock answers");
            let status = resp.status();
            (status, resp.into_body().collect().await.expect("a whole body").to_bytes())
        } else {
            let resp = self.stack.clone().oneshot(p.request()).await.expect("the ingress never fails");
            let status = resp.status();
            (status, resp.into_body().collect().await.expect("a whole body").to_bytes())
        }
    }

    /// A timed call, for the benchmarks: only the status is checked.
    async fn timed(&self, p: &Prepared) {
        let (status, body) = self.call(p).await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        black_box(body);
    }

    /// Every case answers in its door's dialect, a stream to its end, before anything is timed.
    fn verify(&self) {
        for (shape, cases) in SHAPES.iter().zip(&self.prepared) {
            for (case, p) in CASES.iter().zip(cases) {
                let (status, body) = self.rt.block_on(self.call(p));
                let text = String::from_utf8_lossy(&body);
                assert_eq!(status, StatusCode::OK, "{} ({}): {text}", case.name, shape.name);
                let expected = match (case.door, shape.stream) {
                    (Door::Chat, false) => "\"chat.completion\"",
                    (Door::Chat, true) => "data: [DONE]",
                    (Door::Messages, false) => "\"type\":\"message\"",
                    (Door::Messages, true) => "event: message_stop",
                    (Door::Responses, false) => "\"object\":\"response\"",
                    (Door::Responses, true) => "event: response.completed",
                };
                assert!(text.contains(expected), "{} ({}) lacks {expected}: {text}", case.name, shape.name);
            }
        }
    }
}

fn front_doors(c: &mut Criterion) {
    let bench = Bench::new();
    for (shape, cases) in SHAPES.iter().zip(&bench.prepared) {
        let mut group = c.benchmark_group(shape.name);
        for (case, p) in CASES.iter().zip(cases) {
            group.bench_function(case.name, |b| b.to_async(&bench.rt).iter(|| bench.timed(p)));
        }
        group.finish();
    }
    interleaved(&bench);
}

/// Every case once per round, the order rotated every round, each call timed alone; then the
/// medians, the added times and the ratios.
fn interleaved(bench: &Bench) {
    let rounds = if measuring() {
        std::env::var("FRONT_DOORS_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(ROUNDS)
    } else {
        ROUNDS_TEST
    };
    let mut order: Vec<(usize, usize)> =
        (0..SHAPES.len()).flat_map(|s| (0..CASES.len()).map(move |c| (s, c))).collect();
    let mut samples = vec![vec![Vec::with_capacity(rounds); CASES.len()]; SHAPES.len()];
    // A fresh order every round: a call may leave work behind (a connection going back to its
    // pool, a task ending), and a fixed rotation would always hand it to the same next case.
    let mut rng = SmallRng::seed_from_u64(19);
    let accepted = bench.mocks.accepted();
    bench.rt.block_on(async {
        for _ in 0..rounds {
            order.shuffle(&mut rng);
            for &(s, c) in &order {
                let start = Instant::now();
                bench.timed(&bench.prepared[s][c]).await;
                samples[s][c].push(start.elapsed());
            }
        }
    });
    let accepted = bench.mocks.accepted() - accepted;
    let median = |v: &mut Vec<Duration>| {
        v.sort_unstable();
        v[v.len() / 2].as_secs_f64() * 1e6
    };
    let medians: Vec<Vec<f64>> = samples.iter_mut().map(|cases| cases.iter_mut().map(median).collect()).collect();
    let added = |s: usize, c: usize| CASES[c].baseline().map(|b| medians[s][c] - medians[s][b]);

    println!();
    println!("Front doors, interleaved: {rounds} rounds, medians in µs (one current-thread runtime)");
    if !measuring() {
        println!("(test mode: a few unoptimized calls, not a measurement)");
    }
    println!(
        "{:<38} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>10} {:>10}",
        "case", "whole", "added", "strm 8", "added", "strm 64", "added", "per chunk", "added/ch"
    );
    let (whole, short, long) = (0, 1, 2);
    let per_chunk = |s8: f64, s64: f64| (s64 - s8) / f64::from(LONG - SHORT);
    let fmt = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"));
    let fmt2 = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
    for (c, case) in CASES.iter().enumerate() {
        let chunk = per_chunk(medians[short][c], medians[long][c]);
        let added_chunk = added(short, c).zip(added(long, c)).map(|(a8, a64)| per_chunk(a8, a64));
        println!(
            "{:<38} {:>8.1} {:>8} {:>8.1} {:>8} {:>8.1} {:>8} {:>10.2} {:>10}",
            case.name,
            medians[whole][c],
            fmt(added(whole, c)),
            medians[short][c],
            fmt(added(short, c)),
            medians[long][c],
            fmt(added(long, c)),
            chunk,
            fmt2(added_chunk),
        );
    }
    println!();
    println!("Against chat completions (chat -> openai) in the same run:");
    println!(
        "{:<38} {:>16} {:>16} {:>16} {:>16}",
        "case", "whole: total", "whole: added", "stream 64: total", "stream 64: added"
    );
    let ratio = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a / b);
    for (c, case) in CASES.iter().enumerate().skip(CHAT + 1) {
        println!(
            "{:<38} {:>16} {:>16} {:>16} {:>16}",
            case.name,
            fmt2(Some(medians[whole][c] / medians[whole][CHAT])),
            fmt2(ratio(added(whole, c), added(whole, CHAT))),
            fmt2(Some(medians[long][c] / medians[long][CHAT])),
            fmt2(ratio(added(long, c), added(long, CHAT))),
        );
    }
    println!();
    println!("Translated against its passthrough (same door) in the same run, added time:");
    println!("{:<38} {:>10} {:>10} {:>10} {:>10}", "case", "whole", "stream 8", "stream 64", "per chunk");
    for (c, pass) in [(5, 4), (7, 6)] {
        let chunk = |c| added(short, c).zip(added(long, c)).map(|(a8, a64)| per_chunk(a8, a64));
        println!(
            "{:<38} {:>10} {:>10} {:>10} {:>10}",
            CASES[c].name,
            fmt2(ratio(added(whole, c), added(whole, pass))),
            fmt2(ratio(added(short, c), added(short, pass))),
            fmt2(ratio(added(long, c), added(long, pass))),
            fmt2(ratio(chunk(c), chunk(pass))),
        );
    }
    println!(
        "(added = the case minus the direct call of the dialect its deployment speaks; per chunk = \
         (stream 64 - stream 8) / {}; the upstreams accepted {accepted} connections for {} calls)",
        LONG - SHORT,
        rounds * order.len()
    );
}

criterion_group!(benches, front_doors);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
