//! [`chat_from_request`]: a Responses request as a chat request, for deployments that only serve
//! Chat Completions.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::items::{ContentPart, FunctionCallOutputItem, InputItem, InputMessage, InputRole, MessageContent};
use super::wire::{Input, ResponsesRequest, TextConfig, Tool, ToolChoice};
use crate::TranslateError;
use crate::chat::{self, ChatRequest, Content, FunctionDef, ImageUrlPart, JsonSchema, Message, ResponseFormat, Role};

/// Translates a Responses request into a chat request (the hub).
///
/// `instructions` becomes a leading system message; a string `input` one user message; input
/// items become messages in order: consecutive `function_call` items (and a `function_call`
/// right after an assistant message) one assistant message with `tool_calls`, each
/// `function_call_output` a `tool` message; `reasoning` items are dropped (a chat upstream cannot
/// take them back). Function tools, `tool_choice`, `text.format`, `reasoning.effort`,
/// `max_output_tokens` (as `max_tokens`, as LiteLLM does), sampling, `parallel_tool_calls`,
/// `user` and `stream` map; a stream asks for usage (`stream_options.include_usage`) so that
/// `response.completed` can carry it. `docs/dialects/responses.md` lists every field.
///
/// Refused, naming the field: server-side state (`previous_response_id`, `conversation`,
/// `prompt`, `item_reference` items, `background: true`), built-in tools (`tools[i]`), images and
/// files by `file_id`, and items this crate cannot express in chat.
///
/// ```
/// use switchyard_dialects::responses::{ResponsesRequest, chat_from_request};
///
/// let req: ResponsesRequest = serde_json::from_str(r#"{
///     "model": "gpt-4.1", "instructions": "Be terse.", "input": "Hello!", "max_output_tokens": 64
/// }"#)?;
/// let chat = chat_from_request(req)?;
/// assert_eq!(serde_json::to_value(&chat)?, serde_json::json!({
///     "model": "gpt-4.1",
///     "messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hello!"}],
///     "max_tokens": 64,
/// }));
///
/// let stateful: ResponsesRequest = serde_json::from_str(
///     r#"{"model": "m", "input": "and then?", "previous_response_id": "resp_1"}"#)?;
/// assert_eq!(chat_from_request(stateful).unwrap_err().field, "previous_response_id");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn chat_from_request(req: ResponsesRequest) -> Result<ChatRequest, TranslateError> {
    let ResponsesRequest {
        model,
        input,
        instructions,
        tools,
        tool_choice,
        text,
        reasoning,
        max_output_tokens,
        temperature,
        top_p,
        parallel_tool_calls,
        previous_response_id,
        conversation,
        prompt,
        store: _,
        stream,
        stream_options: _,
        metadata: _,
        user,
        background,
        include: _,
        truncation: _,
        top_logprobs: _,
        max_tool_calls: _,
        mut extra,
    } = req;

    let stateful = [
        (
            "previous_response_id",
            previous_response_id.is_some(),
            "conversation state must be resolved before translation",
        ),
        ("conversation", conversation.as_ref().is_some_and(|c| !c.is_null()), "conversations are stored by OpenAI"),
        ("prompt", prompt.as_ref().is_some_and(|p| !p.is_null()), "prompt templates are stored by OpenAI"),
        ("background", background == Some(true), "background responses need a stored, pollable response"),
        (
            "moderation",
            extra.get("moderation").is_some_and(|m| !m.is_null()),
            "moderated completions are an OpenAI feature",
        ),
    ];
    if let Some((field, _, reason)) = stateful.into_iter().find(|(_, present, _)| *present) {
        return Err(TranslateError::new(field, format!("{reason}; a chat deployment cannot honour it")));
    }
    // Server-side compaction: a chat upstream answers a context-length error instead.
    extra.remove("context_management");
    extra.remove("moderation");

    let mut messages = Vec::new();
    if let Some(text) = instructions.filter(|t| !t.is_empty()) {
        messages.push(Message::system(text));
    }
    match input {
        None => {}
        Some(Input::Text(text)) => messages.push(Message::user(text)),
        Some(Input::Items(items)) => {
            for (i, item) in items.into_iter().enumerate() {
                push_item(&mut messages, i, item)?;
            }
        }
    }
    if messages.is_empty() {
        return Err(TranslateError::new("input", "the request has neither input nor instructions"));
    }

    // A pass-through field that the translation also sets would be written twice: the
    // translated one wins.
    for key in [
        "messages",
        "max_tokens",
        "max_completion_tokens",
        "tools",
        "tool_choice",
        "response_format",
        "reasoning_effort",
        "stream_options",
    ] {
        extra.remove(key);
    }
    let mut out = chat_base(model, extra)?;
    out.messages = messages;
    out.tools = tools.map(map_tools).transpose()?;
    out.tool_choice = tool_choice.map(map_tool_choice).transpose()?;
    let (format, verbosity) = text.map(|TextConfig { format, verbosity, .. }| (format, verbosity)).unwrap_or_default();
    out.response_format = format.map(map_format).transpose()?.flatten();
    out.reasoning_effort = reasoning.and_then(|r| r.effort);
    out.max_tokens = max_output_tokens;
    out.temperature = temperature;
    out.top_p = top_p;
    out.parallel_tool_calls = parallel_tool_calls;
    out.user = user;
    out.stream = stream;
    if stream == Some(true) {
        out.stream_options = Some(chat::StreamOptions { include_usage: Some(true), ..Default::default() });
    }
    if let Some(verbosity) = verbosity {
        out.extra.insert("verbosity".to_owned(), Value::String(verbosity));
    }
    Ok(out)
}

