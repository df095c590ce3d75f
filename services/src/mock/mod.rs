//! A mock upstream server speaking OpenAI's and Anthropic's APIs (axum, on a loopback port) for
//! tests, load benchmarks and the demo: latency profiles, injected failures with `Retry-After`,
//! paced SSE streams with a usage chunk, mid-stream cuts, errors and stalls, all reproducible from
//! a seed.
//!
//! Its [`MockProfile`] speaks the [shared vocabulary](crate::profile) of the simulated upstreams
//! (latency, failures by kind with `Retry-After`, stream shape), named as the in-process
//! simulator's, plus what only an HTTP server can do: wire-level stream faults, failures of any
//! status with a custom error code, connection resets.
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
//! It also speaks Anthropic's Messages API at `POST /v1/messages` (and `/messages`; the
//! deployment's `api_base` is [`origin`](MockHandle::origin)), checking requests as strictly as
//! Anthropic does: `x-api-key` (401 `authentication_error` without it) and `anthropic-version`
//! headers, `model`, `max_tokens` and non-empty `messages` of roles `user` and `assistant` (a
//! `system` message is refused, naming the top-level `system` parameter), and only the documented
//! body fields (another one is `400 "<field>: Extra inputs are not permitted"`; the beta ones,
//! `context_management`, `mcp_servers`, ..., only with an `anthropic-beta` header). As the API
//! does today, consecutive turns of one role are accepted (the API combines them) and so is a
//! first `assistant` turn. Refusals, like injected failures, answer Anthropic's error shape
//! `{"type":"error","error":{"type":...,"message":...}}`; a `529` failure is `overloaded_error`, a
//! `429` one also sends `anthropic-ratelimit-requests-remaining: 0` and
//! `anthropic-ratelimit-requests-reset`. The answer is a `message` with the same text as the
//! OpenAI side (one output token per chunk); a `thinking` block first when `thinking` is on; a
//! `tool_use` block (input `{"mock":true}`) when `tool_choice` forces a tool; cut by
//! `stop_sequences` or `max_tokens` with the matching `stop_reason`. A stream sends
//! `message_start`, `content_block_start`, `ping`, the deltas paced by the profile's interval,
//! `content_block_stop`, `message_delta` and `message_stop`. Both dialects draw from the same
//! profile in the same order, so one profile drives both.
//!
//! And OpenAI's Responses API at `POST /v1/responses` (and `/responses`), with `GET`, `DELETE`
//! `/v1/responses/{id}` and `POST /v1/responses/{id}/cancel`: the same text and draws, OpenAI's
//! event stream, and the responses kept per server for `previous_response_id`
//! ([`MockHandle::stored_response_ids`], [`MockHandle::stored_response`],
//! [`MockStats::response_continuations`]); see the `responses` routes' docs.
//!
//! And AWS Bedrock Runtime at `POST /model/{modelId}/converse`, `/converse-stream` (AWS
//! event-stream frames) and `/invoke` (Titan and Cohere embeddings), SigV4 or API-key
//! authentication ([`BedrockAuth`], [`MockHandle::set_bedrock_auth`]) and AWS's
//! `x-amzn-errortype` errors; see the `bedrock` routes' docs.
//!
//! And Google's Gemini API at `POST /v1beta/models/{model}:generateContent`,
//! `:streamGenerateContent` (`?alt=sse` or a JSON array), `:embedContent` and
//! `:batchEmbedContents` (key in `x-goog-api-key` or `?key=`, Google's error bodies, `RetryInfo` on
//! a 429), and Cohere's v2 API at `POST /v2/chat` (Cohere's event stream with `"stream": true`) and
//! `POST /v2/embed` (bearer key, `{"id","message"}` errors): the same text and draws; see the
//! `gemini` and `cohere` routes' docs.
//!
//! And Vertex AI: a Google OAuth2 token endpoint at `POST /token` (the JWT-bearer grant of a
//! service-account key, [`MockHandle::token_uri`], [`MockStats::token_requests`],
//! [`MockHandle::refuse_tokens`]) and `POST /v1/projects/{p}/locations/{l}/publishers/google/
//! models/{model}:{method}` (the Gemini methods) and `.../publishers/anthropic/models/{model}:
//! rawPredict` / `:streamRawPredict` (Claude's Messages API as Vertex takes it), each with the
//! bearer token it issued; see the `vertex` routes' docs.
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
//!
//! The same server, asked in Anthropic's dialect:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use bytes::Bytes;
//! use http_body_util::{BodyExt, Full};
//! use hyper_util::{client::legacy::Client, rt::TokioExecutor};
//! use switchyard_services::mock::{MockProfile, MockUpstream};
//!
//! let upstream = MockUpstream::start(MockProfile::healthy())?;
//! let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
//! let req = http::Request::post(format!("{}/v1/messages", upstream.origin()))
//!     .header("content-type", "application/json")
//!     .header("x-api-key", "sk-ant-test")
//!     .header("anthropic-version", "2023-06-01")
//!     .body(Full::new(Bytes::from_static(
//!         br#"{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}"#,
//!     )))?;
//! let body = client.request(req).await?.into_body().collect().await?.to_bytes();
//! let answer: serde_json::Value = serde_json::from_slice(&body)?;
//! assert_eq!(answer["type"], "message");
//! assert_eq!(answer["model"], "claude-sonnet-4-5");
//! assert_eq!(upstream.last_request().map(|r| r.path).as_deref(), Some("/v1/messages"));
//! upstream.shutdown().await;
//! # Ok(()) }
//! ```

mod answer;
mod anthropic;
mod bedrock;
mod cohere;
mod gemini;
mod listener;
mod profile;
mod responses;
mod server;
mod vertex;

pub use bedrock::BedrockAuth;
pub use profile::{MockProfile, MockProfileBuilder};
pub use responses::StoredResponse;
pub use server::{MockHandle, MockStats, MockUpstream, RecordedRequest};
