//! [`SimProfile`]: how one simulated deployment behaves, in the [shared vocabulary](crate::profile)
//! plus the simulator's own timings and broken streams.

use std::time::Duration;

use rand::Rng;

use crate::profile::{Failure, Latency, ProfileError, check_failure_rates, check_rate, check_stream};

/// How one simulated deployment behaves: latencies, stream shape, token counts and failure rates.
///
/// The default profile always succeeds: 100 ms per answer; streams of 8 chunks, the first after
/// 50 ms and the next ones 10 ms apart; 16 prompt tokens unless the request's facts know the
/// count; failures answer after 10 ms.
///
/// Latency, stream shape and failures by kind are the [shared vocabulary](crate::profile), named as
/// on the HTTP mock's `MockProfile`; the simulator adds the time to the first chunk
/// ([`ttft`](SimProfileBuilder::ttft)), the time to a failure
/// ([`error_latency`](SimProfileBuilder::error_latency)), connection failures and hangs
/// ([`Failure::Connect`], [`Failure::Hang`]) and streams that break
/// ([`mid_stream_failure`](SimProfileBuilder::mid_stream_failure)).
///
/// ```
/// use std::time::Duration;
/// use switchyard_services::{profile::{Failure, Latency}, sim::SimProfile};
///
/// let flaky = SimProfile::builder()
///     .latency(Latency::log_normal(Duration::from_millis(400), Duration::from_secs(3)))
///     .fail(Failure::RateLimited, 0.2)
///     .retry_after(Duration::from_secs(2))
///     .fail(Failure::InternalError, 0.05)
///     .mid_stream_failure(0.01)
///     .build()?;
/// assert_eq!(flaky.failure_rate(Failure::RateLimited), 0.2);
/// assert!(SimProfile::builder().fail(Failure::Hang, 1.5).build().is_err());
/// # Ok::<(), switchyard_services::profile::ProfileError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SimProfile {
    pub(crate) latency: Latency,
    pub(crate) ttft: Latency,
    pub(crate) chunk_interval: Latency,
    pub(crate) error_latency: Latency,
    pub(crate) chunks: u32,
    pub(crate) prompt_tokens: u64,
    pub(crate) embedding_dims: usize,
    pub(crate) rates: [f64; Failure::ALL.len()],
    pub(crate) retry_after: Option<Duration>,
    pub(crate) mid_stream: f64,
}

impl Default for SimProfile {
    fn default() -> Self {
        Self {
            latency: Latency::fixed(Duration::from_millis(100)),
            ttft: Latency::fixed(Duration::from_millis(50)),
            chunk_interval: Latency::fixed(Duration::from_millis(10)),
            error_latency: Latency::fixed(Duration::from_millis(10)),
            chunks: 8,
            prompt_tokens: 16,
            embedding_dims: 8,
            rates: [0.0; Failure::ALL.len()],
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
    pub fn failing(kind: Failure) -> Self {
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
    pub fn failure_rate(&self, kind: Failure) -> f64 {
        self.rates[kind.index()]
    }

    /// Content chunks per streamed answer (one completion token each).
    pub fn chunks(&self) -> u32 {
        self.chunks
    }

    /// Draws this attempt's failure, if any, with one uniform number.
    pub(crate) fn draw_failure<R: Rng + ?Sized>(&self, rng: &mut R) -> Option<Failure> {
        let u: f64 = rng.random();
        let mut acc = 0.0;
        for kind in Failure::ALL {
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
    pub fn chunk_interval(mut self, interval: Latency) -> Self {
        self.profile.chunk_interval = interval;
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
    pub fn fail(mut self, kind: Failure, rate: f64) -> Self {
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
    pub fn build(self) -> Result<SimProfile, ProfileError> {
        let p = self.profile;
        check_failure_rates(&p.rates)?;
        check_rate("mid_stream", p.mid_stream)?;
        p.latency.validate("latency")?;
        p.ttft.validate("ttft")?;
        p.error_latency.validate("error_latency")?;
        check_stream(p.chunks, &p.chunk_interval)?;
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_profiles_are_refused() {
        let b = SimProfile::builder;
        assert_eq!(b().chunks(0).build(), Err(ProfileError::NoChunks));
        assert!(matches!(b().fail(Failure::Connect, f64::NAN).build(), Err(ProfileError::InvalidRate { .. })));
        assert!(matches!(
            b().fail(Failure::Connect, 0.6).fail(Failure::Hang, 0.6).build(),
            Err(ProfileError::RatesAboveOne { .. })
        ));
        let inverted = Latency::log_normal(Duration::from_secs(2), Duration::from_secs(1));
        assert!(matches!(b().ttft(inverted).build(), Err(ProfileError::InvalidLatency { what: "ttft", .. })));
    }
}