/// A chat request for `model` holding the pass-through fields: chat parameters a client sent
/// with its Responses request (`seed`, `stop`, `n`, ...) land in their typed fields, so the
/// next dialect maps or refuses them as it would a chat client's; one that is not valid for
/// chat is refused, naming it.
fn chat_base(model: String, extra: Map<String, Value>) -> Result<ChatRequest, TranslateError> {
    let mut body = extra;
    body.insert("model".to_owned(), Value::String(model));
    body.insert("messages".to_owned(), Value::Array(Vec::new()));
    let body = Value::Object(body);
    ChatRequest::deserialize(&body).map_err(|e| {
        let alone = |key: &str, value: &Value| {
            ChatRequest::deserialize(&json!({"model": "", "messages": [], key: value})).is_ok()
        };
        let field = body
            .as_object()
            .and_then(|m| m.iter().find(|(k, v)| !alone(k, v)))
            .map_or_else(|| "model".to_owned(), |(k, _)| k.clone());
        TranslateError::new(field, format!("not a valid Chat Completions parameter: {e}"))
    })
}

/// Appends item `i` to `messages`.
fn push_item(messages: &mut Vec<Message>, i: usize, item: InputItem) -> Result<(), TranslateError> {
    match item {
        InputItem::Message(m) => messages.push(message(i, m)?),
        InputItem::FunctionCall(call) => {
            let call = chat::ToolCall::function(call.call_id, call.name, call.arguments);
            match messages.last_mut() {
                Some(last) if last.role == Role::Assistant => last.tool_calls.get_or_insert_with(Vec::new).push(call),
                _ => messages.push(Message::tool_calls(vec![call])),
            }
        }
        InputItem::FunctionCallOutput(output) => messages.push(tool_message(i, output)?),
        // Reasoning a chat upstream produced cannot be sent back to it in a form every chat
        // upstream accepts (and OpenAI's encrypted reasoning means nothing to another model).
        InputItem::Reasoning(_) => {}
        InputItem::ItemReference(r) => {
            return Err(TranslateError::new(
                format!("input[{i}]"),
                format!("item_reference {:?} points at an item stored by OpenAI; send the item itself", r.id),
            ));
        }
        InputItem::Other(value) => {
            let reason = match value.get("type").and_then(Value::as_str) {
                Some(kind) => format!("`{kind}` items have no Chat Completions equivalent"),
                None => "not a message, function_call, function_call_output or reasoning item".to_owned(),
            };
            return Err(TranslateError::new(format!("input[{i}]"), reason));
        }
    }
    Ok(())
}

