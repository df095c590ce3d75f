//! Reading a Cohere v2 request as Cohere does: the bearer key, then the Chat body (`model`,
//! `messages` of roles `user`, `assistant`, `system`, `tool`, `tools`, `tool_choice`, ...) or the
//! Embed body (`model`, `input_type`, `texts` / `images` / `inputs`, `embedding_types`).

use http::{HeaderMap, StatusCode, header};
use rand::{RngCore, rngs::SmallRng};
use serde_json::{Map, Value};

use crate::mock::MockProfile;

/// The most texts one Embed request takes.
const MAX_TEXTS: usize = 96;
/// The most stop sequences one Chat request takes.
const MAX_STOP_SEQUENCES: usize = 5;
/// Embedding types the Embed API knows.
pub(super) const EMBEDDING_TYPES: &[&str] = &["float", "int8", "uint8", "binary", "ubinary", "base64"];
const INPUT_TYPES: &[&str] = &["search_document", "search_query", "classification", "clustering", "image"];

/// A request refused before any answer: Cohere's `{"id","message"}` with a status.
#[derive(Debug)]
pub(in crate::mock) struct Refusal {
    status: StatusCode,
    message: String,
}

impl Refusal {
    fn invalid(message: impl Into<String>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, message: message.into() }
    }

    /// Cohere's answer for the refusal.
    pub(in crate::mock) fn into_response(self, id: u64) -> axum::response::Response {
        super::answer::error_response(self.status, &self.message, id)
    }
}

/// One Chat request, read.
#[derive(Debug)]
pub(super) struct Chat {
    pub(super) model: String,
    pub(super) stream: bool,
    pub(super) input_tokens: u64,
    /// The random part of the reply's id (and of the tool call's).
    pub(super) id: u64,
    pub(super) max_tokens: Option<u64>,
    pub(super) stop_sequences: Vec<String>,
    /// The tool the answer calls, if any.
    pub(super) tool: Option<String>,
}

/// One Embed request, read.
#[derive(Debug)]
pub(super) struct Embed {
    pub(super) model: String,
    pub(super) id: u64,
    /// The texts, echoed in the answer.
    pub(super) texts: Option<Vec<String>>,
    pub(super) images: usize,
    /// Inputs to embed (texts, images or mixed inputs).
    pub(super) inputs: usize,
    pub(super) dims: usize,
    /// The requested `embedding_types`, in order.
    pub(super) types: Vec<&'static str>,
    pub(super) input_tokens: u64,
}

/// The bearer key Cohere requires; the draw of the request's id (one number, as the other
/// routes draw), needed by refusals too.
pub(super) fn admit(headers: &HeaderMap, rng: &mut SmallRng) -> (u64, Result<(), Refusal>) {
    let id = rng.next_u64();
    let key = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.get(..7).filter(|scheme| scheme.eq_ignore_ascii_case("bearer ")).map(|_| v[7..].trim()))
        .filter(|key| !key.is_empty());
    let auth = match key {
        Some(_) => Ok(()),
        None => Err(Refusal { status: StatusCode::UNAUTHORIZED, message: "no api key supplied".to_owned() }),
    };
    (id, auth)
}

fn object(body: &[u8]) -> Result<Map<String, Value>, Refusal> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(req)) => Ok(req),
        _ => Err(Refusal::invalid("invalid request: the request body must be a valid JSON object.")),
    }
}

fn model(req: &Map<String, Value>) -> Result<String, Refusal> {
    match req.get("model") {
        Some(Value::String(m)) if !m.is_empty() => Ok(m.clone()),
        None | Some(Value::Null) => Err(Refusal::invalid("invalid request: model is required")),
        Some(_) => Err(Refusal::invalid("invalid request: model must be a non-empty string")),
    }
}

fn tokens(chars: usize, profile: &MockProfile) -> u64 {
    profile.prompt_tokens.unwrap_or_else(|| u64::try_from(chars).unwrap_or(u64::MAX).div_ceil(4).max(1))
}

