//! [`request_from_chat`]: an OpenAI chat request as a Cohere v2 Chat request.

use serde_json::{Value, json};

use super::RequestOptions;
use super::content::{Content, ContentItem, ImageUrl};
use super::wire::{ChatV2Request, Message, ResponseFormat, Role, Thinking, Tool, ToolCall};
use crate::TranslateError;
use crate::chat::{self, ChatRequest, ContentPart};

/// LiteLLM's reasoning budgets (`litellm/constants.py`, 1.100, as the Anthropic dialect uses
/// them) as Cohere's `thinking.token_budget`; `none` turns thinking off.
fn thinking_for(effort: &str) -> Result<Thinking, TranslateError> {
    Ok(Thinking::enabled(match effort {
        "none" => return Ok(Thinking::disabled()),
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

/// Translates an OpenAI chat request into a Cohere v2 Chat request for `opts.model`.
///
/// Messages keep their order and roles (`developer` becomes `system`); content strings and text
/// and image parts cross as they are; an assistant's `reasoning_content` next to tool calls
/// becomes its `tool_plan`; tools keep OpenAI's shape. `stop` becomes `stop_sequences`, `top_p`
/// `p`, `top_k` `k`, `tool_choice` `REQUIRED` / `NONE`, `response_format` `json_object` (with the
/// schema of `json_schema`) and `reasoning_effort` `thinking`. What Cohere cannot honour (`n` > 1,
/// `logprobs`, `logit_bias`, a forced named tool, `parallel_tool_calls: false`, audio) is refused
/// naming the field, or dropped with `opts.drop_unsupported`; fields this crate does not know pass
/// through, so Cohere-native ones (`documents`, `citation_options`, `safety_mode`) work.
/// `docs/dialects/cohere.md` lists every field.
///
/// ```
/// use switchyard_dialects::chat::{ChatRequest, Message};
/// use switchyard_dialects::cohere::{RequestOptions, request_from_chat};
///
/// let mut req = ChatRequest::new("command", vec![Message::system("Be terse."), Message::user("Hi")]);
/// req.top_p = serde_json::Number::from_f64(0.9);
/// let body = request_from_chat(req, &RequestOptions::new("command-a-03-2025"))?;
/// assert_eq!(serde_json::to_value(&body)?, serde_json::json!({
///     "model": "command-a-03-2025",
///     "messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"}],
///     "p": 0.9,
/// }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn request_from_chat(req: ChatRequest, opts: &RequestOptions) -> Result<ChatV2Request, TranslateError> {
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
        user: _,
        tools,
        tool_choice,
        parallel_tool_calls: _,
        response_format,
        reasoning_effort,
        seed,
        frequency_penalty,
        presence_penalty,
        mut extra,
        ..
    } = req;

    let messages = messages.into_iter().enumerate().map(|(i, m)| message(i, m)).collect::<Result<Vec<_>, _>>()?;
    if messages.is_empty() {
        return Err(TranslateError::new("messages", "Cohere needs at least one message"));
    }

    let k = match extra.remove("top_k") {
        Some(value) => {
            Some(value.as_u64().ok_or_else(|| TranslateError::new("top_k", "must be a non-negative integer"))?)
        }
        None => None,
    };
    let thinking = match extra.remove("thinking") {
        Some(value) => Some(
            serde_json::from_value::<Thinking>(value)
                .map_err(|e| TranslateError::new("thinking", format!("not a Cohere thinking object: {e}")))?,
        ),
        None => reasoning_effort.as_deref().map(thinking_for).transpose()?,
    };

    let (tools, strict_tools) = match tools {
        Some(tools) => {
            let (tools, strict) = map_tools(tools)?;
            (Some(tools), strict)
        }
        None => (None, None),
    };
    let mut choice = tool_choice.map(|c| map_tool_choice(c, opts)).transpose()?.flatten();
    // Cohere refuses `REQUIRED` without tools; `NONE` without tools says nothing.
    if tools.as_ref().is_none_or(Vec::is_empty) {
        choice = None;
    }

    let mut out = ChatV2Request::new(opts.model.clone(), messages);
    out.tools = tools;
    out.strict_tools = strict_tools;
    out.response_format = response_format.map(map_response_format).transpose()?.flatten();
    out.max_tokens = max_completion_tokens.or(max_tokens);
    out.stop_sequences = stop.map(chat::Stop::into_vec);
    out.temperature = temperature;
    out.seed = seed;
    out.frequency_penalty = frequency_penalty;
    out.presence_penalty = presence_penalty;
    out.k = k;
    out.p = top_p;
    out.tool_choice = choice;
    out.thinking = thinking;
    out.stream = stream;
    // A pass-through field that the translation also sets (a native `p` next to `top_p`) would be
    // written twice: the translated one wins.
    let set = [
        ("model", true),
        ("messages", true),
        ("tools", out.tools.is_some()),
        ("strict_tools", out.strict_tools.is_some()),
        ("response_format", out.response_format.is_some()),
        ("max_tokens", out.max_tokens.is_some()),
        ("stop_sequences", out.stop_sequences.is_some()),
        ("temperature", out.temperature.is_some()),
        ("seed", out.seed.is_some()),
        ("frequency_penalty", out.frequency_penalty.is_some()),
        ("presence_penalty", out.presence_penalty.is_some()),
        ("k", out.k.is_some()),
        ("p", out.p.is_some()),
        ("tool_choice", out.tool_choice.is_some()),
        ("stream", out.stream.is_some()),
    ];
    extra.retain(|key, _| !set.iter().any(|(name, is_set)| *is_set && name == key));
    out.extra = extra;
    Ok(out)
}

/// Refuses (or, with `drop_unsupported`, ignores) the parameters Cohere cannot honour.
fn refuse_unsupported(req: &ChatRequest, opts: &RequestOptions) -> Result<(), TranslateError> {
    if opts.drop_unsupported {
        return Ok(());
    }
    let refused = [
        ("n", req.n.is_some_and(|n| n > 1), "Cohere's v2 Chat API returns one choice per request"),
        (
            "logprobs",
            req.logprobs == Some(true),
            "Cohere's log probabilities (per text chunk, with token ids) do not translate to OpenAI's",
        ),
        ("top_logprobs", req.top_logprobs.is_some(), "Cohere returns no top log probabilities"),
        ("logit_bias", req.logit_bias.is_some(), "Cohere has no token biases"),
        ("parallel_tool_calls", req.parallel_tool_calls == Some(false), "Cohere cannot limit a turn to one tool call"),
        (
            "modalities",
            req.modalities.as_ref().is_some_and(|m| m.iter().any(|m| m != "text")),
            "Cohere answers with text only",
        ),
        ("audio", req.audio.is_some(), "Cohere answers with text only"),
    ];
    match refused.into_iter().find(|(_, present, _)| *present) {
        Some((field, _, reason)) => Err(TranslateError::new(field, format!("{reason} (set drop_params to drop it)"))),
        None => Ok(()),
    }
}

/// One chat message as a Cohere message.
fn message(i: usize, message: chat::Message) -> Result<Message, TranslateError> {
    match message.role {
        chat::Role::System | chat::Role::Developer => {
            let content = text_content(i, message.content, "a system message can only have text parts")?;
            Ok(Message::new(Role::System, Some(content.unwrap_or_else(|| Content::Text(String::new())))))
        }
        chat::Role::User => {
            let content = user_content(i, message.content)?
                .ok_or_else(|| TranslateError::new(format!("messages[{i}].content"), "a user message needs content"))?;
            Ok(Message::new(Role::User, Some(content)))
        }
        chat::Role::Assistant => assistant(i, message),
        chat::Role::Tool => {
            let Some(id) = message.tool_call_id else {
                return Err(TranslateError::new(
                    format!("messages[{i}].tool_call_id"),
                    "a tool message must name the call it answers",
                ));
            };
            let content = text_content(i, message.content, "a tool result can only have text parts for Cohere")?;
            let mut out = Message::new(Role::Tool, Some(content.unwrap_or_else(|| Content::Text(String::new()))));
            out.tool_call_id = Some(id);
            Ok(out)
        }
        chat::Role::Function => Err(TranslateError::new(
            format!("messages[{i}].role"),
            "the deprecated `function` role has no Cohere equivalent: use `tool`",
        )),
    }
}

/// Content of text only: a string stays a string, text parts become text items.
fn text_content(i: usize, content: Option<chat::Content>, refusal: &str) -> Result<Option<Content>, TranslateError> {
    Ok(match content {
        None | Some(chat::Content::Null) => None,
        Some(chat::Content::Text(text)) => Some(Content::Text(text)),
        Some(chat::Content::Parts(parts)) => {
            let mut items = Vec::with_capacity(parts.len());
            for (j, part) in parts.into_iter().enumerate() {
                match part {
                    ContentPart::Text(p) => items.push(ContentItem::text(p.text)),
                    _ => return Err(TranslateError::new(format!("messages[{i}].content[{j}]"), refusal)),
                }
            }
            Some(Content::Items(items))
        }
    })
}

/// A user message's content: a string, or text and image items.
fn user_content(i: usize, content: Option<chat::Content>) -> Result<Option<Content>, TranslateError> {
    let parts = match content {
        Some(chat::Content::Parts(parts)) => parts,
        other => return text_content(i, other, "unreachable: not parts"),
    };
    let mut items = Vec::with_capacity(parts.len());
    for (j, part) in parts.into_iter().enumerate() {
        items.push(match part {
            ContentPart::Text(p) => ContentItem::text(p.text),
            ContentPart::ImageUrl(p) => {
                let url = p.image_url.url;
                if !is_image_url(&url) {
                    return Err(TranslateError::new(
                        format!("messages[{i}].content[{j}].image_url.url"),
                        "must be a data: URI or an http(s) URL",
                    ));
                }
                ContentItem::ImageUrl { image_url: ImageUrl { detail: p.image_url.detail, ..ImageUrl::new(url) } }
            }
            ContentPart::Other(v) => {
                let kind = crate::tagged::kind(&v).unwrap_or("unknown");
                return Err(TranslateError::new(
                    format!("messages[{i}].content[{j}]"),
                    format!("content parts of type {kind:?} are not supported for Cohere"),
                ));
            }
        });
    }
    Ok(Some(Content::Items(items)))
}

/// A `data:` URI or an http(s) URL; nothing is fetched.
fn is_image_url(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("data:") || lower.starts_with("https://") || lower.starts_with("http://")
}

/// An assistant message: its text, its tool calls, and `reasoning_content` as the tool plan.
fn assistant(i: usize, message: chat::Message) -> Result<Message, TranslateError> {
    let content = text_content(i, message.content, "an assistant message can only have text parts")?;
    let mut out = Message::new(Role::Assistant, content);
    let calls: Vec<ToolCall> = message
        .tool_calls
        .into_iter()
        .flatten()
        .map(|call| ToolCall::function(call.id, call.function.name, call.function.arguments))
        .collect();
    if !calls.is_empty() {
        // Cohere's tool use expects the plan it wrote before the calls back with them; a
        // client-sent `tool_plan` (kept in `extra`) wins.
        out.tool_plan = message.reasoning_content.filter(|plan| !plan.is_empty());
        out.tool_calls = Some(calls);
    }
    if out.content.is_none() && out.tool_calls.is_none() {
        // Cohere needs content or tool calls on an assistant turn.
        out.content = Some(Content::Text(String::new()));
    }
    if let Some(plan) = message.extra.get("tool_plan").and_then(Value::as_str) {
        out.tool_plan = Some(plan.to_owned());
    }
    Ok(out)
}

/// Function tools, and Cohere's request-wide `strict_tools` when every tool is `strict`.
fn map_tools(tools: Vec<chat::Tool>) -> Result<(Vec<Tool>, Option<bool>), TranslateError> {
    let mut strict = !tools.is_empty();
    let mut out = Vec::with_capacity(tools.len());
    for (k, tool) in tools.into_iter().enumerate() {
        let function = match tool.function {
            Some(f) if tool.kind == "function" => f,
            _ => {
                return Err(TranslateError::new(
                    format!("tools[{k}].type"),
                    format!("tools of type {:?} are not supported for Cohere: use function", tool.kind),
                ));
            }
        };
        strict &= function.extra.get("strict") == Some(&Value::Bool(true));
        let parameters = function.parameters.unwrap_or_else(|| json!({"type": "object", "properties": {}}));
        out.push(Tool::function(function.name, function.description, parameters));
    }
    Ok((out, strict.then_some(true)))
}

/// `tool_choice`; `None` for `auto` (Cohere's default).
fn map_tool_choice(choice: chat::ToolChoice, opts: &RequestOptions) -> Result<Option<String>, TranslateError> {
    let invalid = || TranslateError::new("tool_choice", "use auto, none or required");
    match choice {
        chat::ToolChoice::Mode(mode) => match mode.as_str() {
            "auto" => Ok(None),
            "required" => Ok(Some("REQUIRED".to_owned())),
            "none" => Ok(Some("NONE".to_owned())),
            _ => Err(invalid()),
        },
        chat::ToolChoice::Named(_) if opts.drop_unsupported => Ok(None),
        chat::ToolChoice::Named(named) => Err(TranslateError::new(
            "tool_choice",
            format!(
                "Cohere cannot force the tool {:?}: use required (set drop_params to drop it)",
                named.function.name
            ),
        )),
        chat::ToolChoice::Other(_) => Err(invalid()),
    }
}

/// `response_format`: `text` as is, `json_object` as is, `json_schema` as `json_object` with the
/// schema.
fn map_response_format(format: chat::ResponseFormat) -> Result<Option<ResponseFormat>, TranslateError> {
    match format.kind.as_str() {
        "text" => Ok(Some(ResponseFormat::new("text", None))),
        "json_object" => Ok(Some(ResponseFormat::new("json_object", None))),
        "json_schema" => match format.json_schema.and_then(|s| s.schema) {
            Some(schema @ Value::Object(_)) => Ok(Some(ResponseFormat::new("json_object", Some(schema)))),
            _ => Err(TranslateError::new("response_format.json_schema.schema", "must be a JSON Schema object")),
        },
        other => Err(TranslateError::new("response_format.type", format!("unknown format {other:?}"))),
    }
}
