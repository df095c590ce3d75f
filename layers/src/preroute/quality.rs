//! [`QualityRouter`]: LiteLLM's quality-tier auto router (`auto_router/quality_router`, LiteLLM
//! 1.100, `router_strategy/quality_router/`), a [`PreRouter`] that sends a request to the
//! cheapest model group of the quality tier it needs.
//!
//! Each candidate group declares its `quality_tier` (an integer, higher is more capable) in
//! `model_info.litellm_routing_preferences` (or, Switchyard's shorthand, `model_info.quality_tier`),
//! with optional `keywords` and an explicit `order`. For each request, in order:
//!
//! 1. no conversation: no decision (the request is left alone); no user text: `default_model`;
//! 2. a candidate's keyword in the newest user text (case-insensitive substring): that
//!    candidate; several: the highest tier, then the lowest `order`, then the cheapest, then the
//!    name (cause `keyword`);
//! 3. otherwise the complexity router's rule-based scorer places the text in a complexity tier,
//!    `complexity_to_quality` maps it to a quality tier (SIMPLE 1, MEDIUM 2, COMPLEX 3,
//!    REASONING 4), and the tier's first group by (`order`, input price, output price, name)
//!    serves; a tier without a group rounds up to the next tier that has one, else down to the
//!    closest, else `default_model` (cause `quality_tier`).
//!
//! Switchyard adds a **request-side minimum** ([`RequestFacts::min_quality_tier`]: the body's
//! `metadata.min_quality_tier` or the `x-switchyard-min-quality-tier` header): keywords and tiers
//! below it are not considered, and rounding down stops at it. When no group reaches it, the
//! highest tier serves and the decision carries the signal `min_quality_tier N unmet`.
//!
//! Prices are the deployments' effective ones: `model_info` / `litellm_params`, else the
//! [catalog](crate::catalog)'s; a group's price is its cheapest deployment's, an unknown price
//! sorts last.
//!
//! ```
//! use switchyard_layers::preroute::{Conversation, Role, quality::{QualityCandidate, QualityRouter, QualityRouterConfig, RoutingPreferences}};
//!
//! let config = QualityRouterConfig::new(["mini", "4o", "o3"]).with_default_model("4o");
//! let router = QualityRouter::new(config, [
//!     QualityCandidate::new("mini", RoutingPreferences::new(1)).with_prices(Some(1.5e-7), Some(6e-7)),
//!     QualityCandidate::new("4o", RoutingPreferences::new(2)).with_prices(Some(2.5e-6), Some(1e-5)),
//!     QualityCandidate::new("o3", RoutingPreferences::new(4)).with_prices(Some(2e-6), Some(8e-6)),
//! ])?;
//! let hello = Conversation::new().push(Role::User, "Hello!");
//! assert_eq!(&*router.decide(Some(&hello), None).unwrap().target, "mini");
//! // The caller asks for at least tier 3: the next tier that has a group serves.
//! assert_eq!(&*router.decide(Some(&hello), Some(3)).unwrap().target, "o3");
//! # Ok::<(), switchyard_layers::preroute::quality::QualityConfigError>(())
//! ```
//!
//! [`RequestFacts::min_quality_tier`]: crate::RequestFacts::min_quality_tier

use std::{cmp::Ordering, collections::BTreeMap, error::Error, fmt};

use serde::Deserialize;

use super::{
    Conversation, PreRouteInput, PreRouter, Role,
    complexity::{ComplexityRouter, ComplexityRouterConfig, Tier},
};
use crate::ctx::PreRouteDecision;

/// LiteLLM's default `complexity_to_quality`.
const DEFAULT_COMPLEXITY_TO_QUALITY: [(Tier, u32); 4] =
    [(Tier::Simple, 1), (Tier::Medium, 2), (Tier::Complex, 3), (Tier::Reasoning, 4)];

/// A quality-router setting that cannot be used; the message says which and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QualityConfigError {
    message: String,
}

impl QualityConfigError {
    fn new(message: impl Into<String>) -> Self {
        Self { message: message.into() }
    }
}

impl fmt::Display for QualityConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "quality_router_config: {}", self.message)
    }
}

impl Error for QualityConfigError {}

