//! Health-check routing for a [`Router`](crate::Router): the settings read from a LiteLLM config
//! ([`HealthSettings`]), the probe each deployment gets ([`ProbeSpec`]) and the prober that sends
//! it through the router's provider ([`ProviderProber`]).
//!
//! The router starts one [`HealthChecker`](switchyard_layers::health::HealthChecker) per replica
//! when `general_settings.background_health_checks` or `router_settings.enable_health_check_routing`
//! is set, stops it when the router is dropped, and builds a new one on reload; the
//! [`HealthLayer`](switchyard_layers::health::HealthLayer) of its stack drops the candidates the
//! probes found unhealthy when `enable_health_check_routing` is set. See `docs/health.md`.

pub(crate) mod prober;
mod settings;

pub use prober::ProviderProber;
pub use settings::{HealthSettings, ProbeMode, ProbeSpec};
