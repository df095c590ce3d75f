//! The response object ([`Response`]) and [`response_from_chat`]: a whole chat answer as a
//! response.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::items::{
    FunctionCallItem, OutputContent, OutputItem, OutputMessage, OutputText, ReasoningItem, Refusal, SummaryText,
};
use super::wire::{Reasoning, ResponsesRequest, TextConfig, Tool, ToolChoice};
use crate::chat;

/// A response: what `POST /v1/responses` answers, and what `response.created`,
/// `response.completed`, ... events carry.
///
/// Every field the official SDK's `Response` type requires is written, and the optional ones
/// OpenAI writes as `null` are written as `null` too.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Response {
    /// The response's id (`resp_...`).
    pub id: String,
    /// `response`.
    pub object: String,
    /// Unix seconds.
    pub created_at: u64,
    /// Where the response stands.
    pub status: ResponseStatus,
    /// Why it failed (`status` `failed`).
    #[serde(default)]
    pub error: Option<ResponseError>,
    /// Why it is incomplete (`status` `incomplete`).
    #[serde(default)]
    pub incomplete_details: Option<IncompleteDetails>,
    /// The request's instructions, echoed.
    #[serde(default)]
    pub instructions: Option<Value>,
    /// The request's `max_output_tokens`, echoed.
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    /// The model that answered.
    pub model: String,
    /// What the model produced, in order.
    pub output: Vec<OutputItem>,
    /// The request's `parallel_tool_calls`, echoed (`true` when not set).
    #[serde(default = "yes")]
    pub parallel_tool_calls: bool,
    /// The request's `previous_response_id`, echoed.
    #[serde(default)]
    pub previous_response_id: Option<String>,
    /// The request's `reasoning`, echoed.
    #[serde(default)]
    pub reasoning: Option<Reasoning>,
    /// The request's `temperature`, echoed.
    #[serde(default)]
    pub temperature: Option<Number>,
    /// The request's `text`, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<TextConfig>,
    /// The request's `tool_choice`, echoed (`"auto"` when not set).
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// The request's `tools`, echoed.
    #[serde(default)]
    pub tools: Vec<Tool>,
    /// The request's `top_p`, echoed.
    #[serde(default)]
    pub top_p: Option<Number>,
    /// The request's `truncation`, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation: Option<String>,
    /// Token counts (once known).
    #[serde(default)]
    pub usage: Option<ResponseUsage>,
    /// The request's `user`, echoed.
    #[serde(default)]
    pub user: Option<String>,
    /// The request's `metadata`, echoed (`{}` when not set).
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn yes() -> bool {
    true
}

impl Response {
    /// An empty response `id` from `model` at `created_at` (Unix seconds) with `status`.
    pub fn new(id: impl Into<String>, model: impl Into<String>, created_at: u64, status: ResponseStatus) -> Self {
        Self {
            id: id.into(),
            object: "response".to_owned(),
            created_at,
            status,
            error: None,
            incomplete_details: None,
            instructions: None,
            max_output_tokens: None,
            model: model.into(),
            output: Vec::new(),
            parallel_tool_calls: true,
            previous_response_id: None,
            reasoning: None,
            temperature: None,
            text: None,
            tool_choice: ToolChoice::default(),
            tools: Vec::new(),
            top_p: None,
            truncation: None,
            usage: None,
            user: None,
            metadata: Map::new(),
            extra: Map::new(),
        }
    }

    /// Echoes the request's settings, as OpenAI does: `instructions`, `max_output_tokens`,
    /// `parallel_tool_calls`, `previous_response_id`, `reasoning`, `temperature`, `text`,
    /// `tool_choice`, `tools`, `top_p`, `truncation`, `user` and `metadata`.
    ///
    /// ```
    /// use switchyard_dialects::responses::{Response, ResponseStatus, ResponsesRequest};
    ///
    /// let req: ResponsesRequest = serde_json::from_str(
    ///     r#"{"model": "m", "input": "hi", "instructions": "Be terse.", "temperature": 0.2}"#)?;
    /// let mut resp = Response::new("resp_1", "m", 1_700_000_000, ResponseStatus::Completed);
    /// resp.echo_request(&req);
    /// assert_eq!(resp.instructions, Some(serde_json::json!("Be terse.")));
    /// assert_eq!(serde_json::to_value(&resp)?["temperature"], 0.2);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn echo_request(&mut self, req: &ResponsesRequest) {
        self.instructions = req.instructions.clone().map(Value::String);
        self.max_output_tokens = req.max_output_tokens;
        self.parallel_tool_calls = req.parallel_tool_calls.unwrap_or(true);
        self.previous_response_id.clone_from(&req.previous_response_id);
        self.reasoning.clone_from(&req.reasoning);
        self.temperature.clone_from(&req.temperature);
        self.text.clone_from(&req.text);
        self.tool_choice = req.tool_choice.clone().unwrap_or_default();
        self.tools = req.tools.clone().unwrap_or_default();
        self.top_p.clone_from(&req.top_p);
        self.truncation.clone_from(&req.truncation);
        self.user.clone_from(&req.user);
        self.metadata = req.metadata.clone().unwrap_or_default();
    }

    /// The text of every `output_text` part, concatenated (the SDKs' `output_text`).
    pub fn output_text(&self) -> String {
        let mut text = String::new();
        for item in &self.output {
            if let OutputItem::Message(m) = item {
                for part in &m.content {
                    if let OutputContent::OutputText(t) = part {
                        text.push_str(&t.text);
                    }
                }
            }
        }
        text
    }
}

