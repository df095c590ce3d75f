//! [`ClassifyLayer`]: the one classifier, around a provider `Service` of your own.
//!
//! The routing layers decide by the [`Outcome`] of each attempt: the cooldown layer benches a
//! deployment on a 429 and the retry and fallback layers pick their tables by class. Switchyard's
//! own providers classify every answer once, at the bottom of the stack; a provider you write
//! yourself (any `Service` answering `http::Response<B>`: a hyper or reqwest client, a mock, an
//! SDK) gets the same with this layer, placed directly around it, below the select layer:
//!
//! - a 2xx answer passes through, its body wrapped in a [`RouteBody`] (its stream is untouched);
//! - any other status becomes `Err(`[`RouteError`]`)` with the outcome [`classify`] reads from the
//!   status, the error body (`context_length_exceeded`, `content_filter`, ...) and the retry
//!   headers (`retry-after-ms`, `retry-after`, rate-limit resets); the error names the selected
//!   deployment and keeps the upstream status and body (at most
//!   [`max_error_body`](ClassifyLayer::max_error_body) bytes, the deployment's API key masked) so
//!   an HTTP edge can still answer with them. A 3xx is [`Outcome::NotFound`]: the endpoint is
//!   wrong;
//! - an error of the service itself is a transport failure: a [`RouteError`] in it is kept as it
//!   is (already classified); a refused connection is [`Outcome::Connect`], a timeout
//!   (`io::ErrorKind::TimedOut`, tokio's `Elapsed`) [`Outcome::Timeout`], anything else
//!   [`Outcome::Transport`].
//!
//! Classify before anything else looks at the answer, and only once: nothing above the provider
//! classifies again.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use http_body_util::Full;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use switchyard_layers::{
//!     BoxError, Deployment, Outcome, Registry, RouteCtx, RouteError, StateStore,
//!     classify::ClassifyLayer, select::{RoutingStrategy, SelectLayer},
//! };
//!
//! let registry = Arc::new(Registry::new());
//! registry.add(Deployment::builder("gpt-4o", "openai/gpt-4o").id("us").build()?)?;
//! let store = Arc::new(StateStore::memory());
//! // Your own client: answers with the upstream's status and body, as any HTTP client does.
//! let my_client = service_fn(|_req: http::Request<Bytes>| async {
//!     let body = r#"{"error":{"code":"rate_limit_exceeded","message":"slow down"}}"#;
//!     let resp = http::Response::builder().status(429).header("retry-after", "2").body(Full::new(Bytes::from(body)))?;
//!     Ok::<_, BoxError>(resp)
//! });
//! let stack = ServiceBuilder::new()
//!     .layer(SelectLayer::new(registry, store, RoutingStrategy::SimpleShuffle))
//!     .layer(ClassifyLayer::new())
//!     .service(my_client);
//!
//! let mut req = http::Request::new(Bytes::new());
//! req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
//! let err = stack.oneshot(req).await.expect_err("a 429 is a failure");
//! let err = RouteError::find(&*err).expect("classified");
//! assert_eq!(err.outcome(), Some(Outcome::RateLimited));
//! assert_eq!(err.deployment().map(|d| d.as_str()), Some("us"));
//! assert_eq!(err.retry_after(), Some(std::time::Duration::from_secs(2)));
//! # Ok(()) }
//! ```

use std::{
    error::Error as StdError,
    fmt,
    future::Future,
    io,
    marker::PhantomData,
    pin::Pin,
    task::{Context, Poll, ready},
};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::{HeaderMap, StatusCode};
use http_body::Body;
use http_body_util::{BodyExt, Limited};
use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use crate::{
    ApiKey, BoxError, DeploymentId, Outcome, RouteBody, RouteError, RouteErrorKind, RouteRequest, outcome::classify,
    redact::redact,
};

/// Classifies the answers of the provider it wraps; see the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassifyLayer {
    max_error_body: usize,
}

impl Default for ClassifyLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl ClassifyLayer {
    /// Error bodies read by default: 64 KiB.
    pub const DEFAULT_MAX_ERROR_BODY: usize = 64 << 10;

    /// The layer, reading at most [`DEFAULT_MAX_ERROR_BODY`](Self::DEFAULT_MAX_ERROR_BODY) bytes
    /// of an error body.
    pub const fn new() -> Self {
        Self { max_error_body: Self::DEFAULT_MAX_ERROR_BODY }
    }

