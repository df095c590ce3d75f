//! The checks behind Switchyard's fuzz targets, one function per target.
//!
//! Each fuzz target (`fuzz_targets/*.rs`) is a one-line wrapper around a function here, and
//! `tests/fuzz_replay.rs` includes this same file to replay the committed corpora and regression
//! inputs as ordinary tests, without the fuzzer. A check panics when an invariant breaks; beyond
//! "does not panic", each one compares the code under test with a small model or with itself
//! (same bytes, other chunking) where that is meaningful. See `docs/fuzzing.md`.
//!
//! Only the facade crate (`switchyard`) and crates it depends on are used, so the replay test
//! compiles this file as part of the facade's own tests. The dialect checks are in
//! [`dialects`], which the dialects crate's own replay test (`dialects/tests/fuzz_replay.rs`)
//! compiles.
#![forbid(unsafe_code)]

use std::{
    cell::RefCell,
    time::{Duration, SystemTime},
};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use switchyard::{
    Config, Deployment, Outcome, RouteCtx, RouteError, RouteErrorKind,
    layers::{
        ApiKey, BoxError, RouteBody, RouteRequest,
        ctx::Endpoint,
        outcome::{classify, retry_after},
    },
    services::{
        HttpProvider, ProviderConfig,
        ingress::IngressLayer,
        openai::{ChatRequest, SseDecoder, SseError, SseEvent, facts_from_json},
    },
};
use tower::{ServiceBuilder, ServiceExt, service_fn};

pub mod bedrock;
pub mod cohere;
pub mod dialects;
pub mod gemini;

/// The fuzz targets, by the name of their corpus folder (`fuzz/corpus/<name>/`).
pub const TARGETS: [&str; 5] = ["config", "ingress", "sse", "classify", "retry_after"];

/// Runs the check of `target` on `data`; `false` when there is no such target.
pub fn check(target: &str, data: &[u8]) -> bool {
    match target {
        "config" => check_config(data),
        "ingress" => check_ingress(data),
        "sse" => check_sse(data),
        "classify" => check_classify(data),
        "retry_after" => check_retry_after(data),
        _ => return false,
    }
    true
}

/// The longest wait any retry header may ask for: one day.
pub const RETRY_AFTER_CAP: Duration = Duration::from_secs(86_400);

/// A secret the fuzzed config can reach only through `os.environ/FUZZ_KEY`.
const ENV_SECRET: &str = "envsecret-7f3a9c2e11d04b5b";

/// A deployment key the fuzzed upstream may echo in its error bodies.
const DEPLOYMENT_KEY: &str = "sk-fuzz-0123456789abcdefKEY";

thread_local! {
    static RUNTIME: RefCell<Option<tokio::runtime::Runtime>> = const { RefCell::new(None) };
}

/// Runs `fut` to completion on this thread's current-thread runtime (time enabled, real clock:
/// nothing the checks run waits on time).
fn block_on<F: Future>(fut: F) -> F::Output {
    RUNTIME.with(|cell| {
        let mut slot = cell.borrow_mut();
        let rt = slot.get_or_insert_with(|| {
            tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a current-thread runtime")
        });
        rt.block_on(fut)
    })
}

// ---------------------------------------------------------------------------------------------
// config
// ---------------------------------------------------------------------------------------------

