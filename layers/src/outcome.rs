//! The classified result of an attempt, and the one classifier that produces it.
//!
//! Providers (or a classify layer around a user's own provider) call [`classify`] once per
//! attempt; nothing above the provider classifies again. What to do about an [`Outcome`]
//! (retry, cool down, fall back) is each layer's decision.
//!
//! ```
//! use http::{HeaderMap, StatusCode};
//! use switchyard_layers::outcome::{classify, Outcome};
//!
//! let body = br#"{"error":{"code":"context_length_exceeded","message":"too long"}}"#;
//! let c = classify(StatusCode::BAD_REQUEST, &HeaderMap::new(), body);
//! assert_eq!(c.outcome, Outcome::ContextWindowExceeded);
//! ```

use std::time::{Duration, SystemTime};

use http::{HeaderMap, StatusCode};
use serde::Deserialize;

/// The class of an attempt's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// The deployment answered successfully.
    Success,
    /// 429, or the provider's quota is exhausted.
    RateLimited,
    /// The prompt does not fit the deployment's context window.
    ContextWindowExceeded,
    /// The provider's content filter refused the prompt or the completion.
    ContentPolicy,
    /// Any other 4xx the caller caused (400, 409, 413, 422, ...).
    BadRequest,
    /// 401 or 403: the deployment's credentials are wrong.
    Auth,
    /// 404: the deployment's model or endpoint does not exist.
    NotFound,
    /// 408, or the attempt ran out of time.
    Timeout,
    /// 5xx.
    ServerError,
    /// The connection failed before anything was sent upstream.
    Connect,
    /// The transfer broke after the request was sent (reset, malformed response, cut stream).
    Transport,
}

impl Outcome {
    /// Every outcome, for exhaustive tables and metrics.
    pub const ALL: [Outcome; 11] = [
        Self::Success,
        Self::RateLimited,
        Self::ContextWindowExceeded,
        Self::ContentPolicy,
        Self::BadRequest,
        Self::Auth,
        Self::NotFound,
        Self::Timeout,
        Self::ServerError,
        Self::Connect,
        Self::Transport,
    ];

    /// The outcome of an HTTP status alone, without looking at the body.
    pub fn from_status(status: StatusCode) -> Self {
        match status.as_u16() {
            100..=399 => Self::Success,
            401 | 403 => Self::Auth,
            404 => Self::NotFound,
            408 => Self::Timeout,
            429 => Self::RateLimited,
            400..=499 => Self::BadRequest,
            _ => Self::ServerError,
        }
    }

    /// Whether the attempt succeeded.
    pub fn is_success(self) -> bool {
        self == Self::Success
    }

    /// Whether another attempt may succeed where this one failed: 408, 429, 5xx, connection
    /// failures and broken transfers. LiteLLM's `_should_retry` also retries a 409; here a 409 is
    /// a [`BadRequest`](Self::BadRequest) the caller caused and is not retried (see
    /// `docs/litellm.md`).
    pub fn is_retryable(self) -> bool {
        matches!(self, Self::RateLimited | Self::Timeout | Self::ServerError | Self::Connect | Self::Transport)
    }

