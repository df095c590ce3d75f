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
    routing::{get, post},
};
use bytes::Bytes;
use http::{HeaderMap, Method, Uri};
use parking_lot::{Mutex, RwLock};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use tokio::{sync::watch, task::JoinHandle};

use super::{
    MockProfile,
    answer::{self, Api, Call},
    anthropic, bedrock, cohere, gemini,
    listener::FaultyListener,
    responses, vertex,
};

/// Largest request body the mock reads.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// How long [`MockHandle::shutdown`] waits for connections to finish before closing them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// An OpenAI- and Anthropic-compatible upstream on a loopback port; see the [module docs](super).
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
        let shared = Arc::new(MockState {
            profile: RwLock::new(Arc::new(profile)),
            counters: Counters::default(),
            last: Mutex::new(None),
            shutdown: signal.clone(),
            responses: responses::Store::default(),
            bedrock: bedrock::Keys::default(),
            google: vertex::Tokens::default(),
        });
        let app = router(shared.clone());
        let listener = FaultyListener::new(listener, shared.clone());
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

fn router(shared: Arc<MockState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/chat/completions", post(chat))
        .route("/v1/embeddings", post(embeddings))
        .route("/embeddings", post(embeddings))
        .route("/openai/deployments/{deployment}/chat/completions", post(azure_chat))
        .route("/openai/deployments/{deployment}/embeddings", post(azure_embeddings))
        .route("/v1/messages", post(messages))
        .route("/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/v1/responses", post(responses::create))
        .route("/responses", post(responses::create))
        .route("/v1/responses/{id}", get(responses::retrieve).delete(responses::delete))
        .route("/responses/{id}", get(responses::retrieve).delete(responses::delete))
        .route("/v1/responses/{id}/cancel", post(responses::cancel))
        .route("/responses/{id}/cancel", post(responses::cancel))
        .route("/model/{model_id}/converse", post(bedrock::converse))
        .route("/model/{model_id}/converse-stream", post(bedrock::converse_stream))
        .route("/model/{model_id}/invoke", post(bedrock::invoke))
        .route("/v1beta/models/{model_and_method}", post(gemini::models))
        .route("/token", post(vertex::token))
        .route(
            "/v1/projects/{project}/locations/{location}/publishers/google/models/{model_and_method}",
            post(vertex::google_models),
        )
        .route(
            "/v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model_and_method}",
            post(vertex::anthropic_models),
        )
        .route("/v2/chat", post(cohere::chat))
        .route("/v2/embed", post(cohere::embed))
        .fallback(unknown_path)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(shared)
}

/// The mock server's state, shared by its handlers and every handle: the profile, counters,
/// the last request, stored responses and the credentials it accepts.
pub(super) struct MockState {
    pub(super) profile: RwLock<Arc<MockProfile>>,
    pub(super) counters: Counters,
    last: Mutex<Option<RecordedRequest>>,
    pub(super) shutdown: watch::Receiver<bool>,
    /// The Responses API responses this server keeps.
    pub(super) responses: responses::Store,
    /// What the Bedrock routes accept as credentials.
    pub(super) bedrock: bedrock::Keys,
    /// The OAuth2 access tokens issued at `/token`, which the Vertex AI routes accept.
    pub(super) google: vertex::Tokens,
}

#[derive(Default)]
pub(super) struct Counters {
    requests: AtomicU64,
    pub(super) failures: AtomicU64,
    pub(super) stalls: AtomicU64,
    streams: AtomicU64,
    stream_cuts: AtomicU64,
    stream_errors: AtomicU64,
    pub(super) connection_faults: AtomicU64,
    pub(super) response_continuations: AtomicU64,
    pub(super) token_requests: AtomicU64,
}

/// A request the mock received, for assertions.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// The method.
    pub method: Method,
    /// The path (`/v1/chat/completions`, `/openai/deployments/gpt-4o/chat/completions`,
    /// `/v1/messages`, ...).
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
    /// Streams drawn to end with an in-stream error event (the profile's
    /// [`stream_error`](super::MockProfileBuilder::stream_error)); a cut drawn for the same
    /// stream that comes first ends it before the error.
    pub stream_errors: u64,
    /// Connections reset or left without an answer (the profile's connection faults).
    pub connection_faults: u64,
    /// Responses API requests whose `previous_response_id` named a response this server keeps
    /// (whatever their answer): conversations continued here.
    pub response_continuations: u64,
    /// Requests to the OAuth2 token endpoint (`POST /token`), answered or refused; they are not
    /// in [`requests`](Self::requests).
    pub token_requests: u64,
}

/// A running [`MockUpstream`]: its address, what it received, its profile. Dropping the handle
/// shuts the server down (gracefully, in the background); [`shutdown`](Self::shutdown) waits
/// for it.
pub struct MockHandle {
    addr: SocketAddr,
    pub(super) shared: Arc<MockState>,
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

