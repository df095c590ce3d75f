//! Loopback servers written on raw TCP (so tests control every byte, pause and cut), and
//! helpers to build attempts.

use std::{
    collections::VecDeque,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::Value;
use switchyard_layers::{
    BoxError, Deployment, RequestFacts, RouteBody, RouteCtx, RouteError, body::BodyEndKind, ctx::Endpoint,
};
use switchyard_services::provider::{HttpProvider, ProviderConfig};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::{mpsc, oneshot},
};
use tower::ServiceExt;

/// The longest any test waits for an event that should come.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

/// One request as the server read it.
#[derive(Clone, Debug)]
pub(crate) struct Captured {
    pub(crate) method: String,
    /// The request target as sent: `/v1/chat/completions`, an absolute URI, or `host:port`.
    pub(crate) target: String,
    /// Lower-cased names.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Captured {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the upstream request body is JSON")
    }
}

/// What the server does with the next request.
pub(crate) enum Reply {
    /// A whole answer with `content-length`.
    Json { status: u16, headers: Vec<(&'static str, String)>, body: String },
    /// A chunked `text/event-stream` answer, step by step.
    Sse(Vec<Step>),
    /// Close the connection without answering.
    Close,
    /// Reset the connection (RST) without answering.
    Reset,
    /// Never answer; keep the connection open.
    Hang,
}

impl Reply {
    pub(crate) fn json(status: u16, body: impl Into<String>) -> Self {
        Reply::Json { status, headers: Vec::new(), body: body.into() }
    }
}

/// One step of an SSE answer (the status line and headers are sent first).
pub(crate) enum Step {
    /// Raw bytes as one HTTP chunk (an event is `data: ...\n\n`).
    Chunk(String),
    /// Tell the test this point was reached.
    Reached(oneshot::Sender<()>),
    /// Wait for the test's go.
    WaitFor(oneshot::Receiver<()>),
    /// End the chunked body properly.
    End,
    /// Close the connection mid-body.
    Cut,
    /// Send nothing more, keep the connection open.
    Stall,
}

/// `data: {json}\n\n`.
pub(crate) fn event(json: Value) -> Step {
    Step::Chunk(format!("data: {json}\n\n"))
}

/// A chat chunk whose delta carries `content`.
pub(crate) fn content(text: &str) -> Step {
    event(serde_json::json!({"id":"c1","object":"chat.completion.chunk","model":"m",
        "choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]}))
}

pub(crate) fn done() -> Step {
    Step::Chunk("data: [DONE]\n\n".to_owned())
}

/// A test upstream on `127.0.0.1:0`.
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    requests: tokio::sync::Mutex<mpsc::UnboundedReceiver<Captured>>,
}

impl Server {
    pub(crate) async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let replies: Arc<Mutex<VecDeque<Reply>>> = Arc::default();
        let (tx, rx) = mpsc::unbounded_channel();
        let queue = replies.clone();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(serve(sock, queue.clone(), tx.clone()));
            }
        });
        Self { addr, replies, requests: tokio::sync::Mutex::new(rx) }
    }

    /// Scripts the answer to the next request (answers are used in order).
    pub(crate) fn reply(&self, reply: Reply) {
        self.replies.lock().expect("replies lock").push_back(reply);
    }

    /// `http://127.0.0.1:port`.
    pub(crate) fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The next request the server read.
    pub(crate) async fn request(&self) -> Captured {
        let mut rx = self.requests.lock().await;
        tokio::time::timeout(PATIENCE, rx.recv()).await.expect("a request in time").expect("server alive")
    }

    /// Every request read so far.
    pub(crate) async fn requests_so_far(&self) -> Vec<Captured> {
        let mut rx = self.requests.lock().await;
        let mut all = Vec::new();
        while let Ok(c) = rx.try_recv() {
            all.push(c);
        }
        all
    }
}

