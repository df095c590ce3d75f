//! The complexity router's settings, [`ComplexityRouterConfig`]: LiteLLM's
//! `complexity_router_config` with its key names and its defaults (LiteLLM 1.100,
//! `router_strategy/complexity_router/config.py`).

use std::{collections::BTreeMap, fmt};

use serde::Deserialize;

/// A complexity tier, least severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Tier {
    /// Greetings, one-line facts.
    Simple,
    /// Standard queries.
    Medium,
    /// Technical, multi-part requests.
    Complex,
    /// Chain-of-thought, analysis.
    Reasoning,
}

impl Tier {
    /// Every tier, least severe first (LiteLLM's `TIER_SEVERITY_ORDER`).
    pub const ALL: [Self; 4] = [Self::Simple, Self::Medium, Self::Complex, Self::Reasoning];

    /// The tier's name as LiteLLM writes it (`SIMPLE`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Simple => "SIMPLE",
            Self::Medium => "MEDIUM",
            Self::Complex => "COMPLEX",
            Self::Reasoning => "REASONING",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `tier_boundaries`: the weighted score at which each tier starts. A key left out keeps its
/// default (LiteLLM reads each with `.get(key, default)`).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct TierBoundaries {
    /// SIMPLE below it, MEDIUM from it (default 0.15).
    pub simple_medium: f64,
    /// COMPLEX from it (default 0.35).
    pub medium_complex: f64,
    /// REASONING from it (default 0.60).
    pub complex_reasoning: f64,
}

impl Default for TierBoundaries {
    fn default() -> Self {
        Self { simple_medium: 0.15, medium_complex: 0.35, complex_reasoning: 0.60 }
    }
}

/// `token_thresholds`: estimated tokens (characters / 4) below which a prompt is short and above
/// which it is long. A key left out keeps its default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct TokenThresholds {
    /// Short below it (default 15).
    pub simple: u64,
    /// Long above it (default 400).
    pub complex: u64,
}

impl Default for TokenThresholds {
    fn default() -> Self {
        Self { simple: 15, complex: 400 }
    }
}

/// `dimension_weights`, with LiteLLM's camelCase keys. Without the key the defaults apply; a map
/// that is given **replaces** them, so a dimension it leaves out weighs 0 (LiteLLM's
/// `weights.get(name, 0)`).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct DimensionWeights {
    /// `tokenCount` (default 0.10).
    #[serde(default)]
    pub token_count: f64,
    /// `codePresence` (default 0.30).
    #[serde(default)]
    pub code_presence: f64,
    /// `reasoningMarkers` (default 0.25).
    #[serde(default)]
    pub reasoning_markers: f64,
    /// `technicalTerms` (default 0.25).
    #[serde(default)]
    pub technical_terms: f64,
    /// `simpleIndicators` (default 0.05; its score is negative).
    #[serde(default)]
    pub simple_indicators: f64,
    /// `multiStepPatterns` (default 0.03).
    #[serde(default)]
    pub multi_step_patterns: f64,
    /// `questionComplexity` (default 0.02).
    #[serde(default)]
    pub question_complexity: f64,
}

impl Default for DimensionWeights {
    fn default() -> Self {
        Self {
            token_count: 0.10,
            code_presence: 0.30,
            reasoning_markers: 0.25,
            technical_terms: 0.25,
            simple_indicators: 0.05,
            multi_step_patterns: 0.03,
            question_complexity: 0.02,
        }
    }
}

/// One of `keyword_tier_rules`: when any keyword matches the ask, the request goes to `tier`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct KeywordTierRule {
    /// The keywords or phrases (matched like the scorer's keywords: whole words, phrases and CJK
    /// as substrings, case-insensitively). Blank ones are dropped; one must remain.
    pub keywords: Vec<String>,
    /// The tier they force.
    pub tier: Tier,
}

impl KeywordTierRule {
    /// A rule sending requests that contain any of `keywords` to `tier`.
    pub fn new(keywords: impl IntoIterator<Item = impl Into<String>>, tier: Tier) -> Self {
        Self { keywords: keywords.into_iter().map(Into::into).collect(), tier }
    }
}