    /// A short stable name (`rate_limited`, `server_error`, ...) for logs, metrics and trails.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::RateLimited => "rate_limited",
            Self::ContextWindowExceeded => "context_window_exceeded",
            Self::ContentPolicy => "content_policy",
            Self::BadRequest => "bad_request",
            Self::Auth => "auth",
            Self::NotFound => "not_found",
            Self::Timeout => "timeout",
            Self::ServerError => "server_error",
            Self::Connect => "connect",
            Self::Transport => "transport",
        }
    }

    /// The status an HTTP edge answers with for this outcome when it has no upstream status.
    pub fn http_status(self) -> StatusCode {
        match self {
            Self::Success => StatusCode::OK,
            Self::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Self::ContextWindowExceeded | Self::ContentPolicy | Self::BadRequest => StatusCode::BAD_REQUEST,
            Self::Auth => StatusCode::UNAUTHORIZED,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::Timeout => StatusCode::GATEWAY_TIMEOUT,
            Self::ServerError | Self::Connect | Self::Transport => StatusCode::BAD_GATEWAY,
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What [`classify`] found in an upstream answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Classified {
    /// The class.
    pub outcome: Outcome,
    /// How long the upstream asked us to wait (`retry-after-ms`, `retry-after`, or a rate-limit
    /// reset header on a 429).
    pub retry_after: Option<Duration>,
}

#[derive(Deserialize)]
struct ErrorEnvelope {
    error: Option<ErrorBody>,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    innererror: Option<InnerError>,
}

#[derive(Deserialize)]
struct InnerError {
    #[serde(default)]
    code: Option<String>,
}

/// Classifies an upstream HTTP answer: the status, the OpenAI-style error body
/// (`error.code` / `error.type`, Azure's `innererror.code`) and the retry headers.
///
/// Body codes win over the status: `context_length_exceeded` is
/// [`Outcome::ContextWindowExceeded`], `content_filter` / `content_policy_violation` /
/// `ResponsibleAIPolicyViolation` are [`Outcome::ContentPolicy`], `insufficient_quota` is
/// [`Outcome::RateLimited`]. Servers that send no code (vLLM, Ollama) are recognised by the
/// message phrases they are known to use for context overflows. An unparsable body falls back to
/// the status.
pub fn classify(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Classified {
    let mut outcome = Outcome::from_status(status);
    // serde reads a struct from a JSON array too; an error body is an object.
    if !status.is_success()
        && body.trim_ascii_start().first() == Some(&b'{')
        && let Ok(ErrorEnvelope { error: Some(err) }) = serde_json::from_slice::<ErrorEnvelope>(body)
    {
        let code = match &err.code {
            Some(serde_json::Value::String(s)) => s.as_str(),
            _ => "",
        };
        let kind = err.kind.as_deref().unwrap_or("");
        let inner = err.innererror.as_ref().and_then(|i| i.code.as_deref()).unwrap_or("");
        let message = err.message.as_deref().unwrap_or("");
        if let Some(o) = classify_codes(&[code, kind, inner], message) {
            outcome = o;
        }
    }
    let retry_after = retry_after(headers, SystemTime::now())
        .or_else(|| (outcome == Outcome::RateLimited).then(|| rate_limit_reset(headers)).flatten());
    Classified { outcome, retry_after }
}

/// Whether a successful chat completion is an answer a content filter cut: its first choice
/// finished with `content_filter`, or it has an empty `choices` list (LiteLLM's
/// `_should_raise_content_policy_error` reads both so). Such an answer is a
/// [`Outcome::ContentPolicy`] failure when a fallback can serve the request instead
/// ([`RouteCtx::content_filter_falls_back`](crate::RouteCtx::content_filter_falls_back)); the
/// provider decides, once, for a whole (non-streamed) answer.
///
/// ```
/// use switchyard_layers::outcome::content_filtered;
/// assert!(content_filtered(br#"{"choices":[{"index":0,"finish_reason":"content_filter","message":{"role":"assistant","content":null}}]}"#));
/// assert!(content_filtered(br#"{"choices":[]}"#));
/// assert!(!content_filtered(br#"{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}]}"#));
/// assert!(!content_filtered(b"not json"));
/// ```
pub fn content_filtered(body: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Answer {
        choices: Option<Vec<Choice>>,
    }
    #[derive(Deserialize)]
    struct Choice {
        #[serde(default)]
        finish_reason: Option<String>,
    }
    if body.trim_ascii_start().first() != Some(&b'{') {
        return false;
    }
    match serde_json::from_slice::<Answer>(body) {
        Ok(Answer { choices: Some(choices) }) => {
            choices.first().is_none_or(|c| c.finish_reason.as_deref() == Some("content_filter"))
        }
        _ => false,
    }
}

fn classify_codes(codes: &[&str], message: &str) -> Option<Outcome> {
    for code in codes {
        match *code {
            "context_length_exceeded" | "string_above_max_length" => return Some(Outcome::ContextWindowExceeded),
            "content_filter" | "content_policy_violation" | "ResponsibleAIPolicyViolation" => {
                return Some(Outcome::ContentPolicy);
            }
            "insufficient_quota" | "rate_limit_exceeded" => return Some(Outcome::RateLimited),
            _ => {}
        }
    }
    let lower = message.to_ascii_lowercase();
    const CONTEXT_PHRASES: [&str; 4] =
        ["maximum context length", "context length exceeded", "context window", "prompt is too long"];
    if CONTEXT_PHRASES.iter().any(|p| lower.contains(p)) {
        return Some(Outcome::ContextWindowExceeded);
    }
    None
}

/// Reads `retry-after-ms` (milliseconds), then `retry-after` (seconds, fractional allowed, or an
/// HTTP date relative to `now`). Negative, unparsable or past values give `None`; every form is
/// capped at one day, so a hostile header cannot overflow a deadline.
///
/// ```
/// use http::HeaderMap;
/// use std::time::{Duration, SystemTime};
/// use switchyard_layers::outcome::retry_after;
///
/// let mut h = HeaderMap::new();
/// h.insert("retry-after", "7".parse()?);
/// assert_eq!(retry_after(&h, SystemTime::now()), Some(Duration::from_secs(7)));
/// h.insert("retry-after-ms", "250".parse()?);
/// assert_eq!(retry_after(&h, SystemTime::now()), Some(Duration::from_millis(250)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    // Milliseconds become seconds before the cap: capping first would turn a 20-minute wait into 86 s.
    if let Some(ms) = header_str(headers, "retry-after-ms").and_then(parse_number) {
        return Some(capped_secs(ms / 1000.0));
    }
    let value = header_str(headers, "retry-after")?;
    if let Some(secs) = parse_number(value) {
        return Some(capped_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    at.duration_since(now).ok().map(|d| d.min(MAX_WAIT))
}

/// OpenAI's `x-ratelimit-reset-requests` / `-tokens` (`1s`, `6m0s`, `20ms`): the later of the two.
fn rate_limit_reset(headers: &HeaderMap) -> Option<Duration> {
    ["x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"]
        .iter()
        .filter_map(|h| header_str(headers, h).and_then(parse_go_duration))
        .max()
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok().map(str::trim)
}

/// The longest wait a retry header can ask for.
const MAX_WAIT: Duration = Duration::from_secs(86_400);

/// A non-negative, finite decimal number.
fn parse_number(s: &str) -> Option<f64> {
    let v: f64 = s.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v)
}

/// `secs` seconds, capped at [`MAX_WAIT`].
fn capped_secs(secs: f64) -> Duration {
    Duration::from_secs_f64(secs.min(MAX_WAIT.as_secs_f64()))
}

/// Durations such as `1h2m3.5s`, `6m0s`, `20ms`.
fn parse_go_duration(s: &str) -> Option<Duration> {
    let mut total = 0.0f64;
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let split = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let (num, tail) = rest.split_at(split);
        let value: f64 = num.parse().ok()?;
        let unit_len = tail.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        total += value
            * match unit {
                "h" => 3600.0,
                "m" => 60.0,
                "s" => 1.0,
                "ms" => 0.001,
                "us" | "µs" => 0.000_001,
                _ => return None,
            };
        rest = next;
    }
    (total.is_finite() && total >= 0.0).then(|| capped_secs(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().expect("valid header"));
        }
        h
    }

    #[test]
    fn status_gate_classes() {
        assert_eq!(Outcome::from_status(StatusCode::TOO_MANY_REQUESTS), Outcome::RateLimited);
        assert_eq!(Outcome::from_status(StatusCode::UNAUTHORIZED), Outcome::Auth);
        assert_eq!(Outcome::from_status(StatusCode::NOT_FOUND), Outcome::NotFound);
        assert_eq!(Outcome::from_status(StatusCode::REQUEST_TIMEOUT), Outcome::Timeout);
        assert_eq!(Outcome::from_status(StatusCode::UNPROCESSABLE_ENTITY), Outcome::BadRequest);
        assert_eq!(Outcome::from_status(StatusCode::SERVICE_UNAVAILABLE), Outcome::ServerError);
    }

    #[test]
    fn error_body_codes_win_over_the_status() {
        let h = HeaderMap::new();
        let cf = br#"{"error":{"code":"content_filter","message":"filtered"}}"#;
        assert_eq!(classify(StatusCode::BAD_REQUEST, &h, cf).outcome, Outcome::ContentPolicy);
        let azure = br#"{"error":{"code":"400","innererror":{"code":"ResponsibleAIPolicyViolation"}}}"#;
        assert_eq!(classify(StatusCode::BAD_REQUEST, &h, azure).outcome, Outcome::ContentPolicy);
        let quota = br#"{"error":{"type":"insufficient_quota","message":"quota"}}"#;
        assert_eq!(classify(StatusCode::FORBIDDEN, &h, quota).outcome, Outcome::RateLimited);
        let vllm = br#"{"error":{"message":"This model's maximum context length is 4096 tokens"}}"#;
        assert_eq!(classify(StatusCode::BAD_REQUEST, &h, vllm).outcome, Outcome::ContextWindowExceeded);
    }

    #[test]
    fn unparsable_body_falls_back_to_the_status() {
        let c = classify(StatusCode::BAD_GATEWAY, &HeaderMap::new(), b"<html>oops");
        assert_eq!(c.outcome, Outcome::ServerError);
        // Found by the classify fuzz check (fuzz/regressions/classify/): an array was read as an
        // error envelope.
        let array = br#"[{"code":"context_length_exceeded"}]"#;
        assert_eq!(classify(StatusCode::BAD_REQUEST, &HeaderMap::new(), array).outcome, Outcome::BadRequest);
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(retry_after(&headers(&[("retry-after", "1.5")]), now), Some(Duration::from_millis(1500)));
        assert_eq!(retry_after(&headers(&[("retry-after", "-3")]), now), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        let date = httpdate::fmt_http_date(now + Duration::from_secs(30));
        let mut h = HeaderMap::new();
        h.insert("retry-after", date.parse().expect("date header"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(30)));
        assert_eq!(retry_after(&headers(&[("retry-after", "1e300")]), now), Some(Duration::from_secs(86_400)));
        // Found by fuzzing (fuzz/regressions/retry_after/): ms over 86,400 were capped at 86.4 s,
        // and HTTP dates were not capped at all.
        assert_eq!(retry_after(&headers(&[("retry-after-ms", "1200000")]), now), Some(Duration::from_secs(1200)));
        let far = httpdate::fmt_http_date(now + Duration::from_secs(86_460));
        let mut h = HeaderMap::new();
        h.insert("retry-after", far.parse().expect("date header"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(86_400)));
    }

    #[test]
    fn rate_limit_reset_headers_apply_to_429s() {
        let h = headers(&[("x-ratelimit-reset-requests", "1m0.5s"), ("x-ratelimit-reset-tokens", "20ms")]);
        let c = classify(StatusCode::TOO_MANY_REQUESTS, &h, b"");
        assert_eq!(c.retry_after, Some(Duration::from_millis(60_500)));
        assert_eq!(classify(StatusCode::INTERNAL_SERVER_ERROR, &h, b"").retry_after, None);
    }
}
