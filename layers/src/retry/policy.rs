//! Retry counts per error class ([`RetryPolicy`]), the should-retry table and the backoff formula.
//!
//! Everything here is pure: the service gathers the facts (group size, healthy candidates, which
//! fallback tables have an entry) and these functions decide.

use std::time::Duration;

pub use crate::error_class::{DEFAULT_RETRIES_FIELD, RETRY_POLICY_FIELDS};
use crate::{
    Outcome,
    error_class::{PerErrorClass, Retries, UnknownPolicyField},
};

/// First exponential step (LiteLLM `INITIAL_RETRY_DELAY`).
pub(crate) const INITIAL_BACKOFF: Duration = Duration::from_millis(500);
/// Ceiling of the exponential steps (LiteLLM `MAX_RETRY_DELAY`); the router floor is not capped.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// Longest `Retry-After` a retry waits for; a longer wait is left to cooldowns and fallbacks.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// Upper bound (exclusive) of the random jitter added to every computed wait (LiteLLM `JITTER`).
pub(crate) const JITTER: Duration = Duration::from_millis(750);

/// Retries per error class (LiteLLM `retry_policy` / `model_group_retry_policy`): the shared
/// per-error-class table ([`PerErrorClass`]) read with LiteLLM's `...ErrorRetries` names.
///
/// A field that is `None` leaves the class to the next source of the retry count (the failed
/// deployment's `num_retries`, then the router's). A field that is set also lifts the status rules
/// of the should-retry table for its class (a `bad_request` of 2 retries 400s), but never makes a
/// context-window or content-policy error retry when the group has a fallback for it.
///
/// Classes are LiteLLM's: a context-window error is a bad request; a content-policy error takes
/// `content_policy`, else `bad_request` (its parent class in LiteLLM); a 503 takes
/// `service_unavailable`, a 502 `bad_gateway`, else (and every other 5xx, connection failure and
/// broken transfer) `internal_server_error`; a 404 takes `not_found` (`NotFoundErrorRetries`,
/// which lifts the rule that never retries a 404). `default` (`DefaultRetries`) is the count of
/// a failure whose class has no value of its own: it ranks after the failed deployment's
/// `num_retries` and before the router's, and it does not lift any status rule.
///
/// ```
/// use std::collections::BTreeMap;
/// use switchyard_layers::{Outcome, retry::RetryPolicy};
///
/// let map = BTreeMap::from([("AuthenticationErrorRetries".to_owned(), 0), ("RateLimitErrorRetries".to_owned(), 4)]);
/// let policy = RetryPolicy::from_litellm(&map)?;
/// assert_eq!(policy.for_outcome(Outcome::Auth), Some(0));
/// assert_eq!(policy.for_outcome(Outcome::RateLimited), Some(4));
/// assert_eq!(policy.for_outcome(Outcome::ServerError), None);
/// assert_eq!(policy.for_outcome(Outcome::NotFound), None);
/// let newer = BTreeMap::from([("NotFoundErrorRetries".to_owned(), 1), ("DefaultRetries".to_owned(), 3)]);
/// let policy = RetryPolicy::from_litellm(&newer)?;
/// assert_eq!((policy.for_outcome(Outcome::NotFound), policy.default), (Some(1), Some(3)));
/// assert!(RetryPolicy::from_litellm(&BTreeMap::from([("Typo".to_owned(), 1)])).is_err());
/// # Ok::<(), switchyard_layers::retry::RetryPolicyError>(())
/// ```
pub type RetryPolicy = PerErrorClass<Retries>;

/// A LiteLLM retry policy named a field that does not exist.
pub type RetryPolicyError = UnknownPolicyField;

