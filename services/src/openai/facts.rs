//! [`facts_from_json`]: the routing facts of an OpenAI request body, read once at the edge.

use serde::{
    Deserialize,
    de::{IgnoredAny, Unexpected},
};
use serde_json::{Value, error::Category};
use switchyard_layers::{RequestFacts, RouteError, RouteErrorKind, ctx::Endpoint};

/// Request parameters that, when present and not `null`, the serving deployment must support;
/// [`facts_from_json`] lists the ones a request uses in [`RequestFacts::required_params`].
pub const REQUIRED_PARAM_NAMES: [&str; 2] = ["response_format", "tools"];

/// LiteLLM's client-side credential keys: a request body setting one (to anything but `null`)
/// would send its attempt to a host of the client's choosing or with a key of its own.
/// [`facts_from_json`] refuses them; LiteLLM's proxy allows them only with
/// `allow_client_side_credentials`, a setting Switchyard does not have. (The provider also
/// removes them, with `api_version`, before a body goes upstream.)
pub const CLIENT_CREDENTIAL_KEYS: [&str; 3] = ["api_key", "api_base", "base_url"];

/// Why [`read_facts`] refused a body.
#[derive(Debug)]
pub(crate) enum FactsError {
    /// Malformed: not a JSON object, no model, a routing key of the wrong type...
    Invalid(RouteError),
    /// The body sets this one of [`CLIENT_CREDENTIAL_KEYS`].
    ClientCredential(&'static str),
}

impl FactsError {
    fn into_route_error(self) -> RouteError {
        match self {
            Self::Invalid(e) => e,
            Self::ClientCredential(field) => invalid(client_credential_message(field)),
        }
    }
}

/// The refusal of a body that sets the client-side credential `field`.
pub(crate) fn client_credential_message(field: &str) -> String {
    format!(
        "`{field}` is not allowed in the request body: deployments' endpoints and credentials come from the \
         gateway's configuration only"
    )
}

/// What routing reads from a body; everything else is skipped without being built.
#[derive(Deserialize)]
struct Probe {
    #[serde(default)]
    model: Option<Value>,
    #[serde(default)]
    stream: Option<Value>,
    #[serde(default)]
    tags: Option<Value>,
    #[serde(default)]
    metadata: Option<Metadata>,
    #[serde(default)]
    allowed_model_region: Option<Value>,
    #[serde(default)]
    response_format: Option<IgnoredAny>,
    #[serde(default)]
    tools: Option<IgnoredAny>,
    #[serde(default)]
    num_retries: Option<Value>,
    #[serde(default)]
    fallbacks: Option<Value>,
    #[serde(default)]
    disable_fallbacks: Option<Value>,
    // Client-side credentials ([`CLIENT_CREDENTIAL_KEYS`]), read by their unescaped names, so
    // `"api\u005fkey"` is `api_key` here as it is to every other JSON reader.
    #[serde(default)]
    api_key: Option<IgnoredAny>,
    #[serde(default)]
    api_base: Option<IgnoredAny>,
    #[serde(default)]
    base_url: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Metadata {
    #[serde(default)]
    tags: Option<Value>,
    #[serde(default)]
    session_id: Option<Value>,
}

/// Reads the model and the [`RequestFacts`] of an OpenAI-style JSON request body.
///
/// - `model`: required, a non-empty string;
/// - `stream`: a boolean (ignored for embeddings);
/// - tags: `metadata.tags`, else top-level `tags`; a list of strings or one comma-separated string;
/// - `allowed_model_region`: a string;
/// - `metadata.session_id`: a string or a number;
/// - required parameters: each of [`REQUIRED_PARAM_NAMES`] present and not `null`;
/// - routing overrides (LiteLLM request keys): `num_retries` (a non-negative integer),
///   `fallbacks` (a list of group names), `disable_fallbacks` (a boolean);
/// - no client-side credentials: a top-level [`CLIENT_CREDENTIAL_KEYS`] entry that is not `null`
///   is refused, however its name is escaped.
///
/// The input-token count is left empty: it is counted lazily by the first layer that needs it.
/// Anything malformed or refused is a [`RouteErrorKind::InvalidRequest`] error naming the problem.
///
/// ```
/// use switchyard_layers::ctx::Endpoint;
/// use switchyard_services::openai::facts_from_json;
///
/// let body = br#"{"model":"gpt-4o","stream":true,"messages":[],
///     "metadata":{"tags":["eu"],"session_id":"s1"},"tools":[{"type":"function"}]}"#;
/// let (model, facts) = facts_from_json(body, Endpoint::Chat)?;
/// assert_eq!(model, "gpt-4o");
/// assert!(facts.stream);
/// assert_eq!(facts.tags, ["eu"]);
/// assert_eq!(facts.session.as_deref(), Some("s1"));
/// assert_eq!(facts.required_params, ["tools"]);
///
/// let body = br#"{"model":"gpt-4o","num_retries":0,"fallbacks":["gpt-4o-mini"],"disable_fallbacks":false}"#;
/// let (_, facts) = facts_from_json(body, Endpoint::Chat)?;
/// assert_eq!(facts.num_retries, Some(0));
/// assert_eq!(facts.fallbacks.as_deref(), Some(&["gpt-4o-mini".to_owned()][..]));
///
/// let refused = facts_from_json(br#"{"model":"gpt-4o","api\u005fbase":"http://evil.example"}"#, Endpoint::Chat);
/// assert!(refused.unwrap_err().to_string().contains("`api_base` is not allowed"));
/// # Ok::<(), switchyard_layers::RouteError>(())
/// ```
pub fn facts_from_json(body: &[u8], endpoint: Endpoint) -> Result<(String, RequestFacts), RouteError> {
    read_facts(body, endpoint).map_err(FactsError::into_route_error)
}

/// [`facts_from_json`], telling a client-side credential apart from a malformed body (the
/// ingress answers it with its own error kind). One parse of the body.
pub(crate) fn read_facts(body: &[u8], endpoint: Endpoint) -> Result<(String, RequestFacts), FactsError> {
    let not_json = |e: serde_json::Error| invalid(format!("request body is not valid JSON: {e}"));
    // JSON is UTF-8 (RFC 8259 §8.1), and serde_json skips the fields it ignores (`messages`, ...)
    // without checking their bytes: found by fuzzing (fuzz/regressions/ingress/).
    if let Err(e) = std::str::from_utf8(body) {
        return Err(FactsError::Invalid(invalid(format!("request body is not valid JSON: not UTF-8 ({e})"))));
    }
    // serde reads a struct from an array too; a request is an object.
    if body.trim_ascii_start().first() != Some(&b'{') {
        serde_json::from_slice::<IgnoredAny>(body).map_err(not_json).map_err(FactsError::Invalid)?;
        return Err(FactsError::Invalid(invalid("request body must be a JSON object")));
    }
    let probe: Probe = serde_json::from_slice(body)
        .map_err(|e| match e.classify() {
            Category::Data => invalid(format!("invalid request body: {e}")),
            Category::Io | Category::Syntax | Category::Eof => not_json(e),
        })
        .map_err(FactsError::Invalid)?;
    let credentials = [probe.api_key.is_some(), probe.api_base.is_some(), probe.base_url.is_some()];
    if let Some(i) = credentials.iter().position(|set| *set) {
        return Err(FactsError::ClientCredential(CLIENT_CREDENTIAL_KEYS[i]));
    }
    checked(probe, endpoint).map_err(FactsError::Invalid)
}

/// The facts of a parsed body, or the first malformed routing key.
fn checked(probe: Probe, endpoint: Endpoint) -> Result<(String, RequestFacts), RouteError> {
    let model = match probe.model {
        Some(Value::String(m)) if !m.trim().is_empty() => m,
        Some(Value::String(_)) => return Err(invalid("`model` is empty")),
        None | Some(Value::Null) => return Err(invalid("request has no `model`")),
        Some(other) => return Err(invalid(format!("`model` must be a string, got {}", kind_of(&other)))),
    };
    let stream = match probe.stream {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(other) => return Err(invalid(format!("`stream` must be a boolean, got {}", kind_of(&other)))),
    };
    let (meta_tags, session) = match probe.metadata {
        Some(m) => (m.tags, m.session_id),
        None => (None, None),
    };
    let tags = match meta_tags.filter(|t| !t.is_null()) {
        Some(t) => read_tags(t, "metadata.tags")?,
        None => match probe.tags {
            Some(t) => read_tags(t, "tags")?,
            None => Vec::new(),
        },
    };
    let region = match probe.allowed_model_region {
        None | Some(Value::Null) => None,
        Some(Value::String(r)) => Some(r),
        Some(other) => {
            return Err(invalid(format!("`allowed_model_region` must be a string, got {}", kind_of(&other))));
        }
    };
    let session = match session {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(other) => {
            return Err(invalid(format!("`metadata.session_id` must be a string, got {}", kind_of(&other))));
        }
    };

    let num_retries = match probe.num_retries {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_u64().and_then(|v| u32::try_from(v).ok()) {
            Some(v) => Some(v),
            None => return Err(invalid(format!("`num_retries` must be a non-negative integer, got {n}"))),
        },
        Some(other) => return Err(invalid(format!("`num_retries` must be an integer, got {}", kind_of(&other)))),
    };
    let fallbacks = match probe.fallbacks {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(
            items
                .into_iter()
                .map(|t| match t {
                    Value::String(s) => Ok(s),
                    other => Err(invalid(format!("`fallbacks` must hold group names, got {}", kind_of(&other)))),
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(other) => return Err(invalid(format!("`fallbacks` must be a list, got {}", kind_of(&other)))),
    };
    let disable_fallbacks = match probe.disable_fallbacks {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(other) => {
            return Err(invalid(format!("`disable_fallbacks` must be a boolean, got {}", kind_of(&other))));
        }
    };

    let mut facts = RequestFacts::new()
        .endpoint(endpoint)
        .streaming(stream && endpoint != Endpoint::Embedding)
        .tags(tags)
        .region(region)
        .session(session)
        .num_retries(num_retries)
        .fallbacks(fallbacks)
        .disable_fallbacks(disable_fallbacks);
    let present = [probe.response_format.is_some(), probe.tools.is_some()];
    facts.required_params =
        REQUIRED_PARAM_NAMES.iter().zip(present).filter(|(_, p)| *p).map(|(n, _)| (*n).to_owned()).collect();
    Ok((model, facts))
}

fn read_tags(value: Value, field: &str) -> Result<Vec<String>, RouteError> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(s.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned).collect()),
        Value::Array(items) => items
            .into_iter()
            .map(|t| match t {
                Value::String(s) => Ok(s),
                other => Err(invalid(format!("`{field}` must hold strings, got {}", kind_of(&other)))),
            })
            .collect(),
        other => Err(invalid(format!("`{field}` must be a list of strings, got {}", kind_of(&other)))),
    }
}

/// The JSON type of `v`, in serde's words (`a string`, `an integer`...).
fn kind_of(v: &Value) -> String {
    let unexpected = match v {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => Unexpected::Unsigned(u),
            (None, Some(i), _) => Unexpected::Signed(i),
            (None, None, Some(f)) => Unexpected::Float(f),
            (None, None, None) => Unexpected::Other("a number"),
        },
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    };
    unexpected.to_string()
}

fn invalid(message: impl Into<String>) -> RouteError {
    RouteError::new(RouteErrorKind::InvalidRequest, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(body: &[u8]) -> String {
        let e = facts_from_json(body, Endpoint::Chat).expect_err("must be refused");
        assert_eq!(e.kind(), RouteErrorKind::InvalidRequest);
        e.to_string()
    }

    #[test]
    fn malformed_bodies_name_the_problem() {
        assert!(err(b"not json").contains("not valid JSON"));
        assert!(err(b"{\"model\":\"m\",\"messages\":[\"\xff\"]}").contains("not UTF-8"), "fuzz/regressions/ingress/");
        assert!(err(b"").contains("not valid JSON"));
        assert!(err(b" [1,2]").contains("must be a JSON object"));
        assert!(err(br#"{"model":"m","metadata":"x"}"#).contains("invalid request body"));
        assert!(err(br#"{"messages":[]}"#).contains("no `model`"));
        assert!(err(br#"{"model":""}"#).contains("`model` is empty"));
        assert!(err(br#"{"model":4}"#).contains("`model` must be a string, got integer `4`"));
        assert!(err(br#"{"model":"m","stream":"yes"}"#).contains("`stream` must be a boolean"));
        assert!(err(br#"{"model":"m","tags":[1]}"#).contains("`tags` must hold strings"));
    }

    #[test]
    fn client_side_credentials_are_refused_however_spelled() {
        let refused = |body: &[u8]| match read_facts(body, Endpoint::Chat) {
            Err(FactsError::ClientCredential(field)) => Some(field),
            Err(FactsError::Invalid(e)) => panic!("refused as malformed: {e}"),
            Ok(_) => None,
        };
        assert_eq!(refused(br#"{"model":"m","api_base":"http://evil"}"#), Some("api_base"));
        assert_eq!(refused(br#"{"model":"m","base_url":"http://evil"}"#), Some("base_url"));
        assert_eq!(refused(br#"{"model":"m","api_key":"sk-mine"}"#), Some("api_key"));
        assert_eq!(refused(br#"{"model":"m","api\u005fkey":"sk-mine"}"#), Some("api_key"));
        assert_eq!(refused(br#"{"model":"m","\u0061pi_base":{"nested":[1]}}"#), Some("api_base"));
        assert_eq!(refused(br#"{"api_key":"sk-mine"}"#), Some("api_key"), "before the model is checked");
        assert_eq!(refused(br#"{"model":"m","api_key":null}"#), None);
        assert_eq!(refused(br#"{"model":"m","messages":[{"content":"my api_key is"}]}"#), None);
        assert_eq!(refused(br#"{"model":"m","metadata":{"api_base":"x"}}"#), None);
        assert!(err(br#"{"model":"m","base_url":"x"}"#).contains("`base_url` is not allowed"));
        assert!(err(br#"{"model":"m","api_key":"a","api\u005fkey":"b"}"#).contains("duplicate field `api_key`"));
    }

    #[test]
    fn top_level_tags_and_region_are_read() {
        let body = br#"{"model":"m","tags":"a, b,,","allowed_model_region":"eu","response_format":{"type":"json_object"},"tools":null}"#;
        let (_, facts) = facts_from_json(body, Endpoint::Chat).expect("valid");
        assert_eq!(facts.tags, ["a", "b"]);
        assert_eq!(facts.region.as_deref(), Some("eu"));
        assert_eq!(facts.required_params, ["response_format"]);
        assert!(!facts.stream);
        assert!(facts.input_tokens.get().is_none());
    }

    #[test]
    fn metadata_tags_win_and_embeddings_never_stream() {
        let body =
            br#"{"model":"e","input":"x","stream":true,"tags":["top"],"metadata":{"tags":["meta"],"session_id":42}}"#;
        let (model, facts) = facts_from_json(body, Endpoint::Embedding).expect("valid");
        assert_eq!(model, "e");
        assert_eq!(facts.endpoint, Endpoint::Embedding);
        assert!(!facts.stream);
        assert_eq!(facts.tags, ["meta"]);
        assert_eq!(facts.session.as_deref(), Some("42"));
    }
}
