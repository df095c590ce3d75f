//! Wildcard group names (`openai/*`): anchored glob matching with captures.

/// A compiled wildcard pattern. `*` matches any run of characters (including `/`); the whole
/// requested name must match (LiteLLM anchors only the start, so `a*b` matched `axbyz` there).
#[derive(Clone, Debug)]
pub(crate) struct Pattern {
    /// Literal pieces between the wildcards; `pieces.len() == wildcards + 1`.
    pieces: Vec<String>,
}

impl Pattern {
    pub(crate) fn new(pattern: &str) -> Self {
        Self { pieces: pattern.split('*').map(str::to_owned).collect() }
    }

    pub(crate) fn wildcards(&self) -> usize {
        self.pieces.len() - 1
    }

    fn literal_len(&self) -> usize {
        self.pieces.iter().map(String::len).sum()
    }

    /// Most specific first: more literal characters first, then fewer wildcards.
    pub(crate) fn specificity(&self) -> (usize, std::cmp::Reverse<usize>) {
        (self.literal_len(), std::cmp::Reverse(self.wildcards()))
    }

    /// The captured segments when `name` matches, one per wildcard.
    pub(crate) fn captures<'a>(&self, name: &'a str) -> Option<Vec<&'a str>> {
        let (first, rest) = self.pieces.split_first()?;
        let mut tail = name.strip_prefix(first.as_str())?;
        if rest.is_empty() {
            // No wildcard: the name must be exactly the literal.
            return tail.is_empty().then(Vec::new);
        }
        let mut caps = Vec::with_capacity(rest.len());
        for (i, piece) in rest.iter().enumerate() {
            let last = i + 1 == rest.len();
            let at = if last {
                // The final literal must end the name.
                if !tail.ends_with(piece.as_str()) {
                    return None;
                }
                tail.len() - piece.len()
            } else if piece.is_empty() {
                // `**`: the earlier wildcard takes nothing.
                0
            } else {
                // Leftmost match keeps later wildcards as wide as possible.
                tail.find(piece.as_str())?
            };
            caps.push(&tail[..at]);
            tail = &tail[at + piece.len()..];
        }
        Some(caps)
    }
}

/// Whether the wildcard `pattern` (`*` matches any run of characters) matches the whole of `name`,
/// with the same rules the [`Registry`](super::Registry) resolves patterns by.
///
/// ```
/// use switchyard_layers::deployment::pattern_matches;
/// assert!(pattern_matches("openai/*", "openai/gpt-4o"));
/// assert!(!pattern_matches("a*b", "axbyz"));
/// ```
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    Pattern::new(pattern).captures(name).is_some()
}

/// The provider LiteLLM infers for a bare model name (`gpt-4o` is `openai`), from the
/// [catalog](crate::catalog): the [`Registry`](super::Registry) also tries wildcard patterns
/// against `{provider}/{name}`, as LiteLLM's pattern router does. `None` for a name that already
/// starts with its provider or that the catalog does not know.
///
/// ```
/// use switchyard_layers::deployment::inferred_provider;
/// assert_eq!(inferred_provider("gpt-4o"), Some("openai"));
/// assert_eq!(inferred_provider("openai/gpt-4o"), None);
/// assert_eq!(inferred_provider("my-own-model"), None);
/// ```
pub fn inferred_provider(name: &str) -> Option<&'static str> {
    let facts = crate::catalog::lookup(name)?;
    // `vertex_ai-language-models` and the like are LiteLLM's `vertex_ai`.
    let provider = facts.provider.strip_prefix("vertex_ai-").map_or(facts.provider, |_| "vertex_ai");
    (!name.starts_with(&format!("{provider}/"))).then_some(provider)
}

/// Substitutes captured segments into a provider model's own wildcards, in order. When the
/// provider model has no wildcard it is used as is; when the counts differ, the requested name is
/// used whole (LiteLLM's rule).
pub(crate) fn substitute(model: &str, captures: &[&str], requested: &str) -> String {
    let slots = model.matches('*').count();
    if slots == 0 {
        return model.to_owned();
    }
    if slots != captures.len() {
        return requested.to_owned();
    }
    let mut out = String::with_capacity(model.len() + requested.len());
    let mut caps = captures.iter();
    for (i, piece) in model.split('*').enumerate() {
        if i > 0 {
            out.push_str(caps.next().copied().unwrap_or_default());
        }
        out.push_str(piece);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_anchored_at_both_ends() {
        let p = Pattern::new("a*b");
        assert_eq!(p.captures("axb"), Some(vec!["x"]));
        assert_eq!(p.captures("axbyz"), None);
    }

    #[test]
    fn a_pattern_without_wildcards_matches_only_itself() {
        assert!(pattern_matches("exact", "exact"));
        assert!(!pattern_matches("exact", "exactly"));
        assert!(pattern_matches("a*a", "aa"));
    }

    #[test]
    fn provider_prefix_pattern_captures_the_model() {
        let p = Pattern::new("openai/*");
        assert_eq!(p.captures("openai/gpt-4o"), Some(vec!["gpt-4o"]));
        assert_eq!(p.captures("azure/gpt-4o"), None);
    }

    #[test]
    fn multi_wildcard_captures_in_order() {
        let p = Pattern::new("*/llama-*-instruct");
        assert_eq!(p.captures("groq/llama-3.1-8b-instruct"), Some(vec!["groq", "3.1-8b"]));
    }

    #[test]
    fn more_literal_characters_is_more_specific() {
        assert!(Pattern::new("llmengine/*").specificity() > Pattern::new("*").specificity());
        assert!(Pattern::new("openai/gpt-4*").specificity() > Pattern::new("openai/*").specificity());
    }

    #[test]
    fn captured_segments_are_substituted_into_the_provider_model() {
        assert_eq!(substitute("openai/*", &["gpt-4o"], "openai/gpt-4o"), "openai/gpt-4o");
        assert_eq!(substitute("openai/*", &["gpt-4o"], "gpt-4o"), "openai/gpt-4o");
        assert_eq!(substitute("openai/fixed", &["x"], "x"), "openai/fixed");
        assert_eq!(substitute("openai/*", &["a", "b"], "a-b"), "a-b");
    }
}
