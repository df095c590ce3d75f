//! Properties of the `/v1/messages` front door's translation, with fixed proptest seeds: an
//! Anthropic request through the hub and back to Anthropic keeps its meaning; a hub answer
//! through Anthropic and back keeps its text, tool calls, finish reason and usage; a hub stream
//! encoded as Anthropic events is well formed and, read back by `ChunkTranslator`, says the same.

use proptest::{
    prelude::*,
    test_runner::{RngAlgorithm, RngSeed},
};
use serde_json::{Value, json};
use switchyard_dialects::anthropic::{
    ChunkTranslator, ContentBlock, EventEncoder, MessageContent, MessagesRequest, RequestOptions, Role, StreamEvent,
    System, Translated, chat_from_request, chat_from_response, request_from_chat, response_from_chat,
};
use switchyard_dialects::chat::{ChatCompletion, ChatCompletionChunk};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(23),
        rng_algorithm: RngAlgorithm::ChaCha,
        ..ProptestConfig::default()
    }
}

/// Text with spaces, newlines, quotes and non-ASCII characters (empty too).
fn text() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zé\"\\\\ \n✓]{0,12}").expect("a valid regex")
}

/// Text that is not empty (and so survives both directions, which drop empty text).
fn some_text() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zé\"\\\\ \n✓]{0,11}[a-z✓]").expect("a valid regex")
}

/// A tool input: a JSON object of scalars and a nested array.
fn input() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        text().prop_map(Value::from),
        Just(Value::Null),
    ];
    proptest::collection::btree_map("[a-z]{1,6}", proptest::collection::vec(scalar, 0..3), 0..4).prop_map(|m| {
        Value::Object(
            m.into_iter().map(|(k, mut v)| (k, if v.len() == 1 { v.remove(0) } else { Value::Array(v) })).collect(),
        )
    })
}

/// A tool result's content: a string or text blocks.
#[derive(Clone, Debug)]
enum ResultContent {
    Text(String),
    Blocks(Vec<String>),
}

impl ResultContent {
    fn json(&self) -> Value {
        match self {
            Self::Text(s) => json!(s),
            Self::Blocks(b) => Value::Array(b.iter().map(|t| json!({"type": "text", "text": t})).collect()),
        }
    }

    /// The texts a reader sees (empty ones are dropped on the way).
    fn texts(&self) -> Vec<String> {
        match self {
            Self::Text(s) => vec![s.clone()],
            Self::Blocks(b) => b.clone(),
        }
        .into_iter()
        .filter(|t| !t.is_empty())
        .collect()
    }
}

/// One exchange: an assistant turn (texts, tool calls) answered by a user turn (a result for
/// each call, then texts).
#[derive(Clone, Debug)]
struct Exchange {
    assistant_texts: Vec<String>,
    calls: Vec<(String, Value)>,
    results: Vec<ResultContent>,
    user_texts: Vec<String>,
}

fn exchange() -> impl Strategy<Value = Exchange> {
    let result = prop_oneof![
        text().prop_map(ResultContent::Text),
        proptest::collection::vec(text(), 1..3).prop_map(ResultContent::Blocks)
    ];
    (
        proptest::collection::vec(some_text(), 0..3),
        proptest::collection::vec(("[a-z]{1,8}", input()), 0..3),
        proptest::collection::vec(result, 3),
        proptest::collection::vec(some_text(), 0..3),
    )
        .prop_filter("every turn has content", |(texts, calls, _, user)| {
            (!texts.is_empty() || !calls.is_empty()) && (!calls.is_empty() || !user.is_empty())
        })
        .prop_map(|(assistant_texts, calls, mut results, user_texts)| {
            results.truncate(calls.len());
            Exchange { assistant_texts, calls, results, user_texts }
        })
}