/// One of `reminder_markers`: the delimiters of a block an agent harness injects into user
/// turns, stripped before classifying (matched case-insensitively).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ReminderMarkerPair {
    /// The opening delimiter (`<system-reminder>`).
    pub open: String,
    /// The closing delimiter (`</system-reminder>`).
    pub close: String,
}

impl ReminderMarkerPair {
    /// The pair `open` / `close`.
    pub fn new(open: impl Into<String>, close: impl Into<String>) -> Self {
        Self { open: open.into(), close: close.into() }
    }
}

/// LiteLLM's `complexity_router_config`, read with its key names; every key is optional and
/// takes LiteLLM's default.
///
/// Keys of LiteLLM's config that Switchyard does not implement land in [`other`](Self::other):
/// [`ComplexityRouter::new`](super::ComplexityRouter::new) refuses the ones whose value would
/// change where a request goes (`classifier_type` other than `heuristic`, `tier_definitions`,
/// `adaptive`, `semantic_keyword_matching`, `plugins`, `plan_mode_min_tier`,
/// `session_affinity`, a tier given as a list), and
/// [`ignored_keys`](Self::ignored_keys) lists the rest for a warning (display-only `tier_labels`,
/// `return_raw_model_name`, `deployment_affinity`, a typo).
///
/// ```
/// use switchyard_layers::preroute::complexity::{ComplexityRouterConfig, Tier};
///
/// let config: ComplexityRouterConfig = serde_json::from_str(r#"{
///     "tiers": {"SIMPLE": "gpt-4o-mini", "MEDIUM": "gpt-4o", "COMPLEX": "claude-sonnet-4", "REASONING": "o3"},
///     "tier_boundaries": {"simple_medium": 0.2},
///     "tier_labels": {"SIMPLE": "Cheap"}
/// }"#)?;
/// assert_eq!(config.tiers[&Tier::Reasoning], "o3");
/// assert_eq!((config.tier_boundaries.simple_medium, config.tier_boundaries.medium_complex), (0.2, 0.35));
/// assert_eq!(config.ignored_keys().collect::<Vec<_>>(), ["tier_labels"]);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ComplexityRouterConfig {
    /// The model group of each tier. A given map replaces the default one (SIMPLE `gpt-4o-mini`,
    /// MEDIUM `gpt-4o`, COMPLEX and REASONING `claude-sonnet-4-20250514`).
    pub tiers: BTreeMap<Tier, String>,
    /// Where each tier starts.
    pub tier_boundaries: TierBoundaries,
    /// The score two or more reasoning markers must reach to promote a request to REASONING;
    /// unset, `tier_boundaries.simple_medium`.
    pub reasoning_override_min_score: Option<f64>,
    /// Short and long prompts.
    pub token_thresholds: TokenThresholds,
    /// The dimensions' weights.
    pub dimension_weights: DimensionWeights,
    /// Replaces the code keywords (an empty list keeps the defaults, as in LiteLLM).
    pub code_keywords: Option<Vec<String>>,
    /// Replaces the reasoning markers (empty: the defaults).
    pub reasoning_keywords: Option<Vec<String>>,
    /// Replaces the technical terms (empty: the defaults).
    pub technical_keywords: Option<Vec<String>>,
    /// Appended to the technical terms, minus case-insensitive duplicates.
    pub custom_technical_keywords: Option<Vec<String>>,
    /// Replaces the simple indicators (empty: the defaults).
    pub simple_keywords: Option<Vec<String>>,
    /// The group for a tier without one, and for a request without a human ask. The
    /// deployment's `complexity_router_default_model` wins over it
    /// ([`with_default_model`](Self::with_default_model)).
    pub default_model: Option<String>,
    /// Case-sensitive phrases that raise the tier one configured step (default
    /// `["LITELLM ESCALATE"]`; an empty list turns escalation off).
    pub escalation_keywords: Option<Vec<String>>,
    /// Keywords that force a tier before scoring; the most severe matching tier wins.
    pub keyword_tier_rules: Option<Vec<KeywordTierRule>>,
    /// Route a coding agent's conversation-title calls to the cheapest configured tier without
    /// scoring them (default `true`).
    pub route_housekeeping_to_cheapest_tier: bool,
    /// More case-sensitive sentinels of such calls, beside the built-in ones.
    pub housekeeping_patterns: Option<Vec<String>>,
    /// Replaces the `<system-reminder>` delimiters stripped from user turns.
    pub reminder_markers: Option<Vec<ReminderMarkerPair>>,
    /// Keys Switchyard does not implement, with their values (see the type's docs).
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

