//! Every attempt has a timeout: the defaults (600 s for a whole answer, 60 s to a stream's first
//! content chunk and between two chunks) and their overrides (request > deployment > router >
//! default; a request may only shorten the operator's bound), on a paused clock with in-memory
//! upstreams that never answer.

use std::{convert::Infallible, time::Duration};

use bytes::Bytes;
use futures_util::{StreamExt, stream};
use http_body::Frame;
use http_body_util::BodyExt;
use http_body_util::{Full, StreamBody};
use switchyard_layers::RouteBody;
use switchyard_layers::{BoxError, Deployment, Outcome, RequestFacts};
use switchyard_services::provider::{HttpProvider, ProviderConfig};
use tokio::time::Instant;
use tower::{ServiceExt, service_fn, util::BoxCloneSyncService};

use crate::support::{attempt, chat_body, route_error, streaming};

/// Longer than any timeout under test: an attempt still pending after it has none.
const NEVER: Duration = Duration::from_secs(3600);

type Answer = http::Response<StreamBody<stream::BoxStream<'static, Result<Frame<Bytes>, Infallible>>>>;

type Provider = HttpProvider<BoxCloneSyncService<http::Request<Full<Bytes>>, Answer, BoxError>>;

fn deployment() -> Deployment {
    Deployment::builder("gpt-4o", "openai/gpt-4o").api_base("http://upstream.invalid/v1").build().expect("valid")
}

/// A provider whose upstream accepts every request and never answers.
fn silent(config: ProviderConfig) -> Provider {
    let transport = service_fn(|_req| std::future::pending::<Result<Answer, BoxError>>());
    HttpProvider::with_transport(BoxCloneSyncService::new(transport), config)
}

/// A provider whose upstream answers a stream with one content chunk, then nothing.
fn stalling(config: ProviderConfig) -> Provider {
    let transport = service_fn(|_req| async {
        let chunk = Bytes::from_static(b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n");
        let body = stream::iter([Ok(Frame::data(chunk))]).chain(stream::pending()).boxed();
        let mut resp = http::Response::new(StreamBody::new(body));
        resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/event-stream"));
        Ok::<Answer, BoxError>(resp)
    });
    HttpProvider::with_transport(BoxCloneSyncService::new(transport), config)
}

/// The text of a committed stream and the error that ended it, read with no bound of its own.
async fn read_stream(mut body: RouteBody) -> (String, Option<switchyard_layers::RouteError>) {
    let mut text = String::new();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    text.push_str(&String::from_utf8_lossy(&data));
                }
            }
            Err(e) => return (text, Some(switchyard_layers::RouteError::from_boxed(e))),
        }
    }
    (text, None)
}

/// How long the attempt on `provider` took to time out.
async fn times_out_after(provider: Provider, d: Deployment, facts: RequestFacts) -> Duration {
    let start = Instant::now();
    let result = tokio::time::timeout(NEVER, provider.oneshot(attempt(d, facts, &chat_body())))
        .await
        .expect("the attempt has a timeout");
    let err = route_error(result);
    assert_eq!(err.outcome(), Some(Outcome::Timeout), "{err}");
    start.elapsed()
}

#[tokio::test(start_paused = true)]
async fn a_silent_upstream_fails_a_non_streaming_attempt_after_the_600_s_default() {
    let took = times_out_after(silent(ProviderConfig::default()), deployment(), RequestFacts::new()).await;
    assert_eq!(took, Duration::from_secs(600));
}