fn message(i: usize, m: InputMessage) -> Result<Message, TranslateError> {
    let role = match m.role {
        InputRole::User => Role::User,
        InputRole::Assistant => Role::Assistant,
        InputRole::System => Role::System,
        InputRole::Developer => Role::Developer,
    };
    let content = match m.content {
        MessageContent::Text(text) => Content::Text(text),
        MessageContent::Parts(parts) => {
            let path = format!("input[{i}].content");
            let parts = parts
                .into_iter()
                .enumerate()
                .map(|(j, part)| chat_part(&path, j, part, role == Role::User))
                .collect::<Result<Vec<_>, _>>()?;
            collapse(parts, role == Role::Assistant)
        }
    };
    Ok(Message::new(role, Some(content)))
}

/// One text part is sent as a string; an assistant's text parts are joined into one string
/// (every chat upstream takes that).
fn collapse(parts: Vec<chat::ContentPart>, join: bool) -> Content {
    let all_text = parts.iter().all(|p| matches!(p, chat::ContentPart::Text(_)));
    if all_text && (join || parts.len() == 1) {
        let text = parts
            .into_iter()
            .filter_map(|p| match p {
                chat::ContentPart::Text(t) => Some(t.text),
                _ => None,
            })
            .collect::<String>();
        return Content::Text(text);
    }
    Content::Parts(parts)
}

/// Part `j` of the content at `path`; images and files only where `media` (user messages and
/// tool results).
fn chat_part(path: &str, j: usize, part: ContentPart, media: bool) -> Result<chat::ContentPart, TranslateError> {
    let at = format!("{path}[{j}]");
    let refuse_media = |kind: &str| {
        TranslateError::new(at.clone(), format!("`{kind}` parts are only accepted in user messages and tool outputs"))
    };
    Ok(match part {
        ContentPart::InputText(t) => chat::ContentPart::text(t.text),
        ContentPart::OutputText(t) => chat::ContentPart::text(t.text),
        // The model's refusal, as the words it said: every chat upstream takes text.
        ContentPart::Refusal(r) => chat::ContentPart::text(r.refusal),
        ContentPart::InputImage(_) if !media => return Err(refuse_media("input_image")),
        ContentPart::InputImage(image) => match (image.image_url, image.file_id) {
            (Some(url), _) => {
                let mut part = ImageUrlPart::new(url);
                part.image_url.detail = image.detail;
                chat::ContentPart::ImageUrl(part)
            }
            (None, Some(_)) => {
                return Err(TranslateError::new(
                    format!("{at}.file_id"),
                    "files uploaded to OpenAI cannot be read by a chat deployment: send `image_url` (a data: URL)",
                ));
            }
            (None, None) => return Err(TranslateError::new(at, "an input_image needs an `image_url`")),
        },
        ContentPart::InputFile(_) if !media => return Err(refuse_media("input_file")),
        ContentPart::InputFile(file) => {
            if file.file_id.is_some() {
                return Err(TranslateError::new(
                    format!("{at}.file_id"),
                    "files uploaded to OpenAI cannot be read by a chat deployment: send `file_data`",
                ));
            }
            if file.file_url.is_some() {
                return Err(TranslateError::new(
                    format!("{at}.file_url"),
                    "Chat Completions has no file URLs: send `file_data`",
                ));
            }
            let Some(data) = file.file_data else {
                return Err(TranslateError::new(at, "an input_file needs `file_data`"));
            };
            let mut inner = Map::new();
            inner.insert("file_data".to_owned(), Value::String(data));
            if let Some(name) = file.filename {
                inner.insert("filename".to_owned(), Value::String(name));
            }
            chat::ContentPart::Other(json!({"type": "file", "file": inner}))
        }
        ContentPart::Other(value) => {
            let kind = value.get("type").and_then(Value::as_str).unwrap_or("untyped");
            return Err(TranslateError::new(at, format!("`{kind}` parts have no Chat Completions equivalent")));
        }
    })
}

