//! The splicer: reads the chat completion chunks a client receives, remembers what a
//! continuation needs (the text sent so far, whether a tool call or a finish reason was seen) and
//! makes a continuation's chunks look like the rest of the first stream.
//!
//! It works on the events the provider wrote in the client's dialect (OpenAI chat completion
//! chunks, one `data:` line each). The first stream's events pass byte for byte; an error event
//! is held back until the splicer knows whether the stream will be continued (then it is
//! dropped) or not (then it is sent as it was). A continuation's chunks get the first stream's
//! `id`, `model`, `created` and `system_fingerprint`, lose their role (the client already had
//! one) and are written again; a chunk left with nothing to say is dropped, and so is any
//! `[DONE]` after the first.

use bytes::Bytes;
use serde_json::{Map, Value};

/// Longest event the splicer reads (beyond it the stream passes raw and is never continued).
const MAX_EVENT: usize = 1 << 20;

/// The first stream's fields a continuation's chunks take.
const KEPT_FIELDS: [&str; 4] = ["id", "model", "created", "system_fingerprint"];

/// What one stream of chunks has told the splicer, and the rewriting of its continuations.
#[derive(Debug)]
pub(crate) struct Splicer {
    /// Most bytes of text kept for a continuation; past it, no continuation.
    max_partial: usize,
    /// The bytes of an event not yet complete.
    pending: Vec<u8>,
    /// The first stream's `id`, `model`, `created`, `system_fingerprint`.
    kept: Map<String, Value>,
    /// The text the client received so far, every segment included.
    partial: String,
    /// The text outgrew `max_partial`.
    overflow: bool,
    /// A tool call (or a legacy function call), a refusal or a second choice was seen: the
    /// answer cannot be continued from text alone.
    not_text: bool,
    /// A finish reason was sent: the answer is complete, whatever happens to the body.
    finished: bool,
    /// `[DONE]` was sent.
    done: bool,
    /// An event the splicer cannot read was passed on raw.
    opaque: bool,
    /// 0 for the first stream, then one more for each continuation.
    segment: u32,
    /// An error event held back until the stream's fate is known.
    held: Option<Bytes>,
    /// The text sent ends in whitespace, which the continuation request leaves out (Anthropic
    /// refuses a prefill that ends in whitespace): the continuation's leading whitespace is
    /// dropped, as the client already has it.
    trim_leading: bool,
}

impl Splicer {
    /// A splicer that keeps at most `max_partial` bytes of text.
    pub(crate) fn new(max_partial: usize) -> Self {
        Self {
            max_partial,
            pending: Vec::new(),
            kept: Map::new(),
            partial: String::new(),
            overflow: false,
            not_text: false,
            finished: false,
            done: false,
            opaque: false,
            segment: 0,
            held: None,
            trim_leading: false,
        }
    }

    /// Reads `data` (any slice of the stream) and appends what the client receives to `out`.
    pub(crate) fn push(&mut self, data: &[u8], out: &mut Vec<Bytes>) {
        if self.opaque {
            out.push(Bytes::copy_from_slice(data));
            return;
        }
        self.pending.extend_from_slice(data);
        while let Some(end) = find_event_end(&self.pending) {
            let event: Vec<u8> = self.pending.drain(..end).collect();
            self.event(Bytes::from(event), out);
        }
        if self.pending.len() > MAX_EVENT {
            // Not a stream of chunks the splicer can read: give up on it, pass it on as it is.
            self.opaque = true;
            out.push(Bytes::from(std::mem::take(&mut self.pending)));
        }
    }

    /// The end of a stream's body: whatever was left unread passes on as it is.
    pub(crate) fn flush(&mut self, out: &mut Vec<Bytes>) {
        if !self.pending.is_empty() {
            out.push(Bytes::from(std::mem::take(&mut self.pending)));
        }
    }

    /// Whether the answer may be continued from the text sent so far: some text reached the
    /// client, nothing but text did, it is not complete and it fits the limit.
    pub(crate) fn can_continue(&self) -> bool {
        !self.partial.is_empty() && !self.overflow && !self.not_text && !self.finished && !self.done && !self.opaque
    }

    /// The text the client received so far, without trailing whitespace: what a continuation
    /// request carries (Anthropic refuses a prefill that ends in whitespace; the continuation's
    /// leading whitespace is dropped in exchange).
    pub(crate) fn partial(&self) -> &str {
        self.partial.trim_end()
    }

    /// The held error event, if any (to send when the stream is not continued).
    pub(crate) fn take_held(&mut self) -> Option<Bytes> {
        self.held.take()
    }

    /// Starts reading a continuation: the held error event is dropped.
    pub(crate) fn begin_continuation(&mut self) {
        self.held = None;
        self.pending.clear();
        self.segment += 1;
        self.trim_leading = self.partial.ends_with(char::is_whitespace);
    }

