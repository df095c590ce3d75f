//! The HTTP ingress: refusals with their statuses, the RouteCtx it fills, request ids, and inner
//! errors turned into OpenAI-style answers.

use std::{
    convert::Infallible,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use futures_util::stream;
use http::{Method, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody};
use parking_lot::Mutex;
use serde_json::Value;
use switchyard_layers::{
    BoxError, Outcome, RouteBody, RouteCtx, RouteError, RouteErrorKind, RouteRequest, ctx::Endpoint,
};
use switchyard_services::{
    http_error::ErrorCause,
    ingress::{Ingress, IngressLayer},
};
use tower::{Service, ServiceBuilder, ServiceExt, service_fn};

/// A user's own extension, set before the ingress runs.
#[derive(Clone, Debug, PartialEq)]
struct Tenant(&'static str);

type Seen = Arc<Mutex<Vec<http::Request<Bytes>>>>;
type Req = http::Request<Full<Bytes>>;

/// An ingress over a stack that records what it received and answers 200 `ok`.
fn recording(
    limit: usize,
) -> (impl Service<Req, Response = http::Response<RouteBody>, Error = Infallible> + Clone, Seen) {
    let seen = Seen::default();
    let log = seen.clone();
    let stack = service_fn(move |req: http::Request<Bytes>| {
        log.lock().push(req);
        async { Ok::<_, BoxError>(http::Response::new(RouteBody::from("ok"))) }
    });
    (ServiceBuilder::new().layer(IngressLayer::new(limit)).service(stack), seen)
}

/// An ingress over a stack that always fails with `err()`.
fn failing(
    err: impl Fn() -> RouteError + Clone + Send + 'static,
) -> impl Service<Req, Response = http::Response<RouteBody>, Error = Infallible> + Clone {
    let stack = service_fn(move |_: http::Request<Bytes>| {
        let err = err.clone();
        async move { Err::<http::Response<RouteBody>, BoxError>(err().into()) }
    });
    ServiceBuilder::new().layer(IngressLayer::default()).service(stack)
}

fn post(path: &str, body: &'static str) -> Req {
    let mut req = http::Request::new(Full::new(Bytes::from_static(body.as_bytes())));
    *req.method_mut() = Method::POST;
    *req.uri_mut() = path.parse().expect("a path");
    req.headers_mut().insert("content-type", "application/json".parse().expect("a header"));
    req
}

const CHAT: &str = r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}"#;

async fn send<S>(svc: S, req: Req) -> http::Response<RouteBody>
where
    S: Service<Req, Response = http::Response<RouteBody>, Error = Infallible>,
{
    let Ok(resp) = svc.oneshot(req).await;
    resp
}

/// Status, headers and the `error` object of an error answer.
async fn error_of(resp: http::Response<RouteBody>) -> (StatusCode, http::HeaderMap, Value) {
    let (parts, body) = resp.into_parts();
    let bytes = body.collect().await.expect("a whole body").to_bytes();
    let json: Value = serde_json::from_slice(&bytes).expect("a JSON error");
    (parts.status, parts.headers, json["error"].clone())
}

fn ctx(req: &http::Request<Bytes>) -> &RouteCtx {
    req.route_ctx().expect("the ingress inserts a RouteCtx")
}

#[tokio::test]
async fn a_body_over_the_limit_is_413_and_never_reaches_the_stack() {
    let (app, seen) = recording(16);
    let resp = send(app, post("/v1/chat/completions", CHAT)).await;
    let (status, headers, error) = error_of(resp).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error["message"], "request body larger than 16 bytes");
    assert_eq!(headers["x-switchyard-error"], "body_too_large");
    assert!(seen.lock().is_empty());
}

#[tokio::test]
async fn a_body_over_the_limit_without_a_length_is_413_too() {
    let seen = Seen::default();
    let log = seen.clone();
    let stack = service_fn(move |req: http::Request<Bytes>| {
        log.lock().push(req);
        async { Ok::<_, BoxError>(http::Response::new(RouteBody::empty())) }
    });
    let app = ServiceBuilder::new().layer(IngressLayer::new(10)).service(stack);
    let chunks = stream::iter((0..4).map(|_| Ok::<_, BoxError>(Frame::data(Bytes::from_static(b"{\"a\":1}")))));
    let req = http::Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .body(StreamBody::new(chunks))
        .expect("a request");
    let Ok(resp) = app.oneshot(req).await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(seen.lock().is_empty());
}

