//! Streams: the future resolves at the first content chunk; failures before it are `Err`s,
//! failures after it end the body with an error event and then an `Err`.

use std::time::Duration;

use http::header;
use serde_json::json;
use switchyard_layers::{ApiKey, Deployment, Outcome, RouteError, Usage, body::BodyEndKind};
use switchyard_services::provider::ProviderConfig;
use tokio::sync::oneshot;
use tower::{Service, ServiceExt};

use crate::support::{
    PATIENCE, Reply, Server, Step, attempt, chat_body, content, data_events, done, drain, event, provider, route_error,
    send, streaming,
};

fn deployment(server: &Server) -> Deployment {
    Deployment::builder("gpt-4o", "openai/gpt-4o")
        .id("east")
        .api_base(format!("{}/v1", server.base()))
        .api_key(ApiKey::new("sk-east"))
        .build()
        .expect("valid deployment")
}

fn config() -> ProviderConfig {
    ProviderConfig::default().stream_timeout(Duration::from_millis(400))
}

/// The error of a streaming attempt answered with `steps`.
async fn failure_before_content(reply: Reply) -> RouteError {
    let server = Server::start().await;
    server.reply(reply);
    route_error(send(&provider(config()), attempt(deployment(&server), streaming(), &chat_body())).await)
}

