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
/// Words are split at whitespace and at the punctuation that glues a value to its name or wraps
/// it (`=`, `:`, quotes, `,`, `;`, brackets), so `key=sk-...`, `token:ghp_...`,
/// `"api_key":"sk-..."` and `Authorization:Bearer x` are seen as separate words. A word looks
/// like a credential when it starts with a common key prefix (`sk-`, `key-`, `AKIA`, `ghp_`, ...)
/// or is a run of at least 24 letters, digits, `-` and `_` mixing letters and digits; the word
/// after `Bearer` is always one. Such words keep their first 4 characters.
///
/// ```
/// use switchyard_layers::redact::redact;
/// assert_eq!(redact(r#"{"api_key":"sk-live-0123456789abcdef"}"#, &[], 200), r#"{"api_key":"sk-l***"}"#);
/// assert_eq!(redact("Authorization:Bearer abc.def", &[], 200), "Authorization:Bearer abc.***");
/// ```
pub fn redact(text: &str, known: &[&str], max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max + 8));
    let mut masked_known = text.to_owned();
    for secret in known.iter().filter(|s| s.len() >= 4) {
        masked_known = masked_known.replace(secret, "***");
    }
    let mut after_bearer = false;
    let mut rest = masked_known.as_str();
    while !rest.is_empty() && out.len() <= max {
        // A run of separators, then a word.
        let word_start = rest.find(|c: char| !is_separator(c)).unwrap_or(rest.len());
        out.push_str(&rest[..word_start]);
        rest = &rest[word_start..];
        let word_end = rest.find(is_separator).unwrap_or(rest.len());
        let (word, tail) = rest.split_at(word_end);
        rest = tail;
        if word.is_empty() {
            continue;
        }
        let core = word.trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        if !core.is_empty() && (after_bearer || looks_secret(core)) {
            let keep: String = core.chars().take(4).collect();
            out.push_str(&word.replacen(core, &format!("{keep}***"), 1));
        } else {
            out.push_str(word);
        }
        after_bearer = core.eq_ignore_ascii_case("bearer");
    }
    truncate(&mut out, max);
    out
}

/// What separates words: whitespace and the punctuation that glues a value to its name or wraps it.
fn is_separator(c: char) -> bool {
    c.is_whitespace()
        || matches!(c, '=' | ':' | '"' | '\'' | '`' | ',' | ';' | '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>')
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
    fn key_shaped_tokens_glued_to_equals_or_colon_are_masked() {
        let key = "sk-live-0123456789abcdefABCDEF";
        for text in [
            format!("bad key={key} given"),
            format!("token:{key}"),
            format!(r#"{{"api_key":"{key}","model":"gpt-4o"}}"#),
            format!("api_key='{key}';"),
        ] {
            let out = redact(&text, &[], 200);
            assert!(!out.contains("0123456789abcdef"), "{text} -> {out}");
            assert!(out.contains("sk-l***"), "{text} -> {out}");
        }
        let out = redact("token:ghp_0123456789abcdefghijABCDEFGHIJ0123456", &[], 200);
        assert_eq!(out, "token:ghp_***");
        let out = redact(r#"{"api_key":"sk-live-0123456789abcdef","model":"gpt-4o"}"#, &[], 200);
        assert_eq!(out, r#"{"api_key":"sk-l***","model":"gpt-4o"}"#);
    }

    #[test]
    fn a_bearer_token_glued_to_its_header_name_is_masked() {
        for text in
            ["Authorization:Bearer x-secret-token", "authorization=bearer x-secret-token", "Bearer:x-secret-token"]
        {
            let out = redact(text, &[], 200);
            assert!(!out.contains("secret-token"), "{text} -> {out}");
        }
        assert_eq!(redact("Authorization:Bearer abc.def.ghi", &[], 200), "Authorization:Bearer abc.***");
    }

    #[test]
    fn urls_times_and_pairs_of_ordinary_words_are_kept() {
        for text in ["see https://platform.openai.com/account/api-keys", "at 12:30:45", "model=gpt-4o, n=2"] {
            assert_eq!(redact(text, &[], 200), text);
        }
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
