//! Connection limits: how long a client may take to send a request head, how long a connection
//! may stay open with no request in flight, how many connections are served at once, how large a
//! request head may be, and HTTP/2 keep-alive pings. [`Gateway::serve`](super::Gateway::serve)
//! applies them to every connection it accepts, before any request reaches authentication.
//!
//! hyper's own HTTP/1 header-read timeout starts when a connection begins waiting for a head,
//! which makes it an idle timeout as well: with it alone, a short head timeout would close idle
//! keep-alive connections too early (a load balancer in front reusing one then sees a reset) and
//! a long one would let a client trickle a head for minutes. So each connection has a watchdog:
//! the head clock starts at the first byte read while no request is in flight, the idle clock
//! when the last request in flight ends (its response body included), and hyper's header-read
//! timeout is set to the idle timeout as a backstop.

use std::{
    io,
    pin::Pin,
    sync::{Arc, Mutex, PoisonError},
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    sync::Notify,
    time::Instant,
};

use crate::config::EdgeSettings;

/// The connection limits [`Gateway::serve`](super::Gateway::serve) applies: the defaults, with
/// what the config's `general_settings.edge` sets ([`EdgeSettings`]), or those of
/// [`GatewayBuilder::connection_limits`](super::GatewayBuilder::connection_limits). The defaults
/// suit a gateway behind a load balancer whose idle timeout is 60 s (the AWS and GCP default):
/// the gateway's is longer, so the balancer closes idle connections first.
///
/// ```
/// use std::time::Duration;
/// use switchyard::gateway::ConnectionLimits;
///
/// let limits = ConnectionLimits::default()
///     .header_read_timeout(Duration::from_secs(5))
///     .max_connections(512);
/// assert_eq!(limits.idle_timeout, Duration::from_secs(75));
/// assert_eq!(limits.max_header_bytes, 64 * 1024);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionLimits {
    /// Longest time from the first byte of a request head to its end (HTTP/1), and from a new
    /// connection's accept to its first complete request head (both protocols); the connection is
    /// dropped beyond. Default 10 s.
    pub header_read_timeout: Duration,
    /// Longest time a connection stays open with no request in flight (from its accept, or from
    /// the end of its last response); it is then closed gracefully (HTTP/2: `GOAWAY`). A request
    /// in flight, a long stream included, is never cut by it. Default 75 s.
    pub idle_timeout: Duration,
    /// Connections served at once; while at the cap the gateway accepts no more (they wait in
    /// the listen backlog). Default 4,096.
    pub max_connections: usize,
    /// Largest request head (request line and headers; HTTP/2: the decoded header list): 431 or
    /// a closed connection beyond. At least 8 KiB. Default 64 KiB.
    pub max_header_bytes: usize,
    /// Largest number of request headers (HTTP/1). Default 100.
    pub max_headers: usize,
    /// HTTP/2: how often a connection is pinged; a peer that does not answer within
    /// [`http2_keep_alive_timeout`](Self::http2_keep_alive_timeout) is disconnected. Default 20 s.
    pub http2_keep_alive_interval: Duration,
    /// HTTP/2: how long to wait for a ping's answer. Default 20 s.
    pub http2_keep_alive_timeout: Duration,
    /// HTTP/2: streams (requests) open at once on one connection. Default 200.
    pub http2_max_concurrent_streams: u32,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(75),
            max_connections: 4096,
            max_header_bytes: 64 * 1024,
            max_headers: 100,
            http2_keep_alive_interval: Duration::from_secs(20),
            http2_keep_alive_timeout: Duration::from_secs(20),
            http2_max_concurrent_streams: 200,
        }
    }
}

impl ConnectionLimits {
    /// hyper's smallest HTTP/1 read buffer.
    const MIN_HEADER_BYTES: usize = 8 * 1024;

    /// The defaults with what the config's `general_settings.edge` sets.
    pub(crate) fn configured(edge: &EdgeSettings) -> Self {
        let d = Self::default();
        Self {
            header_read_timeout: edge.header_read_timeout.unwrap_or(d.header_read_timeout),
            idle_timeout: edge.idle_timeout.unwrap_or(d.idle_timeout),
            max_connections: edge.max_connections.unwrap_or(d.max_connections),
            max_header_bytes: edge.max_header_bytes.unwrap_or(d.max_header_bytes),
            max_headers: edge.max_headers.unwrap_or(d.max_headers),
            http2_keep_alive_interval: edge.http2_keep_alive_interval.unwrap_or(d.http2_keep_alive_interval),
            http2_keep_alive_timeout: edge.http2_keep_alive_timeout.unwrap_or(d.http2_keep_alive_timeout),
            http2_max_concurrent_streams: edge.http2_max_concurrent_streams.unwrap_or(d.http2_max_concurrent_streams),
        }
    }

