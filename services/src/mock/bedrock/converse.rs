//! A Converse / ConverseStream request, read as Bedrock validates it (`ConverseRequest` in the
//! `bedrock-runtime` model): the model id, `messages` (required; `user` and `assistant` turns,
//! alternating, starting with `user`, each with a non-empty list of content blocks that set exactly
//! one member), `system`, `inferenceConfig` and `toolConfig`.

use serde_json::{Map, Value};

use super::answer::Exception;
use crate::mock::MockProfile;

/// The members of a `ContentBlock` (a union: a block sets exactly one).
const CONTENT_BLOCK: &[&str] = &[
    "text",
    "image",
    "document",
    "video",
    "toolUse",
    "toolResult",
    "guardContent",
    "cachePoint",
    "reasoningContent",
    "citationsContent",
    "searchResult",
];

/// The members of a `SystemContentBlock`.
const SYSTEM_BLOCK: &[&str] = &["text", "guardContent", "cachePoint"];

/// The longest model id (`ConversationalModelId`).
const MAX_MODEL_ID: usize = 2048;

/// One Converse request, read.
#[derive(Debug)]
pub(in crate::mock) struct Converse {
    pub(super) model: String,
    pub(super) input_tokens: u64,
    /// The random part of the tool call's id.
    pub(super) id: u64,
    pub(super) max_tokens: Option<u64>,
    pub(super) stop_sequences: Vec<String>,
    /// The tool the answer calls, if any.
    pub(super) tool: Option<String>,
}

impl Converse {
    /// Checks the model id and the body as Bedrock does; the first problem found otherwise.
    pub(super) fn read(model: String, body: &[u8], profile: &MockProfile, id: u64) -> Result<Self, Exception> {
        check_model_id(&model)?;
        let Ok(Value::Object(req)) = serde_json::from_slice::<Value>(body) else {
            return Err(Exception::validation("Malformed input request, please reformat your input and try again."));
        };
        let messages = check_messages(req.get("messages"))?;
        check_system(req.get("system"))?;
        let (max_tokens, stop_sequences) = inference_config(req.get("inferenceConfig"))?;
        let tools = tool_config(req.get("toolConfig"))?;
        let uses_tools = messages.iter().any(|m| {
            m.get("content").and_then(Value::as_array).is_some_and(|blocks| {
                blocks.iter().any(|b| b.get("toolUse").is_some() || b.get("toolResult").is_some())
            })
        });
        if uses_tools && tools.is_none() {
            return Err(Exception::validation(
                "The toolConfig field must be defined when using toolUse and toolResult content blocks.",
            ));
        }
        let tool = match tools {
            Some(Tools { forced: Some(name), .. }) => Some(name),
            Some(Tools { first, .. }) if asks_for_a_tool(messages) => Some(first),
            _ => None,
        };
        let input_tokens = profile.prompt_tokens.unwrap_or_else(|| input_chars(&req).div_ceil(4).max(1));
        Ok(Self { model, input_tokens, id, max_tokens, stop_sequences, tool })
    }
}

/// A constraint violation in the words of AWS's validation layer.
fn constraint(value: &str, at: &str, rule: &str) -> Exception {
    Exception::validation(format!(
        "1 validation error detected: Value {value} at '{at}' failed to satisfy constraint: {rule}"
    ))
}

/// `ConversationalModelId`: 1 to 2048 characters of a model id, an inference profile id or an ARN.
fn check_model_id(model: &str) -> Result<(), Exception> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-_.:/".contains(c);
    if model.is_empty() || model.len() > MAX_MODEL_ID || !model.chars().all(allowed) {
        return Err(constraint(
            &format!("'{model}'"),
            "modelId",
            "Member must satisfy regular expression pattern: (arn:aws(-[^:]+)?:bedrock:...)|([a-zA-Z0-9-:.]+)",
        ));
    }
    Ok(())
}