#[tokio::test]
async fn a_body_that_fails_to_arrive_is_400() {
    let stack =
        service_fn(|_: http::Request<Bytes>| async { Ok::<_, BoxError>(http::Response::new(RouteBody::empty())) });
    let app = ServiceBuilder::new().layer(IngressLayer::default()).service(stack);
    let chunks = stream::iter(vec![
        Ok(Frame::data(Bytes::from_static(b"{\"model\":"))),
        Err::<Frame<Bytes>, BoxError>("connection reset by peer".into()),
    ]);
    let req = http::Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .body(StreamBody::new(chunks))
        .expect("a request");
    let Ok(resp) = app.oneshot(req).await;
    let (status, headers, error) = error_of(resp).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(headers["x-switchyard-error"], "body_read");
    assert!(error["message"].as_str().is_some_and(|m| m.contains("could not read the request body")), "{error}");
}

#[tokio::test]
async fn a_non_json_content_type_is_415() {
    let (app, seen) = recording(1024);
    let mut req = post("/v1/chat/completions", CHAT);
    req.headers_mut().insert("content-type", "text/html; charset=utf-8".parse().expect("a header"));
    let (status, _, error) = error_of(send(app, req).await).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(error["message"].as_str().is_some_and(|m| m.contains("text/html")), "{error}");
    assert!(seen.lock().is_empty());
}

