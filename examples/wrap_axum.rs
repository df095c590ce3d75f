//! The routing stack around an axum service you already have.
//!
//! ```text
//! cargo run --example wrap_axum
//! ```
//!
//! `my_llm_app` stands for an app you run today: an axum `Router` that answers
//! `POST /v1/chat/completions` itself (an inference shim, a team's internal model service). You
//! run two instances of it and want Switchyard's routing in front of them: weighted selection,
//! retries on a sibling, the failing instance benched, a fallback group when both fail. Nothing of
//! the app changes:
//!
//! - each instance is a deployment of the `chat` group, its id naming the instance;
//! - [`AxumUpstream`], a dozen lines, is the provider `Service`: it hands the request to the
//!   instance the select layer chose (`RouteCtx::selected`) with `oneshot`, as axum's own tests
//!   call a router;
//! - [`ClassifyLayer`] turns the app's HTTP statuses into the outcomes the routing layers decide
//!   by (a 500 is a server error to retry elsewhere and count towards a cooldown, a 429 a rate
//!   limit);
//! - [`RoutingStack`]'s default order is one `Layer`; the result is a plain `tower::Service`, so
//!   it can itself be mounted in an axum app (see `examples/axum_embed.rs`).
//!
//! Instance `b` is broken (it answers 500 to everything): the run shows every call answered by
//! `a`, each attempt `b` got retried on `a`, and `b` benched once its failures exceed
//! `allowed_fails: 1` (LiteLLM's counting rule), so no later call tries it.

use std::{
    collections::HashMap,
    convert::Infallible,
    future::Future,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
};

use axum::{Json, body::Body, extract::State, http::StatusCode, routing::post};
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use switchyard::layers::{
    BoxError, Deployment, Registry, RouteCtx, RouteError, RouteErrorKind, Served, StateStore, classify::ClassifyLayer,
    cooldown::CooldownConfig, retry::RetryConfig, select::RoutingStrategy, stack::RoutingStack,
};
use tower::{Service, ServiceBuilder, ServiceExt};

/// The app you already have: answers chat completions in OpenAI's shape, or fails when `broken`.
fn my_llm_app(name: &'static str, broken: bool) -> (axum::Router, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let handler = move |State(calls): State<Arc<AtomicUsize>>, Json(body): Json<Value>| async move {
        calls.fetch_add(1, Ordering::Relaxed);
        if broken {
            let error = json!({"error": {"message": "model server crashed", "type": "server_error"}});
            return (StatusCode::INTERNAL_SERVER_ERROR, Json(error));
        }
        let prompt = body["messages"][0]["content"].as_str().unwrap_or_default().to_owned();
        let answer = json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": format!("{name} heard: {prompt}")}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}
        });
        (StatusCode::OK, Json(answer))
    };
    let app = axum::Router::new().route("/v1/chat/completions", post(handler)).with_state(calls.clone());
    (app, calls)
}

/// The provider `Service`: the request goes to the app instance the select layer chose.
#[derive(Clone)]
struct AxumUpstream {
    instances: Arc<HashMap<String, axum::Router>>,
}

impl Service<http::Request<Bytes>> for AxumUpstream {
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // An axum `Router` is always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Bytes>) -> Self::Future {
        let instance = req
            .extensions()
            .get::<RouteCtx>()
            .and_then(|ctx| ctx.selected.as_ref())
            .and_then(|d| self.instances.get(d.id.as_str()))
            .cloned();
        Box::pin(async move {
            let app =
                instance.ok_or_else(|| RouteError::new(RouteErrorKind::MissingContext, "no instance selected"))?;
            // The routing context stays in the extensions; the app ignores what it does not know.
            let (mut parts, body) = req.into_parts();
            parts.method = http::Method::POST;
            parts.uri = http::Uri::from_static("/v1/chat/completions");
            parts.headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
            let resp = app.oneshot(http::Request::from_parts(parts, Body::from(body))).await;
            Ok(resp.unwrap_or_else(|never: Infallible| match never {}))
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let (app_a, calls_a) = my_llm_app("a", false);
    let (app_b, calls_b) = my_llm_app("b", true);
    let upstream = AxumUpstream { instances: Arc::new(HashMap::from([("a".into(), app_a), ("b".into(), app_b)])) };

    let registry = Arc::new(Registry::new());
    for id in ["a", "b"] {
        registry.add(Deployment::builder("chat", "hosted/my-model").id(id).build()?)?;
    }
    let store = Arc::new(StateStore::memory());
    let routing = RoutingStack::builder(registry, store.clone())
        .strategies(RoutingStrategy::SimpleShuffle)
        .seed(3)
        .retry(RetryConfig::default().num_retries(2))
        .cooldown(CooldownConfig::new().allowed_fails(Some(1)))
        .build();
    let stack = ServiceBuilder::new().layer(routing).layer(ClassifyLayer::new()).service(upstream);

    for i in 0..6 {
        let body = json!({"model": "chat", "messages": [{"role": "user", "content": format!("question {i}")}]});
        let mut req = http::Request::new(Bytes::from(body.to_string()));
        req.extensions_mut().insert(RouteCtx::new("chat"));
        let resp = stack.clone().oneshot(req).await?;
        let served = resp.extensions().get::<Served>().cloned().ok_or("every answer names its deployment")?;
        let answer: Value = serde_json::from_slice(&resp.into_body().collect().await?.to_bytes())?;
        println!(
            "call {i}: {:<16} served by {} after {} attempt(s)",
            answer["choices"][0]["message"]["content"].as_str().unwrap_or_default(),
            served.deployment,
            served.attempts
        );
        assert_eq!(served.deployment.as_str(), "a", "the broken instance never answers");
    }
    let (a, b) = (calls_a.load(Ordering::Relaxed), calls_b.load(Ordering::Relaxed));
    println!("instance a answered {a} calls; instance b failed {b} and is benched");
    assert_eq!(a, 6);
    assert!(b <= 2, "b is benched after its second failure, so it is tried at most twice");
    Ok(())
}
