//! The upstream request: URL, headers and body per provider, and key isolation.

use http::header;
use serde_json::json;
use switchyard_layers::{ApiKey, Deployment, RequestFacts, Usage, ctx::Endpoint};
use switchyard_services::provider::ProviderConfig;

use crate::support::{Reply, Server, Step, attempt, chat_body, content, done, provider, send, streaming};

const COMPLETION: &str = r#"{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o",
    "choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],
    "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#;

#[tokio::test]
async fn openai_request_is_rewritten_for_the_deployment() {
    let server = Server::start().await;
    server.reply(Reply::json(200, COMPLETION));
    let deployment = Deployment::builder("gpt-4o", "openai/gpt-4o-2024-08-06")
        .api_base(format!("{}/v1", server.base()))
        .api_key(ApiKey::new("sk-deployment-a"))
        .param("temperature", json!(0.1))
        .param("max_tokens", json!(50))
        .param("extra_headers", json!({"x-team": "blue"}))
        .param("organization", json!("org-42"))
        .build()
        .expect("valid deployment");
    let mut body = chat_body();
    body["temperature"] = json!(0.9);
    body["metadata"] = json!({"tags": ["eu"], "session_id": "s1"});
    body["fallbacks"] = json!(["gpt-4o-mini"]);
    body["context_window_fallbacks"] = json!([{"gpt-4o": ["gpt-4o-long"]}]);
    body["num_retries"] = json!(2);
    body["disable_fallbacks"] = json!(false);
    body["tags"] = json!(["eu"]);
    body["allowed_model_region"] = json!("eu");
    body["timeout"] = json!(30);
    body["request_timeout"] = json!(30);
    body["stream_timeout"] = json!(2.5);
    body["api_key"] = json!("sk-client-in-body");
    body["api_base"] = json!("http://elsewhere.invalid");
    let mut req = attempt(deployment, RequestFacts::new(), &body);
    let headers = req.headers_mut();
    headers.insert(header::AUTHORIZATION, "Bearer sk-client-key".parse().expect("header"));
    headers.insert("api-key", "client-azure-key".parse().expect("header"));
    headers.insert(header::COOKIE, "session=1".parse().expect("header"));
    headers.insert(header::ACCEPT_ENCODING, "gzip".parse().expect("header"));
    headers.insert("x-request-id", "req-7".parse().expect("header"));
    headers.insert("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".parse().expect("header"));

    let resp = send(&provider(ProviderConfig::default()), req).await.expect("a 200 answer");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
    assert_eq!(resp.body().usage(), Some(Usage::new(12, 3)));

    let seen = server.request().await;
    assert_eq!((seen.method.as_str(), seen.target.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(seen.header("authorization"), Some("Bearer sk-deployment-a"));
    assert_eq!(seen.header("api-key"), None, "the client's Azure key is not forwarded");
    assert_eq!(seen.header("cookie"), None);
    assert_eq!(seen.header("accept-encoding"), None);
    assert_eq!(seen.header("x-request-id"), Some("req-7"));
    assert!(seen.header("traceparent").is_some());
    assert_eq!(seen.header("x-team"), Some("blue"));
    assert_eq!(seen.header("openai-organization"), Some("org-42"));
    assert_eq!(seen.header("content-type"), Some("application/json"));
    let sent = seen.json();
    assert_eq!(sent["model"], "gpt-4o-2024-08-06");
    assert_eq!(sent["temperature"], 0.9, "the request's value wins over the deployment's");
    assert_eq!(sent["max_tokens"], 50, "the deployment's params are defaults");
    for key in [
        "metadata",
        "fallbacks",
        "context_window_fallbacks",
        "num_retries",
        "disable_fallbacks",
        "tags",
        "allowed_model_region",
        "timeout",
        "request_timeout",
        "stream_timeout",
        "api_key",
        "api_base",
        "extra_headers",
        "organization",
        "stream_options",
    ] {
        assert!(sent.get(key).is_none(), "`{key}` must not go upstream: {sent}");
    }
}

#[tokio::test]
async fn streaming_request_asks_for_usage() {
    let server = Server::start().await;
    server.reply(Reply::Sse(vec![content("hi"), done(), Step::End]));
    let deployment = Deployment::builder("gpt-4o", "hosted_vllm/meta-llama/Llama-3.1-8B")
        .api_base(server.base())
        .build()
        .expect("valid deployment");
    let mut body = chat_body();
    body["stream_options"] = json!({"include_usage": false, "continuous_usage_stats": true});
    send(&provider(ProviderConfig::default()), attempt(deployment, streaming(), &body)).await.expect("a stream");

    let seen = server.request().await;
    assert_eq!(seen.target, "/v1/chat/completions", "a host-only api_base gets /v1");
    assert_eq!(seen.header("authorization"), None, "no key, no auth header");
    let sent = seen.json();
    assert_eq!(sent["model"], "meta-llama/Llama-3.1-8B");
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"], json!({"include_usage": true, "continuous_usage_stats": true}));
}

#[tokio::test]
async fn azure_request_uses_the_deployment_url_and_api_key() {
    let server = Server::start().await;
    server.reply(Reply::json(200, COMPLETION));
    let deployment = Deployment::builder("gpt-4o", "azure/gpt-4o-eu")
        .api_base(format!("{}/", server.base()))
        .api_key(ApiKey::new("azure-key-1"))
        .api_version("2024-06-01")
        .build()
        .expect("valid deployment");
    let mut req = attempt(deployment, RequestFacts::new(), &chat_body());
    req.headers_mut().insert(header::AUTHORIZATION, "Bearer sk-client".parse().expect("header"));
    send(&provider(ProviderConfig::default()), req).await.expect("a 200 answer");

    let seen = server.request().await;
    assert_eq!(seen.target, "/openai/deployments/gpt-4o-eu/chat/completions?api-version=2024-06-01");
    assert_eq!(seen.header("api-key"), Some("azure-key-1"));
    assert_eq!(seen.header("authorization"), None, "Azure takes `api-key`; the client's bearer is dropped");
    assert_eq!(seen.json()["model"], "gpt-4o-eu");
}

#[tokio::test]
async fn embeddings_go_to_the_embeddings_path_and_report_prompt_usage() {
    let server = Server::start().await;
    let answer = r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],
        "model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}"#;
    server.reply(Reply::json(200, answer));
    let deployment = Deployment::builder("embed", "openai/text-embedding-3-small")
        .api_base(format!("{}/v1/", server.base()))
        .api_key(ApiKey::new("k"))
        .build()
        .expect("valid deployment");
    let facts = RequestFacts::new().endpoint(Endpoint::Embedding);
    let body = json!({"model": "embed", "input": "hello"});
    let resp = send(&provider(ProviderConfig::default()), attempt(deployment, facts, &body)).await.expect("an answer");
    assert_eq!(resp.body().usage(), Some(Usage::new(8, 0)));

    let seen = server.request().await;
    assert_eq!(seen.target, "/v1/embeddings");
    assert_eq!(seen.json()["model"], "text-embedding-3-small");
}

#[tokio::test]
async fn each_deployment_key_reaches_only_its_own_host() {
    let (east, west) = (Server::start().await, Server::start().await);
    let provider = provider(ProviderConfig::default());
    let dep = |server: &Server, key: &str| {
        Deployment::builder("gpt-4o", "openai/gpt-4o")
            .api_base(format!("{}/v1", server.base()))
            .api_key(ApiKey::new(key))
            .build()
            .expect("valid deployment")
    };
    let (a, b) = (dep(&east, "sk-east-only"), dep(&west, "sk-west-only"));
    // The same provider clone alternates between the two, over pooled connections.
    for _round in 0..3 {
        for (server, deployment, own, other) in
            [(&east, &a, "Bearer sk-east-only", "sk-west-only"), (&west, &b, "Bearer sk-west-only", "sk-east-only")]
        {
            server.reply(Reply::json(200, COMPLETION));
            let mut req = attempt(deployment.clone(), RequestFacts::new(), &chat_body());
            req.headers_mut().insert(header::AUTHORIZATION, "Bearer sk-client".parse().expect("header"));
            send(&provider, req).await.expect("a 200 answer");
            let seen = server.request().await;
            assert_eq!(seen.header("authorization"), Some(own));
            let raw = format!("{:?} {}", seen.headers, String::from_utf8_lossy(&seen.body));
            assert!(!raw.contains(other), "another deployment's key leaked: {raw}");
            assert!(!raw.contains("sk-client"), "the client's key leaked: {raw}");
        }
    }
    assert!(east.requests_so_far().await.is_empty() && west.requests_so_far().await.is_empty());
}

#[tokio::test]
async fn only_the_first_value_of_each_forwarded_header_goes_upstream() {
    let server = Server::start().await;
    server.reply(Reply::json(200, COMPLETION));
    let deployment = Deployment::builder("gpt-4o", "openai/gpt-4o")
        .api_base(format!("{}/v1", server.base()))
        .build()
        .expect("valid deployment");
    let mut req = attempt(deployment, RequestFacts::new(), &chat_body());
    let long = "x".repeat(2014);
    let headers = req.headers_mut();
    for (name, first, second) in [
        ("x-request-id", "req-1", long.as_str()),
        ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "garbage"),
        ("user-agent", "client/1", "client/2"),
        ("accept", "application/json", "text/html"),
    ] {
        headers.append(name, first.parse().expect("header"));
        headers.append(name, second.parse().expect("header"));
    }
    send(&provider(ProviderConfig::default()), req).await.expect("a 200 answer");

    let seen = server.request().await;
    for (name, first) in [
        ("x-request-id", "req-1"),
        ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
        ("user-agent", "client/1"),
        ("accept", "application/json"),
    ] {
        let values: Vec<&str> = seen.headers.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect();
        assert_eq!(values, [first], "`{name}` goes upstream once, with its first value");
    }
}