    fn event(&mut self, raw: Bytes, out: &mut Vec<Bytes>) {
        let Some(data) = event_data(&raw) else {
            // A named event, a comment or anything else that is not a chat chunk.
            self.opaque_event(raw, out);
            return;
        };
        if data.trim() == "[DONE]" {
            if !self.done {
                self.done = true;
                out.push(raw);
            }
            return;
        }
        let Ok(Value::Object(mut chunk)) = serde_json::from_str::<Value>(&data) else {
            self.opaque_event(raw, out);
            return;
        };
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            if let Some(earlier) = self.held.replace(raw) {
                out.push(earlier);
            }
            return;
        }
        if self.segment == 0 {
            self.read_choices(&chunk);
            for field in KEPT_FIELDS {
                if let Some(v) = chunk.get(field)
                    && !self.kept.contains_key(field)
                {
                    self.kept.insert(field.to_owned(), v.clone());
                }
            }
            out.push(raw);
            return;
        }
        if !self.rewrite(&mut chunk) {
            return;
        }
        self.read_choices(&chunk);
        match serde_json::to_string(&chunk) {
            Ok(json) => out.push(Bytes::from(format!("data: {json}\n\n"))),
            Err(_) => self.opaque_event(raw, out),
        }
    }

    /// Passes an event the splicer cannot read; the answer can no longer be continued.
    fn opaque_event(&mut self, raw: Bytes, out: &mut Vec<Bytes>) {
        self.not_text = true;
        out.push(raw);
    }

    /// Learns from a chunk's choices: the text, tool calls, refusals, finish reasons.
    fn read_choices(&mut self, chunk: &Map<String, Value>) {
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else { return };
        for choice in choices {
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                self.not_text = true;
            }
            if choice.get("finish_reason").is_some_and(|f| !f.is_null()) {
                self.finished = true;
            }
            let Some(delta) = choice.get("delta").and_then(Value::as_object) else { continue };
            for key in ["tool_calls", "function_call", "refusal", "audio"] {
                if delta.get(key).is_some_and(|v| !v.is_null()) {
                    self.not_text = true;
                }
            }
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                if self.partial.len() + text.len() > self.max_partial {
                    self.overflow = true;
                    // Nothing more is kept once the limit is passed: memory stays bounded.
                    self.partial.clear();
                    self.partial.shrink_to_fit();
                } else if !self.overflow {
                    self.partial.push_str(text);
                }
            }
        }
    }

    /// Makes a continuation's chunk one of the first stream's; `false` when nothing is left to
    /// send.
    fn rewrite(&mut self, chunk: &mut Map<String, Value>) -> bool {
        for (field, value) in &self.kept {
            chunk.insert(field.clone(), value.clone());
        }
        let Some(choices) = chunk.get_mut("choices").and_then(Value::as_array_mut) else { return true };
        let mut says_something = choices.is_empty();
        for choice in choices.iter_mut() {
            let Some(choice) = choice.as_object_mut() else {
                says_something = true;
                continue;
            };
            if let Some(delta) = choice.get_mut("delta").and_then(Value::as_object_mut) {
                delta.remove("role");
                if self.trim_leading
                    && let Some(text) = delta.get("content").and_then(Value::as_str)
                {
                    let trimmed = text.trim_start();
                    if !trimmed.is_empty() {
                        self.trim_leading = false;
                    }
                    let trimmed = Value::String(trimmed.to_owned());
                    delta.insert("content".to_owned(), trimmed);
                }
                if delta.get("content").and_then(Value::as_str) == Some("") {
                    delta.remove("content");
                }
                if delta.values().any(|v| !v.is_null()) {
                    says_something = true;
                }
            }
            if choice.get("finish_reason").is_some_and(|f| !f.is_null())
                || choice.get("logprobs").is_some_and(|l| !l.is_null())
            {
                says_something = true;
            }
        }
        says_something || chunk.get("usage").is_some_and(|u| !u.is_null())
    }
}

