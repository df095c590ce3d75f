//! [`MockUpstream`]: the axum server, and [`MockHandle`], what a test holds on to.

use std::{
    fmt, io,
    net::{Ipv4Addr, SocketAddr},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use axum::{
    Router,
    extract::{DefaultBodyLimit, Path, State},
    response::Response,
    routing::post,
};
use bytes::Bytes;
use http::{HeaderMap, Method, Uri};
use parking_lot::{Mutex, RwLock};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use tokio::{sync::watch, task::JoinHandle};

use super::{
    MockProfile,
    answer::{self, Api, Call},
};

/// Largest request body the mock reads.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// How long [`MockHandle::shutdown`] waits for connections to finish before closing them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// An OpenAI-compatible upstream on a loopback port; see the [module docs](super).
#[derive(Debug)]
#[non_exhaustive]
pub struct MockUpstream;

impl MockUpstream {
    /// Serves `profile` on `127.0.0.1` at a free port.
    ///
    /// Must be called from within a Tokio runtime (the server runs as a task on it); an error
    /// otherwise, or when the port cannot be bound.
    pub fn start(profile: MockProfile) -> io::Result<MockHandle> {
        Self::start_on(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), profile)
    }

    /// Serves `profile` on `addr` (a fixed port, for a demo others `curl`).
    pub fn start_on(addr: SocketAddr, profile: MockProfile) -> io::Result<MockHandle> {
        let runtime = tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let addr = listener.local_addr()?;

        let (shutdown, signal) = watch::channel(false);
        let shared = Arc::new(Shared {
            profile: RwLock::new(Arc::new(profile)),
            counters: Counters::default(),
            last: Mutex::new(None),
            shutdown: signal.clone(),
        });
        let app = router(shared.clone());
        let listener = FaultyListener { inner: listener, shared: shared.clone(), connections: 0 };
        let mut signal = signal;
        let task = runtime.spawn(async move {
            let stop = async move {
                let _ = signal.wait_for(|down| *down).await;
            };
            if let Err(e) = axum::serve(listener, app.into_make_service()).with_graceful_shutdown(stop).await {
                tracing::warn!(error = %e, "mock upstream stopped");
            }
        });
        Ok(MockHandle { addr, shared, shutdown, task: Some(task) })
    }

    /// A base URL (`http://127.0.0.1:PORT/v1`) on a loopback port nothing listens on: every
    /// connection to it is refused. The port was free when this returned; it could be taken
    /// by another program later.
    pub fn refused_base_url() -> io::Result<String> {
        let addr = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?;
        Ok(format!("http://{addr}/v1"))
    }
}

/// The listener in front of the server: applies the profile's connection faults (reset, no
/// response) and hands every other connection to axum.
struct FaultyListener {
    inner: tokio::net::TcpListener,
    shared: Arc<Shared>,
    connections: u64,
}

impl axum::serve::Listener for FaultyListener {
    type Io = tokio::net::TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, addr) = axum::serve::Listener::accept(&mut self.inner).await;
            let n = self.connections;
            self.connections += 1;
            let profile = self.shared.profile.read().clone();
            if profile.reset_rate == 0.0 && profile.silent_rate == 0.0 {
                return (stream, addr);
            }
            let mut rng = SmallRng::seed_from_u64(!profile.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let reset = rng.random_bool(profile.reset_rate);
            let silent = rng.random_bool(profile.silent_rate);
            if !(reset || silent) {
                return (stream, addr);
            }
            self.shared.counters.connection_faults.fetch_add(1, Ordering::Relaxed);
            let mut shutdown = self.shared.shutdown.clone();
            tokio::spawn(async move {
                if reset {
                    // Closing a socket with unread data makes the kernel answer with a reset
                    // (RST) instead of an orderly close: wait for the request (peeking leaves it
                    // unread), read none of it.
                    let mut first = [0u8; 1];
                    tokio::select! {
                        _ = stream.peek(&mut first) => {}
                        _ = shutdown.wait_for(|down| *down) => {}
                    }
                    drop(stream);
                } else {
                    let _ = shutdown.wait_for(|down| *down).await;
                    drop(stream);
                }
            });
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/chat/completions", post(chat))
        .route("/v1/embeddings", post(embeddings))
        .route("/embeddings", post(embeddings))
        .route("/openai/deployments/{deployment}/chat/completions", post(azure_chat))
        .route("/openai/deployments/{deployment}/embeddings", post(azure_embeddings))
        .fallback(unknown_path)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(shared)
}

