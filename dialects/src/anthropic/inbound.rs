//! [`chat_from_request`]: an Anthropic Messages request, as a client sent it to the gateway's
//! `/v1/messages` front door, as an OpenAI chat request for an OpenAI-compatible deployment.

use serde_json::{Map, Value};

use super::blocks::{ContentBlock, ImageBlock, ImageSource, MessageContent, Role, ToolResultBlock};
use super::wire::{MessagesRequest, System, Thinking, Tool, ToolChoice};
use crate::TranslateError;
use crate::chat::{
    self, ChatRequest, Content, ContentPart, JsonSchema, NamedToolChoice, ResponseFormat, Stop, StreamOptions,
    TextPart, ToolCall,
};

/// Top-level Anthropic fields an OpenAI-compatible deployment has no use for, and why they are
/// dropped rather than refused.
const DROPPED: [(&str, &str); 4] = [
    ("service_tier", "Anthropic's tiers (auto, standard_only) are not OpenAI's; the deployment's default applies"),
    ("context_management", "server-side context editing is Anthropic's; the whole conversation is sent"),
    ("anthropic_version", "a version of Anthropic's API (the Vertex and Bedrock body form of the header)"),
    ("anthropic_beta", "beta flags of Anthropic's API (the Vertex and Bedrock body form of the header)"),
];

/// Top-level Anthropic fields that ask for something only Anthropic runs: refused.
const REFUSED: [(&str, &str); 2] = [
    ("container", "code-execution containers run on Anthropic only"),
    ("mcp_servers", "the MCP connector runs on Anthropic only: call the tools as client tools"),
];

/// Translates an Anthropic Messages request into an OpenAI chat request (the hub), for an
/// OpenAI-compatible deployment behind the `/v1/messages` front door.
///
/// `system` becomes one system message first; each user turn becomes its `tool_result` blocks as
/// `tool` messages (first, in order: OpenAI wants them right after the assistant's `tool_calls`)
/// followed by one user message of its text and image parts; each assistant turn becomes one
/// assistant message (text joined, `tool_use` blocks as `tool_calls`). Thinking blocks in the
/// history and `cache_control` are dropped: OpenAI-compatible upstreams take neither. Anthropic
/// server tools, `container`, `mcp_servers` and block kinds without a chat equivalent
/// (`document`, `server_tool_use`, ...) are refused naming the field. `thinking` becomes
/// `reasoning_effort` with LiteLLM 1.100's buckets, `top_k` and every field this crate does not
/// know pass through under their own name (as LiteLLM), and a streamed request asks for the
/// usage chunk (`stream_options.include_usage`), which Anthropic's `message_delta` reports.
/// `docs/dialects/anthropic.md` lists every field.
///
/// ```
/// use switchyard_dialects::anthropic::{MessagesRequest, chat_from_request};
///
/// let req: MessagesRequest = serde_json::from_str(r#"{
///     "model": "gpt-4o", "max_tokens": 256, "system": "Be terse.",
///     "stop_sequences": ["END"], "metadata": {"user_id": "u-1"},
///     "messages": [{"role": "user", "content": "What is 2+2?"}]
/// }"#)?;
/// let chat = chat_from_request(req)?;
/// assert_eq!(serde_json::to_value(&chat)?, serde_json::json!({
///     "model": "gpt-4o",
///     "messages": [
///         {"role": "system", "content": "Be terse."},
///         {"role": "user", "content": "What is 2+2?"}
///     ],
///     "max_tokens": 256,
///     "stop": ["END"],
///     "user": "u-1"
/// }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn chat_from_request(req: MessagesRequest) -> Result<ChatRequest, TranslateError> {
    let MessagesRequest {
        model,
        messages,
        max_tokens,
        system,
        stop_sequences,
        temperature,
        top_p,
        top_k,
        stream,
        metadata,
        tools,
        tool_choice,
        thinking,
        extra,
    } = req;

    let mut out_messages = Vec::with_capacity(messages.len() + 1);
    if let Some(system) = system.map(system_text).transpose()?.flatten() {
        out_messages.push(chat::Message::system(system));
    }
    for (i, message) in messages.into_iter().enumerate() {
        match message.role {
            Role::User => user_messages(i, message.content, &mut out_messages)?,
            Role::Assistant => out_messages.extend(assistant_message(i, message.content)?),
        }
    }

    let mut out = ChatRequest::new(model, out_messages);
    out.max_tokens = Some(max_tokens);
    out.stop = stop_sequences.filter(|s| !s.is_empty()).map(Stop::Many);
    out.temperature = temperature;
    out.top_p = top_p;
    out.stream = stream;
    if stream == Some(true) {
        out.stream_options = Some(StreamOptions { include_usage: Some(true), extra: Map::new() });
    }
    out.user = metadata.and_then(|m| m.user_id);

    let tools = tools.map(map_tools).transpose()?.filter(|t| !t.is_empty());
    // OpenAI refuses `tool_choice` and `parallel_tool_calls` without tools.
    if tools.is_some()
        && let Some(choice) = tool_choice
    {
        if choice.disable_parallel_tool_use == Some(true) {
            out.parallel_tool_calls = Some(false);
        }
        out.tool_choice = Some(map_tool_choice(choice)?);
    }
    out.tools = tools;
    out.reasoning_effort = thinking.map(reasoning_effort).transpose()?.flatten();

    let mut passed = Map::new();
    if let Some(k) = top_k {
        passed.insert("top_k".to_owned(), Value::from(k));
    }
    let mut output_format = None;
    for (key, value) in extra {
        if let Some((field, reason)) = REFUSED.iter().find(|(name, _)| *name == key) {
            return Err(TranslateError::new(*field, *reason));
        }
        if DROPPED.iter().any(|(name, _)| *name == key) {
            continue;
        }
        match key.as_str() {
            "output_format" => output_format = Some(response_format("output_format", value)?),
            "output_config" => {
                let Value::Object(mut config) = value else {
                    return Err(TranslateError::new("output_config", "must be an object"));
                };
                if let Some(effort) = config.remove("effort") {
                    let Value::String(effort) = effort else {
                        return Err(TranslateError::new("output_config.effort", "must be a string"));
                    };
                    // An explicit effort wins over the one bucketed from a thinking budget.
                    out.reasoning_effort = Some(effort);
                }
                if let Some(format) = config.remove("format")
                    && output_format.is_none()
                {
                    output_format = Some(response_format("output_config.format", format)?);
                }
            }
            _ => {
                passed.insert(key, value);
            }
        }
    }
    out.response_format = output_format;
    out.extra = passed;
    Ok(out)
}

