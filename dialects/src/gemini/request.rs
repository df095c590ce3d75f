//! [`request_from_chat`]: an OpenAI chat request as a Gemini `generateContent` request.

use serde_json::{Map, Value, json};

use super::RequestOptions;
use super::ids::{SIGNATURE_SEPARATOR, split_call_id};
use super::schema::{gemini_schema, is_empty_object};
use super::wire::{
    Blob, Content, FileData, FunctionCall, FunctionDeclaration, FunctionResponse, GenerateContentRequest,
    GenerationConfig, Part, ThinkingConfig, Tool, ToolConfig,
};
use crate::TranslateError;
use crate::chat::{self, ChatRequest, ContentPart};

/// Google's documented placeholder for a function call without its thought signature (history
/// from another model): base64 of `skip_thought_signature_validator`.
pub(crate) const PLACEHOLDER_SIGNATURE: &str = "c2tpcF90aG91Z2h0X3NpZ25hdHVyZV92YWxpZGF0b3I=";

/// OpenAI fields that change nothing Gemini generates, dropped without a word: `user` (no
/// end-user field), `store`, `metadata` (OpenAI's stored completions), `service_tier`,
/// `prompt_cache_key` and `safety_identifier` (OpenAI's routing and abuse keys).
const IGNORED: [&str; 5] = ["store", "metadata", "service_tier", "prompt_cache_key", "safety_identifier"];

/// Translates an OpenAI chat request into a Gemini `generateContent` request (the model and
/// `stream` are in the URL, so neither is in the body).
///
/// System and developer messages become `systemInstruction`; `assistant` turns become `model`
/// turns, their tool calls `functionCall` parts; `tool` messages become `functionResponse` parts
/// of a `user` turn; consecutive turns of one role are merged. Sampling, limits, stop sequences,
/// `n`, penalties, `seed`, log probabilities, tools, `tool_choice`, `response_format` and
/// `reasoning_effort` map into `generationConfig`, `tools` and `toolConfig`;
/// `docs/dialects/gemini.md` lists every field. Fields Gemini cannot honour (`logit_bias`, audio,
/// OpenAI-only fields it would refuse) are refused naming the field, or dropped when
/// `opts.drop_unsupported`.
///
/// ```
/// use switchyard_dialects::chat::{ChatRequest, Message};
/// use switchyard_dialects::gemini::{RequestOptions, request_from_chat};
///
/// let req = ChatRequest::new("flash", vec![Message::system("Be terse."), Message::user("Hello")]);
/// let body = request_from_chat(req, &RequestOptions::new("gemini-2.5-flash"))?;
/// assert_eq!(serde_json::to_value(&body)?, serde_json::json!({
///     "systemInstruction": {"parts": [{"text": "Be terse."}]},
///     "contents": [{"role": "user", "parts": [{"text": "Hello"}]}],
/// }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn request_from_chat(req: ChatRequest, opts: &RequestOptions) -> Result<GenerateContentRequest, TranslateError> {
    refuse_unsupported(&req, opts)?;
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
        parallel_tool_calls: _,
        response_format,
        reasoning_effort,
        n,
        logprobs,
        top_logprobs,
        logit_bias: _,
        presence_penalty,
        frequency_penalty,
        seed,
        modalities: _,
        audio: _,
        mut extra,
        ..
    } = req;

    let (system, contents) = conversation(messages, opts)?;

    let mut config = GenerationConfig {
        temperature,
        top_p,
        max_output_tokens: max_completion_tokens.or(max_tokens),
        stop_sequences: stop.map(chat::Stop::into_vec),
        candidate_count: n.filter(|n| *n != 1),
        presence_penalty,
        frequency_penalty,
        seed,
        response_logprobs: logprobs.filter(|l| *l),
        logprobs: top_logprobs.filter(|_| logprobs == Some(true)),
        ..GenerationConfig::default()
    };
    if let Some(value) = extra.remove("top_k") {
        config.top_k =
            Some(value.as_u64().ok_or_else(|| TranslateError::new("top_k", "must be a non-negative integer"))?);
    }
    if let Some(format) = response_format {
        json_mode(format, &mut config)?;
    }
    config.thinking_config = match extra.remove("thinking") {
        Some(thinking) => Some(thinking_from_anthropic(&thinking)?),
        None => reasoning_effort.as_deref().map(|effort| thinking_from_effort(effort, opts)).transpose()?,
    };

    let declarations = tools.map(map_tools).transpose()?;
    let has_functions = declarations.as_ref().is_some_and(|d| !d.is_empty());
    let tool_config = match tool_choice {
        Some(choice) if has_functions => Some(map_tool_choice(choice)?),
        // Gemini refuses a function-calling config without functions; there is nothing to force.
        _ => None,
    };

    let mut out = GenerateContentRequest::new(contents);
    out.system_instruction = system;
    out.tools = declarations.filter(|d| !d.is_empty()).map(|d| vec![Tool::functions(d)]);
    out.tool_config = tool_config;
    out.generation_config = Some(config).filter(|c| *c != GenerationConfig::default());
    for key in ["safety_settings", "safetySettings"] {
        if let Some(value) = extra.remove(key) {
            let Value::Array(settings) = value else {
                return Err(TranslateError::new(key, "must be an array of {category, threshold}"));
            };
            out.safety_settings = Some(settings);
        }
    }
    for key in ["cached_content", "cachedContent"] {
        if let Some(value) = extra.remove(key) {
            let Value::String(name) = value else {
                return Err(TranslateError::new(key, "must be the name of a cached content"));
            };
            out.cached_content = Some(name);
        }
    }
    if let Some(labels) = extra.remove("labels") {
        out.extra.insert("labels".to_owned(), labels);
    }
    for key in IGNORED {
        extra.remove(key);
    }
    // Gemini refuses unknown fields ("Invalid JSON payload received. Unknown name"): say which.
    if let Some(key) = extra.keys().next()
        && !opts.drop_unsupported
    {
        return Err(TranslateError::new(
            key.clone(),
            "Gemini has no such parameter (set drop_params to drop it)".to_owned(),
        ));
    }
    Ok(out)
}

