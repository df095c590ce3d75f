//! # Switchyard
//!
//! LLM request routing as a stack of [`tower`] middleware. A caller asks for a **model group**
//! (`gpt-4o`); the stack picks which **deployment** serves it (several Azure keys, OpenAI
//! accounts, self-hosted vLLMs), with LiteLLM Router semantics and its known defects fixed.
//!
//! This crate is the facade: it re-exports the layers ([`layers`]) and services ([`services`]),
//! reads LiteLLM proxy config files ([`Config`]), and builds the default stack
//! ([`Router::from_config`]) with a typed in-process API ([`Router::chat`]).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use switchyard::{Config, Router, services::{openai::{ChatMessage, ChatRequest}, sim::SimProvider}};
//!
//! let config = Config::from_yaml_str(r#"
//! model_list:
//!   - model_name: gpt-4o
//!     litellm_params: { model: azure/gpt-4o-eu, rpm: 600 }
//!   - model_name: gpt-4o
//!     litellm_params: { model: openai/gpt-4o, rpm: 300 }
//! "#)?;
//! let router = Router::from_config(&config, SimProvider::new(7))?;
//! let answer = router.chat(ChatRequest::new("gpt-4o", vec![ChatMessage::user("hi")])).await?;
//! println!("{} answered", answer.served.deployment);
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

pub mod cache;
pub mod config;
#[cfg(feature = "gateway")]
pub mod gateway;
pub mod health;
#[cfg(feature = "otel")]
pub mod otel;
pub mod router;

pub use config::{Config, ConfigError};

pub use router::{ChatResponse, ChatStream, EmbedResponse, Router, RouterBuilder, RouterError, RouterService};
pub use switchyard_layers as layers;
pub use switchyard_layers::{
    Deployment, DeploymentId, Outcome, Registry, RouteBody, RouteCtx, RouteError, RouteErrorKind, Served, StateStore,
};
pub use switchyard_services as services;
