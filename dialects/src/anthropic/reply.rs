//! What the `/v1/messages` front door answers an Anthropic client with, from a hub answer:
//! [`response_from_chat`] for a whole answer, [`error_type_for_status`] and [`error_json`] for a
//! failure.

use serde_json::{Map, Value, json};

use super::blocks::{ContentBlock, RedactedThinkingBlock, TextBlock, ThinkingBlock, ToolUseBlock};
use super::wire::{MessagesResponse, Usage};
use crate::chat::{self, ChatCompletion};

/// The Anthropic `stop_reason` of an OpenAI `finish_reason`: `stop` is `end_turn`, `length`
/// `max_tokens`, `tool_calls` and `function_call` `tool_use`, `content_filter` `refusal`; any
/// other reason is `end_turn` (as LiteLLM maps it).
pub(crate) fn stop_reason(finish_reason: &str) -> &'static str {
    match finish_reason {
        "length" => "max_tokens",
        "tool_calls" | "function_call" => "tool_use",
        "content_filter" => "refusal",
        _ => "end_turn",
    }
}

/// The Anthropic usage of a hub usage: `input_tokens` excludes the prompt tokens read from (and,
/// with LiteLLM's field, written to) the cache, which Anthropic counts apart.
pub(crate) fn anthropic_usage(usage: &chat::Usage) -> Usage {
    let read = usage.cache_read_input_tokens.or_else(|| usage.prompt_tokens_details.as_ref()?.cached_tokens);
    let created = usage.cache_creation_input_tokens;
    let input = usage.prompt_tokens.saturating_sub(read.unwrap_or(0)).saturating_sub(created.unwrap_or(0));
    let mut out = Usage::new(input, usage.completion_tokens);
    out.cache_read_input_tokens = read;
    out.cache_creation_input_tokens = created.filter(|n| *n > 0);
    out
}

/// The input of a tool call: its arguments parsed (empty text is `{}`); text that is not JSON is
/// kept as a JSON string, so nothing the model said is lost and the client's input validation
/// reports it.
fn tool_input(arguments: &str) -> Value {
    let trimmed = arguments.trim();
    if trimmed.is_empty() {
        return json!({});
    }
    serde_json::from_str(trimmed).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

/// The blocks of the hub's signed `thinking_blocks` (as [`chat_from_response`](super::chat_from_response)
/// writes them); `None` when there are none that read as thinking.
fn signed_thinking(blocks: &[Value]) -> Option<Vec<ContentBlock>> {
    let out: Vec<ContentBlock> = blocks
        .iter()
        .filter_map(|b| match crate::tagged::kind(b)? {
            "thinking" => Some(ContentBlock::Thinking(ThinkingBlock {
                thinking: b.get("thinking")?.as_str()?.to_owned(),
                signature: Some(b.get("signature").and_then(Value::as_str).unwrap_or("").to_owned()),
                extra: Map::new(),
            })),
            "redacted_thinking" => Some(ContentBlock::RedactedThinking(RedactedThinkingBlock {
                data: b.get("data")?.as_str()?.to_owned(),
                extra: Map::new(),
            })),
            _ => None,
        })
        .collect();
    (!out.is_empty()).then_some(out)
}

/// Translates a hub answer (from an OpenAI-compatible deployment) into the Anthropic message the
/// `/v1/messages` front door returns.
///
/// The first choice's `reasoning_content` becomes a `thinking` block (with an empty `signature`:
/// no Anthropic signed it; the hub's signed `thinking_blocks` are used instead when present), its
/// text a `text` block, each tool call a `tool_use` block (input parsed from the arguments text;
/// text that is not JSON stays as a JSON string). `finish_reason` maps to `stop_reason`; usage
/// counts the prompt's cached tokens apart, as Anthropic does.
///
/// ```
/// use switchyard_dialects::anthropic::response_from_chat;
/// use switchyard_dialects::chat::ChatCompletion;
///
/// let completion: ChatCompletion = serde_json::from_str(r#"{
///     "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o",
///     "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
///         "content": "Checking.", "tool_calls": [{"id": "call_1", "type": "function",
///         "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}}],
///     "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28,
///         "prompt_tokens_details": {"cached_tokens": 16}}
/// }"#)?;
/// let message = response_from_chat(completion);
/// assert_eq!(serde_json::to_value(&message)?, serde_json::json!({
///     "id": "chatcmpl-1", "type": "message", "role": "assistant", "model": "gpt-4o",
///     "content": [
///         {"type": "text", "text": "Checking."},
///         {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}
///     ],
///     "stop_reason": "tool_use",
///     "usage": {"input_tokens": 4, "output_tokens": 8, "cache_read_input_tokens": 16}
/// }));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn response_from_chat(completion: ChatCompletion) -> MessagesResponse {
    let ChatCompletion { id, model, choices, usage, .. } = completion;
    let choice = choices.into_iter().min_by_key(|c| c.index);
    let mut content = Vec::new();
    let mut finish = None;
    if let Some(choice) = choice {
        let message = choice.message;
        finish = choice.finish_reason;
        match message.thinking_blocks.as_deref().and_then(signed_thinking) {
            Some(blocks) => content.extend(blocks),
            None => {
                if let Some(reasoning) = message.reasoning_content.filter(|r| !r.is_empty()) {
                    content.push(ContentBlock::Thinking(ThinkingBlock {
                        thinking: reasoning,
                        signature: Some(String::new()),
                        extra: Map::new(),
                    }));
                }
            }
        }
        if let Some(text) = message.content.filter(|t| !t.is_empty()) {
            content.push(ContentBlock::Text(TextBlock::new(text)));
        }
        for call in message.tool_calls.into_iter().flatten() {
            let input = tool_input(&call.function.arguments);
            content.push(ContentBlock::ToolUse(ToolUseBlock::new(call.id, call.function.name, input)));
        }
    }
    let usage = usage.as_ref().map(anthropic_usage).unwrap_or_default();
    let mut out = MessagesResponse::new(id, model, content, usage);
    out.stop_reason = finish.as_deref().map(stop_reason).map(str::to_owned);
    out
}

/// The Anthropic `error.type` of an HTTP status, for an error the front door answers with.
///
/// ```
/// use switchyard_dialects::anthropic::error_type_for_status;
///
/// assert_eq!(error_type_for_status(429), "rate_limit_error");
/// assert_eq!(error_type_for_status(503), "overloaded_error");
/// assert_eq!(error_type_for_status(502), "api_error");
/// assert_eq!(error_type_for_status(422), "invalid_request_error");
/// ```
pub fn error_type_for_status(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        500.. => "api_error",
        _ => "invalid_request_error",
    }
}

/// The body of an Anthropic error answer (and the data of an in-stream `error` event):
/// `{"type":"error","error":{"type":kind,"message":message}}`.
///
/// ```
/// use switchyard_dialects::anthropic::error_json;
///
/// assert_eq!(
///     error_json("overloaded_error", "Overloaded \"now\""),
///     r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded \"now\""}}"#,
/// );
/// ```
pub fn error_json(kind: &str, message: &str) -> String {
    // `Value`'s Display writes JSON strings escaped and cannot fail.
    format!(r#"{{"type":"error","error":{{"type":{},"message":{}}}}}"#, Value::from(kind), Value::from(message))
}
