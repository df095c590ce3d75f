//! [`ChunkTranslator`]: a Gemini `streamGenerateContent?alt=sse` stream re-framed as OpenAI chat
//! completion chunks, event by event.

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::{classify_error, error_message, retry_after};
use super::ids::{call_id, completion_id};
use super::response::{blocked, chat_logprobs, chat_usage, finish_reason, read_parts};
use super::wire::{Candidate, GenerateContentResponse, UsageMetadata};
use crate::chat::{ChatCompletionChunk, ChunkChoice, Delta, FunctionCallDelta, ToolCallDelta};
use crate::sse::SseEvent;
use crate::{ErrorClass, StreamItem, TranslateError};

/// What the stream said so far of one candidate.
#[derive(Clone, Debug, Default)]
struct Progress {
    /// Tool calls so far (the next one's position).
    calls: u32,
    finished: bool,
}

/// Re-frames a Gemini stream as OpenAI chat completion chunks, one server-sent event at a time.
///
/// Each event's data is a whole `GenerateContentResponse` carrying the next parts of each
/// candidate; there is no `[DONE]`: the last event has the `finishReason` (and the final
/// `usageMetadata`), and the body ends. So [`push`](Self::push) gives the chunks of each event,
/// and [`finish`](Self::finish), called at the end of the body, gives the usage chunk (with
/// `include_usage`) and [`StreamItem::Done`], or an error when the body ended before every
/// candidate finished. Function calls arrive whole, each as one tool-call chunk with all its
/// arguments. A prompt Gemini blocked (`promptFeedback.blockReason`, no candidates) and an
/// `{"error": ...}` event are [`StreamItem::Error`]s.
///
/// ```
/// use switchyard_dialects::StreamItem;
/// use switchyard_dialects::gemini::ChunkTranslator;
/// use switchyard_dialects::sse::SseDecoder;
///
/// let body = concat!(
///     "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hel\"}], \"role\": \"model\"}, \"index\": 0}],",
///     " \"responseId\": \"r1\"}\r\n\r\n",
///     "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"lo\"}], \"role\": \"model\"},",
///     " \"finishReason\": \"STOP\", \"index\": 0}], \"usageMetadata\": {\"promptTokenCount\": 3,",
///     " \"candidatesTokenCount\": 2, \"totalTokenCount\": 5}, \"responseId\": \"r1\"}\r\n\r\n",
/// );
/// let mut sse = SseDecoder::new(1 << 20);
/// let mut chunks = ChunkTranslator::new("gemini-2.5-flash", 1_700_000_000, true);
/// let mut out = Vec::new();
/// for event in sse.push(body.as_bytes())? {
///     out.extend(chunks.push(&event)?);
/// }
/// out.extend(chunks.finish());
/// let StreamItem::Chunk(first) = &out[0] else { panic!("a chunk") };
/// assert_eq!(first.id, "chatcmpl-r1");
/// assert_eq!(first.choices[0].delta.content.as_deref(), Some("Hel"));
/// let StreamItem::Chunk(usage) = &out[out.len() - 2] else { panic!("a chunk") };
/// assert_eq!(usage.usage.as_ref().map(|u| u.total_tokens), Some(5));
/// assert_eq!(out.last(), Some(&StreamItem::Done));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ChunkTranslator {
    model: String,
    created: u64,
    include_usage: bool,
    /// The answer's id, from the first event.
    id: Option<String>,
    candidates: BTreeMap<u32, Progress>,
    usage: Option<UsageMetadata>,
    events: u64,
    done: bool,
}

impl ChunkTranslator {
    /// A translator for a stream from `model` (the name the client should see) created at
    /// `created` (Unix seconds); with `include_usage` (the client's
    /// `stream_options.include_usage`) the stream ends with a usage chunk.
    pub fn new(model: impl Into<String>, created: u64, include_usage: bool) -> Self {
        Self {
            model: model.into(),
            created,
            include_usage,
            id: None,
            candidates: BTreeMap::new(),
            usage: None,
            events: 0,
            done: false,
        }
    }

    /// The usage so far (Gemini repeats the running counts in its events; the last is the
    /// answer's); `None` before any event had `usageMetadata`.
    pub fn usage(&self) -> Option<crate::chat::Usage> {
        self.usage.as_ref().map(chat_usage)
    }