/// The system prompt as one text: a string, or its text blocks joined with `"\n"`; `None` when
/// empty.
fn system_text(system: System) -> Result<Option<String>, TranslateError> {
    let text = match system {
        System::Text(text) => text,
        System::Blocks(blocks) => {
            let mut texts = Vec::with_capacity(blocks.len());
            for (j, block) in blocks.into_iter().enumerate() {
                match block {
                    ContentBlock::Text(t) if t.text.is_empty() => {}
                    ContentBlock::Text(t) => texts.push(t.text),
                    other => {
                        return Err(TranslateError::new(
                            format!("system[{j}]"),
                            format!("a system prompt can only have text blocks, not {}", block_kind(&other)),
                        ));
                    }
                }
            }
            texts.join("\n")
        }
    };
    Ok((!text.is_empty()).then_some(text))
}

/// The `type` of a block, for error messages.
fn block_kind(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(_) => "text".to_owned(),
        ContentBlock::Image(_) => "image".to_owned(),
        ContentBlock::ToolUse(_) => "tool_use".to_owned(),
        ContentBlock::ToolResult(_) => "tool_result".to_owned(),
        ContentBlock::Thinking(_) => "thinking".to_owned(),
        ContentBlock::RedactedThinking(_) => "redacted_thinking".to_owned(),
        ContentBlock::Other(v) => format!("{:?}", crate::tagged::kind(v).unwrap_or("an untyped block")),
    }
}

