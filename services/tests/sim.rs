//! Behaviour of the simulated upstream, on a paused clock.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use http::StatusCode;
use http_body_util::BodyExt;
use switchyard_layers::{
    BoxError, Deployment, Outcome, Registry, RequestFacts, RouteBody, RouteCtx, RouteError, RouteErrorKind, Served,
    StateStore,
    body::BodyEndKind,
    ctx::Endpoint,
    select::{RoutingStrategy, SelectLayer},
};
use switchyard_services::{
    openai::{ChatChunk, ChatCompletion, EmbeddingResponse, ErrorResponse, SseDecoder},
    profile::{Failure, Latency},
    sim::{SimProfile, SimProvider},
};
use tokio::time::Instant;
use tower::{Service, ServiceBuilder, ServiceExt};

type Answer = Result<http::Response<RouteBody>, BoxError>;

fn deployment(id: &str) -> Arc<Deployment> {
    Arc::new(Deployment::builder("gpt-4o", "openai/gpt-4o-mini").id(id).build().expect("valid deployment"))
}

fn request(id: &str, facts: RequestFacts) -> http::Request<Bytes> {
    let mut ctx = RouteCtx::with_facts("gpt-4o", facts);
    ctx.selected = Some(deployment(id));
    let mut req = http::Request::new(Bytes::new());
    req.extensions_mut().insert(ctx);
    req
}

async fn call(sim: &mut SimProvider, req: http::Request<Bytes>) -> Answer {
    ServiceExt::<http::Request<Bytes>>::ready(sim).await?.call(req).await
}

fn route_error(answer: Answer) -> RouteError {
    RouteError::from_boxed(answer.expect_err("the attempt must fail"))
}

fn outcome(answer: &Answer) -> Outcome {
    match answer {
        Ok(_) => Outcome::Success,
        Err(e) => RouteError::find(&**e).and_then(RouteError::outcome).expect("classified failure"),
    }
}

fn always(kind: Failure) -> SimProfile {
    SimProfile::builder().fail(kind, 1.0).error_latency(Latency::ZERO).build().expect("valid profile")
}

#[tokio::test(start_paused = true)]
async fn a_429_profile_is_classified_rate_limited_with_its_retry_after() {
    let throttled =
        SimProfile::builder().fail(Failure::RateLimited, 1.0).retry_after(Duration::from_secs(3)).build().unwrap();
    let fast = throttled.to_builder().retry_after(Duration::from_millis(250)).build().unwrap();
    let mut sim = SimProvider::new(1).profile("d1", throttled).profile("d2", fast);

    let err = route_error(call(&mut sim, request("d1", RequestFacts::new())).await);
    assert_eq!(err.kind(), RouteErrorKind::Upstream);
    assert_eq!(err.outcome(), Some(Outcome::RateLimited));
    assert_eq!(err.retry_after(), Some(Duration::from_secs(3)));
    assert_eq!(err.deployment().map(|d| d.as_str()), Some("d1"));
    assert_eq!(err.upstream_status(), Some(StatusCode::TOO_MANY_REQUESTS));
    let body: ErrorResponse = serde_json::from_slice(err.upstream_body().expect("upstream body")).unwrap();
    assert_eq!(body.error.code, Some("rate_limit_exceeded".into()));

    let err = route_error(call(&mut sim, request("d2", RequestFacts::new())).await);
    assert_eq!(err.retry_after(), Some(Duration::from_millis(250)));
}