/// Refuses (or, with `drop_unsupported`, ignores) the parameters Gemini cannot honour.
fn refuse_unsupported(req: &ChatRequest, opts: &RequestOptions) -> Result<(), TranslateError> {
    if opts.drop_unsupported {
        return Ok(());
    }
    let refused = [
        ("logit_bias", req.logit_bias.is_some(), "Gemini has no token biases"),
        (
            "modalities",
            req.modalities.as_ref().is_some_and(|m| m.iter().any(|m| m != "text")),
            "this gateway translates Gemini's text answers only",
        ),
        ("audio", req.audio.is_some(), "this gateway translates Gemini's text answers only"),
        (
            "parallel_tool_calls",
            req.parallel_tool_calls == Some(false),
            "Gemini cannot be limited to one function call per turn",
        ),
    ];
    match refused.into_iter().find(|(_, present, _)| *present) {
        Some((field, _, reason)) => Err(TranslateError::new(field, format!("{reason} (set drop_params to drop it)"))),
        None => Ok(()),
    }
}

/// The system instruction and the turns of `messages`.
fn conversation(
    messages: Vec<chat::Message>,
    opts: &RequestOptions,
) -> Result<(Option<Content>, Vec<Content>), TranslateError> {
    let mut system: Vec<Part> = Vec::new();
    let mut turns: Vec<Content> = Vec::new();
    // The names of the calls so far, by id: a `functionResponse` names its function, a `tool`
    // message only the call's id.
    let mut calls: Vec<(String, String)> = Vec::new();
    for (i, message) in messages.into_iter().enumerate() {
        match message.role {
            chat::Role::System | chat::Role::Developer => system.extend(text_parts(i, message.content, "system")?),
            chat::Role::User => {
                let parts = user_parts(i, message.content)?;
                push(&mut turns, "user", parts);
            }
            chat::Role::Assistant => {
                let parts = model_parts(i, message, &mut calls, opts)?;
                push(&mut turns, "model", parts);
            }
            chat::Role::Tool => {
                let part = function_response(i, message, &calls, opts)?;
                push(&mut turns, "user", vec![part]);
            }
            chat::Role::Function => {
                let Some(name) = message.name.clone() else {
                    return Err(TranslateError::new(format!("messages[{i}].name"), "a function message needs a name"));
                };
                let text = plain_text(i, message.content)?;
                push(&mut turns, "user", vec![Part::function_response(FunctionResponse::new(name, response(&text)))]);
            }
        }
    }
    if turns.is_empty() {
        return Err(TranslateError::new("messages", "Gemini needs at least one non-system message with content"));
    }
    let system = (!system.is_empty()).then(|| Content::parts(system));
    Ok((system, turns))
}