    /// Reads at most `bytes` of an error body; a longer or broken one is classified by its
    /// status and headers alone, and kept empty.
    ///
    /// ```
    /// use switchyard_layers::classify::ClassifyLayer;
    /// assert_eq!(ClassifyLayer::new().max_error_body(1024).error_body_limit(), 1024);
    /// ```
    pub const fn max_error_body(mut self, bytes: usize) -> Self {
        self.max_error_body = bytes;
        self
    }

    /// The most bytes of an error body read.
    pub const fn error_body_limit(&self) -> usize {
        self.max_error_body
    }
}

impl<S> Layer<S> for ClassifyLayer {
    type Service = Classify<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Classify::new(inner, *self)
    }
}

/// Turns a provider's answers into classified results; see [`ClassifyLayer`].
#[derive(Clone, Debug)]
pub struct Classify<S> {
    inner: S,
    layer: ClassifyLayer,
}

crate::inner_accessors!(Classify);

impl<S> Classify<S> {
    /// Wraps `inner` with `layer`'s settings.
    pub const fn new(inner: S, layer: ClassifyLayer) -> Self {
        Self { inner, layer }
    }
}

impl<S, R, B> Service<R> for Classify<S>
where
    R: RouteRequest,
    S: Service<R, Response = http::Response<B>>,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<RouteBody>;
    type Error = BoxError;
    type Future = ClassifyFuture<S::Future, B>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: R) -> Self::Future {
        let selected = req.route_ctx().and_then(|c| c.selected.as_ref());
        let attempt = Attempt {
            deployment: selected.map(|d| d.id.clone()),
            api_key: selected.and_then(|d| d.api_key.clone()),
            limit: self.layer.max_error_body,
        };
        ClassifyFuture { state: State::Call { fut: self.inner.call(req) }, attempt, body: PhantomData }
    }
}

/// What the classification of one attempt needs from its request.
struct Attempt {
    deployment: Option<DeploymentId>,
    /// Masked out of the error body and message: an upstream may echo the key it was sent.
    api_key: Option<ApiKey>,
    limit: usize,
}

impl Attempt {
    fn failure(&self, outcome: Outcome, message: String) -> RouteError {
        let message = match &self.api_key {
            Some(key) => redact(&message, &[key.expose()], 512),
            None => redact(&message, &[], 512),
        };
        let err = RouteError::new(RouteErrorKind::Upstream, message).with_outcome(outcome);
        match &self.deployment {
            Some(id) => err.with_deployment(id.clone()),
            None => err,
        }
    }

    fn status_error(&self, status: StatusCode, headers: &HeaderMap, body: Bytes) -> RouteError {
        let classified = classify(status, headers, &body);
        // A redirect: the deployment's endpoint points at the wrong place.
        let outcome = if classified.outcome.is_success() { Outcome::NotFound } else { classified.outcome };
        let message = match error_message(&body) {
            Some(detail) => format!("upstream answered {status}: {detail}"),
            None => format!("upstream answered {status}"),
        };
        let body = match &self.api_key {
            Some(key) => mask(body, key.expose()),
            None => body,
        };
        let mut err = self.failure(outcome, message).with_upstream_response(status, body);
        if let Some(wait) = classified.retry_after {
            err = err.with_retry_after(wait);
        }
        err
    }

    fn transport_error(&self, err: BoxError) -> BoxError {
        if RouteError::find(&*err).is_some() {
            return err;
        }
        let outcome = transport_outcome(&*err);
        let message = format!("the provider failed: {err}");
        self.failure(outcome, message).with_source(err).into()
    }
}

