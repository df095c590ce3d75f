//! [`request_from_chat`]: an OpenAI chat request as an Anthropic Messages request.

use serde_json::{Map, Value, json};

use super::blocks::{
    ContentBlock, ImageBlock, ImageSource, Message, MessageContent, Role, TextBlock, ToolResultBlock, ToolUseBlock,
};
use super::wire::{MessagesRequest, Metadata, System, Thinking, Tool, ToolChoice};
use super::{JSON_TOOL_NAME, RequestOptions};
use crate::TranslateError;
use crate::chat::{self, ChatRequest, Content, ContentPart};

/// LiteLLM's thinking budgets for `reasoning_effort` (`litellm/constants.py`, 1.100):
/// `minimal` is raised to Anthropic's minimum budget of 1024.
fn thinking_budget(effort: &str) -> Result<Option<u64>, TranslateError> {
    Ok(Some(match effort {
        "none" => return Ok(None),
        "minimal" | "low" => 1024,
        "medium" => 2048,
        "high" => 4096,
        "xhigh" => 8192,
        "max" => 16384,
        other => {
            return Err(TranslateError::new(
                "reasoning_effort",
                format!("unknown effort {other:?}: use minimal, low, medium, high, xhigh, max or none"),
            ));
        }
    }))
}

/// The thinking budget of a `reasoning_effort` that fits under `max_tokens`: Anthropic requires
/// `budget_tokens < max_tokens`, so a budget that does not fit is lowered to `max_tokens - 1`, and
/// thinking is left off when not even Anthropic's minimum budget fits (as LiteLLM's
/// `cap_thinking_budget_to_max_tokens`).
fn fitted_budget(budget: u64, max_tokens: u64) -> Option<u64> {
    const MIN_BUDGET: u64 = 1024;
    if max_tokens <= MIN_BUDGET { None } else { Some(budget.min(max_tokens - 1)) }
}

