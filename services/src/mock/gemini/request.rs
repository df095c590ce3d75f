//! Reading a Gemini API request as Google does: the API key, the method after the model's `:`,
//! and the body (`GenerateContentRequest`, `EmbedContentRequest`, `BatchEmbedContentsRequest`),
//! field names in either of the proto JSON spellings (`toolConfig` or `tool_config`).

use http::{HeaderMap, StatusCode};
use rand::{RngCore, rngs::SmallRng};
use serde_json::{Map, Value};

use crate::mock::MockProfile;

/// A request refused before any answer: Google's `{"error":{"code","message","status"}}`.
#[derive(Debug)]
pub(in crate::mock) struct Refusal {
    status: StatusCode,
    message: String,
}

impl Refusal {
    pub(super) fn invalid(message: impl Into<String>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, message: message.into() }
    }

    fn not_found(message: impl Into<String>) -> Self {
        Self { status: StatusCode::NOT_FOUND, message: message.into() }
    }

    /// Google's answer for the refusal.
    pub(in crate::mock) fn into_response(self) -> axum::response::Response {
        super::answer::error_response(self.status, &self.message, Vec::new())
    }
}

/// What the client asked for, from the method after the model's `:` and the query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Framing {
    /// `?alt=sse`: `data: <GenerateContentResponse>` events.
    Sse,
    /// Without `alt=sse`: one JSON array whose elements arrive as they are generated.
    JsonArray,
}

/// One `generateContent` or `streamGenerateContent` request, read.
#[derive(Debug)]
pub(super) struct Generate {
    pub(super) model: String,
    /// `Some` for `streamGenerateContent`.
    pub(super) stream: Option<Framing>,
    pub(super) prompt_tokens: u64,
    /// The random part of the response id.
    pub(super) id: u64,
    /// `generationConfig.maxOutputTokens` (0, the proto default, is unset).
    pub(super) max_output_tokens: Option<u64>,
    pub(super) stop_sequences: Vec<String>,
    /// The function the answer calls, if any.
    pub(super) function: Option<String>,
}

/// One `embedContent` or `batchEmbedContents` request, read.
#[derive(Debug)]
pub(super) struct Embed {
    pub(super) model: String,
    /// `batchEmbedContents`: answered with `embeddings`, else with one `embedding`.
    pub(super) batch: bool,
    /// Output dimensionality of each request, in order.
    pub(super) dims: Vec<usize>,
    pub(super) prompt_tokens: u64,
}

/// One request, read.
#[derive(Debug)]
pub(super) enum Call {
    Generate(Generate),
    Embed(Embed),
}

