//! [`request_from_chat`]: an OpenAI chat request as a Bedrock Converse request.

use serde_json::{Map, Value, json};

use super::blocks::{
    CachePoint, ContentBlock, ImageBlock, Message, ReasoningContent, ReasoningText, Role, ToolResultBlock,
    ToolResultContent, ToolUseBlock,
};
use super::wire::{ConverseRequest, InferenceConfig, Tool, ToolChoice, ToolConfig, ToolSpec};
use super::{JSON_TOOL_NAME, RequestOptions};
use crate::TranslateError;
use crate::chat::{self, ChatRequest, Content, ContentPart};

/// Converse fields a client may send at the top level of its chat request; they pass to the
/// Converse body's top level as given (every other unknown field goes to
/// `additionalModelRequestFields`, as LiteLLM sends it).
const TOP_LEVEL: [&str; 7] = [
    "guardrailConfig",
    "performanceConfig",
    "requestMetadata",
    "promptVariables",
    "additionalModelResponseFieldPaths",
    "serviceTier",
    "outputConfig",
];

/// LiteLLM's `DEFAULT_MAX_TOKENS`: added to the thinking budget when the client sets no limit.
const THINKING_HEADROOM: u64 = 4096;

/// Claude's minimum thinking budget.
const MIN_THINKING_BUDGET: u64 = 1024;

/// Which family a model id belongs to, for the parameters Converse leaves to the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    /// Anthropic Claude (`anthropic.claude-...`, `us.anthropic.claude-...`).
    Claude,
    /// OpenAI's open-weight `openai.gpt-oss-...`.
    GptOss,
    /// Amazon Nova.
    Nova,
    /// An ARN: the model behind it is unknown, every parameter is sent (as LiteLLM does).
    Arn,
    Other,
}

fn family(model_id: &str) -> Family {
    let id = model_id.to_ascii_lowercase();
    if id.starts_with("arn:") {
        Family::Arn
    } else if id.contains("anthropic.") || id.contains("claude") {
        Family::Claude
    } else if id.contains("gpt-oss") {
        Family::GptOss
    } else if id.contains("amazon.nova") {
        Family::Nova
    } else {
        Family::Other
    }
}

/// LiteLLM's thinking budgets for `reasoning_effort` (the Anthropic ones, `litellm/constants.py`),
/// `minimal` raised to Claude's minimum of 1024; `None` for `none`.
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