/// The class of a provider's own failure, from the kinds of I/O errors and timeouts in its chain.
fn transport_outcome(err: &(dyn StdError + 'static)) -> Outcome {
    let mut cur = Some(err);
    while let Some(e) = cur {
        if e.is::<tokio::time::error::Elapsed>() {
            return Outcome::Timeout;
        }
        if let Some(io) = e.downcast_ref::<io::Error>() {
            match io.kind() {
                io::ErrorKind::TimedOut => return Outcome::Timeout,
                io::ErrorKind::ConnectionRefused | io::ErrorKind::AddrNotAvailable | io::ErrorKind::NotConnected => {
                    return Outcome::Connect;
                }
                _ => {}
            }
        }
        cur = e.source();
    }
    Outcome::Transport
}

/// `error.message`, a string `error`, or a top-level `message` of an error body.
fn error_message(body: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let text = match value.get("error") {
        Some(serde_json::Value::Object(e)) => e.get("message").and_then(serde_json::Value::as_str),
        Some(serde_json::Value::String(s)) => Some(s.as_str()),
        _ => value.get("message").and_then(serde_json::Value::as_str),
    };
    text.map(str::to_owned)
}

/// `body` with every occurrence of `secret` replaced by `***`.
fn mask(body: Bytes, secret: &str) -> Bytes {
    let secret = secret.as_bytes();
    if secret.len() < 4 || !body.windows(secret.len()).any(|w| w == secret) {
        return body;
    }
    let mut out = Vec::with_capacity(body.len());
    let mut rest = &body[..];
    while let Some(at) = rest.windows(secret.len()).position(|w| w == secret) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(b"***");
        rest = &rest[at + secret.len()..];
    }
    out.extend_from_slice(rest);
    Bytes::from(out)
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        /// Waiting for the provider's answer.
        Call { #[pin] fut: F },
        /// Reading an error body to classify it.
        // Boxed: the error path only, and a body type's collect future is not nameable without
        // repeating every bound of `Limited`.
        ErrorBody {
            body: BoxFuture<'static, Bytes>,
            status: StatusCode,
            headers: HeaderMap,
        },
    }
}

pin_project! {
    /// The response future of [`Classify`]: the provider's answer, then, for an error status,
    /// its body (bounded) read and classified.
    pub struct ClassifyFuture<F, B> {
        #[pin]
        state: State<F>,
        attempt: Attempt,
        body: PhantomData<fn() -> B>,
    }
}

impl<F, B> fmt::Debug for ClassifyFuture<F, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClassifyFuture").finish_non_exhaustive()
    }
}

