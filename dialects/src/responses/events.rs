//! [`StreamEvent`]: the server-sent events of a streamed response, as the encoder writes them.

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::items::{OutputContent, OutputItem, SummaryText};
use super::response::Response;

/// One event of a streamed response (the JSON of its `data:` line; its `event:` line is
/// [`name`](Self::name)).
///
/// Every event carries its `type` and a `sequence_number`; item events carry `output_index` and
/// `item_id`, content events `content_index`, summary events `summary_index`, as OpenAI's SDK
/// types define them.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// `response.created`: the response, empty, `in_progress`.
    Created {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The response so far.
        response: Box<Response>,
    },
    /// `response.in_progress`.
    InProgress {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The response so far.
        response: Box<Response>,
    },
    /// `response.completed`: the whole response, with usage.
    Completed {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The whole response.
        response: Box<Response>,
    },
    /// `response.incomplete`: the whole response, stopped early (`incomplete_details`).
    Incomplete {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The whole response.
        response: Box<Response>,
    },
    /// `response.failed`: the response with its `error`.
    Failed {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The response so far, with `error`.
        response: Box<Response>,
    },
    /// `response.output_item.added`: an item starts.
    OutputItemAdded {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The item's position in `output`.
        output_index: usize,
        /// The item, empty.
        item: OutputItem,
    },
    /// `response.output_item.done`: an item is complete.
    OutputItemDone {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The item's position in `output`.
        output_index: usize,
        /// The whole item.
        item: OutputItem,
    },
    /// `response.content_part.added`: a part of a message starts.
    ContentPartAdded {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The message's id.
        item_id: String,
        /// The message's position in `output`.
        output_index: usize,
        /// The part's position in the message's `content`.
        content_index: usize,
        /// The part, empty.
        part: OutputContent,
    },
    /// `response.content_part.done`: a part of a message is complete.
    ContentPartDone {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The message's id.
        item_id: String,
        /// The message's position in `output`.
        output_index: usize,
        /// The part's position in the message's `content`.
        content_index: usize,
        /// The whole part.
        part: OutputContent,
    },
    /// `response.output_text.delta`: more text (written with `logprobs: []`).
    OutputTextDelta {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The message's id.
        item_id: String,
        /// The message's position in `output`.
        output_index: usize,
        /// The part's position in the message's `content`.
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// `response.output_text.done`: the part's whole text (written with `logprobs: []`).
    OutputTextDone {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The message's id.
        item_id: String,
        /// The message's position in `output`.
        output_index: usize,
        /// The part's position in the message's `content`.
        content_index: usize,
        /// The whole text.
        text: String,
    },
    /// `response.function_call_arguments.delta`: more of a call's arguments.
    FunctionCallArgumentsDelta {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The call item's id.
        item_id: String,
        /// The call's position in `output`.
        output_index: usize,
        /// More of the arguments' JSON text.
        delta: String,
    },
    /// `response.function_call_arguments.done`: a call's whole arguments.
    FunctionCallArgumentsDone {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The call item's id.
        item_id: String,
        /// The call's position in `output`.
        output_index: usize,
        /// The function's name.
        name: String,
        /// The whole arguments' JSON text.
        arguments: String,
    },
    /// `response.reasoning_summary_part.added`: a part of a reasoning summary starts.
    ReasoningSummaryPartAdded {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The reasoning item's id.
        item_id: String,
        /// The reasoning item's position in `output`.
        output_index: usize,
        /// The part's position in the item's `summary`.
        summary_index: usize,
        /// The part, empty.
        part: SummaryText,
    },
    /// `response.reasoning_summary_part.done`: a part of a reasoning summary is complete.
    ReasoningSummaryPartDone {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The reasoning item's id.
        item_id: String,
        /// The reasoning item's position in `output`.
        output_index: usize,
        /// The part's position in the item's `summary`.
        summary_index: usize,
        /// The whole part.
        part: SummaryText,
    },
    /// `response.reasoning_summary_text.delta`: more reasoning.
    ReasoningSummaryTextDelta {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The reasoning item's id.
        item_id: String,
        /// The reasoning item's position in `output`.
        output_index: usize,
        /// The part's position in the item's `summary`.
        summary_index: usize,
        /// The new text.
        delta: String,
    },
    /// `response.reasoning_summary_text.done`: a summary part's whole text.
    ReasoningSummaryTextDone {
        /// The event's position in the stream, from 0.
        sequence_number: u64,
        /// The reasoning item's id.
        item_id: String,
        /// The reasoning item's position in `output`.
        output_index: usize,
        /// The part's position in the item's `summary`.
        summary_index: usize,
        /// The whole text.
        text: String,
    },
}

impl StreamEvent {
    /// The event's `type`, also its SSE `event:` name (`response.output_text.delta`, ...).
    pub fn name(&self) -> &str {
        match self {
            Self::Created { .. } => "response.created",
            Self::InProgress { .. } => "response.in_progress",
            Self::Completed { .. } => "response.completed",
            Self::Incomplete { .. } => "response.incomplete",
            Self::Failed { .. } => "response.failed",
            Self::OutputItemAdded { .. } => "response.output_item.added",
            Self::OutputItemDone { .. } => "response.output_item.done",
            Self::ContentPartAdded { .. } => "response.content_part.added",
            Self::ContentPartDone { .. } => "response.content_part.done",
            Self::OutputTextDelta { .. } => "response.output_text.delta",
            Self::OutputTextDone { .. } => "response.output_text.done",
            Self::FunctionCallArgumentsDelta { .. } => "response.function_call_arguments.delta",
            Self::FunctionCallArgumentsDone { .. } => "response.function_call_arguments.done",
            Self::ReasoningSummaryPartAdded { .. } => "response.reasoning_summary_part.added",
            Self::ReasoningSummaryPartDone { .. } => "response.reasoning_summary_part.done",
            Self::ReasoningSummaryTextDelta { .. } => "response.reasoning_summary_text.delta",
            Self::ReasoningSummaryTextDone { .. } => "response.reasoning_summary_text.done",
        }
    }

