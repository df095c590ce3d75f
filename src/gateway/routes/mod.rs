//! The gateway's own endpoints: model listing, health, metrics, operations, the dashboard's
//! state, stored-response operations and token counting. The OpenAI endpoints are the routing stack itself, mounted in [`app`](super::app).

pub(crate) mod cache;
pub(crate) mod deployments;
pub(crate) mod feedback;
pub(crate) mod health;
pub(crate) mod models;
pub(crate) mod probes;
pub(crate) mod reload;
pub(crate) mod responses;
pub(crate) mod state;
