//! [`EventEncoder`]: a chat stream (the hub's chunks) re-framed as Responses stream events,
//! chunk by chunk.

use super::events::StreamEvent;
use super::items::{
    FunctionCallItem, OutputContent, OutputItem, OutputMessage, OutputText, ReasoningItem, SummaryText,
};
use super::response::{Response, ResponseError, ResponseStatus, ResponseUsage, item_id, item_status, status_for};
use super::wire::ResponsesRequest;
use crate::chat::{ChatCompletionChunk, ToolCallDelta};

/// Turns the chunks of a chat stream into the events of a Responses stream.
///
/// The first call emits `response.created` and `response.in_progress`. Reasoning
/// (`reasoning_content`) becomes a `reasoning` item whose summary streams as
/// `response.reasoning_summary_text.delta`; text a `message` item (`response.output_item.added`,
/// `response.content_part.added`, `response.output_text.delta`*, then `.done` events when the
/// item ends); each tool call a `function_call` item (`response.output_item.added`,
/// `response.function_call_arguments.delta`*, and at the end `.done` events). A message or
/// reasoning item ends when another item starts; function calls end at [`finish`](Self::finish),
/// in order, so that fragments of parallel calls may interleave. `finish` (at the hub's
/// `[DONE]`, after the usage chunk) ends the stream with `response.completed`, or
/// `response.incomplete` when the finish reason was `length` or `content_filter`, carrying the
/// whole response with its usage; [`failed`](Self::failed) ends it with `response.failed`.
/// Events after the end are none. `sequence_number` counts every event from 0.
///
/// The encoder keeps the output so far (the Responses format repeats it whole in the `.done`
/// events and in `response.completed`); only the first choice (`index` 0) is read.
///
/// ```
/// use switchyard_dialects::chat::{ChatCompletionChunk, ChunkChoice, Delta, Usage};
/// use switchyard_dialects::responses::EventEncoder;
///
/// let chunk = |content: Option<&str>, finish: Option<&str>| {
///     let mut delta = Delta::default();
///     delta.content = content.map(str::to_owned);
///     ChatCompletionChunk::new("c1", 1, "llama",
///         vec![ChunkChoice::new(0, delta, finish.map(str::to_owned))])
/// };
/// let mut encoder = EventEncoder::new("resp_1", "llama", 1_700_000_000);
/// let mut events = encoder.push(&chunk(Some("Hi"), None));
/// events.extend(encoder.push(&chunk(None, Some("stop"))));
/// let mut usage = ChatCompletionChunk::new("c1", 1, "llama", vec![]);
/// usage.usage = Some(Usage::new(5, 1));
/// events.extend(encoder.push(&usage));
/// events.extend(encoder.finish());
/// let names: Vec<&str> = events.iter().map(|e| e.name()).collect();
/// assert_eq!(names, [
///     "response.created", "response.in_progress", "response.output_item.added",
///     "response.content_part.added", "response.output_text.delta", "response.output_text.done",
///     "response.content_part.done", "response.output_item.done", "response.completed",
/// ]);
/// assert_eq!(encoder.response().usage.map(|u| u.total_tokens), Some(6));
/// ```
#[derive(Clone, Debug)]
pub struct EventEncoder {
    response: Response,
    sequence: u64,
    started: bool,
    finished: bool,
    /// The output index of the open message or reasoning item.
    open: Option<usize>,
    /// Chat tool-call index → output index, for every call (open until the end).
    calls: Vec<(u32, usize)>,
    finish_reason: Option<String>,
}

impl EventEncoder {
    /// An encoder for response `id` of `model`, created at `created_at` (Unix seconds).
    pub fn new(id: impl Into<String>, model: impl Into<String>, created_at: u64) -> Self {
        Self {
            response: Response::new(id, model, created_at, ResponseStatus::InProgress),
            sequence: 0,
            started: false,
            finished: false,
            open: None,
            calls: Vec::new(),
            finish_reason: None,
        }
    }

