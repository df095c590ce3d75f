//! The cooldown rules, as pure functions of an attempt's failure and the window's counts.

use std::time::Duration;

use super::CooldownConfig;
use crate::{Deployment, Outcome, state::OutcomeCounts};

/// Which failures may bench a deployment at all (LiteLLM's status gate): 429, 401, 408, 404 and
/// 5xx; no other 4xx. Without a status, the outcome decides; a connection failure or a broken
/// transfer counts (LiteLLM exempted `APIConnectionError`, so a dead host was never benched).
pub(crate) fn passes_status_gate(outcome: Outcome, status: Option<u16>) -> bool {
    match status {
        Some(429 | 401 | 408 | 404) => true,
        Some(400..=499) => false,
        Some(500..) => true,
        Some(_) => false,
        None => matches!(
            outcome,
            Outcome::RateLimited
                | Outcome::Timeout
                | Outcome::ServerError
                | Outcome::Connect
                | Outcome::Transport
                | Outcome::NotFound
                | Outcome::Auth
        ),
    }
}

/// Why a failure benches the deployment, or `None`. `counts` include this failure.
pub(crate) fn rule(
    config: &CooldownConfig,
    outcome: Outcome,
    status: Option<u16>,
    counts: OutcomeCounts,
    group_size: usize,
) -> Option<&'static str> {
    if !passes_status_gate(outcome, status) {
        return None;
    }
    if config.allowed_fails.is_some() || config.allowed_fails_policy.is_some() {
        let allowed = config
            .allowed_fails_policy
            .and_then(|p| p.for_failure(outcome, status))
            .or(config.allowed_fails)
            .unwrap_or(3);
        return (counts.failures > u64::from(allowed)).then_some("allowed_fails exceeded");
    }
    let single = group_size <= 1;
    let total = counts.successes + counts.failures;
    if outcome == Outcome::RateLimited && !single {
        return Some("rate limited");
    }
    if counts.failures == total && total >= config.all_fail_min_requests {
        return Some("every request failed");
    }
    if !single && total >= config.min_requests && counts.failures as f64 / total as f64 > config.failure_threshold {
        return Some("failure rate above threshold");
    }
    let non_retryable = matches!(status, Some(401 | 404)) || (status.is_none() && outcome == Outcome::NotFound);
    if non_retryable {
        return Some("non-retryable status");
    }
    None
}