/// `messages`: required, a list of alternating `user` / `assistant` turns starting with `user`,
/// each with a non-empty list of one-member content blocks.
fn check_messages(messages: Option<&Value>) -> Result<&[Value], Exception> {
    let messages = match messages {
        None | Some(Value::Null) => return Err(constraint("null", "messages", "Member must not be null")),
        Some(Value::Array(m)) => m,
        Some(_) => return Err(Exception::validation("Malformed input request: messages must be a list.")),
    };
    let mut previous = None;
    for (i, message) in messages.iter().enumerate() {
        // AWS's constraint messages count list members from 1.
        let at = i + 1;
        let role = match message.get("role") {
            None | Some(Value::Null) => {
                return Err(constraint("null", &format!("messages.{at}.member.role"), "Member must not be null"));
            }
            Some(Value::String(r)) if r == "user" || r == "assistant" => r.as_str(),
            Some(other) => {
                let value = other.as_str().map_or_else(|| other.to_string(), |r| format!("'{r}'"));
                return Err(constraint(
                    &value,
                    &format!("messages.{at}.member.role"),
                    "Member must satisfy enum value set: [user, assistant]",
                ));
            }
        };
        if previous.is_none() && role != "user" {
            return Err(Exception::validation(
                "A conversation must start with a user message. Try again with a conversation that starts with a \
                 user message.",
            ));
        }
        if previous == Some(role) {
            return Err(Exception::validation(
                "A conversation must alternate between user and assistant roles. Make sure the conversation \
                 alternates between user and assistant roles and try again.",
            ));
        }
        previous = Some(role);
        let blocks = match message.get("content") {
            None | Some(Value::Null) => {
                return Err(constraint("null", &format!("messages.{at}.member.content"), "Member must not be null"));
            }
            Some(Value::Array(blocks)) => blocks,
            Some(_) => return Err(Exception::validation("Malformed input request: content must be a list.")),
        };
        if blocks.is_empty() {
            return Err(Exception::validation(format!(
                "The content field in the Message object at messages.{i} is empty. Add a ContentBlock object to the \
                 content field and try again."
            )));
        }
        for (j, block) in blocks.iter().enumerate() {
            check_union(block, CONTENT_BLOCK, &format!("messages.{i}.content.{j}"), "ContentBlock")?;
        }
    }
    if messages.is_empty() {
        return Err(Exception::validation(
            "A conversation must start with a user message. Try again with a conversation that starts with a user \
             message.",
        ));
    }
    Ok(messages)
}

/// A union value: an object setting exactly one of `members`.
fn check_union(value: &Value, members: &[&str], at: &str, shape: &str) -> Result<(), Exception> {
    let set: Vec<&String> =
        value.as_object().map(|o| o.iter().filter(|(_, v)| !v.is_null()).map(|(k, _)| k).collect()).unwrap_or_default();
    match set.as_slice() {
        [one] if members.contains(&one.as_str()) => Ok(()),
        [one] => Err(Exception::validation(format!("{at}: {shape} has no member `{one}`."))),
        _ => Err(Exception::validation(format!("{at}: a {shape} must set exactly one member, it sets {}.", set.len()))),
    }
}

/// `system`: a list of system content blocks; a text block's text must not be empty.
fn check_system(system: Option<&Value>) -> Result<(), Exception> {
    let blocks = match system {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(blocks)) => blocks,
        Some(_) => return Err(Exception::validation("Malformed input request: system must be a list.")),
    };
    for (i, block) in blocks.iter().enumerate() {
        check_union(block, SYSTEM_BLOCK, &format!("system.{i}"), "SystemContentBlock")?;
        if block.get("text").and_then(Value::as_str) == Some("") {
            return Err(constraint(
                "''",
                &format!("system.{}.member.text", i + 1),
                "Member must have length greater than or equal to 1",
            ));
        }
    }
    Ok(())
}

/// `inferenceConfig`: `maxTokens` (at least 1), `temperature` and `topP` (0 to 1), `stopSequences`
/// (non-empty strings). Returns the token limit and the stop sequences.
fn inference_config(config: Option<&Value>) -> Result<(Option<u64>, Vec<String>), Exception> {
    let Some(config) = config.filter(|c| !c.is_null()) else {
        return Ok((None, Vec::new()));
    };
    let max_tokens = match config.get("maxTokens") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_i64() {
            Some(m) if m >= 1 => Some(m.unsigned_abs()),
            _ => {
                return Err(constraint(
                    &format!("'{n}'"),
                    "inferenceConfig.maxTokens",
                    "Member must have value greater than or equal to 1",
                ));
            }
        },
        Some(_) => return Err(Exception::validation("Malformed input request: maxTokens must be an integer.")),
    };
    for name in ["temperature", "topP"] {
        match config.get(name) {
            None | Some(Value::Null) => {}
            Some(Value::Number(n)) if n.as_f64().is_some_and(|x| (0.0..=1.0).contains(&x)) => {}
            Some(Value::Number(n)) => {
                return Err(constraint(
                    &format!("'{n}'"),
                    &format!("inferenceConfig.{name}"),
                    "Member must have value less than or equal to 1",
                ));
            }
            Some(_) => return Err(Exception::validation(format!("Malformed input request: {name} must be a number."))),
        }
    }
    let stop_sequences = match config.get("stopSequences") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(seqs)) => {
            let mut out = Vec::with_capacity(seqs.len());
            for seq in seqs {
                match seq.as_str() {
                    Some(s) if !s.is_empty() => out.push(s.to_owned()),
                    _ => {
                        return Err(constraint(
                            "''",
                            "inferenceConfig.stopSequences",
                            "Member must have length greater than or equal to 1",
                        ));
                    }
                }
            }
            out
        }
        Some(_) => return Err(Exception::validation("Malformed input request: stopSequences must be a list.")),
    };
    Ok((max_tokens, stop_sequences))
}