    /// The server's origin, `http://127.0.0.1:PORT` (an `api_base` for Azure and Anthropic
    /// deployments: the Messages API is at `{origin}/v1/messages`).
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
            stream_errors: c.stream_errors.load(Ordering::Relaxed),
            connection_faults: c.connection_faults.load(Ordering::Relaxed),
            response_continuations: c.response_continuations.load(Ordering::Relaxed),
            token_requests: c.token_requests.load(Ordering::Relaxed),
        }
    }

    /// The OAuth2 token endpoint, `http://127.0.0.1:PORT/token`: the `token_uri` of a
    /// service-account key for Vertex AI deployments whose `api_base` is
    /// [`origin`](Self::origin).
    pub fn token_uri(&self) -> String {
        format!("{}/token", self.origin())
    }

    /// While `refuse` is on, the token endpoint answers every grant `400 invalid_grant` (as Google
    /// does for a deleted key); tokens issued before stay valid.
    pub fn refuse_tokens(&self, refuse: bool) {
        self.shared.google.refusing.store(refuse, Ordering::Relaxed);
    }

    /// The `expires_in` of the access tokens the token endpoint issues from now on (3,599 seconds,
    /// as Google's, until changed; whole seconds). A lifetime under 20 seconds makes `gcp_auth`
    /// fetch a new token for every call, which is how the token-refresh benchmark measures one.
    pub fn token_lifetime(&self, lifetime: Duration) {
        self.shared.google.lifetime_secs.store(lifetime.as_secs(), Ordering::Relaxed);
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

async fn chat(State(s): State<Arc<MockState>>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    serve(&s, Api::Chat, None, RecordedRequest::new(method, &uri, headers, body)).await
}

async fn embeddings(
    State(s): State<Arc<MockState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(&s, Api::Embeddings, None, RecordedRequest::new(method, &uri, headers, body)).await
}

async fn azure_chat(
    State(s): State<Arc<MockState>>,
    Path(deployment): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(&s, Api::Chat, Some(deployment), RecordedRequest::new(method, &uri, headers, body)).await
}

async fn azure_embeddings(
    State(s): State<Arc<MockState>>,
    Path(deployment): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(&s, Api::Embeddings, Some(deployment), RecordedRequest::new(method, &uri, headers, body)).await
}

async fn messages(
    State(s): State<Arc<MockState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve_messages(&s, RecordedRequest::new(method, &uri, headers, body), anthropic::Host::Anthropic).await
}

/// Anthropic's token counter: `{"input_tokens": n}`, where the mock counts one token per four
/// bytes of the text in `system` and `messages` (rounded up per string), after checking `model`
/// and `messages` as Anthropic does.
async fn count_tokens(
    State(s): State<Arc<MockState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    s.counters.requests.fetch_add(1, Ordering::Relaxed);
    *s.last.lock() = Some(RecordedRequest::new(method, &uri, headers, body.clone()));
    count_answer(&body)
}

/// The answer of Anthropic's token counter (and of Claude's on Vertex AI) to `body`, as
/// [`count_tokens`] describes it.
pub(super) fn count_answer(body: &[u8]) -> Response {
    use axum::response::IntoResponse as _;
    let refuse = |message: &str| {
        let error =
            serde_json::json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}});
        (http::StatusCode::BAD_REQUEST, axum::Json(error)).into_response()
    };
    let Ok(serde_json::Value::Object(request)) = serde_json::from_slice::<serde_json::Value>(body) else {
        return refuse("request body must be a JSON object");
    };
    if !request.get("model").is_some_and(serde_json::Value::is_string) {
        return refuse("model: Field required");
    }
    let Some(messages) = request.get("messages").filter(|m| m.is_array()) else {
        return refuse("messages: Field required");
    };
    fn text_tokens(v: &serde_json::Value) -> u64 {
        match v {
            serde_json::Value::String(s) => (s.len() as u64).div_ceil(4),
            serde_json::Value::Array(items) => items.iter().map(text_tokens).sum(),
            serde_json::Value::Object(map) => {
                map.iter().filter(|(k, _)| *k != "type").map(|(_, v)| text_tokens(v)).sum()
            }
            _ => 0,
        }
    }
    let tokens = text_tokens(messages) + request.get("system").map_or(0, text_tokens);
    axum::Json(serde_json::json!({ "input_tokens": tokens })).into_response()
}

async fn unknown_path(
    State(s): State<Arc<MockState>>,
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
    pub(super) fn new(method: Method, uri: &Uri, headers: HeaderMap, body: Bytes) -> Self {
        Self { method, path: uri.path().to_owned(), query: uri.query().map(str::to_owned), headers, body }
    }
}

/// What the profile drew for one request.
pub(super) struct Draws {
    pub(super) fail: bool,
    pub(super) stall: bool,
    pub(super) cut: bool,
    pub(super) latency: Duration,
    pub(super) malformed: bool,
    pub(super) no_done: bool,
    pub(super) stream_error: bool,
}