impl Call {
    /// Checks the key, the method and the body as the Gemini API does; the first problem found
    /// otherwise. Draws one number (the response id), as the other routes do.
    /// `keyed`: the Gemini API's own routes, which take an API key; Vertex AI's routes check their
    /// bearer token before this.
    pub(super) fn read(
        model_and_method: &str,
        query: Option<&str>,
        (headers, keyed): (&HeaderMap, bool),
        body: &[u8],
        profile: &MockProfile,
        rng: &mut SmallRng,
    ) -> Result<Self, Refusal> {
        let id = rng.next_u64();
        let query_value = |name: &str| {
            query?.split('&').filter_map(|pair| pair.split_once('=')).find(|(k, _)| *k == name).map(|(_, v)| v)
        };
        let header_key = headers.get("x-goog-api-key").is_some_and(|k| !k.is_empty());
        if keyed && !header_key && query_value("key").is_none_or(str::is_empty) {
            return Err(Refusal {
                status: StatusCode::FORBIDDEN,
                message: "Method doesn't allow unregistered callers (callers without established identity). Please \
                          use API Key or other form of API consumer identity to call this API."
                    .to_owned(),
            });
        }
        // Model ids hold no `:`; the method is what follows the last one.
        let Some((model, method)) = model_and_method.rsplit_once(':').filter(|(m, _)| !m.is_empty()) else {
            return Err(Refusal::not_found(format!("models/{model_and_method} is not found for API version v1beta.")));
        };
        let model = model.to_owned();
        let req = match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(req)) => req,
            _ => return Err(Refusal::invalid("Invalid JSON payload received. Unexpected token.")),
        };
        let prompt_tokens = |chars: usize| {
            profile.prompt_tokens.unwrap_or_else(|| u64::try_from(chars).unwrap_or(u64::MAX).div_ceil(4).max(1))
        };
        match method {
            "generateContent" | "streamGenerateContent" => {
                let stream = (method == "streamGenerateContent")
                    .then(|| if query_value("alt") == Some("sse") { Framing::Sse } else { Framing::JsonArray });
                let read = read_generate(&req)?;
                Ok(Self::Generate(Generate {
                    model,
                    stream,
                    prompt_tokens: prompt_tokens(read.chars),
                    id,
                    max_output_tokens: read.max_output_tokens,
                    stop_sequences: read.stop_sequences,
                    function: read.function,
                }))
            }
            "embedContent" => {
                check_fields(&req, EMBED_FIELDS, "")?;
                let chars = check_embed_content(req.get("content"), "EmbedContentRequest", "content")?;
                let dims = vec![dimensionality(&req, profile)];
                Ok(Self::Embed(Embed { model, batch: false, dims, prompt_tokens: prompt_tokens(chars) }))
            }
            "batchEmbedContents" => {
                check_fields(&req, &["requests"], "")?;
                let requests = match req.get("requests") {
                    Some(Value::Array(r)) if !r.is_empty() => r,
                    _ => {
                        return Err(Refusal::invalid(
                            "* BatchEmbedContentsRequest.requests: requests is not specified\n",
                        ));
                    }
                };
                let (mut chars, mut dims) = (0, Vec::with_capacity(requests.len()));
                for (i, request) in requests.iter().enumerate() {
                    let Value::Object(request) = request else {
                        return Err(Refusal::invalid(format!("Invalid value at 'requests[{i}]'")));
                    };
                    check_fields(request, EMBED_FIELDS, &format!(" at 'requests[{i}]'"))?;
                    if !request.get("model").and_then(Value::as_str).is_some_and(|m| m.starts_with("models/")) {
                        return Err(Refusal::invalid(format!(
                            "* BatchEmbedContentsRequest.requests[{i}].model: unexpected model name format\n"
                        )));
                    }
                    let path = format!("requests[{i}].content");
                    chars += check_embed_content(request.get("content"), "BatchEmbedContentsRequest", &path)?;
                    dims.push(dimensionality(request, profile));
                }
                Ok(Self::Embed(Embed { model, batch: true, dims, prompt_tokens: prompt_tokens(chars) }))
            }
            _ => Err(Refusal::not_found(format!(
                "models/{model} is not found for API version v1beta, or is not supported for {method}. Call \
                 ListModels to see the list of available models and their supported methods."
            ))),
        }
    }

    pub(super) fn model(&self) -> &str {
        match self {
            Self::Generate(g) => &g.model,
            Self::Embed(e) => &e.model,
        }
    }

    pub(super) fn prompt_tokens(&self) -> u64 {
        match self {
            Self::Generate(g) => g.prompt_tokens,
            Self::Embed(e) => e.prompt_tokens,
        }
    }
}

const GENERATE: &str = "GenerateContentRequest";

/// `GenerateContentRequest` fields, in both spellings.
const GENERATE_FIELDS: &[&str] = &[
    "model",
    "contents",
    "tools",
    "toolConfig",
    "tool_config",
    "safetySettings",
    "safety_settings",
    "systemInstruction",
    "system_instruction",
    "generationConfig",
    "generation_config",
    "cachedContent",
    "cached_content",
];

/// `EmbedContentRequest` fields, in both spellings.
const EMBED_FIELDS: &[&str] =
    &["model", "content", "taskType", "task_type", "title", "outputDimensionality", "output_dimensionality"];

/// The members of a `Part`'s `data` oneof, in both spellings.
const PART_DATA: &[(&str, &str)] = &[
    ("text", "text"),
    ("inlineData", "inline_data"),
    ("fileData", "file_data"),
    ("functionCall", "function_call"),
    ("functionResponse", "function_response"),
    ("executableCode", "executable_code"),
    ("codeExecutionResult", "code_execution_result"),
];

/// The other `Part` fields, in both spellings.
const PART_OTHER: &[&str] = &[
    "thought",
    "thoughtSignature",
    "thought_signature",
    "videoMetadata",
    "video_metadata",
    "partMetadata",
    "part_metadata",
    "mediaResolution",
    "media_resolution",
];

/// `field` of `obj` under its camelCase or snake_case name.
fn get<'a>(obj: &'a Map<String, Value>, camel: &str, snake: &str) -> Option<&'a Value> {
    obj.get(camel).or_else(|| obj.get(snake)).filter(|v| !v.is_null())
}

/// Google's refusal of an unknown field (`at` names where, for nested objects).
fn check_fields(obj: &Map<String, Value>, known: &[&str], at: &str) -> Result<(), Refusal> {
    match obj.keys().find(|k| !known.contains(&k.as_str())) {
        Some(name) => Err(Refusal::invalid(format!(
            "Invalid JSON payload received. Unknown name \"{name}\"{at}: Cannot find field."
        ))),
        None => Ok(()),
    }
}

struct ReadGenerate {
    chars: usize,
    max_output_tokens: Option<u64>,
    stop_sequences: Vec<String>,
    function: Option<String>,
}

