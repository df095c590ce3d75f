//! Counting a request's input tokens: the tokenizer of a provider model, and the text of an
//! OpenAI request body.

use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;
use serde_json::Value;

/// How input tokens are counted for a provider model.
///
/// The BPE tokenizers need the crate's `tiktoken` feature (on in the `switchyard` facade's
/// defaults); without it they count with the estimate.
///
/// Chosen by [`Tokenizer::for_model`] from the model name after its provider prefix
/// (`azure/gpt-4o-eu` reads `gpt-4o-eu`):
///
/// - `o200k_base`: `gpt-4o*`, `chatgpt-4o*`, `gpt-4.1*`, `gpt-4.5*`, `gpt-5` and later, the
///   o-series (`o1`, `o3-mini`, `o4-mini`, ...), `gpt-oss*`, `codex-mini*`;
/// - `cl100k_base`: older OpenAI models: `gpt-4`, `gpt-4-turbo`, `gpt-4-32k`, `gpt-3.5*`,
///   `gpt-35*` (Azure), `text-embedding-ada-002`, `text-embedding-3-*`;
/// - anything else (Claude, Llama, Mistral, a custom Azure deployment name, ...): an estimate
///   of one token per 4 bytes of UTF-8 text, rounded up per piece of text. That is OpenAI's rule
///   of thumb for English; it undercounts dense scripts (CJK) and code, so give such deployments
///   some headroom in `max_input_tokens`.
///
/// ```
/// use switchyard_layers::precall::Tokenizer;
///
/// assert_eq!(Tokenizer::for_model("azure/gpt-4o-2024-08-06"), Tokenizer::O200kBase);
/// assert_eq!(Tokenizer::for_model("openai/gpt-4-turbo"), Tokenizer::Cl100kBase);
/// assert_eq!(Tokenizer::for_model("anthropic/claude-3-5-sonnet"), Tokenizer::Estimate);
/// assert_eq!(Tokenizer::Estimate.count("twelve bytes"), 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Tokenizer {
    /// tiktoken's `o200k_base`.
    O200kBase,
    /// tiktoken's `cl100k_base`.
    Cl100kBase,
    /// One token per 4 bytes.
    Estimate,
}

static O200K_LOADED: AtomicBool = AtomicBool::new(false);
static CL100K_LOADED: AtomicBool = AtomicBool::new(false);

impl Tokenizer {
    /// The tokenizer for a provider model (see the type docs).
    pub fn for_model(model: &str) -> Self {
        let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
        let name = name.as_str();
        if let Some(rest) = name.strip_prefix("gpt-").or_else(|| name.strip_prefix("chatgpt-")) {
            return gpt_family(rest);
        }
        if is_o_series(name) || name.starts_with("codex-mini") {
            return Self::O200kBase;
        }
        if name == "text-embedding-ada-002" || name.starts_with("text-embedding-3-") {
            return Self::Cl100kBase;
        }
        Self::Estimate
    }

    /// Tokens in `text` (no special tokens: `<|endoftext|>` in user text is ordinary text).
    ///
    /// Without the `tiktoken` feature the BPE tokenizers are not compiled in, and every
    /// tokenizer counts with the estimate ([`Tokenizer::is_exact`] tells).
    pub fn count(self, text: &str) -> u64 {
        match self {
            #[cfg(feature = "tiktoken")]
            Self::O200kBase => {
                let n = tiktoken_rs::o200k_base_singleton().count_ordinary(text);
                O200K_LOADED.store(true, Ordering::Relaxed);
                n as u64
            }
            #[cfg(feature = "tiktoken")]
            Self::Cl100kBase => {
                let n = tiktoken_rs::cl100k_base_singleton().count_ordinary(text);
                CL100K_LOADED.store(true, Ordering::Relaxed);
                n as u64
            }
            #[cfg(not(feature = "tiktoken"))]
            Self::O200kBase | Self::Cl100kBase => estimate(text),
            Self::Estimate => estimate(text),
        }
    }

    /// Whether [`count`](Self::count) is this tokenizer's exact count: always for a BPE
    /// tokenizer with the `tiktoken` feature, never for [`Tokenizer::Estimate`].
    pub fn is_exact(self) -> bool {
        self != Self::Estimate && cfg!(feature = "tiktoken")
    }

    /// Whether counting can start at once: the estimate always, a BPE tokenizer once its
    /// vocabulary is loaded (the first load takes tens of milliseconds, which must not happen on
    /// the async executor).
    pub(crate) fn is_loaded(self) -> bool {
        match self {
            _ if !self.is_exact() => true,
            Self::O200kBase => O200K_LOADED.load(Ordering::Relaxed),
            Self::Cl100kBase => CL100K_LOADED.load(Ordering::Relaxed),
            Self::Estimate => true,
        }
    }

