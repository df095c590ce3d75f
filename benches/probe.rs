//! The request probe (`facts_from_json`): the time to read a body's routing facts at the edge.
//!
//! - `small`: a typical chat request (two messages, `metadata` with tags and a session, tools);
//! - `routing keys`: the same with every routing key the probe reads (`fallbacks`, `num_retries`,
//!   `disable_fallbacks`, `allowed_model_region`, `timeout`, `stream_timeout`);
//! - `long prompt`: about 100 KiB of messages, which the probe skips;
//! - `wrong type`: a 1 MiB `fallbacks: [0,0,...]`, refused.
//!
//! ```text
//! cargo bench --bench probe -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use switchyard::{layers::ctx::Endpoint, services::facts_from_json};

fn bodies() -> Vec<(&'static str, Vec<u8>)> {
    let small = br#"{"model":"gpt-4o","stream":true,"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"What is the capital of France? Answer in one word."}],"metadata":{"tags":["eu","paid"],"session_id":"c0ffee-42"},"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}],"temperature":0.2}"#.to_vec();
    let keys = br#"{"model":"gpt-4o","messages":[{"role":"user","content":"Hello there"}],"tags":"a, b","allowed_model_region":"eu","num_retries":1,"fallbacks":["gpt-4o-mini","claude"],"disable_fallbacks":false,"timeout":30,"stream_timeout":5.5}"#.to_vec();
    let prompt = "lorem ipsum dolor sit amet ".repeat(4000);
    let long = format!(
        r#"{{"model":"gpt-4o","messages":[{{"role":"user","content":"{prompt}"}}],"metadata":{{"tags":["eu"]}}}}"#
    );
    let mut wrong = br#"{"model":"x","messages":[],"fallbacks":[0"#.to_vec();
    while wrong.len() < 1 << 20 {
        wrong.extend_from_slice(b",0");
    }
    wrong.extend_from_slice(b"]}");
    vec![("small", small), ("routing keys", keys), ("long prompt", long.into_bytes()), ("wrong type", wrong)]
}

fn probe(c: &mut Criterion) {
    let mut group = c.benchmark_group("probe");
    for (name, body) in bodies() {
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(name, |b| b.iter(|| black_box(facts_from_json(black_box(&body), Endpoint::Chat)).is_ok()));
    }
    group.finish();
}

criterion_group!(benches, probe);
criterion_main!(benches);
