//! Properties of the Anthropic translation, with fixed proptest seeds: every message, tool call
//! and argument of a chat request arrives; turns alternate; usage adds up; answers keep their
//! text and tool inputs; a stream gives the same chunks however its bytes are split.

use proptest::{
    prelude::*,
    test_runner::{RngAlgorithm, RngSeed},
};
use serde_json::{Value, json};
use switchyard_dialects::anthropic::{
    ChunkTranslator, ContentBlock, MessageContent, MessagesResponse, RequestOptions, Role, System, Translated, Usage,
    chat_from_response, chat_usage, request_from_chat,
};
use switchyard_dialects::chat::ChatRequest;
use switchyard_dialects::sse::SseDecoder;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(11),
        rng_algorithm: RngAlgorithm::ChaCha,
        ..ProptestConfig::default()
    }
}

/// Text with spaces, newlines, quotes and non-ASCII characters (empty too).
fn text() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zé\"\\\\ \n✓]{0,12}").expect("a valid regex")
}

/// A tool call's arguments: a JSON object of scalars and a nested array.
fn arguments() -> impl Strategy<Value = Value> {
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

#[derive(Clone, Debug)]
enum Turn {
    System(String),
    User(String),
    UserParts(Vec<String>),
    Assistant(String, Vec<(String, Value)>),
    Tool(String),
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        1 => text().prop_map(Turn::System),
        3 => text().prop_map(Turn::User),
        1 => proptest::collection::vec(text(), 0..4).prop_map(Turn::UserParts),
        3 => (text(), proptest::collection::vec(("[a-z_]{1,8}", arguments()), 0..3)).prop_map(|(t, c)| Turn::Assistant(t, c)),
        2 => text().prop_map(Turn::Tool),
    ]
}

