//! `poll_ready` is a pass-through (the design's contract): every layer reports its inner
//! service's readiness as it is. A pending inner service keeps the layer pending, a ready one
//! makes it ready, and an inner service's error comes out of the layer's `poll_ready`. Retry and
//! fallback make their later attempts on a clone of a spare inner service; that clone waits for
//! its own readiness, and its error ends the call. Driven with `tower-test`'s mock service.

mod support;

use std::{error::Error as StdError, sync::Arc, task::Poll, time::Duration};

use http_body_util::BodyExt;
use support::*;
use switchyard_layers::{
    BoxError, Outcome, Registry, RouteBody, RouteError, StateStore,
    classify::ClassifyLayer,
    cooldown::{CooldownConfig, CooldownLayer},
    deadline::DeadlineLayer,
    fallback::{FallbackConfig, FallbackLayer},
    precall::{PreCallConfig, PreCallLayer},
    retry::{RetryConfig, RetryLayer},
    select::{RoutingStrategy, SelectLayer},
    span::CallSpanLayer,
    stack::RoutingStack,
};
use tokio::time::timeout;
use tower::{Layer, Service, ServiceExt};
use tower_test::mock::{self, Handle, Mock};

type MockProvider = Mock<Req, Resp>;

/// Whether `err` or one of its sources says `text`.
fn says(err: &(dyn StdError + 'static), text: &str) -> bool {
    let mut cur = Some(err);
    while let Some(e) = cur {
        if e.to_string().contains(text) {
            return true;
        }
        cur = e.source();
    }
    false
}

/// The three rules of a pass-through `poll_ready`, checked on `layer` over a mock provider.
fn passes_readiness_through<L>(layer: L)
where
    L: Layer<MockProvider> + Clone,
    L::Service: Service<Req, Response = Resp, Error = BoxError>,
{
    passes_readiness_through_for::<L, Resp>(layer);
}

/// [`passes_readiness_through`] over a mock provider answering `U`.
fn passes_readiness_through_for<L, U>(layer: L)
where
    L: Layer<Mock<Req, U>> + Clone,
    L::Service: Service<Req, Error = BoxError>,
{
    let (mut svc, mut handle) = mock::spawn_layer::<Req, U, _>(layer.clone());
    handle.allow(0);
    assert!(svc.poll_ready::<Req>().is_pending(), "a pending inner service keeps the layer pending");
    assert!(svc.poll_ready::<Req>().is_pending(), "and pending again when polled again");
    handle.allow(1);
    assert!(svc.is_woken(), "the inner service's wake-up reaches the layer's task");
    assert!(matches!(svc.poll_ready::<Req>(), Poll::Ready(Ok(()))), "a ready inner service makes the layer ready");

    let (mut svc, mut handle) = mock::spawn_layer::<Req, U, _>(layer);
    handle.allow(0);
    assert!(svc.poll_ready::<Req>().is_pending());
    handle.send_error("the provider is gone");
    match svc.poll_ready::<Req>() {
        Poll::Ready(Err(e)) => assert!(says(&*e, "the provider is gone"), "the inner error comes out: {e}"),
        other => panic!("expected the inner service's error, got {other:?}"),
    }
}

fn two_groups() -> Arc<Registry> {
    registry([dep("gpt-4o", "a"), dep("gpt-4o", "b"), dep("claude", "c")])
}

fn store() -> Arc<StateStore> {
    Arc::new(StateStore::memory())
}

#[test]
fn classify_passes_readiness_through() {
    // Over a provider of your own, which answers with any body type.
    passes_readiness_through_for::<_, http::Response<http_body_util::Full<bytes::Bytes>>>(ClassifyLayer::new());
}

#[test]
fn call_span_passes_readiness_through() {
    passes_readiness_through(CallSpanLayer::new());
}

#[test]
fn deadline_passes_readiness_through() {
    passes_readiness_through(DeadlineLayer::new(Duration::from_secs(5)));
}

#[test]
fn fallback_passes_readiness_through() {
    passes_readiness_through(FallbackLayer::new(two_groups(), FallbackConfig::new().fallbacks("gpt-4o", ["claude"])));
}

#[test]
fn retry_passes_readiness_through() {
    passes_readiness_through(RetryLayer::new(two_groups(), store(), RetryConfig::default()));
}

#[test]
fn cooldown_passes_readiness_through() {
    passes_readiness_through(CooldownLayer::new(two_groups(), store(), CooldownConfig::default()));
}

#[test]
fn precall_passes_readiness_through() {
    passes_readiness_through(PreCallLayer::new(two_groups(), store(), PreCallConfig::new()));
}

#[test]
fn select_passes_readiness_through() {
    passes_readiness_through(SelectLayer::new(two_groups(), store(), RoutingStrategy::SimpleShuffle).with_seed(SEED));
}

#[test]
fn the_whole_stack_passes_readiness_through() {
    passes_readiness_through(RoutingStack::builder(two_groups(), store()).seed(SEED).build());
}

/// A failure of deployment `id` that every layer would retry or fall back from.
fn server_error(id: &str) -> BoxError {
    RouteError::upstream(Outcome::ServerError, id.into(), "upstream answered 500").into()
}

/// Longer than any backoff the scenarios below could wait: with the clock paused, waiting this
/// long for a request that never comes costs nothing.
const NEVER: Duration = Duration::from_secs(3600);

/// Calls `svc` (ready once), fails the first attempt, and returns the call's task: the next
/// attempt must come from the layer's spare clone of the mock.
async fn first_attempt_fails<S>(
    mut svc: S,
    handle: &mut Handle<Req, Resp>,
) -> tokio::task::JoinHandle<Result<Resp, BoxError>>
where
    S: Service<Req, Response = Resp, Error = BoxError> + Send + 'static,
    S::Future: Send + 'static,
{
    handle.allow(1);
    svc.ready().await.expect("ready");
    let call = tokio::spawn(svc.call(request("gpt-4o")));
    let (_, first) = handle.next_request().await.expect("the first attempt");
    first.send_error(server_error("a"));
    call
}

/// The later attempts wait for the spare clone's readiness, go out once it is ready, and a
/// failing readiness ends the call with the inner service's error.
async fn spare_clone_waits_for_readiness<L>(layer: L)
where
    L: Layer<MockProvider>,
    L::Service: Service<Req, Response = Resp, Error = BoxError> + Send + 'static,
    <L::Service as Service<Req>>::Future: Send + 'static,
{
    // Pending stays pending; ready lets the next attempt out.
    let (inner, mut handle) = mock::pair::<Req, Resp>();
    let call = first_attempt_fails(layer.layer(inner), &mut handle).await;
    assert!(
        timeout(NEVER, handle.next_request()).await.is_err(),
        "no later attempt while the spare clone is not ready"
    );
    assert!(!call.is_finished(), "the call waits for the spare clone");
    handle.allow(1);
    let (_, second) = timeout(NEVER, handle.next_request()).await.expect("ready: the next attempt").expect("a request");
    second.send_response(http::Response::new(RouteBody::from("ok")));
    let resp = call.await.expect("no panic").expect("the later attempt answers the call");
    let body = resp.into_body().collect().await.expect("the whole body").to_bytes();
    assert_eq!(&body[..], b"ok");

    // An error of the spare clone's readiness ends the call.
    let (inner, mut handle) = mock::pair::<Req, Resp>();
    let call = first_attempt_fails(layer.layer(inner), &mut handle).await;
    handle.send_error("the provider is gone");
    let err = call.await.expect("no panic").expect_err("the call fails");
    assert!(says(&*err, "the provider is gone"), "the readiness error comes out: {err}");
    assert!(
        matches!(handle.poll_request(), Poll::Ready(None) | Poll::Pending),
        "no attempt after the failed readiness"
    );
}

#[tokio::test(start_paused = true)]
async fn retry_waits_for_its_spare_clone_to_be_ready() {
    spare_clone_waits_for_readiness(RetryLayer::new(two_groups(), store(), RetryConfig::default()).with_seed(SEED))
        .await;
}

#[tokio::test(start_paused = true)]
async fn fallback_waits_for_its_spare_clone_to_be_ready() {
    let config = FallbackConfig::new().fallbacks("gpt-4o", ["claude"]);
    spare_clone_waits_for_readiness(FallbackLayer::new(two_groups(), config)).await;
}