fn read_generate(req: &Map<String, Value>) -> Result<ReadGenerate, Refusal> {
    check_fields(req, GENERATE_FIELDS, "")?;
    let contents = match req.get("contents") {
        None | Some(Value::Null) => None,
        Some(Value::Array(c)) => Some(c),
        Some(_) => {
            return Err(Refusal::invalid(
                "Invalid value at 'contents' (type.googleapis.com/google.ai.generativelanguage.v1beta.Content)",
            ));
        }
    };
    let Some(contents) = contents.filter(|c| !c.is_empty()) else {
        return Err(Refusal::invalid("* GenerateContentRequest.contents: contents is not specified\n"));
    };
    let mut chars = 0;
    let mut last_user_text = String::new();
    for (i, content) in contents.iter().enumerate() {
        let Value::Object(content) = content else {
            return Err(Refusal::invalid(format!("Invalid value at 'contents[{i}]'")));
        };
        check_fields(content, &["role", "parts"], &format!(" at 'contents[{i}]'"))?;
        let role = match content.get("role") {
            None | Some(Value::Null) => "",
            Some(Value::String(r)) => r.as_str(),
            Some(_) => return Err(Refusal::invalid(format!("Invalid value at 'contents[{i}].role' (TYPE_STRING)"))),
        };
        if !matches!(role, "" | "user" | "model") {
            return Err(Refusal::invalid("Please use a valid role: user, model."));
        }
        let text = check_parts(content.get("parts"), GENERATE, &format!("contents[{i}]"))?;
        chars += text.chars().count();
        if role != "model" {
            last_user_text = text;
        }
    }
    if let Some(system) = get(req, "systemInstruction", "system_instruction") {
        let Value::Object(system) = system else {
            return Err(Refusal::invalid("Invalid value at 'system_instruction'"));
        };
        check_fields(system, &["role", "parts"], " at 'system_instruction'")?;
        chars += check_parts(system.get("parts"), GENERATE, "system_instruction")?.chars().count();
    }
    let functions = functions(req)?;
    let mode = match get(req, "toolConfig", "tool_config")
        .and_then(|c| c.get("functionCallingConfig").or_else(|| c.get("function_calling_config")))
    {
        None => None,
        Some(config) => function_calling(config)?,
    };
    let asked = last_user_text.to_lowercase().contains("call a tool");
    let function = match mode {
        Some(FunctionMode { name: "ANY" | "VALIDATED", allowed }) => allowed.or_else(|| functions.first().cloned()),
        Some(FunctionMode { name: "NONE", .. }) => None,
        Some(FunctionMode { allowed, .. }) if asked => allowed.or_else(|| functions.first().cloned()),
        None if asked => functions.first().cloned(),
        _ => None,
    };
    let (max_output_tokens, stop_sequences) = generation_config(req)?;
    Ok(ReadGenerate { chars, max_output_tokens, stop_sequences, function })
}

/// Checks a `Content`'s `parts` (at `path` of a `request`); the text of its text parts.
fn check_parts(parts: Option<&Value>, request: &str, path: &str) -> Result<String, Refusal> {
    let parts = match parts {
        Some(Value::Array(p)) if !p.is_empty() => p,
        _ => {
            return Err(Refusal::invalid(format!("* {request}.{path}.parts: contents.parts must not be empty.\n")));
        }
    };
    let mut text = String::new();
    for (j, part) in parts.iter().enumerate() {
        let Value::Object(part) = part else {
            return Err(Refusal::invalid(format!("Invalid value at '{path}.parts[{j}]'")));
        };
        let at = format!("{path}.parts[{j}]");
        let data: Vec<&str> =
            part.keys().filter_map(|k| PART_DATA.iter().find(|(c, s)| k == c || k == s).map(|(c, _)| *c)).collect();
        if let Some(unknown) =
            part.keys().find(|k| !(PART_OTHER.contains(&k.as_str()) || PART_DATA.iter().any(|(c, s)| k == c || k == s)))
        {
            return Err(Refusal::invalid(format!(
                "Invalid JSON payload received. Unknown name \"{unknown}\" at '{at}': Cannot find field."
            )));
        }
        match data.as_slice() {
            [] => {
                return Err(Refusal::invalid(format!(
                    "* {request}.{at}.data: required oneof field 'data' must have one initialized field\n"
                )));
            }
            [_] => {}
            [_, second, ..] => {
                return Err(Refusal::invalid(format!(
                    "Invalid value at '{at}' (oneof), oneof field 'data' is already set. Cannot set '{second}'"
                )));
            }
        }
        match part.get("text") {
            None => {}
            Some(Value::String(t)) => text.push_str(t),
            Some(other) => {
                return Err(Refusal::invalid(format!("Invalid value at '{at}.text' (TYPE_STRING), {other}")));
            }
        }
    }
    Ok(text)
}