impl<F, E, B> Future for ClassifyFuture<F, B>
where
    F: Future<Output = Result<http::Response<B>, E>>,
    E: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Output = Result<http::Response<RouteBody>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match this.state.as_mut().project() {
                StateProj::Call { fut } => {
                    let resp = match ready!(fut.poll(cx)) {
                        Ok(resp) => resp,
                        Err(e) => return Poll::Ready(Err(this.attempt.transport_error(e.into()))),
                    };
                    if resp.status().is_success() {
                        return Poll::Ready(Ok(resp.map(RouteBody::new)));
                    }
                    let (parts, body) = resp.into_parts();
                    let limited = Limited::new(body, this.attempt.limit);
                    // A broken or oversized error body still leaves the status to classify by.
                    let body =
                        Box::pin(async move { limited.collect().await.map(|c| c.to_bytes()).unwrap_or_default() });
                    this.state.set(State::ErrorBody { body, status: parts.status, headers: parts.headers });
                }
                StateProj::ErrorBody { body, status, headers } => {
                    let body = ready!(body.as_mut().poll(cx));
                    return Poll::Ready(Err(this.attempt.status_error(*status, headers, body).into()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{sync::Arc, time::Duration};

    use http_body_util::Full;
    use tower::{ServiceExt, service_fn};

    use super::*;
    use crate::{Deployment, RouteCtx};

    #[test]
    fn layer_and_service_are_embeddable() {
        crate::assert_embeddable::<ClassifyLayer>();
        crate::assert_embeddable::<
            Classify<tower::util::BoxCloneSyncService<http::Request<Bytes>, http::Response<Full<Bytes>>, BoxError>>,
        >();
    }

    /// A request whose attempt goes to deployment `us`, with API key `sk-test-secret-key`.
    fn attempt() -> http::Request<Bytes> {
        let d = Deployment::builder("gpt-4o", "openai/gpt-4o")
            .id("us")
            .api_key(ApiKey::new("sk-test-secret-key"))
            .build()
            .expect("valid deployment");
        let mut ctx = RouteCtx::new("gpt-4o");
        ctx.selected = Some(Arc::new(d));
        let mut req = http::Request::new(Bytes::new());
        req.extensions_mut().insert(ctx);
        req
    }

    async fn answer(
        status: u16,
        headers: &[(&str, &str)],
        body: &'static str,
    ) -> Result<http::Response<RouteBody>, RouteError> {
        let headers: Vec<(String, String)> = headers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let provider = service_fn(move |_req: http::Request<Bytes>| {
            let headers = headers.clone();
            async move {
                let mut resp = http::Response::builder().status(status);
                for (k, v) in headers {
                    resp = resp.header(k, v);
                }
                Ok::<_, BoxError>(resp.body(Full::new(Bytes::from_static(body.as_bytes())))?)
            }
        });
        ClassifyLayer::new().layer(provider).oneshot(attempt()).await.map_err(RouteError::from_boxed)
    }

    #[tokio::test]
    async fn a_success_passes_through_with_its_body() {
        let resp = answer(200, &[], "hello").await.expect("a 2xx is a success");
        let body = resp.into_body().collect().await.expect("the body").to_bytes();
        assert_eq!(&body[..], b"hello");
    }

    #[tokio::test]
    async fn a_rate_limit_names_the_deployment_and_the_wait() {
        let err = answer(429, &[("retry-after", "3")], r#"{"error":{"message":"slow down"}}"#).await.expect_err("429");
        assert_eq!(err.outcome(), Some(Outcome::RateLimited));
        assert_eq!(err.deployment().map(DeploymentId::as_str), Some("us"));
        assert_eq!(err.retry_after(), Some(Duration::from_secs(3)));
        assert_eq!(err.upstream_status(), Some(StatusCode::TOO_MANY_REQUESTS));
        assert!(err.message().contains("slow down"), "{}", err.message());
    }

    #[tokio::test]
    async fn body_codes_win_over_the_status() {
        let body = r#"{"error":{"code":"context_length_exceeded","message":"too long"}}"#;
        let err = answer(400, &[], body).await.expect_err("400");
        assert_eq!(err.outcome(), Some(Outcome::ContextWindowExceeded));
    }

    #[tokio::test]
    async fn a_redirect_is_a_wrong_endpoint() {
        let err = answer(302, &[], "").await.expect_err("3xx");
        assert_eq!(err.outcome(), Some(Outcome::NotFound));
    }

    #[tokio::test]
    async fn an_echoed_api_key_is_masked_in_the_message_and_the_body() {
        let body = r#"{"error":{"message":"Incorrect API key provided: sk-test-secret-key"}}"#;
        let err = answer(401, &[], body).await.expect_err("401");
        assert_eq!(err.outcome(), Some(Outcome::Auth));
        assert!(!err.message().contains("sk-test-secret-key"), "{}", err.message());
        let kept = err.upstream_body().expect("the body is kept");
        assert!(!String::from_utf8_lossy(kept).contains("sk-test-secret-key"), "{kept:?}");
    }

    #[tokio::test]
    async fn provider_errors_are_transport_failures_of_the_deployment() {
        let refused = service_fn(|_req: http::Request<Bytes>| async {
            Err::<http::Response<Full<Bytes>>, BoxError>(io::Error::from(io::ErrorKind::ConnectionRefused).into())
        });
        let err = ClassifyLayer::new().layer(refused).oneshot(attempt()).await.expect_err("refused");
        let err = RouteError::find(&*err).expect("classified");
        assert_eq!(err.outcome(), Some(Outcome::Connect));
        assert_eq!(err.deployment().map(DeploymentId::as_str), Some("us"));

        let broken = service_fn(|_req: http::Request<Bytes>| async {
            Err::<http::Response<Full<Bytes>>, BoxError>("connection reset mid-answer".into())
        });
        let err = ClassifyLayer::new().layer(broken).oneshot(attempt()).await.expect_err("broken");
        assert_eq!(RouteError::find(&*err).and_then(RouteError::outcome), Some(Outcome::Transport));
    }

    #[tokio::test]
    async fn an_error_already_classified_is_kept() {
        let own = service_fn(|_req: http::Request<Bytes>| async {
            Err::<http::Response<Full<Bytes>>, BoxError>(
                RouteError::upstream(Outcome::ContentPolicy, "other".into(), "filtered").into(),
            )
        });
        let err = ClassifyLayer::new().layer(own).oneshot(attempt()).await.expect_err("refused");
        let err = RouteError::find(&*err).expect("classified");
        assert_eq!(
            (err.outcome(), err.deployment().map(DeploymentId::as_str)),
            (Some(Outcome::ContentPolicy), Some("other"))
        );
    }
}
