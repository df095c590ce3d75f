//! The HTTP ingress: turns any `http::Request<B>` (axum's `Body`, hyper's `Incoming`, ...) into the
//! `http::Request<Bytes>` a routing stack needs, and every failure into an OpenAI-style answer.
//!
//! Per request, [`Ingress`]:
//! 1. refuses anything but `POST` (405) and paths that name no endpoint (404); the end of the path
//!    names the endpoint (`/v1/chat/completions` and `/chat/completions` are chat,
//!    `/v1/completions` completion, `/v1/embeddings` embedding), or [`IngressLayer::endpoint`]
//!    fixes it;
//! 2. refuses a content type other than JSON (415, a missing one included: see
//!    [`is_json_content_type`]);
//! 3. buffers the body up to [`IngressLayer::max_body_bytes`] (413 beyond, before reading when
//!    the length is announced), so every retry and fallback below replays the same `Bytes`;
//! 4. parses the JSON once with [`facts_from_json`](crate::openai::facts_from_json) (400 naming
//!    the problem) and inserts `RouteCtx::with_facts(model, facts)` into the extensions. Every other
//!    extension and header stays (a user layer's data, `traceparent`, ...). A body carrying a
//!    client-side credential ([`CLIENT_CREDENTIAL_KEYS`](crate::openai::CLIENT_CREDENTIAL_KEYS):
//!    `api_key`, `api_base`, `base_url`, however escaped) is refused in the same parse (400
//!    `client_credentials_not_allowed` naming the key): endpoints and keys come from the config;
//! 5. gives the request one `x-request-id`: the client's first value when it is
//!    [acceptable](acceptable_request_id), else 128 random bits in hex; and echoes
//!    the id on the answer;
//! 6. calls the inner stack, and turns its error, if any, into an answer with
//!    [`http_error::error_response`](crate::http_error::error_response).
//!
//! Azure-style paths, `/openai/deployments/{name}/chat/completions` (and `.../embeddings`), are
//! served too: when the body has no `model`, the deployment name in the path becomes the body's
//! `model`, so every layer and provider below sees a standard OpenAI body.
//!
//! The service is infallible (`Error = Infallible`), which is what axum requires of a route, and
//! its answers are `http::Response<RouteBody>`, streams included. The error that caused an error
//! answer is kept in its extensions as an [`ErrorCause`](crate::http_error::ErrorCause) for logs and
//! metrics. Users who want the inner `BoxError` themselves skip the ingress and map errors with
//! [`http_error::error_response`](crate::http_error::error_response) where they choose.
//!
//! `poll_ready` passes the inner stack's backpressure through and the ready service is taken
//! for the call (`mem::replace`), so a limit inside the ingress counts a request from the moment
//! its body starts to arrive; process-level limits belong outside the ingress.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use bytes::Bytes;
//! use http_body_util::Full;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use switchyard_layers::{BoxError, RouteBody, RouteRequest};
//! use switchyard_services::ingress::IngressLayer;
//!
//! // The routing stack: here, one that answers with the model group it was asked for.
//! let stack = service_fn(|req: http::Request<Bytes>| async move {
//!     let group = req.route_ctx().map(|ctx| ctx.requested().to_owned()).unwrap_or_default();
//!     Ok::<_, BoxError>(http::Response::new(RouteBody::from(group)))
//! });
//! let app = ServiceBuilder::new().layer(IngressLayer::new(1 << 20)).service(stack);
//!
//! let req = http::Request::post("/v1/chat/completions")
//!     .header("content-type", "application/json")
//!     .body(Full::new(Bytes::from_static(br#"{"model":"gpt-4o","messages":[]}"#)))
//!     .unwrap();
//! let resp = app.clone().oneshot(req).await.unwrap();
//! assert_eq!(resp.status(), 200);
//! assert!(resp.headers().contains_key("x-request-id"));
//!
//! let req = http::Request::post("/v1/chat/completions")
//!     .header("content-type", "application/json")
//!     .body(Full::new(Bytes::from_static(b"{oops")))
//!     .unwrap();
//! let resp = app.oneshot(req).await.unwrap();
//! assert_eq!(resp.status(), 400);
//! # }
//! ```

mod error;
mod layer;
mod prefix;
mod read;
mod service;

pub use error::IngressError;
pub use layer::IngressLayer;
pub use read::{MIN_QUALITY_TIER_HEADER, is_json_content_type};
pub use service::Ingress;

/// The request-id header the ingress reads, sets when absent, and echoes on the answer.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Longest client-chosen request id kept; a longer one is replaced.
pub const MAX_REQUEST_ID_LEN: usize = 128;

/// Whether a client's `x-request-id` value is kept: 1 to [`MAX_REQUEST_ID_LEN`] printable ASCII
/// characters (it goes into logs and upstream). Only the first value of the header is read, and
/// only one is ever passed on.
///
/// ```
/// use http::HeaderValue;
/// use switchyard_services::ingress::acceptable_request_id;
/// assert!(acceptable_request_id(&HeaderValue::from_static("req-123")));
/// assert!(!acceptable_request_id(&HeaderValue::from_static("has space")));
/// assert!(!acceptable_request_id(&HeaderValue::from_str(&"x".repeat(200)).unwrap()));
/// ```
pub fn acceptable_request_id(value: &http::HeaderValue) -> bool {
    let b = value.as_bytes();
    !b.is_empty() && b.len() <= MAX_REQUEST_ID_LEN && b.iter().all(u8::is_ascii_graphic)
}