impl Chat {
    /// Checks the Chat body as Cohere does; the first problem found otherwise.
    pub(super) fn read(body: &[u8], id: u64, profile: &MockProfile) -> Result<Self, Refusal> {
        let req = object(body)?;
        let model = model(&req)?;
        let (chars, last_user_text) = check_messages(req.get("messages"))?;
        let tools = tool_names(req.get("tools"))?;
        let tool = match req.get("tool_choice") {
            None | Some(Value::Null) => {
                last_user_text.to_lowercase().contains("call a tool").then(|| tools.first().cloned()).flatten()
            }
            Some(Value::String(c)) if c == "NONE" => None,
            Some(Value::String(c)) if c == "REQUIRED" => match tools.first() {
                Some(first) => Some(first.clone()),
                None => {
                    return Err(Refusal::invalid(
                        "invalid request: tool_choice REQUIRED can only be used when tools are specified",
                    ));
                }
            },
            Some(_) => return Err(Refusal::invalid("invalid request: tool_choice must be one of REQUIRED, NONE")),
        };
        let stream = match req.get("stream") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(Refusal::invalid("invalid request: stream must be a boolean")),
        };
        let max_tokens = match req.get("max_tokens") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64().filter(|n| *n > 0) {
                Some(n) => Some(n),
                None => return Err(Refusal::invalid("invalid request: max_tokens must be a positive integer")),
            },
        };
        if req
            .get("temperature")
            .filter(|t| !t.is_null())
            .is_some_and(|t| !t.as_f64().is_some_and(|t| (0.0..=1.0).contains(&t)))
        {
            return Err(Refusal::invalid("invalid request: temperature must be between 0 and 1.0 inclusive."));
        }
        let stop_sequences = match req.get("stop_sequences") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(s)) => {
                let seqs = s
                    .iter()
                    .map(|s| s.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| Refusal::invalid("invalid request: stop_sequences must be a list of strings"))?;
                if seqs.len() > MAX_STOP_SEQUENCES {
                    return Err(Refusal::invalid(format!(
                        "invalid request: stop_sequences must have at most {MAX_STOP_SEQUENCES} elements - received {}",
                        seqs.len()
                    )));
                }
                seqs
            }
            Some(_) => return Err(Refusal::invalid("invalid request: stop_sequences must be a list of strings")),
        };
        Ok(Self { model, stream, input_tokens: tokens(chars, profile), id, max_tokens, stop_sequences, tool })
    }
}

/// `messages`: a non-empty list of turns of known roles, each with what its role needs.
/// Returns the characters of their text and the text of the last user turn.
fn check_messages(messages: Option<&Value>) -> Result<(usize, String), Refusal> {
    let messages = match messages {
        Some(Value::Array(m)) if !m.is_empty() => m,
        None | Some(Value::Null) => return Err(Refusal::invalid("invalid request: messages is required")),
        Some(_) => return Err(Refusal::invalid("invalid request: messages must be a non-empty list")),
    };
    let (mut chars, mut last_user) = (0, String::new());
    for (i, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or_default();
        let content = message.get("content").filter(|c| !c.is_null());
        let text = match role {
            "user" | "system" => match content.map(text_of) {
                Some(Some(text)) if !text.trim().is_empty() => text,
                _ => return Err(Refusal::invalid("message must not be empty in a turn")),
            },
            "assistant" => {
                let calls = message.get("tool_calls").and_then(Value::as_array).is_some_and(|c| !c.is_empty());
                match content.map(text_of) {
                    Some(Some(text)) if !text.is_empty() => text,
                    Some(None) => {
                        return Err(Refusal::invalid(format!(
                            "invalid request: messages[{i}].content must be a string or a list of content items"
                        )));
                    }
                    _ if calls => String::new(),
                    _ => return Err(Refusal::invalid("message must not be empty in a turn")),
                }
            }
            "tool" => {
                if message.get("tool_call_id").and_then(Value::as_str).is_none_or(str::is_empty) {
                    return Err(Refusal::invalid(format!(
                        "invalid request: messages[{i}].tool_call_id is required for tool messages"
                    )));
                }
                match content.map(text_of) {
                    Some(Some(text)) => text,
                    _ => return Err(Refusal::invalid("message must not be empty in a turn")),
                }
            }
            other => {
                return Err(Refusal::invalid(format!(
                    "invalid request: invalid role '{other}' in messages at index {i}. Role must be one of the \
                     following: user, assistant, system, tool"
                )));
            }
        };
        chars += text.chars().count();
        if role == "user" {
            last_user = text;
        }
    }
    Ok((chars, last_user))
}

