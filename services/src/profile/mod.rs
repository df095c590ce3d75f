//! The vocabulary both simulated upstreams share: delay distributions ([`Latency`]), the ways an
//! attempt fails ([`Failure`], each drawn at its own rate, 429s with a `Retry-After`), the shape
//! of a stream (`chunks` content chunks, `chunk_interval` apart) and the errors of a profile that
//! cannot be built ([`ProfileError`]).
//!
//! The in-process simulator's [`SimProfile`](crate::sim::SimProfile) and the HTTP mock's
//! `MockProfile` (feature `mock`) are built from these with the same builder names (`latency`,
//! `chunks`, `chunk_interval`, `fail`, `retry_after`, `prompt_tokens`, `embedding_dims`); each adds
//! only what belongs to it: the simulator its time to first token, error latency and broken
//! streams, the mock its wire-level faults (cut, malformed or unterminated streams, stalls,
//! connection resets), failures of any status with a custom error code, and its seed.
//!
//! ```
//! use std::time::Duration;
//! use switchyard_services::{profile::{Failure, Latency}, sim::SimProfile};
//!
//! let slow = Latency::log_normal(Duration::from_millis(300), Duration::from_secs(2));
//! let profile = SimProfile::builder()
//!     .latency(slow)
//!     .chunk_interval(Latency::fixed(Duration::from_millis(5)))
//!     .fail(Failure::RateLimited, 0.1)
//!     .retry_after(Duration::from_secs(2))
//!     .build()?;
//! assert_eq!(profile.failure_rate(Failure::RateLimited), 0.1);
//! assert_eq!(Failure::RateLimited.status(), Some(http::StatusCode::TOO_MANY_REQUESTS));
//! # Ok::<(), switchyard_services::profile::ProfileError>(())
//! ```

mod latency;

use std::{fmt, time::Duration};

use http::StatusCode;

pub use latency::Latency;

/// A way a simulated attempt fails before answering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Failure {
    /// 429 `rate_limit_exceeded`, with the profile's `Retry-After` if it has one.
    RateLimited,
    /// 500 `server_error`.
    InternalError,
    /// 503: the engine is overloaded.
    Unavailable,
    /// 401 `invalid_api_key`.
    Unauthorized,
    /// 404 `model_not_found`.
    NotFound,
    /// 400 `context_length_exceeded`.
    ContextWindowExceeded,
    /// 400 `content_filter`.
    ContentFilter,
    /// The connection fails before anything is sent (the simulator only: the mock fails
    /// connections with its `reset` and `no_response` faults, drawn per connection).
    Connect,
    /// The deployment never answers, for attempt-timeout and deadline tests (the simulator only,
    /// like [`Connect`](Self::Connect)).
    Hang,
}

impl Failure {
    /// Every failure kind, in the order a profile draws them.
    pub const ALL: [Failure; 9] = [
        Self::RateLimited,
        Self::InternalError,
        Self::Unavailable,
        Self::Unauthorized,
        Self::NotFound,
        Self::ContextWindowExceeded,
        Self::ContentFilter,
        Self::Connect,
        Self::Hang,
    ];

    /// The HTTP status the upstream answers with, if it answers at all.
    pub fn status(self) -> Option<StatusCode> {
        Some(match self {
            Self::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Self::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::ContextWindowExceeded | Self::ContentFilter => StatusCode::BAD_REQUEST,
            Self::Connect | Self::Hang => return None,
        })
    }

    /// The OpenAI error `code` that tells this failure from others of its status, when its status
    /// alone does not (`context_length_exceeded`, `content_filter`).
    pub fn distinct_code(self) -> Option<&'static str> {
        match self {
            Self::ContextWindowExceeded => Some("context_length_exceeded"),
            Self::ContentFilter => Some("content_filter"),
            _ => None,
        }
    }

    /// A short stable name (`rate_limited`, `connect`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RateLimited => "rate_limited",
            Self::InternalError => "internal_error",
            Self::Unavailable => "unavailable",
            Self::Unauthorized => "unauthorized",
            Self::NotFound => "not_found",
            Self::ContextWindowExceeded => "context_window_exceeded",
            Self::ContentFilter => "content_filter",
            Self::Connect => "connect",
            Self::Hang => "hang",
        }
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A profile that cannot be built.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ProfileError {
    /// A probability is not a finite number in `0..=1`.
    InvalidRate {
        /// What the rate is for (a [`Failure`] name, `mid_stream`, `stall`, `stream_cut`, ...).
        what: &'static str,
        /// The value given.
        rate: f64,
    },
    /// The failure rates add up to more than 1.
    RatesAboveOne {
        /// Their sum.
        total: f64,
    },
    /// A log-normal latency with a zero median or a 99th percentile below the median.
    InvalidLatency {
        /// Which latency (`latency`, `ttft`, `chunk_interval`, ...).
        what: &'static str,
        /// The median given.
        median: Duration,
        /// The 99th percentile given.
        p99: Duration,
    },
    /// An injected failure status that is not a 4xx or 5xx.
    InvalidStatus(u16),
    /// A failure this upstream cannot simulate (the mock fails connections per connection, not
    /// per request: [`Failure::Connect`] and [`Failure::Hang`] are the simulator's).
    UnsupportedFailure(Failure),
    /// A stream needs at least one content chunk.
    NoChunks,
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidRate { what, rate } => write!(f, "`{what}` rate must be in 0..=1, got {rate}"),
            Self::RatesAboveOne { total } => write!(f, "failure rates add up to {total}, more than 1"),
            Self::InvalidLatency { what, median, p99 } => {
                write!(f, "`{what}` needs 0 < median <= p99, got median {median:?} and p99 {p99:?}")
            }
            Self::InvalidStatus(s) => write!(f, "an injected failure needs a 4xx or 5xx status, got {s}"),
            Self::UnsupportedFailure(kind) => write!(f, "this upstream cannot simulate `{kind}` failures"),
            Self::NoChunks => f.write_str("`chunks` must be at least 1"),
        }
    }
}

impl std::error::Error for ProfileError {}

/// Checks that `rate` is a probability.
pub(crate) fn check_rate(what: &'static str, rate: f64) -> Result<(), ProfileError> {
    if rate.is_finite() && (0.0..=1.0).contains(&rate) { Ok(()) } else { Err(ProfileError::InvalidRate { what, rate }) }
}

/// Checks failure rates given by kind: each a probability, together at most 1.
pub(crate) fn check_failure_rates(rates: &[f64; Failure::ALL.len()]) -> Result<(), ProfileError> {
    for kind in Failure::ALL {
        check_rate(kind.as_str(), rates[kind.index()])?;
    }
    let total: f64 = rates.iter().sum();
    if total > 1.0 + 1e-9 {
        return Err(ProfileError::RatesAboveOne { total });
    }
    Ok(())
}

/// Checks the shape of a stream.
pub(crate) fn check_stream(chunks: u32, chunk_interval: &Latency) -> Result<(), ProfileError> {
    chunk_interval.validate("chunk_interval")?;
    if chunks == 0 {
        return Err(ProfileError::NoChunks);
    }
    Ok(())
}
