//! What the adaptive router learns from: the outcome of each call it routed, and explicit
//! feedback ([`Feedback`]: a quality score, or one of LiteLLM's per-turn signals).

use std::{fmt, str::FromStr};

use crate::outcome::Outcome;

/// One of LiteLLM's per-turn signals (`router_strategy/adaptive_router/signals.py`), with its
/// bandit update (`_compute_bandit_delta`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Signal {
    /// The user was satisfied: +1 alpha.
    Satisfaction,
    /// The user had to rephrase: +1 beta.
    Misalignment,
    /// The answer repeated the previous one: +1 beta.
    Stagnation,
    /// The user gave up: +1 beta.
    Disengagement,
    /// A tool call failed (an invalid or erroring tool call): +1 beta.
    Failure,
    /// The model repeats the same tool call: +0.5 beta.
    Loop,
    /// A limit was hit (context, rate): nothing, it is uptime, not quality.
    Exhaustion,
}

impl Signal {
    /// Every signal.
    pub const ALL: [Self; 7] = [
        Self::Satisfaction,
        Self::Misalignment,
        Self::Stagnation,
        Self::Disengagement,
        Self::Failure,
        Self::Loop,
        Self::Exhaustion,
    ];

    /// LiteLLM's name (`satisfaction`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Satisfaction => "satisfaction",
            Self::Misalignment => "misalignment",
            Self::Stagnation => "stagnation",
            Self::Disengagement => "disengagement",
            Self::Failure => "failure",
            Self::Loop => "loop",
            Self::Exhaustion => "exhaustion",
        }
    }

    /// The (alpha, beta) update.
    pub const fn delta(self) -> (f64, f64) {
        match self {
            Self::Satisfaction => (1.0, 0.0),
            Self::Misalignment | Self::Stagnation | Self::Disengagement | Self::Failure => (0.0, 1.0),
            Self::Loop => (0.0, 0.5),
            Self::Exhaustion => (0.0, 0.0),
        }
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Signal {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        Self::ALL.into_iter().find(|c| c.as_str() == s).ok_or(())
    }
}

/// Explicit feedback on one routed call (the gateway's `POST /router/feedback`).
///
/// ```
/// use switchyard_layers::preroute::adaptive::{Feedback, Signal};
///
/// assert_eq!(Feedback::Score(0.75).delta(), Some((0.75, 0.25)));
/// assert_eq!(Feedback::Signal(Signal::Loop).delta(), Some((0.0, 0.5)));
/// assert_eq!(Feedback::Score(1.5).delta(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Feedback {
    /// A quality score from 0 (bad) to 1 (good): alpha += score, beta += 1 - score.
    Score(f64),
    /// One of LiteLLM's signals.
    Signal(Signal),
}

impl Feedback {
    /// The (alpha, beta) update; `None` for a score outside 0..=1.
    pub fn delta(self) -> Option<(f64, f64)> {
        match self {
            Self::Score(q) if (0.0..=1.0).contains(&q) => Some((q, 1.0 - q)),
            Self::Score(_) => None,
            Self::Signal(s) => Some(s.delta()),
        }
    }
}

/// The update a call's outcome makes to the chosen group's cell (Switchyard's rules; LiteLLM
/// learns only from conversation signals): a success +1 alpha; a refusal (content policy) or a
/// failure of the model's own (5xx, a broken or malformed answer) +1 beta; limits, timeouts,
/// credentials, missing models and the caller's own bad requests nothing (the cooldown and
/// fallback layers deal with availability; LiteLLM's `exhaustion` is 0 too).
pub(crate) fn outcome_delta(outcome: Outcome) -> Option<(f64, f64)> {
    match outcome {
        Outcome::Success => Some((1.0, 0.0)),
        Outcome::ContentPolicy | Outcome::ServerError | Outcome::Transport => Some((0.0, 1.0)),
        _ => None,
    }
}
