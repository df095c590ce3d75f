//! [`HttpProvider`]: sends each attempt to the deployment in `RouteCtx::selected`.

use std::{
    any::type_name,
    fmt,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use futures_util::future::{BoxFuture, poll_fn};
use http_body::Body;
use http_body_util::Full;
use rand::{RngCore, SeedableRng, rngs::SmallRng};
use switchyard_layers::{
    BoxError, Deployment, Outcome, RequestFacts, RouteBody, RouteCtx, RouteError, RouteErrorKind, ctx::Endpoint,
};
use tokio::time::Instant;
use tower_service::Service;

use super::{
    DEFAULT_STREAM_TIMEOUT, DEFAULT_TIMEOUT, HttpsTransport, ProviderConfig, ProviderError,
    catalog::Wire,
    mocked::{self, Mocked},
    request,
    response::{self, AttemptInfo},
    stream, vertex,
};

/// The provider `Service` for OpenAI-compatible APIs and Azure OpenAI. See the
/// [module docs](super).
///
/// `T` is the transport: [`HttpsTransport`] by default, or any tower `Service` taking
/// `http::Request<Full<Bytes>>` (a user's own client stack). Cloning is cheap (the transport
/// is cloned, the config is shared); `poll_ready` is always ready.
pub struct HttpProvider<T = HttpsTransport> {
    transport: T,
    config: Arc<ProviderConfig>,
    /// Vertex AI access tokens, one source per credential, shared by every clone.
    tokens: Arc<vertex::Tokens>,
}

impl<T: Clone> Clone for HttpProvider<T> {
    fn clone(&self) -> Self {
        Self { transport: self.transport.clone(), config: self.config.clone(), tokens: self.tokens.clone() }
    }
}

impl<T> fmt::Debug for HttpProvider<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpProvider").field("transport", &type_name::<T>()).field("config", &self.config).finish()
    }
}

impl HttpProvider {
    /// A provider over the default [`HttpsTransport`] (rustls, HTTP/1.1 and HTTP/2, pooled),
    /// built from `config`'s egress options.
    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        let transport = HttpsTransport::new(&config)?;
        Ok(Self::with_transport(transport, config))
    }
}

impl<T> HttpProvider<T> {
    /// A provider over `transport`. Egress options of `config` (CA bundle, proxy, connect
    /// timeout) are the transport's business and are not applied here; timeouts and size
    /// limits are.
    pub fn with_transport(transport: T, config: ProviderConfig) -> Self {
        Self { transport, config: Arc::new(config), tokens: Arc::default() }
    }

    /// The configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// The transport.
    pub fn get_ref(&self) -> &T {
        &self.transport
    }

    /// The transport, mutably.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// Unwraps the transport.
    pub fn into_inner(self) -> T {
        self.transport
    }
}