/// The Anthropic request of a first user text and `exchanges` (call ids `toolu_<n>`).
fn anthropic_json(system: &[String], first: &str, exchanges: &[Exchange], stops: &[String], max_tokens: u64) -> Value {
    let mut messages = vec![json!({"role": "user", "content": first})];
    let mut n = 0;
    for e in exchanges {
        let mut assistant: Vec<Value> = e.assistant_texts.iter().map(|t| json!({"type": "text", "text": t})).collect();
        let mut user = Vec::new();
        for ((name, input), result) in e.calls.iter().zip(&e.results) {
            n += 1;
            assistant.push(json!({"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": input}));
            user.push(json!({"type": "tool_result", "tool_use_id": format!("toolu_{n}"), "content": result.json()}));
        }
        user.extend(e.user_texts.iter().map(|t| json!({"type": "text", "text": t})));
        messages.push(json!({"role": "assistant", "content": assistant}));
        messages.push(json!({"role": "user", "content": user}));
    }
    let mut body = json!({"model": "m", "max_tokens": max_tokens, "messages": messages});
    if !system.is_empty() {
        body["system"] = Value::Array(system.iter().map(|t| json!({"type": "text", "text": t})).collect());
    }
    if !stops.is_empty() {
        body["stop_sequences"] = json!(stops);
    }
    body
}

