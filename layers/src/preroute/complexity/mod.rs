//! [`ComplexityRouter`]: LiteLLM's rule-based complexity router (`auto_router/complexity_router`,
//! LiteLLM 1.100), a [`PreRouter`] that scores the newest human ask of a
//! request over seven dimensions and sends it to the model group of its tier. No API call, no
//! randomness: the same request always goes to the same group.
//!
//! The rules, with LiteLLM's numbers (`docs/layers/preroute.md` has the full table):
//!
//! - the text scored is the newest user turn that carries a human ask once harness reminder
//!   blocks (`<system-reminder>...</system-reminder>`) are removed; the system prompt is not scored;
//! - dimensions: `tokenCount` (characters / 4 below 15: -1, above 400: +1), `codePresence` (1
//!   keyword: 0.5, 2+: 1), `reasoningMarkers` (1: 0.7, 2+: 1), `technicalTerms` (2: 0.5, 4+: 1),
//!   `simpleIndicators` (1+: -1), `multiStepPatterns` (0.5), `questionComplexity` (more than 3
//!   `?`: 0.5), weighted 0.10 / 0.30 / 0.25 / 0.25 / 0.05 / 0.03 / 0.02;
//! - tiers by the weighted score: SIMPLE below 0.15, MEDIUM below 0.35, COMPLEX below 0.60, else
//!   REASONING; two or more reasoning markers promote to REASONING once the score reaches 0.15;
//! - before scoring, `keyword_tier_rules` force the most severe matching tier, and a coding
//!   agent's conversation-title call goes to the cheapest configured tier; after, an escalation
//!   keyword (`LITELLM ESCALATE`) raises the tier one configured step;
//! - a request without a human ask goes to `default_model` (else the MEDIUM group).
//!
//! ```
//! use switchyard_layers::preroute::{Conversation, Role, complexity::{ComplexityRouter, ComplexityRouterConfig, Tier}};
//!
//! let router = ComplexityRouter::new(ComplexityRouterConfig::with_tiers([
//!     (Tier::Simple, "gpt-4o-mini"), (Tier::Medium, "gpt-4o"), (Tier::Complex, "claude-sonnet-4"), (Tier::Reasoning, "o3"),
//! ]))?;
//! let decision = router.decide(&Conversation::new().push(Role::User, "Hello!")).unwrap();
//! assert_eq!((&*decision.target, decision.tier.as_deref()), ("gpt-4o-mini", Some("SIMPLE")));
//!
//! let hard = "Think step by step: analyze the performance implications of implementing a distributed \
//!             consensus algorithm for our microservices architecture. Explain your reasoning.";
//! assert_eq!(router.classify(hard).tier, Tier::Reasoning);
//! # Ok::<(), switchyard_layers::preroute::complexity::ComplexityConfigError>(())
//! ```

mod config;
pub mod keywords;
mod score;
mod text;

use std::{borrow::Cow, error::Error, fmt};

pub use config::{
    ComplexityRouterConfig, DimensionWeights, KeywordTierRule, ReminderMarkerPair, Tier, TierBoundaries,
    TokenThresholds,
};
pub use score::Classification;
use score::{Scorer, keyword_matches};
use text::{Reminders, py_strip};

use super::{Conversation, PreRouteInput, PreRouter};
use crate::ctx::PreRouteDecision;

/// The routing decision's causes beside the scorer's (LiteLLM's `RoutingDecisionCause`).
const KEYWORD_RULE: &str = "literal_keyword_match";
const HOUSEKEEPING: &str = "housekeeping";
const DEFAULT_FALLBACK: &str = "default_fallback";

/// A [`ComplexityRouterConfig`] that cannot be used; the message says which key and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComplexityConfigError {
    message: String,
}

impl ComplexityConfigError {
    fn new(message: impl Into<String>) -> Self {
        Self { message: message.into() }
    }
}

impl fmt::Display for ComplexityConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "complexity_router_config: {}", self.message)
    }
}

impl Error for ComplexityConfigError {}

/// A compiled keyword rule: the tier and its keywords, as configured and lower-cased.
#[derive(Debug)]
struct Rule {
    tier: Tier,
    keywords: Vec<(String, String)>,
}

/// LiteLLM's rule-based complexity router; see the [module docs](self).
#[derive(Debug)]
pub struct ComplexityRouter {
    config: ComplexityRouterConfig,
    scorer: Scorer,
    rules: Vec<Rule>,
    escalation: Vec<String>,
    housekeeping: Vec<String>,
    reminders: Reminders,
}

