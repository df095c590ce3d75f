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
use switchyard_layers::{BoxError, Deployment, RouteBody, RouteCtx, RouteError, RouteErrorKind, ctx::Endpoint};
use tokio::time::Instant;
use tower_service::Service;

use super::{
    HttpsTransport, ProviderConfig, ProviderError, request,
    response::{self, AttemptInfo},
    stream,
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
}

impl<T: Clone> Clone for HttpProvider<T> {
    fn clone(&self) -> Self {
        Self { transport: self.transport.clone(), config: self.config.clone() }
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
        Self { transport, config: Arc::new(config) }
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
        let upstream = match request::build(&deployment, facts, &parts.headers, &body) {
            Ok(upstream) => upstream,
            Err(e) => return Box::pin(std::future::ready(Err(e.into()))),
        };
        let bound = Bound::of(&self.config, &deployment, ctx.deadline, stream);
        let info = AttemptInfo {
            id: deployment.id.clone(),
            deployment: deployment.clone(),
            max_bytes: self.config.max_response_bytes,
            gap: bound.gap,
        };
        let clone = self.transport.clone();
        let transport = std::mem::replace(&mut self.transport, clone);
        Box::pin(async move {
            let start = Instant::now();
            let at = bound.at(start);
            if ctx_deadline_passed(bound.deadline, start) {
                return Err(response::timeout(&info, "the call's deadline passed before the attempt").into());
            }
            let exchange = exchange(transport, upstream, info.clone(), stream);
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

/// Sends the request and reads the answer: whole, or up to a stream's first content chunk.
async fn exchange<T, B>(
    mut transport: T,
    req: http::Request<Full<Bytes>>,
    info: AttemptInfo,
    stream: bool,
) -> Result<http::Response<RouteBody>, RouteError>
where
    T: Service<http::Request<Full<Bytes>>, Response = http::Response<B>>,
    T::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    poll_fn(|cx| transport.poll_ready(cx)).await.map_err(|e| response::transport_error(&info, e.into()))?;
    let resp = transport.call(req).await.map_err(|e| response::transport_error(&info, e.into()))?;
    let (parts, body) = resp.into_parts();
    if !parts.status.is_success() {
        return Err(response::status_error(&info, parts.status, &parts.headers, body).await);
    }
    if stream { stream::commit(info, body).await } else { response::whole(&info, body).await }
}

/// The time bounds of one attempt.
#[derive(Clone, Copy, Debug)]
struct Bound {
    /// Whole answer (non-stream) or first content chunk (stream).
    limit: Option<Duration>,
    /// The call's deadline.
    deadline: Option<Instant>,
    /// After a stream's commit point: the longest gap between chunks.
    gap: Option<Duration>,
}

impl Bound {
    /// Deployment values win over the router's; streams use `stream_timeout`, else `timeout`.
    fn of(config: &ProviderConfig, d: &Deployment, deadline: Option<Instant>, stream: bool) -> Self {
        let timeout = d.timeout.or(config.timeout);
        let stream_timeout = d.stream_timeout.or(config.stream_timeout).or(timeout);
        let limit = if stream { stream_timeout } else { timeout };
        Self { limit, deadline, gap: stream.then_some(stream_timeout).flatten() }
    }

    fn at(&self, start: Instant) -> Option<Instant> {
        let own = self.limit.and_then(|l| start.checked_add(l));
        match (own, self.deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn expired(&self, stream: bool) -> String {
        let what = if stream { "no content from the upstream" } else { "no answer from the upstream" };
        match self.limit {
            Some(limit) if self.deadline.is_none_or(|d| Instant::now() < d) => format!("{what} within {limit:?}"),
            _ => format!("{what} before the call's deadline"),
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
        let config = ProviderConfig::default().timeout(Duration::from_secs(30));
        let d = Deployment::builder("g", "m").timeout(Duration::from_secs(5)).build().expect("valid");
        let b = Bound::of(&config, &d, None, true);
        assert_eq!((b.limit, b.gap), (Some(Duration::from_secs(5)), Some(Duration::from_secs(5))));
        let config = config.stream_timeout(Duration::from_secs(2));
        let b = Bound::of(&config, &d, None, true);
        assert_eq!((b.limit, b.gap), (Some(Duration::from_secs(2)), Some(Duration::from_secs(2))));
        assert_eq!(Bound::of(&config, &d, None, false).limit, Some(Duration::from_secs(5)));
    }
}
