//! The request classes of LiteLLM 1.100's adaptive router (`RequestType`) and its rule-based
//! classifier (`router_strategy/adaptive_router/classifier.py`): the same regular expressions in
//! the same order, the first that matches the newest user text (its first 2,000 characters) wins.

use std::{fmt, str::FromStr, sync::LazyLock};

use regex::RegexSet;
use serde::{Deserialize, Serialize};

/// What a request asks for, as LiteLLM's adaptive router classifies it: each model group learns
/// one posterior per class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RequestClass {
    /// Write a function, a class, a script in a named language.
    CodeGeneration,
    /// Explain, debug or review code.
    CodeUnderstanding,
    /// Design a system, choose between technologies.
    TechnicalDesign,
    /// Solve, prove, compute; probability and statistics.
    AnalyticalReasoning,
    /// Draft or edit prose.
    Writing,
    /// Who / what / when questions, definitions.
    FactualLookup,
    /// Anything else.
    General,
}

impl RequestClass {
    /// Every class, in LiteLLM's order.
    pub const ALL: [Self; 7] = [
        Self::CodeGeneration,
        Self::CodeUnderstanding,
        Self::TechnicalDesign,
        Self::AnalyticalReasoning,
        Self::Writing,
        Self::FactualLookup,
        Self::General,
    ];

    /// LiteLLM's name (`code_generation`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::CodeGeneration => "code_generation",
            Self::CodeUnderstanding => "code_understanding",
            Self::TechnicalDesign => "technical_design",
            Self::AnalyticalReasoning => "analytical_reasoning",
            Self::Writing => "writing",
            Self::FactualLookup => "factual_lookup",
            Self::General => "general",
        }
    }

    /// Its position in [`ALL`](Self::ALL).
    pub(crate) const fn index(self) -> usize {
        self as usize
    }

    /// The class of a prompt: the first rule that matches its first 2,000 characters, else
    /// [`General`](Self::General) (also for an empty or blank prompt).
    ///
    /// ```
    /// use switchyard_layers::preroute::adaptive::RequestClass;
    ///
    /// assert_eq!(RequestClass::classify("Write a Python script that renames files"), RequestClass::CodeGeneration);
    /// assert_eq!(RequestClass::classify("What is the capital of Peru?"), RequestClass::FactualLookup);
    /// assert_eq!(RequestClass::classify("hi there"), RequestClass::General);
    /// ```
    pub fn classify(text: &str) -> Self {
        if text.trim().is_empty() {
            return Self::General;
        }
        let end = text.char_indices().nth(2000).map_or(text.len(), |(i, _)| i);
        RULES.matches(&text[..end]).iter().next().map_or(Self::General, |i| RULE_CLASSES[i])
    }
}

impl fmt::Display for RequestClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RequestClass {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        Self::ALL.into_iter().find(|c| c.as_str() == s).ok_or(())
    }
}

