//! The cost of each vendor dialect (Anthropic, Gemini, Cohere, Bedrock) beside the passthrough of
//! an OpenAI deployment, in one run (issue 20).
//!
//! - `request/*`: a chat body of about 1 KB and 16 KB (system prompt, turns, a tool call and its
//!   result, two tools). `passthrough` is what the provider does to an OpenAI body: read its
//!   top-level members (each value scanned and validated, not built into a tree) and write the
//!   bytes back. Each dialect reads the body as `ChatRequest`, translates it with
//!   `request_from_chat` and writes the dialect's body.
//! - `answer/*`: a whole answer with text and a tool call, in the shape of the vendor's documented
//!   example. `passthrough` reads an OpenAI answer's members and copies it; each dialect reads its
//!   answer, `chat_from_response`, and writes the chat completion.
//! - `stream/*`: a recorded stream of 64 content deltas in the vendor's framing (SSE for OpenAI,
//!   Anthropic, Gemini and Cohere, AWS event-stream frames for Bedrock), with its opening and
//!   closing events, pushed one event's bytes at a time. `passthrough` decodes OpenAI's SSE and
//!   reads each chunk as the provider does for usage and the commit point (its probe type: the
//!   choices' deltas, finish reasons, usage, error; not the whole hub chunk); each
//!   dialect decodes its framing, translates every event with its `ChunkTranslator` and writes
//!   each hub chunk. Throughput is 64 elements, so criterion's rate is per content chunk.
//!
//! ```text
//! cargo bench -p switchyard-dialects --bench vendors -- --warm-up-time 1 --measurement-time 3
//! ```

use std::{borrow::Cow, hint::black_box};

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use switchyard_dialects::StreamItem;
use switchyard_dialects::chat::{ChatCompletionChunk, ChatRequest};
use switchyard_dialects::sse::SseDecoder;
use switchyard_dialects::{anthropic, bedrock, cohere, gemini};

const CREATED: u64 = 1_700_000_000;
const CHUNKS: usize = 64;
const LIMIT: usize = 1 << 20;

/// A chat body of about `bytes` bytes: the turns repeat until it is that large.
fn chat_body(bytes: usize) -> Vec<u8> {
    let mut messages = vec![json!({"role": "system", "content": "You are a helpful assistant. Answer briefly."})];
    let mut turn = 0;
    loop {
        messages.push(json!({"role": "user", "content": format!("Question {turn}: what is the weather in Paris today, and should I bring an umbrella?")}));
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{turn}"), "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\",\"unit\":\"celsius\"}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("call_{turn}"), "content": "{\"temperature\":18,\"conditions\":\"light rain\"}"}));
        messages
            .push(json!({"role": "assistant", "content": "It is 18 °C with light rain in Paris: bring an umbrella."}));
        turn += 1;
        let body = json!({
            "model": "assistant",
            "messages": messages,
            "max_tokens": 512,
            "temperature": 0.2,
            "stream": false,
            "tools": [
                {"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
                {"type": "function", "function": {"name": "get_time", "description": "Local time of a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
            ],
            "tool_choice": "auto"
        });
        let bytes_now = serde_json::to_vec(&body).expect("serializes");
        if bytes_now.len() >= bytes {
            return bytes_now;
        }
    }
}

/// The provider's passthrough of a JSON body: its top-level members read (keys unescaped, values
/// scanned and validated without building them), the bytes written back.
fn passthrough(body: &[u8]) -> Vec<u8> {
    let members: Vec<(Cow<'_, str>, IgnoredAny)> = serde_json::from_slice::<MemberList<'_>>(body).expect("an object").0;
    black_box(members.len());
    body.to_vec()
}

/// The members of a JSON object, in order.
struct MemberList<'a>(Vec<(Cow<'a, str>, IgnoredAny)>);

impl<'de> serde::Deserialize<'de> for MemberList<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = MemberList<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    members.push((key, map.next_value::<IgnoredAny>()?));
                }
                Ok(MemberList(members))
            }
        }
        d.deserialize_map(Members)
    }
}

fn parse(body: &[u8]) -> ChatRequest {
    serde_json::from_slice(body).expect("a chat request")
}