impl MockState {
    /// Counts and records a request answered without drawing from the profile (a refusal before
    /// any reading).
    pub(super) fn record(&self, req: RecordedRequest) {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        *self.last.lock() = Some(req);
    }

    /// Counts and records a request, and draws its behaviour: the n-th request's draws depend
    /// only on the seed and n, always in this order, whatever its dialect. Returns the
    /// generator for the draws that follow (the answer's id, chunk gaps).
    pub(super) fn admit(&self, req: RecordedRequest) -> (Arc<MockProfile>, Draws, SmallRng) {
        let n = self.counters.requests.fetch_add(1, Ordering::Relaxed);
        *self.last.lock() = Some(req);
        let profile = self.profile.read().clone();
        let mut rng = SmallRng::seed_from_u64(profile.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let fail = rng.random_bool(profile.fail_rate());
        let stall = rng.random_bool(profile.stall_rate);
        let cut = rng.random_bool(profile.cut_rate);
        let latency = profile.latency.sample(&mut rng);
        // Drawn only when enabled, so that profiles without them keep their sequences.
        let malformed = profile.malformed_rate > 0.0 && rng.random_bool(profile.malformed_rate);
        let no_done = profile.no_done_rate > 0.0 && rng.random_bool(profile.no_done_rate);
        let stream_error = profile.stream_error_rate > 0.0 && rng.random_bool(profile.stream_error_rate);
        // Last, and only with several kinds of failure, so that one kind keeps its sequence.
        let profile = if fail { profile.injected(&mut rng) } else { profile };
        (profile, Draws { fail, stall, cut, latency, malformed, no_done, stream_error }, rng)
    }

    /// Counts a stream and the faults drawn for it.
    pub(super) fn count_stream(&self, draws: &Draws) {
        self.counters.streams.fetch_add(1, Ordering::Relaxed);
        if draws.cut {
            self.counters.stream_cuts.fetch_add(1, Ordering::Relaxed);
        }
        if draws.stream_error {
            self.counters.stream_errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Answers one OpenAI request as the current profile says.
async fn serve(s: &MockState, api: Api, azure_deployment: Option<String>, req: RecordedRequest) -> Response {
    let body = req.body.clone();
    let (profile, draws, mut rng) = s.admit(req);
    let call = match Call::read(&body, api, azure_deployment.as_deref(), &profile, &mut rng) {
        Ok(call) => call,
        Err(problem) => return answer::invalid(problem),
    };
    let mut shutdown = s.shutdown.clone();
    answer::pause(draws.latency, &mut shutdown).await;
    if draws.fail {
        s.counters.failures.fetch_add(1, Ordering::Relaxed);
        return answer::failure(&call, &profile);
    }
    if draws.stall {
        s.counters.stalls.fetch_add(1, Ordering::Relaxed);
        return answer::stalled(call.stream, shutdown);
    }
    if call.stream {
        s.count_stream(&draws);
        let faults = answer::StreamFaults {
            cut_after: draws.cut.then_some(profile.cut_after),
            malformed_after: draws.malformed.then_some(profile.malformed_after),
            no_done: draws.no_done,
            error_after: draws.stream_error.then_some(profile.stream_error_after),
        };
        return answer::streaming(call, profile, rng, faults, shutdown);
    }
    if draws.malformed {
        return answer::truncated(&call);
    }
    answer::whole(&call, &profile, &mut rng)
}

/// Answers one Anthropic Messages request as the current profile says, with the same draws.
pub(super) async fn serve_messages(s: &MockState, req: RecordedRequest, host: anthropic::Host<'_>) -> Response {
    let (headers, body) = (req.headers.clone(), req.body.clone());
    let (profile, draws, mut rng) = s.admit(req);
    let call = match anthropic::Call::read((&headers, host), &body, &profile, &mut rng) {
        Ok(call) => call,
        Err(refusal) => return refusal.into_response(),
    };
    let mut shutdown = s.shutdown.clone();
    answer::pause(draws.latency, &mut shutdown).await;
    if draws.fail {
        s.counters.failures.fetch_add(1, Ordering::Relaxed);
        return anthropic::failure(&call, &profile);
    }
    if draws.stall {
        s.counters.stalls.fetch_add(1, Ordering::Relaxed);
        return answer::stalled(call.stream, shutdown);
    }
    if call.stream {
        s.count_stream(&draws);
        let faults = anthropic::StreamFaults {
            cut_after: draws.cut.then_some(profile.cut_after),
            malformed_after: draws.malformed.then_some(profile.malformed_after),
            error_after: draws.stream_error.then_some(profile.stream_error_after),
        };
        return anthropic::streaming(&call, profile, rng, faults, shutdown);
    }
    if draws.malformed {
        return anthropic::truncated(&call, &profile);
    }
    anthropic::whole(&call, &profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_listens_at_the_refused_url() {
        let url = MockUpstream::refused_base_url().expect("a free port");
        let addr = url.trim_start_matches("http://").trim_end_matches("/v1");
        let err = std::net::TcpStream::connect(addr).expect_err("refused");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
    }
}