    /// Sets [`header_read_timeout`](Self::header_read_timeout).
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// Sets [`idle_timeout`](Self::idle_timeout).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets [`max_connections`](Self::max_connections).
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max;
        self
    }

    /// Sets [`max_header_bytes`](Self::max_header_bytes).
    pub fn max_header_bytes(mut self, max: usize) -> Self {
        self.max_header_bytes = max;
        self
    }

    /// Sets [`max_headers`](Self::max_headers).
    pub fn max_headers(mut self, max: usize) -> Self {
        self.max_headers = max;
        self
    }

    /// Sets the HTTP/2 keep-alive ping interval and timeout.
    pub fn http2_keep_alive(mut self, interval: Duration, timeout: Duration) -> Self {
        self.http2_keep_alive_interval = interval;
        self.http2_keep_alive_timeout = timeout;
        self
    }

    /// Sets [`http2_max_concurrent_streams`](Self::http2_max_concurrent_streams).
    pub fn http2_max_concurrent_streams(mut self, max: u32) -> Self {
        self.http2_max_concurrent_streams = max;
        self
    }

    /// Why these limits cannot be served, if they cannot.
    pub(crate) fn check(&self) -> Result<(), String> {
        let positive = [
            ("header_read_timeout", self.header_read_timeout),
            ("idle_timeout", self.idle_timeout),
            ("http2_keep_alive_interval", self.http2_keep_alive_interval),
            ("http2_keep_alive_timeout", self.http2_keep_alive_timeout),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, d)| d.is_zero()) {
            return Err(format!("connection limit `{name}` must be longer than 0 s"));
        }
        if self.max_connections == 0 || self.max_headers == 0 || self.http2_max_concurrent_streams == 0 {
            return Err("connection limits `max_connections`, `max_headers` and `http2_max_concurrent_streams` must be at least 1".to_owned());
        }
        if self.max_header_bytes < Self::MIN_HEADER_BYTES {
            return Err(format!(
                "connection limit `max_header_bytes` must be at least {} (got {})",
                Self::MIN_HEADER_BYTES,
                self.max_header_bytes
            ));
        }
        Ok(())
    }

    /// hyper's connection builder with these limits and a timer.
    pub(crate) fn builder(&self) -> hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor> {
        use hyper_util::rt::{TokioExecutor, TokioTimer};
        let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(self.idle_timeout)
            .max_buf_size(self.max_header_bytes)
            .max_headers(self.max_headers);
        builder
            .http2()
            .timer(TokioTimer::new())
            .keep_alive_interval(self.http2_keep_alive_interval)
            .keep_alive_timeout(self.http2_keep_alive_timeout)
            .max_concurrent_streams(self.http2_max_concurrent_streams)
            .max_header_list_size(u32::try_from(self.max_header_bytes).unwrap_or(u32::MAX));
        builder
    }
}

/// Why a connection's watchdog fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// No request in flight for the idle timeout: close gracefully.
    Idle,
    /// A request head (or a new connection's first request) took too long: drop the connection.
    Head,
}

/// One connection's clocks, shared by its IO (bytes read), its service (requests begun and
/// ended) and its watchdog.
#[derive(Debug)]
pub(crate) struct Watch {
    state: Mutex<State>,
    wake: Notify,
    head_timeout: Duration,
    idle_timeout: Duration,
}

#[derive(Debug)]
struct State {
    /// Requests in flight (until their response body ends or is dropped).
    active: usize,
    /// When the connection last became idle (accept, or the end of its last request).
    idle_since: Instant,
    /// When the first byte of the next request head arrived, while idle.
    head_since: Option<Instant>,
    /// The connection has served a request: from then on the head clock only runs on HTTP/1
    /// (HTTP/2 peers send pings and window updates between requests).
    served: bool,
    http2: bool,
}

