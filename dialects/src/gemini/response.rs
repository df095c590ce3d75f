//! [`chat_from_response`]: a Gemini answer as an OpenAI chat completion, with its finish reasons,
//! usage and log probabilities.

use serde_json::{Value, json};

use super::ids::{call_id, completion_id};
use super::wire::{Candidate, GenerateContentResponse, Part, UsageMetadata};
use crate::chat::{self, ChatCompletion, Choice, PromptTokensDetails, ResponseMessage, ToolCall};

/// The OpenAI `finish_reason` of a Gemini `finishReason`, as LiteLLM 1.100 maps them: the
/// safety, recitation, blocklist, prohibited-content, personal-data, image-safety, language and
/// `OTHER` stops are `content_filter`; `MAX_TOKENS` is `length`; `STOP`, malformed or unexpected
/// function calls and anything newer are `stop`. (A candidate that calls functions ends with
/// `tool_calls` whatever its reason: [`chat_from_response`] decides that.)
///
/// ```
/// use switchyard_dialects::gemini::finish_reason;
///
/// assert_eq!(finish_reason("MAX_TOKENS"), "length");
/// assert_eq!(finish_reason("RECITATION"), "content_filter");
/// ```
pub fn finish_reason(reason: &str) -> &'static str {
    match reason {
        "MAX_TOKENS" => "length",
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION"
        | "LANGUAGE"
        | "OTHER" => "content_filter",
        // STOP, FINISH_REASON_UNSPECIFIED, MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL,
        // TOO_MANY_TOOL_CALLS, and reasons newer than this crate.
        _ => "stop",
    }
}

/// The OpenAI usage of Gemini's `usageMetadata`: `prompt_tokens` is `promptTokenCount` (cached
/// tokens included) plus `toolUsePromptTokenCount`; `completion_tokens` is
/// `candidatesTokenCount` plus `thoughtsTokenCount` (OpenAI counts reasoning as completion;
/// when Gemini's total shows the candidates already include the thoughts, they are not added
/// twice), with the thoughts as `completion_tokens_details.reasoning_tokens`;
/// `cachedContentTokenCount` is `prompt_tokens_details.cached_tokens` and LiteLLM's
/// `cache_read_input_tokens`.
///
/// ```
/// use switchyard_dialects::gemini::{UsageMetadata, chat_usage};
///
/// let usage: UsageMetadata = serde_json::from_str(r#"{"promptTokenCount": 10,
///     "candidatesTokenCount": 5, "thoughtsTokenCount": 7, "totalTokenCount": 22}"#)?;
/// let chat = chat_usage(&usage);
/// assert_eq!((chat.prompt_tokens, chat.completion_tokens, chat.total_tokens), (10, 12, 22));
/// assert_eq!(chat.extra["completion_tokens_details"]["reasoning_tokens"], 7);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn chat_usage(usage: &UsageMetadata) -> chat::Usage {
    let prompt = usage.prompt_token_count.unwrap_or(0).saturating_add(usage.tool_use_prompt_token_count.unwrap_or(0));
    let candidates = usage.candidates_token_count.unwrap_or(0);
    let thoughts = usage.thoughts_token_count.unwrap_or(0);
    let inclusive = usage.total_token_count.is_some_and(|total| total == prompt.saturating_add(candidates));
    let completion = if inclusive { candidates } else { candidates.saturating_add(thoughts) };
    let mut out = chat::Usage::new(prompt, completion);
    if let Some(cached) = usage.cached_content_token_count {
        out.prompt_tokens_details = Some(PromptTokensDetails::cached(cached));
        out.cache_read_input_tokens = Some(cached);
    }
    if let Some(thoughts) = usage.thoughts_token_count {
        out.extra.insert("completion_tokens_details".to_owned(), json!({"reasoning_tokens": thoughts}));
    }
    out
}

/// Why Gemini refused the prompt itself, when it did: `promptFeedback.blockReason` (and Vertex
/// AI's `blockReasonMessage`) on an answer without candidates. The provider checks this first and
/// answers a content-policy error; [`chat_from_response`] would give an empty choice with
/// `finish_reason: content_filter`, as LiteLLM does.
///
/// ```
/// use switchyard_dialects::gemini::{GenerateContentResponse, blocked};
///
/// let answer: GenerateContentResponse =
///     serde_json::from_str(r#"{"promptFeedback": {"blockReason": "SAFETY"}}"#)?;
/// assert_eq!(blocked(&answer).as_deref(), Some("Gemini blocked the prompt: SAFETY"));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn blocked(resp: &GenerateContentResponse) -> Option<String> {
    if !resp.candidates.is_empty() {
        return None;
    }
    let feedback = resp.prompt_feedback.as_ref()?;
    let reason = feedback.block_reason.as_deref()?;
    Some(match feedback.block_reason_message.as_deref().filter(|m| !m.is_empty()) {
        Some(message) => format!("Gemini blocked the prompt: {reason}: {message}"),
        None => format!("Gemini blocked the prompt: {reason}"),
    })
}

/// What the parts of one candidate (or one chunk of it) say, in the hub's terms.
#[derive(Debug, Default)]
pub(crate) struct Said {
    pub(crate) text: Option<String>,
    pub(crate) reasoning: Option<String>,
    /// Name, arguments (JSON text), Gemini's id, thought signature.
    pub(crate) calls: Vec<(String, String, Option<String>, Option<String>)>,
    /// Parts of kinds the hub has no place for (images, code execution), as given.
    pub(crate) others: Vec<Value>,
}