#[tokio::test(start_paused = true)]
async fn every_failure_kind_is_classified_by_the_real_classifier() {
    let cases = [
        (Failure::InternalError, Some(500), Outcome::ServerError),
        (Failure::Unavailable, Some(503), Outcome::ServerError),
        (Failure::Unauthorized, Some(401), Outcome::Auth),
        (Failure::NotFound, Some(404), Outcome::NotFound),
        (Failure::ContextWindowExceeded, Some(400), Outcome::ContextWindowExceeded),
        (Failure::ContentFilter, Some(400), Outcome::ContentPolicy),
        (Failure::Connect, None, Outcome::Connect),
    ];
    for (kind, status, expected) in cases {
        let mut sim = SimProvider::new(2).default_profile(always(kind));
        let err = route_error(call(&mut sim, request("d1", RequestFacts::new())).await);
        assert_eq!(err.outcome(), Some(expected), "{kind:?}");
        assert_eq!(err.upstream_status().map(|s| s.as_u16()), status, "{kind:?}");
        assert_eq!(err.retry_after(), None, "{kind:?}");
        assert_eq!(sim.stats().deployment("d1").count(expected), 1, "{kind:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_whole_answer_is_a_chat_completion_with_usage() {
    let profile = SimProfile::builder().latency(Latency::fixed(Duration::from_millis(120))).chunks(5).build().unwrap();
    let mut sim = SimProvider::new(3).default_profile(profile);
    let start = Instant::now();
    let resp = call(&mut sim, request("d1", RequestFacts::new().with_input_tokens(42))).await.expect("success");
    assert_eq!(start.elapsed(), Duration::from_millis(120));
    assert_eq!(resp.headers()[http::header::CONTENT_TYPE], "application/json");
    assert_eq!(resp.body().usage().map(|u| (u.prompt_tokens, u.completion_tokens)), Some((42, 5)));

    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    let answer: ChatCompletion = serde_json::from_slice(&bytes).expect("a chat completion");
    assert_eq!(answer.model, "gpt-4o-mini");
    let text = answer.choices[0].message.text();
    assert!(text.contains("d1") && text.contains("openai/gpt-4o-mini"), "{text}");
    let usage = answer.usage.expect("usage");
    assert_eq!((usage.prompt_tokens, usage.completion_tokens, usage.total_tokens), (42, 5, 47));
}

#[tokio::test(start_paused = true)]
async fn embeddings_answer_an_embedding_response() {
    let profile = SimProfile::builder().embedding_dims(4).prompt_tokens(7).build().unwrap();
    let mut sim = SimProvider::new(4).default_profile(profile);
    let facts = RequestFacts::new().endpoint(Endpoint::Embedding).streaming(true);
    let resp = call(&mut sim, request("d1", facts)).await.expect("success");
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    let answer: EmbeddingResponse = serde_json::from_slice(&bytes).expect("an embedding response");
    assert_eq!(answer.data[0].embedding.len(), 4);
    assert_eq!(answer.usage.map(|u| u.prompt_tokens), Some(7));
}

#[tokio::test(start_paused = true)]
async fn the_completions_endpoint_answers_text_completions() {
    let mut sim = SimProvider::new(16).default_profile(SimProfile::builder().chunks(3).build().unwrap());
    let facts = || RequestFacts::new().endpoint(Endpoint::Completion);
    let whole = call(&mut sim, request("d1", facts())).await.expect("success");
    let json: serde_json::Value =
        serde_json::from_slice(&whole.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(json["object"], "text_completion");
    assert!(json["choices"][0]["text"].as_str().is_some_and(|t| t.contains("d1")));
    assert_eq!(json["usage"]["completion_tokens"], 3);

    let stream = call(&mut sim, request("d1", facts().streaming(true))).await.expect("stream");
    let bytes = stream.into_body().collect().await.unwrap().to_bytes();
    let events = SseDecoder::new(64 * 1024).push(&bytes).unwrap();
    assert_eq!(events.len(), 3 + 3, "three chunks, finish, usage, [DONE]");
    assert!(events[5].is_done());
}

#[tokio::test(start_paused = true)]
async fn a_stream_resolves_at_its_first_chunk_and_ends_with_usage_and_done() {
    let profile = SimProfile::builder()
        .ttft(Latency::fixed(Duration::from_millis(300)))
        .chunk_interval(Latency::fixed(Duration::from_millis(20)))
        .chunks(4)
        .build()
        .unwrap();
    let mut sim = SimProvider::new(5).default_profile(profile);
    let start = Instant::now();
    let resp = call(&mut sim, request("d1", RequestFacts::new().streaming(true))).await.expect("stream");
    assert_eq!(start.elapsed(), Duration::from_millis(300));
    assert_eq!(resp.headers()[http::header::CONTENT_TYPE], "text/event-stream");

    let mut body = resp.into_body();
    assert_eq!(body.usage(), None);
    let first = body.frame().await.expect("a frame").expect("data").into_data().expect("data frame");
    assert_eq!(start.elapsed(), Duration::from_millis(300), "the first chunk is ready at once");
    assert!(first.starts_with(b"data: {"));

    let rest = (&mut body).collect().await.expect("the stream completes").to_bytes();
    assert_eq!(start.elapsed(), Duration::from_millis(300 + 4 * 20));
    let mut sse = SseDecoder::new(64 * 1024);
    let mut events = sse.push(&first).unwrap();
    events.extend(sse.push(&rest).unwrap());
    assert!(events.last().expect("events").is_done());
    let chunks: Vec<ChatChunk> =
        events[..events.len() - 1].iter().map(|e| serde_json::from_str(&e.data).expect("a chunk")).collect();
    assert_eq!(chunks.len(), 4 + 2, "four content chunks, the finish chunk, the usage chunk");
    assert_eq!(chunks[0].choices[0].delta.role.as_deref(), Some("assistant"));
    assert!(chunks[0].choices[0].delta.content.as_deref().is_some_and(|c| c.contains("d1")));
    assert_eq!(chunks[4].choices[0].finish_reason.as_deref(), Some("stop"));
    let usage = chunks[5].usage.as_ref().expect("usage chunk");
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (16, 4));
    assert_eq!(body.usage().map(|u| u.total()), Some(20), "the usage slot is filled");
}

#[tokio::test(start_paused = true)]
async fn a_mid_stream_failure_ends_the_body_with_a_transport_error() {
    let profile = SimProfile::builder().chunks(5).mid_stream_failure(1.0).build().unwrap();
    let mut sim = SimProvider::new(6).default_profile(profile);
    let mut body =
        call(&mut sim, request("d1", RequestFacts::new().streaming(true))).await.expect("stream").into_body();
    let ended = Arc::new(Mutex::new(None));
    let seen = ended.clone();
    body.on_end(move |end| *seen.lock().unwrap() = Some(end.kind));

    let mut data = Vec::new();
    let err = loop {
        match body.frame().await.expect("the body ends with an error, not a clean end") {
            Ok(frame) => data.extend_from_slice(&frame.into_data().expect("data frame")),
            Err(e) => break RouteError::from_boxed(e),
        }
    };
    assert!(!data.is_empty(), "at least the first chunk arrives");
    assert!(!data.windows(6).any(|w| w == b"[DONE]"));
    assert_eq!(err.outcome(), Some(Outcome::Transport));
    assert_eq!(err.deployment().map(|d| d.as_str()), Some("d1"));
    assert_eq!(body.usage(), None);
    assert_eq!(*ended.lock().unwrap(), Some(BodyEndKind::Failed(Outcome::Transport)));
    assert_eq!(sim.stats().deployment("d1").mid_stream_failures, 1);
}

#[tokio::test(start_paused = true)]
async fn failure_rates_converge_over_many_seeded_calls() {
    let profile = SimProfile::builder()
        .fail(Failure::InternalError, 0.3)
        .fail(Failure::RateLimited, 0.1)
        .latency(Latency::ZERO)
        .error_latency(Latency::ZERO)
        .build()
        .unwrap();
    let mut sim = SimProvider::new(7).default_profile(profile);
    let mut server_errors = 0;
    let mut rate_limited = 0;
    for _ in 0..2000 {
        match outcome(&call(&mut sim, request("d1", RequestFacts::new())).await) {
            Outcome::ServerError => server_errors += 1,
            Outcome::RateLimited => rate_limited += 1,
            _ => {}
        }
    }
    assert!((500..=700).contains(&server_errors), "30% ± 5% of 2000, got {server_errors}");
    assert!((140..=260).contains(&rate_limited), "10% ± 3% of 2000, got {rate_limited}");
    let stats = sim.stats().deployment("d1");
    assert_eq!(stats.calls, 2000);
    assert_eq!(stats.count(Outcome::ServerError), server_errors);
    assert_eq!(stats.in_flight, 0);
}

async fn sequence(sim: &mut SimProvider, n: usize) -> Vec<Outcome> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(outcome(&call(sim, request("d1", RequestFacts::new())).await));
    }
    out
}

