//! The mock upstream over loopback HTTP: answers, paced streams, injected failures, cuts, stalls,
//! Azure paths. Real time, generous bounds, no sleeps for synchronisation.
#![cfg(feature = "mock")]

use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use serde_json::{Value, json};
use switchyard_layers::{Outcome, outcome::classify};
use switchyard_services::{
    mock::{MockHandle, MockProfile, MockUpstream},
    openai::{ChatChunk, ChatCompletion, EmbeddingResponse, ErrorResponse, SseDecoder},
    profile::{Failure, Latency},
};
use tokio::time::{Instant, timeout};

/// Far above anything a loopback answer needs: only a broken server hits it.
const BOUND: Duration = Duration::from_secs(10);

type HttpClient = Client<HttpConnector, Full<Bytes>>;

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

fn start(profile: MockProfile) -> MockHandle {
    MockUpstream::start(profile).expect("a loopback port")
}

async fn post(client: &HttpClient, url: String, body: Value) -> http::Response<Incoming> {
    let req = http::Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a request");
    timeout(BOUND, client.request(req)).await.expect("answered in time").expect("an answer")
}

async fn body_of(resp: http::Response<Incoming>) -> Bytes {
    timeout(BOUND, resp.into_body().collect()).await.expect("read in time").expect("a whole body").to_bytes()
}

fn chat(model: &str, text: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": text}]})
}

/// Every data frame of a stream with when it arrived, and how the body ended.
async fn frames(resp: http::Response<Incoming>) -> (Vec<(Instant, Bytes)>, Result<(), hyper::Error>) {
    let mut body = resp.into_body();
    let mut out = Vec::new();
    loop {
        match timeout(BOUND, body.frame()).await.expect("a frame in time") {
            None => return (out, Ok(())),
            Some(Err(e)) => return (out, Err(e)),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    out.push((Instant::now(), data));
                }
            }
        }
    }
}

/// The SSE events of `frames`, with the arrival time of the frame that completed each.
fn events(frames: &[(Instant, Bytes)]) -> Vec<(Instant, String)> {
    let mut sse = SseDecoder::new(1 << 20);
    let mut out = Vec::new();
    for (at, data) in frames {
        for e in sse.push(data).expect("valid SSE") {
            out.push((*at, e.data));
        }
    }
    out
}

#[tokio::test]
async fn a_whole_answer_is_a_chat_completion_echoing_the_model_and_usage() {
    let upstream = start(MockProfile::builder().chunks(3).build().expect("a profile"));
    let resp = post(&client(), format!("{}/chat/completions", upstream.base_url()), chat("gpt-4o", "12345678")).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let answer: ChatCompletion = serde_json::from_slice(&body_of(resp).await).expect("a chat completion");
    assert_eq!(answer.model, "gpt-4o");
    assert!(answer.choices[0].message.text().contains("gpt-4o"));
    let usage = answer.usage.expect("usage");
    assert_eq!((usage.prompt_tokens, usage.completion_tokens, usage.total_tokens), (2, 3, 5));
    let seen = upstream.last_request().expect("recorded");
    assert_eq!(seen.path, "/v1/chat/completions");
    assert_eq!(seen.json().expect("JSON")["model"], "gpt-4o");
    assert_eq!(upstream.requests(), 1);
}

#[tokio::test]
async fn a_stream_sends_paced_chunks_then_usage_then_done() {
    let interval = Duration::from_millis(40);
    let profile = MockProfile::builder().chunks(4).chunk_interval(Latency::fixed(interval)).build().expect("a profile");
    let upstream = start(profile);
    let mut body = chat("gpt-4o", "hi");
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let resp = post(&client(), upstream.base_url() + "/chat/completions", body).await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let (frames, end) = frames(resp).await;
    assert!(end.is_ok(), "a clean end: {end:?}");
    let events = events(&frames);

    // 4 content chunks, the finish chunk, the usage chunk, [DONE].
    assert_eq!(events.len(), 7, "{events:?}");
    assert_eq!(events[6].1, "[DONE]");
    let chunks: Vec<ChatChunk> =
        events[..6].iter().map(|(_, d)| serde_json::from_str(d).expect("a chat chunk")).collect();
    let text: String = chunks.iter().filter_map(|c| c.choices.first()?.delta.content.clone()).collect();
    assert!(text.starts_with("Mock answer from `gpt-4o`."), "{text}");
    assert_eq!(chunks[4].choices[0].finish_reason.as_deref(), Some("stop"));
    assert!(chunks[5].choices.is_empty());
    assert_eq!(chunks[5].usage.as_ref().map(|u| u.completion_tokens), Some(4));

    // Paced: three gaps of 40 ms between the first and the last content chunk.
    let spread = events[3].0 - events[0].0;
    assert!(spread >= interval * 3 - Duration::from_millis(5), "chunks arrived {spread:?} apart");
}

