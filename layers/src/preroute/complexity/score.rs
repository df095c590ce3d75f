//! The rule-based scorer: LiteLLM's `_score_and_classify` and the dimension scorers it calls
//! (`_score_token_count`, `_score_keyword_match`, `_score_multi_step`,
//! `_score_question_complexity`), with its keyword matching (`_keyword_matches`).
//!
//! Every keyword of the four lists is found in one pass over the lower-cased prompt (an
//! Aho-Corasick automaton reporting overlapping matches), then checked for word boundaries the
//! way Python's `\b` does.

use aho_corasick::{AhoCorasick, AhoCorasickKind};

use super::{
    ComplexityConfigError,
    config::{ComplexityRouterConfig, DimensionWeights, Tier, TierBoundaries, TokenThresholds},
    keywords,
    text::is_py_space,
};
use crate::ctx::DimensionScore;

/// Why the scorer chose its tier (LiteLLM's causes).
pub(super) const HEURISTIC: &str = "heuristic_scorer";
pub(super) const REASONING_OVERRIDE: &str = "reasoning_override";

/// What the scorer made of a prompt: LiteLLM's `classify` result plus the dimensions.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Classification {
    /// The tier.
    pub tier: Tier,
    /// The weighted score.
    pub score: f64,
    /// The seven dimensions, in LiteLLM's order.
    pub dimensions: Vec<DimensionScore>,
    /// The signals that fired, in the dimensions' order.
    pub signals: Vec<String>,
    /// `heuristic_scorer`, or `reasoning_override` when two reasoning markers promoted the
    /// request to REASONING.
    pub cause: &'static str,
}

/// One keyword of a list: its configured spelling (named in signals) and its pattern.
#[derive(Debug)]
struct Entry {
    keyword: Box<str>,
    pattern: usize,
}

/// A keyword dimension: its entries, thresholds `(low, high)` and scores `(low, high)`.
#[derive(Debug)]
struct KeywordDimension {
    name: &'static str,
    label: &'static str,
    entries: Vec<Entry>,
    thresholds: (usize, usize),
    scores: (f64, f64),
}

#[derive(Debug)]
pub(super) struct Scorer {
    automaton: AhoCorasick,
    /// Per pattern: matched as a plain substring (a phrase or CJK) rather than a whole word.
    substring: Vec<bool>,
    /// code, reasoning, technical, simple.
    dimensions: [KeywordDimension; 4],
    weights: DimensionWeights,
    boundaries: TierBoundaries,
    tokens: TokenThresholds,
    override_min_score: f64,
}

/// LiteLLM's `_append_custom_keywords`: the custom ones not already in the base (case-insensitive),
/// each lower-cased spelling once, in first-seen order keeping its last spelling (a dict).
fn append_custom(base: Vec<String>, custom: Option<&[String]>) -> Vec<String> {
    let Some(custom) = custom.filter(|c| !c.is_empty()) else { return base };
    let lowered: Vec<String> = base.iter().map(|k| k.to_lowercase()).collect();
    let mut extra: Vec<(String, String)> = Vec::new();
    for keyword in custom {
        let lower = keyword.to_lowercase();
        if lowered.contains(&lower) {
            continue;
        }
        match extra.iter_mut().find(|(l, _)| *l == lower) {
            Some(slot) => slot.1.clone_from(keyword),
            None => extra.push((lower, keyword.clone())),
        }
    }
    base.into_iter().chain(extra.into_iter().map(|(_, k)| k)).collect()
}

/// A configured list, or the default when unset or empty (LiteLLM's `config.x or DEFAULT_X`).
fn list(configured: Option<&Vec<String>>, default: &[&str]) -> Vec<String> {
    match configured {
        Some(list) if !list.is_empty() => list.clone(),
        _ => default.iter().map(|k| (*k).to_owned()).collect(),
    }
}

