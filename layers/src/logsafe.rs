//! Text that a client or an upstream chose, made safe to write into a log line.
//!
//! A requested model name reaches the logs through a wildcard group (`openai/*` serves whatever
//! name follows the prefix), an upstream's error message reaches them as a cooldown reason, and a
//! request may name its own fallbacks. Written raw, a `\n` in such text forges a log line and an
//! ANSI escape rewrites the operator's terminal. Every log field and span field that carries such
//! text goes through [`Escaped`], which writes control characters as escapes while formatting: it
//! allocates nothing, and costs nothing when no subscriber wants the field.
//!
//! Escaped are the C0 controls (`\n`, `\r`, `\t` and `\u{1b}` among them), DEL, the C1 controls,
//! the Unicode line and paragraph separators (U+2028, U+2029) and the bidirectional overrides and
//! isolates (U+202A..U+202E, U+2066..U+2069) that reorder what a terminal shows. Everything else,
//! the backslash included, is written as it is, so ordinary names are unchanged.
//!
//! ```
//! use switchyard_layers::logsafe::{Escaped, escape};
//!
//! let requested = "gpt-4o\n2026-12-02T00:00:00Z  INFO forged line\u{1b}[2J";
//! assert_eq!(Escaped(requested).to_string(), r"gpt-4o\n2026-12-02T00:00:00Z  INFO forged line\u{1b}[2J");
//! tracing::info!(requested = %Escaped(requested), "a field that cannot break the line");
//!
//! // Ordinary text is borrowed, not copied.
//! assert!(matches!(escape("openai/gpt-4o"), std::borrow::Cow::Borrowed(_)));
//! ```

use std::borrow::Cow;
use std::fmt::{self, Display, Write};

/// Formats `T` with its control characters escaped (see the [module docs](self)); use it as a
/// `tracing` field (`reason = %Escaped(&reason)`) or anywhere a `Display` is written to a log.
///
/// ```
/// use switchyard_layers::logsafe::Escaped;
/// let err = std::io::Error::other("upstream said:\r\nHTTP/1.1 200 OK");
/// assert_eq!(format!("{}", Escaped(&err)), r"upstream said:\r\nHTTP/1.1 200 OK");
/// ```
#[derive(Clone, Copy)]
pub struct Escaped<T>(pub T);

impl<T: Display> Display for Escaped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(EscapingWriter(f), "{}", self.0)
    }
}

impl<T: Display> fmt::Debug for Escaped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('"')?;
        Display::fmt(self, f)?;
        f.write_char('"')
    }
}

/// `text` with its control characters escaped; borrowed when there are none.
///
/// ```
/// use switchyard_layers::logsafe::escape;
/// assert_eq!(escape("a\u{7f}b\u{2028}c"), r"a\u{7f}b\u{2028}c");
/// ```
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    // Writing into a `String` cannot fail.
    let _ = EscapingWriter(&mut out).write_str(text);
    Cow::Owned(out)
}

/// Whether `c` is written as an escape.
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Passes text on to the inner writer, control characters escaped, in as few writes as possible.
struct EscapingWriter<W>(W);

impl<W: Write> Write for EscapingWriter<W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut rest = s;
        while let Some((at, c)) = rest.char_indices().find(|&(_, c)| needs_escape(c)) {
            self.0.write_str(&rest[..at])?;
            match c {
                '\n' => self.0.write_str(r"\n")?,
                '\r' => self.0.write_str(r"\r")?,
                '\t' => self.0.write_str(r"\t")?,
                _ => write!(self.0, "\\u{{{:x}}}", c as u32)?,
            }
            rest = &rest[at + c.len_utf8()..];
        }
        self.0.write_str(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_character_is_escaped_and_nothing_else() {
        for c in (0u32..=0x10ffff).filter_map(char::from_u32) {
            let out = Escaped(c).to_string();
            if needs_escape(c) {
                assert!(out.starts_with('\\') && out.is_ascii(), "{c:?} -> {out}");
                assert!(!out.chars().any(needs_escape));
            } else {
                assert_eq!(out, c.to_string());
            }
        }
    }

    #[test]
    fn escapes_are_the_rust_spellings() {
        assert_eq!(escape("\u{0}\u{1b}[31m\u{85}\u{9b}\u{202e}"), r"\u{0}\u{1b}[31m\u{85}\u{9b}\u{202e}");
        assert_eq!(escape("a\tb\r\nc"), r"a\tb\r\nc");
        assert_eq!(escape(r"back\slash é 日本"), r"back\slash é 日本");
    }

    #[test]
    fn ordinary_text_is_borrowed() {
        assert!(matches!(escape("azure/gpt-4o-eu"), Cow::Borrowed(_)));
        assert!(matches!(escape("a\nb"), Cow::Owned(_)));
    }

    #[test]
    fn debug_quotes_the_escaped_text() {
        assert_eq!(format!("{:?}", Escaped("x\ny")), r#""x\ny""#);
    }
}