impl ComplexityRouter {
    /// The router for `config`, checked: every tier resolves to a group (a tier without one
    /// needs `default_model` or a MEDIUM group, which LiteLLM only finds out when a request lands
    /// there), keyword rules and reminder markers are not blank, and no setting Switchyard does
    /// not implement would change the routing (see [`ComplexityRouterConfig`]).
    pub fn new(config: ComplexityRouterConfig) -> Result<Self, ComplexityConfigError> {
        if let Some((key, value)) = config.unsupported_setting() {
            return Err(ComplexityConfigError::new(format!(
                "`{key}: {value}` is not supported (Switchyard implements the rule-based classifier only)"
            )));
        }
        if let Some((tier, _)) = config.tiers.iter().find(|(_, group)| group.trim().is_empty()) {
            return Err(ComplexityConfigError::new(format!("tier {tier} names no model group")));
        }
        if config.default_model.as_deref().is_some_and(|m| m.trim().is_empty()) {
            return Err(ComplexityConfigError::new("`default_model` is blank"));
        }
        if config.default_model.is_none()
            && !config.tiers.contains_key(&Tier::Medium)
            && let Some(tier) = Tier::ALL.into_iter().find(|t| !config.tiers.contains_key(t))
        {
            return Err(ComplexityConfigError::new(format!(
                "tier {tier} has no model group, and neither `default_model` nor a MEDIUM group stands in"
            )));
        }
        let mut rules = Vec::new();
        for rule in config.keyword_tier_rules.iter().flatten() {
            let keywords: Vec<(String, String)> = rule
                .keywords
                .iter()
                .map(|k| py_strip(k))
                .filter(|k| !k.is_empty())
                .map(|k| (k.to_owned(), k.to_lowercase()))
                .collect();
            if keywords.is_empty() {
                return Err(ComplexityConfigError::new(
                    "keyword_tier_rules entries must contain at least one non-empty keyword",
                ));
            }
            rules.push(Rule { tier: rule.tier, keywords });
        }
        let reminders = match &config.reminder_markers {
            None => Reminders::default(),
            Some(pairs) if pairs.is_empty() => {
                return Err(ComplexityConfigError::new("`reminder_markers` must list at least one pair"));
            }
            Some(pairs) => {
                let mut out = Vec::with_capacity(pairs.len());
                for pair in pairs {
                    let (open, close) = (py_strip(&pair.open).to_lowercase(), py_strip(&pair.close).to_lowercase());
                    if open.is_empty() || close.is_empty() {
                        return Err(ComplexityConfigError::new("reminder_markers entries must not be blank"));
                    }
                    if open == close {
                        return Err(ComplexityConfigError::new(
                            "reminder_markers open and close must be different strings",
                        ));
                    }
                    out.push((open, close));
                }
                Reminders(out)
            }
        };
        let escalation = match &config.escalation_keywords {
            // Trimmed, blanks dropped: a blank keyword would escalate every request.
            Some(list) => list.iter().map(|k| py_strip(k)).filter(|k| !k.is_empty()).map(str::to_owned).collect(),
            None => keywords::ESCALATION_KEYWORDS.iter().map(|k| (*k).to_owned()).collect(),
        };
        let housekeeping = if config.route_housekeeping_to_cheapest_tier {
            let extra = config.housekeeping_patterns.iter().flatten().map(|p| py_strip(p)).filter(|p| !p.is_empty());
            keywords::HOUSEKEEPING_SENTINELS.iter().copied().chain(extra).map(str::to_owned).collect()
        } else {
            Vec::new()
        };
        Ok(Self { scorer: Scorer::new(&config)?, config, rules, escalation, housekeeping, reminders })
    }

    /// The router of a `model_list` entry whose model is `auto_router/complexity_router`, as
    /// LiteLLM's `Router.init_complexity_router_deployment` builds it: `config` is the entry's
    /// `complexity_router_config` (`None` when absent), `default_model` its
    /// `complexity_router_default_model`. Without the latter, the default model is the config's
    /// MEDIUM group, else its SIMPLE group, and it replaces the config's own `default_model`
    /// (so through a `model_list` entry, `complexity_router_config.default_model` only counts
    /// when `tiers` has neither); with neither, the entry is refused.
    ///
    /// ```
    /// use switchyard_layers::preroute::complexity::{ComplexityRouter, ComplexityRouterConfig, Tier};
    ///
    /// let config = ComplexityRouterConfig::with_tiers([(Tier::Simple, "mini"), (Tier::Medium, "mid")]);
    /// let router = ComplexityRouter::from_deployment(Some(config), None)?;
    /// assert_eq!(router.config().default_model.as_deref(), Some("mid"));
    /// assert!(ComplexityRouter::from_deployment(None, None).is_err());
    /// # Ok::<(), switchyard_layers::preroute::complexity::ComplexityConfigError>(())
    /// ```
    pub fn from_deployment(
        config: Option<ComplexityRouterConfig>,
        default_model: Option<String>,
    ) -> Result<Self, ComplexityConfigError> {
        let derived = default_model.or_else(|| {
            let tiers = &config.as_ref()?.tiers;
            tiers.get(&Tier::Medium).or(tiers.get(&Tier::Simple)).cloned()
        });
        let Some(default_model) = derived else {
            return Err(ComplexityConfigError::new(
                "complexity_router_default_model is required for complexity-router deployments, \
                 or configure a MEDIUM or SIMPLE tier in complexity_router_config",
            ));
        };
        Self::new(config.unwrap_or_default().with_default_model(Some(default_model)))
    }

