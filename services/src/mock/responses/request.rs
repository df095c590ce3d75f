//! Reading a `POST /v1/responses` request as strictly as OpenAI does: the first problem found is
//! a `400` with OpenAI's error body, its message, `param` and `code` worded as the API words
//! them (`Missing required parameter: 'model'.`, `Invalid type for ...`, `Invalid value: ...`,
//! `Unknown parameter: ...`).

use std::{
    sync::Arc,
    time::{SystemTime, UNIX_EPOCH},
};

use axum::response::Response;
use http::StatusCode;
use rand::{RngCore, rngs::SmallRng};
use serde_json::{Map, Value};

use super::{
    input::{asks_for_a_tool, read_input, text_chars},
    store::{Store, StoredResponse},
};
use crate::{
    mock::{MockProfile, answer::json_response},
    openai::{ApiError, ErrorResponse, wire::to_json},
};

/// Body fields of `POST /v1/responses` (`ResponseCreateParams` of the official SDK).
const FIELDS: &[&str] = &[
    "background",
    "context_management",
    "conversation",
    "include",
    "input",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "model",
    "moderation",
    "parallel_tool_calls",
    "previous_response_id",
    "prompt",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning",
    "safety_identifier",
    "service_tier",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
];

/// The `type`s of tools (`ToolParam`).
const TOOL_TYPES: &[&str] = &[
    "function",
    "file_search",
    "computer",
    "computer_use_preview",
    "web_search",
    "web_search_2025_08_26",
    "mcp",
    "code_interpreter",
    "programmatic_tool_calling",
    "image_generation",
    "local_shell",
    "shell",
    "custom",
    "namespace",
    "tool_search",
    "web_search_preview",
    "web_search_preview_2025_03_11",
    "apply_patch",
];

const TOOL_CHOICES: &[&str] = &["none", "auto", "required"];
/// The smallest `max_output_tokens` the API accepts.
const MIN_OUTPUT_TOKENS: u64 = 16;
/// What the last user message says to get a call of the first function tool under
/// `tool_choice: "auto"`.
pub(super) const CALL_A_TOOL: &str = "call a tool";

/// A request refused before any answer: its status and OpenAI error.
#[derive(Debug)]
pub(super) struct Refusal {
    status: StatusCode,
    /// Boxed: a refusal is rare, and keeps the `Result`s it travels in small.
    error: Box<ApiError>,
}

impl Refusal {
    pub(super) fn invalid(message: impl Into<String>, param: Option<&str>, code: Option<&str>) -> Self {
        let mut error = ApiError::new(message).with_type("invalid_request_error");
        error.param = param.map(str::to_owned);
        error.code = code.map(|c| Value::String(c.to_owned()));
        Self { status: StatusCode::BAD_REQUEST, error: Box::new(error) }
    }

    pub(super) fn missing(param: &str) -> Self {
        Self::invalid(
            format!("Missing required parameter: '{param}'."),
            Some(param),
            Some("missing_required_parameter"),
        )
    }

    pub(super) fn invalid_type(param: &str, expected: &str, got: &Value) -> Self {
        Self::invalid(
            format!("Invalid type for '{param}': expected {expected}, but got {} instead.", kind(got)),
            Some(param),
            Some("invalid_type"),
        )
    }

    pub(super) fn invalid_value(param: &str, got: &str, supported: &[&str]) -> Self {
        Self::invalid(
            format!("Invalid value: '{got}'. Supported values are: {}.", one_of(supported)),
            Some(param),
            Some("invalid_value"),
        )
    }

    /// `404` for a response this server does not keep.
    pub(super) fn not_found(id: &str) -> Self {
        let mut refusal = Self::invalid(format!("Response with id '{id}' not found."), None, None);
        refusal.status = StatusCode::NOT_FOUND;
        refusal
    }

    /// `400` for cancelling a response not created with `background: true`.
    pub(super) fn not_background() -> Self {
        Self::invalid("Cannot cancel a synchronous response.", None, None)
    }

    /// OpenAI's answer: `{"error":{"message","type","param","code"}}`.
    pub(super) fn into_response(self) -> Response {
        json_response(self.status, to_json(&ErrorResponse::new(*self.error)))
    }
}

/// How OpenAI names the JSON type of `value` in its messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a decimal",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `'a'`, `'a' and 'b'`, `'a', 'b', and 'c'`.
fn one_of(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("'{v}'")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [init @ .., last] => format!("{}, and {last}", init.join(", ")),
    }
}