#[tokio::test]
async fn a_stream_without_include_usage_has_no_usage_chunk() {
    let upstream = start(MockProfile::builder().chunks(2).chunk_interval(Latency::ZERO).build().expect("a profile"));
    let mut body = chat("m", "hi");
    body["stream"] = json!(true);
    let (frames, end) = frames(post(&client(), upstream.base_url() + "/chat/completions", body).await).await;
    assert!(end.is_ok());
    let events = events(&frames);
    assert_eq!(events.len(), 4, "two chunks, finish, [DONE]: {events:?}");
    assert!(events.iter().all(|(_, d)| !d.contains("\"usage\"")));
}

#[tokio::test]
async fn injected_failures_converge_to_their_rate_and_repeat_with_the_seed() {
    let profile = MockProfile::builder().fail(Failure::Unavailable, 0.3).seed(7).build().expect("a profile");
    let client = client();
    let mut runs = Vec::new();
    for _ in 0..2 {
        let upstream = start(profile.clone());
        let mut statuses = Vec::new();
        for _ in 0..400 {
            let resp = post(&client, upstream.base_url() + "/chat/completions", chat("m", "hi")).await;
            statuses.push(resp.status());
            body_of(resp).await;
        }
        assert_eq!(upstream.stats().failures, statuses.iter().filter(|s| **s != StatusCode::OK).count() as u64);
        upstream.shutdown().await;
        runs.push(statuses);
    }
    let failed = runs[0].iter().filter(|s| **s == StatusCode::SERVICE_UNAVAILABLE).count();
    assert!((80..=160).contains(&failed), "{failed} of 400 failed at a 30% rate");
    assert_eq!(runs[0], runs[1], "the same seed gives the same answers");
}

#[tokio::test]
async fn failures_carry_retry_after_and_an_openai_error_the_classifier_reads() {
    let profile = MockProfile::builder()
        .fail(Failure::RateLimited, 1.0)
        .retry_after(Duration::from_secs(2))
        .build()
        .expect("a profile");
    let upstream = start(profile);
    let client = client();
    let resp = post(&client, upstream.base_url() + "/chat/completions", chat("gpt-4o", "hi")).await;
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(resp.headers()["retry-after"], "2");
    let headers = resp.headers().clone();
    let body = body_of(resp).await;
    let error: ErrorResponse = serde_json::from_slice(&body).expect("an OpenAI error");
    assert_eq!(error.error.code, Some(json!("rate_limit_exceeded")));
    let classified = classify(StatusCode::TOO_MANY_REQUESTS, &headers, &body);
    assert_eq!(classified.outcome, Outcome::RateLimited);
    assert_eq!(classified.retry_after, Some(Duration::from_secs(2)));

    upstream.set_profile(MockProfile::builder().fail(Failure::ContextWindowExceeded, 1.0).build().expect("a profile"));
    let resp = post(&client, upstream.base_url() + "/chat/completions", chat("gpt-4o", "hi")).await;
    let status = resp.status();
    let body = body_of(resp).await;
    assert_eq!(classify(status, &http::HeaderMap::new(), &body).outcome, Outcome::ContextWindowExceeded);
}

#[tokio::test]
async fn a_cut_stream_ends_abruptly_without_done() {
    let profile =
        MockProfile::builder().chunks(5).chunk_interval(Latency::ZERO).stream_cut(2, 1.0).build().expect("a profile");
    let upstream = start(profile);
    let mut body = chat("m", "hi");
    body["stream"] = json!(true);
    let (frames, end) = frames(post(&client(), upstream.base_url() + "/chat/completions", body).await).await;
    assert!(end.is_err(), "the body must end in an error, not cleanly");
    let events = events(&frames);
    assert_eq!(events.len(), 2, "two content chunks before the cut: {events:?}");
    assert!(events.iter().all(|(_, d)| d != "[DONE]"));
    assert_eq!(upstream.stats().stream_cuts, 1);
}