/// Sorts `parts` into text, reasoning, function calls and the rest.
pub(crate) fn read_parts(parts: Vec<Part>) -> Said {
    let mut said = Said::default();
    for mut part in parts {
        if let Some(call) = part.function_call.take() {
            let arguments = call.args.unwrap_or_else(|| json!({})).to_string();
            said.calls.push((call.name, arguments, call.id, part.thought_signature));
        } else if let Some(text) = part.text.take() {
            let slot = if part.is_thought() { &mut said.reasoning } else { &mut said.text };
            slot.get_or_insert_with(String::new).push_str(&text);
        } else if part == (Part { thought_signature: part.thought_signature.clone(), ..Part::default() }) {
            // Nothing but a signature (Gemini 3 ends some answers so): nothing to show.
        } else {
            said.others.push(serde_json::to_value(&part).unwrap_or(Value::Null));
        }
    }
    said
}

/// OpenAI's `logprobs` of Gemini's `logprobsResult` (`chosenCandidates`, `topCandidates`).
pub(crate) fn chat_logprobs(result: &Value) -> Option<Value> {
    let chosen = result.get("chosenCandidates")?.as_array()?;
    let tops = result.get("topCandidates").and_then(Value::as_array);
    let token = |c: &Value| {
        json!({
            "token": c.get("token").and_then(Value::as_str).unwrap_or_default(),
            "logprob": c.get("logProbability").cloned().unwrap_or(Value::from(0)),
            "bytes": Value::Null,
        })
    };
    let content: Vec<Value> = chosen
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut entry = token(c);
            let top: Vec<Value> = tops
                .and_then(|t| t.get(i))
                .and_then(|t| t.get("candidates"))
                .and_then(Value::as_array)
                .map(|cs| cs.iter().map(token).collect())
                .unwrap_or_default();
            entry["top_logprobs"] = Value::Array(top);
            entry
        })
        .collect();
    Some(json!({"content": content}))
}

/// Translates a Gemini answer into an OpenAI chat completion from `model` (the name the client
/// should see) created at `created` (Unix seconds).
///
/// One choice per candidate (`index` kept): non-thought text parts joined into `content`,
/// `thought` parts into `reasoning_content`, `functionCall` parts into `tool_calls` (arguments as
/// JSON text; ids Gemini's own or derived from the answer's id, with the part's thought signature
/// appended after `__thought__`, as LiteLLM does, so the client sends it back). Parts the hub has
/// no place for (images, code execution) are kept under `provider_specific_fields.parts`. A
/// candidate that called functions ends with `tool_calls`. An answer without candidates gives one
/// empty choice, `content_filter` when the prompt was [`blocked`].
///
/// ```
/// use switchyard_dialects::gemini::{GenerateContentResponse, chat_from_response};
///
/// let answer: GenerateContentResponse = serde_json::from_str(r#"{
///     "candidates": [{"content": {"role": "model", "parts": [{"text": "Hi."}]},
///                     "finishReason": "STOP", "index": 0}],
///     "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 2, "totalTokenCount": 6},
///     "responseId": "abc"}"#)?;
/// let chat = chat_from_response(answer, "gemini-2.5-flash", 1_700_000_000);
/// assert_eq!(chat.id, "chatcmpl-abc");
/// assert_eq!(chat.choices[0].message.content.as_deref(), Some("Hi."));
/// assert_eq!(chat.choices[0].finish_reason.as_deref(), Some("stop"));
/// assert_eq!(chat.usage.map(|u| u.total_tokens), Some(6));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn chat_from_response(resp: GenerateContentResponse, model: &str, created: u64) -> ChatCompletion {
    let id = completion_id(resp.response_id.as_deref(), created);
    let prompt_blocked = blocked(&resp).is_some();
    let GenerateContentResponse { candidates, usage_metadata, .. } = resp;
    let mut choices: Vec<Choice> =
        candidates.into_iter().enumerate().map(|(k, candidate)| choice(&id, k, candidate)).collect();
    if choices.is_empty() {
        let finish = if prompt_blocked { "content_filter" } else { "stop" };
        choices.push(Choice::new(0, ResponseMessage::assistant(None), Some(finish.to_owned())));
    }
    let mut completion = ChatCompletion::new(id, created, model, choices);
    completion.usage = Some(chat_usage(&usage_metadata.unwrap_or_default()));
    completion
}

fn choice(id: &str, position: usize, candidate: Candidate) -> Choice {
    let index = candidate.index.unwrap_or(u32::try_from(position).unwrap_or(u32::MAX));
    let said = read_parts(candidate.content.map(|c| c.parts).unwrap_or_default());
    let tool_calls: Vec<ToolCall> = said
        .calls
        .into_iter()
        .zip(0u32..)
        .map(|((name, arguments, native, signature), k)| {
            ToolCall::function(call_id(native.as_deref(), id, index, k, signature.as_deref()), name, arguments)
        })
        .collect();
    let finish =
        if tool_calls.is_empty() { candidate.finish_reason.as_deref().map(finish_reason) } else { Some("tool_calls") };
    let mut message = ResponseMessage::assistant(said.text);
    message.reasoning_content = said.reasoning;
    message.tool_calls = (!tool_calls.is_empty()).then_some(tool_calls);
    if !said.others.is_empty() {
        message.extra.insert("provider_specific_fields".to_owned(), json!({"parts": said.others}));
    }
    let mut choice = Choice::new(index, message, finish.map(str::to_owned));
    if let Some(logprobs) = candidate.logprobs_result.as_ref().and_then(chat_logprobs) {
        choice.extra.insert("logprobs".to_owned(), logprobs);
    }
    choice
}