/// The names of the declared functions, in order.
fn functions(req: &Map<String, Value>) -> Result<Vec<String>, Refusal> {
    let tools = match req.get("tools") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(t)) => t,
        Some(_) => {
            return Err(Refusal::invalid(
                "Invalid value at 'tools' (type.googleapis.com/google.ai.generativelanguage.v1beta.Tool)",
            ));
        }
    };
    let mut names = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let Value::Object(tool) = tool else {
            return Err(Refusal::invalid(format!("Invalid value at 'tools[{i}]'")));
        };
        let Some(declarations) = get(tool, "functionDeclarations", "function_declarations") else {
            continue;
        };
        let Value::Array(declarations) = declarations else {
            return Err(Refusal::invalid(format!("Invalid value at 'tools[{i}].function_declarations'")));
        };
        for (j, declaration) in declarations.iter().enumerate() {
            match declaration.get("name").and_then(Value::as_str) {
                Some(name) if !name.is_empty() => names.push(name.to_owned()),
                _ => {
                    return Err(Refusal::invalid(format!(
                        "* GenerateContentRequest.tools[{i}].function_declarations[{j}].name: Name cannot be empty.\n"
                    )));
                }
            }
        }
    }
    Ok(names)
}

struct FunctionMode {
    name: &'static str,
    /// The first of `allowedFunctionNames`.
    allowed: Option<String>,
}

/// `toolConfig.functionCallingConfig`: its mode and first allowed function.
fn function_calling(config: &Value) -> Result<Option<FunctionMode>, Refusal> {
    let Value::Object(config) = config else {
        return Err(Refusal::invalid("Invalid value at 'tool_config.function_calling_config'"));
    };
    let name = match get(config, "mode", "mode") {
        None => "MODE_UNSPECIFIED",
        Some(Value::String(m)) => {
            match ["MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"].into_iter().find(|known| known == m) {
                Some(known) => known,
                None => {
                    return Err(Refusal::invalid(format!(
                        "Invalid value at 'tool_config.function_calling_config.mode' \
                     (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), \"{m}\""
                    )));
                }
            }
        }
        Some(other) => {
            return Err(Refusal::invalid(format!(
                "Invalid value at 'tool_config.function_calling_config.mode' \
                 (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), {other}"
            )));
        }
    };
    let allowed = get(config, "allowedFunctionNames", "allowed_function_names")
        .and_then(|names| names.get(0))
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(Some(FunctionMode { name, allowed }))
}

/// `generationConfig`: `maxOutputTokens` and `stopSequences`.
fn generation_config(req: &Map<String, Value>) -> Result<(Option<u64>, Vec<String>), Refusal> {
    let Some(config) = get(req, "generationConfig", "generation_config") else {
        return Ok((None, Vec::new()));
    };
    let Value::Object(config) = config else {
        return Err(Refusal::invalid("Invalid value at 'generation_config'"));
    };
    let max = match get(config, "maxOutputTokens", "max_output_tokens") {
        None => None,
        Some(v) => match v.as_u64() {
            Some(0) => None,
            Some(n) => Some(n),
            None => {
                return Err(Refusal::invalid(format!(
                    "Invalid value at 'generation_config.max_output_tokens' (TYPE_INT32), {v}"
                )));
            }
        },
    };
    let stops = match get(config, "stopSequences", "stop_sequences") {
        None => Vec::new(),
        Some(Value::Array(s)) => s
            .iter()
            .map(|s| s.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Refusal::invalid("Invalid value at 'generation_config.stop_sequences' (TYPE_STRING)"))?,
        Some(_) => return Err(Refusal::invalid("Invalid value at 'generation_config.stop_sequences' (TYPE_STRING)")),
    };
    Ok((max, stops))
}

/// An embedding request's `content` (at `path`); its characters.
fn check_embed_content(content: Option<&Value>, request: &str, path: &str) -> Result<usize, Refusal> {
    let Some(Value::Object(content)) = content else {
        return Err(Refusal::invalid(format!("* {request}.{path}: content is not specified\n")));
    };
    check_fields(content, &["role", "parts"], &format!(" at '{path}'"))?;
    Ok(check_parts(content.get("parts"), request, path)?.chars().count())
}

/// `outputDimensionality`, or the profile's length.
fn dimensionality(req: &Map<String, Value>, profile: &MockProfile) -> usize {
    get(req, "outputDimensionality", "output_dimensionality")
        .and_then(Value::as_u64)
        .and_then(|d| usize::try_from(d).ok())
        .filter(|d| *d > 0)
        .unwrap_or(profile.embedding_dims)
}