fn coin() -> SimProfile {
    SimProfile::builder().fail(Failure::InternalError, 0.5).latency(Latency::ZERO).build().unwrap()
}

#[tokio::test(start_paused = true)]
async fn clones_draw_different_sequences() {
    let sim = SimProvider::new(8).default_profile(coin());
    let (mut a, mut b) = (sim.clone(), sim.clone());
    assert_ne!(sequence(&mut a, 64).await, sequence(&mut b, 64).await);
}

#[tokio::test(start_paused = true)]
async fn the_same_seed_reproduces_the_same_answers() {
    let (mut a, mut b) = (SimProvider::new(9).default_profile(coin()), SimProvider::new(9).default_profile(coin()));
    assert_eq!(sequence(&mut a, 64).await, sequence(&mut b, 64).await);
    assert_eq!(sequence(&mut a.clone(), 64).await, sequence(&mut b.clone(), 64).await);
    let mut other = SimProvider::new(10).default_profile(coin());
    assert_ne!(sequence(&mut a, 64).await, sequence(&mut other, 64).await);
}

#[tokio::test(start_paused = true)]
async fn a_hanging_deployment_answers_only_the_timeout() {
    let mut sim = SimProvider::new(11).default_profile(always(Failure::Hang));
    let attempt = call(&mut sim, request("d1", RequestFacts::new()));
    assert!(tokio::time::timeout(Duration::from_secs(60), attempt).await.is_err());
    let stats = sim.stats().deployment("d1");
    assert_eq!((stats.hangs, stats.in_flight, stats.max_in_flight), (1, 0, 1));
}

