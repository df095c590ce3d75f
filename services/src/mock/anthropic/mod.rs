//! The mock's Anthropic Messages API (`POST /v1/messages`): a strict reading of the request, as
//! Anthropic validates it, then whole answers ([`answer`]) and event streams ([`stream`]) drawn
//! from the same [`MockProfile`] as the OpenAI side.
//!
//! What the API accepts today, and so does the mock: consecutive turns of the same role (the API
//! combines them into one turn) and a first message from the `assistant`. `max_tokens: 0` is
//! accepted too (the API uses it to pre-warm the prompt cache): the answer has no content and
//! stops with `max_tokens`.

mod answer;
mod stream;

use http::{HeaderMap, StatusCode};
use rand::{RngCore, rngs::SmallRng};
use serde_json::{Map, Value};

pub(super) use answer::{failure, truncated, whole};
pub(super) use stream::{StreamFaults, streaming};

use super::MockProfile;

/// Body fields of the generally available Messages API (`MessageCreateParams`).
const FIELDS: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "system",
    "metadata",
    "stop_sequences",
    "stream",
    "temperature",
    "top_p",
    "top_k",
    "tools",
    "tool_choice",
    "thinking",
    "service_tier",
    "container",
    "cache_control",
    "inference_geo",
    "output_config",
];

/// Body fields the API reads only with an `anthropic-beta` header (`BetaMessageCreateParams`).
const BETA_FIELDS: &[&str] = &["context_management", "mcp_servers", "output_format", "speed", "user_profile_id"];

/// The smallest thinking budget the API accepts.
const MIN_THINKING_BUDGET: u64 = 1024;

/// A request refused before any answer: its status, Anthropic error type and message.
#[derive(Debug)]
pub(super) struct Refusal {
    status: StatusCode,
    kind: &'static str,
    message: String,
}

impl Refusal {
    fn invalid(message: impl Into<String>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, kind: "invalid_request_error", message: message.into() }
    }

    /// Anthropic's answer: `{"type":"error","error":{"type":...,"message":...}}`.
    pub(super) fn into_response(self) -> axum::response::Response {
        answer::error_response(self.status, self.kind, &self.message)
    }
}

/// One Messages request, read.
#[derive(Debug)]
pub(super) struct Call {
    model: String,
    pub(super) stream: bool,
    input_tokens: u64,
    /// The random part of the message's id (and of the tool call's id and thinking signature).
    id: u64,
    max_tokens: u64,
    stop_sequences: Vec<String>,
    /// The tool the answer calls, when `tool_choice` forces one.
    tool: Option<String>,
    thinking: bool,
}

/// Who serves the Messages API.
#[derive(Clone, Copy, Debug)]
pub(super) enum Host<'a> {
    /// Anthropic: `x-api-key` and `anthropic-version` headers, the model in the body.
    Anthropic,
    /// Claude on Vertex AI (`:rawPredict`): the bearer token checked before, the model named by
    /// the URL (`model` in the body is refused), `anthropic_version: "vertex-2023-10-16"` in the
    /// body.
    Vertex { model: &'a str },
}

/// The `anthropic_version` Claude on Vertex AI takes.
const VERTEX_VERSION: &str = "vertex-2023-10-16";

