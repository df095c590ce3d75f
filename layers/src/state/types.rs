//! The values the store reads and writes: cooldowns, usage and outcome counts, reservations,
//! spend, and the one error a backend may report.
//!
//! Fields are public for reading; a backend outside this crate builds the `#[non_exhaustive]` ones
//! with their `new` constructors.

use std::{fmt, sync::Arc, time::Duration};

use tokio::time::Instant;

use crate::DeploymentId;

/// A deployment benched until a deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Cooldown {
    /// When it may serve again.
    pub until: Instant,
    /// Why (masked and truncated by the caller; never a secret).
    pub reason: Arc<str>,
    /// The upstream status that caused it, if any.
    pub status: Option<u16>,
    /// Consecutive cooldowns without a successful probe in between (half-open recovery only).
    pub strikes: u32,
}

impl Cooldown {
    /// A cooldown until `until`, for `reason` (never a secret), after `strikes` earlier ones.
    pub fn new(until: Instant, reason: Arc<str>, status: Option<u16>, strikes: u32) -> Self {
        Self { until, reason, status, strikes }
    }
}

/// Where a deployment stands with respect to cooldowns.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CooldownState {
    /// Free to serve.
    Available,
    /// Benched until the deadline.
    CoolingDown(Cooldown),
    /// Its deadline passed (half-open recovery): one probe request decides whether it serves again.
    HalfOpen {
        /// Cooldowns in a row so far.
        strikes: u32,
        /// A probe is in flight (claimed by some request, on some replica).
        probing: bool,
    },
}

/// What benching a deployment asks for ([`StoreBackend::bench`](super::StoreBackend::bench)):
/// the base cooldown, the reason and upstream status shown in listings, and how a repeated
/// cooldown grows under half-open recovery (`None`: a fixed cooldown, no half-open state).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Bench {
    /// The cooldown before growth.
    pub base: Duration,
    /// Why, as listings show it.
    pub reason: Arc<str>,
    /// The upstream status that caused it, if any.
    pub status: Option<u16>,
    /// Growth under half-open recovery.
    pub growth: Option<Growth>,
}

impl Bench {
    /// A bench order.
    pub fn new(base: Duration, reason: Arc<str>, status: Option<u16>, growth: Option<Growth>) -> Self {
        Self { base, reason, status, growth }
    }
}

/// How a repeated cooldown grows under half-open recovery: `base × factor^strikes`, capped.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Growth {
    /// Multiplier per strike (≥ 1).
    pub factor: f64,
    /// Longest cooldown.
    pub cap: Duration,
}

impl Growth {
    /// Growth by `factor` per strike up to `cap`.
    pub fn new(factor: f64, cap: Duration) -> Self {
        Self { factor: if factor.is_finite() { factor.max(1.0) } else { 1.0 }, cap }
    }

    /// The cooldown after `strikes` earlier ones.
    pub fn ttl(&self, base: Duration, strikes: u32) -> Duration {
        let scaled = base.as_secs_f64() * self.factor.powi(strikes.min(64) as i32);
        if !scaled.is_finite() || scaled >= self.cap.as_secs_f64() {
            return self.cap.max(base.min(self.cap));
        }
        Duration::from_secs_f64(scaled)
    }
}

/// Successes and failures of a deployment in the outcome window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutcomeCounts {
    /// Successful attempts.
    pub successes: u64,
    /// Failed attempts.
    pub failures: u64,
}

impl OutcomeCounts {
    /// The counts of a window.
    pub const fn new(successes: u64, failures: u64) -> Self {
        Self { successes, failures }
    }
}

/// Requests and tokens of a deployment in the usage window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WindowUsage {
    /// Requests admitted.
    pub requests: u64,
    /// Tokens (reserved estimates, reconciled with real usage).
    pub tokens: u64,
}

impl WindowUsage {
    /// The usage of a window.
    pub const fn new(requests: u64, tokens: u64) -> Self {
        Self { requests, tokens }
    }
}

/// The limits a reservation is checked against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Requests per window.
    pub rpm: Option<u64>,
    /// Tokens per window.
    pub tpm: Option<u64>,
}

impl Limits {
    /// Whether `usage` leaves room for one more request of `tokens` (the limit-th request passes,
    /// the next does not).
    pub fn admits(&self, usage: WindowUsage, tokens: u64) -> bool {
        self.rpm.is_none_or(|rpm| usage.requests < rpm)
            && self.tpm.is_none_or(|tpm| usage.tokens.saturating_add(tokens) <= tpm)
    }
}

