//! The cost of Google OAuth2 access tokens per Vertex AI request (issue 20), through the public
//! provider.
//!
//! Attempts of the same chat request (system prompt, a user turn, a tool; about 1 KB) through
//! `HttpProvider` over one in-memory transport that answers at once with a canned whole answer in
//! the deployment's dialect; only the token endpoint is a real server (the mock upstream's
//! `POST /token`, over loopback HTTP, on a runtime of its own):
//!
//! - `attempt/openai`: an OpenAI deployment, the body passed through (the baseline);
//! - `attempt/gemini_api_key`: a Gemini API deployment with a key, so the request and answer are
//!   translated as for Vertex AI's Gemini models, without a token;
//! - `attempt/vertex_cached_token`: a Vertex AI Gemini deployment with a service-account key
//!   whose token was fetched before the measurement, so each attempt finds it cached;
//! - `token_refresh/vertex_refresh`: the same deployment against a token endpoint whose tokens
//!   expire at once (`MockHandle::token_lifetime` under gcp_auth's 20 s margin), so every attempt
//!   refreshes: a JWT signed with the key (RS256) and a `POST /token` answered by the mock.
//!
//! `vertex_cached_token - gemini_api_key` is what a cached token costs per request;
//! `vertex_refresh - vertex_cached_token` is the cost of one refresh (a real token lives an hour,
//! so one refresh per credential per ~59 minutes).
//!
//! ```text
//! cargo bench -p switchyard-services --features vertex,mock --bench vertex_tokens -- --warm-up-time 1 --measurement-time 3
//! ```

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use switchyard_layers::{ApiKey, Deployment, RequestFacts, RouteCtx};
use switchyard_services::{
    mock::{MockHandle, MockProfile, MockUpstream},
    provider::{HttpProvider, ProviderConfig},
};
use tower::{ServiceExt, service_fn};

mod support;
use support::{Answer, OPENAI_ANSWER, chat_body, json_answer, openai};

const GEMINI_ANSWER: &str = r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"I'll check the current weather in Paris for you, and then tell you whether an umbrella is a good idea."},{"functionCall":{"name":"get_weather","args":{"city":"Paris","unit":"celsius"}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":472,"candidatesTokenCount":91,"totalTokenCount":563},"modelVersion":"gemini-2.5-flash","responseId":"mAitaOfXDomvz7IPm8HL2QQ"}"#;

/// The test-only service-account key of `tests/fixtures`.
const KEY: &str = include_str!("../../tests/fixtures/vertex-test-service-account.json");

/// The upstream: a `generateContent` answer to Gemini's and Vertex AI's paths, an OpenAI chat
/// completion to anything else.
fn upstream(req: http::Request<Full<Bytes>>) -> Answer {
    let answer = if req.uri().path().ends_with(":generateContent") { GEMINI_ANSWER } else { OPENAI_ANSWER };
    json_answer(answer)
}

fn gemini() -> Deployment {
    Deployment::builder("assistant", "gemini/gemini-2.5-flash")
        .api_base("http://upstream.invalid")
        .api_key(ApiKey::new("AIza-bench-key"))
        .build()
        .expect("valid")
}

/// A Vertex AI Gemini deployment whose service-account key fetches its tokens from `tokens`.
fn vertex(tokens: &MockHandle) -> Deployment {
    let mut key: Value = serde_json::from_str(KEY).expect("the fixture is JSON");
    key["token_uri"] = Value::String(tokens.token_uri());
    Deployment::builder("assistant", "vertex_ai/gemini-2.5-flash")
        .api_base("http://upstream.invalid")
        .param("vertex_project", json!("bench-project"))
        .param("vertex_location", json!("us-central1"))
        .param("vertex_credentials", Value::String(key.to_string()))
        .build()
        .expect("valid")
}

/// One attempt on `deployment`, its whole answer read.
async fn attempt<P>(provider: &P, deployment: &Arc<Deployment>, body: &Bytes) -> usize
where
    P: tower::Service<http::Request<Bytes>, Response = http::Response<switchyard_layers::RouteBody>> + Clone,
    P::Error: std::fmt::Debug,
{
    let mut ctx = RouteCtx::with_facts("assistant", RequestFacts::new());
    ctx.selected = Some(deployment.clone());
    let mut req = http::Request::new(body.clone());
    req.extensions_mut().insert(ctx);
    let resp = provider.clone().oneshot(req).await.expect("the attempt succeeds");
    assert!(resp.status().is_success(), "{}", resp.status());
    resp.into_body().collect().await.expect("the answer is read").to_bytes().len()
}

fn tokens(c: &mut Criterion) {
    // The token endpoints run on a runtime of their own, as a real one would elsewhere.
    let servers = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    let (lasting, expiring) = {
        let _inside = servers.enter();
        let start = || MockUpstream::start(MockProfile::healthy()).expect("a loopback port");
        (start(), start())
    };
    expiring.token_lifetime(Duration::from_secs(1));

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let transport = service_fn(upstream as fn(http::Request<Full<Bytes>>) -> Answer);
    let provider = HttpProvider::with_transport(transport, ProviderConfig::default());
    let body = chat_body();

    let mut group = c.benchmark_group("attempt");
    for (name, deployment) in
        [("openai", openai()), ("gemini_api_key", gemini()), ("vertex_cached_token", vertex(&lasting))]
    {
        let deployment = Arc::new(deployment);
        rt.block_on(attempt(&provider, &deployment, &body));
        group.bench_function(name, |b| b.to_async(&rt).iter(|| attempt(&provider, &deployment, &body)));
    }
    group.finish();
    assert_eq!(lasting.stats().token_requests, 1, "a cached token is fetched once");

    let mut group = c.benchmark_group("token_refresh");
    let deployment = Arc::new(vertex(&expiring));
    rt.block_on(attempt(&provider, &deployment, &body));
    let before = expiring.stats().token_requests;
    rt.block_on(attempt(&provider, &deployment, &body));
    assert_eq!(expiring.stats().token_requests, before + 1, "every attempt refreshes its token");
    group.bench_function("vertex_refresh", |b| b.to_async(&rt).iter(|| attempt(&provider, &deployment, &body)));
    group.finish();
}

criterion_group!(benches, tokens);
criterion_main!(benches);