fn tool_message(i: usize, output: FunctionCallOutputItem) -> Result<Message, TranslateError> {
    let content = match output.output {
        MessageContent::Text(text) => Content::Text(text),
        MessageContent::Parts(parts) => {
            let path = format!("input[{i}].output");
            let parts = parts
                .into_iter()
                .enumerate()
                .map(|(j, part)| chat_part(&path, j, part, true))
                .collect::<Result<Vec<_>, _>>()?;
            collapse(parts, false)
        }
    };
    Ok(Message { tool_call_id: Some(output.call_id), ..Message::new(Role::Tool, Some(content)) })
}

fn map_tools(tools: Vec<Tool>) -> Result<Vec<chat::Tool>, TranslateError> {
    tools
        .into_iter()
        .enumerate()
        .map(|(i, tool)| {
            if tool.kind != "function" {
                return Err(TranslateError::new(
                    format!("tools[{i}]"),
                    format!(
                        "`{}` is a built-in tool of OpenAI's; a chat deployment can only call function tools",
                        tool.kind
                    ),
                ));
            }
            let Some(name) = tool.name else {
                return Err(TranslateError::new(format!("tools[{i}].name"), "a function tool needs a name"));
            };
            let mut function =
                FunctionDef { name, description: tool.description, parameters: tool.parameters, extra: Map::new() };
            if let Some(strict) = tool.strict {
                function.extra.insert("strict".to_owned(), Value::Bool(strict));
            }
            Ok(chat::Tool {
                kind: "function".to_owned(),
                function: Some(function),
                cache_control: None,
                extra: Map::new(),
            })
        })
        .collect()
}

fn map_tool_choice(choice: ToolChoice) -> Result<chat::ToolChoice, TranslateError> {
    let mode = |m: &str| Ok(chat::ToolChoice::Mode(m.to_owned()));
    match choice {
        ToolChoice::Mode(m) if matches!(m.as_str(), "auto" | "none" | "required") => mode(&m),
        ToolChoice::Function(f) => Ok(chat::ToolChoice::Named(chat::NamedToolChoice::function(f.name))),
        // `{"type": "auto" | "none" | "required"}`, which some clients send (LiteLLM accepts it).
        ToolChoice::Other(v) if matches!(v.get("type").and_then(Value::as_str), Some("auto" | "none" | "required")) => {
            mode(v.get("type").and_then(Value::as_str).unwrap_or("auto"))
        }
        ToolChoice::Mode(m) => {
            Err(TranslateError::new("tool_choice", format!("unknown mode {m:?}: use auto, none or required")))
        }
        ToolChoice::Other(v) => {
            let kind = v.get("type").and_then(Value::as_str).unwrap_or("untyped");
            Err(TranslateError::new(
                "tool_choice",
                format!(
                    "`{kind}` choices have no Chat Completions equivalent: use a mode or {{\"type\": \"function\", \"name\"}}"
                ),
            ))
        }
    }
}

fn map_format(format: super::wire::TextFormat) -> Result<Option<ResponseFormat>, TranslateError> {
    Ok(match format.kind.as_str() {
        // Plain text is what a chat upstream answers anyway.
        "text" => None,
        "json_object" => Some(ResponseFormat::new("json_object")),
        "json_schema" => {
            let Some(schema) = format.schema else {
                return Err(TranslateError::new("text.format.schema", "a json_schema format needs a schema"));
            };
            let mut spec = JsonSchema::new(format.name.unwrap_or_else(|| "response".to_owned()), schema);
            if let Some(strict) = format.strict {
                spec.extra.insert("strict".to_owned(), Value::Bool(strict));
            }
            if let Some(description) = format.description {
                spec.extra.insert("description".to_owned(), Value::String(description));
            }
            let mut out = ResponseFormat::new("json_schema");
            out.json_schema = Some(spec);
            Some(out)
        }
        other => {
            return Err(TranslateError::new(
                "text.format.type",
                format!("unknown format {other:?}: use text, json_object or json_schema"),
            ));
        }
    })
}