#[tokio::test]
async fn the_future_resolves_at_the_first_content_chunk() {
    let server = Server::start().await;
    let (reached, headers_sent) = oneshot::channel();
    let (go, released) = oneshot::channel();
    let prompt_filter =
        json!({"id":"","object":"","model":"","choices":[],"prompt_filter_results":[{"prompt_index":0}]});
    let first = json!({"id":"c1","object":"chat.completion.chunk","model":"m",
        "choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]});
    let finish = json!({"id":"c1","object":"chat.completion.chunk","model":"m",
        "choices":[{"index":0,"delta":{},"finish_reason":"stop"}]});
    let usage = json!({"id":"c1","object":"chat.completion.chunk","model":"m","choices":[],
        "usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}});
    server.reply(Reply::Sse(vec![
        Step::Chunk(": keep-alive\n\n".to_owned()),
        event(prompt_filter.clone()),
        Step::Reached(reached),
        Step::WaitFor(released),
        event(first.clone()),
        content("lo"),
        event(finish),
        event(usage),
        done(),
        Step::End,
    ]));
    let mut provider = provider(config().stream_timeout(Duration::from_secs(30)));
    let req = attempt(deployment(&server), streaming(), &chat_body());
    let mut fut = provider.ready().await.expect("always ready").call(req);

    // Drive the attempt until the server has sent its headers and a non-content event.
    tokio::select! {
        resolved = &mut fut => panic!("resolved before any content chunk: {:?}", resolved.map(|r| r.status())),
        reached = tokio::time::timeout(PATIENCE, headers_sent) => reached.expect("in time").expect("server step"),
    }
    let early = tokio::time::timeout(Duration::from_millis(300), &mut fut).await;
    assert!(early.is_err(), "resolved before any content chunk");

    go.send(()).expect("server waiting");
    let resp = tokio::time::timeout(PATIENCE, fut).await.expect("resolves in time").expect("a stream");
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "text/event-stream");
    let (text, error, end) = drain(resp.into_body()).await;
    assert!(error.is_none(), "clean stream: {error:?}");
    assert_eq!(end, Some(BodyEndKind::Complete));
    let events = data_events(&text);
    assert_eq!(events[0], prompt_filter, "events before the commit point are replayed");
    assert_eq!(events[1], first);
    assert_eq!(events[2]["choices"][0]["delta"]["content"], "lo");
    assert!(text.ends_with("data: [DONE]\n\n"), "[DONE] passes through: {text}");
}

#[tokio::test]
async fn the_usage_slot_is_filled_from_the_usage_chunk() {
    let server = Server::start().await;
    let usage = json!({"id":"c1","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":4,"total_tokens":15}});
    server.reply(Reply::Sse(vec![content("a"), content("b"), event(usage), done(), Step::End]));
    let resp =
        send(&provider(config()), attempt(deployment(&server), streaming(), &chat_body())).await.expect("stream");
    let mut body = resp.into_body();
    assert_eq!(body.usage(), None, "not known at the commit point");
    let usage_seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let slot = usage_seen.clone();
    body.on_end(move |end| *slot.lock().expect("lock") = end.usage);
    let (_, error, _) = drain(body).await;
    assert!(error.is_none());
    assert_eq!(*usage_seen.lock().expect("lock"), Some(Usage::new(11, 4)));
}

#[tokio::test]
async fn a_status_error_before_the_first_chunk_is_an_err() {
    let err = failure_before_content(Reply::json(500, r#"{"error":{"message":"boom"}}"#)).await;
    assert_eq!(err.outcome(), Some(Outcome::ServerError));
}

#[tokio::test]
async fn a_cut_before_the_first_chunk_is_an_err() {
    let empty_role = json!({"id":"c","choices":[{"index":0,"delta":{"content":null}}]});
    let err = failure_before_content(Reply::Sse(vec![event(empty_role), Step::Cut])).await;
    assert_eq!(err.outcome(), Some(Outcome::Transport));
}

#[tokio::test]
async fn a_stall_before_the_first_chunk_times_out() {
    let err = failure_before_content(Reply::Sse(vec![Step::Chunk(": ping\n\n".to_owned()), Step::Stall])).await;
    assert_eq!(err.outcome(), Some(Outcome::Timeout));
    assert!(err.message().contains("no content"), "{}", err.message());
}

#[tokio::test]
async fn an_error_event_before_the_first_chunk_is_classified() {
    let error = json!({"error":{"message":"Rate limit exceeded","type":"requests","code":"rate_limit_exceeded"}});
    let err = failure_before_content(Reply::Sse(vec![event(error), done(), Step::End])).await;
    assert_eq!(err.outcome(), Some(Outcome::RateLimited));
    assert!(err.message().contains("Rate limit exceeded"), "{}", err.message());
    let overloaded = json!({"error":{"message":"Overloaded","code":502}});
    let err = failure_before_content(Reply::Sse(vec![event(overloaded), Step::End])).await;
    assert_eq!(err.outcome(), Some(Outcome::ServerError));
}

#[tokio::test]
async fn a_stream_without_content_is_an_err() {
    let err = failure_before_content(Reply::Sse(vec![done(), Step::End])).await;
    assert_eq!(err.outcome(), Some(Outcome::Transport));
    let err = failure_before_content(Reply::Sse(vec![Step::End])).await;
    assert_eq!(err.outcome(), Some(Outcome::Transport));
}

/// The body of a stream that committed and then broke with `after`.
async fn broken_after_commit(after: Step) -> (String, Option<RouteError>, Option<BodyEndKind>) {
    let server = Server::start().await;
    server.reply(Reply::Sse(vec![content("Hello"), content(" world"), after]));
    let resp =
        send(&provider(config()), attempt(deployment(&server), streaming(), &chat_body())).await.expect("stream");
    drain(resp.into_body()).await
}

fn assert_error_event_then_err(body: (String, Option<RouteError>, Option<BodyEndKind>), outcome: Outcome) {
    let (text, error, end) = body;
    let events = data_events(&text);
    assert_eq!(events[0]["choices"][0]["delta"]["content"], "Hello");
    assert_eq!(events[1]["choices"][0]["delta"]["content"], " world");
    let last = events.last().expect("an error event");
    assert_eq!(last["error"]["type"], "upstream_error", "{text}");
    assert_eq!(last["error"]["code"], outcome.as_str());
    assert!(!text.contains("data: [DONE]"), "never a clean end");
    let error = error.expect("the body ends with an error");
    assert_eq!(error.outcome(), Some(outcome));
    assert_eq!(error.deployment().map(|d| d.as_str()), Some("east"));
    assert_eq!(end, Some(BodyEndKind::Failed(outcome)));
}

#[tokio::test]
async fn a_cut_after_the_commit_point_ends_with_an_error_event_then_err() {
    assert_error_event_then_err(broken_after_commit(Step::Cut).await, Outcome::Transport);
}

#[tokio::test]
async fn a_stall_after_the_commit_point_times_out_in_the_body() {
    assert_error_event_then_err(broken_after_commit(Step::Stall).await, Outcome::Timeout);
}

#[tokio::test]
async fn an_end_without_done_is_a_failure() {
    assert_error_event_then_err(broken_after_commit(Step::End).await, Outcome::Transport);
}

#[tokio::test]
async fn a_malformed_event_after_the_commit_point_is_a_failure() {
    assert_error_event_then_err(
        broken_after_commit(Step::Chunk("data: {not json\n\n".to_owned())).await,
        Outcome::Transport,
    );
}

#[tokio::test]
async fn an_event_over_the_size_limit_fails_the_attempt() {
    let server = Server::start().await;
    server.reply(Reply::Sse(vec![content(&"x".repeat(2048)), done(), Step::End]));
    let config = config().max_response_bytes(1024);
    let err = route_error(send(&provider(config), attempt(deployment(&server), streaming(), &chat_body())).await);
    assert_eq!(err.outcome(), Some(Outcome::Transport));
    assert!(err.message().contains("1024"), "{}", err.message());
}

#[tokio::test]
async fn every_event_that_leaves_is_masked() {
    let server = Server::start().await;
    let escaped = r#"data: {"id":"c1","choices":[{"index":0,"delta":{"content":"\u0073k-east-9 again"}}]}"#;
    server.reply(Reply::Sse(vec![
        Step::Chunk("event: sk-east-9\ndata: {\"id\":\"c0\",\"choices\":[],\"note\":\"sk-east-9\"}\n\n".to_owned()),
        content("the key is sk-east-9"),
        Step::Chunk(format!("{escaped}\n\n")),
        Step::Chunk("event: sk-east-9\ndata: {\"id\":\"c2\",\"choices\":[]}\n\n".to_owned()),
        done(),
        Step::End,
    ]));
    let deployment = deployment(&server).to_builder().api_key(ApiKey::new("sk-east-9")).build().expect("valid");
    let resp = send(&provider(config()), attempt(deployment, streaming(), &chat_body())).await.expect("a stream");
    let (text, error, _) = drain(resp.into_body()).await;
    assert!(error.is_none(), "{error:?}");
    assert!(!text.contains("sk-east-9"), "{text}");
    assert!(text.contains("event: ***\n"), "{text}");
    let events: Vec<_> = text.split("\n\n").filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: "))).collect();
    let contents: Vec<serde_json::Value> =
        events.iter().filter(|d| **d != "[DONE]").map(|d| serde_json::from_str(d).expect("JSON")).collect();
    assert_eq!(contents[0]["note"], "***");
    assert_eq!(contents[1]["choices"][0]["delta"]["content"], "the key is ***");
    assert_eq!(contents[2]["choices"][0]["delta"]["content"], "*** again");
}

#[tokio::test]
async fn an_error_envelope_as_the_first_event_is_classified_from_its_codes() {
    let auth = json!({"error":{"message":"Incorrect API key provided: sk-east.","type":"invalid_request_error","code":"invalid_api_key"}});
    let err = failure_before_content(Reply::Sse(vec![event(auth), Step::End])).await;
    assert_eq!(err.outcome(), Some(Outcome::Auth));
    assert!(!err.message().contains("sk-east"), "{}", err.message());
    let limited = json!({"error":{"message":"slow down","type":"rate_limit_error"}});
    let err = failure_before_content(Reply::Sse(vec![event(limited), Step::End])).await;
    assert_eq!(err.outcome(), Some(Outcome::RateLimited));
}
