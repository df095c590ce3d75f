//! [`SseDecoder`]: a bounded decoder for `text/event-stream` bodies (OpenAI and Anthropic
//! streams), fed body chunks split anywhere.
//!
//! ```
//! use switchyard_dialects::sse::{SseDecoder, SseEvent};
//!
//! let mut sse = SseDecoder::new(1024);
//! let events = sse.push(b"event: ping\ndata: {\"type\": \"ping\"}\n\n")?;
//! assert_eq!(events, [SseEvent::new(Some("ping".to_owned()), r#"{"type": "ping"}"#.to_owned())]);
//! # Ok::<(), switchyard_dialects::sse::SseError>(())
//! ```

use std::fmt;

/// One server-sent event.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseEvent {
    /// The `event:` field, when the server named the event.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

impl SseEvent {
    /// An event named `event` (the `event:` field, if any) carrying `data`.
    pub fn new(event: Option<String>, data: String) -> Self {
        Self { event, data }
    }

    /// Whether this is OpenAI's end-of-stream marker, `data: [DONE]`.
    pub fn is_done(&self) -> bool {
        self.data == "[DONE]"
    }
}

/// A stream that cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SseError {
    /// One event (or one line) grew past the decoder's limit.
    EventTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// A line is not UTF-8.
    InvalidUtf8,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EventTooLarge { limit } => write!(f, "server-sent event larger than {limit} bytes"),
            Self::InvalidUtf8 => f.write_str("server-sent event is not UTF-8"),
        }
    }
}

impl std::error::Error for SseError {}

/// Decodes server-sent events from body chunks split anywhere, holding at most `limit` bytes of
/// one unfinished event (a hostile or broken upstream cannot grow it without bound).
///
/// Lines end with `\n` or `\r\n`; `data:` lines accumulate, an empty line ends the event,
/// comments (`:`) and the `id:` / `retry:` fields are skipped. An unfinished event at the end of
/// the stream is dropped, as the SSE specification says.
///
/// ```
/// use switchyard_dialects::sse::SseDecoder;
///
/// let mut sse = SseDecoder::new(1024);
/// assert!(sse.push(b"data: {\"a\"").is_ok_and(|e| e.is_empty()));
/// let events = sse.push(b":1}\n\ndata: [DONE]\n\n")?;
/// assert_eq!(events[0].data, "{\"a\":1}");
/// assert!(events[1].is_done());
/// # Ok::<(), switchyard_dialects::sse::SseError>(())
/// ```
#[derive(Clone, Debug)]
pub struct SseDecoder {
    limit: usize,
    /// Bytes of the current, unfinished line.
    line: Vec<u8>,
    data: String,
    has_data: bool,
    event: Option<String>,
}

impl SseDecoder {
    /// A decoder holding at most `limit` bytes of one event.
    pub fn new(limit: usize) -> Self {
        Self { limit, line: Vec::new(), data: String::new(), has_data: false, event: None }
    }

    /// Feeds the next chunk of the body; returns the events it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut events = Vec::new();
        let mut rest = chunk;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&rest[..end]);
            rest = &rest[end + 1..];
            self.check()?;
            let mut line = std::mem::take(&mut self.line);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if let Some(event) = self.take_line(&line)? {
                events.push(event);
            }
            line.clear();
            self.line = line;
        }
        self.line.extend_from_slice(rest);
        self.check()?;
        Ok(events)
    }

    fn check(&self) -> Result<(), SseError> {
        if self.line.len() + self.data.len() > self.limit {
            return Err(SseError::EventTooLarge { limit: self.limit });
        }
        Ok(())
    }

    fn take_line(&mut self, line: &[u8]) -> Result<Option<SseEvent>, SseError> {
        if line.is_empty() {
            let event = self.event.take();
            if !std::mem::take(&mut self.has_data) {
                return Ok(None);
            }
            return Ok(Some(SseEvent { event, data: std::mem::take(&mut self.data) }));
        }
        let line = std::str::from_utf8(line).map_err(|_| SseError::InvalidUtf8)?;
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                if self.data.len() > self.limit {
                    return Err(SseError::EventTooLarge { limit: self.limit });
                }
            }
            "event" => self.event = Some(value.to_owned()),
            // Comments (empty field name), `id`, `retry` and unknown fields carry nothing we use.
            _ => {}
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_and_crlf() {
        let mut sse = SseDecoder::new(64);
        let mut all = Vec::new();
        for piece in [&b": keep-alive\r\n\r\nevent: e"[..], b"rr\r\ndata: a\r\nda", b"ta: b\r\n", b"\r\n"] {
            all.extend(sse.push(piece).expect("decodes"));
        }
        assert_eq!(all, vec![SseEvent { event: Some("err".to_owned()), data: "a\nb".to_owned() }]);
    }

    #[test]
    fn an_event_past_the_limit_is_refused() {
        let mut sse = SseDecoder::new(8);
        assert_eq!(sse.push(b"data: 0123456789"), Err(SseError::EventTooLarge { limit: 8 }));
        let mut sse = SseDecoder::new(12);
        assert!(sse.push(b"data: 0123\n").is_ok());
        assert_eq!(sse.push(b"data: 4567\n"), Err(SseError::EventTooLarge { limit: 12 }));
    }
}
