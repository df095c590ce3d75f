//! The routing trail as a response header: where a call went, attempt by attempt, for a client
//! that asks (`x-switchyard-trail: 1` on the request) or for every answer
//! ([`GatewayBuilder::routing_trail`](super::GatewayBuilder::routing_trail)).
//!
//! ```text
//! x-switchyard-trail: gpt-4o/eu:rate_limited:12ms, gpt-4o/us:server_error:30ms, claude/main:success:340ms
//! ```
//!
//! One entry per attempt, oldest first, separated by `, `: `group/deployment:outcome:duration`.
//! When an affinity chose the serving deployment, the gateway appends ` ~conversation`,
//! ` ~session` or ` ~prompt_cache` after the last entry; when the health filter of a group kept
//! every candidate because all were marked unhealthy ([health](crate::health)), it appends
//! ` !health-fail-open:<group>` (also sent as `x-switchyard-health-fail-open` on served answers).
//! `group` and `deployment` (the model group and deployment id from the config) are
//! percent-encoded outside `A-Z a-z 0-9 - . _ ~`, so `/`, `:`, `,` and spaces inside them never
//! split an entry; `outcome` is the attempt's class (`success`, `rate_limited`, `server_error`,
//! `timeout`, `connect`, ...); `duration` is the attempt's time in whole milliseconds until its
//! answer (for a stream: its first content chunk). An answer from the response cache
//! ([`crate::cache`]) made no attempt: its trail is [`CACHE_HIT`]. A served answer ends with the attempt that
//! served it (`success`); an error answer lists the failed attempts (none when the call never
//! reached a deployment: an unknown model, every deployment cooling down). The value stays under
//! [`MAX_LEN`] bytes: when the attempts do not fit, the middle ones are left out and a `+N`
//! entry says how many, before the last attempt.
//!
//! In-process callers have the same facts typed: [`Served::failed`] and the serving attempt in
//! the `Served` of an answer ([`ChatResponse::served`](crate::ChatResponse)), and
//! [`RouteError::trail`](crate::RouteError::trail) on a failure; [`for_served`] and [`for_trail`] render
//! them.
//!
//! ```
//! use std::time::Duration;
//! use switchyard::{Outcome, gateway::trail};
//! # use switchyard::{Config, Router, services::{openai::{ChatMessage, ChatRequest}, sim::SimProvider}};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let config = Config::from_yaml_str("model_list: [{model_name: gpt-4o, litellm_params: {model: openai/gpt-4o}, model_info: {id: us}}]")?;
//! # let router = Router::from_config(&config, SimProvider::new(1))?;
//! let served = router.chat(ChatRequest::new("gpt-4o", vec![ChatMessage::user("hi")])).await?.served;
//! let value = trail::for_served(&served);
//! assert!(value.starts_with("gpt-4o/us:success:"), "{value}");
//! assert!(value.ends_with("ms"));
//! # Ok(()) }
//! ```

use std::{fmt::Write as _, time::Duration};

use http::{HeaderMap, HeaderName, HeaderValue};
use switchyard_layers::{AttemptRecord, Outcome, Served};

/// The request header that asks for the trail (`1`, `true`, `yes` or `on`), and the answer's
/// header that carries it.
pub const TRAIL: HeaderName = HeaderName::from_static("x-switchyard-trail");

/// Longest trail value, in bytes.
pub const MAX_LEN: usize = 1024;

/// The trail of an answer served from the response cache.
pub const CACHE_HIT: &str = "cache_hit";

/// Whether `headers` ask for the trail.
pub fn wanted(headers: &HeaderMap) -> bool {
    headers.get(&TRAIL).and_then(|v| v.to_str().ok()).is_some_and(|v| {
        let v = v.trim();
        ["1", "true", "yes", "on"].iter().any(|yes| v.eq_ignore_ascii_case(yes))
    })
}

/// The trail of a served call: its failed attempts, then the one that served.
pub fn for_served(served: &Served) -> String {
    let serving = Entry {
        group: &served.group,
        deployment: served.deployment.as_str(),
        outcome: Outcome::Success,
        duration: served.upstream,
    };
    render(served.failed.iter().map(Entry::of).chain(std::iter::once(serving)))
}

/// The trail of a failed call ([`RouteError::trail`](switchyard_layers::RouteError::trail)).
pub fn for_trail(trail: &[AttemptRecord]) -> String {
    render(trail.iter().map(Entry::of))
}

/// Appends ` !health-fail-open:<group>` for each group whose health filter failed open (every
/// candidate was marked unhealthy, so none was dropped).
pub(crate) fn append_fail_open(value: &mut String, groups: &[std::sync::Arc<str>]) {
    for g in groups {
        value.push_str(" !health-fail-open:");
        encode(value, g);
    }
}

/// Inserts `value` as the trail header (it is header-safe by construction).
pub(crate) fn insert(headers: &mut HeaderMap, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.insert(TRAIL, v);
    }
}

