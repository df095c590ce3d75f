//! The cacheable prefix of a request, for prompt-cache affinity: requests that share it prefer
//! the deployment that served it last, where the provider's prompt cache is warm.
//!
//! The prefix is what a provider caches: the tools, the system prompt (`system`, `instructions`,
//! or a chat request's leading system messages) and the messages up to the last one that
//! carries a `cache_control` marker (Anthropic's explicit caching, also written on chat content
//! parts). Without a marker, a long system prompt (at least [`LONG_SYSTEM_BYTES`]) is a prefix
//! by itself: OpenAI caches prompts of 1,024 tokens and more automatically. Other requests have
//! none. The digest is a SHA-256 of the prefix's raw bytes, read without building a tree.

use serde::Deserialize;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

/// A system prompt this long (about 1,024 tokens of English) is cacheable without a marker.
pub(crate) const LONG_SYSTEM_BYTES: usize = 4096;

const MARKER: &str = "\"cache_control\"";

#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(borrow, default)]
    tools: Option<&'a RawValue>,
    #[serde(borrow, default)]
    system: Option<&'a RawValue>,
    #[serde(borrow, default)]
    instructions: Option<&'a RawValue>,
    #[serde(borrow, default)]
    messages: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct Role<'a> {
    #[serde(borrow, default)]
    role: Option<&'a str>,
}

/// The digest of `body`'s cacheable prefix, or `None` when it has none (or is not a JSON object
/// of the expected shape).
pub(crate) fn prompt_prefix(body: &[u8]) -> Option<[u8; 32]> {
    // Most requests have neither a marker nor room for a long system prompt: no second parse.
    if body.len() < LONG_SYSTEM_BYTES && memchr::memmem::find(body, MARKER.as_bytes()).is_none() {
        return None;
    }
    let probe: Probe<'_> = serde_json::from_slice(body).ok()?;
    let messages = probe.messages.unwrap_or_default();
    // A chat request's system prompt is its leading system (or developer) messages.
    let leading_system = messages
        .iter()
        .take_while(|m| {
            serde_json::from_str::<Role<'_>>(m.get()).is_ok_and(|r| matches!(r.role, Some("system" | "developer")))
        })
        .count();
    let system: Vec<&str> = probe
        .system
        .into_iter()
        .chain(probe.instructions)
        .map(RawValue::get)
        .chain(messages[..leading_system].iter().map(|m| m.get()))
        .collect();
    let tools = probe.tools.map(RawValue::get);
    let marked_until = messages.iter().rposition(|m| m.get().contains(MARKER)).map(|i| i + 1);
    let marked_head = tools.is_some_and(|t| t.contains(MARKER)) || system.iter().any(|s| s.contains(MARKER));
    let upto = match marked_until {
        Some(end) => end.max(leading_system),
        None if marked_head || system.iter().map(|s| s.len()).sum::<usize>() >= LONG_SYSTEM_BYTES => leading_system,
        None => return None,
    };
    let mut hash = Sha256::new();
    hash.update(tools.unwrap_or_default());
    hash.update([0]);
    for part in &system {
        hash.update(part);
        hash.update([0]);
    }
    for m in &messages[leading_system..upto] {
        hash.update(m.get());
        hash.update([0]);
    }
    Some(hash.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_without_a_marker_or_a_long_system_prompt_have_no_prefix() {
        assert_eq!(prompt_prefix(br#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#), None);
        assert_eq!(prompt_prefix(br#"{"model":"m","system":"short","messages":[]}"#), None);
        assert_eq!(prompt_prefix(b"not json"), None);
    }

    #[test]
    fn the_prefix_ends_at_the_last_cache_control_marker() {
        let a = br#"{"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],
            "messages":[{"role":"user","content":"q1"}]}"#;
        let b = br#"{"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],
            "messages":[{"role":"user","content":"another question"}]}"#;
        let other = br#"{"system":[{"type":"text","text":"T","cache_control":{"type":"ephemeral"}}],
            "messages":[{"role":"user","content":"q1"}]}"#;
        assert!(prompt_prefix(a).is_some());
        assert_eq!(prompt_prefix(a), prompt_prefix(b), "the messages after the marker are not part of it");
        assert_ne!(prompt_prefix(a), prompt_prefix(other));
        let marked_turn = br#"{"messages":[
            {"role":"user","content":[{"type":"text","text":"long doc","cache_control":{"type":"ephemeral"}}]},
            {"role":"assistant","content":"ok"},{"role":"user","content":"q"}]}"#;
        let next_turn = br#"{"messages":[
            {"role":"user","content":[{"type":"text","text":"long doc","cache_control":{"type":"ephemeral"}}]},
            {"role":"assistant","content":"ok"},{"role":"user","content":"a different q"}]}"#;
        assert_eq!(prompt_prefix(marked_turn), prompt_prefix(next_turn));
    }

    #[test]
    fn a_long_system_prompt_is_a_prefix_in_every_dialect() {
        let long = "x".repeat(LONG_SYSTEM_BYTES);
        let chat =
            format!(r#"{{"messages":[{{"role":"system","content":"{long}"}},{{"role":"user","content":"a"}}]}}"#);
        let chat2 =
            format!(r#"{{"messages":[{{"role":"system","content":"{long}"}},{{"role":"user","content":"b"}}]}}"#);
        assert!(prompt_prefix(chat.as_bytes()).is_some());
        assert_eq!(prompt_prefix(chat.as_bytes()), prompt_prefix(chat2.as_bytes()));
        let responses = format!(r#"{{"instructions":"{long}","input":"hi"}}"#);
        assert!(prompt_prefix(responses.as_bytes()).is_some());
        let anthropic = format!(r#"{{"system":"{long}","messages":[]}}"#);
        assert!(prompt_prefix(anthropic.as_bytes()).is_some());
    }
}