/// How long to bench, LiteLLM 1.100's precedence (`deployment_callback_on_failure`): the
/// deployment's `model_info.cooldown_time`, then its `litellm_params.cooldown_time`, then the
/// upstream's Retry-After, then the router's `cooldown_time`. Zero from any of them means never;
/// `None` means do not bench. (A request's own `cooldown_time`, which LiteLLM ranks after
/// `model_info`'s, may only shorten the result: the service applies it.)
pub(crate) fn cooldown_time(
    deployment: Option<&Deployment>,
    retry_after: Option<Duration>,
    config: &CooldownConfig,
) -> Option<Duration> {
    let d = deployment
        .and_then(|d| d.info_cooldown_time)
        .or_else(|| deployment.and_then(|d| d.cooldown_time))
        .or(retry_after)
        .unwrap_or(config.cooldown_time);
    (!d.is_zero()).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cooldown::AllowedFailsPolicy;

    fn counts(successes: u64, failures: u64) -> OutcomeCounts {
        OutcomeCounts { successes, failures }
    }

    #[test]
    fn status_gate_admits_429_401_408_404_and_5xx_only() {
        for s in [429, 401, 408, 404, 500, 502, 503] {
            assert!(passes_status_gate(Outcome::from_status(http::StatusCode::from_u16(s).unwrap()), Some(s)), "{s}");
        }
        for s in [400, 403, 409, 413, 422] {
            assert!(!passes_status_gate(Outcome::BadRequest, Some(s)), "{s}");
        }
        assert!(passes_status_gate(Outcome::Connect, None));
        assert!(!passes_status_gate(Outcome::ContextWindowExceeded, None));
    }

    #[test]
    fn rate_rule_needs_five_requests_and_more_than_half_failing() {
        let c = CooldownConfig::default();
        assert_eq!(rule(&c, Outcome::ServerError, Some(500), counts(0, 1), 3), None);
        assert_eq!(rule(&c, Outcome::ServerError, Some(500), counts(0, 4), 3), None);
        assert!(rule(&c, Outcome::ServerError, Some(500), counts(0, 5), 3).is_some());
        assert_eq!(rule(&c, Outcome::ServerError, Some(500), counts(5, 5), 3), None, "50% is not above 50%");
        assert!(rule(&c, Outcome::ServerError, Some(500), counts(4, 5), 3).is_some());
    }

    #[test]
    fn single_deployment_is_spared_by_the_rate_rule_but_not_at_1000_all_failing() {
        let c = CooldownConfig::default();
        assert_eq!(rule(&c, Outcome::RateLimited, Some(429), counts(0, 1), 1), None);
        assert_eq!(rule(&c, Outcome::ServerError, Some(500), counts(0, 999), 1), None);
        assert!(rule(&c, Outcome::ServerError, Some(500), counts(0, 1000), 1).is_some());
        assert!(rule(&c, Outcome::Auth, Some(401), counts(10, 1), 1).is_some(), "401 benches even a single deployment");
    }

    #[test]
    fn allowed_fails_switches_to_counting_and_policy_zero_is_honoured() {
        let c = CooldownConfig::default().allowed_fails(Some(1));
        assert_eq!(rule(&c, Outcome::Timeout, Some(408), counts(0, 1), 1), None);
        assert!(rule(&c, Outcome::Timeout, Some(408), counts(0, 2), 1).is_some());
        let p = AllowedFailsPolicy::new().timeout(0).internal_server_error(2);
        let c = CooldownConfig::default().allowed_fails_policy(Some(p));
        assert!(rule(&c, Outcome::Timeout, Some(408), counts(0, 1), 3).is_some());
        assert_eq!(rule(&c, Outcome::ServerError, Some(500), counts(0, 2), 3), None);
        assert!(rule(&c, Outcome::ServerError, Some(500), counts(0, 3), 3).is_some());
    }

    #[test]
    fn allowed_fails_policy_reads_a_404_as_not_found_not_as_auth() {
        // LiteLLM 1.100 reads `NotFoundErrorAllowedFails` for a 404, else the router's allowance.
        let p = AllowedFailsPolicy::new().authentication(0);
        let c = CooldownConfig::default().allowed_fails_policy(Some(p));
        assert!(rule(&c, Outcome::Auth, Some(401), counts(0, 1), 3).is_some());
        assert_eq!(rule(&c, Outcome::NotFound, Some(404), counts(0, 3), 3), None, "the default allowance is 3");
        assert!(rule(&c, Outcome::NotFound, Some(404), counts(0, 4), 3).is_some());
        let c = CooldownConfig::default().allowed_fails_policy(Some(p.not_found(0)));
        assert!(rule(&c, Outcome::NotFound, Some(404), counts(0, 1), 3).is_some());
    }

    #[test]
    fn cooldown_time_precedence() {
        let c = CooldownConfig::default();
        let d = Deployment::builder("g", "m").cooldown_time(Duration::from_secs(9)).build().unwrap();
        let never = Deployment::builder("g", "m").cooldown_time(Duration::ZERO).build().unwrap();
        let plain = Deployment::builder("g", "m").build().unwrap();
        let ra = Some(Duration::from_secs(30));
        assert_eq!(cooldown_time(Some(&d), ra, &c), Some(Duration::from_secs(9)));
        assert_eq!(cooldown_time(Some(&never), ra, &c), None);
        assert_eq!(cooldown_time(Some(&plain), ra, &c), Some(Duration::from_secs(30)));
        assert_eq!(cooldown_time(Some(&plain), None, &c), Some(Duration::from_secs(5)));
        assert_eq!(cooldown_time(Some(&plain), None, &c.clone().cooldown_time(Duration::ZERO)), None);
    }

    /// LiteLLM 1.100 `deployment_callback_on_failure`: `model_info.cooldown_time` first, then
    /// `litellm_params.cooldown_time`, then Retry-After
    /// (`test_deployment_callback_respects_cooldown_time`, census §3.3 #56).
    #[test]
    fn model_info_cooldown_time_wins_over_the_params_and_retry_after() {
        let c = CooldownConfig::default();
        let secs = Duration::from_secs;
        let both = Deployment::builder("g", "m").cooldown_time(secs(9)).info_cooldown_time(secs(42)).build().unwrap();
        let params = Deployment::builder("g", "m").cooldown_time(secs(9)).build().unwrap();
        let ra = Some(secs(30));
        assert_eq!(cooldown_time(Some(&both), ra, &c), Some(secs(42)));
        assert_eq!(cooldown_time(Some(&params), ra, &c), Some(secs(9)));
        let never = Deployment::builder("g", "m").cooldown_time(secs(9)).info_cooldown_time(Duration::ZERO).build();
        assert_eq!(cooldown_time(Some(&never.unwrap()), ra, &c), None, "zero means never");
    }
}
