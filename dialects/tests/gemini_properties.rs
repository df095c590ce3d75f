//! Properties of the Gemini translation, with fixed proptest seeds: every message text, tool call
//! (name and arguments) and tool result of a chat request arrives, in order; turns never repeat a
//! role; answers keep their text and call arguments.

use proptest::{
    prelude::*,
    test_runner::{RngAlgorithm, RngSeed},
};
use serde_json::{Value, json};
use switchyard_dialects::chat::ChatRequest;
use switchyard_dialects::gemini::{GenerateContentResponse, RequestOptions, chat_from_response, request_from_chat};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(20),
        rng_algorithm: RngAlgorithm::ChaCha,
        ..ProptestConfig::default()
    }
}

/// Non-empty text with spaces, newlines, quotes and non-ASCII characters.
fn text() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zé\"\\\\ \n✓]{1,12}").expect("a valid regex")
}

/// A tool call's arguments: a JSON object of scalars.
fn arguments() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        text().prop_map(Value::from)
    ];
    proptest::collection::btree_map("[a-z]{1,6}", scalar, 0..4).prop_map(|m| Value::Object(m.into_iter().collect()))
}

#[derive(Clone, Debug)]
enum Turn {
    System(String),
    User(String),
    Assistant(String, Vec<(String, Value)>),
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        1 => text().prop_map(Turn::System),
        3 => text().prop_map(Turn::User),
        2 => (text(), proptest::collection::vec(("[a-z_]{1,8}", arguments()), 0..3))
            .prop_map(|(t, calls)| Turn::Assistant(t, calls)),
    ]
}

/// The chat messages of `turns` (each assistant call answered by a tool message), and what must
/// arrive: system texts, then every other text, call and result in order.
fn conversation(turns: &[Turn]) -> (Value, Vec<String>, Vec<Value>) {
    let mut messages = vec![json!({"role": "user", "content": "start"})];
    let mut system = Vec::new();
    let mut expected = vec![json!({"text": "start"})];
    for (i, turn) in turns.iter().enumerate() {
        match turn {
            Turn::System(t) => {
                messages.push(json!({"role": "system", "content": t}));
                system.push(t.clone());
            }
            Turn::User(t) => {
                messages.push(json!({"role": "user", "content": t}));
                expected.push(json!({"text": t}));
            }
            Turn::Assistant(t, calls) => {
                let tool_calls: Vec<Value> = calls
                    .iter()
                    .enumerate()
                    .map(|(j, (name, args))| {
                        json!({"id": format!("call_{i}_{j}"), "type": "function",
                               "function": {"name": name, "arguments": args.to_string()}})
                    })
                    .collect();
                messages.push(json!({"role": "assistant", "content": t, "tool_calls": tool_calls}));
                expected.push(json!({"text": t}));
                for (name, args) in calls {
                    expected.push(json!({"functionCall": {"name": name, "args": args}}));
                }
                for (j, (name, _)) in calls.iter().enumerate() {
                    let result = format!("result {i} {j}");
                    messages.push(json!({"role": "tool", "tool_call_id": format!("call_{i}_{j}"), "content": result}));
                    expected.push(json!({"functionResponse": {"name": name, "response": {"content": result}}}));
                }
            }
        }
    }
    (json!({"model": "m", "messages": messages}), system, expected)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_text_call_and_result_arrives_in_order(turns in proptest::collection::vec(turn(), 0..8)) {
        let (body, system, expected) = conversation(&turns);
        let req: ChatRequest = serde_json::from_value(body).expect("a chat request");
        let out = request_from_chat(req, &RequestOptions::new("gemini-2.5-flash")).expect("translates");
        let out = serde_json::to_value(out).expect("serializes");

        let system_texts: Vec<String> = out["systemInstruction"]["parts"]
            .as_array()
            .map(|parts| parts.iter().filter_map(|p| p["text"].as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        prop_assert_eq!(system_texts, system);

        let contents = out["contents"].as_array().expect("contents");
        let parts: Vec<Value> = contents.iter().flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default()).collect();
        prop_assert_eq!(parts, expected);
        for pair in contents.windows(2) {
            prop_assert_ne!(&pair[0]["role"], &pair[1]["role"], "two turns of one role in a row");
        }
        prop_assert!(contents.iter().all(|c| c["role"] == "user" || c["role"] == "model"));
    }

    #[test]
    fn answers_keep_their_text_and_call_arguments(
        texts in proptest::collection::vec(text(), 0..4),
        calls in proptest::collection::vec(("[a-z_]{1,8}", arguments()), 0..4),
    ) {
        let mut parts: Vec<Value> = texts.iter().map(|t| json!({"text": t})).collect();
        parts.extend(calls.iter().map(|(name, args)| json!({"functionCall": {"name": name, "args": args}})));
        let answer: GenerateContentResponse = serde_json::from_value(json!({
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4, "totalTokenCount": 7},
        })).expect("an answer");
        let chat = chat_from_response(answer, "m", 0);
        let message = &chat.choices[0].message;
        let joined: String = texts.concat();
        prop_assert_eq!(message.content.clone(), (!joined.is_empty()).then_some(joined));
        let got: Vec<(String, Value)> = message.tool_calls.iter().flatten()
            .map(|c| (c.function.name.clone(), serde_json::from_str(&c.function.arguments).expect("JSON text")))
            .collect();
        prop_assert_eq!(&got, &calls);
        let ids: std::collections::BTreeSet<&str> =
            message.tool_calls.iter().flatten().map(|c| c.id.as_str()).collect();
        prop_assert_eq!(ids.len(), calls.len(), "tool call ids repeat");
        let usage = chat.usage.expect("usage");
        prop_assert_eq!(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
    }
}
