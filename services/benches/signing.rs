//! The cost of SigV4 signing per Bedrock request (issue 20), through the public provider.
//!
//! Three attempts of the same chat request (system prompt, a user turn, a tool; about 1 KB)
//! through `HttpProvider` over one in-memory transport that answers at once with a canned whole
//! answer in the deployment's dialect:
//!
//! - `openai`: an OpenAI deployment, the body passed through (the baseline);
//! - `bedrock_bearer`: a Bedrock deployment with an API key, so the request and answer are
//!   translated but not signed;
//! - `bedrock_sigv4`: the same deployment with access keys, so the request is also signed.
//!
//! `bedrock_sigv4 - bedrock_bearer` is the signing cost per request; `bedrock_bearer - openai` is
//! what translating the request and the answer adds to an attempt.
//!
//! ```text
//! cargo bench -p switchyard-services --features bedrock --bench signing -- --warm-up-time 1 --measurement-time 3
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::{BodyExt, Full};
use serde_json::json;
use switchyard_layers::{ApiKey, Deployment, RequestFacts, RouteCtx};
use switchyard_services::provider::{HttpProvider, ProviderConfig};
use tower::{ServiceExt, service_fn};

mod support;
use support::{Answer, OPENAI_ANSWER, chat_body, json_answer, openai};

const CONVERSE_ANSWER: &str = r#"{"output":{"message":{"role":"assistant","content":[{"text":"I'll check the current weather in Paris for you, and then tell you whether an umbrella is a good idea."},{"toolUse":{"toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q","name":"get_weather","input":{"city":"Paris","unit":"celsius"}}}]}},"stopReason":"tool_use","usage":{"inputTokens":472,"outputTokens":91,"totalTokens":563},"metrics":{"latencyMs":1321}}"#;

/// Requests the transport saw signed with SigV4, to check each case does what it says.
static SIGNED: AtomicUsize = AtomicUsize::new(0);

const BEDROCK_MODEL: &str = "bedrock/us.anthropic.claude-sonnet-4-20250514-v1:0";

/// The upstream: answers every request at once, a Converse answer to Bedrock's `/converse` and an
/// OpenAI chat completion to anything else.
fn upstream(req: http::Request<Full<Bytes>>) -> Answer {
    let auth = req.headers().get(http::header::AUTHORIZATION).map(http::HeaderValue::as_bytes);
    if auth.is_some_and(|a| a.starts_with(b"AWS4-HMAC-SHA256 ")) {
        SIGNED.fetch_add(1, Ordering::Relaxed);
    }
    let answer = if req.uri().path().ends_with("/converse") { CONVERSE_ANSWER } else { OPENAI_ANSWER };
    json_answer(answer)
}

fn bedrock_bearer() -> Deployment {
    Deployment::builder("assistant", BEDROCK_MODEL)
        .api_key(ApiKey::new("bedrock-api-key"))
        .param("aws_region_name", json!("us-east-1"))
        .build()
        .expect("valid")
}

fn bedrock_sigv4() -> Deployment {
    Deployment::builder("assistant", BEDROCK_MODEL)
        .param("aws_access_key_id", json!("AKIDEXAMPLE"))
        .param("aws_secret_access_key", json!("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"))
        .param("aws_region_name", json!("us-east-1"))
        .build()
        .expect("valid")
}

/// One attempt on `deployment`, its whole answer read.
async fn attempt<P>(provider: &P, deployment: &std::sync::Arc<Deployment>, body: &Bytes) -> usize
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

fn signing(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let transport = service_fn(upstream as fn(http::Request<Full<Bytes>>) -> Answer);
    let provider = HttpProvider::with_transport(transport, ProviderConfig::default());
    let body = chat_body();
    let mut group = c.benchmark_group("attempt");
    for (name, deployment) in
        [("openai", openai()), ("bedrock_bearer", bedrock_bearer()), ("bedrock_sigv4", bedrock_sigv4())]
    {
        let deployment = std::sync::Arc::new(deployment);
        let before = SIGNED.load(Ordering::Relaxed);
        rt.block_on(attempt(&provider, &deployment, &body));
        let signed = SIGNED.load(Ordering::Relaxed) > before;
        assert_eq!(signed, name == "bedrock_sigv4", "{name}: signed {signed}");
        group.bench_function(name, |b| b.to_async(&rt).iter(|| attempt(&provider, &deployment, &body)));
    }
    group.finish();
}

criterion_group!(benches, signing);
criterion_main!(benches);
