//! Reading a request's `input`: a string, or items of known `type`s, messages with a known role
//! and content parts of their role's kinds, function calls with their ids and payloads; and the
//! text in it, for token counts and the "call a tool" trigger.

use serde_json::{Map, Value, json};

use super::request::{CALL_A_TOOL, Refusal};

/// The `type`s of input items (`ResponseInputItemParam`).
const ITEM_TYPES: &[&str] = &[
    "message",
    "file_search_call",
    "computer_call",
    "computer_call_output",
    "web_search_call",
    "function_call",
    "function_call_output",
    "tool_search_call",
    "tool_search_output",
    "additional_tools",
    "reasoning",
    "compaction",
    "image_generation_call",
    "code_interpreter_call",
    "local_shell_call",
    "local_shell_call_output",
    "shell_call",
    "shell_call_output",
    "apply_patch_call",
    "apply_patch_call_output",
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_approval_response",
    "mcp_call",
    "custom_tool_call_output",
    "custom_tool_call",
    "compaction_trigger",
    "item_reference",
    "program",
    "program_output",
];

const ROLES: &[&str] = &["user", "assistant", "system", "developer"];
/// Content parts of a `user`, `system` or `developer` message.
const INPUT_PARTS: &[&str] = &["input_text", "input_image", "input_file"];
/// Content parts of an `assistant` message.
const OUTPUT_PARTS: &[&str] = &["output_text", "refusal"];

/// `input`: a string (one `user` message) or a list of known items.
pub(super) fn read_input(input: Option<&Value>) -> Result<Vec<Value>, Refusal> {
    match input {
        None => Err(Refusal::missing("input")),
        Some(Value::String(text)) => Ok(vec![json!({"role": "user", "content": text})]),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                check_item(i, item)?;
            }
            Ok(items.clone())
        }
        Some(other) => Err(Refusal::invalid_type("input", "one of an array of objects or string", other)),
    }
}

fn check_item(i: usize, item: &Value) -> Result<(), Refusal> {
    let at = format!("input[{i}]");
    let Value::Object(item) = item else {
        return Err(Refusal::invalid_type(&at, "an object", item));
    };
    let kind = match item.get("type") {
        // Without a type: a message (`EasyInputMessage`) or an item reference.
        None | Some(Value::Null) if item.contains_key("role") || !item.contains_key("id") => "message",
        None | Some(Value::Null) => "item_reference",
        Some(Value::String(t)) if ITEM_TYPES.contains(&t.as_str()) => t.as_str(),
        Some(Value::String(t)) => return Err(Refusal::invalid_value(&format!("{at}.type"), t, ITEM_TYPES)),
        Some(other) => return Err(Refusal::invalid_type(&format!("{at}.type"), "a string", other)),
    };
    let required: &[&str] = match kind {
        "message" => return check_message(&at, item),
        "function_call" => &["call_id", "name", "arguments"],
        "function_call_output" => &["call_id", "output"],
        "item_reference" => &["id"],
        _ => &[],
    };
    for field in required {
        match item.get(*field) {
            None => return Err(Refusal::missing(&format!("{at}.{field}"))),
            Some(Value::String(_)) => {}
            // A function call's output may be a list of content parts.
            Some(Value::Array(_)) if *field == "output" => {}
            Some(other) => return Err(Refusal::invalid_type(&format!("{at}.{field}"), "a string", other)),
        }
    }
    Ok(())
}

/// A message: a known role, and content that is a string or parts of the role's kinds.
fn check_message(at: &str, message: &Map<String, Value>) -> Result<(), Refusal> {
    let role = match message.get("role") {
        None => return Err(Refusal::missing(&format!("{at}.role"))),
        Some(Value::String(r)) if ROLES.contains(&r.as_str()) => r.as_str(),
        Some(Value::String(r)) => return Err(Refusal::invalid_value(&format!("{at}.role"), r, ROLES)),
        Some(other) => return Err(Refusal::invalid_type(&format!("{at}.role"), "a string", other)),
    };
    let parts = match message.get("content") {
        None => return Err(Refusal::missing(&format!("{at}.content"))),
        Some(Value::String(_)) => return Ok(()),
        Some(Value::Array(parts)) => parts,
        Some(other) => {
            return Err(Refusal::invalid_type(&format!("{at}.content"), "one of an array of objects or string", other));
        }
    };
    let allowed = if role == "assistant" { OUTPUT_PARTS } else { INPUT_PARTS };
    for (j, part) in parts.iter().enumerate() {
        let part_at = format!("{at}.content[{j}]");
        let Value::Object(part) = part else {
            return Err(Refusal::invalid_type(&part_at, "an object", part));
        };
        match part.get("type") {
            None => return Err(Refusal::missing(&format!("{part_at}.type"))),
            Some(Value::String(t)) if allowed.contains(&t.as_str()) => {
                if matches!(t.as_str(), "input_text" | "output_text") {
                    match part.get("text") {
                        None => return Err(Refusal::missing(&format!("{part_at}.text"))),
                        Some(Value::String(_)) => {}
                        Some(other) => {
                            return Err(Refusal::invalid_type(&format!("{part_at}.text"), "a string", other));
                        }
                    }
                }
            }
            // OpenAI names the part, not its type, here.
            Some(Value::String(t)) => return Err(Refusal::invalid_value(&part_at, t, allowed)),
            Some(other) => return Err(Refusal::invalid_type(&format!("{part_at}.type"), "a string", other)),
        }
    }
    Ok(())
}

/// Whether the last input item is a user message saying "call a tool".
pub(super) fn asks_for_a_tool(input: &[Value]) -> bool {
    input.last().is_some_and(|item| {
        item.get("role").and_then(Value::as_str) == Some("user")
            && item.get("content").is_some_and(|c| text_of(c).to_lowercase().contains(CALL_A_TOOL))
    })
}

/// The text of a message's content: a string, or its parts' `text`.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
        _ => String::new(),
    }
}

/// Characters of an item's text (message content, call arguments and outputs), or of a string.
pub(super) fn text_chars(item: &Value) -> u64 {
    let chars = match item {
        Value::String(s) => s.chars().count(),
        _ => ["content", "arguments", "output"]
            .iter()
            .filter_map(|k| item.get(*k))
            .map(|v| text_of(v).chars().count())
            .sum(),
    };
    u64::try_from(chars).unwrap_or(u64::MAX)
}