fn texts_of(content: &MessageContent) -> Vec<String> {
    match content {
        MessageContent::Text(t) => vec![t.clone()],
        MessageContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| if let ContentBlock::Text(t) = b { Some(t.text.clone()) } else { None })
            .collect(),
        _ => Vec::new(),
    }
    .into_iter()
    .filter(|t| !t.is_empty())
    .collect()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn an_anthropic_request_through_the_hub_and_back_keeps_its_meaning(
        system in proptest::collection::vec(text(), 0..3),
        first in some_text(),
        exchanges in proptest::collection::vec(exchange(), 0..4),
        stops in proptest::collection::vec(some_text(), 0..3),
        max_tokens in 1u64..200_000,
    ) {
        let body = anthropic_json(&system, &first, &exchanges, &stops, max_tokens);
        let req: MessagesRequest = serde_json::from_value(body).expect("an Anthropic request");
        let hub = chat_from_request(req).expect("translates to the hub");
        let back = request_from_chat(hub, &RequestOptions::new("m", 1)).expect("translates back");

        prop_assert_eq!(back.max_tokens, max_tokens);
        prop_assert_eq!(back.stop_sequences, (!stops.is_empty()).then_some(stops));
        let system_text: Vec<String> = system.into_iter().filter(|t| !t.is_empty()).collect();
        match back.system {
            None => prop_assert!(system_text.is_empty()),
            Some(System::Text(s)) => prop_assert_eq!(s, system_text.join("\n")),
            Some(other) => prop_assert!(false, "unexpected system {:?}", other),
        }

        prop_assert_eq!(back.messages.len(), 1 + 2 * exchanges.len(), "one turn per turn");
        for pair in back.messages.windows(2) {
            prop_assert_ne!(pair[0].role, pair[1].role, "turns alternate");
        }
        prop_assert_eq!(texts_of(&back.messages[0].content), vec![first]);
        let mut n = 0;
        for (k, e) in exchanges.iter().enumerate() {
            let (assistant, user) = (&back.messages[1 + 2 * k], &back.messages[2 + 2 * k]);
            prop_assert_eq!(assistant.role, Role::Assistant);
            prop_assert_eq!(texts_of(&assistant.content).concat(), e.assistant_texts.concat());
            let MessageContent::Blocks(blocks) = &assistant.content else { panic!("assistant blocks") };
            let uses: Vec<(String, String, Value)> = blocks.iter().filter_map(|b| match b {
                ContentBlock::ToolUse(t) => Some((t.id.clone(), t.name.clone(), t.input.clone())),
                _ => None,
            }).collect();
            let mut expected_uses = Vec::new();
            let mut expected_results = Vec::new();
            for ((name, input), result) in e.calls.iter().zip(&e.results) {
                n += 1;
                expected_uses.push((format!("toolu_{n}"), name.clone(), input.clone()));
                expected_results.push((format!("toolu_{n}"), result.texts()));
            }
            prop_assert_eq!(uses, expected_uses);

            prop_assert_eq!(user.role, Role::User);
            let MessageContent::Blocks(blocks) = &user.content else { panic!("user blocks") };
            let results: Vec<(String, Vec<String>)> = blocks.iter().filter_map(|b| match b {
                ContentBlock::ToolResult(r) => Some((r.tool_use_id.clone(),
                    r.content.as_ref().map(texts_of).unwrap_or_default())),
                _ => None,
            }).collect();
            prop_assert_eq!(results, expected_results);
            prop_assert_eq!(texts_of(&user.content), e.user_texts.clone());
        }
    }

    #[test]
    fn a_hub_answer_through_anthropic_and_back_keeps_text_calls_finish_and_usage(
        content in proptest::option::of(text()),
        reasoning in proptest::option::of(some_text()),
        calls in proptest::collection::vec(("[a-z]{1,8}", input()), 0..3),
        finish in proptest::option::of(prop_oneof![Just("stop"), Just("length"), Just("tool_calls"), Just("content_filter")]),
        prompt in 0u64..1 << 32, completion in 0u64..1 << 32, cached in proptest::option::of(0u64..1 << 32),
    ) {
        let cached = cached.map(|c| c.min(prompt));
        let tool_calls: Vec<Value> = calls.iter().enumerate().map(|(i, (name, args))| json!({"id": format!("call_{i}"),
            "type": "function", "function": {"name": name, "arguments": args.to_string()}})).collect();
        let mut message = json!({"role": "assistant", "content": content, "reasoning_content": reasoning});
        if !tool_calls.is_empty() {
            message["tool_calls"] = Value::Array(tool_calls);
        }
        let mut usage = json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion});
        if let Some(c) = cached {
            usage["prompt_tokens_details"] = json!({"cached_tokens": c});
        }
        let answer: ChatCompletion = serde_json::from_value(json!({"id": "chatcmpl-1", "object": "chat.completion",
            "created": 5, "model": "gpt-4o", "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage})).expect("a completion");

        let back = chat_from_response(response_from_chat(answer), 5);
        prop_assert_eq!(&back.id, "chatcmpl-1");
        prop_assert_eq!(&back.model, "gpt-4o");
        let choice = &back.choices[0];
        prop_assert_eq!(choice.message.content.clone().unwrap_or_default(), content.unwrap_or_default());
        prop_assert_eq!(choice.message.reasoning_content.clone(), reasoning);
        let got: Vec<(String, String, Value)> = choice.message.tool_calls.iter().flatten().map(|c| (c.id.clone(),
            c.function.name.clone(), serde_json::from_str(&c.function.arguments).expect("JSON arguments"))).collect();
        let expected: Vec<(String, String, Value)> =
            calls.into_iter().enumerate().map(|(i, (n, a))| (format!("call_{i}"), n, a)).collect();
        prop_assert_eq!(got, expected);
        prop_assert_eq!(choice.finish_reason.as_deref(), finish);
        let usage = back.usage.expect("usage");
        prop_assert_eq!(usage.prompt_tokens, prompt);
        prop_assert_eq!(usage.completion_tokens, completion);
        prop_assert_eq!(usage.total_tokens, prompt + completion);
        prop_assert_eq!(usage.prompt_tokens_details.and_then(|d| d.cached_tokens).unwrap_or(0), cached.unwrap_or(0));
    }
}

/// One piece of a hub stream.
#[derive(Clone, Debug)]
enum Piece {
    Reasoning(String),
    Text(String),
    /// A fragment of tool call `index`; its first fragment carries the id and the name.
    Tool(u32, String),
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        text().prop_map(Piece::Reasoning),
        text().prop_map(Piece::Text),
        (0u32..3, text()).prop_map(|(i, t)| Piece::Tool(i, t)),
    ]
}

