//! [`chat_from_response`]: an Anthropic answer as an OpenAI chat completion.

use serde_json::{Value, json};

use super::JSON_TOOL_NAME;
use super::blocks::ContentBlock;
use super::wire::{MessagesResponse, Usage};
use crate::chat::{self, ChatCompletion, Choice, PromptTokensDetails, ResponseMessage, ToolCall};

/// The OpenAI `finish_reason` of an Anthropic `stop_reason` (unknown reasons are `stop`, as
/// LiteLLM maps them).
pub fn finish_reason(stop_reason: &str) -> &'static str {
    match stop_reason {
        "max_tokens" | "model_context_window_exceeded" => "length",
        "tool_use" => "tool_calls",
        "refusal" => "content_filter",
        // end_turn, stop_sequence, pause_turn and anything newer.
        _ => "stop",
    }
}

/// The OpenAI usage of an Anthropic one: `prompt_tokens` counts cached tokens too (read and
/// written), `prompt_tokens_details.cached_tokens` the ones read, and both cache counts are kept
/// as LiteLLM's `cache_creation_input_tokens` / `cache_read_input_tokens`.
pub fn chat_usage(usage: &Usage) -> chat::Usage {
    let mut out = chat::Usage::new(usage.prompt_tokens(), usage.output_tokens);
    let read = usage.cache_read_input_tokens.unwrap_or(0);
    out.prompt_tokens_details = Some(PromptTokensDetails::cached(read));
    out.cache_creation_input_tokens = Some(usage.cache_creation_input_tokens.unwrap_or(0));
    out.cache_read_input_tokens = Some(read);
    out
}

/// The content of a `json_tool_call` input, as JSON text: `X` for `{"values": X}` (a wrapper
/// models sometimes add, which LiteLLM unwraps), else the input itself. Only a lone `values`
/// member is a wrapper: an answer with other members next to `values` is kept whole.
pub(crate) fn json_tool_content(input: &Value) -> String {
    let value = match input.as_object() {
        Some(members) if members.len() == 1 => members.get("values").unwrap_or(input),
        _ => input,
    };
    value.to_string()
}

/// Translates an Anthropic answer into an OpenAI chat completion created at `created` (Unix
/// seconds).
///
/// Text blocks are joined into `content`, `tool_use` blocks become `tool_calls` (arguments as
/// JSON text), thinking blocks become `reasoning_content` and `thinking_blocks`. A `tool_use` of
/// the reserved `json_tool_call` (how [`request_from_chat`](super::request_from_chat) asks for
/// `response_format`) becomes the `content`, with `finish_reason` `stop` when it was the only call.
/// Blocks of other kinds (server tools, citations' documents) are kept under
/// `provider_specific_fields.content_blocks`.
pub fn chat_from_response(resp: MessagesResponse, created: u64) -> ChatCompletion {
    let MessagesResponse { id, model, content, stop_reason, usage, .. } = resp;
    let mut text: Option<String> = None;
    let mut reasoning: Option<String> = None;
    let mut thinking_blocks: Vec<Value> = Vec::new();
    let mut tool_calls: Vec<ToolCall> = Vec::new();
    let mut json_content: Option<String> = None;
    let mut others: Vec<Value> = Vec::new();
    for block in content {
        match block {
            ContentBlock::Text(t) => text.get_or_insert_with(String::new).push_str(&t.text),
            ContentBlock::ToolUse(t) if t.name == JSON_TOOL_NAME => {
                if json_content.is_none() {
                    json_content = Some(json_tool_content(&t.input));
                }
            }
            ContentBlock::ToolUse(t) => {
                tool_calls.push(ToolCall::function(t.id, t.name, t.input.to_string()));
            }
            ContentBlock::Thinking(t) => {
                reasoning.get_or_insert_with(String::new).push_str(&t.thinking);
                thinking_blocks.push(json!({"type": "thinking", "thinking": t.thinking, "signature": t.signature}));
            }
            ContentBlock::RedactedThinking(t) => {
                reasoning.get_or_insert_with(String::new);
                thinking_blocks.push(json!({"type": "redacted_thinking", "data": t.data}));
            }
            other => others.push(serde_json::to_value(other).unwrap_or(Value::Null)),
        }
    }
    let mut finish = stop_reason.as_deref().map(finish_reason).map(str::to_owned);
    if let Some(json) = json_content {
        if tool_calls.is_empty() {
            finish = Some("stop".to_owned());
        }
        match &mut text {
            Some(t) => t.push_str(&json),
            None => text = Some(json),
        }
    }
    let mut message = ResponseMessage::assistant(text);
    message.reasoning_content = reasoning;
    message.thinking_blocks = (!thinking_blocks.is_empty()).then_some(thinking_blocks);
    message.tool_calls = (!tool_calls.is_empty()).then_some(tool_calls);
    if !others.is_empty() {
        message.extra.insert("provider_specific_fields".to_owned(), json!({"content_blocks": others}));
    }
    let mut completion = ChatCompletion::new(id, created, model, vec![Choice::new(0, message, finish)]);
    completion.usage = Some(chat_usage(&usage));
    completion
}