impl Watch {
    pub(crate) fn new(limits: &ConnectionLimits) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                active: 0,
                idle_since: Instant::now(),
                head_since: None,
                served: false,
                http2: false,
            }),
            wake: Notify::new(),
            head_timeout: limits.header_read_timeout,
            idle_timeout: limits.idle_timeout,
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is plain numbers, consistent after every statement: a panic elsewhere
        // cannot leave it half-written.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes arrived: while idle, they start the head clock.
    fn on_read(&self) {
        let mut s = self.state();
        if s.active == 0 && s.head_since.is_none() && !(s.served && s.http2) {
            s.head_since = Some(Instant::now());
            drop(s);
            self.wake.notify_one();
        }
    }

    /// A request begins: its head is complete. The guard ends it.
    pub(crate) fn begin(self: &Arc<Self>, http2: bool) -> InFlight {
        let mut s = self.state();
        s.active += 1;
        s.head_since = None;
        s.served = true;
        s.http2 = http2;
        InFlight { watch: self.clone() }
    }

    fn end(&self) {
        let mut s = self.state();
        s.active = s.active.saturating_sub(1);
        if s.active == 0 {
            s.idle_since = Instant::now();
            s.head_since = None;
            drop(s);
            self.wake.notify_one();
        }
    }

    /// The next deadline, or `None` while a request is in flight.
    fn deadline(&self) -> Option<(Instant, Expiry)> {
        let s = self.state();
        if s.active > 0 {
            return None;
        }
        let idle = (s.idle_since + self.idle_timeout, Expiry::Idle);
        let head = s.head_since.or((!s.served).then_some(s.idle_since)).map(|h| (h + self.head_timeout, Expiry::Head));
        Some(match head {
            Some(head) if head.0 < idle.0 => head,
            _ => idle,
        })
    }

    /// Completes when the connection has been idle, or reading a head, for too long.
    pub(crate) async fn expired(&self) -> Expiry {
        loop {
            match self.deadline() {
                Some((at, why)) if at <= Instant::now() => return why,
                Some((at, _)) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = self.wake.notified() => {}
                    }
                }
                None => self.wake.notified().await,
            }
        }
    }
}

/// A request in flight on a watched connection; ends it when dropped.
#[derive(Debug)]
pub(crate) struct InFlight {
    watch: Arc<Watch>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.watch.end();
    }
}

pin_project! {
    /// A response body that keeps its request in flight until it ends or is dropped.
    #[derive(Debug)]
    pub(crate) struct Tracked<B> {
        #[pin]
        inner: B,
        guard: Option<InFlight>,
    }
}

impl<B> Tracked<B> {
    pub(crate) fn new(inner: B, guard: InFlight) -> Self {
        Self { inner, guard: Some(guard) }
    }
}

impl<B: Body<Data = Bytes>> Body for Tracked<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            this.guard.take();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A connection's IO, telling its [`Watch`] when bytes arrive.
#[derive(Debug)]
pub(crate) struct Watched<IO> {
    io: IO,
    watch: Arc<Watch>,
}

impl<IO> Watched<IO> {
    pub(crate) fn new(io: IO, watch: Arc<Watch>) -> Self {
        Self { io, watch }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Watched<IO> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.watch.on_read();
        }
        polled
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Watched<IO> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch() -> Arc<Watch> {
        let limits = ConnectionLimits::default()
            .header_read_timeout(Duration::from_secs(10))
            .idle_timeout(Duration::from_secs(75));
        Watch::new(&limits)
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_connection_must_send_its_first_request_within_the_head_timeout() {
        let w = watch();
        let start = Instant::now();
        assert_eq!(w.expired().await, Expiry::Head);
        assert_eq!(start.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_keep_alive_connection_closes_after_the_idle_timeout_not_the_head_timeout() {
        let w = watch();
        drop(w.begin(false));
        let idle = Instant::now();
        assert_eq!(w.expired().await, Expiry::Idle);
        assert_eq!(idle.elapsed(), Duration::from_secs(75));
    }

    #[tokio::test(start_paused = true)]
    async fn the_head_clock_starts_at_the_first_byte_of_the_next_head() {
        let w = watch();
        drop(w.begin(false));
        tokio::time::advance(Duration::from_secs(30)).await;
        w.on_read();
        let first_byte = Instant::now();
        assert_eq!(w.expired().await, Expiry::Head);
        assert_eq!(first_byte.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_in_flight_is_never_timed_out_and_its_end_restarts_the_idle_clock() {
        let w = watch();
        let guard = w.begin(false);
        let expired = tokio::spawn({
            let w = w.clone();
            async move { w.expired().await }
        });
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert!(!expired.is_finished());
        drop(guard);
        let ended = Instant::now();
        assert_eq!(expired.await.expect("watchdog"), Expiry::Idle);
        assert_eq!(ended.elapsed(), Duration::from_secs(75));
    }

    #[tokio::test(start_paused = true)]
    async fn http2_frames_between_requests_do_not_start_the_head_clock() {
        let w = watch();
        drop(w.begin(true));
        w.on_read();
        assert_eq!(w.expired().await, Expiry::Idle);
    }

    #[test]
    fn limits_that_cannot_be_served_are_refused() {
        assert!(ConnectionLimits::default().check().is_ok());
        assert!(ConnectionLimits::default().idle_timeout(Duration::ZERO).check().is_err());
        assert!(ConnectionLimits::default().max_connections(0).check().is_err());
        let small = ConnectionLimits::default().max_header_bytes(100).check();
        assert!(small.is_err_and(|e| e.contains("max_header_bytes")));
    }
}
