use std::{fmt, sync::Arc, time::Duration};

use super::CooldownEvent;
pub use crate::error_class::ALLOWED_FAILS_POLICY_FIELDS;
use crate::error_class::{AllowedFails, PerErrorClass};

/// Failures allowed per error class before a deployment is benched (LiteLLM
/// `allowed_fails_policy`): the shared per-error-class table ([`PerErrorClass`]) read with
/// LiteLLM's `...ErrorAllowedFails` names. Every field is read, and a value of 0 is honoured.
///
/// Classes are LiteLLM's (1.100): a 404 takes `not_found` (`NotFoundErrorAllowedFails`), a 503
/// `service_unavailable`, a 502 `bad_gateway`; a class without a value falls back to its parent
/// (503 and 502 to `internal_server_error`, which also covers other 5xx, connection failures and
/// broken transfers), then to the router's `allowed_fails`.
///
/// ```
/// use switchyard_layers::{Outcome, cooldown::AllowedFailsPolicy};
///
/// let policy = AllowedFailsPolicy::new().authentication(0).internal_server_error(5);
/// assert_eq!(policy.for_failure(Outcome::Auth, Some(401)), Some(0));
/// assert_eq!(policy.for_failure(Outcome::ServerError, Some(503)), Some(5));
/// assert_eq!(policy.for_failure(Outcome::NotFound, Some(404)), None, "a 404 is not an auth error");
/// ```
pub type AllowedFailsPolicy = PerErrorClass<AllowedFails>;

/// Half-open recovery (`cooldown_probe`): after a deadline passes, exactly one request probes the
/// deployment; success re-admits it, failure benches it again for longer.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct ProbeConfig {
    /// Each failed probe multiplies the cooldown by this (default 2).
    pub factor: f64,
    /// Longest cooldown (default 5 min).
    pub max_cooldown: Duration,
    /// A probe claim lapses after this if its request never reports (default 30 s).
    pub hold: Duration,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        Self { factor: 2.0, max_cooldown: Duration::from_secs(300), hold: Duration::from_secs(30) }
    }
}

/// Receives cooldown events (for alerting, dashboards, logs).
pub type CooldownHook = Arc<dyn Fn(&CooldownEvent) + Send + Sync>;

/// Settings of the [`CooldownLayer`](super::CooldownLayer). `Default` is LiteLLM's behaviour.
#[derive(Clone)]
#[non_exhaustive]
pub struct CooldownConfig {
    /// `disable_cooldowns`: never bench, never filter.
    pub disabled: bool,
    /// The router's `cooldown_time` (default 5 s; zero means never bench).
    pub cooldown_time: Duration,
    /// `allowed_fails`: with it (or a policy) set, a deployment is benched once its failures in
    /// the window exceed the allowance, instead of the rate-based rule.
    pub allowed_fails: Option<u32>,
    /// `allowed_fails_policy`.
    pub allowed_fails_policy: Option<AllowedFailsPolicy>,
    /// Rate rule: bench above this failure ratio (default 0.5, strict)...
    pub failure_threshold: f64,
    /// ...of at least this many requests in the window (default 5).
    pub min_requests: u64,
    /// Rate rule: bench at 100% failures of at least this many requests, even a single deployment
    /// (default 1,000).
    pub all_fail_min_requests: u64,
    /// Half-open recovery (off by default).
    pub probe: Option<ProbeConfig>,
    /// When every candidate is cooling down, wait up to this long for the first to return
    /// instead of failing (off by default).
    pub wait_for_cooldown: Option<Duration>,
    /// Called for every cooldown event.
    pub hook: Option<CooldownHook>,
}

impl fmt::Debug for CooldownConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CooldownConfig")
            .field("disabled", &self.disabled)
            .field("cooldown_time", &self.cooldown_time)
            .field("allowed_fails", &self.allowed_fails)
            .field("allowed_fails_policy", &self.allowed_fails_policy)
            .field("failure_threshold", &self.failure_threshold)
            .field("min_requests", &self.min_requests)
            .field("all_fail_min_requests", &self.all_fail_min_requests)
            .field("probe", &self.probe)
            .field("wait_for_cooldown", &self.wait_for_cooldown)
            .field("hook", &self.hook.is_some())
            .finish()
    }
}

impl Default for CooldownConfig {
    fn default() -> Self {
        Self {
            disabled: false,
            cooldown_time: Self::DEFAULT_COOLDOWN_TIME,
            allowed_fails: None,
            allowed_fails_policy: None,
            failure_threshold: 0.5,
            min_requests: 5,
            all_fail_min_requests: 1000,
            probe: None,
            wait_for_cooldown: None,
            hook: None,
        }
    }
}

impl CooldownConfig {
    /// LiteLLM's `DEFAULT_COOLDOWN_TIME_SECONDS`.
    pub const DEFAULT_COOLDOWN_TIME: Duration = Duration::from_secs(5);

    /// Defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// `disable_cooldowns`.
    pub fn disabled(mut self, disabled: bool) -> Self {
        self.disabled = disabled;
        self
    }

    /// The router's `cooldown_time`.
    pub fn cooldown_time(mut self, d: Duration) -> Self {
        self.cooldown_time = d;
        self
    }

    /// `allowed_fails`.
    pub fn allowed_fails(mut self, n: Option<u32>) -> Self {
        self.allowed_fails = n;
        self
    }

    /// `allowed_fails_policy`.
    pub fn allowed_fails_policy(mut self, p: Option<AllowedFailsPolicy>) -> Self {
        self.allowed_fails_policy = p;
        self
    }

    /// Enables half-open recovery.
    pub fn probe(mut self, p: Option<ProbeConfig>) -> Self {
        self.probe = p;
        self
    }

    /// Waits up to `max` for a cooldown to end when every candidate is benched.
    pub fn wait_for_cooldown(mut self, max: Option<Duration>) -> Self {
        self.wait_for_cooldown = max;
        self
    }

    /// Calls `hook` for every cooldown event.
    pub fn on_event(mut self, hook: impl Fn(&CooldownEvent) + Send + Sync + 'static) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }
}
