//! Masking secrets out of text that leaves the request path (stored cooldown reasons, trails,
//! logs): upstream error messages sometimes echo the key they were sent.
//!
//! ```
//! use switchyard_layers::redact::redact;
//! let msg = "Incorrect API key provided: sk-proj-abcdef1234567890XYZ. You can find your key at ...";
//! let safe = redact(msg, &[], 200);
//! assert!(!safe.contains("abcdef1234567890"));
//! assert!(safe.starts_with("Incorrect API key provided: sk-p***"));
//! ```

/// Masks anything that looks like a credential in `text`, plus every exact occurrence of the
/// `known` secrets, and truncates the result to at most `max` bytes (on a character boundary,
/// with `…`).
///
/// A word looks like a credential when it starts with a common key prefix (`sk-`, `key-`,
/// `Bearer`'s token, `AKIA`, ...) or is a run of at least 24 letters, digits, `-` and `_` mixing
/// letters and digits. Such words keep their first 4 characters.
pub fn redact(text: &str, known: &[&str], max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max + 8));
    let mut masked_known = text.to_owned();
    for secret in known.iter().filter(|s| s.len() >= 4) {
        masked_known = masked_known.replace(secret, "***");
    }
    let mut after_bearer = false;
    for (i, word) in masked_known.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let core = word.trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        if after_bearer || looks_secret(core) {
            let keep: String = core.chars().take(4).collect();
            out.push_str(&word.replacen(core, &format!("{keep}***"), 1));
        } else {
            out.push_str(word);
        }
        after_bearer = core.eq_ignore_ascii_case("bearer");
        if out.len() > max {
            break;
        }
    }
    truncate(&mut out, max);
    out
}

fn looks_secret(word: &str) -> bool {
    const PREFIXES: [&str; 6] = ["sk-", "sk_", "key-", "AKIA", "xoxb-", "ghp_"];
    if word.len() >= 12 && PREFIXES.iter().any(|p| word.starts_with(p)) {
        return true;
    }
    word.len() >= 24
        && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && word.chars().any(|c| c.is_ascii_digit())
        && word.chars().any(|c| c.is_ascii_alphabetic())
}

fn truncate(s: &mut String, max: usize) {
    if s.len() <= max {
        return;
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s.push('…');
}

/// A URL with its credentials masked: `redis://user:pass@host/0` -> `redis://***@host/0`.
///
/// ```
/// use switchyard_layers::redact::mask_url_credentials;
/// assert_eq!(mask_url_credentials("rediss://:hunter2@cache:6380/0"), "rediss://***@cache:6380/0");
/// assert_eq!(mask_url_credentials("redis://cache:6379"), "redis://cache:6379");
/// ```
pub fn mask_url_credentials(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) if scheme.is_empty() => format!("***{}", &rest[at..]),
        Some(at) => format!("{scheme}://***{}", &rest[at..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_secrets_are_masked_wherever_they_appear() {
        let out = redact("auth failed for key=hunter2-secret, retry", &["hunter2-secret"], 200);
        assert_eq!(out, "auth failed for key=***, retry");
    }

    #[test]
    fn bearer_tokens_and_long_tokens_are_masked() {
        let out = redact("Authorization: Bearer abc.def.ghi and id 0123456789abcdef0123456789", &[], 200);
        assert!(!out.contains("def.ghi"), "{out}");
        assert!(!out.contains("0123456789abcdef0123456789"), "{out}");
    }

    #[test]
    fn ordinary_words_are_kept_and_text_is_truncated() {
        assert_eq!(redact("Rate limit reached for gpt-4o", &[], 200), "Rate limit reached for gpt-4o");
        let long = "é".repeat(100);
        let out = redact(&long, &[], 11);
        assert!(out.len() <= 11 + '…'.len_utf8());
        assert!(out.ends_with('…'));
    }
}