/// Translates an OpenAI chat request into a Converse request for `opts.model_id` (which the
/// provider puts in the URL: `/model/{modelId}/converse`).
///
/// System and developer messages become `system` text blocks; consecutive turns of one role are
/// merged (Converse requires alternation), `tool` messages become `toolResult` blocks of a user
/// turn, images must be `data:` URLs; tools, tool choice, limits, sampling, stop sequences,
/// `response_format`, `reasoning_effort` and `top_k` are mapped as LiteLLM 1.100 maps them, and
/// Converse's own top-level fields (`guardrailConfig`, `performanceConfig`, ...) pass through.
/// Every other field the hub does not know goes to `additionalModelRequestFields`, which Bedrock
/// hands to the model. `docs/dialects/bedrock.md` lists every field.
///
/// ```
/// use switchyard_dialects::bedrock::{RequestOptions, request_from_chat};
/// use switchyard_dialects::chat::ChatRequest;
///
/// let req: ChatRequest = serde_json::from_str(r#"{
///     "model": "claude", "max_tokens": 256, "stop": "END", "top_k": 5,
///     "messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"}],
///     "guardrailConfig": {"guardrailIdentifier": "gr-1", "guardrailVersion": "1"}
/// }"#)?;
/// let body = request_from_chat(req, &RequestOptions::new("anthropic.claude-3-haiku-20240307-v1:0"))?;
/// assert_eq!(serde_json::to_value(&body)?, serde_json::json!({
///     "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
///     "system": [{"text": "Be terse."}],
///     "inferenceConfig": {"maxTokens": 256, "stopSequences": ["END"]},
///     "guardrailConfig": {"guardrailIdentifier": "gr-1", "guardrailVersion": "1"},
///     "additionalModelRequestFields": {"top_k": 5},
/// }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn request_from_chat(req: ChatRequest, opts: &RequestOptions) -> Result<ConverseRequest, TranslateError> {
    refuse_unsupported(&req, opts)?;
    let family = family(&opts.model_id);
    let ChatRequest {
        model: _,
        messages,
        max_tokens,
        max_completion_tokens,
        temperature,
        top_p,
        stop,
        stream: _,
        stream_options: _,
        user: _,
        tools,
        tool_choice,
        parallel_tool_calls,
        response_format,
        reasoning_effort,
        mut extra,
        ..
    } = req;

    let (system, messages) = conversation(messages)?;
    let history_has_tools = messages
        .iter()
        .flat_map(|m| &m.content)
        .any(|b| matches!(b, ContentBlock::ToolUse(_) | ContentBlock::ToolResult(_)));

    let mut additional: Map<String, Value> = match extra.remove("additionalModelRequestFields") {
        None => Map::new(),
        Some(Value::Object(fields)) => fields,
        Some(_) => {
            return Err(TranslateError::new("additionalModelRequestFields", "must be a JSON object"));
        }
    };

    // Limits and thinking.
    let mut limit = max_completion_tokens.or(max_tokens);
    let mut thinking = extra.get("thinking").is_some_and(|t| t.get("type").and_then(Value::as_str) == Some("enabled"));
    if let Some(effort) = reasoning_effort.as_deref() {
        match family {
            Family::GptOss => {
                additional.insert("reasoning_effort".to_owned(), Value::from(effort));
            }
            Family::Claude | Family::Arn if !extra.contains_key("thinking") => {
                if let Some(budget) = thinking_budget(effort)? {
                    let budget = match limit {
                        // Claude requires `budget_tokens < max_tokens`; no room: no thinking.
                        Some(max) if max <= MIN_THINKING_BUDGET => None,
                        Some(max) => Some(budget.min(max - 1)),
                        None => {
                            limit = Some(budget + THINKING_HEADROOM);
                            Some(budget)
                        }
                    };
                    if let Some(budget) = budget {
                        additional.insert("thinking".to_owned(), json!({"type": "enabled", "budget_tokens": budget}));
                        thinking = true;
                    }
                }
            }
            Family::Claude | Family::Arn => {}
            Family::Nova | Family::Other if opts.drop_unsupported => {}
            Family::Nova | Family::Other => {
                return Err(TranslateError::new(
                    "reasoning_effort",
                    format!(
                        "not mapped for Bedrock model {:?} (Claude and gpt-oss only; set drop_params to drop it)",
                        opts.model_id
                    ),
                ));
            }
        }
    }

    if let Some(top_k) = extra.remove("top_k") {
        if !top_k.is_u64() {
            return Err(TranslateError::new("top_k", "must be a non-negative integer"));
        }
        if family == Family::Nova {
            additional.insert("inferenceConfig".to_owned(), json!({"topK": top_k}));
        } else {
            additional.insert("top_k".to_owned(), top_k);
        }
    }

    // Tools.
    let mut specs = tools.map(|t| map_tools(t, family)).transpose()?.unwrap_or_default();
    let mut choice = match tool_choice {
        None => None,
        Some(choice) => map_tool_choice(choice, history_has_tools, opts, &mut specs)?,
    };
    if let Some(format) = response_format
        && let Some(schema) = json_schema(format)?
    {
        if specs.iter().any(|t| matches!(t, Tool::Spec(s) if s.name == JSON_TOOL_NAME)) {
            return Err(TranslateError::new(
                "tools",
                format!("`{JSON_TOOL_NAME}` is reserved for `response_format` on Bedrock"),
            ));
        }
        specs.push(Tool::Spec(ToolSpec::new(JSON_TOOL_NAME, None, schema)));
        if !thinking {
            choice = Some(ToolChoice::tool(JSON_TOOL_NAME));
        }
    }
    // Claude refuses a forced tool while thinking; LiteLLM turns it into `auto`.
    if thinking && matches!(choice, Some(ToolChoice::Any(_) | ToolChoice::Tool(_))) {
        choice = Some(ToolChoice::auto());
    }
    if specs.is_empty() && history_has_tools {
        return Err(TranslateError::new(
            "tools",
            "Bedrock needs the tools defined when the conversation has tool calls or tool results",
        ));
    }
    if parallel_tool_calls == Some(false) && !specs.is_empty() && matches!(family, Family::Claude | Family::Arn) {
        // Converse has no such setting; Claude reads Anthropic's. A `type` next to
        // `toolConfig.toolChoice` would be refused, so it is only set when there is none.
        let mut tool_choice = json!({"disable_parallel_tool_use": true});
        if choice.is_none() {
            tool_choice["type"] = Value::from("auto");
        }
        additional.insert("tool_choice".to_owned(), tool_choice);
    }
    let tool_config = (!specs.is_empty()).then(|| ToolConfig { tool_choice: choice, ..ToolConfig::new(specs) });

    let inference = InferenceConfig {
        max_tokens: limit,
        temperature,
        top_p,
        // Converse refuses an empty stop sequence.
        stop_sequences: stop.map(chat::Stop::into_vec).map(|v| v.into_iter().filter(|s| !s.is_empty()).collect()),
        ..InferenceConfig::default()
    };

    let mut out = ConverseRequest::new(messages);
    out.system = (!system.is_empty()).then_some(system);
    out.inference_config = (!inference.is_empty()).then_some(inference);
    out.tool_config = tool_config;
    out.guardrail_config = extra.remove("guardrailConfig");
    if let Some(tier) = extra.remove("service_tier") {
        let tier = match tier.as_str() {
            Some("auto") => Some("default"),
            Some(t @ ("default" | "flex" | "priority")) => Some(t),
            _ if opts.drop_unsupported => None,
            _ => {
                return Err(TranslateError::new("service_tier", "Bedrock tiers are auto, default, flex and priority"));
            }
        };
        if let Some(tier) = tier {
            out.extra.insert("serviceTier".to_owned(), json!({"type": tier}));
        }
    }
    for key in TOP_LEVEL {
        if let Some(value) = extra.remove(key) {
            out.extra.insert(key.to_owned(), value);
        }
    }
    // Everything else is for the model.
    for (key, value) in extra {
        additional.entry(key).or_insert(value);
    }
    out.additional_model_request_fields = (!additional.is_empty()).then_some(additional);
    Ok(out)
}