#[tokio::test(start_paused = true)]
async fn a_stream_is_in_flight_until_its_body_is_dropped() {
    let mut sim = SimProvider::new(12);
    let stats = sim.stats();
    let body = call(&mut sim, request("d1", RequestFacts::new().streaming(true))).await.expect("stream").into_body();
    assert_eq!(stats.deployment("d1").in_flight, 1);
    drop(body);
    assert_eq!(stats.deployment("d1").in_flight, 0);
}

#[tokio::test(start_paused = true)]
async fn a_profile_changed_live_applies_to_every_clone() {
    let sim = SimProvider::new(13).profile("d1", always(Failure::InternalError));
    let mut clone = sim.clone();
    assert_eq!(outcome(&call(&mut clone, request("d1", RequestFacts::new())).await), Outcome::ServerError);
    sim.set_profile("d1", SimProfile::healthy());
    assert_eq!(outcome(&call(&mut clone, request("d1", RequestFacts::new())).await), Outcome::Success);
    sim.set_profile("d1", always(Failure::NotFound));
    sim.clear_profile("d1");
    assert_eq!(outcome(&call(&mut clone, request("d1", RequestFacts::new())).await), Outcome::Success);
}

#[tokio::test(start_paused = true)]
async fn without_a_selected_deployment_the_context_is_missing() {
    let mut sim = SimProvider::new(14);
    let mut req = http::Request::new(Bytes::new());
    req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
    assert_eq!(route_error(call(&mut sim, req).await).kind(), RouteErrorKind::MissingContext);
    let bare = http::Request::new(Bytes::new());
    assert_eq!(route_error(call(&mut sim, bare).await).kind(), RouteErrorKind::MissingContext);
    assert_eq!(sim.stats().total_calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn under_the_select_layer_every_attempt_reaches_the_chosen_deployment() {
    let registry = Arc::new(Registry::new());
    for id in ["east", "west"] {
        registry.upsert(Deployment::builder("gpt-4o", format!("azure/gpt-4o-{id}")).id(id).build().unwrap()).unwrap();
    }
    let select =
        SelectLayer::new(registry, Arc::new(StateStore::memory()), RoutingStrategy::SimpleShuffle.build()).with_seed(1);
    let sim = SimProvider::new(15).profile("west", always(Failure::InternalError));
    let stats = sim.stats();
    let mut stack = ServiceBuilder::new().layer(select).service(sim);

    let (mut served_east, mut failed_west) = (0, 0);
    for _ in 0..200 {
        let mut req = http::Request::new(Bytes::new());
        req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
        match ServiceExt::<http::Request<Bytes>>::ready(&mut stack).await.unwrap().call(req).await {
            Ok(resp) => {
                assert_eq!(resp.extensions().get::<Served>().map(|s| s.deployment.as_str()), Some("east"));
                served_east += 1;
            }
            Err(e) => {
                let err = RouteError::find(&*e).expect("a routing error");
                assert_eq!(
                    (err.outcome(), err.deployment().map(|d| d.as_str())),
                    (Some(Outcome::ServerError), Some("west"))
                );
                failed_west += 1;
            }
        }
    }
    assert_eq!((stats.calls("east"), stats.calls("west")), (served_east, failed_west));
    assert!(served_east > 50 && failed_west > 50, "{served_east} / {failed_west}");
}
