//! Every routing layer stacked by hand, your own layer between two of ours, around your own
//! provider.
//!
//! `RoutingStack::builder` wires the layers once (registry, store, seed, deadline, fallback
//! tables); destructuring the stack gives each layer to place yourself. `AuditLayer` (written
//! here, not part of Switchyard) sits between the retry and the cooldown layers, so it sees every
//! attempt of every retry and hop before the cooldown layer resolves its candidates.
//! `EchoProvider` is a hand-written `tower::Service` standing in for your HTTP client, wrapped in
//! the `ClassifyLayer` so that its failures reach cooldown and retry as classified outcomes.
//! `ByLength` is a pre-router of your own, given to the stack builder: requests for the virtual
//! name `auto` go to `chat-long` when the conversation is long, else to `chat`. Run with
//! `cargo run --example custom_pipeline`.

use std::{
    future::Future,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
};

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use switchyard::layers::{
    BoxError, Deployment, Registry, RequestFacts, RouteBody, RouteCtx, RouteError, RouteErrorKind, RouteRequest,
    Served, StateStore,
    classify::ClassifyLayer,
    ctx::{DimensionScore, PreRouteDecision},
    fallback::FallbackConfig,
    preroute::{PreRouteInput, PreRouter, ROUTED_MODEL_HEADER},
    retry::RetryConfig,
    select::RoutingStrategy,
    stack::RoutingStack,
};
use tower::{Layer, Service, ServiceBuilder, ServiceExt};

/// Counts attempts per provider model and logs each one.
#[derive(Clone, Default)]
struct AuditLayer {
    attempts: Arc<AtomicUsize>,
}

#[derive(Clone)]
struct Audit<S> {
    inner: S,
    attempts: Arc<AtomicUsize>,
}

impl<S> Layer<S> for AuditLayer {
    type Service = Audit<S>;
    fn layer(&self, inner: S) -> Audit<S> {
        Audit { inner, attempts: self.attempts.clone() }
    }
}

impl<S, B> Service<http::Request<B>> for Audit<S>
where
    S: Service<http::Request<B>>,
    B: Clone + Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        // Above the cooldown layer: the attempt's group is known, its deployment not yet.
        if let Some(ctx) = req.route_ctx() {
            let n = self.attempts.fetch_add(1, Ordering::Relaxed) + 1;
            println!("attempt #{n}: {} (attempts so far {}, hop {})", ctx.requested(), ctx.attempts(), ctx.hop);
        }
        self.inner.call(req)
    }
}

/// A pre-router written by hand: long conversations to the long-context group.
struct ByLength {
    /// Characters of conversation from which a request counts as long.
    long: usize,
}

impl PreRouter for ByLength {
    fn route(&self, input: &PreRouteInput<'_>) -> Option<PreRouteDecision> {
        // `None` (not a conversation) leaves the request alone.
        let chars: usize = input.conversation()?.turns().iter().map(|t| t.text.len()).sum();
        let target = if chars >= self.long { "chat-long" } else { "chat" };
        Some(PreRouteDecision::new(target, "length").with_dimension(DimensionScore::new("chars", chars as f64, 1.0)))
    }
}

/// A provider written by hand: answers with the model it was routed to.
#[derive(Clone)]
struct EchoProvider;

impl Service<http::Request<Bytes>> for EchoProvider {
    type Response = http::Response<RouteBody>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Bytes>) -> Self::Future {
        let selected = req.route_ctx().and_then(|c| c.selected.clone());
        Box::pin(async move {
            let d =
                selected.ok_or_else(|| RouteError::new(RouteErrorKind::MissingContext, "no deployment selected"))?;
            Ok(http::Response::new(RouteBody::from(format!("hello from {}", d.model))))
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let registry = Arc::new(Registry::new());
    registry.add(Deployment::builder("chat", "openai/gpt-4o-mini").weight(3.0).build()?)?;
    registry
        .add(Deployment::builder("chat", "vllm/llama-3.1-8b").api_base("http://10.0.0.7:8000").weight(1.0).build()?)?;
    registry.add(Deployment::builder("chat-long", "gemini/gemini-2.5-pro").build()?)?;
    let store = Arc::new(StateStore::memory());

    // The layers, wired once (your pre-router among them); then stacked by hand with yours in
    // between.
    let RoutingStack { call_span, deadline, preroute, fallback, retry, cooldown, precall, select, .. } =
        RoutingStack::builder(registry.clone(), store)
            .strategies(RoutingStrategy::SimpleShuffle)
            .seed(1)
            .deadline(Duration::from_secs(60))
            .retry(RetryConfig::default().num_retries(2))
            .fallback(FallbackConfig::new().default_fallbacks(["chat"]))
            .pre_router("auto", ByLength { long: 200 })
            .build();
    let audit = AuditLayer::default();
    let stack = ServiceBuilder::new()
        .layer(call_span)
        .layer(deadline)
        .layer(preroute)
        .layer(fallback)
        .layer(retry)
        .layer(audit.clone())
        .layer(cooldown)
        .layer(precall)
        .layer(select)
        .layer(ClassifyLayer::new())
        .service(EchoProvider);

    for _ in 0..8 {
        let mut req = http::Request::new(Bytes::from_static(br#"{"model":"chat"}"#));
        req.extensions_mut().insert(RouteCtx::new("chat"));
        let resp = stack.clone().oneshot(req).await?;
        let served = resp.extensions().get::<Served>().cloned();
        let text = resp.into_body().collect().await?.to_bytes();
        println!("  {} (served by {:?})", String::from_utf8_lossy(&text), served.map(|s| s.deployment));
    }

    // The virtual name `auto`: the pre-router picks the group from the conversation's length.
    for text in ["Hi!", &"Summarise this chapter. ".repeat(20)] {
        let body = Bytes::from(
            serde_json::json!({"model": "auto", "messages": [{"role": "user", "content": text}]}).to_string(),
        );
        let mut req = http::Request::new(body.clone());
        req.extensions_mut().insert(RouteCtx::with_facts("auto", RequestFacts::new().with_body(body)));
        let resp = stack.clone().oneshot(req).await?;
        let routed = resp.headers().get(ROUTED_MODEL_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        let text = resp.into_body().collect().await?.to_bytes();
        println!("  auto -> {routed}: {}", String::from_utf8_lossy(&text));
    }
    println!("{} attempts audited", audit.attempts.load(Ordering::Relaxed));
    Ok(())
}