impl<T, B> Service<http::Request<Bytes>> for HttpProvider<T>
where
    T: Service<http::Request<Full<Bytes>>, Response = http::Response<B>> + Clone + Send + 'static,
    T::Future: Send + 'static,
    T::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<RouteBody>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<http::Response<RouteBody>, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // The transport is driven to readiness inside each attempt's future.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Bytes>) -> Self::Future {
        let (parts, body) = req.into_parts();
        let Some(ctx) = parts.extensions.get::<RouteCtx>() else {
            return refuse("request has no RouteCtx; insert RouteCtx::new(model) or add the ingress layer");
        };
        let Some(deployment) = ctx.selected.clone() else {
            return refuse("no deployment selected; put HttpProvider under a SelectLayer or set RouteCtx::selected");
        };
        let facts = ctx.facts();
        let stream = facts.stream && facts.endpoint != Endpoint::Embedding;
        // LiteLLM's `mock_response` / `mock_timeout`: answered here, the upstream never called.
        match mocked::mocked(&deployment, ctx, &body) {
            Ok(None) => {}
            Ok(Some(mock)) => return self.mock_attempt(mock, deployment, ctx, &body, stream),
            Err(e) => return Box::pin(std::future::ready(Err(e.into()))),
        }
        let built = match request::build(&deployment, facts, ctx.drop_previous_response, &parts.headers, &body) {
            Ok(built) => built,
            Err(e) => return Box::pin(std::future::ready(Err(e.into()))),
        };
        let upstream = built.request;
        let bound = Bound::of(&self.config, &deployment, facts, ctx.deadline, stream);
        // A Responses answer translated from another dialect gets an id of its own.
        let response_id = (built.route.ingress == Wire::Responses && !built.route.is_passthrough()).then(|| {
            let mut rng = SmallRng::from_os_rng();
            format!("resp_{:016x}{:016x}", rng.next_u64(), rng.next_u64())
        });
        let info = AttemptInfo {
            id: deployment.id.clone(),
            deployment: deployment.clone(),
            max_bytes: self.config.max_response_bytes,
            gap: bound.gap,
            route: built.route,
            include_usage: built.include_usage,
            response_id,
            operation: matches!(facts.endpoint, Endpoint::ResponseOp(_) | Endpoint::CountTokens),
            embedding: facts.endpoint == Endpoint::Embedding,
            // Streams are left alone, as LiteLLM does: their finish reason comes after the content
            // the client already has.
            filtered_fails: !stream && facts.endpoint.is_conversation() && ctx.content_filter_falls_back(),
            access_token: None,
        };
        let tokens = built.oauth.then(|| self.tokens.clone());
        let clone = self.transport.clone();
        let transport = std::mem::replace(&mut self.transport, clone);
        Box::pin(async move {
            let start = Instant::now();
            let at = bound.at(start);
            if ctx_deadline_passed(bound.deadline, start) {
                return Err(response::timeout(&info, "the call's deadline passed before the attempt").into());
            }
            let exchange = exchange(transport, tokens, upstream, info.clone(), stream);
            let result = match at {
                Some(at) => match tokio::time::timeout_at(at, exchange).await {
                    Ok(result) => result,
                    Err(_) => Err(response::timeout(&info, &bound.expired(stream))),
                },
                None => exchange.await,
            };
            result.map_err(Into::into)
        })
    }
}

/// Authorizes the request when it needs an access token (within the attempt's time bound),
/// sends it and reads the answer: whole, or up to a stream's first content chunk.
async fn exchange<T, B>(
    mut transport: T,
    tokens: Option<Arc<vertex::Tokens>>,
    mut req: http::Request<Full<Bytes>>,
    mut info: AttemptInfo,
    stream: bool,
) -> Result<http::Response<RouteBody>, RouteError>
where
    T: Service<http::Request<Full<Bytes>>, Response = http::Response<B>>,
    T::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    if let Some(tokens) = tokens {
        vertex::authorize(&tokens, &mut req, &mut info).await?;
    }
    poll_fn(|cx| transport.poll_ready(cx)).await.map_err(|e| response::transport_error(&info, e.into()))?;
    let resp = transport.call(req).await.map_err(|e| response::transport_error(&info, e.into()))?;
    read_answer(info, resp, stream).await
}

/// Reads the upstream's answer: a classified error, the whole answer, or a stream up to its first
/// content chunk.
async fn read_answer<B>(
    info: AttemptInfo,
    resp: http::Response<B>,
    stream: bool,
) -> Result<http::Response<RouteBody>, RouteError>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let (parts, body) = resp.into_parts();
    if !parts.status.is_success() {
        let mut err = response::status_error(&info, parts.status, &parts.headers, body).await;
        if info.operation && parts.status == http::StatusCode::NOT_FOUND {
            // No such stored response: the client's mistake, not the deployment's.
            err = err.with_outcome(Outcome::BadRequest);
        }
        return Err(err);
    }
    if stream {
        stream::commit(info, body).await
    } else {
        response::whole(&info, parts.status, &parts.headers, body).await
    }
}