/// Appends `parts` to the last turn when it has `role`, else starts a turn; nothing for none.
fn push(turns: &mut Vec<Content>, role: &str, parts: Vec<Part>) {
    if parts.is_empty() {
        return;
    }
    match turns.last_mut() {
        Some(last) if last.role.as_deref() == Some(role) => last.parts.extend(parts),
        _ => turns.push(Content::new(role, parts)),
    }
}

/// The text parts of a system or assistant message (empty text skipped: Gemini refuses it).
fn text_parts(i: usize, content: Option<chat::Content>, whose: &str) -> Result<Vec<Part>, TranslateError> {
    Ok(match content {
        None | Some(chat::Content::Null) => Vec::new(),
        Some(chat::Content::Text(text)) if text.is_empty() => Vec::new(),
        Some(chat::Content::Text(text)) => vec![Part::text(text)],
        Some(chat::Content::Parts(parts)) => {
            let mut out = Vec::new();
            for (j, part) in parts.into_iter().enumerate() {
                match part {
                    ContentPart::Text(p) if p.text.is_empty() => {}
                    ContentPart::Text(p) => out.push(Part::text(p.text)),
                    _ => {
                        return Err(TranslateError::new(
                            format!("messages[{i}].content[{j}]"),
                            format!("a {whose} message can only have text parts"),
                        ));
                    }
                }
            }
            out
        }
    })
}

/// The text of a tool result: a string, or its text parts joined.
fn plain_text(i: usize, content: Option<chat::Content>) -> Result<String, TranslateError> {
    let parts = text_parts(i, content, "tool")?;
    Ok(parts.into_iter().filter_map(|p| p.text).collect())
}

/// The parts of a user message: text, and images as `inlineData` or `fileData`.
fn user_parts(i: usize, content: Option<chat::Content>) -> Result<Vec<Part>, TranslateError> {
    let parts = match content {
        Some(chat::Content::Parts(parts)) => parts,
        other => return text_parts(i, other, "user"),
    };
    let mut out = Vec::with_capacity(parts.len());
    for (j, part) in parts.into_iter().enumerate() {
        match part {
            ContentPart::Text(p) if p.text.is_empty() => {}
            ContentPart::Text(p) => out.push(Part::text(p.text)),
            ContentPart::ImageUrl(p) => {
                let field = format!("messages[{i}].content[{j}].image_url.url");
                out.push(image_part(&p.image_url, &field)?);
            }
            ContentPart::Other(v) => {
                let kind = crate::tagged::kind(&v).unwrap_or("unknown");
                return Err(TranslateError::new(
                    format!("messages[{i}].content[{j}]"),
                    format!("content parts of type {kind:?} are not supported for Gemini"),
                ));
            }
        }
    }
    Ok(out)
}

/// An image: `inlineData` for a `data:` URL, `fileData` for an http(s) or `gs://` URL (Gemini
/// fetches it; the gateway fetches nothing), with the media type the client gave (`format`,
/// `mime_type`) or the URL's extension shows, when either does.
fn image_part(image: &chat::ImageUrl, field: &str) -> Result<Part, TranslateError> {
    let url = image.url.as_str();
    if let Some(rest) = url.strip_prefix("data:") {
        let Some((media_type, data)) = rest.split_once(";base64,") else {
            return Err(TranslateError::new(field, "a data URL must be data:<media type>;base64,<data>"));
        };
        if media_type.is_empty() || data.is_empty() {
            return Err(TranslateError::new(field, "a data URL must be data:<media type>;base64,<data>"));
        }
        return Ok(Part { inline_data: Some(Blob::new(media_type, data)), ..Part::default() });
    }
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    if !(lower.starts_with("https://") || lower.starts_with("http://") || lower.starts_with("gs://")) {
        return Err(TranslateError::new(field, "must be a data:<media type>;base64,<data> URL or an http(s) URL"));
    }
    let given = ["format", "mime_type"].iter().find_map(|k| image.extra.get(*k)?.as_str().map(str::to_owned));
    Ok(Part { file_data: Some(FileData::new(url, given.or_else(|| mime_from_extension(url)))), ..Part::default() })
}