/// Refuses (or, with `drop_unsupported`, ignores) the parameters Converse cannot honour.
fn refuse_unsupported(req: &ChatRequest, opts: &RequestOptions) -> Result<(), TranslateError> {
    if opts.drop_unsupported {
        return Ok(());
    }
    let refused = [
        ("n", req.n.is_some_and(|n| n > 1), "Bedrock Converse returns one choice per request"),
        ("logprobs", req.logprobs == Some(true), "Bedrock Converse does not return log probabilities"),
        ("top_logprobs", req.top_logprobs.is_some(), "Bedrock Converse does not return log probabilities"),
        ("logit_bias", req.logit_bias.is_some(), "Bedrock Converse has no token biases"),
        ("presence_penalty", req.presence_penalty.is_some(), "Bedrock Converse has no presence penalty"),
        ("frequency_penalty", req.frequency_penalty.is_some(), "Bedrock Converse has no frequency penalty"),
        ("seed", req.seed.is_some(), "Bedrock Converse has no sampling seed"),
        (
            "modalities",
            req.modalities.as_ref().is_some_and(|m| m.iter().any(|m| m != "text")),
            "Bedrock Converse answers with text only",
        ),
        ("audio", req.audio.is_some(), "Bedrock Converse answers with text only"),
    ];
    match refused.into_iter().find(|(_, present, _)| *present) {
        Some((field, _, reason)) => Err(TranslateError::new(field, format!("{reason} (set drop_params to drop it)"))),
        None => Ok(()),
    }
}