/// The tools of a `toolConfig`: the first one's name, and the one `toolChoice` forces, if any.
struct Tools {
    first: String,
    forced: Option<String>,
}

/// `toolConfig`: `tools` (required, at least one `toolSpec` with a `name` and an `inputSchema`)
/// and `toolChoice` (`auto`, `any` or `tool` with a `name`).
fn tool_config(config: Option<&Value>) -> Result<Option<Tools>, Exception> {
    let Some(config) = config.filter(|c| !c.is_null()) else {
        return Ok(None);
    };
    let tools = match config.get("tools") {
        None | Some(Value::Null) => return Err(constraint("null", "toolConfig.tools", "Member must not be null")),
        Some(Value::Array(tools)) => tools,
        Some(_) => return Err(Exception::validation("Malformed input request: tools must be a list.")),
    };
    let mut names = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        check_union(tool, &["toolSpec", "cachePoint"], &format!("toolConfig.tools.{i}"), "Tool")?;
        let Some(spec) = tool.get("toolSpec") else { continue };
        let Some(name) = spec.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) else {
            return Err(constraint(
                "null",
                &format!("toolConfig.tools.{}.member.toolSpec.name", i + 1),
                "Member must not be null",
            ));
        };
        if spec.get("inputSchema").is_none_or(Value::is_null) {
            return Err(constraint(
                "null",
                &format!("toolConfig.tools.{}.member.toolSpec.inputSchema", i + 1),
                "Member must not be null",
            ));
        }
        names.push(name.to_owned());
    }
    let Some(first) = names.first().cloned() else {
        return Err(constraint("'[]'", "toolConfig.tools", "Member must have length greater than or equal to 1"));
    };
    let forced = match config.get("toolChoice") {
        None | Some(Value::Null) => None,
        Some(choice) => {
            check_union(choice, &["auto", "any", "tool"], "toolConfig.toolChoice", "ToolChoice")?;
            if choice.get("any").is_some() {
                Some(first.clone())
            } else if let Some(tool) = choice.get("tool") {
                match tool.get("name").and_then(Value::as_str) {
                    Some(name) if names.iter().any(|n| n == name) => Some(name.to_owned()),
                    Some(name) => {
                        return Err(Exception::validation(format!(
                            "The tool {name} named in toolChoice is not in toolConfig.tools."
                        )));
                    }
                    None => {
                        return Err(constraint("null", "toolConfig.toolChoice.tool.name", "Member must not be null"));
                    }
                }
            } else {
                None
            }
        }
    };
    Ok(Some(Tools { first, forced }))
}

/// Whether the last user turn's text asks to "call a tool" (so a mock conversation can reach a
/// tool call without forcing one).
fn asks_for_a_tool(messages: &[Value]) -> bool {
    let last_user = messages.iter().rev().find(|m| m.get("role").and_then(Value::as_str) == Some("user"));
    last_user.and_then(|m| m.get("content")).and_then(Value::as_array).is_some_and(|blocks| {
        blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .any(|t| t.to_ascii_lowercase().contains("call a tool"))
    })
}

/// Characters of the text in `system` and in every message's text blocks.
fn input_chars(req: &Map<String, Value>) -> u64 {
    let text_len = |blocks: &Value| -> usize {
        blocks.as_array().map_or(0, |b| {
            b.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).map(|t| t.chars().count()).sum()
        })
    };
    let system = req.get("system").map_or(0, text_len);
    let messages: usize = req
        .get("messages")
        .and_then(Value::as_array)
        .map_or(0, |m| m.iter().filter_map(|m| m.get("content")).map(text_len).sum());
    u64::try_from(system + messages).unwrap_or(u64::MAX)
}
