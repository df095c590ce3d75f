//! [`SimProfile`]: how one simulated deployment behaves.

use std::{fmt, time::Duration};

use http::StatusCode;
use rand::Rng;

use super::Latency;

/// A way a simulated attempt fails before answering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SimFailure {
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
    /// The connection fails before anything is sent.
    Connect,
    /// The deployment never answers (for attempt-timeout and deadline tests).
    Hang,
}

impl SimFailure {
    /// Every failure kind, in the order [`SimProfile`] draws them.
    pub const ALL: [SimFailure; 9] = [
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

    const fn index(self) -> usize {
        self as usize
    }
}

/// A profile that cannot be built.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum SimConfigError {
    /// A probability is not a finite number in `0..=1`.
    InvalidRate {
        /// What the rate is for (`rate_limited`, `mid_stream`, ...).
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
        /// Which latency (`latency`, `ttft`, ...).
        what: &'static str,
        /// The median given.
        median: Duration,
        /// The 99th percentile given.
        p99: Duration,
    },
    /// A stream needs at least one content chunk.
    NoChunks,
}

impl fmt::Display for SimConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidRate { what, rate } => write!(f, "`{what}` rate must be in 0..=1, got {rate}"),
            Self::RatesAboveOne { total } => write!(f, "failure rates add up to {total}, more than 1"),
            Self::InvalidLatency { what, median, p99 } => {
                write!(f, "`{what}` needs 0 < median <= p99, got median {median:?} and p99 {p99:?}")
            }
            Self::NoChunks => f.write_str("`chunks` must be at least 1"),
        }
    }
}

impl std::error::Error for SimConfigError {}

/// How one simulated deployment behaves: latencies, stream shape, token counts and failure rates.
///
/// The default profile always succeeds: 100 ms per answer; streams of 8 chunks, the first after
/// 50 ms and the next ones 10 ms apart; 16 prompt tokens unless the request's facts know the
/// count; failures answer after 10 ms.
///
/// ```
/// use std::time::Duration;
/// use switchyard_services::sim::{Latency, SimFailure, SimProfile};
///
/// let flaky = SimProfile::builder()
///     .latency(Latency::log_normal(Duration::from_millis(400), Duration::from_secs(3)))
///     .fail(SimFailure::RateLimited, 0.2)
///     .retry_after(Duration::from_secs(2))
///     .fail(SimFailure::InternalError, 0.05)
///     .mid_stream_failure(0.01)
///     .build()?;
/// assert_eq!(flaky.failure_rate(SimFailure::RateLimited), 0.2);
/// assert!(SimProfile::builder().fail(SimFailure::Hang, 1.5).build().is_err());
/// # Ok::<(), switchyard_services::sim::SimConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SimProfile {
    pub(crate) latency: Latency,
    pub(crate) ttft: Latency,
    pub(crate) chunk_delay: Latency,
    pub(crate) error_latency: Latency,
    pub(crate) chunks: u32,
    pub(crate) prompt_tokens: u64,
    pub(crate) embedding_dims: usize,
    pub(crate) rates: [f64; SimFailure::ALL.len()],
    pub(crate) retry_after: Option<Duration>,
    pub(crate) mid_stream: f64,
}

impl Default for SimProfile {
    fn default() -> Self {
        Self {
            latency: Latency::fixed(Duration::from_millis(100)),
            ttft: Latency::fixed(Duration::from_millis(50)),
            chunk_delay: Latency::fixed(Duration::from_millis(10)),
            error_latency: Latency::fixed(Duration::from_millis(10)),
            chunks: 8,
            prompt_tokens: 16,
            embedding_dims: 8,
            rates: [0.0; SimFailure::ALL.len()],
            retry_after: None,
            mid_stream: 0.0,
        }
    }
}

impl SimProfile {
    /// A profile that always succeeds, with the default timings.
    pub fn healthy() -> Self {
        Self::default()
    }

    /// A profile that always fails with `kind` (after the default error latency).
    pub fn failing(kind: SimFailure) -> Self {
        let mut p = Self::default();
        p.rates[kind.index()] = 1.0;
        p
    }

    /// Starts from the default profile.
    pub fn builder() -> SimProfileBuilder {
        SimProfileBuilder { profile: Self::default() }
    }

    /// Changes this profile.
    pub fn to_builder(&self) -> SimProfileBuilder {
        SimProfileBuilder { profile: self.clone() }
    }