/// The system blocks and the alternating turns of `messages`.
fn conversation(messages: Vec<chat::Message>) -> Result<(Vec<ContentBlock>, Vec<Message>), TranslateError> {
    let mut system = Vec::new();
    let mut turns: Vec<Message> = Vec::new();
    let mut first_turn: Option<(usize, Role)> = None;
    for (i, message) in messages.into_iter().enumerate() {
        let (role, blocks) = match message.role {
            chat::Role::System | chat::Role::Developer => {
                system.extend(system_blocks(i, message)?);
                continue;
            }
            chat::Role::User => (Role::User, user_blocks(i, message)?),
            chat::Role::Tool => (Role::User, tool_result(i, message)?),
            chat::Role::Assistant => (Role::Assistant, assistant_blocks(i, message)?),
            chat::Role::Function => {
                return Err(TranslateError::new(
                    format!("messages[{i}].role"),
                    "the deprecated `function` role has no Bedrock equivalent: use `tool`",
                ));
            }
        };
        if blocks.is_empty() {
            continue;
        }
        first_turn.get_or_insert((i, role));
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => turns.push(Message::new(role, blocks)),
        }
    }
    match first_turn {
        None => Err(TranslateError::new("messages", "Bedrock needs at least one non-system message with content")),
        Some((i, Role::Assistant)) => Err(TranslateError::new(
            format!("messages[{i}]"),
            "Bedrock Converse requires the conversation to start with a user message",
        )),
        Some(_) => Ok((system, turns)),
    }
}

/// Text that Converse accepts: it refuses blank text blocks.
fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// A text block, and a cache point after it when the client asked for caching.
fn text_with_cache(out: &mut Vec<ContentBlock>, text: String, cache_control: Option<Value>) {
    if is_blank(&text) {
        return;
    }
    out.push(ContentBlock::Text(text));
    if cache_control.is_some() {
        out.push(ContentBlock::CachePoint(CachePoint::default_point()));
    }
}

