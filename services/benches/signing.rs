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

use std::{
    convert::Infallible,
    sync::atomic::{AtomicUsize, Ordering},
};

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::{BodyExt, Full};
use serde_json::json;
use switchyard_layers::{ApiKey, Deployment, RequestFacts, RouteCtx};
use switchyard_services::provider::{HttpProvider, ProviderConfig};
use tower::{ServiceExt, service_fn};

const OPENAI_ANSWER: &str = r#"{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion","created":1741569952,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":"I'll check the current weather in Paris for you, and then tell you whether an umbrella is a good idea.","tool_calls":[{"id":"call_12345xyz","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":\"celsius\"}"}}],"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":472,"completion_tokens":91,"total_tokens":563}}"#;
const CONVERSE_ANSWER: &str = r#"{"output":{"message":{"role":"assistant","content":[{"text":"I'll check the current weather in Paris for you, and then tell you whether an umbrella is a good idea."},{"toolUse":{"toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q","name":"get_weather","input":{"city":"Paris","unit":"celsius"}}}]}},"stopReason":"tool_use","usage":{"inputTokens":472,"outputTokens":91,"totalTokens":563},"metrics":{"latencyMs":1321}}"#;

/// Requests the transport saw signed with SigV4, to check each case does what it says.
static SIGNED: AtomicUsize = AtomicUsize::new(0);

const BEDROCK_MODEL: &str = "bedrock/us.anthropic.claude-sonnet-4-20250514-v1:0";

fn chat_body() -> Bytes {
    let body = json!({
        "model": "assistant",
        "messages": [
            {"role": "system", "content": "You are a helpful assistant for travellers. Answer briefly, in the language of the question, and use the tools when the answer depends on current conditions."},
            {"role": "user", "content": "What is the weather in Paris today, and should I bring an umbrella? I will be walking around the Marais in the afternoon."}
        ],
        "max_tokens": 512,
        "temperature": 0.2,
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}],
        "tool_choice": "auto"
    });
    Bytes::from(body.to_string())
}

type Answer = std::future::Ready<Result<http::Response<Full<Bytes>>, Infallible>>;

/// The upstream: answers every request at once, a Converse answer to Bedrock's `/converse` and an
/// OpenAI chat completion to anything else.
fn upstream(req: http::Request<Full<Bytes>>) -> Answer {
    let auth = req.headers().get(http::header::AUTHORIZATION).map(http::HeaderValue::as_bytes);
    if auth.is_some_and(|a| a.starts_with(b"AWS4-HMAC-SHA256 ")) {
        SIGNED.fetch_add(1, Ordering::Relaxed);
    }
    let answer = if req.uri().path().ends_with("/converse") { CONVERSE_ANSWER } else { OPENAI_ANSWER };
    let mut resp = http::Response::new(Full::new(Bytes::from_static(answer.as_bytes())));
    resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    std::future::ready(Ok(resp))
}

fn openai() -> Deployment {
    Deployment::builder("assistant", "openai/gpt-4.1")
        .api_base("http://upstream.invalid/v1")
        .api_key(ApiKey::new("sk-bench-key"))
        .build()
        .expect("valid")
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
