//! The HTTP provider's own cost per attempt, over an in-memory transport that answers at once
//! (no socket): building the upstream request, reading the answer, and masking the deployment's
//! credentials out of everything that leaves (every answer and stream event is searched for
//! them, `docs/security.md`).
//!
//! - `whole/*`: a non-streaming chat answer of about 1 KB or 16 KB of prose (with `\n` escapes,
//!   as model output has), and one with `\u00e9` escapes (which a credential could hide behind,
//!   so the JSON strings are checked too);
//! - `stream/*`: a stream of 64 content chunks, read to its end.
//!
//! The deployment has a key and an `extra_headers` value (the secrets searched for); no answer
//! contains them.
//!
//! Anthropic translation, beside OpenAI passthrough in the same run (`translation/*`): the same
//! chat request to an `openai/gpt-4o` deployment (body passed through) and to an
//! `anthropic/claude-sonnet-4-5` one (translated to a Messages request, the answer translated
//! back), over the same in-memory transport:
//!
//! - `translation/whole, <dialect>`: a whole answer of about 1 KB of prose, read to the end;
//! - `translation/stream <n>, <dialect>`: a stream of `n` = 8 and 64 content chunks (OpenAI
//!   chunks, or Anthropic events: `message_start`, a text block of `n` `text_delta`s,
//!   `message_delta`, `message_stop`), read to the end. The cost of one chunk is the difference
//!   between the two lengths divided by 56, which leaves out the per-stream work.
//!
//! Memory per open stream (printed before the criterion groups): `OPEN_STREAMS` streams of each
//! dialect are opened and read past their first content chunk, then held open (the upstream
//! body stays pending); the bytes they hold are the bytes allocated and not freed while opening
//! them, counted by the `mockalloc` wrapper around `System` (as in `benches/l1.rs`: it counts only
//! inside `record_allocs`, and costs one thread-local check per allocation elsewhere, in every
//! variant alike), divided by the number of streams.
//!
//! ```text
//! cargo bench --bench provider -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Under `cargo test --benches` each function runs once and the memory pass opens a few streams.

use std::{alloc::System, convert::Infallible, hint::black_box, sync::Arc};

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group};
use futures_util::{StreamExt, stream};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Full, StreamBody};
use mockalloc::Mockalloc;
use switchyard::{
    RouteCtx,
    layers::{ApiKey, BoxError, Deployment, RequestFacts, ctx::Endpoint},
    services::provider::{HttpProvider, ProviderConfig},
};
use tower::{ServiceExt, service_fn};

#[global_allocator]
static ALLOCATOR: Mockalloc<System> = Mockalloc(System);

fn deployment() -> Arc<Deployment> {
    let d = Deployment::builder("gpt-4o", "openai/gpt-4o")
        .id("d")
        .api_base("http://upstream.invalid/v1")
        .api_key(ApiKey::new("sk-proj-bench0123456789abcdefABCDEF"))
        .param("extra_headers", serde_json::json!({"x-tenant": "tenant-bench-secret"}))
        .build()
        .expect("valid deployment");
    Arc::new(d)
}

fn request(stream: bool) -> http::Request<Bytes> {
    let body = r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}"#;
    attempt(deployment(), body, stream)
}

fn attempt(deployment: Arc<Deployment>, body: &'static str, stream: bool) -> http::Request<Bytes> {
    let facts = RequestFacts::new().streaming(stream).endpoint(Endpoint::Chat);
    let mut ctx = RouteCtx::with_facts("gpt-4o", facts);
    ctx.selected = Some(deployment);
    let mut req = http::Request::new(Bytes::from_static(body.as_bytes()));
    req.extensions_mut().insert(ctx);
    req
}

/// The two dialects of `translation/*`.
#[derive(Clone, Copy)]
enum Dialect {
    /// `openai/gpt-4o`: the body passes through.
    OpenAi,
    /// `anthropic/claude-sonnet-4-5`: translated both ways.
    Anthropic,
}

impl Dialect {
    const BOTH: [Dialect; 2] = [Dialect::OpenAi, Dialect::Anthropic];