async fn serve(mut sock: TcpStream, replies: Arc<Mutex<VecDeque<Reply>>>, tx: mpsc::UnboundedSender<Captured>) {
    let mut buf = Vec::new();
    while let Some(req) = read_request(&mut sock, &mut buf).await {
        let _ = tx.send(req);
        let reply = replies.lock().expect("replies lock").pop_front();
        let keep_going = match reply {
            None => write_json(&mut sock, 500, &[], r#"{"error":{"message":"no reply scripted"}}"#).await,
            Some(Reply::Json { status, headers, body }) => write_json(&mut sock, status, &headers, &body).await,
            Some(Reply::Sse(steps)) => write_sse(&mut sock, steps).await,
            Some(Reply::Close) => false,
            Some(Reply::Reset) => {
                let _ = sock.set_zero_linger();
                false
            }
            Some(Reply::Hang) => {
                std::future::pending::<()>().await;
                false
            }
        };
        if !keep_going {
            return;
        }
    }
}

async fn read_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Captured> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let mut lines = head.split("\r\n");
            let mut first = lines.next()?.split(' ');
            let (method, target) = (first.next()?.to_owned(), first.next()?.to_owned());
            let headers: Vec<(String, String)> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
                .collect();
            let len: usize =
                headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
            while buf.len() < end + 4 + len {
                if sock.read_buf(buf).await.ok()? == 0 {
                    return None;
                }
            }
            let body = buf[end + 4..end + 4 + len].to_vec();
            buf.drain(..end + 4 + len);
            return Some(Captured { method, target, headers, body });
        }
        if sock.read_buf(buf).await.ok()? == 0 {
            return None;
        }
    }
}

async fn write_json(sock: &mut TcpStream, status: u16, headers: &[(&'static str, String)], body: &str) -> bool {
    let reason = http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("Whatever");
    let mut head =
        format!("HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    sock.write_all(head.as_bytes()).await.is_ok() && sock.write_all(body.as_bytes()).await.is_ok()
}

async fn write_sse(sock: &mut TcpStream, steps: Vec<Step>) -> bool {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    if sock.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    for step in steps {
        match step {
            Step::Chunk(data) => {
                let chunk = format!("{:x}\r\n{data}\r\n", data.len());
                if sock.write_all(chunk.as_bytes()).await.is_err() {
                    return false;
                }
            }
            Step::Reached(tx) => {
                let _ = sock.flush().await;
                let _ = tx.send(());
            }
            Step::WaitFor(rx) => {
                let _ = rx.await;
            }
            Step::End => return sock.write_all(b"0\r\n\r\n").await.is_ok(),
            Step::Cut => return false,
            Step::Stall => std::future::pending::<()>().await,
        }
    }
    false
}

/// A provider with test-friendly connect timeouts.
pub(crate) fn provider(config: ProviderConfig) -> HttpProvider {
    HttpProvider::new(config.connect_timeout(Duration::from_secs(5))).expect("the provider builds")
}

/// A chat body.
pub(crate) fn chat_body() -> Value {
    serde_json::json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
}

/// An attempt on `deployment` (as the select layer would set it up).
pub(crate) fn attempt(deployment: Deployment, facts: RequestFacts, body: &Value) -> http::Request<Bytes> {
    let mut ctx = RouteCtx::with_facts("gpt-4o", facts);
    ctx.selected = Some(Arc::new(deployment));
    let mut req = http::Request::new(Bytes::from(body.to_string()));
    req.extensions_mut().insert(ctx);
    req
}

/// Facts of a streaming chat request.
pub(crate) fn streaming() -> RequestFacts {
    RequestFacts::new().streaming(true).endpoint(Endpoint::Chat)
}

/// Sends one attempt, bounded by [`PATIENCE`].
pub(crate) async fn send(
    provider: &HttpProvider,
    req: http::Request<Bytes>,
) -> Result<http::Response<RouteBody>, BoxError> {
    tokio::time::timeout(PATIENCE, provider.clone().oneshot(req)).await.expect("the attempt ends in time")
}

/// The `RouteError` of a failed attempt.
pub(crate) fn route_error(result: Result<http::Response<RouteBody>, BoxError>) -> RouteError {
    match result {
        Ok(resp) => panic!("expected a failure, got {}", resp.status()),
        Err(e) => RouteError::from_boxed(e),
    }
}

/// Everything a body yields: its data frames as text, and the error that ended it, if any.
pub(crate) async fn drain(mut body: RouteBody) -> (String, Option<RouteError>, Option<BodyEndKind>) {
    let end = Arc::new(Mutex::new(None));
    let seen = end.clone();
    body.on_end(move |e| *seen.lock().expect("end lock") = Some(e.kind));
    let mut text = String::new();
    let mut error = None;
    loop {
        match tokio::time::timeout(PATIENCE, body.frame()).await.expect("the body moves in time") {
            None => break,
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    text.push_str(std::str::from_utf8(&data).expect("utf-8 events"));
                }
            }
            Some(Err(e)) => {
                error = Some(RouteError::from_boxed(e));
                break;
            }
        }
    }
    drop(body);
    let kind = *end.lock().expect("end lock");
    (text, error, kind)
}

/// The JSON of each `data:` event of `text` (skipping `[DONE]`).
pub(crate) fn data_events(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).expect("JSON event"))
        .collect()
}