impl Scorer {
    pub(super) fn new(config: &ComplexityRouterConfig) -> Result<Self, ComplexityConfigError> {
        let lists = [
            list(config.code_keywords.as_ref(), keywords::CODE_KEYWORDS),
            list(config.reasoning_keywords.as_ref(), keywords::REASONING_KEYWORDS),
            append_custom(
                list(config.technical_keywords.as_ref(), keywords::TECHNICAL_KEYWORDS),
                config.custom_technical_keywords.as_deref(),
            ),
            list(config.simple_keywords.as_ref(), keywords::SIMPLE_KEYWORDS),
        ];
        let mut patterns: Vec<String> = Vec::new();
        let mut entries: [Vec<Entry>; 4] = Default::default();
        for (list, entries) in lists.into_iter().zip(entries.iter_mut()) {
            for keyword in list {
                let lower = keyword.to_lowercase();
                // An empty keyword would match nearly every prompt; LiteLLM drops blank ones from
                // keyword rules for that reason, and here from every list.
                if lower.is_empty() {
                    continue;
                }
                let pattern = match patterns.iter().position(|p| *p == lower) {
                    Some(at) => at,
                    None => {
                        patterns.push(lower);
                        patterns.len() - 1
                    }
                };
                entries.push(Entry { keyword: keyword.into_boxed_str(), pattern });
            }
        }
        let substring = patterns.iter().map(|p| matches_as_substring(p)).collect();
        // A DFA: the fastest search, for a few kilobytes of automaton built once.
        let automaton = AhoCorasick::builder()
            .kind(Some(AhoCorasickKind::DFA))
            .build(&patterns)
            .map_err(|e| ComplexityConfigError::new(format!("the keyword lists cannot be compiled: {e}")))?;
        let [code, reasoning, technical, simple] = entries;
        Ok(Self {
            automaton,
            substring,
            dimensions: [
                KeywordDimension {
                    name: "codePresence",
                    label: "code",
                    entries: code,
                    thresholds: (1, 2),
                    scores: (0.5, 1.0),
                },
                KeywordDimension {
                    name: "reasoningMarkers",
                    label: "reasoning",
                    entries: reasoning,
                    thresholds: (1, 2),
                    scores: (0.7, 1.0),
                },
                KeywordDimension {
                    name: "technicalTerms",
                    label: "technical",
                    entries: technical,
                    thresholds: (2, 4),
                    scores: (0.5, 1.0),
                },
                KeywordDimension {
                    name: "simpleIndicators",
                    label: "simple",
                    entries: simple,
                    thresholds: (1, 2),
                    scores: (-1.0, -1.0),
                },
            ],
            weights: config.dimension_weights,
            boundaries: config.tier_boundaries,
            tokens: config.token_thresholds,
            override_min_score: config.reasoning_override_min_score.unwrap_or(config.tier_boundaries.simple_medium),
        })
    }

