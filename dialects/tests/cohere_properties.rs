//! Properties of the Cohere request translation, with a fixed proptest seed: every message, tool
//! call and tool result of a chat request arrives, in order, with its role.

use proptest::{
    prelude::*,
    test_runner::{RngAlgorithm, RngSeed},
};
use serde_json::{Value, json};
use switchyard_dialects::chat::ChatRequest;
use switchyard_dialects::cohere::{RequestOptions, request_from_chat};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(20),
        rng_algorithm: RngAlgorithm::ChaCha,
        ..ProptestConfig::default()
    }
}

fn text() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zé\"\\\\ \n✓]{0,12}").expect("a valid regex")
}

#[derive(Clone, Debug)]
enum Turn {
    System(String),
    User(String),
    Assistant(String, Vec<(String, String)>),
    Tool(String, String),
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        1 => text().prop_map(Turn::System),
        3 => text().prop_map(Turn::User),
        2 => (text(), proptest::collection::vec(("[a-z_]{1,8}", text()), 0..3)).prop_map(|(t, c)| Turn::Assistant(t, c)),
        2 => ("[a-z0-9_]{1,10}", text()).prop_map(|(id, t)| Turn::Tool(id, t)),
    ]
}

fn chat_message(turn: &Turn) -> Value {
    match turn {
        Turn::System(t) => json!({"role": "system", "content": t}),
        Turn::User(t) => json!({"role": "user", "content": t}),
        Turn::Assistant(t, calls) => {
            let calls: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(j, (name, args))| {
                    json!({"id": format!("c{j}"), "type": "function",
                    "function": {"name": name, "arguments": args}})
                })
                .collect();
            if calls.is_empty() {
                json!({"role": "assistant", "content": t})
            } else {
                json!({"role": "assistant", "content": t, "tool_calls": calls})
            }
        }
        Turn::Tool(id, t) => json!({"role": "tool", "tool_call_id": id, "content": t}),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_message_tool_call_and_tool_result_arrives_in_order(turns in proptest::collection::vec(turn(), 1..8)) {
        let body = json!({"model": "smart", "messages": turns.iter().map(chat_message).collect::<Vec<_>>()});
        let req: ChatRequest = serde_json::from_value(body).expect("a chat request");
        let out = serde_json::to_value(request_from_chat(req, &RequestOptions::new("command-a-03-2025")).expect("translates"))
            .expect("serializes");
        let messages = out["messages"].as_array().expect("messages");
        prop_assert_eq!(messages.len(), turns.len());
        for (turn, message) in turns.iter().zip(messages) {
            match turn {
                Turn::System(t) => prop_assert_eq!(message, &json!({"role": "system", "content": t})),
                Turn::User(t) => prop_assert_eq!(message, &json!({"role": "user", "content": t})),
                Turn::Assistant(t, calls) => {
                    prop_assert_eq!(&message["role"], "assistant");
                    prop_assert_eq!(&message["content"], t);
                    let sent: Vec<(String, String)> = message["tool_calls"].as_array().into_iter().flatten()
                        .map(|c| (c["function"]["name"].as_str().unwrap_or_default().to_owned(),
                                  c["function"]["arguments"].as_str().unwrap_or_default().to_owned()))
                        .collect();
                    prop_assert_eq!(&sent, calls);
                }
                Turn::Tool(id, t) => prop_assert_eq!(message, &json!({"role": "tool", "tool_call_id": id, "content": t})),
            }
        }
    }
}
