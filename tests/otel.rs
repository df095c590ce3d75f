//! OpenTelemetry export end to end (feature `otel`): a call whose first group fails and falls
//! back, routed in process with the simulated provider, exported by `switchyard::otel::layer` over
//! OTLP/HTTP to an in-process receiver (hyper on 127.0.0.1:0) that decodes the protobuf spans.
//! Waiting for the export is `OtelGuard::force_flush`: no sleeps. Real time (sockets).
#![cfg(feature = "otel")]

use std::{
    collections::BTreeMap,
    convert::Infallible,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::{
    collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse},
    common::v1::{AnyValue, KeyValue, any_value::Value},
    trace::v1::{Span, span::SpanKind, status::StatusCode},
};
use prost::Message;
use switchyard::{
    Config, Router,
    otel::{self, OtelConfig},
    services::{
        openai::{ChatMessage, ChatRequest},
        profile::{Failure, Latency},
        sim::{SimProfile, SimProvider},
    },
};
use tokio::net::TcpListener;
use tracing::instrument::WithSubscriber;
use tracing_subscriber::layer::SubscriberExt;

/// `gpt-4o` has two deployments that both answer 429: each attempt benches its deployment
/// (a 429 in a group of two), the one retry uses the other, then the call falls back to `mistral`.
const CONFIG: &str = r#"
model_list:
  - model_name: gpt-4o
    litellm_params: { model: azure/gpt-4o-eu }
    model_info: { id: eu }
  - model_name: gpt-4o
    litellm_params: { model: azure/gpt-4o-us }
    model_info: { id: us }
  - model_name: mistral
    litellm_params: { model: mistral/mistral-large-latest }
    model_info: { id: backup }
router_settings:
  num_retries: 1
  fallbacks: [{ gpt-4o: [mistral] }]
"#;

/// What the receiver got: every span of every export request, and the resources' attributes.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<ExportTraceServiceRequest>>>);

impl Received {
    fn spans(&self) -> Vec<Span> {
        let requests = self.0.lock().expect("receiver lock");
        requests
            .iter()
            .flat_map(|r| &r.resource_spans)
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| s.spans.iter().cloned())
            .collect()
    }

    fn service_names(&self) -> Vec<String> {
        let requests = self.0.lock().expect("receiver lock");
        requests
            .iter()
            .flat_map(|r| &r.resource_spans)
            .filter_map(|r| r.resource.as_ref())
            .filter_map(|r| attrs(&r.attributes).remove("service.name"))
            .collect()
    }
}

/// An OTLP/HTTP receiver: `POST /v1/traces` with a protobuf `ExportTraceServiceRequest`.
async fn receiver() -> (SocketAddr, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the receiver");
    let addr = listener.local_addr().expect("receiver address");
    let received = Received::default();
    let store = received.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let store = store.clone();
            let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let store = store.clone();
                async move {
                    let path_ok = req.method() == hyper::Method::POST && req.uri().path() == "/v1/traces";
                    let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                    let status = match ExportTraceServiceRequest::decode(body) {
                        Ok(export) if path_ok => {
                            store.0.lock().expect("receiver lock").push(export);
                            200
                        }
                        _ => 400,
                    };
                    let answer = Bytes::from(ExportTraceServiceResponse::default().encode_to_vec());
                    let resp = hyper::Response::builder()
                        .status(status)
                        .header("content-type", "application/x-protobuf")
                        .body(Full::new(answer))
                        .expect("valid response");
                    Ok::<_, Infallible>(resp)
                }
            });
            tokio::spawn(http1::Builder::new().serve_connection(TokioIo::new(stream), service));
        }
    });
    (addr, received)
}

/// A span's attributes as strings (ints and bools formatted).
fn attrs(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .filter_map(|kv| {
            let value = match kv.value.as_ref().and_then(|v: &AnyValue| v.value.as_ref())? {
                Value::StringValue(s) => s.clone(),
                Value::IntValue(i) => i.to_string(),
                Value::BoolValue(b) => b.to_string(),
                Value::DoubleValue(d) => d.to_string(),
                _ => return None,
            };
            Some((kv.key.clone(), value))
        })
        .collect()
}

fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_falls_back_exports_its_span_its_attempts_and_its_decisions() {
    let (addr, received) = receiver().await;
    let config = OtelConfig::new().endpoint(format!("http://{addr}/v1/traces")).service_name("switchyard-otel-test");
    let (layer, guard) = otel::layer(config).expect("the exporter starts");
    let subscriber = tracing_subscriber::registry().with(layer);

    let quick = Latency::fixed(Duration::from_millis(1));
    let limited = SimProfile::builder().latency(quick).error_latency(quick).fail(Failure::RateLimited, 1.0);
    let sim = SimProvider::new(5)
        .default_profile(SimProfile::builder().latency(quick).build().expect("valid profile"))
        .profile("eu", limited.clone().build().expect("valid profile"))
        .profile("us", limited.build().expect("valid profile"));
    let router = Router::builder(&Config::from_yaml_str(CONFIG).expect("valid config"))
        .seed(3)
        .build(sim)
        .expect("router builds");

    let answer = router
        .chat(ChatRequest::new("gpt-4o", vec![ChatMessage::user("hello")]))
        .with_subscriber(subscriber)
        .await
        .expect("served by the fallback group");
    assert_eq!(&*answer.served.group, "mistral");
    // Every span has ended (the call's with its body); export them and wait for the receiver.
    tokio::task::block_in_place(|| guard.force_flush()).expect("the spans are exported");

    let spans = received.spans();
    assert_eq!(received.service_names().first().map(String::as_str), Some("switchyard-otel-test"));
    let call = spans
        .iter()
        .find(|s| s.name == "chat gpt-4o")
        .unwrap_or_else(|| panic!("no `chat gpt-4o` span in {:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>()));
    assert!(call.parent_span_id.is_empty(), "the call is the root of an in-process trace");
    assert_eq!(call.kind, SpanKind::Internal as i32);
    let a = attrs(&call.attributes);
    for (key, want) in [
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.request.model", "gpt-4o"),
        ("gen_ai.response.model", "mistral-large-latest"),
        ("gen_ai.provider.name", "mistral_ai"),
        ("switchyard.group", "mistral"),
        ("switchyard.deployment.id", "backup"),
        ("switchyard.attempts", "3"),
        ("switchyard.fallback.hops", "1"),
        ("switchyard.outcome", "success"),
    ] {
        assert_eq!(a.get(key).map(String::as_str), Some(want), "{key} on the call span: {a:?}");
    }
    for key in ["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"] {
        let tokens: u64 = a.get(key).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{key} missing: {a:?}"));
        assert!(tokens > 0, "{key} = {tokens}");
    }
    assert_ne!(call.status.as_ref().map(|s| s.code), Some(StatusCode::Error as i32));

    // The decisions are events on the call span: the fallback hop, and each cooldown.
    let hop = call.events.iter().find(|e| e.name == "fallback hop").expect("a fallback hop event");
    let h = attrs(&hop.attributes);
    assert_eq!((h["from"].as_str(), h["to"].as_str(), h["reason"].as_str()), ("gpt-4o", "mistral", "rate_limited"));
    let mut benched: Vec<String> = call
        .events
        .iter()
        .filter(|e| e.name == "deployment cooled down")
        .filter_map(|e| attrs(&e.attributes).remove("deployment"))
        .collect();
    benched.sort();
    assert_eq!(benched, ["eu", "us"], "both 429s benched their deployment");

    // One child span per attempt, in the call's trace.
    let mut attempts: Vec<&Span> = spans.iter().filter(|s| s.parent_span_id == call.span_id).collect();
    attempts.sort_by_key(|s| s.start_time_unix_nano);
    assert_eq!(attempts.len(), 3, "children of the call: {:?}", attempts.iter().map(|s| &s.name).collect::<Vec<_>>());
    let mut seen = Vec::new();
    for (i, s) in attempts.iter().enumerate() {
        assert_eq!(hex(&s.trace_id), hex(&call.trace_id));
        assert_eq!(s.kind, SpanKind::Client as i32);
        let a = attrs(&s.attributes);
        assert_eq!(a.get("switchyard.attempt").map(String::as_str), Some((i + 1).to_string().as_str()), "{a:?}");
        assert_eq!(a.get("gen_ai.operation.name").map(String::as_str), Some("chat"));
        seen.push((
            a.get("switchyard.group").cloned().unwrap_or_default(),
            a.get("switchyard.deployment.id").cloned().unwrap_or_default(),
            a.get("switchyard.outcome").cloned().unwrap_or_default(),
            s.status.as_ref().map(|s| s.code) == Some(StatusCode::Error as i32),
        ));
    }
    let (failed, served) = seen.split_at(2);
    let mut failed_ids: Vec<&str> = failed.iter().map(|(_, id, _, _)| id.as_str()).collect();
    failed_ids.sort_unstable();
    assert_eq!(failed_ids, ["eu", "us"]);
    for (group, _, outcome, error) in failed {
        assert_eq!((group.as_str(), outcome.as_str(), *error), ("gpt-4o", "rate_limited", true));
    }
    assert_eq!(served[0], ("mistral".to_owned(), "backup".to_owned(), "success".to_owned(), false));
    assert_eq!(attempts[2].name, "chat mistral-large-latest");
}

/// The gateway's `request` span continues the client's trace, and the `traceparent` sent
/// upstream names it, so the upstream's spans join the same trace.
#[cfg(feature = "gateway")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_continues_the_clients_trace_and_passes_it_upstream() {
    use axum::body::Body;
    use switchyard::{RouteBody, gateway::Gateway, layers::BoxError};
    use tower::ServiceExt;

    let (addr, received) = receiver().await;
    let config = OtelConfig::new().endpoint(format!("http://{addr}/v1/traces"));
    let (layer, guard) = otel::layer(config).expect("the exporter starts");
    let subscriber = tracing_subscriber::registry().with(layer);

    // An upstream that remembers the `traceparent` it was sent.
    let upstream_saw = Arc::new(Mutex::new(None::<String>));
    let saw = upstream_saw.clone();
    let provider = tower::service_fn(move |req: http::Request<Bytes>| {
        let tp = req.headers().get("traceparent").and_then(|v| v.to_str().ok()).map(str::to_owned);
        *saw.lock().expect("upstream lock") = tp;
        async move {
            let body = r#"{"id":"x","object":"chat.completion","created":0,"model":"gpt-4o","choices":[]}"#;
            Ok::<_, BoxError>(http::Response::new(RouteBody::from(body)))
        }
    });
    let gw = Gateway::builder(Config::from_yaml_str(CONFIG).expect("valid config"))
        .provider(provider)
        .build()
        .expect("gateway");

    let client_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_span = "00f067aa0ba902b7";
    let req = http::Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .header("traceparent", format!("00-{client_trace}-{client_span}-01"))
        .body(Body::from(r#"{"model": "mistral", "messages": [{"role": "user", "content": "hi"}]}"#))
        .expect("valid request");
    let resp = gw.router().oneshot(req).with_subscriber(subscriber).await.expect("infallible");
    assert_eq!(resp.status(), 200);
    drop(resp);
    tokio::task::block_in_place(|| guard.force_flush()).expect("the spans are exported");

    let spans = received.spans();
    let request = spans.iter().find(|s| s.name == "POST /v1/chat/completions").expect("the request span");
    assert_eq!(request.kind, SpanKind::Server as i32);
    assert_eq!(hex(&request.trace_id), client_trace, "the client's trace goes on");
    assert_eq!(hex(&request.parent_span_id), client_span);
    let call = spans.iter().find(|s| s.name == "chat mistral").expect("the call span");
    assert_eq!(call.parent_span_id, request.span_id);
    let upstream = upstream_saw.lock().expect("upstream lock").clone().expect("a traceparent went upstream");
    assert_eq!(upstream, format!("00-{client_trace}-{}-01", hex(&request.span_id)));
}
