//! The simulated upstream: [`SimProvider`] answers attempts like an OpenAI-compatible server,
//! with per-deployment latencies, streams and failure rates ([`SimProfile`], in the
//! [vocabulary](crate::profile) it shares with the HTTP mock), on tokio's clock so paused-clock
//! tests run instantly and deterministically.
//!
//! The provider reads the deployment chosen for the attempt (`RouteCtx::selected`) and the
//! request facts (stream flag, endpoint, input tokens); it never reads the request body. Failures
//! are built as real OpenAI error answers and classified by
//! [`switchyard_layers::outcome::classify`], so the simulator exercises the real classifier.
//! Streams resolve at their first content chunk and send the rest, a usage chunk and
//! `data: [DONE]` through the body; a broken stream ends its body with an error.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use std::{sync::Arc, time::Duration};
//! use bytes::Bytes;
//! use tower::ServiceExt;
//! use switchyard_layers::{Deployment, Outcome, RouteCtx, RouteError};
//! use switchyard_services::{profile::Failure, sim::{SimProfile, SimProvider}};
//!
//! let throttled = SimProfile::builder()
//!     .fail(Failure::RateLimited, 1.0)
//!     .retry_after(Duration::from_secs(3))
//!     .build()?;
//! let sim = SimProvider::new(42).profile("east", throttled);
//!
//! // Normally the select layer sets `selected`; here the test does.
//! let mut ctx = RouteCtx::new("gpt-4o");
//! ctx.selected = Some(Arc::new(Deployment::builder("gpt-4o", "openai/gpt-4o").id("east").build()?));
//! let mut req = http::Request::new(Bytes::new());
//! req.extensions_mut().insert(ctx);
//!
//! let err = sim.clone().oneshot(req).await.expect_err("always 429");
//! let err = RouteError::find(&*err).expect("a routing error");
//! assert_eq!(err.outcome(), Some(Outcome::RateLimited));
//! assert_eq!(err.retry_after(), Some(Duration::from_secs(3)));
//! assert_eq!(sim.stats().calls("east"), 1);
//! # Ok(()) }
//! ```

mod failure;
mod profile;
mod reply;
mod service;
mod stats;
mod stream;

pub use profile::{SimProfile, SimProfileBuilder};
pub use service::SimProvider;
pub use stats::{DeploymentStats, SimStats};
