//! The fallback tables ([`FallbackTables`]) and the hint a fallback layer gives the layers below
//! it ([`FallbackHint`]).
//!
//! A neutral home: the [fallback layer](crate::fallback) reads the tables to choose the next
//! group, and the [retry layer](crate::retry) reads the hint to leave a failure that a fallback
//! will take to that layer instead of retrying it. Neither layer imports the other; a user layer
//! may sit between them.
//!
//! ```
//! use switchyard_layers::{Outcome, RouteCtx, fallback_tables::{FallbackHint, FallbackTable, FallbackTables}};
//!
//! let mut tables = FallbackTables::default();
//! tables.context_window.insert("gpt-4o".into(), vec!["gpt-4.1".into()]);
//! // What a fallback layer does once per call (the `FallbackLayer` does it for you):
//! let ctx = RouteCtx::new("gpt-4o");
//! ctx.set_fallback_hint(FallbackHint::new(tables));
//! // What a layer below may ask of it:
//! let hint = ctx.fallback_hint().expect("a fallback layer above");
//! let found = hint.tables().targets(&["gpt-4o"], Some(Outcome::ContextWindowExceeded), None);
//! assert_eq!(found.map(|(table, _)| table), Some(FallbackTable::ContextWindow));
//! ```

use std::{collections::BTreeMap, fmt, sync::Arc};

use crate::Outcome;

/// The fallback tables of a router.
///
/// Keys and targets are names a caller could ask for (groups, aliases, wildcard matches). How the
/// [`FallbackLayer`](crate::fallback::FallbackLayer) looks a failed group up in them is described
/// in the [fallback module's docs](crate::fallback) and on [`targets`](Self::targets).
///
/// ```
/// use switchyard_layers::fallback_tables::FallbackTables;
/// let mut t = FallbackTables::default();
/// t.general.insert("gpt-4o".into(), vec!["gpt-4o-mini".into()]);
/// t.default.push("claude".into());
/// assert_eq!(t.general_for("gpt-4o"), ["gpt-4o-mini".to_owned()]);
/// assert_eq!(t.general_for("other"), ["claude".to_owned()]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FallbackTables {
    /// `fallbacks`: group -> groups to try, in order, after any failure.
    pub general: BTreeMap<String, Vec<String>>,
    /// `context_window_fallbacks`: used when the prompt does not fit the group.
    pub context_window: BTreeMap<String, Vec<String>>,
    /// `content_policy_fallbacks`: used when a content filter refused.
    pub content_policy: BTreeMap<String, Vec<String>>,
    /// `default_fallbacks` (and a `*` entry of `fallbacks`): for groups with no own entry.
    pub default: Vec<String>,
    /// `max_fallbacks`: hops per call (default 5).
    pub max_fallbacks: u32,
}

impl Default for FallbackTables {
    fn default() -> Self {
        Self {
            general: BTreeMap::new(),
            context_window: BTreeMap::new(),
            content_policy: BTreeMap::new(),
            default: Vec::new(),
            max_fallbacks: Self::DEFAULT_MAX_FALLBACKS,
        }
    }
}

impl FallbackTables {
    /// Default hop limit, as LiteLLM's `ROUTER_MAX_FALLBACKS`.
    pub const DEFAULT_MAX_FALLBACKS: u32 = 5;

    /// The general fallbacks of `group`: its own entry, else the default list.
    pub fn general_for(&self, group: &str) -> &[String] {
        self.general.get(group).map_or(&self.default[..], Vec::as_slice)
    }