/// Why the retry layer gave up on a group (for traces and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NoRetry {
    /// The retry count for this error is used up.
    Exhausted,
    /// The request cannot be cloned for another attempt.
    NotReplayable,
    /// One of our own refusals that waiting cannot fix (unknown group, no candidates, budget,
    /// context window).
    Refusal,
    /// Context window exceeded and the group has a context-window fallback.
    ContextWindowFallback,
    /// Content filter and the group has a content-policy fallback.
    ContentPolicyFallback,
    /// The status says another attempt would fail the same way (400, 404, 422, ...).
    NotRetryable,
    /// An authentication error in a group with one deployment.
    AuthSingleDeployment,
    /// Rate limited, nothing healthy left, and a general fallback exists.
    RateLimitedToFallback,
    /// No healthy candidate is left in the group.
    NoHealthy,
    /// The wait would cross the call's deadline.
    Deadline,
    /// The shared retry budget is empty.
    Budget,
    /// The inner service failed while getting ready for the retry.
    NotReady,
}

impl NoRetry {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Exhausted => "exhausted",
            Self::NotReplayable => "not_replayable",
            Self::Refusal => "refusal",
            Self::ContextWindowFallback => "context_window_fallback",
            Self::ContentPolicyFallback => "content_policy_fallback",
            Self::NotRetryable => "not_retryable",
            Self::AuthSingleDeployment => "auth_single_deployment",
            Self::RateLimitedToFallback => "rate_limited_to_fallback",
            Self::NoHealthy => "no_healthy_candidate",
            Self::Deadline => "deadline",
            Self::Budget => "budget",
            Self::NotReady => "not_ready",
        }
    }
}

/// Which fallback tables have an entry for the failing group (after `disable_fallbacks`, the hop
/// limit and per-request fallbacks are taken into account).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FallbackPresence {
    pub(crate) general: bool,
    pub(crate) context_window: bool,
    pub(crate) content_policy: bool,
}

/// Rows 1–4 and 6 of the should-retry table: the rules that need no state read.
///
/// `policy_set` says a retry policy sets a count for this class, which lifts rows 3, 4 and 6 (as
/// LiteLLM skips its whole table then), but not rows 1 and 2.
pub(crate) fn status_rules(
    outcome: Outcome,
    policy_set: bool,
    group_size: usize,
    fallbacks: FallbackPresence,
) -> Option<NoRetry> {
    if outcome == Outcome::ContextWindowExceeded && fallbacks.context_window {
        return Some(NoRetry::ContextWindowFallback);
    }
    if outcome == Outcome::ContentPolicy && fallbacks.content_policy {
        return Some(NoRetry::ContentPolicyFallback);
    }
    if policy_set {
        return None;
    }
    if !outcome.is_retryable() && outcome != Outcome::Auth {
        // Row 4 (not found) is a case of row 3: a 404 is never retryable.
        return Some(NoRetry::NotRetryable);
    }
    if outcome == Outcome::Auth && group_size <= 1 {
        return Some(NoRetry::AuthSingleDeployment);
    }
    None
}

/// Rows 5 and 7: the rules that need the healthy count.
pub(crate) fn health_rules(outcome: Outcome, healthy: usize, general_fallback: bool) -> Option<NoRetry> {
    if healthy > 0 {
        return None;
    }
    if outcome == Outcome::RateLimited && general_fallback {
        return Some(NoRetry::RateLimitedToFallback);
    }
    Some(NoRetry::NoHealthy)
}

/// The wait before retry number `retry` (1 for the first retry), without jitter.
///
/// The latest error's `Retry-After` when it is in (0, 60 s], else 0.5 s × 2^(retry−1) capped at
/// 8 s; never below `floor` (the router's `retry_after`, which is not capped).
pub(crate) fn backoff(retry: u32, retry_after: Option<Duration>, floor: Duration) -> Duration {
    let base = match retry_after {
        Some(ra) if !ra.is_zero() && ra <= MAX_RETRY_AFTER => ra,
        _ => {
            let doublings = retry.saturating_sub(1).min(16);
            INITIAL_BACKOFF.saturating_mul(1 << doublings).min(MAX_BACKOFF)
        }
    };
    base.max(floor)
}