impl<T> HttpProvider<T> {
    /// An attempt a testing hook answers: the mocked upstream answer read as a real one, or a
    /// wait until the attempt's time bound (`mock_timeout`).
    fn mock_attempt(
        &self,
        mock: Mocked,
        deployment: Arc<Deployment>,
        ctx: &RouteCtx,
        body: &[u8],
        stream: bool,
    ) -> BoxFuture<'static, Result<http::Response<RouteBody>, BoxError>> {
        let facts = ctx.facts();
        let route = match &mock {
            Mocked::Answer { route, .. } | Mocked::Timeout { route, .. } => *route,
        };
        let bound = Bound::of(&self.config, &deployment, facts, ctx.deadline, stream);
        let response_id = (route.ingress == Wire::Responses).then(|| {
            let mut rng = SmallRng::from_os_rng();
            format!("resp_{:016x}{:016x}", rng.next_u64(), rng.next_u64())
        });
        let info = AttemptInfo {
            id: deployment.id.clone(),
            deployment,
            max_bytes: self.config.max_response_bytes,
            gap: bound.gap,
            route,
            include_usage: route.ingress == Wire::OpenAi && stream && request::asks_usage(body),
            response_id,
            operation: false,
            embedding: facts.endpoint == Endpoint::Embedding,
            access_token: None,
            // A mocked answer is read like a real one: a filtered whole answer falls back too.
            filtered_fails: !stream && facts.endpoint.is_conversation() && ctx.content_filter_falls_back(),
        };
        Box::pin(async move {
            let start = Instant::now();
            let at = bound.at(start);
            if ctx_deadline_passed(bound.deadline, start) {
                return Err(response::timeout(&info, "the call's deadline passed before the attempt").into());
            }
            let response = match mock {
                Mocked::Answer { response, .. } => response,
                Mocked::Timeout { unbounded, .. } => match at {
                    Some(at) => {
                        tokio::time::sleep_until(at).await;
                        return Err(response::timeout(&info, &bound.expired(stream)).into());
                    }
                    // No bound at all: LiteLLM answers its default mock content then.
                    None => unbounded,
                },
            };
            read_answer(info, response, stream).await.map_err(Into::into)
        })
    }
}

/// The time bounds of one attempt.
#[derive(Clone, Copy, Debug)]
struct Bound {
    /// Whole answer (non-stream) or first content chunk (stream).
    limit: Duration,
    /// The call's deadline.
    deadline: Option<Instant>,
    /// After a stream's commit point: the longest gap between chunks.
    gap: Option<Duration>,
}

impl Bound {
    /// The request's values win over the deployment's, which win over the router's, which win
    /// over the defaults. Streams use the first `stream_timeout` set, else the first `timeout`
    /// set (LiteLLM's order), else [`DEFAULT_STREAM_TIMEOUT`].
    ///
    /// A request may shorten the operator's bound (the deployment's, else the router's, else the
    /// default), never lengthen it: a client asking for a year would otherwise switch the
    /// attempt timeout off.
    fn of(
        config: &ProviderConfig,
        d: &Deployment,
        facts: &RequestFacts,
        deadline: Option<Instant>,
        stream: bool,
    ) -> Self {
        let operator_timeout = d.timeout.or(config.timeout);
        let timeout = facts.timeout.or(operator_timeout);
        let limit = if stream {
            let operator_stream = d.stream_timeout.or(config.stream_timeout);
            let operator = operator_stream.or(operator_timeout).unwrap_or(DEFAULT_STREAM_TIMEOUT);
            facts.stream_timeout.or(operator_stream).or(timeout).map_or(operator, |asked| asked.min(operator))
        } else {
            let operator = operator_timeout.unwrap_or(DEFAULT_TIMEOUT);
            timeout.map_or(operator, |asked| asked.min(operator))
        };
        Self { limit, deadline, gap: stream.then_some(limit) }
    }