/// A system or developer message as system text blocks.
fn system_blocks(i: usize, message: chat::Message) -> Result<Vec<ContentBlock>, TranslateError> {
    let mut out = Vec::new();
    match message.content {
        None | Some(Content::Null) => {}
        Some(Content::Text(text)) => text_with_cache(&mut out, text, message.cache_control),
        Some(Content::Parts(parts)) => {
            for (j, part) in parts.into_iter().enumerate() {
                match part {
                    ContentPart::Text(p) => text_with_cache(&mut out, p.text, p.cache_control),
                    _ => {
                        return Err(TranslateError::new(
                            format!("messages[{i}].content[{j}]"),
                            "a system message can only have text parts",
                        ));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// A user message's blocks: text and inline images.
fn user_blocks(i: usize, message: chat::Message) -> Result<Vec<ContentBlock>, TranslateError> {
    let mut out = Vec::new();
    match message.content {
        None | Some(Content::Null) => {}
        Some(Content::Text(text)) => text_with_cache(&mut out, text, message.cache_control),
        Some(Content::Parts(parts)) => {
            for (j, part) in parts.into_iter().enumerate() {
                match part {
                    ContentPart::Text(p) => text_with_cache(&mut out, p.text, p.cache_control),
                    ContentPart::ImageUrl(p) => {
                        out.push(ContentBlock::Image(image(&format!("messages[{i}].content[{j}]"), &p.image_url.url)?));
                        if p.cache_control.is_some() {
                            out.push(ContentBlock::CachePoint(CachePoint::default_point()));
                        }
                    }
                    _ => {
                        return Err(TranslateError::new(
                            format!("messages[{i}].content[{j}]"),
                            "Bedrock takes text and image parts only",
                        ));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// An image part's `data:` URL as an inline image block; other URLs cannot cross (Bedrock takes
/// bytes or S3 locations, and this crate fetches nothing).
fn image(field: &str, url: &str) -> Result<ImageBlock, TranslateError> {
    let field = format!("{field}.image_url.url");
    let Some(rest) = url.strip_prefix("data:") else {
        return Err(TranslateError::new(
            field,
            "Bedrock takes images inline only: send a data:image/...;base64, URL instead of a link",
        ));
    };
    let Some((media_type, data)) = rest.split_once(";base64,") else {
        return Err(TranslateError::new(field, "a data: URL must be base64 (data:image/png;base64,...)"));
    };
    let format = match media_type.to_ascii_lowercase().as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        other => {
            return Err(TranslateError::new(
                field,
                format!("Bedrock takes png, jpeg, gif and webp images, not {other:?}"),
            ));
        }
    };
    if data.is_empty() {
        return Err(TranslateError::new(field, "the image is empty"));
    }
    Ok(ImageBlock::bytes(format, data))
}

/// A `tool` message as a `toolResult` block (and a cache point when asked).
fn tool_result(i: usize, message: chat::Message) -> Result<Vec<ContentBlock>, TranslateError> {
    let Some(id) = message.tool_call_id.clone() else {
        return Err(TranslateError::new(
            format!("messages[{i}].tool_call_id"),
            "a tool message must name the call it answers",
        ));
    };
    let mut content = Vec::new();
    match message.content {
        None | Some(Content::Null) => {}
        Some(Content::Text(text)) if text.is_empty() => {}
        Some(Content::Text(text)) => content.push(ToolResultContent::Text(text)),
        Some(Content::Parts(parts)) => {
            for (j, part) in parts.into_iter().enumerate() {
                match part {
                    ContentPart::Text(p) if p.text.is_empty() => {}
                    ContentPart::Text(p) => content.push(ToolResultContent::Text(p.text)),
                    ContentPart::ImageUrl(p) => content.push(ToolResultContent::Image(image(
                        &format!("messages[{i}].content[{j}]"),
                        &p.image_url.url,
                    )?)),
                    _ => {
                        return Err(TranslateError::new(
                            format!("messages[{i}].content[{j}]"),
                            "a tool result can only have text and image parts on Bedrock",
                        ));
                    }
                }
            }
        }
    }
    let mut out = vec![ContentBlock::ToolResult(ToolResultBlock::new(id, content))];
    if message.cache_control.is_some() {
        out.push(ContentBlock::CachePoint(CachePoint::default_point()));
    }
    Ok(out)
}

/// An assistant message: its reasoning (signed thinking blocks), text, then tool calls.
fn assistant_blocks(i: usize, message: chat::Message) -> Result<Vec<ContentBlock>, TranslateError> {
    let mut out = Vec::new();
    for (j, block) in message.thinking_blocks.into_iter().flatten().enumerate() {
        let field = || format!("messages[{i}].thinking_blocks[{j}]");
        let reasoning = match block.get("type").and_then(Value::as_str) {
            Some("thinking") => ReasoningContent::Text(ReasoningText::new(
                block.get("thinking").and_then(Value::as_str).unwrap_or_default(),
                block.get("signature").and_then(Value::as_str).map(str::to_owned),
            )),
            Some("redacted_thinking") => match block.get("data").and_then(Value::as_str) {
                Some(data) => ReasoningContent::Redacted(data.to_owned()),
                None => return Err(TranslateError::new(field(), "a redacted_thinking block needs its data")),
            },
            _ => return Err(TranslateError::new(field(), "use thinking or redacted_thinking blocks")),
        };
        out.push(ContentBlock::ReasoningContent(reasoning));
    }
    match message.content {
        None | Some(Content::Null) => {}
        Some(Content::Text(text)) => text_with_cache(&mut out, text, message.cache_control),
        Some(Content::Parts(parts)) => {
            for (j, part) in parts.into_iter().enumerate() {
                match part {
                    ContentPart::Text(p) => text_with_cache(&mut out, p.text, p.cache_control),
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
        let field = || format!("messages[{i}].tool_calls[{j}].function.arguments");
        let arguments = call.function.arguments.trim();
        let input = if arguments.is_empty() {
            json!({})
        } else {
            serde_json::from_str::<Value>(arguments)
                .map_err(|e| TranslateError::new(field(), format!("not valid JSON: {e}")))?
        };
        if !input.is_object() {
            return Err(TranslateError::new(field(), "Bedrock takes a JSON object as a tool's input"));
        }
        out.push(ContentBlock::ToolUse(ToolUseBlock::new(call.id, call.function.name, input)));
    }
    Ok(out)
}

/// Whether `name` fits Bedrock's tool names: `[a-zA-Z0-9_-]{1,64}`.
fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn map_tools(tools: Vec<chat::Tool>, family: Family) -> Result<Vec<Tool>, TranslateError> {
    let mut out = Vec::with_capacity(tools.len());
    for (k, tool) in tools.into_iter().enumerate() {
        let function = match tool.function {
            Some(f) if tool.kind == "function" => f,
            _ => {
                return Err(TranslateError::new(
                    format!("tools[{k}].type"),
                    format!("tools of type {:?} are not supported for Bedrock: use function", tool.kind),
                ));
            }
        };
        if !valid_tool_name(&function.name) {
            return Err(TranslateError::new(
                format!("tools[{k}].function.name"),
                "Bedrock tool names are 1 to 64 letters, digits, `_` or `-`",
            ));
        }
        let schema = function.parameters.unwrap_or_else(|| json!({"type": "object", "properties": {}}));
        out.push(Tool::Spec(ToolSpec::new(function.name, function.description.filter(|d| !d.is_empty()), schema)));
        // Caching the tools is Claude's and Nova's; LiteLLM sends the point for any model.
        if tool.cache_control.is_some() && family != Family::GptOss {
            out.push(Tool::CachePoint(CachePoint::default_point()));
        }
    }
    Ok(out)
}

/// `tool_choice` as Converse's; `none` removes the tools (Converse has no `none`), which only
/// works when the conversation has no tool blocks, as Bedrock needs the tools defined for those.
fn map_tool_choice(
    choice: chat::ToolChoice,
    history_has_tools: bool,
    opts: &RequestOptions,
    specs: &mut Vec<Tool>,
) -> Result<Option<ToolChoice>, TranslateError> {
    let invalid = || {
        TranslateError::new(
            "tool_choice",
            "use auto, none, required or {\"type\": \"function\", \"function\": {\"name\"}}",
        )
    };
    Ok(Some(match choice {
        chat::ToolChoice::Mode(mode) => match mode.as_str() {
            "auto" => ToolChoice::auto(),
            "required" | "any" => ToolChoice::any(),
            "none" if !history_has_tools => {
                specs.clear();
                return Ok(None);
            }
            "none" if opts.drop_unsupported => return Ok(None),
            "none" => {
                return Err(TranslateError::new(
                    "tool_choice",
                    "Bedrock has no tool choice `none`, and the tools cannot be left out of a conversation \
                     with tool calls (set drop_params to drop it)",
                ));
            }
            _ => return Err(invalid()),
        },
        chat::ToolChoice::Named(named) => ToolChoice::tool(named.function.name),
        chat::ToolChoice::Other(_) => return Err(invalid()),
    }))
}

/// The schema of the forced `json_tool_call` for `response_format`, or `None` when nothing is
/// sent (`text`, and `json_object`, for which LiteLLM sends nothing either).
fn json_schema(format: chat::ResponseFormat) -> Result<Option<Value>, TranslateError> {
    match format.kind.as_str() {
        "text" | "json_object" => Ok(None),
        "json_schema" => match format.json_schema.and_then(|s| s.schema) {
            Some(Value::Object(mut schema)) => {
                schema.entry("type").or_insert_with(|| Value::from("object"));
                Ok(Some(Value::Object(schema)))
            }
            _ => Err(TranslateError::new("response_format.json_schema.schema", "must be a JSON Schema object")),
        },
        other => Err(TranslateError::new("response_format.type", format!("unknown format {other:?}"))),
    }
}
