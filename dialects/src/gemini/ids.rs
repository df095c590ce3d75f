//! Ids of answers and tool calls: Gemini's when it gives them, else derived deterministically
//! from the answer (so the same answer, streamed or whole, gets the same ids), and the thought
//! signature a tool call id carries.

/// What separates a tool call id from the thought signature appended to it (LiteLLM's
/// `THOUGHT_SIGNATURE_SEPARATOR`): an OpenAI client echoes the id back on its next turn, and with
/// it the signature Gemini needs.
pub(crate) const SIGNATURE_SEPARATOR: &str = "__thought__";

/// The call id and the thought signature of a tool call id.
pub(crate) fn split_call_id(id: &str) -> (&str, Option<&str>) {
    match id.split_once(SIGNATURE_SEPARATOR) {
        Some((id, signature)) if !signature.is_empty() => (id, Some(signature)),
        Some((id, _)) => (id, None),
        None => (id, None),
    }
}

/// FNV-1a, 64 bits: stable across builds and platforms, unlike `std`'s hasher.
fn fnv(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.iter().chain(&[0xff]) {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// The id of a chat completion: `chatcmpl-<responseId>`, else one derived from `created`.
pub(crate) fn completion_id(response_id: Option<&str>, created: u64) -> String {
    match response_id.filter(|id| !id.is_empty()) {
        Some(id) => format!("chatcmpl-{id}"),
        None => format!("chatcmpl-{:016x}", fnv(&[&created.to_le_bytes()])),
    }
}

/// The OpenAI id of tool call `position` of candidate `candidate`: Gemini's own id when it gave
/// one, else `call_<hash of the answer's id, candidate and position>`; with the thought signature
/// appended when there is one.
pub(crate) fn call_id(
    native: Option<&str>,
    completion_id: &str,
    candidate: u32,
    position: u32,
    signature: Option<&str>,
) -> String {
    let id = match native.filter(|id| !id.is_empty()) {
        Some(id) => id.to_owned(),
        None => {
            let hash = fnv(&[completion_id.as_bytes(), &candidate.to_le_bytes(), &position.to_le_bytes()]);
            format!("call_{hash:016x}")
        }
    };
    match signature.filter(|s| !s.is_empty()) {
        Some(signature) => format!("{id}{SIGNATURE_SEPARATOR}{signature}"),
        None => id,
    }
}