    /// The event's position in the stream, from 0.
    pub fn sequence_number(&self) -> u64 {
        match self {
            Self::Created { sequence_number, .. }
            | Self::InProgress { sequence_number, .. }
            | Self::Completed { sequence_number, .. }
            | Self::Incomplete { sequence_number, .. }
            | Self::Failed { sequence_number, .. }
            | Self::OutputItemAdded { sequence_number, .. }
            | Self::OutputItemDone { sequence_number, .. }
            | Self::ContentPartAdded { sequence_number, .. }
            | Self::ContentPartDone { sequence_number, .. }
            | Self::OutputTextDelta { sequence_number, .. }
            | Self::OutputTextDone { sequence_number, .. }
            | Self::FunctionCallArgumentsDelta { sequence_number, .. }
            | Self::FunctionCallArgumentsDone { sequence_number, .. }
            | Self::ReasoningSummaryPartAdded { sequence_number, .. }
            | Self::ReasoningSummaryPartDone { sequence_number, .. }
            | Self::ReasoningSummaryTextDelta { sequence_number, .. }
            | Self::ReasoningSummaryTextDone { sequence_number, .. } => *sequence_number,
        }
    }

    /// The JSON of the event's `data:` line.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("stream events are JSON objects with string keys")
    }
}

impl Serialize for StreamEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", self.name())?;
        map.serialize_entry("sequence_number", &self.sequence_number())?;
        const NO_LOGPROBS: [u8; 0] = [];
        match self {
            Self::Created { response, .. }
            | Self::InProgress { response, .. }
            | Self::Completed { response, .. }
            | Self::Incomplete { response, .. }
            | Self::Failed { response, .. } => map.serialize_entry("response", response)?,
            Self::OutputItemAdded { output_index, item, .. } | Self::OutputItemDone { output_index, item, .. } => {
                map.serialize_entry("output_index", output_index)?;
                map.serialize_entry("item", item)?;
            }
            Self::ContentPartAdded { item_id, output_index, content_index, part, .. }
            | Self::ContentPartDone { item_id, output_index, content_index, part, .. } => {
                map.serialize_entry("item_id", item_id)?;
                map.serialize_entry("output_index", output_index)?;
                map.serialize_entry("content_index", content_index)?;
                map.serialize_entry("part", part)?;
            }
            Self::OutputTextDelta { item_id, output_index, content_index, delta, .. } => {
                map.serialize_entry("item_id", item_id)?;
                map.serialize_entry("output_index", output_index)?;
                map.serialize_entry("content_index", content_index)?;
                map.serialize_entry("delta", delta)?;
                map.serialize_entry("logprobs", &NO_LOGPROBS)?;
            }
            Self::OutputTextDone { item_id, output_index, content_index, text, .. } => {
                map.serialize_entry("item_id", item_id)?;
                map.serialize_entry("output_index", output_index)?;
                map.serialize_entry("content_index", content_index)?;
                map.serialize_entry("text", text)?;
                map.serialize_entry("logprobs", &NO_LOGPROBS)?;
            }
            Self::FunctionCallArgumentsDelta { item_id, output_index, delta, .. } => {
                map.serialize_entry("item_id", item_id)?;
                map.serialize_entry("output_index", output_index)?;
                map.serialize_entry("delta", delta)?;
            }
            Self::FunctionCallArgumentsDone { item_id, output_index, name, arguments, .. } => {
                map.serialize_entry("item_id", item_id)?;
                map.serialize_entry("output_index", output_index)?;
                map.serialize_entry("name", name)?;
                map.serialize_entry("arguments", arguments)?;
            }
            Self::ReasoningSummaryPartAdded { item_id, output_index, summary_index, part, .. }
            | Self::ReasoningSummaryPartDone { item_id, output_index, summary_index, part, .. } => {
                map.serialize_entry("item_id", item_id)?;
                map.serialize_entry("output_index", output_index)?;
                map.serialize_entry("summary_index", summary_index)?;
                map.serialize_entry("part", part)?;
            }
            Self::ReasoningSummaryTextDelta { item_id, output_index, summary_index, delta, .. } => {
                map.serialize_entry("item_id", item_id)?;
                map.serialize_entry("output_index", output_index)?;
                map.serialize_entry("summary_index", summary_index)?;
                map.serialize_entry("delta", delta)?;
            }
            Self::ReasoningSummaryTextDone { item_id, output_index, summary_index, text, .. } => {
                map.serialize_entry("item_id", item_id)?;
                map.serialize_entry("output_index", output_index)?;
                map.serialize_entry("summary_index", summary_index)?;
                map.serialize_entry("text", text)?;
            }
        }
        map.end()
    }
}
