//! The gateway's own endpoints: model listing, health, metrics, operations and the dashboard's
//! state. The OpenAI endpoints are the routing stack itself, mounted in [`app`](super::app).

pub(crate) mod deployments;
pub(crate) mod health;
pub(crate) mod models;
pub(crate) mod reload;
pub(crate) mod state;