/// An Azure wildcard group (`model_name: azure/*`, `model: azure/*`) behind the cooldown and
/// select layers, its one deployment `wild` pointing at `server`.
fn azure_wildcard_stack(
    server: &Server,
) -> (
    impl tower::Service<
        http::Request<bytes::Bytes>,
        Response = http::Response<switchyard_layers::RouteBody>,
        Error = switchyard_layers::BoxError,
        Future: Send,
    > + Clone,
    std::sync::Arc<switchyard_layers::StateStore>,
) {
    use std::sync::Arc;
    use switchyard_layers::{
        Registry, StateStore,
        cooldown::{CooldownConfig, CooldownLayer},
        select::{RoutingStrategy, SelectLayer},
    };
    let registry = Arc::new(Registry::new());
    let wild = Deployment::builder("azure/*", "azure/*")
        .id("wild")
        .api_base(server.base())
        .api_key(ApiKey::new("azure-key-1"))
        .build()
        .expect("valid deployment");
    registry.add(wild).expect("added");
    let store = Arc::new(StateStore::memory());
    // Any failure that counts against a deployment benches it at once.
    let cooldown = CooldownConfig::new().allowed_fails(Some(0));
    let stack = tower::ServiceBuilder::new()
        .layer(CooldownLayer::new(registry.clone(), store.clone(), cooldown))
        .layer(SelectLayer::new(registry, store.clone(), RoutingStrategy::SimpleShuffle.build()))
        .service(provider(ProviderConfig::default()));
    (stack, store)
}