fn request(c: &mut Criterion) {
    let mut group = c.benchmark_group("request");
    let anthropic_opts = anthropic::RequestOptions::new("claude-sonnet-4-5", 4096);
    let gemini_opts = gemini::RequestOptions::new("gemini-2.5-flash");
    let cohere_opts = cohere::RequestOptions::new("command-a-03-2025");
    let bedrock_opts = bedrock::RequestOptions::new("us.anthropic.claude-sonnet-4-20250514-v1:0");
    for (name, size) in [("1KB", 1024), ("16KB", 16 * 1024)] {
        let body = chat_body(size);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(BenchmarkId::new("passthrough", name), &body, |b, body| {
            b.iter(|| passthrough(black_box(body)))
        });
        group.bench_with_input(BenchmarkId::new("anthropic", name), &body, |b, body| {
            b.iter(|| {
                let out = anthropic::request_from_chat(parse(black_box(body)), &anthropic_opts).expect("translates");
                serde_json::to_vec(&out).expect("serializes")
            })
        });
        group.bench_with_input(BenchmarkId::new("gemini", name), &body, |b, body| {
            b.iter(|| {
                let out = gemini::request_from_chat(parse(black_box(body)), &gemini_opts).expect("translates");
                serde_json::to_vec(&out).expect("serializes")
            })
        });
        group.bench_with_input(BenchmarkId::new("cohere", name), &body, |b, body| {
            b.iter(|| {
                let out = cohere::request_from_chat(parse(black_box(body)), &cohere_opts).expect("translates");
                serde_json::to_vec(&out).expect("serializes")
            })
        });
        group.bench_with_input(BenchmarkId::new("bedrock", name), &body, |b, body| {
            b.iter(|| {
                let out = bedrock::request_from_chat(parse(black_box(body)), &bedrock_opts).expect("translates");
                serde_json::to_vec(&out).expect("serializes")
            })
        });
    }
    group.finish();
}

/// OpenAI's answer with text and a tool call, as the passthrough relays it.
const OPENAI_ANSWER: &str = r#"{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion","created":1741569952,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":"I'll check the current weather in Paris for you, and then tell you whether an umbrella is a good idea.","tool_calls":[{"id":"call_12345xyz","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":\"celsius\"}"}}],"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":472,"completion_tokens":91,"total_tokens":563,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_3b8a2e7c1d"}"#;

/// The same answer in each vendor's shape (after the documented examples in the golden tests).
const ANTHROPIC_ANSWER: &str = r#"{"id":"msg_01Aq9w938a90dw8q","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"I'll check the current weather in Paris for you, and then tell you whether an umbrella is a good idea."},{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"city":"Paris","unit":"celsius"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":91,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}"#;
const GEMINI_ANSWER: &str = r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"I'll check the current weather in Paris for you, and then tell you whether an umbrella is a good idea."},{"functionCall":{"name":"get_weather","args":{"city":"Paris","unit":"celsius"}},"thoughtSignature":"CiQB0e2Kb7VzSIGN"}]},"finishReason":"STOP","avgLogprobs":-0.12,"index":0}],"usageMetadata":{"promptTokenCount":472,"candidatesTokenCount":91,"totalTokenCount":563,"promptTokensDetails":[{"modality":"TEXT","tokenCount":472}]},"modelVersion":"gemini-2.5-flash","responseId":"mAitaLmkHPPlz7IPvtfUqQ4"}"#;
const COHERE_ANSWER: &str = r#"{"id":"d9c8f4e3-7b51-4c1e-9b2b-3d6b0f7a1e2c","finish_reason":"TOOL_CALL","message":{"role":"assistant","tool_plan":"I'll check the current weather in Paris for you, and then tell you whether an umbrella is a good idea.","tool_calls":[{"id":"get_weather_1byjy32y4hvq","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":\"celsius\"}"}}]},"usage":{"billed_units":{"input_tokens":472,"output_tokens":91},"tokens":{"input_tokens":472,"output_tokens":91}}}"#;
const BEDROCK_ANSWER: &str = r#"{"output":{"message":{"role":"assistant","content":[{"text":"I'll check the current weather in Paris for you, and then tell you whether an umbrella is a good idea."},{"toolUse":{"toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q","name":"get_weather","input":{"city":"Paris","unit":"celsius"}}}]}},"stopReason":"tool_use","usage":{"inputTokens":472,"outputTokens":91,"totalTokens":563},"metrics":{"latencyMs":1321}}"#;