/// A response's `status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResponseStatus {
    /// Done.
    Completed,
    /// Failed: see `error`.
    Failed,
    /// Being generated.
    InProgress,
    /// Cancelled by the client.
    Cancelled,
    /// Waiting to run (background).
    Queued,
    /// Stopped early: see `incomplete_details`.
    Incomplete,
    /// A status this crate does not know.
    #[serde(other)]
    Unknown,
}

impl ResponseStatus {
    /// The status as written on the wire (`completed`, `in_progress`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::InProgress => "in_progress",
            Self::Cancelled => "cancelled",
            Self::Queued => "queued",
            Self::Incomplete => "incomplete",
            Self::Unknown => "unknown",
        }
    }
}

/// `error`: `{"code", "message"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResponseError {
    /// `server_error`, `rate_limit_exceeded`, `invalid_prompt`, ...
    pub code: String,
    /// What went wrong.
    pub message: String,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResponseError {
    /// An error `code` explained by `message`.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self { code: code.into(), message: message.into(), extra: Map::new() }
    }
}

/// `incomplete_details`: `{"reason": "max_output_tokens" | "content_filter"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IncompleteDetails {
    /// Why the response stopped early.
    #[serde(default)]
    pub reason: Option<String>,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl IncompleteDetails {
    /// Stopped early for `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self { reason: Some(reason.into()), extra: Map::new() }
    }
}

