//! [`TranslateError`]: a request or a stream that cannot cross from one dialect to another.
//!
//! It names the field that could not cross as a JSON path into the input (`messages[2].content[1]`,
//! `n`), so the provider can answer with a 400 that tells the client what to change.
//!
//! ```
//! use switchyard_dialects::TranslateError;
//!
//! let err = TranslateError::new("n", "Anthropic returns one choice per request");
//! assert_eq!(err.to_string(), "`n`: Anthropic returns one choice per request");
//! ```

use std::fmt;

/// A field that cannot be translated, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TranslateError {
    /// A JSON path into the input: `messages[2].content[1]`, `tool_choice`, `n`.
    pub field: String,
    /// Why the field cannot cross, in words a client can act on.
    pub reason: String,
}

impl TranslateError {
    /// The field at `field` cannot cross, because `reason`.
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { field: field.into(), reason: reason.into() }
    }
}

impl fmt::Display for TranslateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.field, self.reason)
    }
}

impl std::error::Error for TranslateError {}
