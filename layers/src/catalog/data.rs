//! The embedded data file (`models.tsv`, written by `scripts/gen-catalog`) and its parser.
//!
//! The format is ours: `#` comment lines (the first names the source and its version), one header
//! line naming the columns, then one model per line, sorted, tab-separated; an empty field is an
//! unknown value. `caps` holds one character per capability in [`CAPS`] order: `1` supported,
//! `0` not supported, `-` unknown.

use std::{fmt, str::FromStr};

use super::{ModelFacts, ModelMode};
use crate::deployment::Capabilities;

/// The checked-in catalog.
pub(super) const TEXT: &str = include_str!("models.tsv");

/// The header line: the columns, in order.
pub(super) const HEADER: &str = "model\tprovider\tmode\tmax_input_tokens\tmax_output_tokens\tinput_cost_per_token\t\
                                 output_cost_per_token\tcache_read_input_token_cost\tcache_creation_input_token_cost\tcaps";

/// The capabilities of the `caps` column, in order (LiteLLM's names without `supports_`).
pub(super) const CAPS: [&str; 11] = [
    "vision",
    "function_calling",
    "parallel_function_calling",
    "tool_choice",
    "response_schema",
    "prompt_caching",
    "reasoning",
    "web_search",
    "audio_input",
    "audio_output",
    "pdf_input",
];

/// A line of the data file that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LineError {
    /// 1-based line number.
    pub(super) line: usize,
    pub(super) problem: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "models.tsv line {}: {}", self.line, self.problem)
    }
}

/// The source line (the first comment, without `# `).
pub(super) fn source(text: &'static str) -> &'static str {
    text.lines().next().and_then(|l| l.strip_prefix("# ")).unwrap_or("")
}

/// Every model of `text`, in file order; the first line that does not parse is an error.
pub(super) fn parse(text: &'static str) -> Result<Vec<ModelFacts>, LineError> {
    let mut out = Vec::with_capacity(text.len() / 96);
    let mut header = false;
    for (i, line) in text.lines().enumerate() {
        let err = |problem: String| LineError { line: i + 1, problem };
        if line.starts_with('#') {
            continue;
        }
        if !header {
            if line != HEADER {
                return Err(err(format!("expected the header line `{HEADER}`")));
            }
            header = true;
            continue;
        }
        out.push(parse_line(line).map_err(err)?);
    }
    if !header {
        return Err(LineError { line: 0, problem: "no header line".to_owned() });
    }
    Ok(out)
}

fn parse_line(line: &'static str) -> Result<ModelFacts, String> {
    let fields: Vec<&'static str> = line.split('\t').collect();
    let [key, provider, mode, max_in, max_out, cost_in, cost_out, cache_read, cache_write, caps] = fields[..] else {
        return Err(format!("expected 10 tab-separated fields, got {}", fields.len()));
    };
    if key.is_empty() || provider.is_empty() {
        return Err("empty model or provider".to_owned());
    }
    let mode = match mode {
        "chat" => ModelMode::Chat,
        "completion" => ModelMode::Completion,
        "embedding" => ModelMode::Embedding,
        other => return Err(format!("unknown mode `{other}`")),
    };
    Ok(ModelFacts {
        key,
        provider,
        mode,
        max_input_tokens: opt(max_in, "max_input_tokens")?,
        max_output_tokens: opt(max_out, "max_output_tokens")?,
        input_cost_per_token: price(cost_in, "input_cost_per_token")?,
        output_cost_per_token: price(cost_out, "output_cost_per_token")?,
        cache_read_input_token_cost: price(cache_read, "cache_read_input_token_cost")?,
        cache_creation_input_token_cost: price(cache_write, "cache_creation_input_token_cost")?,
        capabilities: capabilities(caps)?,
    })
}

fn opt<T: FromStr>(field: &str, name: &str) -> Result<Option<T>, String> {
    if field.is_empty() {
        return Ok(None);
    }
    field.parse().map(Some).map_err(|_| format!("`{name}` is not a number: `{field}`"))
}

fn price(field: &str, name: &str) -> Result<Option<f64>, String> {
    match opt::<f64>(field, name)? {
        Some(v) if !(v.is_finite() && v >= 0.0) => Err(format!("`{name}` must be finite and >= 0: `{field}`")),
        v => Ok(v),
    }
}

fn capabilities(field: &str) -> Result<Capabilities, String> {
    if field.len() != CAPS.len() {
        return Err(format!("`caps` must have {} characters, got `{field}`", CAPS.len()));
    }
    let mut caps = Capabilities::default();
    for (name, c) in CAPS.iter().zip(field.bytes()) {
        let value = match c {
            b'1' => true,
            b'0' => false,
            b'-' => continue,
            _ => return Err(format!("`caps` holds `{}`; only 1, 0 and - are allowed", c as char)),
        };
        let known = caps.set(name, value);
        debug_assert!(known, "CAPS names a capability Capabilities knows: {name}");
    }
    Ok(caps)
}