/// Translates an OpenAI chat request into an Anthropic Messages request for `opts.model`.
///
/// System and developer messages become the top-level `system`; consecutive turns of one role
/// are merged, `tool` messages become `tool_result` blocks of a user turn; tools, tool choice,
/// stop sequences, `user`, images, `response_format` and `reasoning_effort` are mapped as LiteLLM
/// 1.100 maps them (`docs/dialects/anthropic.md` lists every field). Parameters Anthropic has no
/// equivalent for (`n` > 1, `logprobs`, penalties, `seed`, audio) are refused naming the field,
/// or dropped when `opts.drop_unsupported`; every field this crate does not know passes through,
/// so Anthropic-native parameters (`top_k`, `thinking`, `service_tier`, ...) work.
///
/// A conversation that starts with an assistant turn is sent as it is (LiteLLM neither refuses
/// nor pads it); one without any user or assistant content is refused (`messages`).
pub fn request_from_chat(req: ChatRequest, opts: &RequestOptions) -> Result<MessagesRequest, TranslateError> {
    refuse_unsupported(&req, opts)?;
    let ChatRequest {
        model: _,
        messages,
        max_tokens,
        max_completion_tokens,
        temperature,
        top_p,
        stop,
        stream,
        stream_options: _,
        user,
        tools,
        tool_choice,
        parallel_tool_calls,
        response_format,
        reasoning_effort,
        mut extra,
        ..
    } = req;

    let (system, messages) = conversation(messages)?;

    // Anthropic requires one; without a client limit, the model's largest output (the catalog's,
    // as LiteLLM sends), never more: the thinking budget is spent inside it, not added to it.
    let max_tokens = max_completion_tokens.or(max_tokens).unwrap_or(u64::from(opts.default_max_tokens));
    let thinking = match extra.remove("thinking") {
        Some(value) => Some(
            serde_json::from_value::<Thinking>(value)
                .map_err(|e| TranslateError::new("thinking", format!("not an Anthropic thinking object: {e}")))?,
        ),
        None => reasoning_effort
            .as_deref()
            .map(thinking_budget)
            .transpose()?
            .flatten()
            .and_then(|budget| fitted_budget(budget, max_tokens))
            .map(Thinking::enabled),
    };
    let thinking_enabled = thinking.as_ref().is_some_and(|t| t.kind == "enabled");
    let top_k = match extra.remove("top_k") {
        Some(value) => {
            Some(value.as_u64().ok_or_else(|| TranslateError::new("top_k", "must be a non-negative integer"))?)
        }
        None => None,
    };

    let mut anthropic_tools = tools.map(map_tools).transpose()?;
    let mut choice = tool_choice.map(map_tool_choice).transpose()?.flatten();
    let choice_is_none = choice.as_ref().is_some_and(|c| c.kind == "none");
    if let Some(parallel) = parallel_tool_calls
        && !choice_is_none
    {
        choice.get_or_insert_with(|| ToolChoice::new("auto")).disable_parallel_tool_use = Some(!parallel);
    }

    if let Some(format) = response_format
        && let Some(schema) = json_schema(format)?
    {
        let tools = anthropic_tools.get_or_insert_with(Vec::new);
        if let Some(k) = tools.iter().position(|t| t.name == JSON_TOOL_NAME) {
            return Err(TranslateError::new(
                format!("tools[{k}].function.name"),
                format!("`{JSON_TOOL_NAME}` is reserved for `response_format` on Anthropic"),
            ));
        }
        tools.push(Tool::new(JSON_TOOL_NAME, None, schema));
        // Anthropic refuses a forced tool while thinking; the model is then only offered it.
        if !thinking_enabled {
            let disable_parallel = choice.as_ref().and_then(|c| c.disable_parallel_tool_use);
            let mut forced = ToolChoice::tool(JSON_TOOL_NAME);
            forced.disable_parallel_tool_use = disable_parallel;
            choice = Some(forced);
        }
    }

    // Anthropic refuses a `tool_choice` without tools; LiteLLM sends it anyway (and gets a 400).
    if anthropic_tools.as_ref().is_none_or(Vec::is_empty) {
        choice = None;
    }

    let mut out = MessagesRequest::new(opts.model.clone(), messages, max_tokens);
    out.system = system;
    out.stop_sequences = stop.map(chat::Stop::into_vec);
    out.temperature = temperature;
    out.top_p = top_p;
    out.top_k = top_k;
    out.stream = stream;
    out.metadata = user.map(Metadata::user);
    out.tools = anthropic_tools;
    out.tool_choice = choice;
    out.thinking = thinking;
    // A pass-through field that the translation also sets (`metadata` next to `user`, a native
    // `stop_sequences` next to `stop`) would be written twice: the translated one wins.
    let set = [
        ("model", true),
        ("messages", true),
        ("max_tokens", true),
        ("system", out.system.is_some()),
        ("stop_sequences", out.stop_sequences.is_some()),
        ("temperature", out.temperature.is_some()),
        ("top_p", out.top_p.is_some()),
        ("stream", out.stream.is_some()),
        ("metadata", out.metadata.is_some()),
        ("tools", out.tools.is_some()),
        ("tool_choice", out.tool_choice.is_some()),
    ];
    extra.retain(|key, _| !set.iter().any(|(name, is_set)| *is_set && name == key));
    out.extra = extra;
    Ok(out)
}

