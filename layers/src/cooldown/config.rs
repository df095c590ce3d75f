use std::{collections::BTreeMap, fmt, sync::Arc, time::Duration};

use super::CooldownEvent;
use crate::Outcome;

/// Per-error-class failure allowances (`allowed_fails_policy`). Every field is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AllowedFailsPolicy {
    /// `BadRequestErrorAllowedFails` (400, 409, 413, 422, context window).
    pub bad_request: Option<u32>,
    /// `AuthenticationErrorAllowedFails` (401, 403).
    pub authentication: Option<u32>,
    /// `TimeoutErrorAllowedFails` (408, timeouts).
    pub timeout: Option<u32>,
    /// `RateLimitErrorAllowedFails` (429).
    pub rate_limit: Option<u32>,
    /// `ContentPolicyViolationErrorAllowedFails`.
    pub content_policy: Option<u32>,
    /// `InternalServerErrorAllowedFails` (5xx, connection failures, broken transfers); LiteLLM
    /// declares it but never reads it.
    pub internal_server_error: Option<u32>,
}

/// The LiteLLM names of [`AllowedFailsPolicy`]'s fields, in field order.
pub const ALLOWED_FAILS_POLICY_FIELDS: [&str; 6] = [
    "BadRequestErrorAllowedFails",
    "AuthenticationErrorAllowedFails",
    "TimeoutErrorAllowedFails",
    "RateLimitErrorAllowedFails",
    "ContentPolicyViolationErrorAllowedFails",
    "InternalServerErrorAllowedFails",
];

impl AllowedFailsPolicy {
    /// Reads LiteLLM's field names; an unknown name is an error naming it and the valid ones.
    pub fn from_litellm(map: &BTreeMap<String, u32>) -> Result<Self, String> {
        let mut p = Self::default();
        for (k, v) in map {
            let slot = match k.as_str() {
                "BadRequestErrorAllowedFails" => &mut p.bad_request,
                "AuthenticationErrorAllowedFails" => &mut p.authentication,
                "TimeoutErrorAllowedFails" => &mut p.timeout,
                "RateLimitErrorAllowedFails" => &mut p.rate_limit,
                "ContentPolicyViolationErrorAllowedFails" => &mut p.content_policy,
                "InternalServerErrorAllowedFails" => &mut p.internal_server_error,
                other => {
                    return Err(format!(
                        "unknown allowed_fails_policy field `{other}`; valid: {}",
                        ALLOWED_FAILS_POLICY_FIELDS.join(", ")
                    ));
                }
            };
            *slot = Some(*v);
        }
        Ok(p)
    }

    /// The allowance for a failure of class `outcome` (a value of 0 is honoured).
    pub fn for_outcome(&self, outcome: Outcome) -> Option<u32> {
        match outcome {
            Outcome::BadRequest | Outcome::ContextWindowExceeded => self.bad_request,
            Outcome::Auth | Outcome::NotFound => self.authentication,
            Outcome::Timeout => self.timeout,
            Outcome::RateLimited => self.rate_limit,
            Outcome::ContentPolicy => self.content_policy,
            Outcome::ServerError | Outcome::Connect | Outcome::Transport => self.internal_server_error,
            Outcome::Success => None,
        }
    }
}

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