fn answer(c: &mut Criterion) {
    let mut group = c.benchmark_group("answer");
    group.bench_function("passthrough", |b| b.iter(|| passthrough(black_box(OPENAI_ANSWER.as_bytes()))));
    group.bench_function("anthropic", |b| {
        b.iter(|| {
            let resp: anthropic::MessagesResponse = serde_json::from_str(black_box(ANTHROPIC_ANSWER)).expect("parses");
            serde_json::to_vec(&anthropic::chat_from_response(resp, CREATED)).expect("serializes")
        })
    });
    group.bench_function("gemini", |b| {
        b.iter(|| {
            let resp: gemini::GenerateContentResponse = serde_json::from_str(black_box(GEMINI_ANSWER)).expect("parses");
            assert!(gemini::blocked(&resp).is_none());
            serde_json::to_vec(&gemini::chat_from_response(resp, "gemini-2.5-flash", CREATED)).expect("serializes")
        })
    });
    group.bench_function("cohere", |b| {
        b.iter(|| {
            let resp: cohere::ChatV2Response = serde_json::from_str(black_box(COHERE_ANSWER)).expect("parses");
            assert!(cohere::response_error(&resp).is_none());
            serde_json::to_vec(&cohere::chat_from_response(resp, CREATED)).expect("serializes")
        })
    });
    group.bench_function("bedrock", |b| {
        b.iter(|| {
            let resp: bedrock::ConverseResponse = serde_json::from_str(black_box(BEDROCK_ANSWER)).expect("parses");
            let chat = bedrock::chat_from_response(resp, "us.anthropic.claude-sonnet-4-20250514-v1:0", CREATED);
            serde_json::to_vec(&chat).expect("serializes")
        })
    });
    group.finish();
}

/// The text of content delta `i`: a word or two, as models stream them.
fn piece(i: usize) -> String {
    const WORDS: [&str; 8] = [" It", " is", " 18 °C", " with", " light", " rain", " in Paris,", " so bring"];
    WORDS[i % WORDS.len()].to_owned()
}

/// One SSE event, as each vendor frames it: `event:` when the vendor names its events.
fn sse(event: Option<&str>, data: &Value) -> Vec<u8> {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n").into_bytes(),
        None => format!("data: {data}\n\n").into_bytes(),
    }
}

/// An OpenAI stream: the role chunk, 64 content chunks, the finish chunk, the usage chunk and
/// `[DONE]`, one event per element.
fn openai_stream() -> Vec<Vec<u8>> {
    let chunk = |delta: Value, finish: Value, usage: Value| {
        let choices = if usage.is_null() {
            json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}])
        } else {
            json!([])
        };
        sse(
            None,
            &json!({"id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "object": "chat.completion.chunk", "created": 1741569952,
                "model": "gpt-4.1-2025-04-14", "service_tier": "default", "system_fingerprint": "fp_3b8a2e7c1d",
                "choices": choices, "usage": usage}),
        )
    };
    let mut events =
        vec![chunk(json!({"role": "assistant", "content": "", "refusal": null}), Value::Null, Value::Null)];
    events.extend((0..CHUNKS).map(|i| chunk(json!({"content": piece(i)}), Value::Null, Value::Null)));
    events.push(chunk(json!({}), json!("stop"), Value::Null));
    events.push(chunk(
        Value::Null,
        Value::Null,
        json!({"prompt_tokens": 472, "completion_tokens": 64, "total_tokens": 536}),
    ));
    events.push(b"data: [DONE]\n\n".to_vec());
    events
}

fn anthropic_stream() -> Vec<Vec<u8>> {
    let mut events = vec![
        sse(
            Some("message_start"),
            &json!({"type": "message_start", "message": {"id": "msg_01Aq9w938a90dw8q", "type": "message",
                "role": "assistant", "model": "claude-sonnet-4-5-20250929", "content": [], "stop_reason": null,
                "stop_sequence": null, "usage": {"input_tokens": 472, "output_tokens": 1}}}),
        ),
        sse(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
    ];
    events.extend((0..CHUNKS).map(|i| {
        sse(
            Some("content_block_delta"),
            &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece(i)}}),
        )
    }));
    events.push(sse(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": 0})));
    events.push(sse(
        Some("message_delta"),
        &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
            "usage": {"output_tokens": 64}}),
    ));
    events.push(sse(Some("message_stop"), &json!({"type": "message_stop"})));
    events
}