#[tokio::test]
async fn json_with_parameters_is_accepted_and_a_missing_content_type_is_415() {
    let (app, seen) = recording(1024);
    let mut req = post("/v1/chat/completions", CHAT);
    req.headers_mut().insert("content-type", "application/json; charset=utf-8".parse().expect("a header"));
    assert_eq!(send(app.clone(), req).await.status(), StatusCode::OK);
    let mut req = post("/v1/chat/completions", CHAT);
    req.headers_mut().remove("content-type");
    assert_eq!(send(app, req).await.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(seen.lock().len(), 1);
}

#[tokio::test]
async fn malformed_json_is_400_naming_the_problem() {
    let (app, seen) = recording(1024);
    let (status, headers, error) =
        error_of(send(app.clone(), post("/v1/chat/completions", r#"{"model":"#)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(headers["x-switchyard-error"], "invalid_request");
    assert_eq!(error["type"], "invalid_request_error");
    assert!(error["message"].as_str().is_some_and(|m| m.contains("not valid JSON")), "{error}");

    let body = r#"{"model":"gpt-4o","stream":"yes","messages":[]}"#;
    let (status, _, error) = error_of(send(app, post("/v1/chat/completions", body)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error["message"].as_str().is_some_and(|m| m.contains("`stream` must be a boolean")), "{error}");
    assert!(seen.lock().is_empty());
}

#[tokio::test]
async fn a_missing_model_is_400() {
    let (app, seen) = recording(1024);
    let (status, _, error) = error_of(send(app, post("/v1/chat/completions", r#"{"messages":[]}"#)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error["message"].as_str().is_some_and(|m| m.contains("no `model`")), "{error}");
    assert!(seen.lock().is_empty());
}

#[tokio::test]
async fn the_endpoint_comes_from_the_path() {
    let (app, seen) = recording(1024);
    for path in ["/v1/chat/completions", "/chat/completions", "/v1/completions", "/v1/embeddings"] {
        assert_eq!(send(app.clone(), post(path, CHAT)).await.status(), StatusCode::OK, "{path}");
    }
    let endpoints: Vec<Endpoint> = seen.lock().iter().map(|r| ctx(r).facts().endpoint).collect();
    assert_eq!(endpoints, [Endpoint::Chat, Endpoint::Chat, Endpoint::Completion, Endpoint::Embedding]);

    let (status, _, _) = error_of(send(app.clone(), post("/v1/models", CHAT)).await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let mut get = post("/v1/chat/completions", CHAT);
    *get.method_mut() = Method::GET;
    let resp = send(app, get).await;
    assert_eq!(resp.headers()["allow"], "POST");
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(seen.lock().len(), 4);
}

#[tokio::test]
async fn a_fixed_endpoint_serves_any_path() {
    let seen = Seen::default();
    let log = seen.clone();
    let stack = service_fn(move |req: http::Request<Bytes>| {
        log.lock().push(req);
        async { Ok::<_, BoxError>(http::Response::new(RouteBody::empty())) }
    });
    let app = ServiceBuilder::new().layer(IngressLayer::default().endpoint(Endpoint::Embedding)).service(stack);
    assert_eq!(send(app, post("/embed", r#"{"model":"e","input":"x"}"#)).await.status(), StatusCode::OK);
    assert_eq!(ctx(&seen.lock()[0]).facts().endpoint, Endpoint::Embedding);
}

#[tokio::test]
async fn the_route_ctx_carries_the_request_facts_and_the_body_is_kept() {
    let (app, seen) = recording(1024);
    let body = r#"{"model":"gpt-4o","stream":true,"messages":[],"metadata":{"tags":["eu","fast"]},"tools":[]}"#;
    assert_eq!(send(app, post("/v1/chat/completions", body)).await.status(), StatusCode::OK);
    let seen = seen.lock();
    let ctx = ctx(&seen[0]);
    assert_eq!(ctx.requested(), "gpt-4o");
    assert!(ctx.facts().stream);
    assert_eq!(ctx.facts().tags, ["eu", "fast"]);
    assert_eq!(ctx.facts().required_params, ["tools"]);
    assert_eq!(seen[0].body(), body.as_bytes());
}

#[tokio::test]
async fn an_azure_path_supplies_the_model_when_the_body_has_none() {
    let (app, seen) = recording(1024);
    let path = "/openai/deployments/my-gpt/chat/completions?api-version=2024-06-01";
    assert_eq!(send(app.clone(), post(path, r#"{"messages":[]}"#)).await.status(), StatusCode::OK);
    assert_eq!(send(app, post(path, CHAT)).await.status(), StatusCode::OK);
    let seen = seen.lock();
    assert_eq!(ctx(&seen[0]).requested(), "my-gpt");
    let body: Value = serde_json::from_slice(seen[0].body()).expect("JSON");
    assert_eq!(body["model"], "my-gpt", "layers below see a standard body");
    assert_eq!(ctx(&seen[1]).requested(), "gpt-4o", "the body's model wins");
    assert_eq!(seen[1].uri().query(), Some("api-version=2024-06-01"));
}

#[tokio::test]
async fn a_request_id_is_generated_and_echoed() {
    let (app, seen) = recording(1024);
    let resp = send(app, post("/v1/chat/completions", CHAT)).await;
    let echoed = resp.headers()["x-request-id"].clone();
    assert_eq!(echoed.len(), 32);
    assert!(echoed.as_bytes().iter().all(u8::is_ascii_hexdigit));
    assert_eq!(seen.lock()[0].headers()["x-request-id"], echoed);
}

#[tokio::test]
async fn request_ids_traceparent_and_user_extensions_are_kept() {
    let (app, seen) = recording(1024);
    let mut req = post("/v1/chat/completions", CHAT);
    req.headers_mut().insert("x-request-id", "req-42".parse().expect("a header"));
    let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    req.headers_mut().insert("traceparent", traceparent.parse().expect("a header"));
    req.extensions_mut().insert(Tenant("acme"));
    let resp = send(app, req).await;
    assert_eq!(resp.headers()["x-request-id"], "req-42");
    let seen = seen.lock();
    assert_eq!(seen[0].headers()["x-request-id"], "req-42");
    assert_eq!(seen[0].headers()["traceparent"], traceparent);
    assert_eq!(seen[0].extensions().get::<Tenant>(), Some(&Tenant("acme")));
}

#[tokio::test]
async fn inner_errors_become_answers_with_their_status() {
    let unknown = || RouteError::unknown_group("gpt-5", vec!["gpt-4o".to_owned()]);
    let resp = send(failing(unknown), post("/v1/chat/completions", CHAT)).await;
    assert!(resp.headers().contains_key("x-request-id"));
    let cause = resp.extensions().get::<ErrorCause>().expect("the cause is kept");
    assert_eq!(cause.route_error().map(RouteError::kind), Some(RouteErrorKind::UnknownGroup));
    let (status, headers, error) = error_of(resp).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(headers["x-switchyard-error"], "unknown_group");
    assert_eq!(error["code"], "model_not_found");

    let cooling =
        || RouteError::new(RouteErrorKind::AllCoolingDown, "all cooling down").with_retry_after(Duration::from_secs(7));
    let (status, headers, _) = error_of(send(failing(cooling), post("/v1/chat/completions", CHAT)).await).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers["retry-after"], "7");

    let timeout = || RouteError::upstream(Outcome::Timeout, "east".into(), "attempt timed out");
    let (status, _, _) = error_of(send(failing(timeout), post("/v1/chat/completions", CHAT)).await).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);

    let server = || {
        RouteError::upstream(Outcome::ServerError, "east".into(), "503")
            .with_upstream_response(StatusCode::SERVICE_UNAVAILABLE, Bytes::from_static(b"busy"))
    };
    let (status, _, _) = error_of(send(failing(server), post("/v1/chat/completions", CHAT)).await).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
}

/// A stack whose readiness check fails.
#[derive(Clone)]
struct Broken;

impl Service<http::Request<Bytes>> for Broken {
    type Response = http::Response<RouteBody>;
    type Error = BoxError;
    type Future = std::future::Ready<Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Err("backend gone".into()))
    }

    fn call(&mut self, _: http::Request<Bytes>) -> Self::Future {
        unreachable!("never ready")
    }
}

#[tokio::test]
async fn a_readiness_failure_becomes_a_500_answer() {
    let app: Ingress<Broken> = ServiceBuilder::new().layer(IngressLayer::default()).service(Broken);
    let (status, _, error) = error_of(send(app, post("/v1/chat/completions", CHAT)).await).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(error["message"], "internal error");
}

#[cfg(feature = "mock")]
#[tokio::test]
async fn the_ingress_serves_inside_an_axum_router() {
    use hyper_util::{client::legacy::Client, rt::TokioExecutor};

    let stack = service_fn(|req: http::Request<Bytes>| async move {
        let group = req.route_ctx().map(|c| c.requested().to_owned()).unwrap_or_default();
        Ok::<_, BoxError>(http::Response::new(RouteBody::from(group)))
    });
    let ingress = ServiceBuilder::new().layer(IngressLayer::default()).service(stack);
    let app = axum::Router::new().route_service("/v1/chat/completions", ingress);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("an address");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut req = post(&format!("http://{addr}/v1/chat/completions"), CHAT);
    req.headers_mut().insert("x-request-id", "abc".parse().expect("a header"));
    let resp = client.request(req).await.expect("an answer");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["x-request-id"], "abc");
    let body = resp.into_body().collect().await.expect("a body").to_bytes();
    assert_eq!(&body[..], b"gpt-4o");

    let req = post(&format!("http://{addr}/v1/chat/completions"), r#"{"model":4}"#);
    let resp = client.request(req).await.expect("an answer");
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    server.abort();
}

#[tokio::test]
async fn a_session_header_and_the_callers_key_feed_affinity_without_leaking_the_key() {
    let (app, seen) = recording(1024);
    let mut req = post("/v1/chat/completions", CHAT);
    req.headers_mut().insert("x-session-id", "sess-7".parse().expect("header"));
    req.headers_mut().insert("authorization", "Bearer sk-caller-secret-123".parse().expect("header"));
    assert_eq!(send(app.clone(), req).await.status(), StatusCode::OK);
    let body = r#"{"model":"gpt-4o","messages":[],"metadata":{"session_id":"from-body"}}"#;
    let mut req = post("/v1/chat/completions", body);
    req.headers_mut().insert("x-session-id", "sess-7".parse().expect("header"));
    assert_eq!(send(app, req).await.status(), StatusCode::OK);
    let seen = seen.lock();
    let facts = ctx(&seen[0]).facts();
    assert_eq!(facts.session.as_deref(), Some("sess-7"));
    assert_eq!(facts.caller.as_ref().map(|k| k.expose()), Some("sk-caller-secret-123"));
    assert!(!format!("{facts:?}").contains("sk-caller-secret"), "the key never reaches Debug output");
    assert_eq!(ctx(&seen[1]).facts().session.as_deref(), Some("from-body"), "the body's session wins");
    assert!(ctx(&seen[1]).facts().caller.is_none());
}