    /// A short name for logs and docs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
            Self::Estimate => "estimate",
        }
    }
}

/// `gpt-<rest>`: `4o`, `4.1` and later, `5` and later are o200k; `4`, `3.5`, `35` are cl100k.
fn gpt_family(rest: &str) -> Tokenizer {
    if rest.starts_with("4o") || rest.starts_with("oss") {
        return Tokenizer::O200kBase;
    }
    let version: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let mut parts = version.split('.');
    let major: u32 = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    match (major, minor) {
        (4, m) if m >= 1 => Tokenizer::O200kBase,
        (3 | 4 | 35, _) => Tokenizer::Cl100kBase,
        (m, _) if (5..35).contains(&m) => Tokenizer::O200kBase,
        _ => Tokenizer::Estimate,
    }
}

/// `o1`, `o1-mini`, `o3`, `o4-mini`, ...: an `o`, digits, then the end or a `-`.
fn is_o_series(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('o') else { return false };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && matches!(rest.as_bytes().get(digits), None | Some(b'-'))
}

/// One token per 4 bytes of UTF-8, rounded up.
fn estimate(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// Tokens OpenAI adds per chat message (role and separators), and per `name`.
const PER_MESSAGE: u64 = 4;
const PER_NAME: u64 = 1;
/// Tokens that prime the assistant's reply.
const REPLY_PRIMING: u64 = 3;

/// The parts of a request body that hold input text.
#[derive(Deserialize)]
struct Body {
    #[serde(default)]
    messages: Option<Vec<Message>>,
    /// `/v1/completions`.
    #[serde(default)]
    prompt: Option<Value>,
    /// `/v1/embeddings`, and the Responses API's input (a string or items).
    #[serde(default)]
    input: Option<Value>,
    /// Anthropic's system prompt (a string or text blocks).
    #[serde(default)]
    system: Option<Value>,
    /// The Responses API's system prompt.
    #[serde(default)]
    instructions: Option<Value>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    name: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Value>,
}

/// Input tokens of a request body: chat `messages` (string contents, `text` parts, names and
/// tool-call arguments, plus OpenAI's per-message overhead), a completion `prompt` or an
/// embedding `input` (strings, or arrays of token ids counted as they are); an Anthropic
/// Messages body (its `system` too, and the text of tool results) and a Responses API body
/// (`instructions`, and `input` items: message contents, function-call arguments and outputs)
/// the same way. `None` when the body is not such a JSON object or holds no input.
///
/// Images, audio and tool schemas are not counted.
///
/// ```
/// use switchyard_layers::precall::{Tokenizer, count_input_tokens};
///
/// let body = br#"{"model":"gpt-4o","messages":[{"role":"user","content":"hello world"}]}"#;
/// // 2 tokens of text + 4 per message + 3 to prime the reply.
/// assert_eq!(count_input_tokens(body, Tokenizer::O200kBase), Some(9));
/// assert_eq!(count_input_tokens(b"not json", Tokenizer::O200kBase), None);
/// ```
pub fn count_input_tokens(body: &[u8], tokenizer: Tokenizer) -> Option<u64> {
    let body: Body = serde_json::from_slice(body).ok()?;
    let system =
        [&body.system, &body.instructions].into_iter().flatten().map(|s| count_content(s, tokenizer)).sum::<u64>();
    if let Some(Value::Array(items)) = &body.input
        && items.iter().any(Value::is_object)
    {
        // Responses API items.
        let mut total = REPLY_PRIMING + system;
        for item in items {
            total += PER_MESSAGE;
            for key in ["content", "arguments", "output", "name"] {
                if let Some(v) = item.get(key) {
                    total += count_content(v, tokenizer);
                }
            }
        }
        return Some(total);
    }
    if let Some(messages) = body.messages {
        let mut total = REPLY_PRIMING + system;
        for m in &messages {
            total += PER_MESSAGE;
            if let Some(content) = &m.content {
                total += count_content(content, tokenizer);
            }
            if let Some(Value::String(name)) = &m.name {
                total += PER_NAME + tokenizer.count(name);
            }
            if let Some(Value::Array(calls)) = &m.tool_calls {
                for call in calls {
                    for key in ["name", "arguments"] {
                        if let Some(Value::String(s)) = call.get("function").and_then(|f| f.get(key)) {
                            total += tokenizer.count(s);
                        }
                    }
                }
            }
        }
        return Some(total);
    }
    let input = body.prompt.or(body.input)?;
    Some(count_prompt(&input, tokenizer))
}

/// A message `content`: a string, or parts of which the `text` ones count (and the `content` of
/// an Anthropic tool result, one level down).
fn count_content(content: &Value, tokenizer: Tokenizer) -> u64 {
    match content {
        Value::String(s) => tokenizer.count(s),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match (p.get("text"), p.get("content")) {
                (Some(Value::String(s)), _) => tokenizer.count(s),
                (_, Some(Value::String(s))) => tokenizer.count(s),
                (_, Some(Value::Array(inner))) => inner
                    .iter()
                    .map(|i| match i.get("text") {
                        Some(Value::String(s)) => tokenizer.count(s),
                        _ => 0,
                    })
                    .sum(),
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

/// A `prompt` or `input`: a string, token ids, or a list of either.
fn count_prompt(input: &Value, tokenizer: Tokenizer) -> u64 {
    match input {
        Value::String(s) => tokenizer.count(s),
        Value::Number(_) => 1,
        Value::Array(items) => items.iter().map(|i| count_prompt(i, tokenizer)).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_families_pick_their_tokenizer() {
        for m in ["gpt-4o", "openai/gpt-4o-mini", "gpt-4.1-nano", "gpt-5", "o1", "o3-mini", "o4-mini", "gpt-oss-20b"] {
            assert_eq!(Tokenizer::for_model(m), Tokenizer::O200kBase, "{m}");
        }
        for m in ["gpt-4", "gpt-4-turbo", "azure/gpt-35-turbo", "gpt-3.5-turbo-0125", "text-embedding-3-small"] {
            assert_eq!(Tokenizer::for_model(m), Tokenizer::Cl100kBase, "{m}");
        }
        for m in ["claude-3-5-sonnet", "meta-llama/Llama-3-70b", "mistral-large", "omni", "o", "my-deployment"] {
            assert_eq!(Tokenizer::for_model(m), Tokenizer::Estimate, "{m}");
        }
    }

    #[test]
    fn chat_counts_text_parts_names_and_tool_arguments() {
        let body = br#"{"messages":[
            {"role":"system","content":"be brief"},
            {"role":"user","name":"ann","content":[{"type":"text","text":"four bytes"},{"type":"image_url","image_url":{"url":"x"}}]},
            {"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}
        ]}"#;
        // Estimate: "be brief" 2, "four bytes" 3, "ann" 1 + 1, "f" 1, "{}" 1; 3 messages x 4; 3.
        assert_eq!(count_input_tokens(body, Tokenizer::Estimate), Some(2 + 3 + 2 + 1 + 1 + 12 + 3));
    }

    #[test]
    fn anthropic_and_responses_bodies_count_their_system_prompt_and_items() {
        // "four bytes" 3 + "abcd" 1; 1 message x 4; 3.
        let anthropic = br#"{"system":"four bytes","messages":[{"role":"user","content":"abcd"}]}"#;
        assert_eq!(count_input_tokens(anthropic, Tokenizer::Estimate), Some(3 + 1 + 4 + 3));
        let blocks = br#"{"system":[{"type":"text","text":"four bytes"}],"messages":[{"role":"user",
            "content":[{"type":"tool_result","tool_use_id":"t","content":"abcd"}]}]}"#;
        assert_eq!(count_input_tokens(blocks, Tokenizer::Estimate), Some(3 + 1 + 4 + 3));
        // instructions 3; items: "abcd" 1, call "f" 1 + "{}" 1, output "abcdefgh" 2; 3 items x 4; 3.
        let responses = br#"{"instructions":"four bytes","input":[
            {"role":"user","content":"abcd"},
            {"type":"function_call","call_id":"c","name":"f","arguments":"{}"},
            {"type":"function_call_output","call_id":"c","output":"abcdefgh"}]}"#;
        assert_eq!(count_input_tokens(responses, Tokenizer::Estimate), Some(3 + 1 + 2 + 2 + 12 + 3));
        assert_eq!(count_input_tokens(br#"{"input":"abcd"}"#, Tokenizer::Estimate), Some(1));
    }

    #[test]
    fn completions_and_embeddings_count_their_input() {
        assert_eq!(count_input_tokens(br#"{"prompt":["abcd","abcdefgh"]}"#, Tokenizer::Estimate), Some(3));
        assert_eq!(count_input_tokens(br#"{"input":[[1,2,3]]}"#, Tokenizer::Estimate), Some(3));
        assert_eq!(count_input_tokens(br#"{"model":"x"}"#, Tokenizer::Estimate), None);
    }
}