/// What the server and every handle share.
struct Shared {
    profile: RwLock<Arc<MockProfile>>,
    counters: Counters,
    last: Mutex<Option<RecordedRequest>>,
    shutdown: watch::Receiver<bool>,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    failures: AtomicU64,
    stalls: AtomicU64,
    streams: AtomicU64,
    stream_cuts: AtomicU64,
    connection_faults: AtomicU64,
}

/// A request the mock received, for assertions.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// The method.
    pub method: Method,
    /// The path (`/v1/chat/completions`, `/openai/deployments/gpt-4o/chat/completions`, ...).
    pub path: String,
    /// The query string (`api-version=...`), if any.
    pub query: Option<String>,
    /// The headers, as received.
    pub headers: HeaderMap,
    /// The body, as received.
    pub body: Bytes,
}

impl RecordedRequest {
    /// The body as JSON, if it is JSON.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// What the mock did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MockStats {
    /// Requests received (on any path).
    pub requests: u64,
    /// Injected failures answered.
    pub failures: u64,
    /// Requests stalled after their headers.
    pub stalls: u64,
    /// Streams started (cut ones included).
    pub streams: u64,
    /// Streams cut before their end.
    pub stream_cuts: u64,
    /// Connections reset or left without an answer (the profile's connection faults).
    pub connection_faults: u64,
}

/// A running [`MockUpstream`]: its address, what it received, its profile. Dropping the handle
/// shuts the server down (gracefully, in the background); [`shutdown`](Self::shutdown) waits
/// for it.
pub struct MockHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl fmt::Debug for MockHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockHandle").field("addr", &self.addr).field("stats", &self.stats()).finish_non_exhaustive()
    }
}

impl MockHandle {
    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The OpenAI base URL, `http://127.0.0.1:PORT/v1` (an `api_base` for OpenAI-compatible
    /// deployments).
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.origin())
    }

    /// The server's origin, `http://127.0.0.1:PORT` (an `api_base` for Azure deployments).
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests received so far.
    pub fn requests(&self) -> u64 {
        self.shared.counters.requests.load(Ordering::Relaxed)
    }

    /// Everything counted so far.
    pub fn stats(&self) -> MockStats {
        let c = &self.shared.counters;
        MockStats {
            requests: c.requests.load(Ordering::Relaxed),
            failures: c.failures.load(Ordering::Relaxed),
            stalls: c.stalls.load(Ordering::Relaxed),
            streams: c.streams.load(Ordering::Relaxed),
            stream_cuts: c.stream_cuts.load(Ordering::Relaxed),
            connection_faults: c.connection_faults.load(Ordering::Relaxed),
        }
    }

    /// The last request received.
    pub fn last_request(&self) -> Option<RecordedRequest> {
        self.shared.last.lock().clone()
    }

    /// The profile requests are answered with.
    pub fn profile(&self) -> MockProfile {
        MockProfile::clone(&self.shared.profile.read())
    }

    /// Answers with `profile` from the next request on (requests in progress keep theirs).
    pub fn set_profile(&self, profile: MockProfile) {
        *self.shared.profile.write() = Arc::new(profile);
    }

    /// Stops accepting connections, ends stalled and paced answers, and waits for the server to
    /// finish (closing whatever is left after a few seconds).
    pub async fn shutdown(mut self) {
        self.shutdown.send_replace(true);
        if let Some(task) = self.task.take() {
            let abort = task.abort_handle();
            if tokio::time::timeout(SHUTDOWN_GRACE, task).await.is_err() {
                abort.abort();
            }
        }
    }
}

impl Drop for MockHandle {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
    }
}

// === handlers ===

async fn chat(State(s): State<Arc<Shared>>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    serve(&s, Api::Chat, None, RecordedRequest::new(method, &uri, headers, body)).await
}

async fn embeddings(
    State(s): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(&s, Api::Embeddings, None, RecordedRequest::new(method, &uri, headers, body)).await
}