/// The chat JSON of `turns` (tool call ids are `call_<n>`, tool messages answer `tool_<n>`).
fn chat_json(turns: &[Turn]) -> Value {
    let mut calls = 0;
    let messages: Vec<Value> = turns
        .iter()
        .enumerate()
        .map(|(i, t)| match t {
            Turn::System(s) => json!({"role": "system", "content": s}),
            Turn::User(s) => json!({"role": "user", "content": s}),
            Turn::UserParts(parts) => {
                json!({"role": "user", "content": parts.iter().map(|p| json!({"type": "text", "text": p})).collect::<Vec<_>>()})
            }
            Turn::Assistant(s, tool_calls) => {
                let tool_calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|(name, args)| {
                        calls += 1;
                        json!({"id": format!("call_{calls}"), "type": "function",
                            "function": {"name": name, "arguments": args.to_string()}})
                    })
                    .collect();
                let mut m = json!({"role": "assistant", "content": s});
                if !tool_calls.is_empty() {
                    m["tool_calls"] = Value::Array(tool_calls);
                }
                m
            }
            Turn::Tool(s) => json!({"role": "tool", "tool_call_id": format!("tool_{i}"), "content": s}),
        })
        .collect();
    json!({"model": "smart", "messages": messages})
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_message_tool_call_and_argument_arrives(turns in proptest::collection::vec(turn(), 1..12)) {
        let body = chat_json(&turns);
        let req: ChatRequest = serde_json::from_value(body).expect("a chat request");
        let result = request_from_chat(req, &RequestOptions::new("claude", 1024));
        let texts: Vec<&String> = turns.iter().flat_map(|t| match t {
            Turn::User(s) | Turn::Assistant(s, _) => vec![s],
            Turn::UserParts(p) => p.iter().collect(),
            _ => Vec::new(),
        }).filter(|s| !s.is_empty()).collect();
        let calls: Vec<&Value> = turns.iter().flat_map(|t| match t {
            Turn::Assistant(_, c) => c.iter().map(|(_, a)| a).collect(),
            _ => Vec::new(),
        }).collect();
        let tools = turns.iter().filter(|t| matches!(t, Turn::Tool(_))).count();
        if texts.is_empty() && calls.is_empty() && tools == 0 {
            prop_assert_eq!(result.expect_err("nothing to send").field, "messages");
            return Ok(());
        }
        let out = result.expect("translates");

        let blocks: Vec<&ContentBlock> = out.messages.iter().flat_map(|m| match &m.content {
            MessageContent::Blocks(b) => b.iter().collect::<Vec<_>>(),
            _ => Vec::new(),
        }).collect();
        let text_blocks = blocks.iter().filter(|b| matches!(b, ContentBlock::Text(_))).count();
        prop_assert_eq!(text_blocks, texts.len());
        let inputs: Vec<&Value> = blocks.iter().filter_map(|b| match b { ContentBlock::ToolUse(t) => Some(&t.input), _ => None }).collect();
        prop_assert_eq!(inputs, calls);
        let results = blocks.iter().filter(|b| matches!(b, ContentBlock::ToolResult(_))).count();
        prop_assert_eq!(results, tools);

        for pair in out.messages.windows(2) {
            prop_assert_ne!(pair[0].role, pair[1].role, "turns alternate");
        }
        let system: Vec<&str> = turns.iter().filter_map(|t| match t { Turn::System(s) if !s.is_empty() => Some(s.as_str()), _ => None }).collect();
        match out.system {
            None => prop_assert!(system.is_empty()),
            Some(System::Text(s)) => prop_assert_eq!(s, system.join("\n")),
            Some(other) => prop_assert!(false, "unexpected system {:?}", other),
        }
    }

    #[test]
    fn a_chat_request_round_trips_to_the_same_json(turns in proptest::collection::vec(turn(), 1..8),
        extra in proptest::collection::btree_map("x_[a-z]{1,6}", text(), 0..3), temperature in proptest::option::of(0u8..=2),
        stream in proptest::option::of(any::<bool>())) {
        let mut body = chat_json(&turns);
        for (k, v) in extra {
            body[k] = Value::from(v);
        }
        if let Some(t) = temperature {
            body["temperature"] = Value::from(t);
        }
        if let Some(s) = stream {
            body["stream"] = Value::from(s);
        }
        let req: ChatRequest = serde_json::from_value(body.clone()).expect("a chat request");
        prop_assert_eq!(serde_json::to_value(&req).expect("serializes"), body);
    }

    #[test]
    fn usage_adds_up(input in 0u64..1 << 32, output in 0u64..1 << 32, created in proptest::option::of(0u64..1 << 32),
        read in proptest::option::of(0u64..1 << 32)) {
        let mut usage = Usage::new(input, output);
        usage.cache_creation_input_tokens = created;
        usage.cache_read_input_tokens = read;
        let chat = chat_usage(&usage);
        let prompt = input + created.unwrap_or(0) + read.unwrap_or(0);
        prop_assert_eq!(chat.prompt_tokens, prompt);
        prop_assert_eq!(chat.completion_tokens, output);
        prop_assert_eq!(chat.total_tokens, prompt + output);
        prop_assert_eq!(chat.prompt_tokens_details.and_then(|d| d.cached_tokens), Some(read.unwrap_or(0)));
    }

    #[test]
    fn an_answer_keeps_its_text_and_tool_inputs(blocks in proptest::collection::vec(prop_oneof![
        text().prop_map(|t| json!({"type": "text", "text": t})),
        ("[a-z]{1,8}", arguments()).prop_map(|(n, a)| json!({"type": "tool_use", "id": format!("toolu_{n}"), "name": n, "input": a})),
        text().prop_map(|t| json!({"type": "mystery_block", "payload": t})),
    ], 0..6)) {
        let body = json!({"id": "msg", "type": "message", "role": "assistant", "model": "m", "content": blocks,
            "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 2}});
        let resp: MessagesResponse = serde_json::from_value(body).expect("never fails on block kinds");
        let expected_text: String = blocks.iter().filter(|b| b["type"] == "text").map(|b| b["text"].as_str().unwrap_or("")).collect();
        let expected_inputs: Vec<&Value> = blocks.iter().filter(|b| b["type"] == "tool_use").map(|b| &b["input"]).collect();
        let chat = chat_from_response(resp, 0);
        let message = &chat.choices[0].message;
        prop_assert_eq!(message.content.clone().unwrap_or_default(), expected_text);
        let inputs: Vec<Value> = message.tool_calls.iter().flatten()
            .map(|c| serde_json::from_str(&c.function.arguments).expect("JSON arguments")).collect();
        prop_assert_eq!(inputs.iter().collect::<Vec<_>>(), expected_inputs);
    }
}

#[derive(Clone, Debug)]
enum StreamBlock {
    Text(Vec<String>),
    Tool(String, Value, usize),
    Thinking(Vec<String>, String),
}

fn stream_block() -> impl Strategy<Value = StreamBlock> {
    prop_oneof![
        proptest::collection::vec(text(), 0..4).prop_map(StreamBlock::Text),
        ("[a-z]{1,8}", arguments(), 1usize..5).prop_map(|(n, a, k)| StreamBlock::Tool(n, a, k)),
        (proptest::collection::vec(text(), 0..3), "[A-Za-z0-9]{4,12}").prop_map(|(t, s)| StreamBlock::Thinking(t, s)),
    ]
}

fn sse(event: Value) -> String {
    format!("event: {}\ndata: {}\n\n", event["type"].as_str().unwrap_or("x"), event)
}

/// The SSE bytes of a stream of `blocks`, with pings between events when `pings`.
fn stream_bytes(blocks: &[StreamBlock], pings: bool) -> Vec<u8> {
    let mut out =
        sse(json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "model": "m", "content": [], "stop_reason": null, "usage": {"input_tokens": 3, "output_tokens": 1}}}));
    for (index, block) in blocks.iter().enumerate() {
        let mut events = Vec::new();
        match block {
            StreamBlock::Text(pieces) => {
                events.push(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}));
                for p in pieces {
                    events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}}));
                }
            }
            StreamBlock::Tool(name, args, pieces) => {
                events.push(json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": format!("toolu_{index}"), "name": name, "input": {}}}));
                let text = args.to_string();
                let chars: Vec<char> = text.chars().collect();
                let size = chars.len().div_ceil(*pieces).max(1);
                for piece in chars.chunks(size) {
                    let piece: String = piece.iter().collect();
                    events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}));
                }
            }
            StreamBlock::Thinking(pieces, signature) => {
                events.push(json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}));
                for p in pieces {
                    events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": p}}));
                }
                events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature}}));
            }
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
        for e in events {
            out.push_str(&sse(e));
            if pings {
                out.push_str("event: ping\r\ndata: {\"type\": \"ping\"}\r\n\r\n");
            }
        }
    }
    out.push_str(&sse(
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
    ));
    out.push_str(&sse(json!({"type": "message_stop"})));
    out.into_bytes()
}

