//! [`chat_from_response`]: a Converse answer as an OpenAI chat completion.

use serde_json::{Value, json};

use super::JSON_TOOL_NAME;
use super::blocks::{ContentBlock, ReasoningContent};
use super::wire::{ConverseResponse, TokenUsage};
use crate::chat::{self, ChatCompletion, Choice, PromptTokensDetails, ResponseMessage, ToolCall};

/// The OpenAI `finish_reason` of a Converse `stopReason`; unknown reasons are `stop`, as LiteLLM
/// maps them.
///
/// ```
/// use switchyard_dialects::bedrock::finish_reason;
///
/// assert_eq!(finish_reason("tool_use"), "tool_calls");
/// assert_eq!(finish_reason("guardrail_intervened"), "content_filter");
/// ```
pub fn finish_reason(stop_reason: &str) -> &'static str {
    match stop_reason {
        "max_tokens" | "model_context_window_exceeded" => "length",
        "tool_use" => "tool_calls",
        "guardrail_intervened" | "content_filtered" => "content_filter",
        // end_turn, stop_sequence, malformed_model_output, malformed_tool_use and anything newer.
        _ => "stop",
    }
}

/// The OpenAI usage of a Converse one: `prompt_tokens` counts cached tokens too (read and
/// written), `prompt_tokens_details.cached_tokens` the ones read, and both cache counts are kept
/// as LiteLLM's `cache_read_input_tokens` / `cache_creation_input_tokens`.
pub fn chat_usage(usage: &TokenUsage) -> chat::Usage {
    let mut out = chat::Usage::new(usage.prompt_tokens(), usage.output_tokens);
    let read = usage.cache_read_input_tokens.unwrap_or(0);
    out.prompt_tokens_details = Some(PromptTokensDetails::cached(read));
    out.cache_creation_input_tokens = Some(usage.cache_write_input_tokens.unwrap_or(0));
    out.cache_read_input_tokens = Some(read);
    out
}

/// The id of a translated answer: Converse answers carry none (the provider may set the
/// `x-amzn-requestid` header's instead).
pub(crate) fn answer_id(created: u64) -> String {
    format!("chatcmpl-bedrock-{created}")
}

/// Translates a Converse answer into an OpenAI chat completion from `model` (the name to report,
/// usually the model id) created at `created` (Unix seconds).
///
/// Text blocks are joined into `content`, `toolUse` blocks become `tool_calls` (arguments as JSON
/// text), `reasoningContent` becomes `reasoning_content` and `thinking_blocks`. A `toolUse` of
/// the reserved `json_tool_call` (how [`request_from_chat`](super::request_from_chat) asks for
/// `response_format`) becomes the `content`, with `finish_reason` `stop` when it was the only
/// call. Other blocks are kept under `provider_specific_fields.content_blocks`. The id is
/// `chatcmpl-bedrock-<created>`.
///
/// ```
/// use switchyard_dialects::bedrock::{ConverseResponse, chat_from_response};
///
/// let answer: ConverseResponse = serde_json::from_str(r#"{
///     "output": {"message": {"role": "assistant", "content": [{"text": "Hello!"}]}},
///     "stopReason": "end_turn",
///     "usage": {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15},
///     "metrics": {"latencyMs": 420}}"#)?;
/// let chat = chat_from_response(answer, "anthropic.claude-3-haiku-20240307-v1:0", 1_700_000_000);
/// assert_eq!(chat.choices[0].message.content.as_deref(), Some("Hello!"));
/// assert_eq!(chat.choices[0].finish_reason.as_deref(), Some("stop"));
/// assert_eq!(chat.usage.map(|u| u.total_tokens), Some(15));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn chat_from_response(resp: ConverseResponse, model: &str, created: u64) -> ChatCompletion {
    let ConverseResponse { output, stop_reason, usage, .. } = resp;
    let mut text: Option<String> = None;
    let mut reasoning: Option<String> = None;
    let mut thinking_blocks: Vec<Value> = Vec::new();
    let mut tool_calls: Vec<ToolCall> = Vec::new();
    let mut json_content: Option<String> = None;
    let mut others: Vec<Value> = Vec::new();
    for block in output.message.map(|m| m.content).unwrap_or_default() {
        match block {
            ContentBlock::Text(t) => text.get_or_insert_with(String::new).push_str(&t),
            ContentBlock::ToolUse(t) if t.name == JSON_TOOL_NAME => {
                json_content.get_or_insert_with(|| t.input.to_string());
            }
            ContentBlock::ToolUse(t) => tool_calls.push(ToolCall::function(t.tool_use_id, t.name, t.input.to_string())),
            ContentBlock::ReasoningContent(ReasoningContent::Text(t)) => {
                reasoning.get_or_insert_with(String::new).push_str(&t.text);
                thinking_blocks.push(json!({"type": "thinking", "thinking": t.text, "signature": t.signature}));
            }
            ContentBlock::ReasoningContent(ReasoningContent::Redacted(data)) => {
                reasoning.get_or_insert_with(String::new);
                thinking_blocks.push(json!({"type": "redacted_thinking", "data": data}));
            }
            other => others.push(serde_json::to_value(other).unwrap_or(Value::Null)),
        }
    }
    let mut finish = stop_reason.as_deref().map(finish_reason).map(str::to_owned);
    if let Some(json) = json_content {
        if tool_calls.is_empty() {
            finish = Some("stop".to_owned());
        }
        text.get_or_insert_with(String::new).push_str(&json);
    }
    let mut message = ResponseMessage::assistant(text);
    message.reasoning_content = reasoning;
    message.thinking_blocks = (!thinking_blocks.is_empty()).then_some(thinking_blocks);
    message.tool_calls = (!tool_calls.is_empty()).then_some(tool_calls);
    if !others.is_empty() {
        message.extra.insert("provider_specific_fields".to_owned(), json!({"content_blocks": others}));
    }
    let mut completion = ChatCompletion::new(answer_id(created), created, model, vec![Choice::new(0, message, finish)]);
    completion.usage = Some(chat_usage(&usage));
    completion
}
