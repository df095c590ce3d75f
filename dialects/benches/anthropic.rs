//! The cost of translating to and from Anthropic, each next to the passthrough baseline of the
//! same bytes (serde_json parse into a `Value` and serialize again, unchanged).
//!
//! - `request/*`: a chat body of about 1 KB and 16 KB (system prompt, turns, a tool call and its
//!   result, two tools) read as `ChatRequest`, translated by `request_from_chat`, written.
//! - `response/*`: an Anthropic answer (text and a tool call) read, `chat_from_response`, written.
//! - `stream/*`: one `text_delta` event through `ChunkTranslator::push`, its chunk written.
//!
//! ```text
//! cargo bench -p switchyard-dialects --bench anthropic -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use switchyard_dialects::anthropic::{
    ChunkTranslator, MessagesResponse, RequestOptions, Translated, chat_from_response, request_from_chat,
};
use switchyard_dialects::chat::ChatRequest;
use switchyard_dialects::sse::SseEvent;

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
            "model": "claude",
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

fn passthrough(body: &[u8]) -> Vec<u8> {
    let value: Value = serde_json::from_slice(body).expect("parses");
    serde_json::to_vec(&value).expect("serializes")
}

fn request(c: &mut Criterion) {
    let mut group = c.benchmark_group("request");
    let opts = RequestOptions::new("claude-sonnet-4-5", 4096);
    for (name, size) in [("1KB", 1024), ("16KB", 16 * 1024)] {
        let body = chat_body(size);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(BenchmarkId::new("passthrough", name), &body, |b, body| {
            b.iter(|| passthrough(black_box(body)))
        });
        group.bench_with_input(BenchmarkId::new("request_from_chat", name), &body, |b, body| {
            b.iter(|| {
                let req: ChatRequest = serde_json::from_slice(black_box(body)).expect("parses");
                let out = request_from_chat(req, &opts).expect("translates");
                serde_json::to_vec(&out).expect("serializes")
            })
        });
    }
    group.finish();
}

const RESPONSE: &str = r#"{"id":"msg_01Aq9w938a90dw8q","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"I'll check the current weather in Paris for you, and then tell you whether an umbrella is a good idea."},{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"city":"Paris","unit":"celsius"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":91,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}"#;

fn response(c: &mut Criterion) {
    let mut group = c.benchmark_group("response");
    group.bench_function("passthrough", |b| b.iter(|| passthrough(black_box(RESPONSE.as_bytes()))));
    group.bench_function("chat_from_response", |b| {
        b.iter(|| {
            let resp: MessagesResponse = serde_json::from_str(black_box(RESPONSE)).expect("parses");
            serde_json::to_vec(&chat_from_response(resp, 1_700_000_000)).expect("serializes")
        })
    });
    group.finish();
}

const START: &str = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}"#;
const DELTA: &str = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, how"}}"#;

fn stream(c: &mut Criterion) {
    let mut group = c.benchmark_group("stream");
    let start = SseEvent::new(Some("message_start".to_owned()), START.to_owned());
    let delta = SseEvent::new(Some("content_block_delta".to_owned()), DELTA.to_owned());
    group.bench_function("passthrough", |b| b.iter(|| passthrough(black_box(DELTA.as_bytes()))));
    group.bench_function("chunk_translator", |b| {
        let mut chunks = ChunkTranslator::new(1_700_000_000, true);
        chunks.push(&start).expect("translates");
        b.iter(|| {
            let out = chunks.push(black_box(&delta)).expect("translates");
            match out.first() {
                Some(Translated::Chunk(chunk)) => serde_json::to_vec(chunk).expect("serializes"),
                _ => Vec::new(),
            }
        })
    });
    group.finish();
}

criterion_group!(benches, request, response, stream);
criterion_main!(benches);