    /// Translates one server-sent event. Events after an error or after [`finish`](Self::finish)
    /// give nothing; data that is not a JSON object of Gemini's answer shape is an error.
    pub fn push(&mut self, event: &SseEvent) -> Result<Vec<StreamItem>, TranslateError> {
        let n = self.events;
        self.events += 1;
        if self.done {
            return Ok(Vec::new());
        }
        let invalid = |e: String| TranslateError::new(format!("events[{n}].data"), format!("not a Gemini answer: {e}"));
        let value: Value = serde_json::from_str(&event.data).map_err(|e| invalid(e.to_string()))?;
        if !value.is_object() {
            return Err(invalid("not a JSON object".to_owned()));
        }
        if value.get("error").is_some_and(Value::is_object) {
            self.done = true;
            let body = event.data.as_bytes();
            return Ok(vec![StreamItem::Error {
                class: classify_error(0, body),
                message: error_message(body).unwrap_or_else(|| "Gemini failed mid-stream".to_owned()),
                retry_after: retry_after(body),
            }]);
        }
        let resp: GenerateContentResponse = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        Ok(self.translate(resp))
    }

    /// Translates one parsed event.
    pub fn translate(&mut self, resp: GenerateContentResponse) -> Vec<StreamItem> {
        if self.done {
            return Vec::new();
        }
        if let Some(message) = blocked(&resp) {
            self.done = true;
            return vec![StreamItem::Error { class: ErrorClass::ContentPolicy, message, retry_after: None }];
        }
        let id = self.id.get_or_insert_with(|| completion_id(resp.response_id.as_deref(), self.created)).clone();
        if let Some(usage) = resp.usage_metadata {
            self.usage = Some(usage);
        }
        let mut out = Vec::new();
        for (position, candidate) in resp.candidates.into_iter().enumerate() {
            let index = candidate.index.unwrap_or(u32::try_from(position).unwrap_or(u32::MAX));
            self.candidate(&id, index, candidate, &mut out);
        }
        out
    }

    fn candidate(&mut self, id: &str, index: u32, candidate: Candidate, out: &mut Vec<StreamItem>) {
        let first = !self.candidates.contains_key(&index);
        let progress = self.candidates.entry(index).or_default();
        let said = read_parts(candidate.content.map(|c| c.parts).unwrap_or_default());
        let mut delta = Delta { content: said.text, reasoning_content: said.reasoning, ..Delta::default() };
        if !said.calls.is_empty() {
            let calls = said
                .calls
                .into_iter()
                .map(|(name, arguments, native, signature)| {
                    let position = progress.calls;
                    progress.calls += 1;
                    let call = call_id(native.as_deref(), id, index, position, signature.as_deref());
                    let function = FunctionCallDelta::new(Some(name), Some(arguments));
                    ToolCallDelta::new(position, Some(call), Some("function".to_owned()), Some(function))
                })
                .collect();
            delta.tool_calls = Some(calls);
        }
        let logprobs = candidate.logprobs_result.as_ref().and_then(chat_logprobs);
        let has_content = delta != Delta::default() || logprobs.is_some();
        if first {
            delta.role = Some("assistant".to_owned());
            delta.content.get_or_insert_with(String::new);
        }
        if first || has_content {
            let mut choice = ChunkChoice::new(index, delta, None);
            if let Some(logprobs) = logprobs {
                choice.extra.insert("logprobs".to_owned(), logprobs);
            }
            out.push(self.chunk(id, choice));
        }
        let progress = self.candidates.entry(index).or_default();
        if let Some(reason) = candidate.finish_reason.filter(|_| !progress.finished) {
            progress.finished = true;
            let finish = if progress.calls > 0 { "tool_calls" } else { finish_reason(&reason) };
            let choice = ChunkChoice::new(index, Delta::default(), Some(finish.to_owned()));
            out.push(self.chunk(id, choice));
        }
    }

    fn chunk(&self, id: &str, choice: ChunkChoice) -> StreamItem {
        StreamItem::Chunk(ChatCompletionChunk::new(id, self.created, self.model.clone(), vec![choice]))
    }

    /// Ends the stream at the end of the body: the usage chunk (with `include_usage`) and
    /// [`StreamItem::Done`] when every candidate finished; a [`StreamItem::Error`]
    /// ([`ErrorClass::ServerError`]) when the body ended before one did (or had no candidate);
    /// nothing after an error or a first call.
    pub fn finish(&mut self) -> Vec<StreamItem> {
        if std::mem::replace(&mut self.done, true) {
            return Vec::new();
        }
        if self.candidates.is_empty() || self.candidates.values().any(|p| !p.finished) {
            return vec![StreamItem::Error {
                class: ErrorClass::ServerError,
                message: "the Gemini stream ended before its finishReason".to_owned(),
                retry_after: None,
            }];
        }
        let mut out = Vec::with_capacity(2);
        if self.include_usage {
            let id = self.id.clone().unwrap_or_else(|| completion_id(None, self.created));
            let mut chunk = ChatCompletionChunk::new(id, self.created, self.model.clone(), Vec::new());
            chunk.usage = Some(chat_usage(self.usage.as_ref().unwrap_or(&UsageMetadata::default())));
            out.push(StreamItem::Chunk(chunk));
        }
        out.push(StreamItem::Done);
        out
    }
}