/// LiteLLM's `quality_router_config`, with its key names and defaults. Keys it does not know
/// are kept in [`other`](Self::other) (LiteLLM accepts them too), for a warning.
///
/// ```
/// use switchyard_layers::preroute::{complexity::Tier, quality::QualityRouterConfig};
///
/// let config: QualityRouterConfig = serde_json::from_str(r#"{"available_models": ["mini", "4o"], "default_model": "4o"}"#)?;
/// assert_eq!(config.complexity_to_quality[&Tier::Reasoning], 4);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct QualityRouterConfig {
    /// The model groups the router may route to; each declares its quality tier.
    pub available_models: Vec<String>,
    /// The group when no tier resolves and for a request without user text. The deployment's
    /// `quality_router_default_model` wins over it.
    pub default_model: Option<String>,
    /// Complexity tier to quality tier. A given map replaces the default (SIMPLE 1, MEDIUM 2,
    /// COMPLEX 3, REASONING 4) and must map all four.
    pub complexity_to_quality: BTreeMap<Tier, u32>,
    /// Keys Switchyard does not read.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

impl Default for QualityRouterConfig {
    fn default() -> Self {
        Self {
            available_models: Vec::new(),
            default_model: None,
            complexity_to_quality: DEFAULT_COMPLEXITY_TO_QUALITY.into_iter().collect(),
            other: BTreeMap::new(),
        }
    }
}

impl QualityRouterConfig {
    /// The default settings over `available_models`.
    pub fn new(available_models: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self { available_models: available_models.into_iter().map(Into::into).collect(), ..Self::default() }
    }

    /// With `model` as the default model.
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.default_model = Some(model.into());
        self
    }
}

/// LiteLLM's `model_info.litellm_routing_preferences` of a group.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct RoutingPreferences {
    /// The quality tier the group satisfies (higher is more capable).
    pub quality_tier: u32,
    /// Substrings (case-insensitive) of the user text that send a request to this group.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Breaks ties between groups of one tier and between keyword matches: lower wins, unset
    /// loses to set.
    #[serde(default)]
    pub order: Option<i64>,
    /// Keys Switchyard does not read.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

impl RoutingPreferences {
    /// A group of `quality_tier`, without keywords or order.
    pub fn new(quality_tier: u32) -> Self {
        Self { quality_tier, keywords: Vec::new(), order: None, other: BTreeMap::new() }
    }

    /// With keywords.
    pub fn with_keywords(mut self, keywords: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.keywords = keywords.into_iter().map(Into::into).collect();
        self
    }

    /// With an explicit order.
    pub fn with_order(mut self, order: i64) -> Self {
        self.order = Some(order);
        self
    }
}

/// A group the quality router may choose: its preferences and its prices (USD per token).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct QualityCandidate {
    /// The model group.
    pub group: String,
    /// Its routing preferences.
    pub preferences: RoutingPreferences,
    /// Its input price (the cheapest deployment's); `None` when unknown.
    pub input_cost_per_token: Option<f64>,
    /// Its output price; `None` when unknown.
    pub output_cost_per_token: Option<f64>,
}

impl QualityCandidate {
    /// `group` with `preferences`, prices unknown.
    pub fn new(group: impl Into<String>, preferences: RoutingPreferences) -> Self {
        Self { group: group.into(), preferences, input_cost_per_token: None, output_cost_per_token: None }
    }

    /// With the group's input and output prices.
    pub fn with_prices(mut self, input: Option<f64>, output: Option<f64>) -> Self {
        self.input_cost_per_token = input;
        self.output_cost_per_token = output;
        self
    }

    /// The tie-break after the tier: explicit order, input price, output price, name (an unset
    /// order or an unknown price sorts last).
    fn rank(&self, other: &Self) -> Ordering {
        let price = |p: Option<f64>| p.filter(|p| p.is_finite()).unwrap_or(f64::INFINITY);
        let order = |o: Option<i64>| o.map_or((1, 0), |o| (0, o));
        order(self.preferences.order)
            .cmp(&order(other.preferences.order))
            .then(price(self.input_cost_per_token).total_cmp(&price(other.input_cost_per_token)))
            .then(price(self.output_cost_per_token).total_cmp(&price(other.output_cost_per_token)))
            .then_with(|| self.group.cmp(&other.group))
    }
}

/// LiteLLM's quality-tier router; see the [module docs](self).
#[derive(Debug)]
pub struct QualityRouter {
    config: QualityRouterConfig,
    default_model: String,
    /// The candidates, best first within each tier.
    by_tier: BTreeMap<u32, Vec<QualityCandidate>>,
    /// Each candidate's lower-cased keywords, blank ones dropped.
    keywords: Vec<(QualityCandidate, Vec<String>)>,
    scorer: ComplexityRouter,
}