/// One Responses request, read.
#[derive(Debug)]
pub(super) struct Call {
    pub(super) model: String,
    pub(super) stream: bool,
    pub(super) store: bool,
    pub(super) background: bool,
    /// Whether delta events carry an `obfuscation` field (`stream_options.include_obfuscation`).
    pub(super) obfuscate: bool,
    pub(super) input_tokens: u64,
    /// The input items (a string `input` as one `user` message).
    pub(super) input: Vec<Value>,
    /// The stored response `previous_response_id` names.
    pub(super) previous: Option<Arc<StoredResponse>>,
    pub(super) tools: Vec<Value>,
    /// The function the answer calls, if any.
    pub(super) tool: Option<String>,
    pub(super) max_output_tokens: Option<u64>,
    /// The request's fields the response object echoes.
    pub(super) echo: Map<String, Value>,
    /// `resp_…`, and the random part of the output item's ids.
    pub(super) id: String,
    pub(super) item_key: String,
    pub(super) created_at: u64,
}

impl Call {
    /// Checks the body as the Responses API does; the first problem found, if any.
    pub(super) fn read(body: &[u8], store: &Store, profile: &MockProfile, rng: &mut SmallRng) -> Result<Self, Refusal> {
        let Ok(Value::Object(req)) = serde_json::from_slice::<Value>(body) else {
            return Err(Refusal::invalid(
                "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your \
                 HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid \
                 JSON. If you have trouble figuring out how to fix this, please contact us through our help center \
                 at help.openai.com.)",
                None,
                None,
            ));
        };
        if let Some(extra) = req.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(Refusal::invalid(
                format!("Unknown parameter: '{extra}'."),
                Some(extra),
                Some("unknown_parameter"),
            ));
        }
        let model = match req.get("model") {
            None => return Err(Refusal::missing("model")),
            Some(Value::String(m)) if m.is_empty() => {
                return Err(Refusal::invalid(
                    "Invalid 'model': empty string. Expected a string with minimum length 1, but got an empty \
                     string instead.",
                    Some("model"),
                    Some("empty_string"),
                ));
            }
            Some(Value::String(m)) => m.clone(),
            Some(other) => return Err(Refusal::invalid_type("model", "a string", other)),
        };
        let input = read_input(req.get("input"))?;
        let tools = read_tools(req.get("tools"))?;
        let tool = called_tool(req.get("tool_choice"), &tools, &input)?;
        let stream = opt_bool(&req, "stream")?.unwrap_or(false);
        let store_it = opt_bool(&req, "store")?.unwrap_or(true);
        let background = opt_bool(&req, "background")?.unwrap_or(false);
        opt_bool(&req, "parallel_tool_calls")?;
        for key in ["instructions", "previous_response_id", "prompt_cache_key", "safety_identifier", "user"] {
            opt_str(&req, key)?;
        }
        let max_output_tokens = match req.get("max_output_tokens") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_u64().is_some_and(|t| t >= MIN_OUTPUT_TOKENS) => n.as_u64(),
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => {
                return Err(Refusal::invalid(
                    format!(
                        "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= \
                         {MIN_OUTPUT_TOKENS}, but got {n} instead."
                    ),
                    Some("max_output_tokens"),
                    Some("integer_below_min_value"),
                ));
            }
            Some(other) => return Err(Refusal::invalid_type("max_output_tokens", "an integer", other)),
        };
        let obfuscate = req
            .get("stream_options")
            .and_then(|o| o.get("include_obfuscation"))
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let previous = match req.get("previous_response_id").and_then(Value::as_str) {
            None => None,
            Some(id) => Some(store.get(id).ok_or_else(|| {
                Refusal::invalid(
                    format!("Previous response with id '{id}' not found."),
                    Some("previous_response_id"),
                    Some("previous_response_not_found"),
                )
            })?),
        };
        let input_tokens = profile.prompt_tokens.unwrap_or_else(|| {
            let chars = req.get("instructions").map_or(0, text_chars) + input.iter().map(text_chars).sum::<u64>();
            // The previous turns are input again, as OpenAI counts them.
            let earlier = previous.as_ref().map_or(0, |p| {
                p.response.get("usage").and_then(|u| u.get("total_tokens")).and_then(Value::as_u64).unwrap_or(0)
            });
            chars.div_ceil(4).max(1) + earlier
        });
        let echo = req.into_iter().filter(|(k, _)| !matches!(k.as_str(), "input" | "tools" | "stream")).collect();
        let id = format!("resp_{:016x}{:016x}{:016x}", rng.next_u64(), rng.next_u64(), rng.next_u64());
        let item_key = format!("{:016x}{:016x}{:016x}", rng.next_u64(), rng.next_u64(), rng.next_u64());
        let created_at = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Ok(Self {
            model,
            stream,
            store: store_it,
            background,
            obfuscate,
            input_tokens,
            input,
            previous,
            tools,
            tool,
            max_output_tokens,
            echo,
            id,
            item_key,
            created_at,
        })
    }
}

