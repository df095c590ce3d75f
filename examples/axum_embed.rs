//! The routing stack inside your own axum app, beside your own routes.
//!
//! ```text
//! cargo run --example axum_embed [-- --port 3000]
//! ```
//!
//! Two ways to mount it:
//!
//! - `/v1/chat/completions` and `/v1/embeddings`: [`Router::service`] behind the
//!   [`IngressLayer`], which buffers and parses the body once and turns every failure into an
//!   OpenAI-style answer (the service never fails, as axum requires);
//! - `/custom/chat/completions`: your own request handling in front of the stack, with axum's
//!   `HandleErrorLayer` and [`http_error::error_response`] turning the stack's errors into the same
//!   answers.
//!
//! The provider is the simulator, so this needs no network and no keys. For the whole gateway
//! (auth, metrics, operations) nest `Gateway::router()` instead; see `examples/gateway.rs`.

use std::time::Duration;

use axum::{
    body::Body,
    error_handling::HandleErrorLayer,
    routing::{get, post_service},
};
use bytes::Bytes;
use switchyard::{
    Config, RouteCtx, Router,
    layers::{BoxError, ctx::Endpoint},
    services::{facts_from_json, http_error, ingress::IngressLayer, sim::SimProvider},
};
use tower::{ServiceBuilder, ServiceExt, service_fn};

const CONFIG: &str = r#"
model_list:
  - { model_name: gpt-4o, litellm_params: { model: azure/gpt-4o-eu, rpm: 600 }, model_info: { id: eu } }
  - { model_name: gpt-4o, litellm_params: { model: openai/gpt-4o, rpm: 300 }, model_info: { id: us } }
  - { model_name: text-embedding-3-small, litellm_params: { model: openai/text-embedding-3-small } }
"#;

/// Largest request body the routes accept.
const MAX_BODY: usize = 1 << 20;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let port = match std::env::args().skip_while(|a| a != "--port").nth(1) {
        Some(p) => p.parse::<u16>()?,
        None => 3000,
    };
    let router = Router::from_config(&Config::from_yaml_str(CONFIG)?, SimProvider::new(7))?;

    // 1. The ingress in front of the stack: the usual way.
    let llm = ServiceBuilder::new().layer(IngressLayer::new(MAX_BODY)).service(router.service());

    // 2. Your own request handling: read the body, fill the routing context, call the stack; a
    //    failure (yours or the stack's) becomes an OpenAI-style answer in `HandleErrorLayer`.
    let stack = router.service();
    let custom = ServiceBuilder::new()
        .layer(HandleErrorLayer::new(|err: BoxError| async move { http_error::error_response(&err) }))
        .service(service_fn(move |req: http::Request<Body>| {
            let stack = stack.clone();
            async move {
                let (parts, body) = req.into_parts();
                let bytes: Bytes = axum::body::to_bytes(body, MAX_BODY).await?;
                let (model, facts) = facts_from_json(&bytes, Endpoint::Chat)?;
                let mut req = http::Request::from_parts(parts, bytes);
                req.extensions_mut().insert(RouteCtx::with_facts(model, facts));
                // Bound the whole call (retries and fallbacks included) your own way.
                tokio::time::timeout(Duration::from_secs(30), stack.oneshot(req)).await?
            }
        }));

    let app = axum::Router::new()
        .route("/hello", get(|| async { "hello from my own app\n" }))
        .route("/v1/chat/completions", post_service(llm.clone()))
        .route("/v1/embeddings", post_service(llm))
        .route("/custom/chat/completions", post_service(custom));

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    println!("curl http://{addr}/hello");
    println!(
        "curl -i http://{addr}/v1/chat/completions -H 'content-type: application/json' \
         -d '{{\"model\": \"gpt-4o\", \"messages\": [{{\"role\": \"user\", \"content\": \"hi\"}}]}}'"
    );
    println!(
        "curl -i http://{addr}/custom/chat/completions -d '{{\"model\": \"gpt-5\", \"messages\": []}}'   # 404 listing the groups"
    );
    // `into_make_service` builds the route table once; `axum::serve(listener, app)` would rebuild
    // it for every connection.
    axum::serve(listener, app.into_make_service())
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