/// `Config::from_yaml_str_with_env` on any UTF-8 text, with a fixed environment.
///
/// Invariants: a loaded config passes [`Config::validate`] and formats with `Debug`; a refusal
/// never shows the value of an `os.environ/` secret (unless the document spells it out itself).
pub fn check_config(data: &[u8]) {
    let Ok(yaml) = std::str::from_utf8(data) else { return };
    let env = |name: &str| match name {
        "FUZZ_KEY" => Some(ENV_SECRET.to_owned()),
        "FUZZ_NUM" => Some("42".to_owned()),
        "FUZZ_BOOL" => Some("true".to_owned()),
        "FUZZ_LIST" => Some("[a, b]".to_owned()),
        _ => None,
    };
    match Config::from_yaml_str_with_env(yaml, &env) {
        Ok(config) => {
            if let Err(e) = config.validate() {
                panic!("a loaded config fails its own validation: {e}");
            }
            let _ = format!("{config:?}");
        }
        Err(e) => {
            let shown = format!("{e} {e:?}");
            if !yaml.contains(ENV_SECRET) {
                assert!(!shown.contains(ENV_SECRET), "a config error shows an env secret: {shown}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ingress
// ---------------------------------------------------------------------------------------------

/// Paths the ingress check sends the body to (chosen by the body's length, so the fuzzer can
/// reach each).
const INGRESS_PATHS: [(&str, Endpoint); 4] = [
    ("/v1/chat/completions", Endpoint::Chat),
    ("/v1/embeddings", Endpoint::Embedding),
    ("/v1/completions", Endpoint::Completion),
    ("/openai/deployments/azure-gpt/chat/completions", Endpoint::Chat),
];

/// A request body through `facts_from_json` (every endpoint), the typed `ChatRequest`, and the
/// whole `Ingress` service.
///
/// Invariants: `facts_from_json` accepts only JSON objects with a non-blank `model` and refuses
/// with `InvalidRequest`; a `ChatRequest` that parses survives a write/read round trip; the
/// ingress answers 200 exactly for bodies the routing stack can read (it hands the stack a body
/// `facts_from_json` accepts), otherwise an OpenAI-style 400, and always with an `x-request-id`.
pub fn check_ingress(data: &[u8]) {
    for endpoint in [Endpoint::Chat, Endpoint::Completion, Endpoint::Embedding] {
        match facts_from_json(data, endpoint) {
            Ok((model, facts)) => {
                assert!(!model.trim().is_empty(), "blank model accepted");
                assert!(
                    serde_json::from_slice::<serde_json::Map<String, Value>>(data).is_ok(),
                    "a body that is not a JSON object was accepted"
                );
                assert_eq!(facts.endpoint, endpoint);
                assert!(!(endpoint == Endpoint::Embedding && facts.stream), "an embedding streams");
            }
            Err(e) => assert_eq!(e.kind(), RouteErrorKind::InvalidRequest, "{e}"),
        }
    }

    if let Ok(request) = serde_json::from_slice::<ChatRequest>(data) {
        let written = serde_json::to_value(&request).expect("a parsed ChatRequest serializes");
        let reread: ChatRequest = serde_json::from_value(written.clone()).expect("a written ChatRequest reads back");
        assert_eq!(serde_json::to_value(&reread).expect("serializes"), written, "ChatRequest round trip");
    }

    let (path, endpoint) = INGRESS_PATHS[data.len() % INGRESS_PATHS.len()];
    let seen: std::sync::Arc<std::sync::Mutex<Option<(String, Bytes)>>> = Default::default();
    let sink = seen.clone();
    let stack = service_fn(move |req: http::Request<Bytes>| {
        let sink = sink.clone();
        async move {
            let model = req.route_ctx().map(|c| c.requested().to_owned()).unwrap_or_default();
            *sink.lock().expect("not poisoned") = Some((model, req.body().clone()));
            Ok::<_, BoxError>(http::Response::new(RouteBody::from("ok")))
        }
    });
    let app = ServiceBuilder::new().layer(IngressLayer::new(1 << 20)).service(stack);
    let req = http::Request::post(path)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::copy_from_slice(data)))
        .expect("a valid request");
    let (status, has_id, body) = block_on(async move {
        let resp = match app.oneshot(req).await {
            Ok(resp) => resp,
            Err(never) => match never {},
        };
        let has_id = resp.headers().contains_key("x-request-id");
        let status = resp.status();
        let body = resp.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
        (status, has_id, body)
    });
    assert!(has_id, "answer without x-request-id");
    let seen = seen.lock().expect("not poisoned").take();
    if facts_from_json(data, endpoint).is_ok() {
        assert_eq!(status, StatusCode::OK, "a readable body was refused");
    }
    match status {
        StatusCode::OK => {
            let (model, routed) = seen.expect("a 200 comes from the stack");
            let (read_model, _) = facts_from_json(&routed, endpoint).expect("the stack gets a readable body");
            assert_eq!(model, read_model);
        }
        StatusCode::BAD_REQUEST => {
            assert!(seen.is_none(), "a refused request reached the stack");
            let answer: Value = serde_json::from_slice(&body).expect("error answers are JSON");
            assert!(answer["error"]["message"].is_string(), "not an OpenAI error: {answer}");
        }
        other => panic!("unexpected status {other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// sse
// ---------------------------------------------------------------------------------------------

/// What a decoder produced: its events, and the error that stopped it, if any.
type Decoded = (Vec<SseEvent>, Option<SseError>);

fn decode<'a>(limit: usize, chunks: impl IntoIterator<Item = &'a [u8]>) -> Decoded {
    let mut sse = SseDecoder::new(limit);
    let mut events = Vec::new();
    for chunk in chunks {
        match sse.push(chunk) {
            Ok(more) => events.extend(more),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

/// The SSE specification's event stream interpretation (lines end with `\n` or `\r\n`), with no
/// size limit: the events a conforming decoder completes, or `None` when a line is not UTF-8.
fn sse_model(stream: &[u8]) -> Option<Vec<(Option<String>, String)>> {
    let mut events = Vec::new();
    let (mut data, mut has_data, mut event) = (String::new(), false, None::<String>);
    let mut lines: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    lines.pop(); // the unfinished last line, if any
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if has_data {
                events.push((event.take(), std::mem::take(&mut data)));
            }
            (has_data, event) = (false, None);
            data.clear();
            continue;
        }
        let line = std::str::from_utf8(line).ok()?;
        let (field, value) = match line.find(':') {
            Some(i) => (&line[..i], line[i + 1..].strip_prefix(' ').unwrap_or(&line[i + 1..])),
            None => (line, ""),
        };
        match field {
            "data" => {
                if has_data {
                    data.push('\n');
                }
                data.push_str(value);
                has_data = true;
            }
            "event" => event = Some(value.to_owned()),
            _ => {}
        }
    }
    Some(events)
}

/// The first byte picks the decoder's limit and a chunking; the rest is the stream.
///
/// Invariants: the same bytes give the same events and the same error whether pushed whole, one
/// byte at a time, or in arbitrary chunks (events before an error are a prefix of the byte-wise
/// ones); a stream decoded without error matches the specification's model; no event is larger
/// than the limit.
pub fn check_sse(data: &[u8]) {
    let Some((&control, stream)) = data.split_first() else { return };
    const LIMITS: [usize; 4] = [8, 64, 1024, 1 << 20];
    let limit = LIMITS[usize::from(control & 3)];

    let whole = decode(limit, [stream]);
    let bytewise = decode(limit, stream.chunks(1));
    let mut seed = u64::from(control) ^ (stream.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut chunks = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let take = (seed % 17) as usize % (rest.len() + 1);
        let (chunk, tail) = rest.split_at(take);
        chunks.push(chunk);
        rest = tail;
    }
    let random = decode(limit, chunks.iter().copied());

    assert_eq!(whole.1, bytewise.1, "the error depends on chunking");
    assert_eq!(whole.1, random.1, "the error depends on chunking");
    match &whole.1 {
        None => {
            assert_eq!(whole.0, bytewise.0, "events depend on chunking");
            assert_eq!(whole.0, random.0, "events depend on chunking");
            let model = sse_model(stream).expect("a stream the decoder accepts is UTF-8 line by line");
            let got: Vec<_> = whole.0.iter().map(|e| (e.event.clone(), e.data.clone())).collect();
            assert_eq!(got, model, "the decoder disagrees with the specification");
            assert!(whole.0.iter().all(|e| e.data.len() <= limit), "an event over the limit");
        }
        Some(_) => {
            assert!(whole.0.is_empty());
            assert!(bytewise.0.starts_with(&random.0), "events before an error depend on chunking");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// classify (upstream error bodies)
// ---------------------------------------------------------------------------------------------

const CLASSIFY_HEADERS: [&str; 4] =
    ["retry-after", "retry-after-ms", "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"];

/// An upstream answer from fuzz bytes: two bytes of status, one of flags, then header lines
/// (line `i` sets `CLASSIFY_HEADERS[i % 4]`) up to an empty line, then the body. Without an
/// empty line everything after the flags is the body.
fn upstream_answer(data: &[u8]) -> Option<(StatusCode, bool, HeaderMap, &[u8])> {
    let [s0, s1, flags, rest @ ..] = data else { return None };
    let status = StatusCode::from_u16(100 + u16::from_be_bytes([*s0, *s1]) % 500).ok()?;
    let mut headers = HeaderMap::new();
    let body = match rest.windows(2).position(|w| w == b"\n\n") {
        Some(end) => {
            for (i, line) in rest[..end].split(|&b| b == b'\n').enumerate() {
                if let Ok(value) = HeaderValue::from_bytes(line) {
                    headers.append(HeaderName::from_static(CLASSIFY_HEADERS[i % 4]), value);
                }
            }
            &rest[end + 2..]
        }
        None => rest,
    };
    Some((status, flags & 1 == 1, headers, body))
}

/// An upstream answer through `classify` and through `HttpProvider`'s response handling (a
/// transport that answers with the fuzzed status, headers and body).
///
/// Invariants: `classify` is total; a 2xx is a success and a 4xx/5xx never is; a body without
/// an `error` object never changes the status's class; no retry wait exceeds one day; the
/// provider's error for a non-2xx carries the same class (a 1xx/3xx is `NotFound`) and never
/// shows the deployment's key, even when the body echoes it.
pub fn check_classify(data: &[u8]) {
    let Some((status, stream, headers, body)) = upstream_answer(data) else { return };
    let classified = classify(status, &headers, body);
    let outcome = classified.outcome;
    if status.is_success() {
        assert_eq!(outcome, Outcome::Success);
    }
    if status.as_u16() >= 400 {
        assert!(!outcome.is_success(), "{status} classified as a success");
    }
    // Upstream bodies are read leniently on purpose: bytes that are not UTF-8 inside a string (a
    // mangled message) do not hide a valid error code.
    let has_error_object = serde_json::from_str::<Value>(&String::from_utf8_lossy(body))
        .is_ok_and(|v| v.get("error").is_some_and(Value::is_object));
    if !has_error_object {
        assert_eq!(outcome, Outcome::from_status(status), "a body without an error object changed the class");
    }
    assert!(classified.retry_after.is_none_or(|d| d <= RETRY_AFTER_CAP), "{:?}", classified.retry_after);

    let deployment = Deployment::builder("g", "openai/m")
        .id("d")
        .api_base("http://127.0.0.1:9")
        .api_key(ApiKey::new(DEPLOYMENT_KEY))
        .build()
        .expect("a valid deployment");
    let answer = (status, headers.clone(), Bytes::copy_from_slice(body));
    let transport = service_fn(move |_req: http::Request<Full<Bytes>>| {
        let (status, headers, body) = answer.clone();
        async move {
            let mut resp = http::Response::new(Full::new(body));
            *resp.status_mut() = status;
            *resp.headers_mut() = headers;
            Ok::<_, BoxError>(resp)
        }
    });
    let provider = HttpProvider::with_transport(transport, ProviderConfig::default().max_response_bytes(1 << 16));
    let request_body: &[u8] = if stream {
        br#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#
    } else {
        br#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#
    };
    let (_, facts) = facts_from_json(request_body, Endpoint::Chat).expect("a valid request");
    let mut ctx = RouteCtx::with_facts("g", facts);
    ctx.selected = Some(std::sync::Arc::new(deployment));
    let mut req = http::Request::new(Bytes::from_static(request_body));
    req.extensions_mut().insert(ctx);

    let result = block_on(async move {
        match provider.oneshot(req).await {
            // Reading the answer (a stream to its end) must not panic either.
            Ok(resp) => resp.into_body().collect().await.map(|_| ()).map_err(|e| e.to_string()).err(),
            Err(e) => {
                let route = RouteError::find(&*e).expect("provider errors are RouteErrors");
                Some(check_provider_error(status, outcome, route))
            }
        }
    });
    if let Some(text) = result {
        assert!(!text.contains(DEPLOYMENT_KEY), "the deployment key leaked: {text}");
    }
}

/// Checks a provider error against the classification; returns everything it shows.
fn check_provider_error(status: StatusCode, outcome: Outcome, route: &RouteError) -> String {
    if !status.is_success() {
        let expected = if outcome.is_success() { Outcome::NotFound } else { outcome };
        assert_eq!(route.outcome(), Some(expected), "{route}");
        assert_eq!(route.upstream_status(), Some(status));
    } else {
        assert_eq!(route.kind(), RouteErrorKind::Upstream, "{route}");
    }
    assert!(route.retry_after().is_none_or(|d| d <= RETRY_AFTER_CAP), "{:?}", route.retry_after());
    format!("{route} {}", route.message())
}

// ---------------------------------------------------------------------------------------------
// retry_after
// ---------------------------------------------------------------------------------------------

/// A fixed "now" (2023-11-14T22:13:20Z), so HTTP dates replay the same way.
fn fixed_now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

/// A non-negative finite number, as a header value may spell it.
fn number(value: &str) -> Option<f64> {
    value.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)
}

/// The first line is `retry-after-ms` (absent when empty), the second `retry-after`.
///
/// Invariants: never more than one day; `retry-after-ms` wins and is milliseconds (capped at
/// one day, like every form); a number of seconds is read exactly (capped); an HTTP date gives
/// the time from now until it (none once passed, capped), and never grows as time passes.
pub fn check_retry_after(data: &[u8]) {
    let mut lines = data.splitn(2, |&b| b == b'\n');
    let ms = lines.next().filter(|l| !l.is_empty()).and_then(|l| HeaderValue::from_bytes(l).ok());
    let secs = lines.next().filter(|l| !l.is_empty()).and_then(|l| HeaderValue::from_bytes(l).ok());
    let mut headers = HeaderMap::new();
    if let Some(v) = &ms {
        headers.insert("retry-after-ms", v.clone());
    }
    if let Some(v) = &secs {
        headers.insert("retry-after", v.clone());
    }
    let now = fixed_now();
    let got = retry_after(&headers, now);
    assert!(got.is_none_or(|d| d <= RETRY_AFTER_CAP), "{got:?} exceeds the cap");

    fn text(v: &Option<HeaderValue>) -> Option<&str> {
        v.as_ref().and_then(|v| v.to_str().ok()).map(str::trim)
    }
    if let Some(v) = text(&ms).and_then(number) {
        let expected = Duration::from_secs_f64((v / 1000.0).min(RETRY_AFTER_CAP.as_secs_f64()));
        assert_eq!(got, Some(expected), "retry-after-ms {v}");
        return;
    }
    let Some(value) = text(&secs) else {
        assert_eq!(got, None);
        return;
    };
    if let Some(v) = number(value) {
        assert_eq!(got, Some(Duration::from_secs_f64(v.min(RETRY_AFTER_CAP.as_secs_f64()))), "retry-after {v}");
        return;
    }
    match httpdate::parse_http_date(value) {
        Ok(at) => {
            let expected = at.duration_since(now).ok().map(|d| d.min(RETRY_AFTER_CAP));
            assert_eq!(got, expected, "retry-after date {value}");
            let later = retry_after(&headers, now + Duration::from_secs(1));
            assert!(later.unwrap_or_default() <= got.unwrap_or_default(), "a date wait grew with time");
        }
        Err(_) => assert_eq!(got, None, "retry-after {value:?} is neither a number nor a date"),
    }
}