/// Refuses (or, with `drop_unsupported`, ignores) the parameters Anthropic cannot honour.
fn refuse_unsupported(req: &ChatRequest, opts: &RequestOptions) -> Result<(), TranslateError> {
    if opts.drop_unsupported {
        return Ok(());
    }
    let refused = [
        ("n", req.n.is_some_and(|n| n > 1), "Anthropic returns one choice per request"),
        ("logprobs", req.logprobs == Some(true), "Anthropic does not return log probabilities"),
        ("top_logprobs", req.top_logprobs.is_some(), "Anthropic does not return log probabilities"),
        ("logit_bias", req.logit_bias.is_some(), "Anthropic has no token biases"),
        ("presence_penalty", req.presence_penalty.is_some(), "Anthropic has no presence penalty"),
        ("frequency_penalty", req.frequency_penalty.is_some(), "Anthropic has no frequency penalty"),
        ("seed", req.seed.is_some(), "Anthropic has no sampling seed"),
        (
            "modalities",
            req.modalities.as_ref().is_some_and(|m| m.iter().any(|m| m != "text")),
            "Anthropic answers with text only",
        ),
        ("audio", req.audio.is_some(), "Anthropic answers with text only"),
    ];
    match refused.into_iter().find(|(_, present, _)| *present) {
        Some((field, _, reason)) => Err(TranslateError::new(field, format!("{reason} (set drop_params to drop it)"))),
        None => Ok(()),
    }
}

/// The system prompt and the alternating turns of `messages`.
fn conversation(messages: Vec<chat::Message>) -> Result<(Option<System>, Vec<Message>), TranslateError> {
    let mut system: Vec<TextBlock> = Vec::new();
    let mut turns: Vec<Message> = Vec::new();
    for (i, message) in messages.into_iter().enumerate() {
        let role = match message.role {
            chat::Role::System | chat::Role::Developer => {
                system.extend(system_blocks(i, message)?);
                continue;
            }
            chat::Role::User => {
                let blocks = user_blocks(i, message)?;
                push(&mut turns, Role::User, blocks);
                continue;
            }
            chat::Role::Tool => Role::User,
            chat::Role::Assistant => Role::Assistant,
            chat::Role::Function => {
                return Err(TranslateError::new(
                    format!("messages[{i}].role"),
                    "the deprecated `function` role has no Anthropic equivalent: use `tool`",
                ));
            }
        };
        let blocks = match role {
            Role::User => vec![tool_result(i, message)?],
            _ => assistant_blocks(i, message)?,
        };
        push(&mut turns, role, blocks);
    }
    if turns.is_empty() {
        return Err(TranslateError::new("messages", "Anthropic needs at least one non-system message with content"));
    }
    // Anthropic refuses a final assistant turn (a prefill) that ends with whitespace.
    if let Some(last) = turns.last_mut().filter(|t| t.role == Role::Assistant)
        && let MessageContent::Blocks(blocks) = &mut last.content
        && let Some(ContentBlock::Text(text)) = blocks.last_mut()
    {
        text.text.truncate(text.text.trim_end().len());
    }
    let system = if system.is_empty() {
        None
    } else if system.iter().any(|b| b.cache_control.is_some()) {
        Some(System::Blocks(system.into_iter().map(ContentBlock::Text).collect()))
    } else {
        Some(System::Text(system.into_iter().map(|b| b.text).collect::<Vec<_>>().join("\n")))
    };
    Ok((system, turns))
}

/// Appends `blocks` to the last turn when it has `role`, else starts a turn; nothing for none.
fn push(turns: &mut Vec<Message>, role: Role, blocks: Vec<ContentBlock>) {
    if blocks.is_empty() {
        return;
    }
    match turns.last_mut() {
        Some(Message { role: last, content: MessageContent::Blocks(existing), .. }) if *last == role => {
            existing.extend(blocks);
        }
        _ => turns.push(Message::new(role, blocks)),
    }
}

/// A text block, with the message's `cache_control` when it has one.
fn text_block(text: String, cache_control: Option<Value>) -> TextBlock {
    TextBlock { cache_control, ..TextBlock::new(text) }
}

fn system_blocks(i: usize, message: chat::Message) -> Result<Vec<TextBlock>, TranslateError> {
    Ok(match message.content {
        None | Some(Content::Null) => Vec::new(),
        // Anthropic refuses empty text blocks; LiteLLM skips them.
        Some(Content::Text(text)) if text.is_empty() => Vec::new(),
        Some(Content::Text(text)) => vec![text_block(text, message.cache_control)],
        Some(Content::Parts(parts)) => {
            let mut blocks = Vec::new();
            for (j, part) in parts.into_iter().enumerate() {
                match part {
                    ContentPart::Text(p) if p.text.is_empty() => {}
                    ContentPart::Text(p) => blocks.push(text_block(p.text, p.cache_control)),
                    _ => {
                        return Err(TranslateError::new(
                            format!("messages[{i}].content[{j}]"),
                            "a system message can only have text parts",
                        ));
                    }
                }
            }
            blocks
        }
    })
}