/// The image media type of a URL's extension (its path, before any query).
fn mime_from_extension(url: &str) -> Option<String> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let extension = path.rsplit_once('.')?.1.to_ascii_lowercase();
    let mime = match extension.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "gif" => "image/gif",
        "heic" => "image/heic",
        "heif" => "image/heif",
        "pdf" => "application/pdf",
        _ => return None,
    };
    Some(mime.to_owned())
}

/// An assistant message: its text, then each tool call as a `functionCall` part (with the thought
/// signature its id carries).
fn model_parts(
    i: usize,
    message: chat::Message,
    calls: &mut Vec<(String, String)>,
    opts: &RequestOptions,
) -> Result<Vec<Part>, TranslateError> {
    let mut parts = text_parts(i, message.content, "assistant")?;
    for (j, call) in message.tool_calls.into_iter().flatten().enumerate() {
        let arguments = call.function.arguments.trim();
        let args = if arguments.is_empty() {
            json!({})
        } else {
            serde_json::from_str::<Value>(arguments).map_err(|e| {
                TranslateError::new(
                    format!("messages[{i}].tool_calls[{j}].function.arguments"),
                    format!("not valid JSON: {e}"),
                )
            })?
        };
        let (id, signature) = split_call_id(&call.id);
        let mut function_call = FunctionCall::new(call.function.name.clone(), args);
        if opts.gemini_3 && !id.is_empty() {
            function_call.id = Some(id.to_owned());
        }
        let mut part = Part::function_call(function_call);
        // Gemini 3 refuses history whose first call of a turn has no signature; Google documents
        // this placeholder for calls that never had one (another model's history).
        part.thought_signature = match signature {
            Some(signature) => Some(signature.to_owned()),
            None if opts.gemini_3 && j == 0 => Some(PLACEHOLDER_SIGNATURE.to_owned()),
            None => None,
        };
        calls.push((call.id, call.function.name));
        parts.push(part);
    }
    Ok(parts)
}

/// A `tool` message as a `functionResponse` part, named after the call it answers.
fn function_response(
    i: usize,
    message: chat::Message,
    calls: &[(String, String)],
    opts: &RequestOptions,
) -> Result<Part, TranslateError> {
    let Some(call_id) = message.tool_call_id.clone() else {
        return Err(TranslateError::new(
            format!("messages[{i}].tool_call_id"),
            "a tool message must name the call it answers",
        ));
    };
    let name = calls
        .iter()
        .rev()
        .find(|(id, _)| *id == call_id)
        .map(|(_, name)| name.clone())
        .or_else(|| message.name.clone())
        .ok_or_else(|| {
            TranslateError::new(
                format!("messages[{i}].tool_call_id"),
                "answers no earlier tool call: Gemini needs the function's name",
            )
        })?;
    let text = plain_text(i, message.content)?;
    let mut result = FunctionResponse::new(name, response(&text));
    if opts.gemini_3 {
        let (id, _) = split_call_id(&call_id);
        if !id.is_empty() {
            result.id = Some(id.to_owned());
        }
    }
    Ok(Part::function_response(result))
}

/// A tool's text as `functionResponse.response`, which must be an object: a JSON object as it is,
/// anything else as `{"content": text}` (as LiteLLM).
fn response(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(object)) => Value::Object(object),
        _ => json!({"content": text}),
    }
}

fn map_tools(tools: Vec<chat::Tool>) -> Result<Vec<FunctionDeclaration>, TranslateError> {
    tools
        .into_iter()
        .enumerate()
        .map(|(k, tool)| {
            let function = match tool.function {
                Some(f) if tool.kind == "function" => f,
                _ => {
                    return Err(TranslateError::new(
                        format!("tools[{k}].type"),
                        format!("tools of type {:?} are not supported for Gemini: use function", tool.kind),
                    ));
                }
            };
            if function.name.contains(SIGNATURE_SEPARATOR) {
                return Err(TranslateError::new(
                    format!("tools[{k}].function.name"),
                    format!("{SIGNATURE_SEPARATOR:?} is reserved for thought signatures"),
                ));
            }
            let parameters = match &function.parameters {
                Some(schema) => Some(gemini_schema(schema, &format!("tools[{k}].function.parameters"))?),
                None => None,
            };
            let parameters = parameters.filter(|p| !is_empty_object(p));
            Ok(FunctionDeclaration::new(function.name, function.description, parameters))
        })
        .collect()
}