#[tokio::test]
async fn a_stall_sends_headers_then_nothing_until_shutdown() {
    let upstream = start(MockProfile::builder().stall(1.0).build().expect("a profile"));
    let mut body = chat("m", "hi");
    body["stream"] = json!(true);
    let resp = post(&client(), upstream.base_url() + "/chat/completions", body).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    assert!(timeout(Duration::from_millis(300), body.frame()).await.is_err(), "the client gives up waiting");
    assert_eq!(upstream.stats().stalls, 1);

    // Shutting down ends the stalled answer instead of waiting for it.
    timeout(BOUND, upstream.shutdown()).await.expect("shut down in time");
    let end = timeout(BOUND, body.frame()).await.expect("the stalled body ends");
    assert!(!matches!(end, Some(Ok(_))), "no data after a stall: {end:?}");
}

#[tokio::test]
async fn latency_delays_the_answer() {
    let latency = Duration::from_millis(120);
    let upstream = start(MockProfile::builder().latency(Latency::fixed(latency)).build().expect("a profile"));
    let started = Instant::now();
    let resp = post(&client(), upstream.base_url() + "/chat/completions", chat("m", "hi")).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(started.elapsed() >= latency, "answered after {:?}", started.elapsed());
}

#[tokio::test]
async fn an_azure_path_is_served_with_the_deployment_as_the_model() {
    let upstream = start(MockProfile::healthy());
    let url = format!("{}/openai/deployments/my-gpt/chat/completions?api-version=2024-06-01", upstream.origin());
    let req = http::Request::post(url)
        .header("content-type", "application/json")
        .header("api-key", "azure-key")
        .body(Full::new(Bytes::from(json!({"messages": [{"role": "user", "content": "hi"}]}).to_string())))
        .expect("a request");
    let resp = timeout(BOUND, client().request(req)).await.expect("in time").expect("an answer");
    assert_eq!(resp.status(), StatusCode::OK);
    let answer: ChatCompletion = serde_json::from_slice(&body_of(resp).await).expect("a chat completion");
    assert_eq!(answer.model, "my-gpt");
    let seen = upstream.last_request().expect("recorded");
    assert_eq!(seen.path, "/openai/deployments/my-gpt/chat/completions");
    assert_eq!(seen.query.as_deref(), Some("api-version=2024-06-01"));
    assert_eq!(seen.headers["api-key"], "azure-key");
}

#[tokio::test]
async fn embeddings_answer_one_unit_vector_per_input() {
    let upstream = start(MockProfile::builder().embedding_dims(16).build().expect("a profile"));
    let body = json!({"model": "text-embedding-3-small", "input": ["a", "bb", "ccc"]});
    let resp = post(&client(), upstream.base_url() + "/embeddings", body).await;
    let answer: EmbeddingResponse = serde_json::from_slice(&body_of(resp).await).expect("embeddings");
    assert_eq!(answer.model, "text-embedding-3-small");
    assert_eq!(answer.data.len(), 3);
    let norm: f32 = answer.data[2].embedding.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-3, "{norm}");
    assert_eq!(answer.data[2].embedding.len(), 16);
}

#[tokio::test]
async fn malformed_requests_and_unknown_paths_get_openai_errors() {
    let upstream = start(MockProfile::healthy());
    let client = client();
    let resp = post(&client, upstream.base_url() + "/chat/completions", json!({"messages": []})).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let resp = post(&client, upstream.base_url() + "/models", json!({})).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let error: ErrorResponse = serde_json::from_slice(&body_of(resp).await).expect("an OpenAI error");
    assert!(error.error.message.contains("/v1/models"));
    assert_eq!(upstream.requests(), 2);
}

#[tokio::test]
async fn shutdown_closes_the_port() {
    let upstream = start(MockProfile::healthy());
    let addr = upstream.addr();
    let resp = post(&client(), upstream.base_url() + "/chat/completions", chat("m", "hi")).await;
    body_of(resp).await;
    timeout(BOUND, upstream.shutdown()).await.expect("shut down in time");
    assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "nothing listens any more");
}
