//! [`chat_from_response`]: a Cohere v2 answer as an OpenAI chat completion.

use serde_json::{Value, json};

use super::content::ContentItem;
use super::wire::{ChatV2Response, Usage};
use crate::ErrorClass;
use crate::chat::{self, ChatCompletion, Choice, PromptTokensDetails, ResponseMessage, ToolCall};

/// The OpenAI `finish_reason` of a Cohere one (case-insensitive): `COMPLETE` and `STOP_SEQUENCE`
/// are `stop`, `MAX_TOKENS` `length`, `TOOL_CALL` `tool_calls`; `ERROR`, `TIMEOUT` and unknown
/// reasons are `stop`, as LiteLLM's `map_finish_reason` (a failed answer is caught first by
/// [`finish_error`]).
pub fn finish_reason(reason: &str) -> &'static str {
    match reason.to_ascii_uppercase().as_str() {
        "MAX_TOKENS" => "length",
        "TOOL_CALL" => "tool_calls",
        "ERROR_TOXIC" => "content_filter",
        _ => "stop",
    }
}

/// The class of a finish reason that means the generation failed: `ERROR` is a
/// [`ServerError`](ErrorClass::ServerError), `TIMEOUT` a [`Timeout`](ErrorClass::Timeout);
/// `None` for the others.
pub fn finish_error(reason: &str) -> Option<ErrorClass> {
    match reason.to_ascii_uppercase().as_str() {
        "ERROR" => Some(ErrorClass::ServerError),
        "TIMEOUT" => Some(ErrorClass::Timeout),
        _ => None,
    }
}

/// The class and message of a whole answer that finished with `ERROR` or `TIMEOUT`: Cohere
/// answers 200 with no usable content then, and the provider should treat it as that failure
/// rather than send [`chat_from_response`]'s translation.
///
/// ```
/// use switchyard_dialects::ErrorClass;
/// use switchyard_dialects::cohere::{ChatV2Response, response_error};
///
/// let resp: ChatV2Response = serde_json::from_str(r#"{"id": "1", "finish_reason": "TIMEOUT", "message": {}}"#)?;
/// assert_eq!(response_error(&resp).map(|(class, _)| class), Some(ErrorClass::Timeout));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn response_error(resp: &ChatV2Response) -> Option<(ErrorClass, String)> {
    let reason = resp.finish_reason.as_deref()?;
    let class = finish_error(reason)?;
    let message = resp
        .extra
        .get("error")
        .and_then(Value::as_str)
        .map_or_else(|| format!("Cohere finished the generation with {reason}"), str::to_owned);
    Some((class, message))
}

/// The OpenAI usage of a Cohere one: `tokens.input_tokens` / `tokens.output_tokens` (what the
/// model read and wrote, as LiteLLM counts), else the billed units; `cached_tokens` as
/// `prompt_tokens_details.cached_tokens`.
pub fn chat_usage(usage: &Usage) -> chat::Usage {
    let mut out = chat::Usage::new(usage.input_tokens(), usage.output_tokens());
    if let Some(cached) = usage.cached_tokens.as_ref().and_then(super::wire::count) {
        out.prompt_tokens_details = Some(PromptTokensDetails::cached(cached));
    }
    out
}

/// Translates a Cohere v2 answer into an OpenAI chat completion created at `created` (Unix
/// seconds).
///
/// Text items are joined into `content` (`null` without text), thinking items and then the
/// `tool_plan` into `reasoning_content`, tool calls cross as they are (arguments `{}` when
/// absent); citations are kept under `message.provider_specific_fields.citations`. Cohere's answer
/// names no model: `model` is the answer's own `model` field when it has one (Cohere-compatible
/// servers add it), else empty for the provider to set.
///
/// ```
/// use switchyard_dialects::cohere::{ChatV2Response, chat_from_response};
///
/// let resp: ChatV2Response = serde_json::from_str(r#"{
///     "id": "c14c80c3", "finish_reason": "COMPLETE",
///     "message": {"role": "assistant", "content": [{"type": "text", "text": "Hi."}]},
///     "usage": {"billed_units": {"input_tokens": 5, "output_tokens": 2},
///               "tokens": {"input_tokens": 71, "output_tokens": 2}}}"#)?;
/// let chat = chat_from_response(resp, 1_700_000_000);
/// assert_eq!(chat.choices[0].message.content.as_deref(), Some("Hi."));
/// assert_eq!(chat.choices[0].finish_reason.as_deref(), Some("stop"));
/// assert_eq!(chat.usage.map(|u| (u.prompt_tokens, u.completion_tokens)), Some((71, 2)));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn chat_from_response(resp: ChatV2Response, created: u64) -> ChatCompletion {
    let ChatV2Response { id, finish_reason: reason, message, usage, extra } = resp;
    let mut text: Option<String> = None;
    let mut reasoning: Option<String> = None;
    for item in message.content.into_iter().flatten() {
        match item {
            ContentItem::Text { text: t } => text.get_or_insert_with(String::new).push_str(&t),
            ContentItem::Thinking { thinking } => reasoning.get_or_insert_with(String::new).push_str(&thinking),
            // Images never come back; unknown kinds are newer than this crate.
            ContentItem::ImageUrl { .. } | ContentItem::Other(_) => {}
        }
    }
    if let Some(plan) = message.tool_plan.filter(|p| !p.is_empty()) {
        reasoning.get_or_insert_with(String::new).push_str(&plan);
    }
    let tool_calls: Vec<ToolCall> = message
        .tool_calls
        .into_iter()
        .flatten()
        .map(|call| {
            let function = call.function.unwrap_or_default();
            let arguments = function.arguments.filter(|a| !a.trim().is_empty()).unwrap_or_else(|| "{}".to_owned());
            ToolCall::function(call.id, function.name.unwrap_or_default(), arguments)
        })
        .collect();
    let mut out = ResponseMessage::assistant(text);
    out.reasoning_content = reasoning;
    out.tool_calls = (!tool_calls.is_empty()).then_some(tool_calls);
    if let Some(citations) = message.citations.filter(|c| !c.is_empty()) {
        out.extra.insert("provider_specific_fields".to_owned(), json!({ "citations": citations }));
    }
    let finish = reason.as_deref().map(finish_reason).map(str::to_owned);
    let model = extra.get("model").and_then(Value::as_str).unwrap_or_default();
    let mut completion = ChatCompletion::new(id, created, model, vec![Choice::new(0, out, finish)]);
    completion.usage = Some(chat_usage(&usage.unwrap_or_default()));
    completion
}
