//! Property: any conversation of messages, function calls and their outputs translates to chat
//! with every text, call id, name, arguments and output arriving in order.

use proptest::prelude::*;
use serde_json::{Value, json};
use switchyard_dialects::chat::{Content, Role};
use switchyard_dialects::responses::{ResponsesRequest, chat_from_request};

/// What a reader of the conversation sees, in order.
#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Text(&'static str, String),
    Call { id: String, name: String, arguments: String },
    Output { id: String, text: String },
}

fn item() -> impl Strategy<Value = (Value, Seen)> {
    let text = "\\PC{0,12}";
    prop_oneof![
        (prop_oneof![Just("user"), Just("assistant"), Just("system"), Just("developer")], text).prop_map(
            |(role, text)| {
                let seen = Seen::Text(role, text.clone());
                (json!({"role": role, "content": text}), seen)
            }
        ),
        (text, text).prop_map(|(a, b)| {
            let seen = Seen::Text("user", format!("{a}{b}"));
            let parts = json!([{"type": "input_text", "text": a}, {"type": "input_text", "text": b}]);
            (json!({"type": "message", "role": "user", "content": parts}), seen)
        }),
        (text, text).prop_map(|(a, b)| {
            let seen = Seen::Text("assistant", format!("{a}{b}"));
            let parts = json!([{"type": "output_text", "text": a, "annotations": []},
                               {"type": "output_text", "text": b, "annotations": []}]);
            (json!({"type": "message", "role": "assistant", "content": parts}), seen)
        }),
        ("[a-z0-9_]{1,10}", "[a-zA-Z_]{1,10}", text).prop_map(|(id, name, arguments)| {
            let seen = Seen::Call { id: id.clone(), name: name.clone(), arguments: arguments.clone() };
            (json!({"type": "function_call", "call_id": id, "name": name, "arguments": arguments}), seen)
        }),
        ("[a-z0-9_]{1,10}", text).prop_map(|(id, text)| {
            let seen = Seen::Output { id: id.clone(), text: text.clone() };
            (json!({"type": "function_call_output", "call_id": id, "output": text}), seen)
        }),
        Just((json!({"type": "reasoning", "id": "rs_1", "summary": []}), Seen::Text("dropped", String::new()))),
    ]
}

fn text_of(content: Option<&Content>) -> String {
    match content {
        Some(Content::Text(t)) => t.clone(),
        Some(Content::Parts(parts)) => serde_json::to_value(parts)
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|p| p["text"].as_str().map(str::to_owned))
            .collect(),
        _ => String::new(),
    }
}

proptest! {
    #[test]
    fn items_arrive_in_order(items in proptest::collection::vec(item(), 1..12), instructions in proptest::option::of("\\PC{1,8}")) {
        let (inputs, expected): (Vec<Value>, Vec<Seen>) = items.into_iter().unzip();
        let mut expected: Vec<Seen> = expected.into_iter().filter(|s| *s != Seen::Text("dropped", String::new())).collect();
        let mut body = json!({"model": "m", "input": inputs});
        if let Some(instructions) = &instructions {
            body["instructions"] = json!(instructions);
            expected.insert(0, Seen::Text("system", instructions.clone()));
        }
        let req: ResponsesRequest = serde_json::from_value(body).expect("parses");
        let chat = match chat_from_request(req) {
            Ok(chat) => chat,
            // Only a conversation of nothing but reasoning is refused.
            Err(e) => {
                prop_assert_eq!(e.field.as_str(), "input");
                prop_assert!(expected.is_empty());
                return Ok(());
            }
        };
        let mut seen = Vec::new();
        for message in &chat.messages {
            match message.role {
                Role::Tool => seen.push(Seen::Output {
                    id: message.tool_call_id.clone().unwrap_or_default(),
                    text: text_of(message.content.as_ref()),
                }),
                role => {
                    let name = match role {
                        Role::User => "user",
                        Role::Assistant => "assistant",
                        Role::System => "system",
                        _ => "developer",
                    };
                    if message.content.is_some() {
                        seen.push(Seen::Text(name, text_of(message.content.as_ref())));
                    }
                    for call in message.tool_calls.iter().flatten() {
                        seen.push(Seen::Call {
                            id: call.id.clone(),
                            name: call.function.name.clone(),
                            arguments: call.function.arguments.clone(),
                        });
                    }
                }
            }
        }
        prop_assert_eq!(seen, expected);
    }
}
