//! [`EventStreamDecoder`]: the AWS event-stream binary framing of a ConverseStream body
//! (`application/vnd.amazon.eventstream`), fed body chunks split anywhere.
//!
//! The framing (prelude, headers, CRCs) is `aws-smithy-eventstream`'s; this module only buffers
//! chunks until a frame is whole, bounds that buffer, and reads the three headers Converse uses.

use aws_smithy_eventstream::frame::read_message_from;
use aws_smithy_eventstream::smithy::parse_response_headers;
use aws_smithy_types::event_stream::{HeaderValue, Message};

use crate::TranslateError;

/// Bytes of a frame's prelude (total length, headers length, prelude CRC) and trailing CRC.
const FRAME_OVERHEAD: usize = 16;

/// One decoded event-stream message.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Event {
    /// What the message is: the `:event-type` header of an event (`messageStart`,
    /// `contentBlockDelta`, `metadata`, ...), the `:exception-type` of an exception
    /// (`throttlingException`, ...), or the `:error-code` of an unmodeled error.
    pub event_type: String,
    /// The `:message-type` header: `event`, `exception` or `error`.
    pub message_type: String,
    /// The payload: the event's JSON. For an `error` message, which carries its text in the
    /// `:error-message` header, `{"message": <that text>}`.
    pub payload: Vec<u8>,
}

impl Event {
    /// An event of `event_type` with a JSON `payload`.
    pub fn new(event_type: impl Into<String>, payload: impl Into<Vec<u8>>) -> Self {
        Self { event_type: event_type.into(), message_type: "event".to_owned(), payload: payload.into() }
    }

    /// An exception of `exception_type` with a JSON `payload` (`{"message": ...}`).
    pub fn exception(exception_type: impl Into<String>, payload: impl Into<Vec<u8>>) -> Self {
        Self { event_type: exception_type.into(), message_type: "exception".to_owned(), payload: payload.into() }
    }

    /// Whether the upstream failed: an `exception` or `error` message.
    pub fn is_error(&self) -> bool {
        self.message_type != "event"
    }
}

/// Decodes event-stream messages from body chunks split anywhere, holding at most `max_bytes`
/// of one unfinished frame: a frame whose prelude announces more is refused at once, so a hostile
/// or broken upstream cannot grow the buffer without bound.
///
/// Each frame's CRCs are checked; a frame that fails (checksum, lengths, headers) stops the
/// stream: that push and every later one return the error. The events decoded earlier in the
/// failing push are dropped with it (the stream is broken either way).
///
/// ```
/// use aws_smithy_eventstream::frame::write_message_to;
/// use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
/// use switchyard_dialects::bedrock::EventStreamDecoder;
///
/// let message = Message::new(&br#"{"contentBlockIndex":0,"delta":{"text":"Hi"}}"#[..])
///     .add_header(Header::new(":message-type", HeaderValue::String("event".into())))
///     .add_header(Header::new(":event-type", HeaderValue::String("contentBlockDelta".into())))
///     .add_header(Header::new(":content-type", HeaderValue::String("application/json".into())));
/// let mut frame = Vec::new();
/// write_message_to(&message, &mut frame)?;
///
/// let mut decoder = EventStreamDecoder::new(1 << 20);
/// assert!(decoder.push(&frame[..7])?.is_empty());
/// let events = decoder.push(&frame[7..])?;
/// assert_eq!(events[0].event_type, "contentBlockDelta");
/// assert_eq!(events[0].message_type, "event");
/// decoder.finish()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct EventStreamDecoder {
    max_bytes: usize,
    buffer: Vec<u8>,
    frames: u64,
    failed: Option<TranslateError>,
}

impl EventStreamDecoder {
    /// A decoder holding at most `max_bytes` of one frame (at least the 16 bytes of an empty
    /// one).
    pub fn new(max_bytes: usize) -> Self {
        Self { max_bytes: max_bytes.max(FRAME_OVERHEAD), buffer: Vec::new(), frames: 0, failed: None }
    }

    /// Takes the next body chunk; gives the messages it completes, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Event>, TranslateError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        loop {
            let rest = &self.buffer[start..];
            let Some(prelude) = rest.first_chunk::<4>() else { break };
            let total = u32::from_be_bytes(*prelude) as usize;
            if total > self.max_bytes {
                return Err(
                    self.fail(format!("a frame of {total} bytes is larger than the limit of {}", self.max_bytes))
                );
            }
            if rest.len() < total {
                break;
            }
            let message = match read_message_from(&rest[..total.max(4)]) {
                Ok(message) => message,
                Err(e) => return Err(self.fail(format!("not an event-stream frame: {e}"))),
            };
            let event = match event(&message) {
                Ok(event) => event,
                Err(reason) => return Err(self.fail(reason)),
            };
            events.push(event);
            self.frames += 1;
            start += total;
        }
        self.buffer.drain(..start);
        Ok(events)
    }

    /// The body ended: an error when it stopped inside a frame (or the stream had failed).
    pub fn finish(&self) -> Result<(), TranslateError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.buffer.is_empty() {
            Ok(())
        } else {
            Err(TranslateError::new(
                format!("frames[{}]", self.frames),
                format!("the stream ended inside a frame ({} bytes of it)", self.buffer.len()),
            ))
        }
    }

    fn fail(&mut self, reason: String) -> TranslateError {
        let error = TranslateError::new(format!("frames[{}]", self.frames), reason);
        self.failed = Some(error.clone());
        self.buffer = Vec::new();
        error
    }
}

/// The [`Event`] of a decoded message.
fn event(message: &Message) -> Result<Event, String> {
    let header = |name: &str| {
        message.headers().iter().find(|h| h.name().as_str() == name).and_then(|h| match h.value() {
            HeaderValue::String(s) => Some(s.as_str().to_owned()),
            _ => None,
        })
    };
    if header(":message-type").as_deref() == Some("error") {
        let code = header(":error-code").unwrap_or_default();
        let text = header(":error-message").unwrap_or_default();
        let payload = serde_json::to_vec(&serde_json::json!({"message": text})).unwrap_or_default();
        return Ok(Event { event_type: code, message_type: "error".to_owned(), payload });
    }
    let headers = parse_response_headers(message).map_err(|e| format!("not a Converse stream message: {e}"))?;
    Ok(Event {
        event_type: headers.smithy_type.as_str().to_owned(),
        message_type: headers.message_type.as_str().to_owned(),
        payload: message.payload().to_vec(),
    })
}