#[tokio::test]
async fn a_dot_segment_as_an_azure_deployment_name_is_refused_before_any_upstream_call() {
    use switchyard_layers::{RouteCtx, RouteError, RouteErrorKind};
    use tower::ServiceExt;
    let server = Server::start().await;
    let (stack, store) = azure_wildcard_stack(&server);
    let call = |model: &str| {
        let mut req = http::Request::new(bytes::Bytes::from(json!({"model": model, "messages": []}).to_string()));
        req.extensions_mut().insert(RouteCtx::new(model));
        stack.clone().oneshot(req)
    };
    for model in
        ["azure/..", "azure/.", "azure/%2e%2e", "azure/%2E.", "azure/a/../b", "azure/./b", "azure/a\\..\\b", "azure/"]
    {
        let err = call(model).await.map(|r| r.status()).expect_err("refused");
        let err = RouteError::find(&*err).expect("a routing error");
        assert_eq!(err.kind(), RouteErrorKind::InvalidRequest, "{model}: {err}");
        assert_eq!(err.outcome(), None, "{model}: not a deployment's failure");
        assert!(err.message().contains(model.trim_start_matches("azure/")), "{model}: {}", err.message());
    }
    assert!(server.requests_so_far().await.is_empty(), "nothing reached the upstream");
    let benched = store.cooldowns(&["wild".into()]).await;
    assert!(benched[0].is_none(), "the deployment is not benched: {benched:?}");

    // Names that are not dot segments are percent-encoded into one path segment.
    for (model, target) in [
        ("azure/gpt-4o", "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"),
        ("azure/a/b?c#d%e", "/openai/deployments/a%2Fb%3Fc%23d%25e/chat/completions?api-version=2024-10-21"),
        ("azure/..a", "/openai/deployments/..a/chat/completions?api-version=2024-10-21"),
    ] {
        server.reply(Reply::json(200, COMPLETION));
        call(model).await.expect("a 200 answer");
        assert_eq!(server.request().await.target, target, "{model}");
    }
}