#[tokio::test(start_paused = true)]
async fn a_silent_upstream_fails_a_stream_after_the_60_s_first_chunk_default() {
    let took = times_out_after(silent(ProviderConfig::default()), deployment(), streaming()).await;
    assert_eq!(took, Duration::from_secs(60));
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_stalls_after_its_first_chunk_ends_after_the_60_s_gap_default() {
    let provider = stalling(ProviderConfig::default());
    let resp = tokio::time::timeout(NEVER, provider.oneshot(attempt(deployment(), streaming(), &chat_body())))
        .await
        .expect("the stream commits")
        .expect("a stream");
    let committed = Instant::now();
    let (text, error) =
        tokio::time::timeout(NEVER, read_stream(resp.into_body())).await.expect("the stream has a gap bound");
    assert!(text.contains("\"hi\""), "{text}");
    let err = error.expect("the stream ends with an error");
    assert_eq!(err.outcome(), Some(Outcome::Timeout), "{err}");
    assert_eq!(committed.elapsed(), Duration::from_secs(60));
}

#[tokio::test(start_paused = true)]
async fn the_router_timeouts_win_over_the_defaults() {
    let config = ProviderConfig::default().timeout(Duration::from_secs(90));
    assert_eq!(
        times_out_after(silent(config.clone()), deployment(), RequestFacts::new()).await,
        Duration::from_secs(90)
    );
    // A stream with no stream timeout anywhere falls back to the configured attempt timeout (LiteLLM's order).
    assert_eq!(times_out_after(silent(config.clone()), deployment(), streaming()).await, Duration::from_secs(90));
    let config = config.stream_timeout(Duration::from_secs(20));
    assert_eq!(times_out_after(silent(config), deployment(), streaming()).await, Duration::from_secs(20));
}

#[tokio::test(start_paused = true)]
async fn the_deployment_timeouts_win_over_the_routers_and_the_defaults() {
    let config = ProviderConfig::default().timeout(Duration::from_secs(300)).stream_timeout(Duration::from_secs(40));
    let d = deployment().to_builder().timeout(Duration::from_secs(30)).stream_timeout(Duration::from_secs(7));
    let d = d.build().expect("valid");
    assert_eq!(times_out_after(silent(config.clone()), d.clone(), RequestFacts::new()).await, Duration::from_secs(30));
    assert_eq!(times_out_after(silent(config), d, streaming()).await, Duration::from_secs(7));
    let d = deployment().to_builder().timeout(Duration::from_secs(12)).build().expect("valid");
    assert_eq!(times_out_after(silent(ProviderConfig::default()), d, streaming()).await, Duration::from_secs(12));
}

#[tokio::test(start_paused = true)]
async fn the_request_timeouts_win_over_the_deployments_and_the_routers() {
    let config = ProviderConfig::default().timeout(Duration::from_secs(300)).stream_timeout(Duration::from_secs(40));
    let d = deployment().to_builder().timeout(Duration::from_secs(30)).stream_timeout(Duration::from_secs(7));
    let d = d.build().expect("valid");
    let facts = RequestFacts::new().timeout(Some(Duration::from_secs(5)));
    assert_eq!(times_out_after(silent(config.clone()), d.clone(), facts).await, Duration::from_secs(5));
    let facts = streaming().stream_timeout(Some(Duration::from_millis(2500)));
    assert_eq!(times_out_after(silent(config.clone()), d.clone(), facts).await, Duration::from_millis(2500));
    // The gap between chunks too.
    let facts = streaming().stream_timeout(Some(Duration::from_secs(3)));
    let resp = stalling(config).oneshot(attempt(d, facts, &chat_body())).await.expect("a stream");
    let committed = Instant::now();
    let (_, error) =
        tokio::time::timeout(NEVER, read_stream(resp.into_body())).await.expect("the stream has a gap bound");
    assert_eq!(error.and_then(|e| e.outcome()), Some(Outcome::Timeout));
    assert_eq!(committed.elapsed(), Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn a_request_cannot_lengthen_the_operators_timeouts() {
    // A client asking for 10^15 s would otherwise switch the attempt timeout off.
    let forever = Some(Duration::from_secs(1_000_000_000_000_000));
    let asks = || RequestFacts::new().timeout(forever);
    let asks_stream = || streaming().timeout(forever).stream_timeout(forever);
    assert_eq!(
        times_out_after(silent(ProviderConfig::default()), deployment(), asks()).await,
        Duration::from_secs(600)
    );
    let config = ProviderConfig::default().timeout(Duration::from_secs(90)).stream_timeout(Duration::from_secs(20));
    assert_eq!(times_out_after(silent(config.clone()), deployment(), asks()).await, Duration::from_secs(90));
    assert_eq!(times_out_after(silent(config), deployment(), asks_stream()).await, Duration::from_secs(20));
    let d = deployment().to_builder().stream_timeout(Duration::from_secs(7)).build().expect("valid");
    assert_eq!(times_out_after(silent(ProviderConfig::default()), d, asks_stream()).await, Duration::from_secs(7));
}
