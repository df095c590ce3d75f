//! The gateway's own endpoints: model listing, health, metrics and operations. The OpenAI
//! endpoints are the routing stack itself, mounted in [`app`](super::app).

pub(crate) mod deployments;
pub(crate) mod health;
pub(crate) mod models;
pub(crate) mod reload;