impl Default for ComplexityRouterConfig {
    fn default() -> Self {
        Self {
            tiers: Tier::ALL
                .into_iter()
                .zip(super::keywords::DEFAULT_TIER_MODELS)
                .map(|(t, m)| (t, m.to_owned()))
                .collect(),
            tier_boundaries: TierBoundaries::default(),
            reasoning_override_min_score: None,
            token_thresholds: TokenThresholds::default(),
            dimension_weights: DimensionWeights::default(),
            code_keywords: None,
            reasoning_keywords: None,
            technical_keywords: None,
            custom_technical_keywords: None,
            simple_keywords: None,
            default_model: None,
            escalation_keywords: None,
            keyword_tier_rules: None,
            route_housekeeping_to_cheapest_tier: true,
            housekeeping_patterns: None,
            reminder_markers: None,
            other: BTreeMap::new(),
        }
    }
}

/// LiteLLM keys whose value changes where a request goes, with the value that does not.
const ROUTING_KEYS: &[(&str, Option<&str>)] = &[
    ("classifier_type", Some("heuristic")),
    ("tier_definitions", None),
    ("adaptive", Some("false")),
    ("semantic_keyword_matching", Some("false")),
    ("plugins", None),
    ("plan_mode_min_tier", None),
    ("session_affinity", Some("false")),
];

impl ComplexityRouterConfig {
    /// The default settings with `tiers` as the tier map.
    ///
    /// ```
    /// use switchyard_layers::preroute::complexity::{ComplexityRouterConfig, Tier};
    ///
    /// let config = ComplexityRouterConfig::with_tiers([(Tier::Simple, "mini"), (Tier::Medium, "4o")]);
    /// assert_eq!(config.tiers.len(), 2);
    /// ```
    pub fn with_tiers(tiers: impl IntoIterator<Item = (Tier, impl Into<String>)>) -> Self {
        Self { tiers: tiers.into_iter().map(|(t, m)| (t, m.into())).collect(), ..Self::default() }
    }

    /// Applies the deployment's `complexity_router_default_model`, which wins over
    /// `default_model` when set (LiteLLM's `ComplexityRouter.__init__`).
    pub fn with_default_model(mut self, model: Option<impl Into<String>>) -> Self {
        if let Some(model) = model {
            self.default_model = Some(model.into());
        }
        self
    }

    /// The keys of [`other`](Self::other) that change nothing here (display-only, not
    /// implemented without effect on the choice, or unknown): worth a warning, not an error.
    pub fn ignored_keys(&self) -> impl Iterator<Item = &str> {
        self.other.keys().map(String::as_str).filter(|k| !ROUTING_KEYS.iter().any(|(name, _)| name == k))
    }

    /// The first key of [`other`](Self::other) set to a value that would change the routing,
    /// with that value.
    pub(super) fn unsupported_setting(&self) -> Option<(&str, &serde_json::Value)> {
        ROUTING_KEYS.iter().find_map(|(name, neutral)| {
            let value = self.other.get(*name)?;
            let harmless = value.is_null()
                || matches!((neutral, value), (Some(n), serde_json::Value::String(s)) if s == n)
                || matches!((neutral, value), (Some("false"), serde_json::Value::Bool(false)))
                || matches!(value, serde_json::Value::Array(a) if a.is_empty());
            (!harmless).then_some((*name, value))
        })
    }
}