    fn name(self) -> &'static str {
        match self {
            Dialect::OpenAi => "openai passthrough",
            Dialect::Anthropic => "anthropic translated",
        }
    }

    fn deployment(self) -> Arc<Deployment> {
        match self {
            Dialect::OpenAi => deployment(),
            Dialect::Anthropic => Arc::new(
                Deployment::builder("claude", "anthropic/claude-sonnet-4-5")
                    .id("a")
                    .api_base("http://upstream.invalid")
                    .api_key(ApiKey::new("sk-ant-bench0123456789abcdefABCDEF"))
                    .param("extra_headers", serde_json::json!({"x-tenant": "tenant-bench-secret"}))
                    .build()
                    .expect("valid deployment"),
            ),
        }
    }

    /// The same chat request for both: a system prompt and a question.
    fn request(self, deployment: &Arc<Deployment>, stream: bool) -> http::Request<Bytes> {
        const BODY: &str = r#"{"model":"smart","messages":[{"role":"system","content":"Be brief and precise."},{"role":"user","content":"What changed in the release notes, and what should I check first?"}],"temperature":0.2}"#;
        attempt(Arc::clone(deployment), BODY, stream)
    }

    /// A whole answer whose text is `text` (a JSON string literal's inside).
    fn answer(self, text: &str) -> Bytes {
        match self {
            Dialect::OpenAi => completion(text),
            Dialect::Anthropic => Bytes::from(format!(
                r#"{{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{{"type":"text","text":"{text}"}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{{"input_tokens":9,"output_tokens":200}}}}"#
            )),
        }
    }

    /// A stream's events: the opening ones, `chunks` content chunks, the closing ones.
    fn events(self, chunks: usize) -> (Vec<String>, Vec<String>, Vec<String>) {
        let delta = |i: usize| match self {
            Dialect::OpenAi => format!(
                "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"token {i} \"}},\"finish_reason\":null}}]}}\n\n"
            ),
            Dialect::Anthropic => format!(
                "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"token {i} \"}}}}\n\n"
            ),
        };
        let content = (0..chunks).map(delta).collect();
        match self {
            Dialect::OpenAi => (Vec::new(), content, vec!["data: [DONE]\n\n".to_owned()]),
            Dialect::Anthropic => (
                vec![
                    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n".to_owned(),
                    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n".to_owned(),
                ],
                content,
                vec![
                    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n".to_owned(),
                    format!("event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\",\"stop_sequence\":null}},\"usage\":{{\"output_tokens\":{chunks}}}}}\n\n"),
                    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n".to_owned(),
                ],
            ),
        }
    }

    /// A whole stream of `chunks` content chunks, as one body.
    fn stream(self, chunks: usize) -> Bytes {
        let (open, content, close) = self.events(chunks);
        Bytes::from([open, content, close].concat().concat())
    }
}

/// A chat completion whose content is `content` (a JSON string literal's inside).
fn completion(content: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{{"index":0,"message":{{"role":"assistant","content":"{content}"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":9,"completion_tokens":200,"total_tokens":209}}}}"#
    ))
}

fn prose(bytes: usize, escape: &str) -> String {
    const LINE: &str = "The quick brown fox jumps over the lazy dog while the committee reviews results.";
    let mut out = String::new();
    while out.len() < bytes {
        out.push_str(LINE);
        out.push_str(escape);
    }
    out
}

fn sse(chunks: usize) -> Bytes {
    let mut out = String::new();
    for i in 0..chunks {
        out.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"token {i} \"}},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    out.push_str("data: [DONE]\n\n");
    Bytes::from(out)
}

fn provider(
    answer: Bytes,
) -> HttpProvider<
    impl tower::Service<
        http::Request<Full<Bytes>>,
        Response = http::Response<Full<Bytes>>,
        Error = BoxError,
        Future: Send + 'static,
    > + Clone
    + Send
    + 'static,
> {
    provider_with(move || Full::new(answer.clone()))
}

/// A provider whose upstream answers every attempt at once with the body `make` gives.
fn provider_with<B, F>(
    make: F,
) -> HttpProvider<
    impl tower::Service<http::Request<Full<Bytes>>, Response = http::Response<B>, Error = BoxError, Future: Send + 'static>
    + Clone
    + Send
    + 'static,
>
where
    F: Fn() -> B + Clone + Send + 'static,
    B: Body<Data = Bytes, Error: Into<BoxError>> + Send + 'static,
{
    let transport = service_fn(move |_req: http::Request<Full<Bytes>>| {
        let body = make();
        async move { Ok::<_, BoxError>(http::Response::new(body)) }
    });
    HttpProvider::with_transport(transport, ProviderConfig::default())
}

fn whole(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let mut group = c.benchmark_group("whole");
    for (name, answer) in [
        ("1 KB answer", completion(&prose(800, "\\n"))),
        ("16 KB answer", completion(&prose(16_000, "\\n"))),
        ("16 KB answer with \\u escapes", completion(&prose(16_000, " \\u00e9\\n"))),
    ] {
        group.throughput(Throughput::Bytes(answer.len() as u64));
        let provider = provider(answer);
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| async {
                let resp = provider.clone().oneshot(request(false)).await.expect("an answer");
                black_box(resp.into_body().collect().await.expect("body").to_bytes())
            });
        });
    }
    group.finish();
}

