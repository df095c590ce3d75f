//! [`MockProfile`]: how the mock upstream answers.

use std::{fmt, time::Duration};

use http::StatusCode;

use crate::sim::{Latency, SimConfigError};

/// A profile that cannot be built.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum MockConfigError {
    /// A probability is not a finite number in `0..=1`.
    InvalidRate {
        /// What the rate is for (`fail`, `stall`, `stream_cut`, `reset`, `no_response`,
        /// `malformed_chunk`, `missing_done`, `stream_error`).
        what: &'static str,
        /// The value given.
        rate: f64,
    },
    /// A latency is not valid (a log-normal one needs `0 < median <= p99`).
    InvalidLatency(SimConfigError),
    /// An injected failure must have a 4xx or 5xx status.
    InvalidStatus(u16),
    /// A stream needs at least one content chunk.
    NoChunks,
}

impl fmt::Display for MockConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidRate { what, rate } => write!(f, "`{what}` rate must be in 0..=1, got {rate}"),
            Self::InvalidLatency(e) => e.fmt(f),
            Self::InvalidStatus(s) => write!(f, "an injected failure needs a 4xx or 5xx status, got {s}"),
            Self::NoChunks => f.write_str("`chunks` must be at least 1"),
        }
    }
}

impl std::error::Error for MockConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::InvalidLatency(e) => Some(e),
            _ => None,
        }
    }
}

/// How the mock upstream answers: latency, stream shape, injected failures, cuts and stalls, and
/// the seed that makes all of it reproducible.
///
/// The default profile answers at once, streams 8 content chunks 10 ms apart, and never fails.
/// Every request draws its behaviour from its own generator, seeded from the profile's seed and
/// the request's number, in a fixed order (failure, stall, cut, latency, then malformed, missing
/// `[DONE]` and in-stream error when their rate is not zero, then chunk gaps): the same seed gives
/// the same sequence of behaviours, in either dialect (OpenAI or Anthropic). Connection faults
/// (reset, no response) are drawn per connection.
///
/// Injected failures may have any 4xx or 5xx status, Anthropic's `529 Overloaded` included.
///
/// ```
/// use std::time::Duration;
/// use http::StatusCode;
/// use switchyard_services::{mock::MockProfile, sim::Latency};
///
/// // 60 ms median with a log-normal tail, 30% of requests answer 503.
/// let flaky = MockProfile::builder()
///     .latency(Latency::log_normal(Duration::from_millis(60), Duration::from_millis(250)))
///     .fail(0.3, StatusCode::SERVICE_UNAVAILABLE)
///     .seed(7)
///     .build()?;
/// // Always 429 with `Retry-After: 2`.
/// let throttled = MockProfile::builder()
///     .fail(1.0, StatusCode::TOO_MANY_REQUESTS)
///     .retry_after(Duration::from_secs(2))
///     .build()?;
/// assert!(MockProfile::builder().fail(1.5, StatusCode::BAD_GATEWAY).build().is_err());
/// # let _ = (flaky, throttled);
/// # Ok::<(), switchyard_services::mock::MockConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct MockProfile {
    pub(crate) latency: Latency,
    pub(crate) chunk_interval: Latency,
    pub(crate) chunks: u32,
    pub(crate) fail_rate: f64,
    pub(crate) fail_status: StatusCode,
    pub(crate) retry_after: Option<Duration>,
    pub(crate) error_code: Option<String>,
    pub(crate) stall_rate: f64,
    pub(crate) cut_after: u32,
    pub(crate) cut_rate: f64,
    pub(crate) prompt_tokens: Option<u64>,
    pub(crate) embedding_dims: usize,
    pub(crate) seed: u64,
    pub(crate) reset_rate: f64,
    pub(crate) silent_rate: f64,
    pub(crate) malformed_after: u32,
    pub(crate) malformed_rate: f64,
    pub(crate) no_done_rate: f64,
    pub(crate) huge_bytes: Option<usize>,
    pub(crate) stream_error_after: u32,
    pub(crate) stream_error_rate: f64,
}

impl Default for MockProfile {
    fn default() -> Self {
        Self {
            latency: Latency::ZERO,
            chunk_interval: Latency::fixed(Duration::from_millis(10)),
            chunks: 8,
            fail_rate: 0.0,
            fail_status: StatusCode::INTERNAL_SERVER_ERROR,
            retry_after: None,
            error_code: None,
            stall_rate: 0.0,
            cut_after: 0,
            cut_rate: 0.0,
            prompt_tokens: None,
            embedding_dims: 8,
            seed: 0,
            reset_rate: 0.0,
            silent_rate: 0.0,
            malformed_after: 0,
            malformed_rate: 0.0,
            no_done_rate: 0.0,
            huge_bytes: None,
            stream_error_after: 0,
            stream_error_rate: 0.0,
        }
    }
}