struct Entry<'a> {
    group: &'a str,
    deployment: &'a str,
    outcome: Outcome,
    duration: Duration,
}

impl<'a> Entry<'a> {
    fn of(record: &'a AttemptRecord) -> Self {
        Self {
            group: &record.group,
            deployment: record.deployment.as_str(),
            outcome: record.outcome,
            duration: record.duration,
        }
    }

    fn render(&self) -> String {
        let mut out = String::with_capacity(self.group.len() + self.deployment.len() + 24);
        encode(&mut out, self.group);
        out.push('/');
        encode(&mut out, self.deployment);
        let _ = write!(out, ":{}:{}ms", self.outcome.as_str(), self.duration.as_millis());
        out
    }
}

/// Percent-encodes everything outside RFC 3986's unreserved characters.
fn encode(out: &mut String, s: &str) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

const SEP: &str = ", ";

fn render<'a>(entries: impl Iterator<Item = Entry<'a>>) -> String {
    let mut entries: Vec<String> = entries.map(|e| e.render()).collect();
    let total = entries.iter().map(String::len).sum::<usize>() + SEP.len() * entries.len().saturating_sub(1);
    if total <= MAX_LEN {
        return entries.join(SEP);
    }
    // Too long: keep the first attempts that fit, a `+N` marker, and the last attempt.
    let Some(last) = entries.pop() else { return String::new() };
    let marker_room = SEP.len() + "+64".len() + SEP.len();
    let mut out = String::with_capacity(MAX_LEN);
    let mut kept = 0;
    for e in &entries {
        let sep = if kept == 0 { 0 } else { SEP.len() };
        if out.len() + sep + e.len() + marker_room + last.len() > MAX_LEN {
            break;
        }
        if kept > 0 {
            out.push_str(SEP);
        }
        out.push_str(e);
        kept += 1;
    }
    let left_out = entries.len() - kept;
    if !out.is_empty() {
        out.push_str(SEP);
    }
    let _ = write!(out, "+{left_out}");
    if out.len() + SEP.len() + last.len() <= MAX_LEN {
        out.push_str(SEP);
        out.push_str(&last);
    } else {
        // Even the last attempt alone does not fit (ids of hundreds of bytes): count it too.
        out.truncate(out.len() - format!("+{left_out}").len());
        let _ = write!(out, "+{}", left_out + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(group: &'a str, deployment: &'a str, outcome: Outcome, ms: u64) -> Entry<'a> {
        Entry { group, deployment, outcome, duration: Duration::from_millis(ms) }
    }

    #[test]
    fn entries_are_group_deployment_outcome_and_milliseconds() {
        let trail = [entry("gpt-4o", "eu", Outcome::RateLimited, 12), entry("gpt-4o", "us", Outcome::Success, 340)];
        assert_eq!(render(trail.into_iter()), "gpt-4o/eu:rate_limited:12ms, gpt-4o/us:success:340ms");
        assert_eq!(for_trail(&[]), "");
    }

    #[test]
    fn names_are_percent_encoded_so_entries_split_cleanly() {
        let value = render(std::iter::once(entry("openai/*", "a:b, c%", Outcome::Timeout, 3)));
        assert_eq!(value, "openai%2F%2A/a%3Ab%2C%20c%25:timeout:3ms");
        assert!(HeaderValue::from_str(&value).is_ok());
        let value = render(std::iter::once(entry("grüne", "id\r\nx-evil: 1", Outcome::Connect, 1)));
        assert_eq!(value, "gr%C3%BCne/id%0D%0Ax-evil%3A%201:connect:1ms");
    }

    #[test]
    fn a_long_trail_keeps_its_first_and_last_attempts_and_counts_the_rest() {
        let ids: Vec<String> = (0..40).map(|i| format!("{}{i}", "d".repeat(100))).collect();
        let value = render(ids.iter().map(|id| entry("g", id, Outcome::ServerError, 5)));
        assert!(value.len() <= MAX_LEN, "{} bytes", value.len());
        let parts: Vec<&str> = value.split(SEP).collect();
        let marker = parts.iter().find(|p| p.starts_with('+')).expect("a +N marker");
        let left_out: usize = marker[1..].parse().expect("a count");
        assert_eq!(parts.len() - 1 + left_out, 40, "{value}");
        assert!(parts[0].starts_with(&format!("g/{}:", ids[0])));
        assert!(parts.last().is_some_and(|p| p.starts_with(&format!("g/{}:", ids[39]))));
    }

    #[test]
    fn the_request_header_opts_in() {
        let mut h = HeaderMap::new();
        assert!(!wanted(&h));
        h.insert(TRAIL, HeaderValue::from_static("1"));
        assert!(wanted(&h));
        h.insert(TRAIL, HeaderValue::from_static("TRUE"));
        assert!(wanted(&h));
        h.insert(TRAIL, HeaderValue::from_static("0"));
        assert!(!wanted(&h));
    }
}