impl Call {
    /// Checks the headers and the body as the Messages API does; the first problem found
    /// otherwise. Draws one number (the id), as the OpenAI side does.
    pub(super) fn read(
        (headers, host): (&HeaderMap, Host<'_>),
        body: &[u8],
        profile: &MockProfile,
        rng: &mut SmallRng,
    ) -> Result<Self, Refusal> {
        if matches!(host, Host::Anthropic) && headers.get("x-api-key").is_none_or(|key| key.is_empty()) {
            return Err(Refusal {
                status: StatusCode::UNAUTHORIZED,
                kind: "authentication_error",
                message: "x-api-key header is required".to_owned(),
            });
        }
        if matches!(host, Host::Anthropic) && headers.get("anthropic-version").is_none_or(|v| v.is_empty()) {
            return Err(Refusal::invalid("anthropic-version: header is required"));
        }
        let Ok(Value::Object(mut req)) = serde_json::from_slice::<Value>(body) else {
            return Err(Refusal::invalid("There was an error parsing the body of your request as JSON (mock)."));
        };
        let model = match (host, req.get("model")) {
            (Host::Vertex { model }, None) => {
                match req.remove("anthropic_version") {
                    Some(Value::String(v)) if v == VERTEX_VERSION => {}
                    None => return Err(Refusal::invalid("anthropic_version: Field required")),
                    Some(_) => {
                        return Err(Refusal::invalid(format!("anthropic_version: Input should be '{VERTEX_VERSION}'")));
                    }
                }
                model.to_owned()
            }
            (Host::Vertex { .. }, Some(_)) => return Err(Refusal::invalid("model: Extra inputs are not permitted")),
            (Host::Anthropic, None | Some(Value::Null)) => return Err(Refusal::invalid("model: Field required")),
            (Host::Anthropic, Some(Value::String(m))) if m.is_empty() => {
                return Err(Refusal::invalid("model: String should have at least 1 character"));
            }
            (Host::Anthropic, Some(Value::String(m))) => m.clone(),
            (Host::Anthropic, Some(_)) => return Err(Refusal::invalid("model: Input should be a valid string")),
        };
        let max_tokens = match req.get("max_tokens") {
            None | Some(Value::Null) => return Err(Refusal::invalid("max_tokens: Field required")),
            Some(Value::Number(n)) => match (n.as_u64(), n.as_i64()) {
                (Some(tokens), _) => tokens,
                (None, Some(_)) => {
                    return Err(Refusal::invalid("max_tokens: Input should be greater than or equal to 0"));
                }
                (None, None) => return Err(Refusal::invalid("max_tokens: Input should be a valid integer")),
            },
            Some(_) => return Err(Refusal::invalid("max_tokens: Input should be a valid integer")),
        };
        check_messages(req.get("messages"))?;
        let beta = headers.contains_key("anthropic-beta");
        if let Some(extra) =
            req.keys().find(|k| !(FIELDS.contains(&k.as_str()) || beta && BETA_FIELDS.contains(&k.as_str())))
        {
            return Err(Refusal::invalid(format!("{extra}: Extra inputs are not permitted")));
        }
        let stop_sequences = match req.get("stop_sequences") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(seqs)) => seqs
                .iter()
                .map(|s| s.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| Refusal::invalid("stop_sequences: Input should be a valid list of strings"))?,
            Some(_) => return Err(Refusal::invalid("stop_sequences: Input should be a valid list")),
        };
        let tool = forced_tool(&req)?;
        let thinking = thinking(req.get("thinking"), max_tokens)?;
        let stream = match req.get("stream") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(Refusal::invalid("stream: Input should be a valid boolean")),
        };
        let input_tokens = profile.prompt_tokens.unwrap_or_else(|| input_chars(&req).div_ceil(4).max(1));
        let id = rng.next_u64();
        Ok(Self { model, stream, input_tokens, id, max_tokens, stop_sequences, tool, thinking })
    }
}

/// `messages`: a non-empty list of `user` and `assistant` turns, each with content.
fn check_messages(messages: Option<&Value>) -> Result<(), Refusal> {
    let messages = match messages {
        None | Some(Value::Null) => return Err(Refusal::invalid("messages: Field required")),
        Some(Value::Array(m)) if m.is_empty() => {
            return Err(Refusal::invalid("messages: at least one message is required"));
        }
        Some(Value::Array(m)) => m,
        Some(_) => return Err(Refusal::invalid("messages: Input should be a valid list")),
    };
    let last = messages.len() - 1;
    for (i, message) in messages.iter().enumerate() {
        let Value::Object(message) = message else {
            return Err(Refusal::invalid(format!("messages.{i}: Input should be a valid dictionary")));
        };
        let role = match message.get("role") {
            None => return Err(Refusal::invalid(format!("messages.{i}.role: Field required"))),
            Some(Value::String(role)) => role.as_str(),
            Some(_) => {
                return Err(Refusal::invalid(format!("messages.{i}.role: Input should be 'user' or 'assistant'")));
            }
        };
        match role {
            "user" | "assistant" => {}
            "system" => {
                return Err(Refusal::invalid(
                    "Unexpected role \"system\". The Messages API accepts a top-level `system` parameter, not \
                     \"system\" as an input message role.",
                ));
            }
            _ => return Err(Refusal::invalid(format!("messages.{i}.role: Input should be 'user' or 'assistant'"))),
        }
        let empty = match message.get("content") {
            None => return Err(Refusal::invalid(format!("messages.{i}.content: Field required"))),
            Some(Value::String(s)) => s.is_empty(),
            Some(Value::Array(blocks)) => blocks.is_empty(),
            Some(_) => return Err(Refusal::invalid(format!("messages.{i}.content: Input should be a valid list"))),
        };
        if empty && !(i == last && role == "assistant") {
            return Err(Refusal::invalid(format!(
                "messages.{i}: all messages must have non-empty content except for the optional final assistant \
                 message"
            )));
        }
    }
    Ok(())
}