    /// The settings.
    pub fn config(&self) -> &ComplexityRouterConfig {
        &self.config
    }

    /// Scores `prompt` (the human ask) and places it in a tier: LiteLLM's `classify`.
    pub fn classify(&self, prompt: &str) -> Classification {
        self.scorer.classify(prompt)
    }

    /// The model group of `tier`: its own, else `default_model`, else MEDIUM's (LiteLLM's
    /// `get_model_for_tier`; [`new`](Self::new) made sure one exists).
    pub fn group_for_tier(&self, tier: Tier) -> &str {
        let tiers = &self.config.tiers;
        tiers.get(&tier).or(self.config.default_model.as_ref()).or(tiers.get(&Tier::Medium)).map_or("", String::as_str)
    }

    /// The next more severe tier that has a group, or `tier` when none has (LiteLLM's
    /// `_escalate_tier`).
    fn escalate(&self, tier: Tier) -> Tier {
        Tier::ALL.into_iter().filter(|t| *t > tier).find(|t| self.config.tiers.contains_key(t)).unwrap_or(tier)
    }

    /// The most severe tier a keyword rule matching `ask` forces, with the rule's first keyword
    /// that matched; the first such rule wins a tie (LiteLLM's `_lexical_tier_override`).
    fn keyword_rule(&self, ask: &str) -> Option<(Tier, &str)> {
        if self.rules.is_empty() {
            return None;
        }
        let lowered = ask.to_lowercase();
        let mut best: Option<(Tier, &str)> = None;
        for rule in &self.rules {
            let Some((keyword, _)) = rule.keywords.iter().find(|(_, lower)| keyword_matches(&lowered, lower)) else {
                continue;
            };
            if best.is_none_or(|(tier, _)| rule.tier > tier) {
                best = Some((rule.tier, keyword));
            }
        }
        best
    }

    /// Where a conversation goes: LiteLLM's `_classify_and_route` for the rule-based classifier.
    /// `None` only for a conversation without turns.
    pub fn decide(&self, conversation: &Conversation) -> Option<PreRouteDecision> {
        if conversation.turns().is_empty() {
            return None;
        }
        let Some((ask, ask_is_newest)) = self.reminders.asks(conversation) else {
            // No human ask: the default model, else MEDIUM's group.
            return Some(match &self.config.default_model {
                Some(model) => PreRouteDecision::new(model.as_str(), DEFAULT_FALLBACK),
                None => PreRouteDecision::new(self.group_for_tier(Tier::Medium), DEFAULT_FALLBACK)
                    .with_tier(Tier::Medium.as_str()),
            });
        };
        // The newest user turn's ask: the current ask when that turn has one.
        let newest = ask_is_newest.then_some(ask.as_str());
        let escalation_keyword = newest.and_then(|n| self.escalation.iter().find(|k| n.contains(k.as_str()))).cloned();

        if let Some((forced, keyword)) = self.keyword_rule(&ask) {
            let tier = if escalation_keyword.is_some() { self.escalate(forced) } else { forced };
            let mut decision = PreRouteDecision::new(self.group_for_tier(tier), KEYWORD_RULE).with_tier(tier.as_str());
            decision.matched_keyword = Some(keyword.to_owned());
            decision.escalated = tier != forced;
            decision.escalation_keyword = escalation_keyword;
            return Some(decision);
        }

        let housekeeping = newest
            .and_then(|n| self.housekeeping.iter().find(|s| n.contains(s.as_str())))
            .and_then(|sentinel| Some((Tier::ALL.into_iter().find(|t| self.config.tiers.contains_key(t))?, sentinel)));
        let (classified, mut decision) = match housekeeping {
            Some((tier, sentinel)) => {
                let mut decision = PreRouteDecision::new("", HOUSEKEEPING).with_signal(HOUSEKEEPING);
                decision.matched_keyword = Some(sentinel.clone());
                (tier, decision)
            }
            None => {
                let c = self.scorer.classify(&ask);
                let mut decision = PreRouteDecision::new("", c.cause).with_score(c.score);
                decision.dimensions = c.dimensions;
                decision.signals = c.signals;
                (c.tier, decision)
            }
        };
        let tier = if escalation_keyword.is_some() { self.escalate(classified) } else { classified };
        decision.escalated = tier != classified;
        if decision.escalated {
            decision.signals.push("escalation".to_owned());
        }
        decision.escalation_keyword = escalation_keyword;
        decision.target = self.group_for_tier(tier).into();
        decision.tier = Some(Cow::Borrowed(tier.as_str()));
        Some(decision)
    }
}

impl PreRouter for ComplexityRouter {
    fn route(&self, input: &PreRouteInput<'_>) -> Option<PreRouteDecision> {
        self.decide(input.conversation()?)
    }
}
