//! The routing trail header (`x-switchyard-trail`): asked for with the request header or turned on
//! for every answer, on served answers, streams and error answers. In-process gateway (`oneshot`)
//! with the simulated provider on a paused clock, so attempt durations are exact.
#![cfg(feature = "gateway")]

use std::time::Duration;

use axum::body::Body;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::json;
use switchyard::{
    Config,
    gateway::{Gateway, GatewayBuilder},
    services::{
        profile::{Failure, Latency},
        sim::{SimProfile, SimProvider},
    },
};
use tower::ServiceExt;

/// `gpt-4o`'s only deployment fails; the call falls back to `mini`.
const CONFIG: &str = r#"
model_list:
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o }
    model_info: { id: "east/1" }
  - model_name: mini
    litellm_params: { model: openai/gpt-4o-mini }
    model_info: { id: west }
router_settings:
  num_retries: 0
  fallbacks: [{ gpt-4o: [mini] }]
"#;

fn builder(failing: &[&str]) -> GatewayBuilder {
    let ms = |n| Latency::fixed(Duration::from_millis(n));
    let profile = |fail: bool| {
        let p = SimProfile::builder().latency(ms(40)).ttft(ms(25)).chunk_interval(ms(1)).error_latency(ms(12));
        let p = if fail { p.fail(Failure::InternalError, 1.0) } else { p };
        p.build().expect("valid profile")
    };
    let mut sim = SimProvider::new(1).default_profile(profile(false));
    for id in failing {
        sim = sim.profile(*id, profile(true));
    }
    Gateway::builder(Config::from_yaml_str(CONFIG).expect("valid config")).provider(sim).seed(3)
}

fn chat(model: &str, stream: bool, trail: Option<&str>) -> Request<Body> {
    let mut req = Request::post("/v1/chat/completions").header("content-type", "application/json");
    if let Some(v) = trail {
        req = req.header("x-switchyard-trail", v);
    }
    let body = json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]});
    req.body(Body::from(body.to_string())).expect("valid request")
}

/// The status and trail header of an answer, its body read to the end.
async fn send(gw: &Gateway, req: Request<Body>) -> (StatusCode, Option<String>) {
    let resp = gw.router().oneshot(req).await.expect("infallible");
    let status = resp.status();
    let trail = resp.headers().get("x-switchyard-trail").map(|v| v.to_str().expect("visible ASCII").to_owned());
    resp.into_body().collect().await.expect("body");
    (status, trail)
}

#[tokio::test(start_paused = true)]
async fn a_client_that_asks_sees_every_attempt_of_its_call() {
    let gw = builder(&["east/1"]).build().expect("gateway");
    let (status, trail) = send(&gw, chat("gpt-4o", false, Some("1"))).await;
    assert_eq!(status, StatusCode::OK);
    // The id's `/` is percent-encoded, so `/` and `:` only ever split the fields.
    assert_eq!(trail.as_deref(), Some("gpt-4o/east%2F1:server_error:12ms, mini/west:success:40ms"));
}

#[tokio::test(start_paused = true)]
async fn no_trail_unless_asked() {
    let gw = builder(&["east/1"]).build().expect("gateway");
    assert_eq!(send(&gw, chat("gpt-4o", false, None)).await, (StatusCode::OK, None));
    assert_eq!(send(&gw, chat("gpt-4o", false, Some("0"))).await, (StatusCode::OK, None));
}

#[tokio::test(start_paused = true)]
async fn the_gateway_can_send_it_on_every_answer() {
    let gw = builder(&[]).routing_trail(true).build().expect("gateway");
    let (_, trail) = send(&gw, chat("gpt-4o", false, None)).await;
    assert_eq!(trail.as_deref(), Some("gpt-4o/east%2F1:success:40ms"));
}

#[tokio::test(start_paused = true)]
async fn a_stream_carries_the_attempts_up_to_its_first_chunk() {
    let gw = builder(&["east/1"]).build().expect("gateway");
    let (status, trail) = send(&gw, chat("gpt-4o", true, Some("1"))).await;
    assert_eq!(status, StatusCode::OK);
    // The serving attempt's time is its time to the first chunk.
    assert_eq!(trail.as_deref(), Some("gpt-4o/east%2F1:server_error:12ms, mini/west:success:25ms"));
}

#[tokio::test(start_paused = true)]
async fn an_error_answer_lists_the_failed_attempts() {
    let gw = builder(&["east/1", "west"]).build().expect("gateway");
    let (status, trail) = send(&gw, chat("gpt-4o", false, Some("true"))).await;
    assert!(status.is_server_error(), "{status}");
    assert_eq!(trail.as_deref(), Some("gpt-4o/east%2F1:server_error:12ms, mini/west:server_error:12ms"));

    // A call that reached no deployment has an empty trail.
    let (status, trail) = send(&gw, chat("unknown", false, Some("1"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(trail.as_deref(), Some(""));
}