/// Gemini's `streamGenerateContent?alt=sse`: 64 events, the last with the finish reason and usage.
fn gemini_stream() -> Vec<Vec<u8>> {
    (0..CHUNKS)
        .map(|i| {
            let mut candidate = json!({"content": {"parts": [{"text": piece(i)}], "role": "model"}, "index": 0});
            let mut event =
                json!({"candidates": [], "modelVersion": "gemini-2.5-flash", "responseId": "mAitaLmkHPPlz7IPvtfUqQ4"});
            if i + 1 == CHUNKS {
                candidate["finishReason"] = json!("STOP");
                event["usageMetadata"] =
                    json!({"promptTokenCount": 472, "candidatesTokenCount": 64, "totalTokenCount": 536});
            }
            event["candidates"] = json!([candidate]);
            // Gemini ends its events with CRLFs.
            format!("data: {event}\r\n\r\n").into_bytes()
        })
        .collect()
}

/// Cohere's v2 stream: `message-start`, `content-start`, 64 `content-delta`s, `content-end`,
/// `message-end` (docs.cohere.com/docs/streaming).
fn cohere_stream() -> Vec<Vec<u8>> {
    let event = |data: Value| sse(Some(data["type"].as_str().expect("a type")), &data);
    let mut events = vec![
        event(json!({"type": "message-start", "id": "e8f9afc1-0888-46f0-a9ed-eb0e5a51e17f", "delta": {"message": {
            "role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}}})),
        event(
            json!({"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}}),
        ),
    ];
    events.extend((0..CHUNKS).map(|i| {
        event(json!({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": piece(i)}}}}))
    }));
    events.push(event(json!({"type": "content-end", "index": 0})));
    events.push(event(json!({"type": "message-end", "delta": {"finish_reason": "COMPLETE", "usage": {
        "billed_units": {"input_tokens": 472, "output_tokens": 64}, "tokens": {"input_tokens": 472, "output_tokens": 64}}}})));
    events
}

/// One AWS event-stream frame of a ConverseStream event.
fn frame(event_type: &str, payload: &Value) -> Vec<u8> {
    let message = Message::new(serde_json::to_vec(payload).expect("serializes"))
        .add_header(Header::new(":event-type", HeaderValue::String(event_type.to_owned().into())))
        .add_header(Header::new(":content-type", HeaderValue::String("application/json".into())))
        .add_header(Header::new(":message-type", HeaderValue::String("event".into())));
    let mut out = Vec::new();
    write_message_to(&message, &mut out).expect("encodes");
    out
}

/// Bedrock's ConverseStream: `messageStart`, 64 `contentBlockDelta`s, `contentBlockStop`,
/// `messageStop`, `metadata`, each an event-stream frame (Bedrock pads every payload with a `p`
/// member).
fn bedrock_stream() -> Vec<Vec<u8>> {
    let mut events =
        vec![frame("messageStart", &json!({"p": "abcdefghijklmnopqrstuvwxyzABCDEF", "role": "assistant"}))];
    events.extend((0..CHUNKS).map(|i| {
        frame(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 0, "delta": {"text": piece(i)}, "p": "abcdefghijklmnopqrstu"}),
        )
    }));
    events.push(frame("contentBlockStop", &json!({"contentBlockIndex": 0, "p": "abcdefghijklmnopq"})));
    events.push(frame("messageStop", &json!({"p": "abcdefghijklmnopqrstuvwxyzAB", "stopReason": "end_turn"})));
    events.push(frame(
        "metadata",
        &json!({"metrics": {"latencyMs": 1321}, "p": "abcdefghijklm",
            "usage": {"inputTokens": 472, "outputTokens": 64, "totalTokens": 536}}),
    ));
    events
}

/// What a stream gave: the bytes of the hub chunks written, and how many carried content.
#[derive(Clone, Copy, Default)]
struct Tally {
    bytes: usize,
    content: usize,
}

impl Tally {
    /// Writes a hub chunk as the client would receive it.
    fn write(&mut self, chunk: &ChatCompletionChunk) {
        self.bytes += serde_json::to_vec(chunk).expect("serializes").len();
        self.content +=
            usize::from(chunk.choices.iter().any(|c| c.delta.content.as_deref().is_some_and(|t| !t.is_empty())));
    }

    fn write_items(&mut self, items: Vec<StreamItem>) {
        for item in &items {
            if let StreamItem::Chunk(chunk) = item {
                self.write(chunk);
            }
        }
    }
}

/// What the provider reads of a relayed OpenAI chunk (its `Chunk` probe in
/// `services/src/provider/stream.rs`): the choices' deltas and finish reasons, usage, an error.
#[derive(serde::Deserialize)]
struct ChunkProbe {
    #[serde(default)]
    choices: Vec<ChoiceProbe>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(serde::Deserialize)]
struct ChoiceProbe {
    #[serde(default)]
    delta: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    finish_reason: Option<Value>,
}

/// OpenAI's stream passed through: each event decoded and read as the provider reads it, nothing
/// written (the upstream's bytes are relayed).
fn openai_passthrough(events: &[Vec<u8>]) -> Tally {
    let mut sse = SseDecoder::new(LIMIT);
    let mut tally = Tally::default();
    for bytes in events {
        for event in sse.push(black_box(bytes)).expect("decodes") {
            if event.is_done() {
                continue;
            }
            let chunk: ChunkProbe = serde_json::from_str(&event.data).expect("a chunk");
            assert!(chunk.error.is_none());
            tally.bytes += usize::from(chunk.usage.is_some());
            tally.content += usize::from(chunk.choices.iter().any(|c| {
                c.finish_reason.as_ref().is_none_or(Value::is_null)
                    && c.delta.as_ref().and_then(|d| d.get("content")?.as_str()).is_some_and(|t| !t.is_empty())
            }));
        }
    }
    tally
}

fn anthropic_chunks(events: &[Vec<u8>]) -> Tally {
    let mut sse = SseDecoder::new(LIMIT);
    let mut chunks = anthropic::ChunkTranslator::new(CREATED, true);
    let mut tally = Tally::default();
    for bytes in events {
        for event in sse.push(black_box(bytes)).expect("decodes") {
            for item in chunks.push(&event).expect("translates") {
                if let anthropic::Translated::Chunk(chunk) = item {
                    tally.write(&chunk);
                }
            }
        }
    }
    tally
}

fn gemini_chunks(events: &[Vec<u8>]) -> Tally {
    let mut sse = SseDecoder::new(LIMIT);
    let mut chunks = gemini::ChunkTranslator::new("gemini-2.5-flash", CREATED, true);
    let mut tally = Tally::default();
    for bytes in events {
        for event in sse.push(black_box(bytes)).expect("decodes") {
            tally.write_items(chunks.push(&event).expect("translates"));
        }
    }
    tally.write_items(chunks.finish());
    tally
}

fn cohere_chunks(events: &[Vec<u8>]) -> Tally {
    let mut sse = SseDecoder::new(LIMIT);
    let mut chunks = cohere::ChunkTranslator::new("command-a-03-2025", CREATED, true);
    let mut tally = Tally::default();
    for bytes in events {
        for event in sse.push(black_box(bytes)).expect("decodes") {
            tally.write_items(chunks.push(&event).expect("translates"));
        }
    }
    tally
}

fn bedrock_chunks(events: &[Vec<u8>]) -> Tally {
    let mut frames = bedrock::EventStreamDecoder::new(LIMIT);
    let mut chunks = bedrock::ChunkTranslator::new("us.anthropic.claude-sonnet-4-20250514-v1:0", CREATED, true);
    let mut tally = Tally::default();
    for bytes in events {
        for event in frames.push(black_box(bytes)).expect("decodes") {
            tally.write_items(chunks.push(&event).expect("translates"));
        }
    }
    frames.finish().expect("whole frames");
    tally.write_items(chunks.finish());
    tally
}

/// Reads a recorded stream, one element per event's bytes.
type Run = fn(&[Vec<u8>]) -> Tally;

fn stream(c: &mut Criterion) {
    let mut group = c.benchmark_group("stream");
    group.throughput(Throughput::Elements(CHUNKS as u64));
    let cases: [(&str, Run, Vec<Vec<u8>>); 5] = [
        ("passthrough", openai_passthrough, openai_stream()),
        ("anthropic", anthropic_chunks, anthropic_stream()),
        ("gemini", gemini_chunks, gemini_stream()),
        ("cohere", cohere_chunks, cohere_stream()),
        ("bedrock", bedrock_chunks, bedrock_stream()),
    ];
    for (name, run, events) in &cases {
        // Every case reads the same 64 content deltas, or the comparison means nothing.
        assert_eq!(run(events).content, CHUNKS, "{name}: content chunks");
        group.bench_function(*name, |b| b.iter(|| run(events)));
    }
    group.finish();
}

criterion_group!(benches, request, answer, stream);
criterion_main!(benches);
