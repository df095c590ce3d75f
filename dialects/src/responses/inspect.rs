//! Reading a Responses upstream's own answer without translating it (passthrough): what an event
//! means for the commit point, usage accounting and failure classification.

use serde::Deserialize;
use serde_json::Value;

/// What one event of a Responses stream tells the gateway.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct EventFacts {
    /// The client sees something: an `output_text.delta` with text, a
    /// `function_call_arguments.delta` with arguments, a reasoning or refusal delta with text, or
    /// an `output_item.added` of any item other than an (empty) `message` or `reasoning` (a
    /// `function_call`, a hosted tool call, ...).
    pub content: bool,
    /// Input and output tokens, from `response.completed`, `response.incomplete` or
    /// `response.failed`.
    pub usage: Option<(u64, u64)>,
    /// `(code, message)` of an `error` event or of `response.failed`'s `response.error`.
    pub error: Option<(String, String)>,
    /// The stream ended: `response.completed`, `response.incomplete` or `response.failed`.
    pub done: bool,
    /// The response's id, from `response.created`.
    pub response_id: Option<String>,
}

/// Reads the JSON of one event's `data:` line. Data that is not JSON, and events of other types,
/// tell nothing (the default).
///
/// ```
/// use switchyard_dialects::responses::inspect_event;
///
/// let facts = inspect_event(r#"{"type": "response.output_text.delta", "sequence_number": 4,
///     "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Hi", "logprobs": []}"#);
/// assert!(facts.content);
///
/// let facts = inspect_event(r#"{"type": "response.completed", "sequence_number": 9, "response": {
///     "id": "resp_1", "object": "response", "status": "completed",
///     "usage": {"input_tokens": 12, "output_tokens": 3, "total_tokens": 15}}}"#);
/// assert!(facts.done);
/// assert_eq!(facts.usage, Some((12, 3)));
/// ```
pub fn inspect_event(data: &str) -> EventFacts {
    let mut facts = EventFacts::default();
    let Ok(event) = serde_json::from_str::<Value>(data) else { return facts };
    let text = |key: &str| event.get(key).and_then(Value::as_str);
    let non_empty = |key: &str| text(key).is_some_and(|t| !t.is_empty());
    match text("type").unwrap_or_default() {
        "response.created" => {
            facts.response_id = event.pointer("/response/id").and_then(Value::as_str).map(str::to_owned);
        }
        "response.output_text.delta"
        | "response.function_call_arguments.delta"
        | "response.reasoning_summary_text.delta"
        | "response.reasoning_text.delta"
        | "response.refusal.delta"
        | "response.custom_tool_call_input.delta" => facts.content = non_empty("delta"),
        "response.output_item.added" => {
            let kind = event.pointer("/item/type").and_then(Value::as_str);
            facts.content = kind.is_some_and(|k| k != "message" && k != "reasoning");
        }
        "response.completed" | "response.incomplete" => {
            facts.done = true;
            facts.usage = event.get("response").and_then(usage_in);
        }
        "response.failed" => {
            facts.done = true;
            facts.usage = event.get("response").and_then(usage_in);
            let error = event.pointer("/response/error");
            let field = |key: &str| error.and_then(|e| e.get(key)).and_then(Value::as_str);
            facts.error = Some((
                field("code").unwrap_or("server_error").to_owned(),
                field("message").unwrap_or("the response failed").to_owned(),
            ));
        }
        "error" => {
            facts.error = Some((
                text("code").unwrap_or("server_error").to_owned(),
                text("message").unwrap_or("the stream failed").to_owned(),
            ));
        }
        _ => {}
    }
    facts
}

#[derive(Deserialize)]
struct Counts {
    input_tokens: u64,
    output_tokens: u64,
}

fn usage_in(response: &Value) -> Option<(u64, u64)> {
    let counts = Counts::deserialize(response.get("usage")?).ok()?;
    Some((counts.input_tokens, counts.output_tokens))
}

/// Input and output tokens of a whole response's JSON (`usage.input_tokens`,
/// `usage.output_tokens`); `None` when the body is not JSON or has no usage.
///
/// ```
/// use switchyard_dialects::responses::usage_of;
///
/// let body = br#"{"id": "resp_1", "object": "response", "status": "completed", "output": [],
///     "usage": {"input_tokens": 36, "input_tokens_details": {"cached_tokens": 0},
///               "output_tokens": 87, "output_tokens_details": {"reasoning_tokens": 0},
///               "total_tokens": 123}}"#;
/// assert_eq!(usage_of(body), Some((36, 87)));
/// assert_eq!(usage_of(b"not json"), None);
/// ```
pub fn usage_of(body: &[u8]) -> Option<(u64, u64)> {
    #[derive(Deserialize)]
    struct Body {
        usage: Option<Counts>,
    }
    let body: Body = serde_json::from_slice(body).ok()?;
    body.usage.map(|u| (u.input_tokens, u.output_tokens))
}