/// Which of a deployment's declared `rpm` / `tpm` limits are enforced (requests refused at the
/// limit) rather than only counted and read as simple-shuffle weights.
///
/// LiteLLM reads the limits so: `enable_pre_call_checks` enforces `rpm`; usage-based,
/// latency-based and cost-based routing skip deployments over either limit; simple-shuffle and
/// least-busy only weigh by them. [`ALL`](Self::ALL) is Switchyard's `enforce_rate_limits`
/// (LiteLLM's `enforce_model_rate_limits` pre-call check): both limits, under every strategy.
///
/// ```
/// use switchyard_layers::state::{EnforcedLimits, Limits};
/// assert_eq!(EnforcedLimits::RPM.limits(Some(10), Some(1000)), Limits { rpm: Some(10), tpm: None });
/// assert_eq!(EnforcedLimits::NONE.limits(Some(10), Some(1000)), Limits::default());
/// assert_eq!(EnforcedLimits::RPM.union(EnforcedLimits::ALL), EnforcedLimits::ALL);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct EnforcedLimits {
    /// `rpm` is enforced.
    pub rpm: bool,
    /// `tpm` is enforced.
    pub tpm: bool,
}

impl EnforcedLimits {
    /// Neither limit: both are counted, and weigh simple-shuffle.
    pub const NONE: Self = Self { rpm: false, tpm: false };
    /// `rpm` only (LiteLLM's `enable_pre_call_checks`).
    pub const RPM: Self = Self { rpm: true, tpm: false };
    /// Both limits.
    pub const ALL: Self = Self { rpm: true, tpm: true };

    /// Both sets together.
    pub const fn union(self, other: Self) -> Self {
        Self { rpm: self.rpm || other.rpm, tpm: self.tpm || other.tpm }
    }

    /// Whether no limit is enforced.
    pub const fn is_none(self) -> bool {
        !self.rpm && !self.tpm
    }

    /// The enforced part of the declared limits `rpm` / `tpm`.
    pub fn limits(self, rpm: Option<u64>, tpm: Option<u64>) -> Limits {
        Limits { rpm: rpm.filter(|_| self.rpm), tpm: tpm.filter(|_| self.tpm) }
    }
}

/// A request slot (and token estimate) taken in a deployment's usage window.
#[derive(Clone, Debug)]
pub struct Reservation {
    pub(super) id: DeploymentId,
    pub(super) tick: u64,
    pub(super) tokens: u64,
    /// Taken in the shared (Redis) window rather than this replica's.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(super) remote: bool,
}

impl Reservation {
    /// A reservation of `tokens` on `deployment`; `tick` is the backend's own handle on it (the
    /// window tick it was counted in), read back when it is reconciled
    /// ([`Bookkeeping::Reconcile`](super::Bookkeeping::Reconcile)).
    pub fn new(deployment: DeploymentId, tokens: u64, tick: u64) -> Self {
        Self { id: deployment, tick, tokens, remote: false }
    }

    /// The backend's handle on the reservation (the window tick it was counted in).
    pub fn tick(&self) -> u64 {
        self.tick
    }

    /// The deployment reserved on.
    pub fn deployment(&self) -> &DeploymentId {
        &self.id
    }

    /// The tokens reserved.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }
}

/// The answer of [`StateStore::try_reserve`](super::StateStore::try_reserve).
#[derive(Clone, Debug)]
pub enum Admission {
    /// Reserved.
    Admitted(Reservation),
    /// At a limit; a slot frees in `retry_in`.
    Full {
        /// Time until the window has room for this request.
        retry_in: Duration,
    },
}

/// The spend under one key in its current period.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct SpendState {
    /// Spent so far in the period (0 when no period is running).
    pub total: f64,
    /// Time until the period ends and the spend resets; `None` when no period is running.
    pub resets_in: Option<Duration>,
}

impl SpendState {
    /// `total` spent in a period that ends in `resets_in`.
    pub const fn new(total: f64, resets_in: Option<Duration>) -> Self {
        Self { total, resets_in }
    }
}

/// A backend failure: an invalid Redis setting, or a budget read refused while Redis is
/// unreachable and budgets are fail-closed. No other operation fails: a backend that cannot reach
/// its shared state answers from this replica's.
#[derive(Debug)]
pub struct StoreError {
    message: String,
}

impl StoreError {
    /// A backend failure with a message.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into() }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "state store: {}", self.message)
    }
}

impl std::error::Error for StoreError {}