    /// The targets a failure of class `outcome` reads for a group known by `names` (the name the
    /// call routed to, then the group it resolved to), and the table they come from; `None` when
    /// there is nothing to fall back to.
    ///
    /// A context-window or content-policy failure reads its own table when the group has an
    /// entry there; every other failure, and those two without an entry, read the general
    /// fallbacks: `per_request` when given, else the group's `fallbacks` entry, else
    /// `default_fallbacks` (or a `*` entry of `fallbacks`). An entry is looked up by an exact key
    /// first, then by the name without its provider prefix (`openai/gpt-4o` matches `gpt-4o`). An
    /// empty list counts as no entry; an empty `per_request` list means no general fallbacks.
    ///
    /// ```
    /// use switchyard_layers::{Outcome, fallback_tables::{FallbackTable, FallbackTables}};
    /// let mut t = FallbackTables::default();
    /// t.general.insert("gpt-4o".into(), vec!["gpt-4o-mini".into()]);
    /// t.context_window.insert("gpt-4o".into(), vec!["gpt-4.1".into()]);
    /// let cw = t.targets(&["openai/gpt-4o"], Some(Outcome::ContextWindowExceeded), None);
    /// assert_eq!(cw, Some((FallbackTable::ContextWindow, &["gpt-4.1".to_owned()][..])));
    /// assert_eq!(t.targets(&["gpt-4o"], Some(Outcome::ServerError), None).map(|(t, _)| t), Some(FallbackTable::General));
    /// assert_eq!(t.targets(&["claude"], None, None), None);
    /// ```
    pub fn targets<'a>(
        &'a self,
        names: &[&str],
        outcome: Option<Outcome>,
        per_request: Option<&'a [String]>,
    ) -> Option<(FallbackTable, &'a [String])> {
        let special = match outcome {
            Some(Outcome::ContextWindowExceeded) => Some((&self.context_window, FallbackTable::ContextWindow)),
            Some(Outcome::ContentPolicy) => Some((&self.content_policy, FallbackTable::ContentPolicy)),
            _ => None,
        };
        if let Some((map, table)) = special
            && let Some(list) = entry(map, names)
        {
            return Some((table, list));
        }
        if let Some(list) = per_request {
            return (!list.is_empty()).then_some((FallbackTable::PerRequest, list));
        }
        if let Some(list) = entry(&self.general, names) {
            return Some((FallbackTable::General, list));
        }
        let default =
            if self.default.is_empty() { self.general.get("*").map_or(&[][..], Vec::as_slice) } else { &self.default };
        (!default.is_empty()).then_some((FallbackTable::Default, default))
    }

    /// Whether an answer a content filter cut (a 200 whose `finish_reason` is `content_filter`)
    /// should fail as a [`ContentPolicy`](Outcome::ContentPolicy) failure for a group known by
    /// `names`, so a fallback serves it instead; otherwise it is returned as it is. LiteLLM's
    /// `_should_raise_content_policy_error`: when `content_policy_fallbacks` is configured, only
    /// when the group has an entry in it; when it is not configured at all, when default
    /// fallbacks (or a `*` entry) exist.
    ///
    /// ```
    /// use switchyard_layers::fallback_tables::FallbackTables;
    /// let mut t = FallbackTables::default();
    /// assert!(!t.takes_filtered_answers(&["gpt-4o"]));
    /// t.default.push("claude".into());
    /// assert!(t.takes_filtered_answers(&["gpt-4o"]), "no content-policy table: the defaults take it");
    /// t.content_policy.insert("other".into(), vec!["claude".into()]);
    /// assert!(!t.takes_filtered_answers(&["gpt-4o"]), "a table without an entry for the group");
    /// assert!(t.takes_filtered_answers(&["other"]));
    /// ```
    pub fn takes_filtered_answers(&self, names: &[&str]) -> bool {
        if self.content_policy.values().any(|l| !l.is_empty()) {
            return entry(&self.content_policy, names).is_some();
        }
        !self.default.is_empty() || self.general.get("*").is_some_and(|l| !l.is_empty())
    }

    /// Whether no table has any entry (then no call can fall back unless its request brings a list).
    pub fn is_empty(&self) -> bool {
        self.general.values().all(Vec::is_empty)
            && self.context_window.values().all(Vec::is_empty)
            && self.content_policy.values().all(Vec::is_empty)
            && self.default.is_empty()
    }

    /// Every group name the tables mention (keys and targets), for validation.
    pub fn mentioned(&self) -> impl Iterator<Item = &str> {
        [&self.general, &self.context_window, &self.content_policy]
            .into_iter()
            .flat_map(|t| t.iter().flat_map(|(k, v)| std::iter::once(k).chain(v.iter())))
            .chain(self.default.iter())
            .map(String::as_str)
    }
}

/// The non-empty entry of `map` for `names`: an exact key first (for any of the names, in order),
/// then a key equal to one of them without its provider prefix.
pub(crate) fn entry<'m>(map: &'m BTreeMap<String, Vec<String>>, names: &[&str]) -> Option<&'m [String]> {
    let non_empty = |k: &str| map.get(k).filter(|l| !l.is_empty()).map(Vec::as_slice);
    names
        .iter()
        .find_map(|k| non_empty(k))
        .or_else(|| names.iter().filter_map(|k| strip_provider(k)).find_map(non_empty))
}

/// `openai/gpt-4o` -> `gpt-4o`; names without a prefix have nothing to strip. A wildcard group
/// (`openai/*`) does not strip to the catch-all `*`.
fn strip_provider(name: &str) -> Option<&str> {
    name.split_once('/').map(|(_, rest)| rest).filter(|rest| !rest.is_empty() && *rest != "*")
}

/// The list a fallback target came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FallbackTable {
    /// The group's own `fallbacks` entry (exact or provider-prefix-stripped key).
    General,
    /// `default_fallbacks` (or the `*` entry of `fallbacks`): the group has no own entry.
    Default,
    /// The request's own `fallbacks` list ([`RequestFacts::fallbacks`](crate::RequestFacts)).
    PerRequest,
    /// `context_window_fallbacks`: the prompt did not fit the group.
    ContextWindow,
    /// `content_policy_fallbacks`: a content filter refused.
    ContentPolicy,
}

impl FallbackTable {
    /// A short stable name for logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::General => "fallbacks",
            Self::Default => "default_fallbacks",
            Self::PerRequest => "request_fallbacks",
            Self::ContextWindow => "context_window_fallbacks",
            Self::ContentPolicy => "content_policy_fallbacks",
        }
    }
}

impl fmt::Display for FallbackTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a fallback layer tells the layers below it about the call, through the context
/// ([`RouteCtx::set_fallback_hint`](crate::RouteCtx::set_fallback_hint)): that it will take the
/// failures of the call's groups, reading these tables. The retry layer reads it to stop retrying
/// a failure a fallback will take (a context-window or content-policy error with an entry in its
/// table, a rate limit with nothing healthy left and a general fallback); without a hint it
/// assumes no fallback layer above.
///
/// Cheap to clone (one reference count); the [`FallbackLayer`](crate::fallback::FallbackLayer)
/// makes one when it is built and gives a clone to every call.
///
/// ```
/// use switchyard_layers::fallback_tables::{FallbackHint, FallbackTables};
///
/// let hint = FallbackHint::new(FallbackTables::default());
/// assert_eq!(hint.tables().max_fallbacks, FallbackTables::DEFAULT_MAX_FALLBACKS);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FallbackHint {
    tables: Arc<FallbackTables>,
}

impl FallbackHint {
    /// A hint that failures fall back through `tables` (and that at most
    /// [`max_fallbacks`](FallbackTables::max_fallbacks) hops are made in the call).
    pub fn new(tables: impl Into<Arc<FallbackTables>>) -> Self {
        Self { tables: tables.into() }
    }

    /// The tables the fallback layer reads.
    pub fn tables(&self) -> &FallbackTables {
        &self.tables
    }
}