    /// The probability of `kind`.
    pub fn failure_rate(&self, kind: SimFailure) -> f64 {
        self.rates[kind.index()]
    }

    /// Content chunks per streamed answer (one completion token each).
    pub fn chunks(&self) -> u32 {
        self.chunks
    }

    /// Draws this attempt's failure, if any, with one uniform number.
    pub(crate) fn draw_failure<R: Rng + ?Sized>(&self, rng: &mut R) -> Option<SimFailure> {
        let u: f64 = rng.random();
        let mut acc = 0.0;
        for kind in SimFailure::ALL {
            acc += self.rates[kind.index()];
            if u < acc {
                return Some(kind);
            }
        }
        None
    }
}

/// Builds a [`SimProfile`]; see [`SimProfile::builder`].
#[derive(Clone, Debug)]
pub struct SimProfileBuilder {
    profile: SimProfile,
}

impl SimProfileBuilder {
    /// Time to a whole (non-streaming) answer.
    pub fn latency(mut self, latency: Latency) -> Self {
        self.profile.latency = latency;
        self
    }

    /// Time to the first chunk of a stream.
    pub fn ttft(mut self, ttft: Latency) -> Self {
        self.profile.ttft = ttft;
        self
    }

    /// Time between two chunks of a stream.
    pub fn chunk_delay(mut self, delay: Latency) -> Self {
        self.profile.chunk_delay = delay;
        self
    }

    /// Time to a failure answer (connection failures and error statuses alike).
    pub fn error_latency(mut self, latency: Latency) -> Self {
        self.profile.error_latency = latency;
        self
    }

    /// Content chunks per streamed answer; each is one completion token, and whole answers
    /// carry the same text.
    pub fn chunks(mut self, chunks: u32) -> Self {
        self.profile.chunks = chunks;
        self
    }

    /// Prompt tokens reported when the request's facts hold no count.
    pub fn prompt_tokens(mut self, tokens: u64) -> Self {
        self.profile.prompt_tokens = tokens;
        self
    }

    /// Length of simulated embedding vectors.
    pub fn embedding_dims(mut self, dims: usize) -> Self {
        self.profile.embedding_dims = dims;
        self
    }

    /// The probability that an attempt fails with `kind` (replaces an earlier rate for `kind`).
    pub fn fail(mut self, kind: SimFailure, rate: f64) -> Self {
        self.profile.rates[kind.index()] = rate;
        self
    }

    /// The `Retry-After` sent with 429 answers (`retry-after-ms` below one second).
    pub fn retry_after(mut self, after: Duration) -> Self {
        self.profile.retry_after = Some(after);
        self
    }

    /// The probability that a stream that started fails before its end.
    pub fn mid_stream_failure(mut self, rate: f64) -> Self {
        self.profile.mid_stream = rate;
        self
    }

    /// Checks the rates and latencies and builds the profile.
    pub fn build(self) -> Result<SimProfile, SimConfigError> {
        let p = self.profile;
        let check = |what: &'static str, rate: f64| {
            if rate.is_finite() && (0.0..=1.0).contains(&rate) {
                Ok(())
            } else {
                Err(SimConfigError::InvalidRate { what, rate })
            }
        };
        for kind in SimFailure::ALL {
            check(kind.as_str(), p.rates[kind.index()])?;
        }
        check("mid_stream", p.mid_stream)?;
        let total: f64 = p.rates.iter().sum();
        if total > 1.0 + 1e-9 {
            return Err(SimConfigError::RatesAboveOne { total });
        }
        p.latency.validate("latency")?;
        p.ttft.validate("ttft")?;
        p.chunk_delay.validate("chunk_delay")?;
        p.error_latency.validate("error_latency")?;
        if p.chunks == 0 {
            return Err(SimConfigError::NoChunks);
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_profiles_are_refused() {
        let b = SimProfile::builder;
        assert_eq!(b().chunks(0).build(), Err(SimConfigError::NoChunks));
        assert!(matches!(b().fail(SimFailure::Connect, f64::NAN).build(), Err(SimConfigError::InvalidRate { .. })));
        assert!(matches!(
            b().fail(SimFailure::Connect, 0.6).fail(SimFailure::Hang, 0.6).build(),
            Err(SimConfigError::RatesAboveOne { .. })
        ));
        let inverted = Latency::log_normal(Duration::from_secs(2), Duration::from_secs(1));
        assert!(matches!(b().ttft(inverted).build(), Err(SimConfigError::InvalidLatency { what: "ttft", .. })));
    }
}
