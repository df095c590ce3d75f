//! [`StreamEvent`]: one event of a Cohere v2 chat stream, read from its JSON data.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::wire::{ToolCall, Usage};

/// One event of a v2 chat stream (`POST /v2/chat` with `"stream": true`), named by its `type`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// `message-start`: the answer's id.
    MessageStart {
        /// The answer's id.
        id: Option<String>,
    },
    /// `content-start` (`first: true`) or `content-delta`: more text or thinking of content
    /// block `index`.
    Content {
        /// The content block.
        index: u32,
        /// More text.
        text: Option<String>,
        /// More thinking.
        thinking: Option<String>,
    },
    /// `tool-plan-delta`: more of the plan written before tool calls.
    ToolPlan(String),
    /// `tool-call-start`: a tool call's id and name (and the start of its arguments).
    ToolCallStart {
        /// Cohere's index of the call.
        index: u32,
        /// The call.
        call: ToolCall,
    },
    /// `tool-call-delta`: more of a call's arguments.
    ToolCallDelta {
        /// Cohere's index of the call.
        index: u32,
        /// More of the arguments' JSON text.
        arguments: String,
    },
    /// `citation-start`: a citation, as given.
    Citation(Value),
    /// `message-end`: why the answer ended, its usage, and the error of a failed generation.
    MessageEnd {
        /// `COMPLETE`, `STOP_SEQUENCE`, `MAX_TOKENS`, `TOOL_CALL`, `ERROR`, `TIMEOUT`.
        finish_reason: Option<String>,
        /// Token counts.
        usage: Option<Usage>,
        /// What went wrong, for a failed generation.
        error: Option<String>,
    },
    /// `content-end`, `tool-call-end`, `citation-end`, `debug` and unknown types: nothing to
    /// translate.
    Other(String),
}

#[derive(Deserialize)]
struct Event<M> {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default = "none")]
    delta: Option<Delta<M>>,
}

#[derive(Deserialize)]
struct Delta<M> {
    #[serde(default = "none")]
    message: Option<M>,
}

fn none<T>() -> Option<T> {
    None
}

impl<M> Event<M> {
    fn split(self) -> (u32, Option<M>) {
        (self.index.unwrap_or(0), self.delta.and_then(|d| d.message))
    }
}

#[derive(Deserialize)]
struct Start {
    #[serde(default)]
    id: Option<String>,
}

#[derive(Deserialize)]
struct ContentMessage {
    #[serde(default)]
    content: Option<ContentText>,
}

#[derive(Deserialize)]
struct ContentText {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
}

#[derive(Deserialize)]
struct PlanMessage {
    #[serde(default)]
    tool_plan: Option<String>,
}

/// One value or several (the SDK types a start's `tool_calls` and a `citations` as one object;
/// an array is read too).
#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    fn into_vec(self) -> Vec<T> {
        match self {
            Self::One(t) => vec![t],
            Self::Many(v) => v,
        }
    }
}

#[derive(Deserialize)]
struct ToolCallsMessage<C> {
    #[serde(default = "none")]
    tool_calls: Option<OneOrMany<C>>,
}

#[derive(Deserialize)]
struct ArgumentsCall {
    #[serde(default)]
    function: Option<Arguments>,
}

#[derive(Deserialize)]
struct Arguments {
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct CitationMessage {
    #[serde(default)]
    citations: Option<OneOrMany<Value>>,
}

#[derive(Deserialize)]
struct End {
    #[serde(default)]
    delta: Option<EndDelta>,
}

#[derive(Deserialize)]
struct EndDelta {
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<String>,
}

fn read<T: DeserializeOwned>(value: Value) -> Result<T, serde_json::Error> {
    T::deserialize(value)
}

impl StreamEvent {
    /// Reads the events of one server-sent event: its JSON `data`, typed by `type` (or, without
    /// one, by the SSE `event:` name). A citation or tool-call start carrying an array gives one
    /// event per element. Data that is not a JSON object, or a known event whose fields have the
    /// wrong types, is an error.
    ///
    /// ```
    /// use switchyard_dialects::cohere::StreamEvent;
    ///
    /// let data = r#"{"type":"content-delta","index":0,"delta":{"message":{"content":{"text":"Hi"}}}}"#;
    /// assert_eq!(
    ///     StreamEvent::from_json(data, None)?,
    ///     [StreamEvent::Content { index: 0, text: Some("Hi".to_owned()), thinking: None }],
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn from_json(data: &str, event: Option<&str>) -> Result<Vec<Self>, serde_json::Error> {
        let value: Value = serde_json::from_str(data)?;
        if !value.is_object() {
            return Err(serde::de::Error::custom("an event must be a JSON object"));
        }
        let kind = value.get("type").and_then(Value::as_str).or(event).unwrap_or_default().to_owned();
        Ok(match kind.as_str() {
            "message-start" => vec![Self::MessageStart { id: read::<Start>(value)?.id }],
            "content-start" | "content-delta" => {
                let (index, message) = read::<Event<ContentMessage>>(value)?.split();
                let content = message.and_then(|m| m.content);
                let (text, thinking) = content.map(|c| (c.text, c.thinking)).unwrap_or_default();
                vec![Self::Content { index, text, thinking }]
            }
            "tool-plan-delta" => {
                let (_, message) = read::<Event<PlanMessage>>(value)?.split();
                message.and_then(|m| m.tool_plan).map(Self::ToolPlan).into_iter().collect()
            }
            "tool-call-start" => {
                let (index, message) = read::<Event<ToolCallsMessage<ToolCall>>>(value)?.split();
                let calls = message.and_then(|m| m.tool_calls).map(OneOrMany::into_vec).unwrap_or_default();
                calls.into_iter().map(|call| Self::ToolCallStart { index, call }).collect()
            }
            "tool-call-delta" => {
                let (index, message) = read::<Event<ToolCallsMessage<ArgumentsCall>>>(value)?.split();
                let calls = message.and_then(|m| m.tool_calls).map(OneOrMany::into_vec).unwrap_or_default();
                calls
                    .into_iter()
                    .filter_map(|c| c.function?.arguments)
                    .map(|arguments| Self::ToolCallDelta { index, arguments })
                    .collect()
            }
            "citation-start" => {
                let (_, message) = read::<Event<CitationMessage>>(value)?.split();
                let citations = message.and_then(|m| m.citations).map(OneOrMany::into_vec).unwrap_or_default();
                citations.into_iter().map(Self::Citation).collect()
            }
            "message-end" => {
                let delta = read::<End>(value)?.delta;
                let (finish_reason, usage, error) =
                    delta.map(|d| (d.finish_reason, d.usage, d.error)).unwrap_or_default();
                vec![Self::MessageEnd { finish_reason, usage, error }]
            }
            _ => vec![Self::Other(kind)],
        })
    }
}