    /// LiteLLM's `_score_and_classify(prompt)`: the system prompt is not scored (LiteLLM 1.100
    /// scores the caller's ask only).
    pub(super) fn classify(&self, prompt: &str) -> Classification {
        let lowered = prompt.to_lowercase();
        let mut matched = vec![false; self.substring.len()];
        // Overlapping matches: every occurrence of every keyword, so a later whole-word occurrence
        // counts when an earlier one sits inside a word. (The automaton is built with the standard
        // match kind, the one that supports them.)
        for m in self.automaton.find_overlapping_iter(&lowered) {
            let p = m.pattern().as_usize();
            if !matched[p]
                && (self.substring[p] || (word_boundary(&lowered, m.start()) && word_boundary(&lowered, m.end())))
            {
                matched[p] = true;
            }
        }

        let w = &self.weights;
        let mut dimensions = Vec::with_capacity(7);
        // `len(text) // 4`: Python counts characters.
        let tokens = (prompt.chars().count() / 4) as u64;
        dimensions.push(if tokens < self.tokens.simple {
            DimensionScore::new("tokenCount", -1.0, w.token_count).with_signal(format!("short ({tokens} tokens)"))
        } else if tokens > self.tokens.complex {
            DimensionScore::new("tokenCount", 1.0, w.token_count).with_signal(format!("long ({tokens} tokens)"))
        } else {
            DimensionScore::new("tokenCount", 0.0, w.token_count)
        });
        let weights = [w.code_presence, w.reasoning_markers, w.technical_terms, w.simple_indicators];
        let mut reasoning_matches = 0;
        for (i, (dimension, weight)) in self.dimensions.iter().zip(weights).enumerate() {
            let (count, scored) = dimension.score(&matched, weight);
            if i == 1 {
                reasoning_matches = count;
            }
            dimensions.push(scored);
        }
        dimensions.push(if has_multi_step(&lowered) {
            DimensionScore::new("multiStepPatterns", 0.5, w.multi_step_patterns).with_signal("multi-step")
        } else {
            DimensionScore::new("multiStepPatterns", 0.0, w.multi_step_patterns)
        });
        let questions = prompt.bytes().filter(|b| *b == b'?').count();
        dimensions.push(if questions > 3 {
            DimensionScore::new("questionComplexity", 0.5, w.question_complexity)
                .with_signal(format!("{questions} questions"))
        } else {
            DimensionScore::new("questionComplexity", 0.0, w.question_complexity)
        });

        let signals = dimensions.iter().filter_map(|d| d.signal.clone()).collect();
        // Summed in LiteLLM's order, so the total is the same float.
        let score = dimensions.iter().fold(0.0, |sum, d| sum + d.weighted());
        let b = &self.boundaries;
        let (tier, cause) = if reasoning_matches >= 2 && score >= self.override_min_score {
            (Tier::Reasoning, REASONING_OVERRIDE)
        } else if score < b.simple_medium {
            (Tier::Simple, HEURISTIC)
        } else if score < b.medium_complex {
            (Tier::Medium, HEURISTIC)
        } else if score < b.complex_reasoning {
            (Tier::Complex, HEURISTIC)
        } else {
            (Tier::Reasoning, HEURISTIC)
        };
        Classification { tier, score, dimensions, signals, cause }
    }
}

impl KeywordDimension {
    /// LiteLLM's `_score_keyword_match`: the match count and the dimension's score, its signal
    /// naming the first three matches.
    fn score(&self, matched: &[bool], weight: f64) -> (usize, DimensionScore) {
        let mut count = 0;
        let mut detail = String::new();
        for entry in self.entries.iter().filter(|e| matched[e.pattern]) {
            if count < 3 {
                if count > 0 {
                    detail.push_str(", ");
                }
                detail.push_str(&entry.keyword);
            }
            count += 1;
        }
        let (low, high) = self.thresholds;
        if count < low {
            return (count, DimensionScore::new(self.name, 0.0, weight));
        }
        let score = if count >= high { self.scores.1 } else { self.scores.0 };
        (count, DimensionScore::new(self.name, score, weight).with_signal(format!("{} ({detail})", self.label)))
    }
}

/// Python's `\w` for `str` patterns: Unicode letters and digits, and `_`.
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Python's `\b` at byte offset `at` of `text`.
pub(super) fn word_boundary(text: &str, at: usize) -> bool {
    let before = text.get(..at).and_then(|s| s.chars().next_back()).is_some_and(is_word);
    let after = text.get(at..).and_then(|s| s.chars().next()).is_some_and(is_word);
    before != after
}

/// LiteLLM's `_CJK_CHARACTER`: kana, CJK ideographs (extension A, the unified block, the
/// compatibility block, planes 2 and 3) and half-width katakana.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x31F0..=0x31FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xFF66..=0xFF9D
            | 0x20000..=0x3FFFF)
}

/// A phrase (a space in it) or a keyword with CJK matches as a plain substring; anything else
/// as a whole word (`\bkeyword\b`).
pub(super) fn matches_as_substring(keyword_lower: &str) -> bool {
    keyword_lower.contains(' ') || keyword_lower.chars().any(is_cjk)
}

