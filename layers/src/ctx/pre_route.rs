//! What a pre-router decided for a call ([`PreRouteDecision`]): the model group it chose for the
//! name the client asked for, why, and the scores behind the choice ([`DimensionScore`]).

use std::{borrow::Cow, fmt, sync::Arc};

/// One dimension a pre-router scored, as it weighed in the decision.
///
/// ```
/// use switchyard_layers::ctx::DimensionScore;
///
/// let code = DimensionScore::new("codePresence", 1.0, 0.30).with_signal("code (function, class)");
/// assert_eq!(code.weighted(), 0.30);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct DimensionScore {
    /// The dimension's name (`codePresence`).
    pub name: Cow<'static, str>,
    /// Its raw score (the complexity router's run from -1 to 1).
    pub score: f64,
    /// Its weight in the total.
    pub weight: f64,
    /// What fired it (`code (function, class)`), when something did.
    pub signal: Option<String>,
}

impl DimensionScore {
    /// A dimension scored `score` with weight `weight`, without a signal.
    pub fn new(name: impl Into<Cow<'static, str>>, score: f64, weight: f64) -> Self {
        Self { name: name.into(), score, weight, signal: None }
    }

    /// With the signal that fired the dimension.
    pub fn with_signal(mut self, signal: impl Into<String>) -> Self {
        self.signal = Some(signal.into());
        self
    }

    /// Its share of the total: `score * weight`.
    pub fn weighted(&self) -> f64 {
        self.score * self.weight
    }
}

/// What a pre-router decided: the model group the call goes to instead of the name the client
/// asked for, the reason, and, for a scoring router, the tier, the score and its dimensions.
///
/// A [`PreRouteLayer`](crate::preroute::PreRouteLayer) records it in the call's context
/// ([`RouteCtx::pre_route`](crate::RouteCtx::pre_route)), shared by every copy of the request,
/// and in the extensions of a successful response.
///
/// ```
/// use switchyard_layers::ctx::PreRouteDecision;
///
/// let decision = PreRouteDecision::new("gpt-4o-mini", "heuristic_scorer").with_tier("SIMPLE").with_score(-0.15);
/// assert_eq!(&*decision.target, "gpt-4o-mini");
/// assert_eq!(decision.to_string(), "gpt-4o-mini (heuristic_scorer, tier SIMPLE, score -0.150)");
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PreRouteDecision {
    /// The model group the call routes to, as if the client had asked for it.
    pub target: Arc<str>,
    /// Why (the complexity router's causes: `heuristic_scorer`, `reasoning_override`,
    /// `literal_keyword_match`, `default_fallback`).
    pub reason: Cow<'static, str>,
    /// The tier the request was placed in, for a tiered router.
    pub tier: Option<Cow<'static, str>>,
    /// The total score, for a scoring router.
    pub score: Option<f64>,
    /// The scored dimensions, in the router's order.
    pub dimensions: Vec<DimensionScore>,
    /// What fired, in order (the dimensions' signals, then `escalation` when the tier was raised).
    pub signals: Vec<String>,
    /// The keyword of a keyword rule that forced the tier.
    pub matched_keyword: Option<String>,
    /// The escalation keyword the ask contained, whether or not the tier could move.
    pub escalation_keyword: Option<String>,
    /// Whether the escalation keyword raised the tier.
    pub escalated: bool,
}

impl PreRouteDecision {
    /// Route to the group `target`, because of `reason`.
    pub fn new(target: impl Into<Arc<str>>, reason: impl Into<Cow<'static, str>>) -> Self {
        Self {
            target: target.into(),
            reason: reason.into(),
            tier: None,
            score: None,
            dimensions: Vec::new(),
            signals: Vec::new(),
            matched_keyword: None,
            escalation_keyword: None,
            escalated: false,
        }
    }

    /// With the tier the request was placed in.
    pub fn with_tier(mut self, tier: impl Into<Cow<'static, str>>) -> Self {
        self.tier = Some(tier.into());
        self
    }

    /// With the total score.
    pub fn with_score(mut self, score: f64) -> Self {
        self.score = Some(score);
        self
    }

    /// With one more scored dimension.
    pub fn with_dimension(mut self, dimension: DimensionScore) -> Self {
        self.dimensions.push(dimension);
        self
    }

    /// With one more signal.
    pub fn with_signal(mut self, signal: impl Into<String>) -> Self {
        self.signals.push(signal.into());
        self
    }
}

impl fmt::Display for PreRouteDecision {
    /// `target (reason, tier T, score S)`, then `: signal, signal` when any fired.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}", self.target, self.reason)?;
        if let Some(tier) = &self.tier {
            write!(f, ", tier {tier}")?;
        }
        if let Some(score) = self.score {
            write!(f, ", score {score:.3}")?;
        }
        f.write_str(")")?;
        if !self.signals.is_empty() {
            write!(f, ": {}", self.signals.join(", "))?;
        }
        Ok(())
    }
}
