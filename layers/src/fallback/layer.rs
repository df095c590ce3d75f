use std::{fmt, sync::Arc};

use tower_layer::Layer;

use super::{Fallback, FallbackEvent, FallbackTables, event::EventHook};
use crate::{Registry, fallback_tables::FallbackHint};

/// Configuration of the [`FallbackLayer`]: the tables and the hop bound.
///
/// The default has no tables (so the layer only attaches the trail to errors) and
/// `max_fallbacks` 5. The call's deadline is the
/// [`DeadlineLayer`](crate::deadline::DeadlineLayer)'s (or the caller's), read from the context.
///
/// ```
/// use switchyard_layers::fallback::FallbackConfig;
///
/// let config = FallbackConfig::new()
///     .fallbacks("gpt-4o", ["gpt-4o-mini", "claude"])
///     .context_window_fallbacks("gpt-4o", ["gpt-4o-128k"])
///     .default_fallbacks(["gpt-4o-mini"])
///     .max_fallbacks(3);
/// assert_eq!(config.tables.general_for("other"), ["gpt-4o-mini".to_owned()]);
/// assert_eq!(config.tables.max_fallbacks, 3);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FallbackConfig {
    /// The fallback tables and `max_fallbacks` (what the config reader fills).
    pub tables: FallbackTables,
}

impl FallbackConfig {
    /// No tables, `max_fallbacks` 5.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the tables (and with them `max_fallbacks`).
    pub fn tables(mut self, tables: FallbackTables) -> Self {
        self.tables = tables;
        self
    }

    /// `fallbacks`: after any failure of `group`, try `targets` in order.
    pub fn fallbacks<I, T>(mut self, group: impl Into<String>, targets: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.tables.general.insert(group.into(), targets.into_iter().map(Into::into).collect());
        self
    }

    /// `context_window_fallbacks`: when the prompt does not fit `group`, try `targets` in order.
    pub fn context_window_fallbacks<I, T>(mut self, group: impl Into<String>, targets: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.tables.context_window.insert(group.into(), targets.into_iter().map(Into::into).collect());
        self
    }

    /// `content_policy_fallbacks`: when a content filter refused in `group`, try `targets` in order.
    pub fn content_policy_fallbacks<I, T>(mut self, group: impl Into<String>, targets: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.tables.content_policy.insert(group.into(), targets.into_iter().map(Into::into).collect());
        self
    }

    /// `default_fallbacks`: for a failed group with no `fallbacks` entry of its own.
    pub fn default_fallbacks<I, T>(mut self, targets: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.tables.default = targets.into_iter().map(Into::into).collect();
        self
    }

    /// `max_fallbacks`: hops per call, in total (not nesting depth). 0 disables fallbacks.
    pub fn max_fallbacks(mut self, n: u32) -> Self {
        self.tables.max_fallbacks = n;
        self
    }
}

impl From<FallbackTables> for FallbackConfig {
    fn from(tables: FallbackTables) -> Self {
        Self { tables }
    }
}

/// Applies [`Fallback`]: moves a failed call to other model groups. See the
/// [module docs](super).
#[derive(Clone)]
pub struct FallbackLayer {
    pub(crate) shared: Arc<FallbackSetup>,
}

/// The layer's settings, the registry it resolves table names in, the tables as the layers below
/// read them and the event hook, shared by every service built by one layer.
#[derive(Clone)]
pub(crate) struct FallbackSetup {
    pub(crate) registry: Arc<Registry>,
    pub(crate) config: FallbackConfig,
    /// The tables as the layers below read them: a clone per call into the context.
    pub(crate) hint: FallbackHint,
    pub(crate) on_event: Option<EventHook>,
}

impl FallbackSetup {
    pub(crate) fn emit(&self, event: FallbackEvent) {
        if let Some(hook) = &self.on_event {
            hook(&event);
        }
    }
}

impl fmt::Debug for FallbackLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FallbackLayer")
            .field("config", &self.shared.config)
            .field("on_event", &self.shared.on_event.is_some())
            .finish_non_exhaustive()
    }
}

impl FallbackLayer {
    /// Fallbacks over `registry`'s groups (used to resolve table names, so an alias of a group
    /// already tried is not tried again) with `config`.
    pub fn new(registry: Arc<Registry>, config: FallbackConfig) -> Self {
        let hint = FallbackHint::new(config.tables.clone());
        Self { shared: Arc::new(FallbackSetup { registry, config, hint, on_event: None }) }
    }

    /// Calls `hook` on every hop, skipped target, and on the success or failure of a call that
    /// made at least one hop. The hook runs on the request's task: keep it cheap.
    pub fn on_event(self, hook: impl Fn(&FallbackEvent) + Send + Sync + 'static) -> Self {
        let mut shared = Arc::unwrap_or_clone(self.shared);
        shared.on_event = Some(Arc::new(hook));
        Self { shared: Arc::new(shared) }
    }

    /// The configuration.
    pub fn config(&self) -> &FallbackConfig {
        &self.shared.config
    }
}

impl<S: Clone> Layer<S> for FallbackLayer {
    type Service = Fallback<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Fallback::new(inner, self.shared.clone())
    }
}
