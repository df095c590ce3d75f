//! Fallback tables: which model groups serve when a whole group fails.
//!
//! This release validates and holds the tables (`fallbacks`, `context_window_fallbacks`,
//! `content_policy_fallbacks`, `default_fallbacks`); the fallback layer that walks them arrives
//! with the resilience layers.
//!
//! ```
//! use switchyard_layers::fallback::FallbackTables;
//! let mut t = FallbackTables::default();
//! t.general.insert("gpt-4o".into(), vec!["gpt-4o-mini".into()]);
//! t.default.push("claude".into());
//! assert_eq!(t.general_for("gpt-4o"), ["gpt-4o-mini".to_owned()]);
//! assert_eq!(t.general_for("other"), ["claude".to_owned()]);
//! ```

use std::collections::BTreeMap;

/// The fallback tables of a router.
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

    /// Every group name the tables mention (keys and targets), for validation.
    pub fn mentioned(&self) -> impl Iterator<Item = &str> {
        [&self.general, &self.context_window, &self.content_policy]
            .into_iter()
            .flat_map(|t| t.iter().flat_map(|(k, v)| std::iter::once(k).chain(v.iter())))
            .chain(self.default.iter())
            .map(String::as_str)
    }
}
