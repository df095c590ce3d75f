//! [`MockProfile`]: how the mock upstream answers, in the [shared vocabulary](crate::profile)
//! plus the mock's wire-level faults.

use std::{sync::Arc, time::Duration};

use http::StatusCode;
use rand::Rng;

use crate::profile::{Failure, Latency, ProfileError, check_failure_rates, check_rate, check_stream};

/// How the mock upstream answers: latency, stream shape, injected failures, cuts and stalls, and
/// the seed that makes all of it reproducible.
///
/// The default profile answers at once, streams 8 content chunks 10 ms apart, and never fails.
/// Every request draws its behaviour from its own generator, seeded from the profile's seed and
/// the request's number, in a fixed order (failure, stall, cut, latency, then malformed, missing
/// `[DONE]` and in-stream error when their rate is not zero, then which failure when the profile
/// has several kinds, then chunk gaps): the same seed gives the same sequence of behaviours, in
/// any dialect. Connection faults (reset, no response) are drawn per connection.
///
/// Latency, stream shape and failures by kind are the [shared vocabulary](crate::profile), named
/// as on [`SimProfile`](crate::sim::SimProfile); on top of it, injected failures may have any 4xx
/// or 5xx status ([`fail_status`](MockProfileBuilder::fail_status), Anthropic's `529 Overloaded`
/// included) and any error code ([`error_code`](MockProfileBuilder::error_code)).
///
/// ```
/// use std::time::Duration;
/// use http::StatusCode;
/// use switchyard_services::{mock::MockProfile, profile::{Failure, Latency}};
///
/// // 60 ms median with a log-normal tail, 30% of requests answer 503.
/// let flaky = MockProfile::builder()
///     .latency(Latency::log_normal(Duration::from_millis(60), Duration::from_millis(250)))
///     .fail(Failure::Unavailable, 0.3)
///     .seed(7)
///     .build()?;
/// // Always 429 with `Retry-After: 2`.
/// let throttled = MockProfile::builder()
///     .fail(Failure::RateLimited, 1.0)
///     .retry_after(Duration::from_secs(2))
///     .build()?;
/// // Anthropic's overload status, which no shared failure kind names.
/// let overloaded = MockProfile::builder().fail_status(StatusCode::from_u16(529)?, 1.0).build()?;
/// assert!(MockProfile::builder().fail(Failure::InternalError, 1.5).build().is_err());
/// assert!(MockProfile::builder().fail(Failure::Hang, 1.0).build().is_err(), "a per-connection fault here");
/// # let _ = (flaky, throttled, overloaded);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct MockProfile {
    pub(crate) latency: Latency,
    pub(crate) chunk_interval: Latency,
    pub(crate) chunks: u32,
    /// Failure rates by shared kind ([`Failure::index`]).
    rates: [f64; Failure::ALL.len()],
    /// A failure with a status of the user's choice, and its rate.
    custom_status: StatusCode,
    custom_rate: f64,
    /// The error code the user set for every failure.
    code: Option<String>,
    /// The failure a request drawn to fail answers with: its status and error code (set by
    /// `build` when the profile has one kind of failure, per request by `injected` when it has
    /// several).
    pub(crate) fail_status: StatusCode,
    pub(crate) error_code: Option<String>,
    pub(crate) retry_after: Option<Duration>,
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
            rates: [0.0; Failure::ALL.len()],
            custom_status: StatusCode::INTERNAL_SERVER_ERROR,
            custom_rate: 0.0,
            code: None,
            fail_status: StatusCode::INTERNAL_SERVER_ERROR,
            error_code: None,
            retry_after: None,
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

    /// The probability that a request fails, all failures together.
    pub fn fail_rate(&self) -> f64 {
        // Zeros added to a single rate leave it exact, so the draw is the one a single rate gives.
        self.rates.iter().sum::<f64>() + self.custom_rate
    }

    /// The probability that a request fails with `kind`.
    pub fn failure_rate(&self, kind: Failure) -> f64 {
        self.rates[kind.index()]
    }

    /// The failures a request may answer with, by kind (then the custom status), each with its
    /// rate; those whose rate is zero are left out.
    fn failures(&self) -> impl Iterator<Item = (Option<Failure>, f64)> + '_ {
        Failure::ALL
            .into_iter()
            .map(|kind| (Some(kind), self.rates[kind.index()]))
            .chain([(None, self.custom_rate)])
            .filter(|(_, rate)| *rate > 0.0)
    }

    /// The status and error code of `failure` (a shared kind, or the custom status).
    fn answer_of(&self, failure: Option<Failure>) -> (StatusCode, Option<String>) {
        match failure.and_then(|kind| kind.status().map(|status| (kind, status))) {
            Some((kind, status)) => (status, self.code.clone().or_else(|| kind.distinct_code().map(str::to_owned))),
            None => (self.custom_status, self.code.clone()),
        }
    }

    /// The profile a request drawn to fail answers with: this one when it has a single kind of
    /// failure (set by `build`), otherwise a copy whose `fail_status` and `error_code` are those of
    /// the failure picked by one more draw, in proportion to the rates.
    pub(crate) fn injected<R: Rng + ?Sized>(self: &Arc<Self>, rng: &mut R) -> Arc<Self> {
        if self.failures().nth(1).is_none() {
            return self.clone();
        }
        let mut left = rng.random::<f64>() * self.fail_rate();
        let mut picked = None;
        for (failure, rate) in self.failures() {
            picked = failure;
            if left < rate {
                break;
            }
            left -= rate;
        }
        let (fail_status, error_code) = self.answer_of(picked);
        Arc::new(Self { fail_status, error_code, ..Self::clone(self) })
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

    /// The probability that a request fails with `kind` (replaces an earlier rate for `kind`): its
    /// status and the dialect's error body for it. [`Failure::Connect`] and [`Failure::Hang`] are
    /// refused by [`build`](Self::build): the mock fails connections with
    /// [`reset`](Self::reset) and [`no_response`](Self::no_response).
    pub fn fail(mut self, kind: Failure, rate: f64) -> Self {
        self.profile.rates[kind.index()] = rate;
        self
    }

    /// The probability that a request fails with `status`, any 4xx or 5xx (Anthropic's `529`, a
    /// `502`, ...), and the dialect's error body for it (replaces an earlier custom status).
    pub fn fail_status(mut self, status: StatusCode, rate: f64) -> Self {
        self.profile.custom_status = status;
        self.profile.custom_rate = rate;
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
        self.profile.code = Some(code.into());
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
    pub fn build(self) -> Result<MockProfile, ProfileError> {
        let mut p = self.profile;
        check_failure_rates(&p.rates)?;
        for kind in [Failure::Connect, Failure::Hang] {
            if p.rates[kind.index()] > 0.0 {
                return Err(ProfileError::UnsupportedFailure(kind));
            }
        }
        let rates = [
            ("fail_status", p.custom_rate),
            ("stall", p.stall_rate),
            ("stream_cut", p.cut_rate),
            ("reset", p.reset_rate),
            ("no_response", p.silent_rate),
            ("malformed_chunk", p.malformed_rate),
            ("missing_done", p.no_done_rate),
            ("stream_error", p.stream_error_rate),
        ];
        for (what, rate) in rates {
            check_rate(what, rate)?;
        }
        let total = p.fail_rate();
        if total > 1.0 + 1e-9 {
            return Err(ProfileError::RatesAboveOne { total });
        }
        if !(p.custom_status.is_client_error() || p.custom_status.is_server_error()) {
            return Err(ProfileError::InvalidStatus(p.custom_status.as_u16()));
        }
        p.latency.validate("latency")?;
        check_stream(p.chunks, &p.chunk_interval)?;
        // With one kind of failure (or none), every failing request answers the same.
        let single = p.failures().next().map(|(failure, _)| failure);
        (p.fail_status, p.error_code) = p.answer_of(single.unwrap_or(None));
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use rand::{SeedableRng, rngs::SmallRng};

    use super::*;

    #[test]
    fn bad_profiles_are_refused() {
        let b = MockProfile::builder;
        assert_eq!(b().chunks(0).build(), Err(ProfileError::NoChunks));
        assert_eq!(b().fail_status(StatusCode::OK, 0.5).build(), Err(ProfileError::InvalidStatus(200)));
        assert!(matches!(b().stall(f64::NAN).build(), Err(ProfileError::InvalidRate { what: "stall", .. })));
        assert!(matches!(b().stream_cut(2, -0.1).build(), Err(ProfileError::InvalidRate { .. })));
        let inverted = Latency::log_normal(Duration::from_secs(2), Duration::from_secs(1));
        assert!(matches!(b().latency(inverted).build(), Err(ProfileError::InvalidLatency { what: "latency", .. })));
        assert!(b().fail(Failure::RateLimited, 1.0).build().is_ok());
        assert!(matches!(b().reset(2.0).build(), Err(ProfileError::InvalidRate { what: "reset", .. })));
        assert!(matches!(b().missing_done(-1.0).build(), Err(ProfileError::InvalidRate { what: "missing_done", .. })));
        assert!(b().malformed_chunk(2, 1.0).no_response(0.5).huge_response(1 << 20).build().is_ok());
        assert!(matches!(
            b().stream_error(0, 1.1).build(),
            Err(ProfileError::InvalidRate { what: "stream_error", .. })
        ));
        assert_eq!(b().fail(Failure::Connect, 0.1).build(), Err(ProfileError::UnsupportedFailure(Failure::Connect)));
        assert!(matches!(
            b().fail(Failure::RateLimited, 0.6).fail_status(StatusCode::BAD_GATEWAY, 0.6).build(),
            Err(ProfileError::RatesAboveOne { .. })
        ));
    }

    #[test]
    fn anthropic_overloaded_529_is_a_valid_injected_status() {
        let status = StatusCode::from_u16(529).expect("a status code");
        assert_eq!(MockProfile::builder().fail_status(status, 1.0).build().map(|p| p.fail_status), Ok(status));
    }

    #[test]
    fn a_failure_kind_answers_its_status_and_distinct_code() {
        let p = MockProfile::builder().fail(Failure::ContextWindowExceeded, 1.0).build().expect("valid profile");
        assert_eq!(
            (p.fail_status, p.error_code.as_deref()),
            (StatusCode::BAD_REQUEST, Some("context_length_exceeded"))
        );
        let p = MockProfile::builder().fail(Failure::RateLimited, 1.0).build().expect("valid profile");
        assert_eq!((p.fail_status, p.error_code.as_deref()), (StatusCode::TOO_MANY_REQUESTS, None));
    }

    #[test]
    fn several_failure_kinds_are_picked_in_proportion_to_their_rates() {
        let p = MockProfile::builder()
            .fail(Failure::RateLimited, 0.3)
            .fail_status(StatusCode::BAD_GATEWAY, 0.1)
            .build()
            .map(Arc::new)
            .expect("valid profile");
        let mut rng = SmallRng::seed_from_u64(3);
        let picks: Vec<StatusCode> = (0..4000).map(|_| p.injected(&mut rng).fail_status).collect();
        let throttled = picks.iter().filter(|s| **s == StatusCode::TOO_MANY_REQUESTS).count();
        let bad_gateway = picks.iter().filter(|s| **s == StatusCode::BAD_GATEWAY).count();
        assert_eq!(throttled + bad_gateway, picks.len());
        assert!((2800..3200).contains(&throttled), "{throttled} of 4000 should be about 3000");
    }
}