impl QualityRouter {
    /// The router over `candidates` (groups not in `available_models` are left out), checked:
    /// a default model is set, every `available_models` entry has a candidate, and
    /// `complexity_to_quality` maps all four complexity tiers (LiteLLM finds the last two out
    /// when a request needs them).
    pub fn new(
        config: QualityRouterConfig,
        candidates: impl IntoIterator<Item = QualityCandidate>,
    ) -> Result<Self, QualityConfigError> {
        let Some(default_model) = config.default_model.clone().filter(|m| !m.trim().is_empty()) else {
            return Err(QualityConfigError::new(
                "quality_router_default_model is required for quality-router deployments, or set default_model in \
                 quality_router_config",
            ));
        };
        if let Some(tier) = Tier::ALL.into_iter().find(|t| !config.complexity_to_quality.contains_key(t)) {
            return Err(QualityConfigError::new(format!("complexity_to_quality has no quality tier for {tier}")));
        }
        let mut by_group: BTreeMap<String, QualityCandidate> = BTreeMap::new();
        for candidate in candidates {
            if config.available_models.contains(&candidate.group) {
                by_group.insert(candidate.group.clone(), candidate);
            }
        }
        if let Some(missing) = config.available_models.iter().find(|m| !by_group.contains_key(*m)) {
            return Err(QualityConfigError::new(format!(
                "available_models: `{missing}` declares no quality tier (model_info.litellm_routing_preferences.quality_tier)"
            )));
        }
        let mut by_tier: BTreeMap<u32, Vec<QualityCandidate>> = BTreeMap::new();
        let mut keywords = Vec::new();
        for candidate in by_group.into_values() {
            let words: Vec<String> = candidate
                .preferences
                .keywords
                .iter()
                .map(|k| k.trim().to_lowercase())
                .filter(|k| !k.is_empty())
                .collect();
            if !words.is_empty() {
                keywords.push((candidate.clone(), words));
            }
            by_tier.entry(candidate.preferences.quality_tier).or_default().push(candidate);
        }
        for groups in by_tier.values_mut() {
            groups.sort_by(QualityCandidate::rank);
        }
        // The default complexity settings: only the scorer is used, never its tiers' groups.
        let scorer = ComplexityRouter::new(ComplexityRouterConfig::default())
            .map_err(|e| QualityConfigError::new(format!("the complexity scorer: {e}")))?;
        Ok(Self { config, default_model, by_tier, keywords, scorer })
    }

    /// The router of a `model_list` entry whose model is `auto_router/quality_router`, as
    /// LiteLLM's `Router.init_quality_router_deployment` builds it: `config` is the entry's
    /// `quality_router_config`, `default_model` its `quality_router_default_model`, which wins over
    /// the config's `default_model`.
    pub fn from_deployment(
        config: Option<QualityRouterConfig>,
        default_model: Option<String>,
        candidates: impl IntoIterator<Item = QualityCandidate>,
    ) -> Result<Self, QualityConfigError> {
        let mut config = config.unwrap_or_default();
        if let Some(model) = default_model {
            config.default_model = Some(model);
        }
        Self::new(config, candidates)
    }

    /// The settings.
    pub fn config(&self) -> &QualityRouterConfig {
        &self.config
    }

    /// The groups by quality tier, best first within each tier.
    pub fn tiers(&self) -> impl Iterator<Item = (u32, impl Iterator<Item = &str>)> {
        self.by_tier.iter().map(|(tier, groups)| (*tier, groups.iter().map(|c| c.group.as_str())))
    }

    /// The group serving quality tier `tier` for a caller that accepts nothing below `min`:
    /// the tier's own best group, else the next higher tier's, else the closest lower tier's
    /// that is not below `min`. `None` when no group qualifies.
    pub fn group_for_tier(&self, tier: u32, min: Option<u32>) -> Option<(&str, u32)> {
        let floor = min.unwrap_or(0);
        let wanted = tier.max(floor);
        let up = self.by_tier.range(wanted..).find_map(|(t, groups)| Some((groups.first()?.group.as_str(), *t)));
        // `range` panics on an inverted range: below `wanted` only when there is room.
        up.or_else(|| {
            (floor < wanted)
                .then(|| {
                    self.by_tier
                        .range(floor..wanted)
                        .rev()
                        .find_map(|(t, groups)| Some((groups.first()?.group.as_str(), *t)))
                })
                .flatten()
        })
    }

