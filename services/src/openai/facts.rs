//! [`facts_from_json`]: the routing facts of an OpenAI request body, read once at the edge.

use std::{collections::BTreeMap, fmt, time::Duration};

use serde::{
    Deserialize, Deserializer,
    de::{self, IgnoredAny, MapAccess, SeqAccess, Unexpected, Visitor},
};
use serde_json::{Number, error::Category, value::RawValue};
use switchyard_layers::{
    RequestFacts, RouteError, RouteErrorKind,
    ctx::{Endpoint, MockFailure, MockHooks, MockResponse},
    retry::RetryPolicy,
};

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
///
/// No field is read into a `serde_json::Value`: each is read as a [`Shallow`] (or a [`List`]),
/// which keeps scalars and skips containers it has no use for, so a routing key of the wrong
/// type costs nothing however large it is, and its type is checked in [`checked`] after the one
/// parse, in a fixed order (every syntax error, duplicate key and client credential is found
/// first, wherever it is in the body).
#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(default)]
    model: Option<Shallow>,
    #[serde(default)]
    stream: Option<Shallow>,
    #[serde(default)]
    tags: Option<List>,
    #[serde(default)]
    metadata: Option<Metadata>,
    #[serde(default)]
    allowed_model_region: Option<Shallow>,
    #[serde(default)]
    response_format: Option<IgnoredAny>,
    #[serde(default)]
    tools: Option<IgnoredAny>,
    // Read only as far as telling whether a content part is an image, building nothing.
    #[serde(default)]
    messages: Option<Messages>,
    // The Responses API's `input` items (and, harmlessly, an embedding's `input`): read like
    // `messages`, for images only.
    #[serde(default)]
    input: Option<Messages>,
    // The Responses API's conversation state: the request must reach the deployment holding it.
    #[serde(default)]
    previous_response_id: Option<Shallow>,
    #[serde(default)]
    num_retries: Option<Shallow>,
    #[serde(default)]
    fallbacks: Option<FallbackList>,
    #[serde(default)]
    disable_fallbacks: Option<Shallow>,
    // LiteLLM's per-request retry policies and cooldown.
    #[serde(default)]
    model_group_retry_policy: Option<PolicyProbe>,
    #[serde(default)]
    cooldown_time: Option<Shallow>,
    #[serde(default)]
    specific_deployment: Option<Shallow>,
    // LiteLLM's testing hooks. `mock_response` is kept as its raw text (a string or the whole
    // answer as an object), borrowed from the body.
    #[serde(default, borrow)]
    mock_response: Option<&'a RawValue>,
    #[serde(default)]
    mock_timeout: Option<Shallow>,
    #[serde(default)]
    mock_testing_fallbacks: Option<Shallow>,
    #[serde(default)]
    mock_testing_context_fallbacks: Option<Shallow>,
    #[serde(default)]
    mock_testing_content_policy_fallbacks: Option<Shallow>,
    #[serde(default)]
    mock_testing_rate_limit_error: Option<Shallow>,
    // LiteLLM's per-request timeouts, in seconds: `timeout` (or `request_timeout`) and
    // `stream_timeout`.
    #[serde(default)]
    timeout: Option<Shallow>,
    #[serde(default)]
    request_timeout: Option<Shallow>,
    #[serde(default)]
    stream_timeout: Option<Shallow>,
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
    tags: Option<List>,
    #[serde(default)]
    session_id: Option<Shallow>,
    // The quality pre-router's per-request minimum tier (Switchyard's).
    #[serde(default)]
    min_quality_tier: Option<Shallow>,
    // The per-request overrides, also read from `metadata` (the top-level key wins).
    #[serde(default)]
    num_retries: Option<Shallow>,
    #[serde(default)]
    timeout: Option<Shallow>,
    #[serde(default)]
    request_timeout: Option<Shallow>,
    #[serde(default)]
    stream_timeout: Option<Shallow>,
    #[serde(default)]
    cooldown_time: Option<Shallow>,
    #[serde(default)]
    model_group_retry_policy: Option<PolicyProbe>,
}

/// A JSON value read only as far as the probe needs it: a scalar is kept, a container is
/// skipped (by [`Skip`], allocating nothing) and only its kind remembered. Read as a [`List`], an
/// array of strings is kept too, and an array of anything else is skipped from its first
/// non-string element on.
#[derive(Debug)]
enum Shallow {
    Null,
    Bool(bool),
    U64(u64),
    I64(i64),
    F64(f64),
    Str(String),
    /// An array (not read as a [`List`]).
    Seq,
    Map,
    /// A [`List`]'s array of strings.
    Strings(Vec<String>),
    /// A [`List`]'s array with this first non-string element.
    BadItem(Box<Shallow>),
}

impl Shallow {
    /// The JSON type of the value, in serde's words (`a string`, `an integer`...).
    fn kind(&self) -> String {
        let unexpected = match self {
            Self::Null => Unexpected::Unit,
            Self::Bool(b) => Unexpected::Bool(*b),
            Self::U64(u) => Unexpected::Unsigned(*u),
            Self::I64(i) => Unexpected::Signed(*i),
            Self::F64(f) => Unexpected::Float(*f),
            Self::Str(s) => Unexpected::Str(s),
            Self::Seq | Self::Strings(_) | Self::BadItem(_) => Unexpected::Seq,
            Self::Map => Unexpected::Map,
        };
        unexpected.to_string()
    }

    /// A number as JSON writes it (`42`, `-1`, `1.5`); `None` for anything else.
    fn number(&self) -> Option<Number> {
        match self {
            Self::U64(u) => Some(Number::from(*u)),
            Self::I64(i) => Some(Number::from(*i)),
            Self::F64(f) => Number::from_f64(*f),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Shallow {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShallowVisitor::<false>)
    }
}

/// A [`Shallow`] whose array of strings is kept (tags, a fallback entry's groups).
struct List(Shallow);

impl<'de> Deserialize<'de> for List {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShallowVisitor::<true>).map(List)
    }
}