/// Uniform jitter in `[0, JITTER)` from a unit sample in `[0, 1)`.
pub(crate) fn jitter(unit: f64) -> Duration {
    JITTER.mul_f64(unit.clamp(0.0, 1.0 - f64::EPSILON))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn litellm_names_map_to_every_field() {
        let map: BTreeMap<String, u32> =
            RETRY_POLICY_FIELDS.iter().zip(1..).map(|(k, v)| ((*k).to_owned(), v)).collect();
        let p = RetryPolicy::from_litellm(&map).expect("known names");
        assert_eq!(
            p,
            RetryPolicy::new()
                .bad_request(1)
                .authentication(2)
                .timeout(3)
                .rate_limit(4)
                .content_policy(5)
                .internal_server_error(6)
                .service_unavailable(7)
                .bad_gateway(8)
                .not_found(9)
        );
    }

    #[test]
    fn unknown_litellm_name_is_named_in_the_error() {
        let err = RetryPolicy::from_litellm(&BTreeMap::from([("NotFoundRetries".to_owned(), 1)])).unwrap_err();
        assert_eq!(err.field(), "NotFoundRetries");
        assert!(err.to_string().contains("NotFoundErrorRetries, DefaultRetries"), "{err}");
    }

    #[test]
    fn context_window_is_a_bad_request_and_transport_a_server_error() {
        let p = RetryPolicy::new().bad_request(5).internal_server_error(7);
        assert_eq!(p.for_outcome(Outcome::ContextWindowExceeded), Some(5));
        assert_eq!(p.for_outcome(Outcome::Connect), Some(7));
        assert_eq!(p.for_outcome(Outcome::Transport), Some(7));
        assert_eq!(p.for_outcome(Outcome::NotFound), None);
    }

    #[test]
    fn policy_lifts_status_rules_but_not_fallback_rules() {
        let cw = FallbackPresence { context_window: true, ..Default::default() };
        assert_eq!(status_rules(Outcome::ContextWindowExceeded, true, 3, cw), Some(NoRetry::ContextWindowFallback));
        assert_eq!(status_rules(Outcome::BadRequest, true, 3, cw), None);
        assert_eq!(status_rules(Outcome::BadRequest, false, 3, cw), Some(NoRetry::NotRetryable));
        assert_eq!(status_rules(Outcome::Auth, false, 1, cw), Some(NoRetry::AuthSingleDeployment));
        assert_eq!(status_rules(Outcome::Auth, false, 2, cw), None);
        assert_eq!(status_rules(Outcome::Auth, true, 1, cw), None);
    }

    #[test]
    fn backoff_steps() {
        let z = Duration::ZERO;
        let secs = |s: f64| Duration::from_secs_f64(s);
        let steps: Vec<_> = (1..=7).map(|n| backoff(n, None, z)).collect();
        assert_eq!(steps, [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0].map(secs));
        assert_eq!(backoff(1, Some(secs(3.0)), z), secs(3.0));
        assert_eq!(backoff(3, Some(secs(61.0)), z), secs(2.0));
        assert_eq!(backoff(3, Some(z), z), secs(2.0));
        assert_eq!(backoff(1, None, secs(20.0)), secs(20.0));
        assert_eq!(backoff(1, Some(secs(3.0)), secs(5.0)), secs(5.0));
    }

    proptest! {
        #[test]
        fn backoff_is_bounded_and_floored(retry in 0u32..1000, ra_ms in proptest::option::of(0u64..200_000), floor_ms in 0u64..100_000) {
            let floor = Duration::from_millis(floor_ms);
            let b = backoff(retry, ra_ms.map(Duration::from_millis), floor);
            prop_assert!(b >= floor);
            prop_assert!(b <= MAX_RETRY_AFTER.max(floor));
        }

        #[test]
        fn backoff_without_retry_after_never_decreases(retry in 1u32..1000) {
            prop_assert!(backoff(retry + 1, None, Duration::ZERO) >= backoff(retry, None, Duration::ZERO));
        }

        #[test]
        fn jitter_stays_below_its_bound(unit in 0.0f64..=1.0) {
            prop_assert!(jitter(unit) < JITTER);
        }
    }
}