/// `usage`.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResponseUsage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Details of the prompt tokens.
    #[serde(default)]
    pub input_tokens_details: InputTokensDetails,
    /// Generated tokens, reasoning included.
    pub output_tokens: u64,
    /// Details of the generated tokens.
    #[serde(default)]
    pub output_tokens_details: OutputTokensDetails,
    /// Their sum.
    pub total_tokens: u64,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `usage.input_tokens_details`.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InputTokensDetails {
    /// Prompt tokens read from the cache.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Prompt tokens written to the cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `usage.output_tokens_details`.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OutputTokensDetails {
    /// Generated tokens spent reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// Every other field, as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResponseUsage {
    /// `input` and `output` tokens, and their sum.
    pub fn new(input: u64, output: u64) -> Self {
        Self {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input.saturating_add(output),
            ..Self::default()
        }
    }

    /// A chat answer's usage as a response's: prompt tokens are input tokens (cached ones from
    /// `prompt_tokens_details.cached_tokens`, else LiteLLM's `cache_read_input_tokens`; cache
    /// writes from `cache_creation_input_tokens`), completion tokens are output tokens
    /// (reasoning ones from `completion_tokens_details.reasoning_tokens`), and the total is
    /// their sum.
    ///
    /// ```
    /// use switchyard_dialects::chat::Usage;
    /// use switchyard_dialects::responses::ResponseUsage;
    ///
    /// let usage = ResponseUsage::from_chat(&Usage::new(12, 30));
    /// assert_eq!((usage.input_tokens, usage.output_tokens, usage.total_tokens), (12, 30, 42));
    /// ```
    pub fn from_chat(usage: &chat::Usage) -> Self {
        let cached = usage
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .or(usage.cache_read_input_tokens)
            .unwrap_or(0);
        let reasoning = usage
            .extra
            .get("completion_tokens_details")
            .and_then(|d| d.get("reasoning_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let mut out = Self::new(usage.prompt_tokens, usage.completion_tokens);
        out.input_tokens_details.cached_tokens = cached;
        out.input_tokens_details.cache_write_tokens = usage.cache_creation_input_tokens.unwrap_or(0);
        out.output_tokens_details.reasoning_tokens = reasoning;
        out
    }
}

/// The id of output item `index` of response `id`: `{prefix}_{id without resp_}_{index}`, the
/// same in a whole answer and in a stream.
pub(crate) fn item_id(prefix: &str, id: &str, index: usize) -> String {
    let base = id.strip_prefix("resp_").unwrap_or(id);
    format!("{prefix}_{base}_{index}")
}

/// A response's status for a chat `finish_reason`: `length` → incomplete (`max_output_tokens`),
/// `content_filter` → incomplete (`content_filter`), anything else → completed.
pub(crate) fn status_for(finish_reason: Option<&str>) -> (ResponseStatus, Option<IncompleteDetails>) {
    match finish_reason {
        Some("length") => (ResponseStatus::Incomplete, Some(IncompleteDetails::new("max_output_tokens"))),
        Some("content_filter") => (ResponseStatus::Incomplete, Some(IncompleteDetails::new("content_filter"))),
        _ => (ResponseStatus::Completed, None),
    }
}

/// An item's status in a response of `status`.
pub(crate) fn item_status(status: ResponseStatus) -> &'static str {
    match status {
        ResponseStatus::Completed => "completed",
        ResponseStatus::InProgress | ResponseStatus::Queued => "in_progress",
        _ => "incomplete",
    }
}

/// Translates a whole chat answer into response `id` created at `created_at` (Unix seconds).
///
/// The first choice's `reasoning_content` becomes a `reasoning` item (its text as one
/// `summary_text`), its content (and `refusal`) a `message` item with one `output_text` part (and
/// a `refusal` part), its tool calls `function_call` items (`call_id` the chat call's id), in
/// that order. Item ids derive from `id` (`msg_<id>_<index>`, `fc_...`, `rs_...`). A
/// `finish_reason` of `length` makes the response `incomplete` with `incomplete_details.reason`
/// `max_output_tokens` (`content_filter`: reason `content_filter`); usage maps with
/// [`ResponseUsage::from_chat`]. The model is the answer's; the request's settings are not
/// echoed unless [`Response::echo_request`] is called.
///
/// ```
/// use switchyard_dialects::chat::{ChatCompletion, Choice, ResponseMessage, Usage};
/// use switchyard_dialects::responses::{ResponseStatus, response_from_chat};
///
/// let mut answer = ChatCompletion::new("chatcmpl-1", 1_700_000_000, "llama",
///     vec![Choice::new(0, ResponseMessage::assistant(Some("Paris.".to_owned())), Some("stop".to_owned()))]);
/// answer.usage = Some(Usage::new(10, 2));
/// let resp = response_from_chat(answer, "resp_abc", 1_700_000_001);
/// assert_eq!(resp.status, ResponseStatus::Completed);
/// assert_eq!(resp.output_text(), "Paris.");
/// assert_eq!(resp.usage.map(|u| u.total_tokens), Some(12));
/// ```
pub fn response_from_chat(completion: chat::ChatCompletion, id: &str, created_at: u64) -> Response {
    let chat::ChatCompletion { model, choices, usage, .. } = completion;
    let choice = choices.into_iter().min_by_key(|c| c.index);
    let (status, incomplete) = status_for(choice.as_ref().and_then(|c| c.finish_reason.as_deref()));
    let item_state = item_status(status);
    let mut output = Vec::new();
    if let Some(choice) = choice {
        let message = choice.message;
        if let Some(reasoning) = message.reasoning_content.filter(|r| !r.is_empty()) {
            let mut item = ReasoningItem::new(item_id("rs", id, output.len()));
            item.summary.push(SummaryText::new(reasoning));
            output.push(OutputItem::Reasoning(item));
        }
        let calls = message.tool_calls.unwrap_or_default();
        let refusal = message.extra.get("refusal").and_then(Value::as_str).filter(|r| !r.is_empty());
        let text = message.content.unwrap_or_default();
        let mut content = Vec::new();
        if !text.is_empty() || (calls.is_empty() && refusal.is_none()) {
            content.push(OutputContent::OutputText(OutputText::new(text)));
        }
        if let Some(refusal) = refusal {
            content.push(OutputContent::Refusal(Refusal::new(refusal)));
        }
        if !content.is_empty() {
            let msg = OutputMessage::new(item_id("msg", id, output.len()), item_state, content);
            output.push(OutputItem::Message(msg));
        }
        for call in calls {
            let mut item = FunctionCallItem::new(call.id, call.function.name, call.function.arguments);
            item.id = Some(item_id("fc", id, output.len()));
            item.status = Some(item_state.to_owned());
            output.push(OutputItem::FunctionCall(item));
        }
    }
    let mut resp = Response::new(id, model, created_at, status);
    resp.incomplete_details = incomplete;
    resp.output = output;
    resp.usage = usage.as_ref().map(ResponseUsage::from_chat);
    resp
}