/// Reads a [`Shallow`]; `LIST`: keep an array of strings.
struct ShallowVisitor<const LIST: bool>;

impl<'de, const LIST: bool> Visitor<'de> for ShallowVisitor<LIST> {
    type Value = Shallow;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Shallow, E> {
        Ok(Shallow::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Shallow, E> {
        Ok(Shallow::Bool(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Shallow, E> {
        Ok(Shallow::U64(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Shallow, E> {
        Ok(Shallow::I64(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Shallow, E> {
        Ok(Shallow::F64(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Shallow, E> {
        Ok(Shallow::Str(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Shallow, E> {
        Ok(Shallow::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shallow, A::Error> {
        if !LIST {
            while seq.next_element::<Skip>()?.is_some() {}
            return Ok(Shallow::Seq);
        }
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Shallow>()? {
            match item {
                Shallow::Str(s) => items.push(s),
                other => {
                    while seq.next_element::<Skip>()?.is_some() {}
                    return Ok(Shallow::BadItem(Box::new(other)));
                }
            }
        }
        Ok(Shallow::Strings(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shallow, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Shallow::Map)
    }
}

/// `fallbacks` as LiteLLM takes it per request: a list of group names, of `{"model": group}`
/// parameter dicts, or of router-style `{group: [fallback groups]}` entries. An element of any
/// other shape ends the reading (the rest is skipped) and is refused after the parse.
struct FallbackList(Shallow, Vec<FallbackItem>);

/// One element of a `fallbacks` list.
enum FallbackItem {
    /// `"gpt-4o-mini"`.
    Group(String),
    /// `{"model": "gpt-4o-mini"}`.
    Model(String),
    /// `{"gpt-4o": ["gpt-4o-mini"]}`.
    Table(String, Vec<String>),
    /// A dict with this other key (a per-fallback parameter override), or a `model` that is not a
    /// string (then the key is `model`).
    Override(String),
}

impl<'de> Deserialize<'de> for FallbackList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(FallbackListVisitor)
    }
}

struct FallbackListVisitor;

impl<'de> Visitor<'de> for FallbackListVisitor {
    type Value = FallbackList;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<FallbackList, E> {
        Ok(FallbackList(Shallow::Null, Vec::new()))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<FallbackList, E> {
        Ok(FallbackList(Shallow::Bool(v), Vec::new()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<FallbackList, E> {
        Ok(FallbackList(Shallow::U64(v), Vec::new()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<FallbackList, E> {
        Ok(FallbackList(Shallow::I64(v), Vec::new()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<FallbackList, E> {
        Ok(FallbackList(Shallow::F64(v), Vec::new()))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<FallbackList, E> {
        Ok(FallbackList(Shallow::Str(v.to_owned()), Vec::new()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FallbackList, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(FallbackList(Shallow::Map, Vec::new()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FallbackList, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Element>()? {
            match item {
                Element::Item(item) => items.push(item),
                Element::Bad(other) => {
                    while seq.next_element::<Skip>()?.is_some() {}
                    return Ok(FallbackList(Shallow::BadItem(Box::new(other)), items));
                }
            }
        }
        Ok(FallbackList(Shallow::Seq, items))
    }
}

/// One element of `fallbacks` as read: an item, or a value of another shape.
enum Element {
    Item(FallbackItem),
    Bad(Shallow),
}

impl<'de> Deserialize<'de> for Element {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ElementVisitor)
    }
}

struct ElementVisitor;

impl<'de> Visitor<'de> for ElementVisitor {
    type Value = Element;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Element, E> {
        Ok(Element::Bad(Shallow::Null))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Element, E> {
        Ok(Element::Bad(Shallow::Bool(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Element, E> {
        Ok(Element::Bad(Shallow::U64(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Element, E> {
        Ok(Element::Bad(Shallow::I64(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Element, E> {
        Ok(Element::Bad(Shallow::F64(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Element, E> {
        Ok(Element::Item(FallbackItem::Group(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Element, E> {
        Ok(Element::Item(FallbackItem::Group(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Element, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Element::Bad(Shallow::Seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Element, A::Error> {
        // The first key decides; the rest of a dict that is not one of the two forms is skipped.
        let mut item: Option<FallbackItem> = None;
        while let Some(key) = map.next_key::<String>()? {
            if item.is_some() {
                map.next_value::<Skip>()?;
                item = match item {
                    // A parameter next to `model` (or a second group) is an override.
                    Some(FallbackItem::Model(_) | FallbackItem::Table(..)) => Some(FallbackItem::Override(key)),
                    other => other,
                };
                continue;
            }
            let value = map.next_value::<List>()?.0;
            item = Some(match (key.as_str(), value) {
                ("model", Shallow::Str(group)) => FallbackItem::Model(group),
                (_, Shallow::Strings(groups)) if key != "model" => FallbackItem::Table(key, groups),
                _ => FallbackItem::Override(key),
            });
        }
        Ok(match item {
            Some(item) => Element::Item(item),
            None => Element::Bad(Shallow::Map),
        })
    }
}

/// `model_group_retry_policy`: `{group: {"RateLimitErrorRetries": n, ...}}`, read as it is
/// parsed (nothing is built for a value of the wrong shape); the first problem is kept as the
/// message to refuse it with, and checked after the parse.
struct PolicyProbe(Result<BTreeMap<String, BTreeMap<String, u32>>, String>);

impl<'de> Deserialize<'de> for PolicyProbe {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PolicyVisitor(None))
    }
}

/// Reads the groups (`None`) or one group's fields (`Some(group)`).
struct PolicyVisitor(Option<String>);

impl PolicyVisitor {
    fn wrong(&self, kind: &str) -> PolicyProbe {
        PolicyProbe(Err(match &self.0 {
            None => format!("must be a mapping of model groups to retry policies, got {kind}"),
            Some(group) => format!("`{group}` must be a retry policy (`{{\"RateLimitErrorRetries\": 2}}`), got {kind}"),
        }))
    }
}

impl<'de> de::DeserializeSeed<'de> for PolicyVisitor {
    type Value = PolicyProbe;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<PolicyProbe, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PolicyVisitor {
    type Value = PolicyProbe;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<PolicyProbe, E> {
        Ok(match self.0 {
            None => PolicyProbe(Ok(BTreeMap::new())),
            Some(_) => self.wrong("null"),
        })
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<PolicyProbe, E> {
        Ok(self.wrong(&Shallow::Bool(v).kind()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<PolicyProbe, E> {
        Ok(self.wrong(&Shallow::U64(v).kind()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<PolicyProbe, E> {
        Ok(self.wrong(&Shallow::I64(v).kind()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<PolicyProbe, E> {
        Ok(self.wrong(&Shallow::F64(v).kind()))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<PolicyProbe, E> {
        Ok(self.wrong("a string"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PolicyProbe, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(self.wrong("sequence"))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PolicyProbe, A::Error> {
        let mut out: Result<BTreeMap<String, BTreeMap<String, u32>>, String> = Ok(BTreeMap::new());
        let mut fields: Result<BTreeMap<String, u32>, String> = Ok(BTreeMap::new());
        while let Some(key) = map.next_key::<String>()? {
            match &self.0 {
                // The groups: each value is a policy.
                None => {
                    let policy = map.next_value_seed(PolicyVisitor(Some(key.clone())))?;
                    match (&mut out, policy.0) {
                        (Ok(groups), Ok(one)) => groups.extend(one),
                        (Ok(_), Err(e)) => out = Err(e),
                        (Err(_), _) => {}
                    }
                }
                // One policy: each value a count.
                Some(group) => {
                    let value = map.next_value::<Shallow>()?;
                    if let Ok(f) = &mut fields {
                        match value {
                            Shallow::U64(n) if n <= u64::from(u32::MAX) => {
                                f.insert(key, n as u32);
                            }
                            Shallow::Null => {}
                            other => {
                                fields = Err(format!(
                                    "`{group}.{key}` must be a non-negative integer, got {}",
                                    other.number().map_or_else(|| other.kind(), |n| n.to_string())
                                ));
                            }
                        }
                    }
                }
            }
        }
        Ok(match self.0 {
            None => PolicyProbe(out),
            Some(group) => PolicyProbe(fields.map(|f| BTreeMap::from([(group, f)]))),
        })
    }
}

/// Any JSON value, checked and dropped as it is read: nothing is allocated (strings are
/// borrowed or unescaped into the parser's scratch buffer). Unlike [`IgnoredAny`] it descends
/// through `deserialize_any`, so the parser's nesting limit holds in a skipped container as it
/// did when the probe built `Value`s.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Skip)
    }
}

/// `messages`: whether some message's `content` holds an image part (`"type": "image_url"`, or
/// an `image_url` key). Anything else, of any type, is skipped without being built, so a
/// malformed `messages` is left for the upstream to refuse.
struct Messages {
    images: bool,
}

impl<'de> Deserialize<'de> for Messages {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Images(Level::Messages)).map(|images| Messages { images })
    }
}

/// Where [`Images`] is in `messages`.
#[derive(Clone, Copy)]
enum Level {
    /// The `messages` array.
    Messages,
    /// One message object.
    Message,
    /// A message's `content` (a string or an array of parts).
    Content,
    /// One content part object.
    Part,
    /// A part's `type` value.
    Type,
}

/// Reads the value at its [`Level`] and says whether an image part is in it.
struct Images(Level);

impl<'de> de::DeserializeSeed<'de> for Images {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// A map key compared with two names without being kept: `Some(true)` for the first,
/// `Some(false)` for the second, `None` for any other.
#[derive(Clone, Copy)]
struct KeyIs(&'static str, &'static str);

impl<'de> de::DeserializeSeed<'de> for KeyIs {
    type Value = Option<bool>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<bool>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs {
    type Value = Option<bool>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<bool>, E> {
        Ok(if v == self.0 {
            Some(true)
        } else if v == self.1 {
            Some(false)
        } else {
            None
        })
    }
}

impl<'de> Visitor<'de> for Images {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        // OpenAI chat's `image_url` part, Anthropic's `image` block, the Responses API's
        // `input_image` part.
        Ok(matches!(self.0, Level::Type) && matches!(v, "image_url" | "image" | "input_image"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let item = match self.0 {
            Level::Messages => Some(Level::Message),
            Level::Content => Some(Level::Part),
            _ => None,
        };
        let mut found = false;
        match item {
            // Every element is still read: the parser checks the whole body either way.
            Some(level) => {
                while let Some(image) = seq.next_element_seed(Images(level))? {
                    found |= image;
                }
            }
            None => while seq.next_element::<Skip>()?.is_some() {},
        }
        Ok(found)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        // A message's images are in its `content` (both names are `content`, so only the first
        // matches); a part is an image by its `type`, or by an `image_url` key.
        let (keys, value) = match self.0 {
            Level::Message => (KeyIs("content", "content"), Level::Content),
            Level::Part => (KeyIs("type", "image_url"), Level::Type),
            _ => {
                while map.next_entry::<Skip, Skip>()?.is_some() {}
                return Ok(false);
            }
        };
        let mut found = false;
        while let Some(matched) = map.next_key_seed(keys)? {
            match matched {
                Some(true) => found |= map.next_value_seed(Images(value))?,
                Some(false) => {
                    map.next_value::<Skip>()?;
                    found = true;
                }
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(found)
    }
}

/// Reads the model and the [`RequestFacts`] of an OpenAI-style JSON request body.
///
/// - `model`: required, a non-empty string;
/// - `stream`: a boolean (ignored for embeddings);
/// - tags: `metadata.tags`, else top-level `tags`; a list of strings or one comma-separated string;
/// - `allowed_model_region`: a string;
/// - `metadata.session_id`: a string or a number;
/// - required parameters: each of [`REQUIRED_PARAM_NAMES`] present and not `null`;
/// - capabilities: [`RequestFacts::tools`] when `tools` is present and not `null`,
///   [`RequestFacts::images`] when a message's `content` has an image part (`"type": "image_url"`
///   or an `image_url` key), read without building `messages`;
/// - routing overrides (LiteLLM request keys): `num_retries` (a non-negative integer),
///   `fallbacks` (a list of group names, of `{"model": group}` dicts, or of router-style
///   `{group: [groups]}` entries, of which the requested model's, else `*`'s, is the list),
///   `disable_fallbacks` (a boolean), `model_group_retry_policy` (`{group: {"RateLimitErrorRetries":
///   n, ...}}`), `cooldown_time` (seconds >= 0), `specific_deployment` (a boolean);
/// - per-request timeouts (LiteLLM request keys, seconds, a positive number): `timeout` (else
///   `request_timeout`) and `stream_timeout`, which may shorten the deployment's and the
///   router's;
/// - `num_retries`, the timeouts, `cooldown_time` and `model_group_retry_policy` are also read
///   from `metadata` (the top-level key wins);
/// - LiteLLM's testing hooks ([`MockHooks`]): `mock_response` (a string or an object),
///   `mock_timeout` (a boolean), `mock_testing_fallbacks`, `mock_testing_context_fallbacks`,
///   `mock_testing_content_policy_fallbacks` and `mock_testing_rate_limit_error` (booleans, or
///   `"true"` / `"false"` as LiteLLM's `str_to_bool` reads them);
/// - no client-side credentials: a top-level [`CLIENT_CREDENTIAL_KEYS`] entry that is not `null`
///   is refused, however its name is escaped.
///
/// The input-token count is left empty: it is counted lazily by the first layer that needs it.
/// No part of the body is built as a `serde_json::Value`: a key of the wrong type is skipped from
/// its first wrong element on, so what the probe allocates is bounded by what it keeps (the model,
/// tags, fallbacks, a session id), never by the size of a key it refuses. Anything malformed or refused is a [`RouteErrorKind::InvalidRequest`] error naming the problem.
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
/// assert!(facts.tools && !facts.images);
///
/// let body = br#"{"model":"gpt-4o","messages":[{"role":"user","content":[
///     {"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}"#;
/// assert!(facts_from_json(body, Endpoint::Chat)?.1.images);
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
    let probe: Probe<'_> = serde_json::from_slice(body)
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
fn checked(probe: Probe<'_>, endpoint: Endpoint) -> Result<(String, RequestFacts), RouteError> {
    let model = match probe.model {
        Some(Shallow::Str(m)) if !m.trim().is_empty() => m,
        Some(Shallow::Str(_)) => return Err(invalid("`model` is empty")),
        None | Some(Shallow::Null) => return Err(invalid("request has no `model`")),
        Some(other) => return Err(invalid(format!("`model` must be a string, got {}", other.kind()))),
    };
    let stream = read_bool(probe.stream, "stream")?;
    let (meta_tags, session, min_quality_tier, meta) = match probe.metadata {
        Some(m) => {
            let overrides = MetaOverrides {
                num_retries: m.num_retries,
                timeout: m.timeout,
                request_timeout: m.request_timeout,
                stream_timeout: m.stream_timeout,
                cooldown_time: m.cooldown_time,
                model_group_retry_policy: m.model_group_retry_policy,
            };
            (m.tags, m.session_id, m.min_quality_tier, overrides)
        }
        None => (None, None, None, MetaOverrides::default()),
    };
    let tags = match meta_tags.filter(|t| !matches!(t.0, Shallow::Null)) {
        Some(t) => read_tags(t.0, "metadata.tags")?,
        None => match probe.tags {
            Some(t) => read_tags(t.0, "tags")?,
            None => Vec::new(),
        },
    };
    let region = match probe.allowed_model_region {
        None | Some(Shallow::Null) => None,
        Some(Shallow::Str(r)) => Some(r),
        Some(other) => {
            return Err(invalid(format!("`allowed_model_region` must be a string, got {}", other.kind())));
        }
    };
    let session = match session {
        None | Some(Shallow::Null) => None,
        Some(Shallow::Str(s)) => Some(s),
        Some(other) => match other.number() {
            Some(n) => Some(n.to_string()),
            None => return Err(invalid(format!("`metadata.session_id` must be a string, got {}", other.kind()))),
        },
    };

    // The top-level key wins over the one in `metadata`; both are checked.
    let num_retries = read_count(probe.num_retries, "num_retries")?;
    let meta_retries = read_count(meta.num_retries, "metadata.num_retries")?;
    let num_retries = num_retries.or(meta_retries);
    let fallbacks = read_fallbacks(probe.fallbacks, &model)?;
    let disable_fallbacks = read_bool(probe.disable_fallbacks, "disable_fallbacks")?;
    let min_quality_tier = match min_quality_tier {
        None | Some(Shallow::Null) => None,
        Some(Shallow::U64(v)) => match u32::try_from(v) {
            Ok(v) => Some(v),
            Err(_) => {
                return Err(invalid(format!("`metadata.min_quality_tier` must be at most {}, got {v}", u32::MAX)));
            }
        },
        Some(Shallow::Str(s)) => match parse_quality_tier(&s) {
            Some(v) => Some(v),
            None => {
                return Err(invalid(format!("`metadata.min_quality_tier` must be a non-negative integer, got {s:?}")));
            }
        },
        Some(other) => {
            return Err(invalid(format!(
                "`metadata.min_quality_tier` must be a non-negative integer, got {}",
                other.number().map_or_else(|| other.kind(), |n| n.to_string())
            )));
        }
    };
    // LiteLLM reads `timeout`, else `request_timeout`.
    let timeout = read_seconds(probe.timeout, "timeout")?;
    let request_timeout = read_seconds(probe.request_timeout, "request_timeout")?;
    let stream_timeout = read_seconds(probe.stream_timeout, "stream_timeout")?;
    let meta_timeout = read_seconds(meta.timeout, "metadata.timeout")?;
    let meta_request_timeout = read_seconds(meta.request_timeout, "metadata.request_timeout")?;
    let meta_stream_timeout = read_seconds(meta.stream_timeout, "metadata.stream_timeout")?;
    let timeout = timeout.or(request_timeout).or(meta_timeout).or(meta_request_timeout);
    let stream_timeout = stream_timeout.or(meta_stream_timeout);
    let cooldown_time = read_cooldown(probe.cooldown_time, "cooldown_time")?;
    let cooldown_time = cooldown_time.or(read_cooldown(meta.cooldown_time, "metadata.cooldown_time")?);
    let policies = read_policies(probe.model_group_retry_policy, "model_group_retry_policy")?;
    let policies = match policies {
        Some(p) => Some(p),
        None => read_policies(meta.model_group_retry_policy, "metadata.model_group_retry_policy")?,
    };
    let specific_deployment = read_bool(probe.specific_deployment, "specific_deployment")?;
    let mut mock = MockHooks::default()
        .rate_limit_error(read_flag(probe.mock_testing_rate_limit_error, "mock_testing_rate_limit_error")?)
        .timeout(read_bool(probe.mock_timeout, "mock_timeout")?);
    // LiteLLM checks the three in this order and raises the first that is set.
    let failures = [
        (probe.mock_testing_fallbacks, MockFailure::General),
        (probe.mock_testing_context_fallbacks, MockFailure::ContextWindow),
        (probe.mock_testing_content_policy_fallbacks, MockFailure::ContentPolicy),
    ];
    for (value, failure) in failures {
        if read_flag(value, failure.key())? && mock.fallbacks.is_none() {
            mock = mock.fail_first_group(failure);
        }
    }
    if let Some(response) = read_mock_response(probe.mock_response)? {
        mock = mock.respond(response);
    }

    let mut facts = RequestFacts::new()
        .endpoint(endpoint)
        .streaming(stream && endpoint != Endpoint::Embedding)
        .tags(tags)
        .region(region)
        .session(session)
        .num_retries(num_retries)
        .fallbacks(fallbacks)
        .disable_fallbacks(disable_fallbacks)
        .timeout(timeout)
        .stream_timeout(stream_timeout)
        .min_quality_tier(min_quality_tier)
        .cooldown_time(cooldown_time)
        .retry_policies(policies)
        .specific_deployment(specific_deployment)
        .mock(mock);
    facts.tools = probe.tools.is_some();
    facts.images = probe.messages.is_some_and(|m| m.images) || probe.input.is_some_and(|m| m.images);
    facts.previous_response = match probe.previous_response_id {
        None | Some(Shallow::Null) => None,
        Some(Shallow::Str(id)) if !id.is_empty() => Some(id),
        Some(Shallow::Str(_)) => return Err(invalid("`previous_response_id` is empty")),
        Some(other) => {
            return Err(invalid(format!("`previous_response_id` must be a string, got {}", other.kind())));
        }
    };
    let present = [probe.response_format.is_some(), probe.tools.is_some()];
    facts.required_params =
        REQUIRED_PARAM_NAMES.iter().zip(present).filter(|(_, p)| *p).map(|(n, _)| (*n).to_owned()).collect();
    Ok((model, facts))
}

fn read_bool(value: Option<Shallow>, field: &str) -> Result<bool, RouteError> {
    match value {
        None | Some(Shallow::Null) => Ok(false),
        Some(Shallow::Bool(b)) => Ok(b),
        Some(other) => Err(invalid(format!("`{field}` must be a boolean, got {}", other.kind()))),
    }
}

/// The overrides LiteLLM also takes from `metadata`.
#[derive(Default)]
struct MetaOverrides {
    num_retries: Option<Shallow>,
    timeout: Option<Shallow>,
    request_timeout: Option<Shallow>,
    stream_timeout: Option<Shallow>,
    cooldown_time: Option<Shallow>,
    model_group_retry_policy: Option<PolicyProbe>,
}

/// A retry count: a non-negative integer that fits a `u32`.
fn read_count(value: Option<Shallow>, field: &str) -> Result<Option<u32>, RouteError> {
    match value {
        None | Some(Shallow::Null) => Ok(None),
        Some(Shallow::U64(v)) => match u32::try_from(v) {
            Ok(v) => Ok(Some(v)),
            Err(_) => Err(invalid(format!("`{field}` must be a non-negative integer, got {v}"))),
        },
        Some(other) => match other.number() {
            Some(n) => Err(invalid(format!("`{field}` must be a non-negative integer, got {n}"))),
            None => Err(invalid(format!("`{field}` must be an integer, got {}", other.kind()))),
        },
    }
}

/// A LiteLLM testing flag: a boolean, or the strings `"true"` / `"false"` (LiteLLM's
/// `str_to_bool`, any case).
fn read_flag(value: Option<Shallow>, field: &str) -> Result<bool, RouteError> {
    match value {
        Some(Shallow::Str(s)) if s.eq_ignore_ascii_case("true") => Ok(true),
        Some(Shallow::Str(s)) if s.eq_ignore_ascii_case("false") => Ok(false),
        other => read_bool(other, field),
    }
}

/// `cooldown_time`: seconds, zero allowed (never bench).
fn read_cooldown(value: Option<Shallow>, field: &str) -> Result<Option<Duration>, RouteError> {
    let seconds = match &value {
        None | Some(Shallow::Null) => return Ok(None),
        Some(Shallow::U64(u)) => *u as f64,
        Some(Shallow::F64(f)) => *f,
        Some(_) => f64::NAN,
    };
    Duration::try_from_secs_f64(seconds).map(Some).map_err(|_| {
        let kind = value.as_ref().map_or_else(String::new, Shallow::kind);
        invalid(format!("`{field}` must be a number of seconds >= 0, got {kind}"))
    })
}

/// `model_group_retry_policy`: each group's policy read with LiteLLM's field names.
fn read_policies(value: Option<PolicyProbe>, field: &str) -> Result<Option<BTreeMap<String, RetryPolicy>>, RouteError> {
    let Some(PolicyProbe(groups)) = value else { return Ok(None) };
    let groups = groups.map_err(|e| invalid(format!("`{field}` {e}")))?;
    let mut out = BTreeMap::new();
    for (group, fields) in groups {
        let policy = RetryPolicy::from_litellm(&fields).map_err(|e| invalid(format!("`{field}.{group}`: {e}")))?;
        out.insert(group, policy);
    }
    Ok((!out.is_empty()).then_some(out))
}

/// `mock_response`: a string (the content, or one of LiteLLM's error strings), an object (the
/// whole answer) or an array (an embedding's vector).
fn read_mock_response(raw: Option<&RawValue>) -> Result<Option<MockResponse>, RouteError> {
    let Some(raw) = raw else { return Ok(None) };
    let text = raw.get();
    match text.trim_start().as_bytes().first() {
        Some(b'"') => {
            let content: String =
                serde_json::from_str(text).map_err(|e| invalid(format!("`mock_response` is not a string: {e}")))?;
            Ok(Some(MockResponse::Text(content)))
        }
        Some(b'{') => Ok(Some(MockResponse::Object(bytes::Bytes::copy_from_slice(text.as_bytes())))),
        Some(b'[') => Ok(Some(MockResponse::List(bytes::Bytes::copy_from_slice(text.as_bytes())))),
        Some(b'n') => Ok(None),
        _ => Err(invalid(
            "`mock_response` must be a string (the answer's content), an object (the whole answer) or an array (an \
             embedding)",
        )),
    }
}

/// Per-request `fallbacks`: group names, `{"model": group}` dicts, or router-style
/// `{group: [groups]}` entries (the entry for the requested `model`, else `*`, is the list).
fn read_fallbacks(value: Option<FallbackList>, model: &str) -> Result<Option<Vec<String>>, RouteError> {
    let Some(FallbackList(shape, items)) = value else { return Ok(None) };
    match shape {
        Shallow::Null => return Ok(None),
        Shallow::Seq => {}
        Shallow::BadItem(item) => {
            return Err(invalid(format!(
                "`fallbacks` must hold group names, got {} (an entry is `\"<group>\"`, `{{\"model\": \"<group>\"}}` \
                 or `{{<group>: [<groups>]}}`)",
                item.kind()
            )));
        }
        other => return Err(invalid(format!("`fallbacks` must be a list, got {}", other.kind()))),
    }
    let mut groups = Vec::new();
    let mut table: Option<Vec<String>> = None;
    let mut default: Option<Vec<String>> = None;
    let mut tables = false;
    for (i, item) in items.into_iter().enumerate() {
        match item {
            FallbackItem::Group(g) | FallbackItem::Model(g) => groups.push(g),
            FallbackItem::Table(key, targets) => {
                tables = true;
                // The first entry for a group wins, as in a config's table.
                if key == model && table.is_none() {
                    table = Some(targets);
                } else if key == "*" && default.is_none() {
                    default = Some(targets);
                }
            }
            FallbackItem::Override(key) => {
                return Err(invalid(format!(
                    "`fallbacks[{i}].{key}`: a fallback names a model group only (`\"<group>\"` or \
                     `{{\"model\": \"<group>\"}}`, or `{{<group>: [<groups>]}}`); per-fallback parameters are not \
                     supported"
                )));
            }
        }
    }
    if tables && !groups.is_empty() {
        return Err(invalid("`fallbacks` mixes group names with `{<group>: [<groups>]}` entries; use one form"));
    }
    Ok(Some(if tables { table.or(default).unwrap_or_default() } else { groups }))
}

fn read_tags(value: Shallow, field: &str) -> Result<Vec<String>, RouteError> {
    match value {
        Shallow::Null => Ok(Vec::new()),
        Shallow::Str(s) => Ok(s.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned).collect()),
        Shallow::Strings(items) => Ok(items),
        Shallow::BadItem(item) => Err(invalid(format!("`{field}` must hold strings, got {}", item.kind()))),
        other => Err(invalid(format!("`{field}` must be a list of strings, got {}", other.kind()))),
    }
}

/// A timeout in seconds: a positive number (fractions allowed) that fits a `Duration`.
fn read_seconds(value: Option<Shallow>, field: &str) -> Result<Option<Duration>, RouteError> {
    let seconds = match &value {
        None | Some(Shallow::Null) => return Ok(None),
        // u64 -> f64 rounds, and a timeout needs no more precision than that.
        Some(Shallow::U64(u)) => *u as f64,
        Some(Shallow::F64(f)) => *f,
        Some(_) => f64::NAN,
    };
    match Duration::try_from_secs_f64(seconds) {
        Ok(d) if !d.is_zero() => Ok(Some(d)),
        _ => {
            let kind = value.as_ref().map_or_else(String::new, Shallow::kind);
            Err(invalid(format!("`{field}` must be a positive number of seconds, got {kind}")))
        }
    }
}

/// A quality tier written as text (`"3"`, as a header or a string field carries it).
pub(crate) fn parse_quality_tier(text: &str) -> Option<u32> {
    let text = text.trim();
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse().ok()).flatten()
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
    fn per_request_timeouts_are_read_as_positive_seconds_and_others_refused_naming_the_field() {
        let read = |body: &[u8]| facts_from_json(body, Endpoint::Chat).expect("valid");
        let facts = read(br#"{"model":"m","timeout":30,"stream_timeout":2.5}"#);
        assert_eq!(facts.1.timeout, Some(Duration::from_secs(30)));
        assert_eq!(facts.1.stream_timeout, Some(Duration::from_millis(2500)));
        let facts = read(br#"{"model":"m","request_timeout":0.25,"stream_timeout":null}"#);
        assert_eq!((facts.1.timeout, facts.1.stream_timeout), (Some(Duration::from_millis(250)), None));
        assert_eq!(read(br#"{"model":"m","timeout":7,"request_timeout":9}"#).1.timeout, Some(Duration::from_secs(7)));
        assert_eq!(read(br#"{"model":"m"}"#).1.timeout, None);
        for (body, field) in [
            (&br#"{"model":"m","timeout":0}"#[..], "`timeout`"),
            (br#"{"model":"m","timeout":-1}"#, "`timeout`"),
            (br#"{"model":"m","timeout":"30"}"#, "`timeout`"),
            (br#"{"model":"m","timeout":1e300}"#, "`timeout`"),
            (br#"{"model":"m","request_timeout":[1]}"#, "`request_timeout`"),
            (br#"{"model":"m","stream_timeout":-0.5}"#, "`stream_timeout`"),
            (br#"{"model":"m","stream_timeout":true}"#, "`stream_timeout`"),
        ] {
            let message = err(body);
            assert!(message.contains(&format!("{field} must be a positive number of seconds")), "{message}");
        }
    }

    #[test]
    fn a_wrong_type_is_reported_after_the_whole_body_is_checked() {
        // Credentials, syntax and duplicates anywhere in the body come first, as when every field
        // was built before being checked.
        assert!(matches!(
            read_facts(br#"{"model":"m","fallbacks":[0],"api_key":"k"}"#, Endpoint::Chat),
            Err(FactsError::ClientCredential("api_key"))
        ));
        assert!(err(br#"{"model":"m","fallbacks":[0,{"a":]}"#).contains("not valid JSON"));
        assert!(err(br#"{"model":"m","tags":[0],"tags":[1]}"#).contains("duplicate field `tags`"));
        // The parser's nesting limit holds inside a skipped value.
        let deep = format!(r#"{{"model":"m","fallbacks":[0,{}{}]}}"#, "[".repeat(200), "]".repeat(200));
        assert!(err(deep.as_bytes()).contains("recursion limit"), "{}", err(deep.as_bytes()));
        // Messages and types as before.
        assert!(err(br#"{"model":"m","fallbacks":["a",null]}"#).contains("must hold group names, got unit value"));
        assert!(err(br#"{"model":"m","fallbacks":"a"}"#).contains("`fallbacks` must be a list, got string \"a\""));
        assert!(err(br#"{"model":"m","num_retries":-1}"#).contains("must be a non-negative integer, got -1"));
        assert!(err(br#"{"model":"m","num_retries":1.5}"#).contains("must be a non-negative integer, got 1.5"));
        assert!(err(br#"{"model":"m","num_retries":[]}"#).contains("must be an integer, got sequence"));
        assert!(
            err(br#"{"model":"m","metadata":{"tags":{"a":1}}}"#)
                .contains("`metadata.tags` must be a list of strings, got map")
        );
        let (_, facts) =
            facts_from_json(br#"{"model":"m","metadata":{"session_id":1.5,"tags":null},"tags":"t"}"#, Endpoint::Chat)
                .expect("valid");
        assert_eq!((facts.session.as_deref(), &facts.tags[..]), (Some("1.5"), &["t".to_owned()][..]));
    }

    #[test]
    fn per_request_fallbacks_are_names_model_dicts_or_router_entries() {
        let fallbacks = |body: &[u8]| facts_from_json(body, Endpoint::Chat).expect("valid").1.fallbacks;
        let list = |names: &[&str]| Some(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>());
        assert_eq!(fallbacks(br#"{"model":"g","fallbacks":["a","b"]}"#), list(&["a", "b"]));
        assert_eq!(fallbacks(br#"{"model":"g","fallbacks":[{"model":"a"},"b"]}"#), list(&["a", "b"]));
        assert_eq!(
            fallbacks(br#"{"model":"g","fallbacks":[{"x":["c"]},{"g":["a","b"]},{"*":["d"]}]}"#),
            list(&["a", "b"])
        );
        assert_eq!(fallbacks(br#"{"model":"h","fallbacks":[{"g":["a"]},{"*":["d"]}]}"#), list(&["d"]));
        assert_eq!(fallbacks(br#"{"model":"h","fallbacks":[{"g":["a"]}]}"#), list(&[]));
        assert_eq!(fallbacks(br#"{"model":"g","fallbacks":null}"#), None);
        assert!(err(br#"{"model":"g","fallbacks":[{"model":"a","messages":[]}]}"#).contains("`fallbacks[0].messages`"));
        assert!(err(br#"{"model":"g","fallbacks":["a",{"temperature":1}]}"#).contains("`fallbacks[1].temperature`"));
        assert!(err(br#"{"model":"g","fallbacks":[{"model":5}]}"#).contains("`fallbacks[0].model`"));
        assert!(err(br#"{"model":"g","fallbacks":["a",{"g":["b"]}]}"#).contains("mixes"));
        assert!(err(br#"{"model":"g","fallbacks":[{}]}"#).contains("must hold group names, got map"));
    }

    #[test]
    fn overrides_are_read_from_the_body_then_from_metadata() {
        let facts = |body: &[u8]| facts_from_json(body, Endpoint::Chat).expect("valid").1;
        let f =
            facts(br#"{"model":"g","metadata":{"num_retries":1,"timeout":9,"stream_timeout":3,"cooldown_time":0}}"#);
        assert_eq!(
            (f.num_retries, f.timeout, f.stream_timeout),
            (Some(1), Some(Duration::from_secs(9)), Some(Duration::from_secs(3)))
        );
        assert_eq!(f.cooldown_time, Some(Duration::ZERO));
        let f = facts(
            br#"{"model":"g","num_retries":4,"cooldown_time":2.5,"metadata":{"num_retries":1,"cooldown_time":0}}"#,
        );
        assert_eq!((f.num_retries, f.cooldown_time), (Some(4), Some(Duration::from_millis(2500))));
        let f =
            facts(br#"{"model":"g","model_group_retry_policy":{"g":{"RateLimitErrorRetries":1,"DefaultRetries":2}}}"#);
        let policies = f.retry_policies.expect("read");
        assert_eq!((policies["g"].rate_limit, policies["g"].default), (Some(1), Some(2)));
        let f = facts(br#"{"model":"g","metadata":{"model_group_retry_policy":{"g":{"TimeoutErrorRetries":0}}}}"#);
        assert_eq!(f.retry_policies.expect("read")["g"].timeout, Some(0));
        assert!(facts(br#"{"model":"g","specific_deployment":true}"#).specific_deployment);
        assert!(
            err(br#"{"model":"g","cooldown_time":"1"}"#).contains("`cooldown_time` must be a number of seconds >= 0")
        );
        assert!(
            err(br#"{"model":"g","model_group_retry_policy":{"g":{"Nope":1}}}"#)
                .contains("`model_group_retry_policy.g`")
        );
        assert!(err(br#"{"model":"g","model_group_retry_policy":{"g":1}}"#).contains("`g` must be a retry policy"));
    }

    #[test]
    fn litellms_testing_hooks_are_read() {
        let mock = |body: &[u8]| facts_from_json(body, Endpoint::Chat).expect("valid").1.mock;
        assert!(mock(br#"{"model":"g"}"#).is_empty());
        let m = mock(br#"{"model":"g","mock_response":"hi \"there\"","mock_timeout":true}"#);
        assert_eq!(m.response, Some(MockResponse::Text("hi \"there\"".to_owned())));
        assert!(m.timeout);
        let m = mock(br#"{"model":"g","mock_response":{"choices":[]}}"#);
        assert_eq!(m.response, Some(MockResponse::Object(bytes::Bytes::from_static(br#"{"choices":[]}"#))));
        let m = mock(
            br#"{"model":"g","mock_testing_content_policy_fallbacks":"TRUE","mock_testing_context_fallbacks":true}"#,
        );
        assert_eq!(m.fallbacks, Some(MockFailure::ContextWindow), "LiteLLM's order: context before content policy");
        let m = mock(br#"{"model":"g","mock_testing_fallbacks":"false","mock_testing_rate_limit_error":"true"}"#);
        assert_eq!((m.fallbacks, m.rate_limit_error), (None, true));
        assert!(
            err(br#"{"model":"g","mock_testing_fallbacks":"maybe"}"#)
                .contains("`mock_testing_fallbacks` must be a boolean")
        );
        let m = mock(br#"{"model":"g","mock_response":[0.5, 1]}"#);
        assert_eq!(m.response, Some(MockResponse::List(bytes::Bytes::from_static(b"[0.5, 1]"))));
        assert!(err(br#"{"model":"g","mock_response":1}"#).contains("`mock_response` must be a string"));
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
    fn images_and_tools_are_seen_without_building_messages() {
        let images = |body: &[u8]| facts_from_json(body, Endpoint::Chat).expect("valid").1.images;
        assert!(images(br#"{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]}]}"#));
        assert!(images(br#"{"model":"m","messages":[{"role":"system","content":"s"},{"content":[{"text":"a","type":"text"},{"image_url":"https://x"}]}]}"#));
        assert!(
            images(br#"{"model":"m","messages":[{"content":[{"type":"image\u005furl"}]}]}"#),
            "escaped like any string"
        );
        assert!(!images(br#"{"model":"m","messages":[{"role":"user","content":"an image_url in text"}]}"#));
        assert!(!images(
            br#"{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"image_url"}]}]}"#
        ));
        assert!(
            !images(br#"{"model":"m","messages":[{"role":"user","name":"image_url","image_url":1}]}"#),
            "not a content part"
        );
        // A malformed `messages` is the upstream's to refuse, not the probe's.
        assert!(!images(br#"{"model":"m","messages":"hi"}"#));
        assert!(!images(
            br#"{"model":"m","messages":[1,null,[{"type":"image_url"}],{"content":{"type":"image_url"}}]}"#
        ));
        let (_, facts) =
            facts_from_json(br#"{"model":"m","tools":[{"type":"function"}]}"#, Endpoint::Chat).expect("valid");
        assert!(facts.tools && !facts.images);
        let (_, facts) = facts_from_json(br#"{"model":"m","tools":null}"#, Endpoint::Chat).expect("valid");
        assert!(!facts.tools);
    }

    #[test]
    fn the_minimum_quality_tier_is_a_non_negative_integer() {
        let tier = |body: &[u8]| facts_from_json(body, Endpoint::Chat).expect("valid").1.min_quality_tier;
        assert_eq!(tier(br#"{"model":"m","metadata":{"min_quality_tier":3}}"#), Some(3));
        assert_eq!(tier(br#"{"model":"m","metadata":{"min_quality_tier":" 2 "}}"#), Some(2));
        assert_eq!(tier(br#"{"model":"m","metadata":{"min_quality_tier":null}}"#), None);
        assert_eq!(tier(br#"{"model":"m"}"#), None);
        for bad in ["\"high\"", "-1", "1.5", "[1]", "4294967296", "\"\"", "\"+1\""] {
            let body = format!(r#"{{"model":"m","metadata":{{"min_quality_tier":{bad}}}}}"#);
            assert!(err(body.as_bytes()).contains("`metadata.min_quality_tier` must be"), "{bad}");
        }
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