fn opt_bool(req: &Map<String, Value>, key: &str) -> Result<Option<bool>, Refusal> {
    match req.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(Refusal::invalid_type(key, "a boolean", other)),
    }
}

fn opt_str<'a>(req: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, Refusal> {
    match req.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(Refusal::invalid_type(key, "a string", other)),
    }
}

/// `tools`: a list of known tools, function tools in the flat shape (`name` at the top, not
/// under `function`); function tools as the response echoes them.
fn read_tools(tools: Option<&Value>) -> Result<Vec<Value>, Refusal> {
    let tools = match tools {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(tools)) => tools,
        Some(other) => return Err(Refusal::invalid_type("tools", "an array", other)),
    };
    let mut out = Vec::with_capacity(tools.len());
    for (i, tool) in tools.iter().enumerate() {
        let at = format!("tools[{i}]");
        let Value::Object(tool) = tool else {
            return Err(Refusal::invalid_type(&at, "an object", tool));
        };
        match tool.get("type") {
            None => return Err(Refusal::missing(&format!("{at}.type"))),
            Some(Value::String(t)) if t == "function" => {}
            Some(Value::String(t)) if TOOL_TYPES.contains(&t.as_str()) => {
                out.push(Value::Object(tool.clone()));
                continue;
            }
            Some(Value::String(t)) => return Err(Refusal::invalid_value(&format!("{at}.type"), t, TOOL_TYPES)),
            Some(other) => return Err(Refusal::invalid_type(&format!("{at}.type"), "a string", other)),
        }
        // A Chat Completions tool (`{"type":"function","function":{...}}`) fails here, as it does
        // at OpenAI.
        match tool.get("name") {
            None => return Err(Refusal::missing(&format!("{at}.name"))),
            Some(Value::String(_)) => {}
            Some(other) => return Err(Refusal::invalid_type(&format!("{at}.name"), "a string", other)),
        }
        if let Some(p) = tool.get("parameters").filter(|p| !(p.is_object() || p.is_null())) {
            return Err(Refusal::invalid_type(&format!("{at}.parameters"), "an object", p));
        }
        if let Some(s) = tool.get("strict").filter(|s| !(s.is_boolean() || s.is_null())) {
            return Err(Refusal::invalid_type(&format!("{at}.strict"), "a boolean", s));
        }
        let mut echoed = tool.clone();
        for (key, default) in [("description", Value::Null), ("parameters", Value::Null), ("strict", Value::Bool(true))]
        {
            echoed.entry(key).or_insert(default);
        }
        out.push(Value::Object(echoed));
    }
    Ok(out)
}

/// The function the answer calls: the one `tool_choice` forces (`"required"`: the first), or
/// under `"auto"` the first when the last input item is a user message asking to "call a tool".
fn called_tool(choice: Option<&Value>, tools: &[Value], input: &[Value]) -> Result<Option<String>, Refusal> {
    let first = || {
        tools
            .iter()
            .find(|t| t.get("type").and_then(Value::as_str) == Some("function"))
            .and_then(|t| t.get("name"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    match choice {
        None | Some(Value::Null) => Ok(asks_for_a_tool(input).then(first).flatten()),
        Some(Value::String(c)) => match c.as_str() {
            "auto" => Ok(asks_for_a_tool(input).then(first).flatten()),
            "required" => Ok(first()),
            "none" => Ok(None),
            other => Err(Refusal::invalid_value("tool_choice", other, TOOL_CHOICES)),
        },
        Some(Value::Object(c)) => match c.get("type").and_then(Value::as_str) {
            Some("function") => match c.get("name") {
                Some(Value::String(name)) => Ok(Some(name.clone())),
                None => Err(Refusal::missing("tool_choice.name")),
                Some(other) => Err(Refusal::invalid_type("tool_choice.name", "a string", other)),
            },
            None => Err(Refusal::missing("tool_choice.type")),
            // Hosted tools, `allowed_tools`, `mcp`, `custom`: answered with text.
            Some(_) => Ok(None),
        },
        Some(other) => Err(Refusal::invalid_type("tool_choice", "one of a string or object", other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_values_are_listed_as_openai_lists_them() {
        assert_eq!(one_of(&["a"]), "'a'");
        assert_eq!(one_of(&["output_text", "refusal"]), "'output_text' and 'refusal'");
        assert_eq!(one_of(&["none", "auto", "required"]), "'none', 'auto', and 'required'");
    }
}
