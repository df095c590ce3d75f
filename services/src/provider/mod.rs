//! The real provider: [`HttpProvider`] sends each attempt to the deployment the select layer
//! chose (`RouteCtx::selected`), over OpenAI's HTTP API or Azure OpenAI's, and classifies the
//! result into an `Outcome` with `switchyard_layers::outcome::classify`, exactly once.
//!
//! Per attempt, the upstream request is built from the selected deployment alone:
//!
//! - **URL**: `api_base` (or the provider's default base, see [`SUPPORTED_PROVIDERS`]) plus
//!   `/chat/completions`, `/completions` or `/embeddings`. A host-only `api_base`
//!   (`http://vllm:8000`) gets `/v1`; a base with a path is used as given. Azure:
//!   `{api_base}/openai/deployments/{name}/chat/completions?api-version={api_version}`, the
//!   name percent-encoded as one segment; an empty name or one holding a `.` / `..` segment (a
//!   client's choice in an `azure/*` group) is refused as an invalid request, nothing sent.
//! - **Headers**: only [`FORWARDED_HEADERS`] pass from the client (never its `authorization` or
//!   `api-key`); the deployment's key goes as `Authorization: Bearer` (Azure: `api-key`), then
//!   its `extra_headers`.
//! - **Body**: `model` becomes the provider model without its prefix (Azure: the deployment
//!   name), the deployment's params are merged as defaults (the request wins, [`CLIENT_PARAMS`]
//!   excluded), [`ROUTING_KEYS`] are removed, and a stream asks for
//!   `stream_options.include_usage`.
//!
//! Every answer and stream event that leaves has the deployment's credentials masked. Non-2xx
//! answers, 2xx error envelopes (`{"error": ...}` without `choices` / `data` / `object`),
//! connect failures (nothing sent: [`Outcome::Connect`]), broken exchanges
//! ([`Outcome::Transport`]) and timeouts ([`Outcome::Timeout`]) are `Err(RouteError)` naming
//! the deployment, with the upstream status, body and `Retry-After` when there is one. A
//! streaming attempt resolves at its first content chunk; after that point, an upstream failure
//! ends the body with an OpenAI-style error event and then an `Err`. `docs/providers.md` has the
//! full rules.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use std::{sync::Arc, time::Duration};
//! use bytes::Bytes;
//! use tower::ServiceExt;
//! use switchyard_layers::{ApiKey, Deployment, Outcome, RouteCtx, RouteError};
//! use switchyard_services::provider::{HttpProvider, ProviderConfig};
//!
//! let provider = HttpProvider::new(ProviderConfig::default().timeout(Duration::from_secs(30)))?;
//!
//! // Normally the select layer sets `selected`. Nothing listens on port 9 here.
//! let deployment = Deployment::builder("gpt-4o", "openai/gpt-4o")
//!     .api_base("http://127.0.0.1:9/v1")
//!     .api_key(ApiKey::new("sk-deployment-key"))
//!     .build()?;
//! let mut ctx = RouteCtx::new("gpt-4o");
//! ctx.selected = Some(Arc::new(deployment));
//! let body = r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}"#;
//! let mut req = http::Request::new(Bytes::from(body));
//! req.extensions_mut().insert(ctx);
//!
//! let err = provider.oneshot(req).await.expect_err("nothing listens there");
//! let err = RouteError::find(&*err).expect("a routing error");
//! assert_eq!(err.outcome(), Some(Outcome::Connect)); // nothing was sent: safe to try elsewhere
//! # Ok(()) }
//! ```
//!
//! [`Outcome::Connect`]: switchyard_layers::Outcome::Connect
//! [`Outcome::Transport`]: switchyard_layers::Outcome::Transport
//! [`Outcome::Timeout`]: switchyard_layers::Outcome::Timeout

mod catalog;
mod config;
mod error;
mod headers;
mod members;
mod mocked;
mod request;
mod response;
mod service;
#[cfg(feature = "bedrock")]
mod sigv4;
mod stream;
mod transport;
mod url;
mod vertex;

pub use catalog::{SUPPORTED_PROVIDERS, supports_provider};
pub use config::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_STREAM_TIMEOUT, DEFAULT_TIMEOUT, ProviderConfig,
};
pub use error::ProviderError;
pub use request::{
    ANTHROPIC_DEFAULT_MAX_TOKENS, AZURE_DEFAULT_API_VERSION, AZURE_RESPONSES_API_VERSION, CLIENT_PARAMS,
    CONNECTION_HEADERS, FORWARDED_HEADERS, METADATA_ROUTING_KEYS, ROUTING_KEYS, has_token_counter,
};
pub use service::HttpProvider;
pub use transport::HttpsTransport;