/// A user turn: its tool results as `tool` messages first, then one user message of its text and
/// images (tool results' images included, where they were).
fn user_messages(i: usize, content: MessageContent, out: &mut Vec<chat::Message>) -> Result<(), TranslateError> {
    let blocks = match content {
        MessageContent::Text(text) => {
            out.push(chat::Message::user(text));
            return Ok(());
        }
        MessageContent::Blocks(blocks) => blocks,
    };
    let mut parts = Vec::new();
    for (j, block) in blocks.into_iter().enumerate() {
        match block {
            ContentBlock::Text(t) => parts.push(ContentPart::Text(TextPart::new(t.text))),
            ContentBlock::Image(image) => parts.push(image_part(&format!("messages[{i}].content[{j}]"), image)?),
            ContentBlock::ToolResult(result) => out.push(tool_message(i, j, result, &mut parts)?),
            // Thinking belongs to assistant turns; like there, it cannot reach the upstream.
            ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_) => {}
            other => {
                return Err(TranslateError::new(
                    format!("messages[{i}].content[{j}]"),
                    format!("a user block of type {} cannot be sent to an OpenAI-compatible model", block_kind(&other)),
                ));
            }
        }
    }
    if !parts.is_empty() {
        out.push(chat::Message::new(chat::Role::User, Some(Content::Parts(parts))));
    }
    Ok(())
}

/// An image block as an `image_url` part: a `data:` URL for base64, the URL for a URL source.
fn image_part(field: &str, image: ImageBlock) -> Result<ContentPart, TranslateError> {
    match image.source {
        ImageSource::Base64 { media_type, data } => {
            Ok(ContentPart::image_url(format!("data:{media_type};base64,{data}")))
        }
        ImageSource::Url { url } => Ok(ContentPart::image_url(url)),
        ImageSource::Other(v) => Err(TranslateError::new(
            format!("{field}.source"),
            format!(
                "image sources of type {:?} cannot be sent to an OpenAI-compatible model: use base64 or url",
                crate::tagged::kind(&v).unwrap_or("unknown")
            ),
        )),
    }
}

/// A `tool_result` block as a `tool` message. Its text is the message's content (one text as a
/// string, several as text parts); its images cannot be in a `tool` message, so they join the
/// user message that follows (`images`). `is_error` has no chat equivalent and is dropped.
fn tool_message(
    i: usize,
    j: usize,
    result: ToolResultBlock,
    images: &mut Vec<ContentPart>,
) -> Result<chat::Message, TranslateError> {
    let content = match result.content {
        None => Content::Text(String::new()),
        Some(MessageContent::Text(text)) => Content::Text(text),
        Some(MessageContent::Blocks(blocks)) => {
            let mut texts = Vec::new();
            for (k, block) in blocks.into_iter().enumerate() {
                let field = format!("messages[{i}].content[{j}].content[{k}]");
                match block {
                    ContentBlock::Text(t) => texts.push(t.text),
                    ContentBlock::Image(image) => images.push(image_part(&field, image)?),
                    other => {
                        return Err(TranslateError::new(
                            field,
                            format!(
                                "a tool result block of type {} cannot be sent to an OpenAI-compatible model",
                                block_kind(&other)
                            ),
                        ));
                    }
                }
            }
            if texts.len() == 1 {
                Content::Text(texts.remove(0))
            } else if texts.is_empty() {
                Content::Text(String::new())
            } else {
                Content::Parts(texts.into_iter().map(ContentPart::text).collect())
            }
        }
    };
    let mut message = chat::Message::new(chat::Role::Tool, Some(content));
    message.tool_call_id = Some(result.tool_use_id);
    Ok(message)
}

/// An assistant turn as one assistant message: text blocks joined, `tool_use` blocks as
/// `tool_calls` (arguments: the input as compact JSON text). Thinking is dropped; a turn with
/// nothing else gives no message (OpenAI refuses an assistant message without content or calls).
fn assistant_message(i: usize, content: MessageContent) -> Result<Option<chat::Message>, TranslateError> {
    let blocks = match content {
        MessageContent::Text(text) if text.is_empty() => return Ok(None),
        MessageContent::Text(text) => return Ok(Some(chat::Message::assistant(text))),
        MessageContent::Blocks(blocks) => blocks,
    };
    let mut text = String::new();
    let mut calls = Vec::new();
    for (j, block) in blocks.into_iter().enumerate() {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::ToolUse(t) => calls.push(ToolCall::function(t.id, t.name, t.input.to_string())),
            ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_) => {}
            other => {
                return Err(TranslateError::new(
                    format!("messages[{i}].content[{j}]"),
                    format!(
                        "an assistant block of type {} cannot be sent to an OpenAI-compatible model",
                        block_kind(&other)
                    ),
                ));
            }
        }
    }
    if text.is_empty() && calls.is_empty() {
        return Ok(None);
    }
    let mut message = chat::Message::new(chat::Role::Assistant, (!text.is_empty()).then_some(Content::Text(text)));
    message.tool_calls = (!calls.is_empty()).then_some(calls);
    Ok(Some(message))
}