/// The text of a message's `content`: a string, or the `text` of its content items (`None` when
/// it is neither).
fn text_of(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let mut text = String::new();
            for item in items {
                match item.get("type").and_then(Value::as_str) {
                    Some("text") => text.push_str(item.get("text").and_then(Value::as_str)?),
                    Some("document") => text.push_str(&item.get("document")?.to_string()),
                    Some("image_url" | "thinking") => {}
                    _ => return None,
                }
            }
            Some(text)
        }
        _ => None,
    }
}

/// The names of `tools` (`{"type":"function","function":{"name",...}}`), in order.
fn tool_names(tools: Option<&Value>) -> Result<Vec<String>, Refusal> {
    let tools = match tools {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(t)) => t,
        Some(_) => return Err(Refusal::invalid("invalid request: tools must be a list")),
    };
    tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            if tool.get("type").and_then(Value::as_str) != Some("function") {
                return Err(Refusal::invalid(format!("invalid request: tools[{i}].type must be 'function'")));
            }
            match tool.get("function").and_then(|f| f.get("name")).and_then(Value::as_str) {
                Some(name) if !name.is_empty() => Ok(name.to_owned()),
                _ => Err(Refusal::invalid(format!("invalid request: tools[{i}].function.name is required"))),
            }
        })
        .collect()
}

impl Embed {
    /// Checks the Embed body as Cohere does; the first problem found otherwise.
    pub(super) fn read(body: &[u8], id: u64, profile: &MockProfile) -> Result<Self, Refusal> {
        let req = object(body)?;
        let model = model(&req)?;
        if !req.get("input_type").and_then(Value::as_str).is_some_and(|t| INPUT_TYPES.contains(&t)) {
            return Err(Refusal::invalid("invalid request: valid input_type must be provided with the provided model"));
        }
        let list = |name: &str| match req.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) if !items.is_empty() => Ok(Some(items)),
            Some(_) => Err(Refusal::invalid(format!("invalid request: {name} must be a non-empty list"))),
        };
        let (texts, images, inputs) = (list("texts")?, list("images")?, list("inputs")?);
        let (texts, images, inputs, chars) = match (texts, images, inputs) {
            (Some(texts), None, None) => {
                if texts.len() > MAX_TEXTS {
                    return Err(Refusal::invalid(format!(
                        "invalid request: total number of texts must be at most {MAX_TEXTS} - received {}",
                        texts.len()
                    )));
                }
                let texts = texts
                    .iter()
                    .map(|t| t.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| Refusal::invalid("invalid request: texts must be a list of strings"))?;
                let chars = texts.iter().map(|t| t.chars().count()).sum();
                let n = texts.len();
                (Some(texts), 0, n, chars)
            }
            (None, Some(images), None) => (None, images.len(), images.len(), 0),
            (None, None, Some(inputs)) => {
                let chars = inputs.iter().map(|i| i.to_string().len()).sum();
                (None, 0, inputs.len(), chars)
            }
            _ => {
                return Err(Refusal::invalid(
                    "invalid request: exactly one of texts, images or inputs must be provided",
                ));
            }
        };
        let types = match req.get("embedding_types") {
            None | Some(Value::Null) => vec!["float"],
            Some(Value::Array(types)) if !types.is_empty() => types
                .iter()
                .map(|t| t.as_str().and_then(|t| EMBEDDING_TYPES.iter().copied().find(|known| *known == t)))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    Refusal::invalid(format!(
                        "invalid request: embedding_types must be a list of: {}",
                        EMBEDDING_TYPES.join(", ")
                    ))
                })?,
            Some(_) => return Err(Refusal::invalid("invalid request: embedding_types must be a non-empty list")),
        };
        let dims = req
            .get("output_dimension")
            .and_then(Value::as_u64)
            .and_then(|d| usize::try_from(d).ok())
            .filter(|d| *d > 0)
            .unwrap_or(profile.embedding_dims);
        Ok(Self { model, id, texts, images, inputs, dims, types, input_tokens: tokens(chars, profile) })
    }
}