    /// Where a request goes: `conversation` is its turns (`None`: not a conversation, left
    /// alone), `min` the caller's minimum quality tier.
    pub fn decide(&self, conversation: Option<&Conversation>, min: Option<u32>) -> Option<PreRouteDecision> {
        let conversation = conversation.filter(|c| !c.turns().is_empty())?;
        let ask = conversation.turns().iter().rev().find(|t| t.role == Role::User && !t.text.trim().is_empty());
        let Some(ask) = ask else {
            return Some(with_min(PreRouteDecision::new(self.default_model.as_str(), "default_fallback"), min));
        };
        if let Some((candidate, keyword)) = self.keyword_override(&ask.text, min) {
            let tier = candidate.preferences.quality_tier;
            let mut decision = PreRouteDecision::new(candidate.group.as_str(), "keyword").with_tier(tier.to_string());
            decision.matched_keyword = Some(keyword.to_owned());
            return Some(with_min(decision, min));
        }
        let c = self.scorer.classify(&ask.text);
        // `new` checked that every complexity tier maps.
        let wanted = self.config.complexity_to_quality.get(&c.tier).copied().unwrap_or_default();
        let mut decision = PreRouteDecision::new("", "quality_tier").with_score(c.score);
        decision.dimensions = c.dimensions;
        decision.signals = c.signals;
        decision.signals.push(format!("complexity {}", c.tier));
        let (target, tier) = match self.group_for_tier(wanted, min) {
            Some((group, tier)) => (group.to_owned(), Some(tier)),
            // Nothing reaches the minimum: the best there is, said so.
            None if min.is_some() => match self.by_tier.iter().next_back().and_then(|(t, g)| Some((g.first()?, *t))) {
                Some((best, tier)) => {
                    decision.signals.push(format!("min_quality_tier {} unmet", min.unwrap_or_default()));
                    (best.group.clone(), Some(tier))
                }
                None => (self.default_model.clone(), None),
            },
            None => (self.default_model.clone(), None),
        };
        decision.target = target.into();
        if let Some(tier) = tier {
            decision = decision.with_tier(tier.to_string());
        }
        Some(with_min(decision, min))
    }

    /// The candidate whose keyword the text contains, and that keyword: the highest tier not
    /// below `min`, then the usual tie-break (LiteLLM's `_keyword_override`).
    fn keyword_override(&self, text: &str, min: Option<u32>) -> Option<(&QualityCandidate, &str)> {
        if self.keywords.is_empty() {
            return None;
        }
        let text = text.to_lowercase();
        self.keywords
            .iter()
            .filter(|(c, _)| c.preferences.quality_tier >= min.unwrap_or(0))
            .filter_map(|(c, words)| Some((c, words.iter().find(|w| text.contains(w.as_str()))?.as_str())))
            .min_by(|(a, _), (b, _)| b.preferences.quality_tier.cmp(&a.preferences.quality_tier).then(a.rank(b)))
    }
}

/// The caller's minimum as a signal.
fn with_min(decision: PreRouteDecision, min: Option<u32>) -> PreRouteDecision {
    match min {
        Some(min) => decision.with_signal(format!("min_quality_tier {min}")),
        None => decision,
    }
}