/// LiteLLM's `_keyword_matches(text, keyword)` for an already lower-cased text and keyword.
pub(super) fn keyword_matches(text_lower: &str, keyword_lower: &str) -> bool {
    if matches_as_substring(keyword_lower) {
        return text_lower.contains(keyword_lower);
    }
    let Some(first) = keyword_lower.chars().next() else { return false };
    let mut from = 0;
    while let Some(at) = text_lower.get(from..).and_then(|rest| rest.find(keyword_lower)) {
        let start = from + at;
        if word_boundary(text_lower, start) && word_boundary(text_lower, start + keyword_lower.len()) {
            return true;
        }
        from = start + first.len_utf8();
    }
    false
}

/// LiteLLM's four multi-step patterns over the lower-cased prompt: `first.*?then` (on one
/// line: `.` does not match a newline), `step\s*\d`, `\d+\.\s` and `[a-z]\)\s`.
fn has_multi_step(lowered: &str) -> bool {
    let first_then =
        lowered.split('\n').any(|line| line.find("first").is_some_and(|at| line[at + 5..].contains("then")));
    first_then || step_number(lowered) || numbered(lowered) || lettered(lowered)
}

/// Python's `\d` (decimal digits; non-ASCII numerals are taken as digits too).
fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric())
}

/// `step\s*\d`.
fn step_number(text: &str) -> bool {
    text.match_indices("step").any(|(at, _)| text[at + 4..].chars().find(|c| !is_py_space(*c)).is_some_and(is_digit))
}

/// `\d+\.\s`: a digit, a dot, a space.
fn numbered(text: &str) -> bool {
    text.match_indices('.').any(|(at, _)| {
        text[..at].chars().next_back().is_some_and(is_digit) && text[at + 1..].chars().next().is_some_and(is_py_space)
    })
}

/// `[a-z]\)\s` (case-insensitive on a lower-cased text): a letter, `)`, a space.
fn lettered(text: &str) -> bool {
    text.match_indices(')').any(|(at, _)| {
        text[..at].chars().next_back().is_some_and(|c| c.is_ascii_alphabetic())
            && text[at + 1..].chars().next().is_some_and(is_py_space)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_words_match_on_word_boundaries_only() {
        assert!(keyword_matches("call the api now", "api"));
        assert!(!keyword_matches("what is the capital of france?", "api"));
        assert!(!keyword_matches("the poetry of digital art", "try"));
        assert!(keyword_matches("try again", "try"));
        assert!(keyword_matches("what's up", "what's"));
        assert!(!keyword_matches("snake_case_api", "api"), "`_` is a word character");
        assert!(!keyword_matches("api_", "api"));
        assert!(keyword_matches("(api)", "api"));
    }

    #[test]
    fn phrases_and_cjk_match_as_substrings() {
        assert!(keyword_matches("please think step by steps", "step by step"));
        assert!(keyword_matches("我需要开发票", "发票"));
        assert!(!keyword_matches("我需要开发", "发票"));
    }

    #[test]
    fn a_later_occurrence_can_match_when_an_earlier_one_does_not() {
        assert!(keyword_matches("capital api", "api"));
    }

    #[test]
    fn multi_step_patterns() {
        assert!(has_multi_step("first do this, then that"));
        assert!(!has_multi_step("first do this,\nthen that"));
        assert!(has_multi_step("see step 2"));
        assert!(has_multi_step("step\t3"));
        assert!(has_multi_step("1. install"));
        assert!(!has_multi_step("version 1.2 is out"));
        assert!(has_multi_step("a) one b) two"));
        assert!(!has_multi_step("(see above)."));
    }

    #[test]
    fn custom_technical_keywords_are_appended_without_duplicates() {
        let base = vec!["GPU".to_owned(), "tcp".to_owned()];
        let custom = ["gpu".to_owned(), "Kafka".to_owned(), "kafka".to_owned(), "raft".to_owned()];
        assert_eq!(append_custom(base, Some(&custom)), ["GPU", "tcp", "kafka", "raft"]);
    }
}