/// The blocks of text and images of a user message (or a tool result).
fn user_blocks(i: usize, message: chat::Message) -> Result<Vec<ContentBlock>, TranslateError> {
    match message.content {
        None | Some(Content::Null) => Ok(Vec::new()),
        Some(Content::Text(text)) if text.is_empty() => Ok(Vec::new()),
        Some(Content::Text(text)) => Ok(vec![ContentBlock::Text(text_block(text, message.cache_control))]),
        Some(Content::Parts(parts)) => {
            let mut blocks = Vec::with_capacity(parts.len());
            for (j, part) in parts.into_iter().enumerate() {
                match part {
                    ContentPart::Text(p) if p.text.is_empty() => {}
                    ContentPart::Text(p) => blocks.push(ContentBlock::Text(text_block(p.text, p.cache_control))),
                    ContentPart::ImageUrl(p) => {
                        let source = image_source(&p.image_url.url).ok_or_else(|| {
                            TranslateError::new(
                                format!("messages[{i}].content[{j}].image_url.url"),
                                "must be a data:<media type>;base64,<data> URL or an http(s) URL",
                            )
                        })?;
                        blocks.push(ContentBlock::Image(ImageBlock {
                            cache_control: p.cache_control,
                            ..ImageBlock::new(source)
                        }));
                    }
                    ContentPart::Other(v) => {
                        let kind = crate::tagged::kind(&v).unwrap_or("unknown");
                        return Err(TranslateError::new(
                            format!("messages[{i}].content[{j}]"),
                            format!("content parts of type {kind:?} are not supported for Anthropic"),
                        ));
                    }
                }
            }
            Ok(blocks)
        }
    }
}

/// The source of an image URL: base64 for a `data:` URL, a URL source for http(s). Nothing is
/// fetched.
fn image_source(url: &str) -> Option<ImageSource> {
    if let Some(rest) = url.strip_prefix("data:") {
        let (media_type, data) = rest.split_once(";base64,")?;
        if media_type.is_empty() || data.is_empty() {
            return None;
        }
        return Some(ImageSource::Base64 { media_type: media_type.to_owned(), data: data.to_owned() });
    }
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://")).then(|| ImageSource::Url { url: url.to_owned() })
}

/// A `tool` message as a `tool_result` block.
fn tool_result(i: usize, message: chat::Message) -> Result<ContentBlock, TranslateError> {
    let Some(id) = message.tool_call_id.clone() else {
        return Err(TranslateError::new(
            format!("messages[{i}].tool_call_id"),
            "a tool message must name the call it answers",
        ));
    };
    let cache_control = message.cache_control.clone();
    let content = match message.content {
        None | Some(Content::Null) => None,
        Some(Content::Text(text)) => Some(MessageContent::Text(text)),
        Some(parts) => {
            let blocks =
                user_blocks(i, chat::Message { cache_control: None, ..chat::Message::new(message.role, Some(parts)) })?;
            Some(MessageContent::Blocks(blocks))
        }
    };
    let mut block = ToolResultBlock::new(id, content);
    block.cache_control = cache_control;
    Ok(ContentBlock::ToolResult(block))
}