impl PreRouter for QualityRouter {
    fn route(&self, input: &PreRouteInput<'_>) -> Option<PreRouteDecision> {
        self.decide(input.conversation(), input.facts().min_quality_tier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router() -> QualityRouter {
        QualityRouter::new(
            QualityRouterConfig::new(["mini", "flash", "4o", "sonnet", "o3"]).with_default_model("4o"),
            [
                QualityCandidate::new("mini", RoutingPreferences::new(1)).with_prices(Some(1.5e-7), Some(6e-7)),
                QualityCandidate::new("flash", RoutingPreferences::new(1)).with_prices(Some(1e-7), Some(4e-7)),
                QualityCandidate::new("4o", RoutingPreferences::new(2)).with_prices(Some(2.5e-6), Some(1e-5)),
                QualityCandidate::new("sonnet", RoutingPreferences::new(3).with_keywords(["refactor", " "]))
                    .with_prices(Some(3e-6), Some(1.5e-5)),
                QualityCandidate::new("o3", RoutingPreferences::new(4).with_keywords(["prove"]))
                    .with_prices(None, None),
                QualityCandidate::new("not-listed", RoutingPreferences::new(1)).with_prices(Some(0.0), Some(0.0)),
            ],
        )
        .expect("a valid config")
    }

    fn ask(text: &str) -> Conversation {
        Conversation::new().push(Role::System, "be brief").push(Role::User, text)
    }

    fn target(router: &QualityRouter, text: &str, min: Option<u32>) -> String {
        router.decide(Some(&ask(text)), min).expect("a decision").target.to_string()
    }

    #[test]
    fn the_cheapest_group_of_the_tier_serves() {
        let r = router();
        // `not-listed` is free but not in available_models.
        assert_eq!(target(&r, "Hello!", None), "flash");
        let decision = r.decide(Some(&ask("Hello!")), None).unwrap();
        assert_eq!((decision.tier.as_deref(), &*decision.reason), (Some("1"), "quality_tier"));
        assert!(decision.signals.contains(&"complexity SIMPLE".to_owned()));
    }

    #[test]
    fn an_explicit_order_beats_the_price() {
        let r = QualityRouter::new(
            QualityRouterConfig::new(["cheap", "pinned"]).with_default_model("cheap"),
            [
                QualityCandidate::new("cheap", RoutingPreferences::new(1)).with_prices(Some(1e-9), None),
                QualityCandidate::new("pinned", RoutingPreferences::new(1).with_order(1)).with_prices(Some(1.0), None),
            ],
        )
        .unwrap();
        assert_eq!(target(&r, "Hello!", None), "pinned");
    }

    #[test]
    fn a_missing_tier_rounds_up_then_down() {
        let r = router();
        assert_eq!(r.group_for_tier(3, None), Some(("sonnet", 3)));
        let sparse = QualityRouter::new(
            QualityRouterConfig::new(["low", "high"]).with_default_model("low"),
            [
                QualityCandidate::new("low", RoutingPreferences::new(1)),
                QualityCandidate::new("high", RoutingPreferences::new(4)),
            ],
        )
        .unwrap();
        assert_eq!(sparse.group_for_tier(2, None), Some(("high", 4)));
        assert_eq!(sparse.group_for_tier(9, None), Some(("high", 4)));
        assert_eq!(sparse.group_for_tier(0, None), Some(("low", 1)));
    }

    #[test]
    fn the_callers_minimum_is_never_undercut() {
        let r = router();
        assert_eq!(target(&r, "Hello!", Some(2)), "4o");
        assert_eq!(target(&r, "Hello!", Some(3)), "sonnet");
        // Rounding down stops at the minimum: nothing below tier 4 for a tier-4 caller.
        assert_eq!(r.group_for_tier(4, Some(4)), Some(("o3", 4)));
        let d = r.decide(Some(&ask("Hello!")), Some(2)).unwrap();
        assert!(d.signals.contains(&"min_quality_tier 2".to_owned()));
    }

    #[test]
    fn an_unreachable_minimum_gets_the_best_there_is_and_says_so() {
        let r = router();
        let d = r.decide(Some(&ask("Hello!")), Some(9)).unwrap();
        assert_eq!((&*d.target, d.tier.as_deref()), ("o3", Some("4")));
        assert!(d.signals.contains(&"min_quality_tier 9 unmet".to_owned()), "{:?}", d.signals);
    }

    #[test]
    fn keywords_win_highest_tier_first_and_respect_the_minimum() {
        let r = router();
        let d = r.decide(Some(&ask("please REFACTOR this")), None).unwrap();
        assert_eq!((&*d.target, &*d.reason, d.matched_keyword.as_deref()), ("sonnet", "keyword", Some("refactor")));
        assert_eq!(target(&r, "refactor, then prove it", None), "o3");
        // A blank keyword matches nothing.
        assert_eq!(target(&r, "Hello there", None), "flash");
        // Below the caller's minimum, a keyword does not count.
        assert_eq!(target(&r, "refactor", Some(4)), "o3");
    }

    #[test]
    fn no_user_text_goes_to_the_default_model_and_no_turns_are_left_alone() {
        let r = router();
        let only_system = Conversation::new().push(Role::System, "You are terse.");
        assert_eq!(&*r.decide(Some(&only_system), None).unwrap().target, "4o");
        assert!(r.decide(Some(&Conversation::new()), None).is_none());
        assert!(r.decide(None, Some(3)).is_none());
    }

    #[test]
    fn an_empty_index_goes_to_the_default_model() {
        let r = QualityRouter::new(QualityRouterConfig::default().with_default_model("4o"), []).unwrap();
        assert_eq!(target(&r, "Hello!", None), "4o");
        assert_eq!(target(&r, "Hello!", Some(3)), "4o");
    }

    #[test]
    fn invalid_settings_are_refused_at_construction() {
        let err = QualityRouter::new(QualityRouterConfig::new(["a"]), []).unwrap_err();
        assert!(err.to_string().contains("quality_router_default_model is required"), "{err}");
        let err = QualityRouter::new(QualityRouterConfig::new(["a"]).with_default_model("a"), []).unwrap_err();
        assert!(err.to_string().contains("`a` declares no quality tier"), "{err}");
        let mut config = QualityRouterConfig::default().with_default_model("a");
        config.complexity_to_quality.remove(&Tier::Reasoning);
        let err = QualityRouter::new(config, []).unwrap_err();
        assert!(err.to_string().contains("no quality tier for REASONING"), "{err}");
    }
}