/// `tool_choice` as `toolConfig.functionCallingConfig`.
fn map_tool_choice(choice: chat::ToolChoice) -> Result<ToolConfig, TranslateError> {
    let invalid = || {
        TranslateError::new(
            "tool_choice",
            "use auto, none, required or {\"type\": \"function\", \"function\": {\"name\"}}",
        )
    };
    Ok(match choice {
        chat::ToolChoice::Mode(mode) => match mode.as_str() {
            "auto" => ToolConfig::mode("AUTO", None),
            "required" | "any" => ToolConfig::mode("ANY", None),
            "none" => ToolConfig::mode("NONE", None),
            _ => return Err(invalid()),
        },
        chat::ToolChoice::Named(named) => ToolConfig::mode("ANY", Some(vec![named.function.name])),
        chat::ToolChoice::Other(_) => return Err(invalid()),
    })
}

/// `response_format` as `responseMimeType` and `responseJsonSchema`.
fn json_mode(format: chat::ResponseFormat, config: &mut GenerationConfig) -> Result<(), TranslateError> {
    match format.kind.as_str() {
        "text" => {}
        "json_object" => config.response_mime_type = Some("application/json".to_owned()),
        "json_schema" => match format.json_schema.and_then(|s| s.schema) {
            Some(Value::Object(schema)) => {
                config.response_mime_type = Some("application/json".to_owned());
                config.response_json_schema = Some(Value::Object(without_strict(schema)));
            }
            _ => return Err(TranslateError::new("response_format.json_schema.schema", "must be a JSON Schema object")),
        },
        other => return Err(TranslateError::new("response_format.type", format!("unknown format {other:?}"))),
    }
    Ok(())
}

/// The schema without OpenAI's `strict` flags, which Gemini does not know (as LiteLLM's
/// `_remove_strict_from_schema`); nested `strict` keys that are property names stay.
fn without_strict(mut schema: Map<String, Value>) -> Map<String, Value> {
    schema.remove("strict");
    schema
}

/// LiteLLM's thinking budgets for `reasoning_effort` (`litellm/constants.py`, 1.100), or Gemini
/// 3's thinking levels.
fn thinking_from_effort(effort: &str, opts: &RequestOptions) -> Result<ThinkingConfig, TranslateError> {
    let off = matches!(effort, "none" | "disable");
    let mut config = ThinkingConfig { include_thoughts: Some(!off), ..ThinkingConfig::default() };
    if opts.gemini_3 {
        let level = match effort {
            "minimal" | "none" | "disable" => "low",
            "low" => "low",
            "medium" | "high" | "xhigh" | "max" => "high",
            _ => return Err(unknown_effort(effort)),
        };
        config.thinking_level = Some(level.to_owned());
        return Ok(config);
    }
    config.thinking_budget = Some(match effort {
        "none" | "disable" => 0,
        "minimal" => 128,
        "low" => 1024,
        "medium" => 2048,
        "high" => 4096,
        "xhigh" => 8192,
        "max" => 16384,
        _ => return Err(unknown_effort(effort)),
    });
    Ok(config)
}

fn unknown_effort(effort: &str) -> TranslateError {
    TranslateError::new(
        "reasoning_effort",
        format!("unknown effort {effort:?}: use minimal, low, medium, high, xhigh, max or none"),
    )
}

/// Anthropic's `thinking` (`{type: enabled, budget_tokens}`), which LiteLLM accepts for Gemini
/// too.
fn thinking_from_anthropic(thinking: &Value) -> Result<ThinkingConfig, TranslateError> {
    let kind = thinking.get("type").and_then(Value::as_str);
    let budget = thinking.get("budget_tokens").and_then(Value::as_i64);
    match kind {
        Some("enabled") => Ok(ThinkingConfig {
            include_thoughts: Some(budget != Some(0)),
            thinking_budget: budget,
            ..ThinkingConfig::default()
        }),
        Some("disabled") => {
            Ok(ThinkingConfig { include_thoughts: Some(false), thinking_budget: Some(0), ..ThinkingConfig::default() })
        }
        _ => Err(TranslateError::new("thinking", "must be {\"type\": \"enabled\", \"budget_tokens\"} or disabled")),
    }
}