/// An assistant message: its signed thinking blocks, text, then tool calls as `tool_use`.
fn assistant_blocks(i: usize, message: chat::Message) -> Result<Vec<ContentBlock>, TranslateError> {
    let mut blocks = Vec::new();
    // `reasoning_content` alone is not sent: Anthropic refuses an unsigned thinking block.
    for block in message.thinking_blocks.into_iter().flatten() {
        blocks.push(ContentBlock::from_value(block));
    }
    match message.content {
        None | Some(Content::Null) => {}
        Some(Content::Text(text)) if text.is_empty() => {}
        Some(Content::Text(text)) => blocks.push(ContentBlock::Text(text_block(text, message.cache_control))),
        Some(Content::Parts(parts)) => {
            for (j, part) in parts.into_iter().enumerate() {
                match part {
                    ContentPart::Text(p) if p.text.is_empty() => {}
                    ContentPart::Text(p) => blocks.push(ContentBlock::Text(text_block(p.text, p.cache_control))),
                    _ => {
                        return Err(TranslateError::new(
                            format!("messages[{i}].content[{j}]"),
                            "an assistant message can only have text parts",
                        ));
                    }
                }
            }
        }
    }
    for (j, call) in message.tool_calls.into_iter().flatten().enumerate() {
        let arguments = call.function.arguments.trim();
        let input = if arguments.is_empty() {
            json!({})
        } else {
            serde_json::from_str::<Value>(arguments).map_err(|e| {
                TranslateError::new(
                    format!("messages[{i}].tool_calls[{j}].function.arguments"),
                    format!("not valid JSON: {e}"),
                )
            })?
        };
        blocks.push(ContentBlock::ToolUse(ToolUseBlock::new(call.id, call.function.name, input)));
    }
    Ok(blocks)
}

fn map_tools(tools: Vec<chat::Tool>) -> Result<Vec<Tool>, TranslateError> {
    tools
        .into_iter()
        .enumerate()
        .map(|(k, tool)| {
            let function = match tool.function {
                Some(f) if tool.kind == "function" => f,
                _ => {
                    return Err(TranslateError::new(
                        format!("tools[{k}].type"),
                        format!("tools of type {:?} are not supported for Anthropic: use function", tool.kind),
                    ));
                }
            };
            let schema = function.parameters.unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            let mut out = Tool::new(function.name, function.description, schema);
            out.cache_control = tool.cache_control;
            Ok(out)
        })
        .collect()
}

/// `tool_choice`; `None` when it says nothing Anthropic needs.
fn map_tool_choice(choice: chat::ToolChoice) -> Result<Option<ToolChoice>, TranslateError> {
    let invalid = || {
        TranslateError::new(
            "tool_choice",
            "use auto, none, required or {\"type\": \"function\", \"function\": {\"name\"}}",
        )
    };
    Ok(Some(match choice {
        chat::ToolChoice::Mode(mode) => match mode.as_str() {
            "auto" => ToolChoice::new("auto"),
            "required" | "any" => ToolChoice::new("any"),
            "none" => ToolChoice::new("none"),
            _ => return Err(invalid()),
        },
        chat::ToolChoice::Named(named) => ToolChoice::tool(named.function.name),
        chat::ToolChoice::Other(_) => return Err(invalid()),
    }))
}

/// The schema of the forced `json_tool_call` for `response_format`, or `None` for `text`.
fn json_schema(format: chat::ResponseFormat) -> Result<Option<Value>, TranslateError> {
    match format.kind.as_str() {
        "text" => Ok(None),
        // LiteLLM 1.100 ignores json_object on Anthropic; an open object schema asks for JSON.
        "json_object" => Ok(Some(json!({"type": "object", "additionalProperties": true, "properties": {}}))),
        "json_schema" => match format.json_schema.and_then(|s| s.schema) {
            Some(Value::Object(schema)) => Ok(Some(Value::Object(with_object_type(schema)))),
            _ => Err(TranslateError::new("response_format.json_schema.schema", "must be a JSON Schema object")),
        },
        other => Err(TranslateError::new("response_format.type", format!("unknown format {other:?}"))),
    }
}

/// Anthropic's `input_schema` must be an object schema; LiteLLM starts from `{"type": "object"}`.
fn with_object_type(mut schema: Map<String, Value>) -> Map<String, Value> {
    schema.entry("type").or_insert_with(|| Value::from("object"));
    schema
}