    fn at(&self, start: Instant) -> Option<Instant> {
        // A limit too far away to add is no limit (a request may ask for any number of seconds).
        let own = start.checked_add(self.limit);
        match (own, self.deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn expired(&self, stream: bool) -> String {
        let what = if stream { "no content from the upstream" } else { "no answer from the upstream" };
        if self.deadline.is_none_or(|d| Instant::now() < d) {
            format!("{what} within {:?}", self.limit)
        } else {
            format!("{what} before the call's deadline")
        }
    }
}

fn ctx_deadline_passed(deadline: Option<Instant>, now: Instant) -> bool {
    deadline.is_some_and(|d| d <= now)
}

fn refuse(message: &'static str) -> BoxFuture<'static, Result<http::Response<RouteBody>, BoxError>> {
    Box::pin(std::future::ready(Err(RouteError::new(RouteErrorKind::MissingContext, message).into())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_embeddable<S: Clone + Send + Sync + 'static>(_: &S) {}
    fn assert_send_future<F: Future + Send + 'static>(_: &F) {}

    #[tokio::test]
    async fn provider_and_its_future_are_embeddable() {
        let mut provider = HttpProvider::new(ProviderConfig::default()).expect("default config builds");
        assert_embeddable(&provider);
        let fut = provider.call(http::Request::new(Bytes::new()));
        assert_send_future(&fut);
    }

    #[test]
    fn deployment_timeouts_win_and_streams_fall_back_to_the_attempt_timeout() {
        let facts = RequestFacts::new();
        let config = ProviderConfig::default().timeout(Duration::from_secs(30));
        let d = Deployment::builder("g", "m").timeout(Duration::from_secs(5)).build().expect("valid");
        let b = Bound::of(&config, &d, &facts, None, true);
        assert_eq!((b.limit, b.gap), (Duration::from_secs(5), Some(Duration::from_secs(5))));
        let config = config.stream_timeout(Duration::from_secs(2));
        let b = Bound::of(&config, &d, &facts, None, true);
        assert_eq!((b.limit, b.gap), (Duration::from_secs(2), Some(Duration::from_secs(2))));
        assert_eq!(Bound::of(&config, &d, &facts, None, false).limit, Duration::from_secs(5));
    }

    #[test]
    fn every_attempt_has_a_timeout_by_default_and_the_request_may_shorten_it() {
        let d = Deployment::builder("g", "m").build().expect("valid");
        let none = RequestFacts::new();
        let config = ProviderConfig::default();
        assert_eq!(Bound::of(&config, &d, &none, None, false).limit, DEFAULT_TIMEOUT);
        let b = Bound::of(&config, &d, &none, None, true);
        assert_eq!((b.limit, b.gap), (DEFAULT_STREAM_TIMEOUT, Some(DEFAULT_STREAM_TIMEOUT)));
        let d = d.to_builder().timeout(Duration::from_secs(5)).stream_timeout(Duration::from_secs(4)).build();
        let d = d.expect("valid");
        let asks =
            RequestFacts::new().timeout(Some(Duration::from_secs(9))).stream_timeout(Some(Duration::from_secs(3)));
        assert_eq!(Bound::of(&config, &d, &asks, None, false).limit, Duration::from_secs(5));
        assert_eq!(Bound::of(&config, &d, &asks, None, true).limit, Duration::from_secs(3));
        let shorter =
            RequestFacts::new().timeout(Some(Duration::from_secs(2))).stream_timeout(Some(Duration::from_secs(1)));
        assert_eq!(Bound::of(&config, &d, &shorter, None, false).limit, Duration::from_secs(2));
        assert_eq!(Bound::of(&config, &d, &shorter, None, true).limit, Duration::from_secs(1));
    }

    #[test]
    fn a_request_can_shorten_the_operators_timeouts_but_never_lengthen_them() {
        let forever = Duration::from_secs(1_000_000_000_000_000);
        let asks = RequestFacts::new().timeout(Some(forever)).stream_timeout(Some(forever));
        let bare = Deployment::builder("g", "m").build().expect("valid");
        // No operator value: the defaults cap.
        let none = ProviderConfig::default();
        assert_eq!(Bound::of(&none, &bare, &asks, None, false).limit, DEFAULT_TIMEOUT);
        assert_eq!(Bound::of(&none, &bare, &asks, None, true).limit, DEFAULT_STREAM_TIMEOUT);
        // The router's values cap.
        let router = ProviderConfig::default().timeout(Duration::from_secs(30)).stream_timeout(Duration::from_secs(8));
        assert_eq!(Bound::of(&router, &bare, &asks, None, false).limit, Duration::from_secs(30));
        let b = Bound::of(&router, &bare, &asks, None, true);
        assert_eq!((b.limit, b.gap), (Duration::from_secs(8), Some(Duration::from_secs(8))));
        // The deployment's values cap, even when longer than the router's.
        let d = bare.to_builder().timeout(Duration::from_secs(45)).stream_timeout(Duration::from_secs(12));
        let d = d.build().expect("valid");
        assert_eq!(Bound::of(&router, &d, &asks, None, false).limit, Duration::from_secs(45));
        assert_eq!(Bound::of(&router, &d, &asks, None, true).limit, Duration::from_secs(12));
        // An operator `timeout` without `stream_timeout` bounds streams too; a client's
        // `timeout` alone cannot lift it.
        let only_timeout = ProviderConfig::default().timeout(Duration::from_secs(20));
        let asks_timeout = RequestFacts::new().timeout(Some(forever));
        assert_eq!(Bound::of(&only_timeout, &bare, &asks_timeout, None, true).limit, Duration::from_secs(20));
    }
}