/// LiteLLM's `_RULES`, in order (Python's `re.IGNORECASE` is `(?i)`; `\b`, `\w` and `.` are
/// Unicode-aware in both).
const PATTERNS: [(&str, RequestClass); 16] = [
    (
        r"\b(write|create|generate|implement|build)\s+(?:a |an |the |me )?(?:python|javascript|typescript|java|rust|go|c\+\+|sql|bash|shell)\b",
        RequestClass::CodeGeneration,
    ),
    (
        r"\b(write|create|implement|build)\b(?:\s+\w+){0,4}?\s+(function|class|method|script|program|api|endpoint|microservice)\b",
        RequestClass::CodeGeneration,
    ),
    (
        r"\b(explain|describe|understand|walk me through|what does)\b.*\b(code|function|method|class|algorithm|snippet)\b",
        RequestClass::CodeUnderstanding,
    ),
    (
        r"\b(debug|fix|why (?:is|does|isn't)|what.s wrong|trace)\b.*\b(error|bug|exception|stacktrace|stack trace|traceback)\b",
        RequestClass::CodeUnderstanding,
    ),
    (
        r"\b(review|critique)\s+(?:this |my |the )?(?:code|pr|pull request|diff|patch)\b",
        RequestClass::CodeUnderstanding,
    ),
    (
        r"\b(design|architect|plan|architecture)\b.*\b(system|service|api|database|schema|module|microservice)\b",
        RequestClass::TechnicalDesign,
    ),
    (
        r"\b(should i (?:use|choose|pick)|tradeoffs? between|compare)\b.*\b(library|framework|language|database|protocol|postgres|postgresql|mongodb|dynamodb|mysql|redis|kafka|sql|nosql)\b",
        RequestClass::TechnicalDesign,
    ),
    (r"\bhow (?:should|do) i (?:design|structure|organize|model)\b", RequestClass::TechnicalDesign),
    (
        r"\b(solve|compute|calculate|prove|derive)\b.*\b(equation|integral|derivative|theorem|proof|problem)\b",
        RequestClass::AnalyticalReasoning,
    ),
    (r"\b(if .+ then|given .+ find|suppose|assume)\b", RequestClass::AnalyticalReasoning),
    (r"\b(probability|statistics|combinatorics|optimization problem)\b", RequestClass::AnalyticalReasoning),
    (
        r"\b(write|draft|compose|rewrite|edit|proofread|polish)\b.*\b(email|essay|blog|post|article|letter|memo|copy|paragraph|sentence)\b",
        RequestClass::Writing,
    ),
    (
        r"\b(make (?:this|it)|help me)\s+(?:more |less )?(?:concise|formal|casual|professional|persuasive)\b",
        RequestClass::Writing,
    ),
    (r"^\s*(who|what|when|where|which)\s+(?:is|was|were|are)\b", RequestClass::FactualLookup),
    (r"^\s*(define|definition of|meaning of)\b", RequestClass::FactualLookup),
    (r"^\s*how (?:do you spell|to spell|many .* are there|tall is)\b", RequestClass::FactualLookup),
];

const RULE_CLASSES: [RequestClass; 16] = {
    let mut out = [RequestClass::General; 16];
    let mut i = 0;
    while i < PATTERNS.len() {
        out[i] = PATTERNS[i].1;
        i += 1;
    }
    out
};

/// All rules in one automaton: one pass over the prompt, then the lowest index that matched.
static RULES: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(PATTERNS.iter().map(|(p, _)| format!("(?i){p}"))).expect("the classifier's patterns compile")
});

#[cfg(test)]
mod tests {
    use super::RequestClass::{self, *};

    #[test]
    fn litellm_examples_land_in_their_classes() {
        let cases: [(&str, RequestClass); 14] = [
            ("write a rust function that parses dates", CodeGeneration),
            ("Build me an API endpoint for uploads", CodeGeneration),
            ("Can you explain what this code does?", CodeUnderstanding),
            ("why does this throw an exception", CodeUnderstanding),
            ("review my pull request", CodeUnderstanding),
            ("Design a system for rate limiting across regions", TechnicalDesign),
            ("should I use postgres or mongodb", TechnicalDesign),
            ("how should i structure my crates", TechnicalDesign),
            ("prove the theorem for all n", AnalyticalReasoning),
            ("suppose we have three boxes", AnalyticalReasoning),
            ("please polish this paragraph", Writing),
            ("help me more concise", Writing),
            ("  who was the first emperor", FactualLookup),
            ("thanks!", General),
        ];
        for (text, class) in cases {
            assert_eq!(RequestClass::classify(text), class, "{text}");
        }
    }

    #[test]
    fn the_first_rule_wins_and_only_the_first_2000_characters_count() {
        // Both a code-generation and a writing rule match: code generation comes first.
        assert_eq!(RequestClass::classify("write a python essay"), CodeGeneration);
        let late = format!("{}suppose", "é".repeat(2000));
        assert_eq!(RequestClass::classify(&late), General);
        assert_eq!(RequestClass::classify("   "), General);
        assert_eq!("writing".parse::<RequestClass>(), Ok(Writing));
    }
}
