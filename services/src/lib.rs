//! Switchyard's provider services: OpenAI wire types ([`openai`]) and a simulated upstream
//! ([`sim`]) that streams, fails and stalls like a real one, for tests, benchmarks and the demo,
//! described in the [`profile`] vocabulary it shares with the HTTP mock upstream (feature `mock`).
//! A provider is the innermost `Service` of a Switchyard stack: it sends each attempt to the
//! deployment the select layer chose (`RouteCtx::selected`) and returns an
//! `http::Response<RouteBody>` or a classified `RouteError`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use http_body_util::BodyExt;
//! use tower::{ServiceBuilder, ServiceExt};
//! use switchyard_layers::{Deployment, Registry, RouteCtx, StateStore, select::{RoutingStrategy, SelectLayer}};
//! use switchyard_services::{openai::ChatCompletion, sim::{SimProfile, SimProvider}};
//!
//! let registry = Arc::new(Registry::new());
//! registry.upsert(Deployment::builder("gpt-4o", "openai/gpt-4o").id("east").build()?)?;
//! let select = SelectLayer::new(registry, Arc::new(StateStore::memory()), RoutingStrategy::SimpleShuffle.build());
//! let stack = ServiceBuilder::new().layer(select).service(SimProvider::new(7).default_profile(SimProfile::healthy()));
//!
//! let mut req = http::Request::new(Bytes::new());
//! req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
//! let body = stack.oneshot(req).await?.into_body().collect().await?.to_bytes();
//! let answer: ChatCompletion = serde_json::from_slice(&body)?;
//! assert!(answer.choices[0].message.text().contains("east"));
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod http_error;
pub mod ingress;
#[cfg(feature = "mock")]
pub mod mock;
pub mod openai;
pub mod profile;
pub mod provider;
pub mod sim;

pub use openai::{ChatCompletion, ChatMessage, ChatRequest, facts_from_json};
pub use provider::{HttpProvider, ProviderConfig, ProviderError, supports_provider};
pub use sim::{SimProfile, SimProvider};