/// The end (exclusive) of the first complete event in `buf`: after its blank line.
fn find_event_end(buf: &[u8]) -> Option<usize> {
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The data of an unnamed event (its `data:` lines joined); `None` for a named event or one
/// without data.
fn event_data(raw: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(raw).ok()?;
    let mut data: Option<String> = None;
    for line in text.lines() {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            "event" => return None,
            _ => {}
        }
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: &str, delta: &str, finish: Option<&str>) -> String {
        let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
        format!(
            "data: {{\"id\":\"{id}\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m-{id}\",\
             \"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    }

    fn run(splicer: &mut Splicer, input: &str) -> String {
        let mut out = Vec::new();
        splicer.push(input.as_bytes(), &mut out);
        out.iter().map(|b| std::str::from_utf8(b).expect("utf-8").to_owned()).collect()
    }

    #[test]
    fn the_first_stream_passes_byte_for_byte_and_its_text_is_kept() {
        let mut s = Splicer::new(1024);
        let input =
            chunk("a", r#"{"role":"assistant","content":""}"#, None) + &chunk("a", r#"{"content":"Hel"}"#, None);
        // Split mid-event: the splicer waits for the blank line.
        let (head, tail) = input.split_at(30);
        let out = run(&mut s, head) + &run(&mut s, tail);
        assert_eq!(out, input);
        assert_eq!(s.partial(), "Hel");
        assert!(s.can_continue());
    }

    #[test]
    fn an_error_event_is_held_then_dropped_by_a_continuation() {
        let mut s = Splicer::new(1024);
        let mut out = run(&mut s, &chunk("a", r#"{"content":"Hel"}"#, None));
        out += &run(&mut s, "data: {\"error\":{\"message\":\"cut\"}}\n\n");
        assert!(!out.contains("error"), "held: {out}");
        assert!(s.can_continue());
        s.begin_continuation();
        assert_eq!(s.take_held(), None);
        let cont = run(&mut s, &(chunk("b", r#"{"role":"assistant","content":""}"#, None)))
            + &run(&mut s, &chunk("b", r#"{"content":"lo"}"#, None))
            + &run(&mut s, &chunk("b", "{}", Some("stop")))
            + &run(&mut s, "data: [DONE]\n\n")
            + &run(&mut s, "data: [DONE]\n\n");
        assert!(!cont.contains("\"role\""), "no second role chunk: {cont}");
        assert!(!cont.contains("\"b\"") && !cont.contains("m-b"), "the first stream's id and model: {cont}");
        assert_eq!(cont.matches("\"id\":\"a\"").count(), 2, "the empty opening chunk is dropped: {cont}");
        assert_eq!(cont.matches("[DONE]").count(), 1);
        assert_eq!(s.partial(), "Hello");
        assert!(!s.can_continue(), "finished");
    }

    #[test]
    fn the_held_error_event_is_given_back_when_the_stream_is_not_continued() {
        let mut s = Splicer::new(1024);
        run(&mut s, &chunk("a", r#"{"content":"x"}"#, None));
        let event = "data: {\"error\":{\"message\":\"cut\"}}\n\n";
        assert_eq!(run(&mut s, event), "");
        assert_eq!(s.take_held().as_deref(), Some(event.as_bytes()));
    }

    #[test]
    fn a_tool_call_in_flight_is_never_continued() {
        let mut s = Splicer::new(1024);
        run(&mut s, &chunk("a", r#"{"content":"Let me look."}"#, None));
        run(&mut s, &chunk("a", r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}"#, None));
        assert!(!s.can_continue());
    }

    #[test]
    fn no_text_no_continuation_and_the_limit_bounds_the_text() {
        let mut s = Splicer::new(4);
        run(&mut s, &chunk("a", r#"{"role":"assistant"}"#, None));
        assert!(!s.can_continue(), "nothing reached the client yet");
        run(&mut s, &chunk("a", r#"{"content":"abc"}"#, None));
        assert!(s.can_continue());
        run(&mut s, &chunk("a", r#"{"content":"de"}"#, None));
        assert!(!s.can_continue(), "over the limit");
        assert!(s.partial().is_empty(), "nothing kept past the limit");
    }

    #[test]
    fn garbage_passes_raw_and_is_not_continued() {
        let mut s = Splicer::new(1024);
        run(&mut s, &chunk("a", r#"{"content":"abc"}"#, None));
        assert_eq!(run(&mut s, "data: {not json\n\n"), "data: {not json\n\n");
        assert!(!s.can_continue());
        let mut s = Splicer::new(1024);
        let named = "event: message_start\ndata: {}\n\n";
        assert_eq!(run(&mut s, named), named);
        assert!(!s.can_continue());
    }

    #[test]
    fn trailing_whitespace_is_left_out_of_the_prefill_and_not_sent_twice() {
        let mut s = Splicer::new(1024);
        run(&mut s, &chunk("a", r#"{"content":"Once upon "}"#, None));
        assert_eq!(s.partial(), "Once upon");
        s.begin_continuation();
        let out = run(&mut s, &chunk("b", r#"{"content":" "}"#, None))
            + &run(&mut s, &chunk("b", r#"{"content":" a time"}"#, None));
        assert!(!out.contains("\" \""), "the lone space is dropped: {out}");
        assert!(out.contains("\"content\":\"a time\""), "{out}");
        let more = run(&mut s, &chunk("b", r#"{"content":" there"}"#, None));
        assert!(more.contains("\" there\""), "only the leading whitespace: {more}");
        assert_eq!(s.partial(), "Once upon a time there");
    }

    #[test]
    fn a_continuation_usage_chunk_takes_the_first_id() {
        let mut s = Splicer::new(1024);
        run(&mut s, &chunk("a", r#"{"content":"abc"}"#, None));
        s.begin_continuation();
        let out =
            run(&mut s, "data: {\"id\":\"b\",\"model\":\"m-b\",\"choices\":[],\"usage\":{\"prompt_tokens\":5}}\n\n");
        assert!(out.contains("\"id\":\"a\"") && out.contains("\"usage\""), "{out}");
    }
}