impl MockProfile {
    /// Answers at once, never fails.
    pub fn healthy() -> Self {
        Self::default()
    }

    /// Starts from the default profile.
    pub fn builder() -> MockProfileBuilder {
        MockProfileBuilder { profile: Self::default() }
    }

    /// Changes this profile.
    pub fn to_builder(&self) -> MockProfileBuilder {
        MockProfileBuilder { profile: self.clone() }
    }

    /// Content chunks per streamed answer (one completion token each).
    pub fn chunks(&self) -> u32 {
        self.chunks
    }

    /// The probability that a request fails.
    pub fn fail_rate(&self) -> f64 {
        self.fail_rate
    }
}

/// Builds a [`MockProfile`]; see [`MockProfile::builder`].
#[derive(Clone, Debug)]
pub struct MockProfileBuilder {
    profile: MockProfile,
}

impl MockProfileBuilder {
    /// Time to the answer's headers: the whole answer, the first chunk of a stream, or a failure.
    pub fn latency(mut self, latency: Latency) -> Self {
        self.profile.latency = latency;
        self
    }

    /// Time between two chunks of a stream.
    pub fn chunk_interval(mut self, interval: Latency) -> Self {
        self.profile.chunk_interval = interval;
        self
    }

    /// Content chunks per streamed answer; each is one completion token, and whole answers carry
    /// the same text.
    pub fn chunks(mut self, chunks: u32) -> Self {
        self.profile.chunks = chunks;
        self
    }

    /// Fails a `rate` of requests with `status` and an OpenAI error body.
    pub fn fail(mut self, rate: f64, status: StatusCode) -> Self {
        self.profile.fail_rate = rate;
        self.profile.fail_status = status;
        self
    }

    /// Sends `Retry-After` (whole seconds, rounded up) with failures, plus `retry-after-ms` when
    /// `after` is not a whole number of seconds.
    pub fn retry_after(mut self, after: Duration) -> Self {
        self.profile.retry_after = Some(after);
        self
    }

    /// The `code` of the failures' error body (`context_length_exceeded`, `content_filter`,
    /// `insufficient_quota`, ...); by default the usual code for the status.
    pub fn error_code(mut self, code: impl Into<String>) -> Self {
        self.profile.error_code = Some(code.into());
        self
    }

    /// Stalls a `rate` of requests: the answer's headers arrive, then nothing until the server
    /// shuts down.
    pub fn stall(mut self, rate: f64) -> Self {
        self.profile.stall_rate = rate;
        self
    }

    /// Cuts a `rate` of streams after `after_chunks` content chunks: the connection closes
    /// without the finish chunk, the usage or `[DONE]`.
    pub fn stream_cut(mut self, after_chunks: u32, rate: f64) -> Self {
        self.profile.cut_after = after_chunks;
        self.profile.cut_rate = rate;
        self
    }

    /// Reports this many prompt tokens (by default about one per four characters of the
    /// request's text).
    pub fn prompt_tokens(mut self, tokens: u64) -> Self {
        self.profile.prompt_tokens = Some(tokens);
        self
    }

    /// Length of the embedding vectors.
    pub fn embedding_dims(mut self, dims: usize) -> Self {
        self.profile.embedding_dims = dims;
        self
    }

    /// Resets a `rate` of connections: the server reads nothing and closes the connection with
    /// the request unread, so the client sees a TCP reset before any answer. Drawn per connection
    /// (a pooled connection that was not reset stays good), from the seed and the connection's
    /// number.
    pub fn reset(mut self, rate: f64) -> Self {
        self.profile.reset_rate = rate;
        self
    }

    /// Leaves a `rate` of connections without an answer: accepted, never read or written, closed
    /// only when the server shuts down. Drawn per connection, like [`reset`](Self::reset).
    pub fn no_response(mut self, rate: f64) -> Self {
        self.profile.silent_rate = rate;
        self
    }

