//! Writing [`StreamEvent`]s as the JSON Anthropic sends in each server-sent event's `data:` line,
//! `type` first, as its documentation shows them.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::blocks::ContentBlock;
use super::error::ErrorBody;
use super::events::{BlockDelta, DeltaUsage, StreamEvent};
use super::wire::{MessagesResponse, Usage};

/// A `message_start`'s message: `stop_reason` and `stop_sequence` are always written (`null`
/// until the end), as Anthropic does.
#[derive(Serialize)]
struct StartMessage<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    role: &'a str,
    content: &'a [ContentBlock],
    model: &'a str,
    stop_reason: &'a Option<String>,
    stop_sequence: &'a Option<String>,
    usage: &'a Usage,
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

impl<'a> From<&'a MessagesResponse> for StartMessage<'a> {
    fn from(m: &'a MessagesResponse) -> Self {
        Self {
            id: &m.id,
            kind: &m.kind,
            role: &m.role,
            content: &m.content,
            model: &m.model,
            stop_reason: &m.stop_reason,
            stop_sequence: &m.stop_sequence,
            usage: &m.usage,
            extra: &m.extra,
        }
    }
}

/// A `message_delta`'s delta, both fields always written (as Anthropic does).
#[derive(Serialize)]
struct StopDelta<'a> {
    stop_reason: &'a Option<String>,
    stop_sequence: &'a Option<String>,
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

#[derive(Serialize)]
#[serde(tag = "type")]
enum WireDelta<'a> {
    #[serde(rename = "text_delta")]
    Text { text: &'a str },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: &'a str },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: &'a str },
    #[serde(rename = "signature_delta")]
    Signature { signature: &'a str },
}

/// A block delta: a known kind tagged, any other as it came.
struct DeltaOut<'a>(&'a BlockDelta);

impl Serialize for DeltaOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            BlockDelta::Text(text) => WireDelta::Text { text }.serialize(serializer),
            BlockDelta::InputJson(partial_json) => WireDelta::InputJson { partial_json }.serialize(serializer),
            BlockDelta::Thinking(thinking) => WireDelta::Thinking { thinking }.serialize(serializer),
            BlockDelta::Signature(signature) => WireDelta::Signature { signature }.serialize(serializer),
            BlockDelta::Other(value) => value.serialize(serializer),
        }
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Wire<'a> {
    MessageStart {
        message: StartMessage<'a>,
    },
    ContentBlockStart {
        index: u32,
        content_block: &'a ContentBlock,
    },
    ContentBlockDelta {
        index: u32,
        delta: DeltaOut<'a>,
    },
    ContentBlockStop {
        index: u32,
    },
    MessageDelta {
        delta: StopDelta<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        usage: &'a Option<DeltaUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: &'a ErrorBody,
    },
}

impl Serialize for StreamEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let wire = match self {
            Self::MessageStart { message } => Wire::MessageStart { message: message.into() },
            Self::ContentBlockStart { index, content_block } => {
                Wire::ContentBlockStart { index: *index, content_block }
            }
            Self::ContentBlockDelta { index, delta } => {
                Wire::ContentBlockDelta { index: *index, delta: DeltaOut(delta) }
            }
            Self::ContentBlockStop { index } => Wire::ContentBlockStop { index: *index },
            Self::MessageDelta { delta, usage } => Wire::MessageDelta {
                delta: StopDelta {
                    stop_reason: &delta.stop_reason,
                    stop_sequence: &delta.stop_sequence,
                    extra: &delta.extra,
                },
                usage,
            },
            Self::MessageStop => Wire::MessageStop,
            Self::Ping => Wire::Ping,
            Self::Error { error } => Wire::Error { error },
            Self::Unknown(value) => return value.serialize(serializer),
        };
        wire.serialize(serializer)
    }
}

impl StreamEvent {
    /// The event's type, for the server-sent event's `event:` line (`message_start`,
    /// `content_block_delta`, ...; an unknown event's own `type`, or `unknown` without one).
    ///
    /// ```
    /// use switchyard_dialects::anthropic::StreamEvent;
    ///
    /// assert_eq!(StreamEvent::Ping.name(), "ping");
    /// assert_eq!(StreamEvent::from_json(r#"{"type":"future_event"}"#)?.name(), "future_event");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn name(&self) -> &str {
        match self {
            Self::MessageStart { .. } => "message_start",
            Self::ContentBlockStart { .. } => "content_block_start",
            Self::ContentBlockDelta { .. } => "content_block_delta",
            Self::ContentBlockStop { .. } => "content_block_stop",
            Self::MessageDelta { .. } => "message_delta",
            Self::MessageStop => "message_stop",
            Self::Ping => "ping",
            Self::Error { .. } => "error",
            Self::Unknown(value) => crate::tagged::kind(value).unwrap_or("unknown"),
        }
    }

    /// The event as the JSON of its `data:` line, as Anthropic writes it: what
    /// [`StreamEvent::from_json`] reads gives the same event when read again, and an unknown
    /// event is written as it came.
    ///
    /// ```
    /// use switchyard_dialects::anthropic::{BlockDelta, StreamEvent};
    ///
    /// let event = StreamEvent::ContentBlockDelta { index: 0, delta: BlockDelta::Text("Hi".to_owned()) };
    /// assert_eq!(event.to_json(), r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#);
    /// assert_eq!(StreamEvent::from_json(&event.to_json())?, event);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn to_json(&self) -> String {
        // Every map this writes has string keys and every value is plain data: it cannot fail.
        serde_json::to_string(self).unwrap_or_else(|e| unreachable!("a stream event always serializes: {e}"))
    }
}