/// Client tools as function tools; server tools (any `type` other than `custom`) are refused.
fn map_tools(tools: Vec<Tool>) -> Result<Vec<chat::Tool>, TranslateError> {
    tools
        .into_iter()
        .enumerate()
        .map(|(i, tool)| {
            match tool.extra.get("type") {
                None => {}
                Some(Value::String(kind)) if kind == "custom" => {}
                Some(kind) => {
                    let kind = kind.as_str().map_or_else(|| kind.to_string(), |k| format!("{k:?}"));
                    return Err(TranslateError::new(
                        format!("tools[{i}]"),
                        format!(
                            "Anthropic server tool of type {kind} runs on Anthropic only, not on an OpenAI-compatible \
                             deployment"
                        ),
                    ));
                }
            }
            let mut out = chat::Tool::function(tool.name, tool.description, tool.input_schema);
            if let (Some(strict), Some(function)) = (tool.extra.get("strict"), out.function.as_mut()) {
                function.extra.insert("strict".to_owned(), strict.clone());
            }
            Ok(out)
        })
        .collect()
}

/// `tool_choice`: `auto`, `any` (`required`), `tool` (a named function), `none`.
fn map_tool_choice(choice: ToolChoice) -> Result<chat::ToolChoice, TranslateError> {
    Ok(match choice.kind.as_str() {
        "auto" => chat::ToolChoice::Mode("auto".to_owned()),
        "any" => chat::ToolChoice::Mode("required".to_owned()),
        "none" => chat::ToolChoice::Mode("none".to_owned()),
        "tool" => match choice.name {
            Some(name) => chat::ToolChoice::Named(NamedToolChoice::function(name)),
            None => return Err(TranslateError::new("tool_choice.name", "a tool choice of type tool names the tool")),
        },
        other => {
            return Err(TranslateError::new(
                "tool_choice.type",
                format!("unknown tool choice {other:?}: use auto, any, tool or none"),
            ));
        }
    })
}

/// LiteLLM 1.100's `reasoning_effort_from_thinking_budget` (`litellm/constants.py` thresholds):
/// a budget of 4096 or more is `high`, 2048 `medium`, 1024 `low`, less `minimal`. `adaptive` is
/// `medium` (LiteLLM's default for it); `disabled` sends nothing (LiteLLM sends `none`, which
/// most OpenAI-compatible models refuse).
fn reasoning_effort(thinking: Thinking) -> Result<Option<String>, TranslateError> {
    let effort = match thinking.kind.as_str() {
        "disabled" => return Ok(None),
        "adaptive" => "medium",
        "enabled" => match thinking.budget_tokens.unwrap_or(0) {
            4096.. => "high",
            2048.. => "medium",
            1024.. => "low",
            _ => "minimal",
        },
        other => {
            return Err(TranslateError::new(
                "thinking.type",
                format!("unknown thinking type {other:?}: use enabled, adaptive or disabled"),
            ));
        }
    };
    Ok(Some(effort.to_owned()))
}

/// Anthropic's structured output (`{"type": "json_schema", "schema"}`) as OpenAI's
/// `response_format`, strict (as Anthropic's is), named `structured_output` (as LiteLLM).
fn response_format(field: &str, value: Value) -> Result<ResponseFormat, TranslateError> {
    let Value::Object(mut format) = value else {
        return Err(TranslateError::new(field, "must be an object"));
    };
    match format.get("type").and_then(Value::as_str) {
        Some("json_schema") => {}
        other => {
            return Err(TranslateError::new(
                format!("{field}.type"),
                format!("unknown output format {:?}: use json_schema", other.unwrap_or("")),
            ));
        }
    }
    let Some(schema @ Value::Object(_)) = format.remove("schema") else {
        return Err(TranslateError::new(format!("{field}.schema"), "must be a JSON Schema object"));
    };
    let mut json_schema = JsonSchema::new("structured_output", schema);
    json_schema.extra.insert("strict".to_owned(), Value::Bool(true));
    let mut out = ResponseFormat::new("json_schema");
    out.json_schema = Some(json_schema);
    Ok(out)
}