/// The translation of `bytes` pushed in pieces cut at `cuts` (positions, any order).
fn translate(bytes: &[u8], cuts: &[usize]) -> Vec<Translated> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.push(0);
    cuts.push(bytes.len());
    cuts.sort_unstable();
    let mut sse = SseDecoder::new(1 << 20);
    let mut chunks = ChunkTranslator::new(7, true);
    let mut out = Vec::new();
    for pair in cuts.windows(2) {
        for event in sse.push(&bytes[pair[0]..pair[1]]).expect("decodes") {
            out.extend(chunks.push(&event).expect("translates"));
        }
    }
    out
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_stream_translates_the_same_however_it_is_split(blocks in proptest::collection::vec(stream_block(), 0..5),
        pings in any::<bool>(), cuts in proptest::collection::vec(any::<usize>(), 0..40)) {
        let bytes = stream_bytes(&blocks, pings);
        let whole = translate(&bytes, &[]);
        prop_assert_eq!(&translate(&bytes, &cuts), &whole);
        let bytewise: Vec<usize> = (0..bytes.len()).collect();
        prop_assert_eq!(&translate(&bytes, &bytewise), &whole);

        // And the chunks carry what the blocks said.
        let mut content = String::new();
        let mut arguments: Vec<String> = Vec::new();
        for t in &whole {
            if let Translated::Chunk(c) = t {
                for choice in &c.choices {
                    content.push_str(choice.delta.content.as_deref().unwrap_or(""));
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
        let expected_text: String = blocks.iter().flat_map(|b| match b { StreamBlock::Text(p) => p.clone(), _ => Vec::new() }).collect();
        prop_assert_eq!(content, expected_text);
        let expected_args: Vec<Value> = blocks.iter().filter_map(|b| match b { StreamBlock::Tool(_, a, _) => Some(a.clone()), _ => None }).collect();
        let args: Vec<Value> = arguments.iter().map(|a| serde_json::from_str(a).expect("complete JSON")).collect();
        prop_assert_eq!(args, expected_args);
        prop_assert_eq!(whole.last(), Some(&Translated::Done));
    }
}

#[test]
fn tool_result_ids_and_roles_are_kept() {
    let body = chat_json(&[Turn::User("q".into()), Turn::Tool("r".into())]);
    let req: ChatRequest = serde_json::from_value(body).expect("a chat request");
    let out = request_from_chat(req, &RequestOptions::new("claude", 1024)).expect("translates");
    assert_eq!(out.messages.len(), 1);
    assert_eq!(out.messages[0].role, Role::User);
    let MessageContent::Blocks(blocks) = &out.messages[0].content else { panic!("blocks") };
    assert!(matches!(&blocks[1], ContentBlock::ToolResult(r) if r.tool_use_id == "tool_1"));
}