async fn azure_chat(
    State(s): State<Arc<Shared>>,
    Path(deployment): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(&s, Api::Chat, Some(deployment), RecordedRequest::new(method, &uri, headers, body)).await
}

async fn azure_embeddings(
    State(s): State<Arc<Shared>>,
    Path(deployment): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(&s, Api::Embeddings, Some(deployment), RecordedRequest::new(method, &uri, headers, body)).await
}

async fn unknown_path(
    State(s): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    s.counters.requests.fetch_add(1, Ordering::Relaxed);
    let answer = answer::not_found(&method, uri.path());
    *s.last.lock() = Some(RecordedRequest::new(method, &uri, headers, body));
    answer
}

impl RecordedRequest {
    fn new(method: Method, uri: &Uri, headers: HeaderMap, body: Bytes) -> Self {
        Self { method, path: uri.path().to_owned(), query: uri.query().map(str::to_owned), headers, body }
    }
}

/// Answers one request as the current profile says.
async fn serve(s: &Shared, api: Api, azure_deployment: Option<String>, req: RecordedRequest) -> Response {
    let n = s.counters.requests.fetch_add(1, Ordering::Relaxed);
    let body = req.body.clone();
    *s.last.lock() = Some(req);
    let profile = s.profile.read().clone();

    // The n-th request's draws depend only on the seed and n, always in this order.
    let mut rng = SmallRng::seed_from_u64(profile.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let fail = rng.random_bool(profile.fail_rate);
    let stall = rng.random_bool(profile.stall_rate);
    let cut = rng.random_bool(profile.cut_rate);
    let latency = profile.latency.sample(&mut rng);
    // Drawn only when enabled, so that profiles without them keep their sequences.
    let malformed = profile.malformed_rate > 0.0 && rng.random_bool(profile.malformed_rate);
    let no_done = profile.no_done_rate > 0.0 && rng.random_bool(profile.no_done_rate);

    let call = match Call::read(&body, api, azure_deployment.as_deref(), &profile, &mut rng) {
        Ok(call) => call,
        Err(problem) => return answer::invalid(problem),
    };
    let mut shutdown = s.shutdown.clone();
    answer::pause(latency, &mut shutdown).await;
    if fail {
        s.counters.failures.fetch_add(1, Ordering::Relaxed);
        return answer::failure(&call, &profile);
    }
    if stall {
        s.counters.stalls.fetch_add(1, Ordering::Relaxed);
        return answer::stalled(&call, shutdown);
    }
    if call.stream {
        s.counters.streams.fetch_add(1, Ordering::Relaxed);
        if cut {
            s.counters.stream_cuts.fetch_add(1, Ordering::Relaxed);
        }
        let faults = answer::StreamFaults {
            cut_after: cut.then_some(profile.cut_after),
            malformed_after: malformed.then_some(profile.malformed_after),
            no_done,
        };
        return answer::streaming(call, profile, rng, faults, shutdown);
    }
    if malformed {
        return answer::truncated(&call);
    }
    answer::whole(&call, &profile, &mut rng)
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reset_profile_resets_the_connection_before_any_answer() {
        let profile = MockProfile::builder().reset(1.0).build().expect("valid profile");
        let mock = MockUpstream::start(profile).expect("mock upstream");
        let addr = mock.addr();
        let read = tokio::task::spawn_blocking(move || {
            let mut sock = std::net::TcpStream::connect(addr)?;
            sock.set_read_timeout(Some(Duration::from_secs(20)))?;
            sock.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: mock\r\ncontent-length: 2\r\n\r\n{}")?;
            let mut answer = Vec::new();
            sock.read_to_end(&mut answer).map(|_| answer)
        });
        let err = read.await.expect("reader").expect_err("a reset, not an answer");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
        assert_eq!(mock.stats().connection_faults, 1);
        assert_eq!(mock.requests(), 0, "no request was read");
    }

    #[test]
    fn nothing_listens_at_the_refused_url() {
        let url = MockUpstream::refused_base_url().expect("a free port");
        let addr = url.trim_start_matches("http://").trim_end_matches("/v1");
        let err = std::net::TcpStream::connect(addr).expect_err("refused");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
    }
}