fn stream(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let mut group = c.benchmark_group("stream");
    let answer = sse(64);
    group.throughput(Throughput::Bytes(answer.len() as u64));
    let provider = provider(answer);
    group.bench_function("64 chunks, read to the end", |b| {
        b.to_async(&rt).iter(|| async {
            let resp = provider.clone().oneshot(request(true)).await.expect("a stream");
            black_box(resp.into_body().collect().await.expect("body").to_bytes())
        });
    });
    group.finish();
}

fn translation(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let mut group = c.benchmark_group("translation");
    let text = prose(800, "\\n");
    for dialect in Dialect::BOTH {
        let deployment = dialect.deployment();
        let provider = provider(dialect.answer(&text));
        group.bench_function(format!("whole, {}", dialect.name()), |b| {
            b.to_async(&rt).iter(|| async {
                let resp = provider.clone().oneshot(dialect.request(&deployment, false)).await.expect("an answer");
                black_box(resp.into_body().collect().await.expect("body").to_bytes())
            });
        });
    }
    for chunks in [8, 64] {
        for dialect in Dialect::BOTH {
            let deployment = dialect.deployment();
            let provider = provider(dialect.stream(chunks));
            group.bench_function(format!("stream {chunks}, {}", dialect.name()), |b| {
                b.to_async(&rt).iter(|| async {
                    let resp = provider.clone().oneshot(dialect.request(&deployment, true)).await.expect("a stream");
                    black_box(resp.into_body().collect().await.expect("body").to_bytes())
                });
            });
        }
    }
    group.finish();
}

/// Streams held open per dialect by the memory pass (a few under `cargo test --benches`).
fn open_streams() -> usize {
    if std::env::args().any(|a| a == "--bench") { 2_000 } else { 8 }
}

/// The bytes one open stream of `dialect` holds: `n` streams opened, read past their first
/// content chunk and kept, their upstream body pending.
fn bytes_per_open_stream(dialect: Dialect, n: usize) -> u64 {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let (open, content, _) = dialect.events(1);
    let frames: Vec<Bytes> = open.into_iter().chain(content).map(Bytes::from).collect();
    let provider = provider_with(move || {
        let frames = stream::iter(frames.clone().into_iter().map(|f| Ok::<_, Infallible>(Frame::data(f))));
        StreamBody::new(frames.chain(stream::pending()))
    });
    let deployment = dialect.deployment();
    let open_one = || async {
        let resp = provider.clone().oneshot(dialect.request(&deployment, true)).await.expect("a stream");
        let mut body = resp.into_body();
        let first = body.frame().await.expect("a first chunk").expect("not broken");
        black_box(first);
        body
    };
    // Warm-up: lazily created state and first-use caches are not the streams'.
    rt.block_on(async {
        for _ in 0..n.min(64) {
            drop(open_one().await);
        }
    });
    let mut held = Vec::with_capacity(n);
    let info = mockalloc::record_allocs(|| {
        rt.block_on(async {
            for _ in 0..n {
                held.push(open_one().await);
            }
        });
    });
    let live = info.mem_allocated().saturating_sub(info.mem_freed());
    drop(held);
    live / n as u64
}

fn memory() {
    let n = open_streams();
    let openai = bytes_per_open_stream(Dialect::OpenAi, n);
    let anthropic = bytes_per_open_stream(Dialect::Anthropic, n);
    println!(
        "memory per open stream ({n} streams each): {}: {openai} B, {}: {anthropic} B ({:.2}x)",
        Dialect::OpenAi.name(),
        Dialect::Anthropic.name(),
        anthropic as f64 / openai.max(1) as f64
    );
}

criterion_group!(benches, whole, stream, translation);

fn main() {
    memory();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
