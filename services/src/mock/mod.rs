//! An OpenAI-compatible mock upstream server (axum, on a loopback port) for tests, load
//! benchmarks and the demo: latency profiles, injected failures with `Retry-After`, paced SSE
//! streams with a usage chunk, mid-stream cuts and stalls, all reproducible from a seed.
//!
//! [`MockUpstream::start`] serves a [`MockProfile`] on `127.0.0.1` at a free port and returns a
//! [`MockHandle`]: its [`base_url`](MockHandle::base_url) is an `api_base` for a deployment, it
//! counts and records what it received, and its profile can change while it runs. It serves
//! `POST /v1/chat/completions` (and `/chat/completions`), `/v1/embeddings` (and `/embeddings`),
//! and the Azure paths `/openai/deployments/{name}/chat/completions` and `.../embeddings` (the
//! model defaults to the deployment name). Answers echo the model asked for and report usage:
//! prompt tokens estimated from the request's text (about four characters each), one completion
//! token per content chunk. A stream (`"stream": true`) sends its content chunks paced by the
//! profile's interval, a finish chunk, a usage chunk when `stream_options.include_usage` is true,
//! and `data: [DONE]`.
//!
//! Behind the `mock` cargo feature.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use bytes::Bytes;
//! use http_body_util::{BodyExt, Full};
//! use hyper_util::{client::legacy::Client, rt::TokioExecutor};
//! use switchyard_services::{mock::{MockProfile, MockUpstream}, openai::ChatCompletion};
//!
//! let upstream = MockUpstream::start(MockProfile::healthy())?;
//! let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
//! let req = http::Request::post(format!("{}/chat/completions", upstream.base_url()))
//!     .header("content-type", "application/json")
//!     .body(Full::new(Bytes::from_static(br#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}"#)))?;
//! let body = client.request(req).await?.into_body().collect().await?.to_bytes();
//! let answer: ChatCompletion = serde_json::from_slice(&body)?;
//! assert_eq!(answer.model, "gpt-4o");
//! assert_eq!(upstream.requests(), 1);
//! upstream.shutdown().await;
//! # Ok(()) }
//! ```

mod answer;
mod profile;
mod server;

pub use profile::{MockConfigError, MockProfile, MockProfileBuilder};
pub use server::{MockHandle, MockStats, MockUpstream, RecordedRequest};