    /// Sends a malformed event (truncated JSON) in a `rate` of streams after `after_chunks`
    /// content chunks, then goes on as usual; a whole answer drawn malformed is a `200` with a
    /// truncated JSON body.
    pub fn malformed_chunk(mut self, after_chunks: u32, rate: f64) -> Self {
        self.profile.malformed_after = after_chunks;
        self.profile.malformed_rate = rate;
        self
    }

    /// Ends a `rate` of streams cleanly (the finish chunk and the usage are sent, the body ends)
    /// but without `data: [DONE]`.
    pub fn missing_done(mut self, rate: f64) -> Self {
        self.profile.no_done_rate = rate;
        self
    }

    /// Ends a `rate` of streams with an error event after `after_chunks` content chunks (0: before
    /// the first), the way a provider reports a failure once the `200` is sent: on the Anthropic
    /// side `event: error` with an `overloaded_error` (with 0, right after `message_start`, as
    /// Anthropic does when it is overloaded mid-flight), on the OpenAI side a
    /// `data: {"error":{...}}` chunk of type `server_error`. The body then ends cleanly, without
    /// the finish chunk, the usage, `[DONE]` or `message_stop`.
    pub fn stream_error(mut self, after_chunks: u32, rate: f64) -> Self {
        self.profile.stream_error_after = after_chunks;
        self.profile.stream_error_rate = rate;
        self
    }

    /// Pads the content of every whole chat answer (the text of an Anthropic message) to `bytes`
    /// bytes (an oversized answer).
    pub fn huge_response(mut self, bytes: usize) -> Self {
        self.profile.huge_bytes = Some(bytes);
        self
    }

    /// The seed of every random draw.
    pub fn seed(mut self, seed: u64) -> Self {
        self.profile.seed = seed;
        self
    }

    /// Checks the rates, the status and the latencies, and builds the profile.
    pub fn build(self) -> Result<MockProfile, MockConfigError> {
        let p = self.profile;
        let rates = [
            ("fail", p.fail_rate),
            ("stall", p.stall_rate),
            ("stream_cut", p.cut_rate),
            ("reset", p.reset_rate),
            ("no_response", p.silent_rate),
            ("malformed_chunk", p.malformed_rate),
            ("missing_done", p.no_done_rate),
            ("stream_error", p.stream_error_rate),
        ];
        for (what, rate) in rates {
            if !(rate.is_finite() && (0.0..=1.0).contains(&rate)) {
                return Err(MockConfigError::InvalidRate { what, rate });
            }
        }
        if !(p.fail_status.is_client_error() || p.fail_status.is_server_error()) {
            return Err(MockConfigError::InvalidStatus(p.fail_status.as_u16()));
        }
        p.latency.validate("latency").map_err(MockConfigError::InvalidLatency)?;
        p.chunk_interval.validate("chunk_interval").map_err(MockConfigError::InvalidLatency)?;
        if p.chunks == 0 {
            return Err(MockConfigError::NoChunks);
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_profiles_are_refused() {
        let b = MockProfile::builder;
        assert_eq!(b().chunks(0).build(), Err(MockConfigError::NoChunks));
        assert_eq!(b().fail(0.5, StatusCode::OK).build(), Err(MockConfigError::InvalidStatus(200)));
        assert!(matches!(b().stall(f64::NAN).build(), Err(MockConfigError::InvalidRate { what: "stall", .. })));
        assert!(matches!(b().stream_cut(2, -0.1).build(), Err(MockConfigError::InvalidRate { .. })));
        let inverted = Latency::log_normal(Duration::from_secs(2), Duration::from_secs(1));
        assert!(matches!(b().latency(inverted).build(), Err(MockConfigError::InvalidLatency(_))));
        assert!(b().fail(1.0, StatusCode::TOO_MANY_REQUESTS).build().is_ok());
        assert!(matches!(b().reset(2.0).build(), Err(MockConfigError::InvalidRate { what: "reset", .. })));
        assert!(matches!(
            b().missing_done(-1.0).build(),
            Err(MockConfigError::InvalidRate { what: "missing_done", .. })
        ));
        assert!(b().malformed_chunk(2, 1.0).no_response(0.5).huge_response(1 << 20).build().is_ok());
        assert!(matches!(
            b().stream_error(0, 1.1).build(),
            Err(MockConfigError::InvalidRate { what: "stream_error", .. })
        ));
    }

    #[test]
    fn anthropic_overloaded_529_is_a_valid_injected_status() {
        let status = StatusCode::from_u16(529).expect("a status code");
        assert_eq!(MockProfile::builder().fail(1.0, status).build().map(|p| p.fail_status), Ok(status));
    }
}