    /// Echoes the request's settings in every response the events carry (see
    /// [`Response::echo_request`]).
    pub fn with_request(mut self, req: &ResponsesRequest) -> Self {
        self.response.echo_request(req);
        self
    }

    /// The response built so far (`in_progress` until the stream ends).
    pub fn response(&self) -> Response {
        self.response.clone()
    }

    /// The events one chat chunk becomes (the first call also starts the stream).
    pub fn push(&mut self, chunk: &ChatCompletionChunk) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        self.start(&mut out);
        for choice in chunk.choices.iter().filter(|c| c.index == 0) {
            let delta = &choice.delta;
            if let Some(text) = delta.reasoning_content.as_deref().filter(|t| !t.is_empty()) {
                self.reasoning(text, &mut out);
            }
            if let Some(text) = delta.content.as_deref().filter(|t| !t.is_empty()) {
                self.text(text, &mut out);
            }
            for call in delta.tool_calls.iter().flatten() {
                self.call(call, &mut out);
            }
            if let Some(reason) = &choice.finish_reason {
                self.finish_reason = Some(reason.clone());
            }
        }
        if let Some(usage) = &chunk.usage {
            self.response.usage = Some(ResponseUsage::from_chat(usage));
        }
        out
    }

    /// Ends the stream (at the hub's `[DONE]`): the open items' `.done` events, then
    /// `response.completed` (or `response.incomplete`) with the whole response. A stream without
    /// any output gets one empty message, so that clients always find one.
    pub fn finish(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        self.start(&mut out);
        self.finished = true;
        let (status, incomplete) = status_for(self.finish_reason.as_deref());
        if self.response.output.is_empty() {
            self.open_message(&mut out);
        }
        self.close_open(status, &mut out);
        let mut calls: Vec<usize> = self.calls.iter().map(|&(_, index)| index).collect();
        calls.sort_unstable();
        for index in calls {
            self.close(index, status, &mut out);
        }
        self.response.status = status;
        self.response.incomplete_details = incomplete;
        let response = Box::new(self.response.clone());
        let sequence_number = self.next();
        out.push(match status {
            ResponseStatus::Incomplete => StreamEvent::Incomplete { sequence_number, response },
            _ => StreamEvent::Completed { sequence_number, response },
        });
        out
    }

    /// Ends the stream with `response.failed`: the response so far (unfinished items marked
    /// `incomplete`) with `error: {code, message}`.
    pub fn failed(&mut self, code: &str, message: &str) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        self.start(&mut out);
        self.finished = true;
        for item in &mut self.response.output {
            match item {
                OutputItem::Message(m) if m.status == "in_progress" => "incomplete".clone_into(&mut m.status),
                OutputItem::FunctionCall(c) if c.status.as_deref() == Some("in_progress") => {
                    c.status = Some("incomplete".to_owned());
                }
                OutputItem::Reasoning(r) if r.status.as_deref() == Some("in_progress") => {
                    r.status = Some("incomplete".to_owned());
                }
                _ => {}
            }
        }
        self.response.status = ResponseStatus::Failed;
        self.response.error = Some(ResponseError::new(code, message));
        let response = Box::new(self.response.clone());
        out.push(StreamEvent::Failed { sequence_number: self.next(), response });
        out
    }

    fn next(&mut self) -> u64 {
        let n = self.sequence;
        self.sequence += 1;
        n
    }

    fn start(&mut self, out: &mut Vec<StreamEvent>) {
        if self.started {
            return;
        }
        self.started = true;
        let created = Box::new(self.response.clone());
        out.push(StreamEvent::Created { sequence_number: self.next(), response: created });
        let in_progress = Box::new(self.response.clone());
        out.push(StreamEvent::InProgress { sequence_number: self.next(), response: in_progress });
    }

    fn item_id(&self, prefix: &str, index: usize) -> String {
        item_id(prefix, &self.response.id, index)
    }

    fn open_message(&mut self, out: &mut Vec<StreamEvent>) -> usize {
        let index = self.response.output.len();
        let id = self.item_id("msg", index);
        let item = OutputItem::Message(OutputMessage::new(id.clone(), "in_progress", Vec::new()));
        self.response.output.push(item.clone());
        out.push(StreamEvent::OutputItemAdded { sequence_number: self.next(), output_index: index, item });
        let part = OutputContent::OutputText(OutputText::new(""));
        if let Some(OutputItem::Message(m)) = self.response.output.get_mut(index) {
            m.content.push(part.clone());
        }
        out.push(StreamEvent::ContentPartAdded {
            sequence_number: self.next(),
            item_id: id,
            output_index: index,
            content_index: 0,
            part,
        });
        self.open = Some(index);
        index
    }

    fn text(&mut self, delta: &str, out: &mut Vec<StreamEvent>) {
        let index = match self.open {
            Some(i) if matches!(self.response.output.get(i), Some(OutputItem::Message(_))) => i,
            _ => {
                self.close_open(ResponseStatus::Completed, out);
                self.open_message(out)
            }
        };
        if let Some(OutputItem::Message(m)) = self.response.output.get_mut(index)
            && let Some(OutputContent::OutputText(t)) = m.content.first_mut()
        {
            t.text.push_str(delta);
        }
        out.push(StreamEvent::OutputTextDelta {
            sequence_number: self.next(),
            item_id: self.item_id("msg", index),
            output_index: index,
            content_index: 0,
            delta: delta.to_owned(),
        });
    }

    fn reasoning(&mut self, delta: &str, out: &mut Vec<StreamEvent>) {
        let index = match self.open {
            Some(i) if matches!(self.response.output.get(i), Some(OutputItem::Reasoning(_))) => i,
            _ => {
                self.close_open(ResponseStatus::Completed, out);
                let index = self.response.output.len();
                let id = self.item_id("rs", index);
                let item = OutputItem::Reasoning(ReasoningItem::new(id.clone()));
                self.response.output.push(item.clone());
                out.push(StreamEvent::OutputItemAdded { sequence_number: self.next(), output_index: index, item });
                let part = SummaryText::new("");
                if let Some(OutputItem::Reasoning(r)) = self.response.output.get_mut(index) {
                    r.summary.push(part.clone());
                }
                out.push(StreamEvent::ReasoningSummaryPartAdded {
                    sequence_number: self.next(),
                    item_id: id,
                    output_index: index,
                    summary_index: 0,
                    part,
                });
                self.open = Some(index);
                index
            }
        };
        if let Some(OutputItem::Reasoning(r)) = self.response.output.get_mut(index)
            && let Some(part) = r.summary.first_mut()
        {
            part.text.push_str(delta);
        }
        out.push(StreamEvent::ReasoningSummaryTextDelta {
            sequence_number: self.next(),
            item_id: self.item_id("rs", index),
            output_index: index,
            summary_index: 0,
            delta: delta.to_owned(),
        });
    }

    fn call(&mut self, call: &ToolCallDelta, out: &mut Vec<StreamEvent>) {
        let name = call.function.as_ref().and_then(|f| f.name.as_deref()).filter(|n| !n.is_empty());
        let arguments = call.function.as_ref().and_then(|f| f.arguments.as_deref()).unwrap_or("");
        let index = match self.calls.iter().find(|(chat_index, _)| *chat_index == call.index) {
            Some(&(_, index)) => {
                // Some upstreams repeat the name in every fragment: only a missing one is taken.
                if let (Some(name), Some(OutputItem::FunctionCall(c))) = (name, self.response.output.get_mut(index))
                    && c.name.is_empty()
                {
                    name.clone_into(&mut c.name);
                }
                index
            }
            None => {
                self.close_open(ResponseStatus::Completed, out);
                let index = self.response.output.len();
                let call_id = call.id.clone().unwrap_or_else(|| self.item_id("call", index));
                let mut item = FunctionCallItem::new(call_id, name.unwrap_or_default(), "");
                item.id = Some(self.item_id("fc", index));
                item.status = Some("in_progress".to_owned());
                let item = OutputItem::FunctionCall(item);
                self.response.output.push(item.clone());
                self.calls.push((call.index, index));
                out.push(StreamEvent::OutputItemAdded { sequence_number: self.next(), output_index: index, item });
                index
            }
        };
        if arguments.is_empty() {
            return;
        }
        if let Some(OutputItem::FunctionCall(c)) = self.response.output.get_mut(index) {
            c.arguments.push_str(arguments);
        }
        out.push(StreamEvent::FunctionCallArgumentsDelta {
            sequence_number: self.next(),
            item_id: self.item_id("fc", index),
            output_index: index,
            delta: arguments.to_owned(),
        });
    }

    fn close_open(&mut self, status: ResponseStatus, out: &mut Vec<StreamEvent>) {
        if let Some(index) = self.open.take() {
            self.close(index, status, out);
        }
    }

    /// The `.done` events of item `index`, its status set for a response of `status`.
    fn close(&mut self, index: usize, status: ResponseStatus, out: &mut Vec<StreamEvent>) {
        let state = item_status(status).to_owned();
        let Some(item) = self.response.output.get_mut(index) else { return };
        let mut events = Vec::new();
        match item {
            OutputItem::Message(m) => {
                m.status = state;
                for (content_index, part) in m.content.iter().enumerate() {
                    if let OutputContent::OutputText(t) = part {
                        events.push((m.id.clone(), content_index, Done::Text(t.text.clone())));
                    }
                    events.push((m.id.clone(), content_index, Done::Part(part.clone())));
                }
            }
            OutputItem::Reasoning(r) => {
                for (summary_index, part) in r.summary.iter().enumerate() {
                    events.push((r.id.clone(), summary_index, Done::SummaryText(part.text.clone())));
                    events.push((r.id.clone(), summary_index, Done::SummaryPart(part.clone())));
                }
            }
            OutputItem::FunctionCall(c) => {
                c.status = Some(state);
                let id = c.id.clone().unwrap_or_default();
                events.push((id, 0, Done::Arguments { name: c.name.clone(), arguments: c.arguments.clone() }));
            }
            OutputItem::Other(_) => {}
        }
        let item = item.clone();
        for (item_id, at, done) in events {
            let sequence_number = self.next();
            out.push(match done {
                Done::Text(text) => StreamEvent::OutputTextDone {
                    sequence_number,
                    item_id,
                    output_index: index,
                    content_index: at,
                    text,
                },
                Done::Part(part) => StreamEvent::ContentPartDone {
                    sequence_number,
                    item_id,
                    output_index: index,
                    content_index: at,
                    part,
                },
                Done::SummaryText(text) => StreamEvent::ReasoningSummaryTextDone {
                    sequence_number,
                    item_id,
                    output_index: index,
                    summary_index: at,
                    text,
                },
                Done::SummaryPart(part) => StreamEvent::ReasoningSummaryPartDone {
                    sequence_number,
                    item_id,
                    output_index: index,
                    summary_index: at,
                    part,
                },
                Done::Arguments { name, arguments } => StreamEvent::FunctionCallArgumentsDone {
                    sequence_number,
                    item_id,
                    output_index: index,
                    name,
                    arguments,
                },
            });
        }
        out.push(StreamEvent::OutputItemDone { sequence_number: self.next(), output_index: index, item });
    }
}

/// A `.done` event to write for an item's part.
enum Done {
    Text(String),
    Part(OutputContent),
    SummaryText(String),
    SummaryPart(SummaryText),
    Arguments { name: String, arguments: String },
}
