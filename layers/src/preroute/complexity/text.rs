//! The text the complexity router classifies: the human ask of a user turn with harness reminder
//! blocks removed (LiteLLM's `_strip_reminder_blocks`, `_human_text`,
//! `_extract_current_ask_and_system_prompt`, `_newest_turn_ask`).

use crate::preroute::{Conversation, Role};

/// Python's `str.isspace` (Unicode white space plus the separators `\x1c`..`\x1f`).
pub(super) fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// Python's `str.strip()`.
pub(super) fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// The reminder delimiters, lower-cased: LiteLLM's default is `<system-reminder>` /
/// `</system-reminder>`.
#[derive(Clone, Debug)]
pub(super) struct Reminders(pub(super) Vec<(String, String)>);

impl Default for Reminders {
    fn default() -> Self {
        Self(vec![("<system-reminder>".to_owned(), "</system-reminder>".to_owned())])
    }
}

impl Reminders {
    /// The text with every complete reminder block removed and the pieces around them trimmed
    /// and joined by a space; without a block, the text trimmed. Linear: each pair's scan only
    /// moves forward and an unclosed delimiter ends it.
    pub(super) fn strip(&self, text: &str) -> String {
        // The blocks are found in the lower-cased text; `map` takes a lower-cased offset back to
        // the original text (`None`: both are ASCII, offsets are equal).
        let (lowered, map) = lower_with_offsets(text);
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for (open, close) in &self.0 {
            let mut cursor = 0;
            while let Some(start) = lowered.get(cursor..).and_then(|s| s.find(open.as_str())).map(|at| cursor + at) {
                let after_open = start + open.len();
                let Some(end) =
                    lowered.get(after_open..).and_then(|s| s.find(close.as_str())).map(|at| after_open + at)
                else {
                    break;
                };
                cursor = end + close.len();
                spans.push((start, cursor));
            }
        }
        if spans.is_empty() {
            return py_strip(text).to_owned();
        }
        spans.sort_unstable();
        let original = |at: usize| map.as_ref().map_or(at, |m| m.get(at).copied().unwrap_or(text.len()));
        let mut out = String::with_capacity(text.len());
        // Each gap resumes after the furthest block seen so far, so nested or overlapping blocks
        // of different pairs are removed whole.
        let mut keep_from = 0;
        for &(start, end) in spans.iter().chain(std::iter::once(&(lowered.len(), lowered.len()))) {
            let (a, b) = (original(keep_from), original(start));
            if a < b
                && let Some(piece) = text.get(a..b).map(py_strip).filter(|p| !p.is_empty())
            {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(piece);
            }
            keep_from = keep_from.max(end);
        }
        out
    }

    /// The current ask (the newest user turn with a human ask, as that ask: the text the scorer
    /// reads) and whether it is the newest user turn's (escalation and housekeeping read only
    /// that turn). `None` when every user turn is empty once reminders are removed.
    pub(super) fn asks(&self, conversation: &Conversation) -> Option<(String, bool)> {
        let mut newest = true;
        for turn in conversation.turns().iter().rev().filter(|t| t.role == Role::User) {
            let ask = self.strip(&turn.text);
            if !ask.is_empty() {
                return Some((ask, newest));
            }
            newest = false;
        }
        None
    }
}

/// The lower-cased text and, when lower-casing changed any byte length (non-ASCII text), the
/// original offset of each lower-cased byte (plus one past the end).
fn lower_with_offsets(text: &str) -> (String, Option<Vec<usize>>) {
    if text.is_ascii() {
        return (text.to_ascii_lowercase(), None);
    }
    let mut lowered = String::with_capacity(text.len());
    let mut map = Vec::with_capacity(text.len() + 1);
    for (at, c) in text.char_indices() {
        for l in c.to_lowercase() {
            lowered.push(l);
            map.resize(lowered.len(), at);
        }
    }
    map.push(text.len());
    (lowered, Some(map))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(text: &str) -> String {
        Reminders::default().strip(text)
    }

    #[test]
    fn complete_blocks_are_removed_and_the_ask_around_them_kept() {
        assert_eq!(strip("  fix the bug  "), "fix the bug");
        assert_eq!(strip("<system-reminder>ctx</system-reminder>\nfix the bug"), "fix the bug");
        assert_eq!(strip("a <SYSTEM-REMINDER>x</System-Reminder> b <system-reminder>y</system-reminder>"), "a b");
        assert_eq!(strip("<system-reminder>only</system-reminder>"), "");
    }

    #[test]
    fn an_unclosed_delimiter_is_not_a_block() {
        assert_eq!(strip("see <system-reminder> in the docs"), "see <system-reminder> in the docs");
    }

    #[test]
    fn nested_blocks_of_different_pairs_are_removed_whole() {
        let r = Reminders(vec![("<a>".to_owned(), "</a>".to_owned()), ("<b>".to_owned(), "</b>".to_owned())]);
        assert_eq!(r.strip("x <a> 1 <b> 2 </b> 3 </a> y"), "x y");
    }

    #[test]
    fn non_ascii_text_keeps_its_offsets() {
        assert_eq!(strip("Émile İ <system-reminder>é</system-reminder> ça"), "Émile İ ça");
    }

    #[test]
    fn the_current_ask_skips_turns_with_only_plumbing() {
        let c = Conversation::new()
            .push(Role::User, "design a cache")
            .push(Role::Assistant, "ok")
            .push(Role::User, "<system-reminder>todo list</system-reminder>");
        let r = Reminders::default();
        assert_eq!(r.asks(&c), Some(("design a cache".to_owned(), false)));
        assert_eq!(r.asks(&c.push(Role::User, "and test it")), Some(("and test it".to_owned(), true)));
    }
}