/// The tool `tool_choice` forces (`{"type":"any"}`: the first; `{"type":"tool","name":..}`: that
/// one), if any.
fn forced_tool(req: &Map<String, Value>) -> Result<Option<String>, Refusal> {
    let Some(choice) = req.get("tool_choice").filter(|c| !c.is_null()) else {
        return Ok(None);
    };
    let tools = req.get("tools").and_then(Value::as_array).filter(|t| !t.is_empty());
    let Some(tools) = tools else {
        return Err(Refusal::invalid("tool_choice: tool_choice may only be specified while providing tools"));
    };
    match choice.get("type").and_then(Value::as_str) {
        Some("any") => Ok(tools.first().and_then(|t| t.get("name")).and_then(Value::as_str).map(str::to_owned)),
        Some("tool") => match choice.get("name").and_then(Value::as_str) {
            Some(name) => Ok(Some(name.to_owned())),
            None => Err(Refusal::invalid("tool_choice.tool.name: Field required")),
        },
        Some("auto" | "none") => Ok(None),
        _ => Err(Refusal::invalid(
            "tool_choice: Input tag does not match any of the expected tags: 'auto', 'any', 'tool', 'none'",
        )),
    }
}

/// Whether `thinking` is on (`enabled`, with a budget of at least 1024 tokens under `max_tokens`,
/// or `adaptive`).
fn thinking(config: Option<&Value>, max_tokens: u64) -> Result<bool, Refusal> {
    let Some(config) = config.filter(|c| !c.is_null()) else {
        return Ok(false);
    };
    match config.get("type").and_then(Value::as_str) {
        Some("disabled") => Ok(false),
        Some("adaptive") => Ok(true),
        Some("enabled") => {
            let Some(budget) = config.get("budget_tokens").and_then(Value::as_u64) else {
                return Err(Refusal::invalid("thinking.enabled.budget_tokens: Field required"));
            };
            if budget < MIN_THINKING_BUDGET {
                return Err(Refusal::invalid(format!(
                    "thinking.enabled.budget_tokens: Input should be greater than or equal to {MIN_THINKING_BUDGET}"
                )));
            }
            if max_tokens <= budget {
                return Err(Refusal::invalid("`max_tokens` must be greater than `thinking.budget_tokens`"));
            }
            Ok(true)
        }
        _ => Err(Refusal::invalid(
            "thinking: Input tag does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'",
        )),
    }
}

/// Characters of the text in `system` and in every message.
fn input_chars(req: &Map<String, Value>) -> u64 {
    let text_len = |content: &Value| -> usize {
        match content {
            Value::String(s) => s.chars().count(),
            Value::Array(blocks) => {
                blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).map(|t| t.chars().count()).sum()
            }
            _ => 0,
        }
    };
    let system = req.get("system").map_or(0, text_len);
    let messages: usize = req
        .get("messages")
        .and_then(Value::as_array)
        .map_or(0, |m| m.iter().filter_map(|m| m.get("content")).map(text_len).sum());
    u64::try_from(system + messages).unwrap_or(u64::MAX)
}