fn hub_chunk(delta: Value, finish: Option<&str>) -> ChatCompletionChunk {
    serde_json::from_value(json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))
    .expect("a chunk")
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn an_encoded_stream_is_well_formed_and_reads_back_the_same(pieces in proptest::collection::vec(piece(), 0..12),
        usage in proptest::option::of((0u64..1 << 20, 0u64..1 << 20))) {
        // Tool calls are numbered in order of appearance, as OpenAI numbers them.
        let mut order: Vec<u32> = Vec::new();
        let mut chunks = vec![hub_chunk(json!({"role": "assistant", "content": ""}), None)];
        for p in &pieces {
            chunks.push(hub_chunk(match p {
                Piece::Reasoning(t) => json!({"reasoning_content": t}),
                Piece::Text(t) => json!({"content": t}),
                Piece::Tool(i, t) => {
                    match order.iter().position(|o| o == i) {
                        Some(k) => json!({"tool_calls": [{"index": k, "function": {"arguments": t}}]}),
                        None => {
                            order.push(*i);
                            let k = order.len() - 1;
                            json!({"tool_calls": [{"index": k, "id": format!("call_{k}"), "type": "function",
                                "function": {"name": format!("f{k}"), "arguments": t}}]})
                        }
                    }
                }
            }, None));
        }
        chunks.push(hub_chunk(json!({}), Some("stop")));
        if let Some((p, c)) = usage {
            chunks.push(serde_json::from_value(json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
                "model": "m", "choices": [], "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}}))
                .expect("a chunk"));
        }

        let mut encoder = EventEncoder::new();
        let mut events: Vec<StreamEvent> = chunks.iter().flat_map(|c| encoder.push(c)).collect();
        events.extend(encoder.finish());

        // Structure: start first, stop last, blocks numbered from 0, each opened once and closed
        // before the next, deltas only inside the open block.
        let starts = matches!(events.first(), Some(StreamEvent::MessageStart { .. }));
        prop_assert!(starts, "message_start first");
        prop_assert_eq!(events.last(), Some(&StreamEvent::MessageStop));
        let mut open: Option<u32> = None;
        let mut next = 0;
        for e in &events[1..events.len() - 1] {
            match e {
                StreamEvent::ContentBlockStart { index, .. } => {
                    prop_assert_eq!(open, None);
                    prop_assert_eq!(*index, next);
                    open = Some(*index);
                    next += 1;
                }
                StreamEvent::ContentBlockDelta { index, .. } => prop_assert_eq!(open, Some(*index)),
                StreamEvent::ContentBlockStop { index } => {
                    prop_assert_eq!(open, Some(*index));
                    open = None;
                }
                StreamEvent::MessageDelta { .. } => prop_assert_eq!(open, None),
                other => prop_assert!(false, "unexpected {:?}", other),
            }
        }
        prop_assert_eq!(encoder.usage(), usage);

        // Read back through the wire JSON by the Anthropic-to-hub translator: the same text,
        // reasoning and arguments per call.
        let mut translator = ChunkTranslator::new(1, true);
        let (mut content, mut reasoning) = (String::new(), String::new());
        let mut arguments: Vec<String> = Vec::new();
        for e in &events {
            let read = StreamEvent::from_json(&e.to_json()).expect("reads back");
            prop_assert_eq!(&read, e);
            for t in translator.translate(read) {
                if let Translated::Chunk(c) = t {
                    for choice in &c.choices {
                        content.push_str(choice.delta.content.as_deref().unwrap_or(""));
                        reasoning.push_str(choice.delta.reasoning_content.as_deref().unwrap_or(""));
                        for call in choice.delta.tool_calls.iter().flatten() {
                            let i = call.index as usize;
                            if arguments.len() <= i {
                                arguments.resize(i + 1, String::new());
                            }
                            arguments[i].push_str(call.function.as_ref().and_then(|f| f.arguments.as_deref()).unwrap_or(""));
                        }
                    }
                }
            }
        }
        let expected_text: String = pieces.iter().filter_map(|p| if let Piece::Text(t) = p { Some(t.as_str()) } else { None }).collect();
        let expected_reasoning: String = pieces.iter().filter_map(|p| if let Piece::Reasoning(t) = p { Some(t.as_str()) } else { None }).collect();
        prop_assert_eq!(content, expected_text);
        prop_assert_eq!(reasoning, expected_reasoning);
        // A call whose fragments are interleaved with other blocks is split into several
        // `tool_use` blocks, which the reader counts as calls: compare the concatenation.
        let expected_args: String = pieces.iter().filter_map(|p| if let Piece::Tool(_, t) = p { Some(t.as_str()) } else { None }).collect();
        prop_assert_eq!(arguments.concat(), expected_args);
    }
}
