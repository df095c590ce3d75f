use std::{
    fmt,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use tower_layer::Layer;

use super::{Fallback, FallbackEvent, FallbackTables, event::EventHook};
use crate::Registry;

/// Configuration of the [`FallbackLayer`]: the tables, the hop bound and the call's deadline.
///
/// The default has no tables (so the layer only attaches the trail to errors), `max_fallbacks` 5
/// and no deadline.
///
/// ```
/// use std::time::Duration;
/// use switchyard_layers::fallback::FallbackConfig;
///
/// let config = FallbackConfig::new()
///     .fallbacks("gpt-4o", ["gpt-4o-mini", "claude"])
///     .context_window_fallbacks("gpt-4o", ["gpt-4o-128k"])
///     .default_fallbacks(["gpt-4o-mini"])
///     .max_fallbacks(3)
///     .deadline(Duration::from_secs(60));
/// assert_eq!(config.tables.general_for("other"), ["gpt-4o-mini".to_owned()]);
/// assert_eq!(config.tables.max_fallbacks, 3);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FallbackConfig {
    /// The fallback tables and `max_fallbacks` (what the config reader fills).
    pub tables: FallbackTables,
    /// The whole call's time budget, set as [`RouteCtx::deadline`](crate::RouteCtx) when the
    /// request has none: retries, backoffs and fallbacks all share it.
    pub deadline: Option<Duration>,
    /// Keep no copy of the request: take the one the [`RetryLayer`](crate::retry::RetryLayer)
    /// directly below keeps for its retries, which it hands back through the call's shared state
    /// when it gives up. One copy per call instead of two. Set it only when a retry layer sits
    /// below with no layer between that changes the request (the hops would start from the
    /// request as the retry layer saw it) or cancels the retry layer's future before it gives up,
    /// and no other fallback layer between; a call whose first group fails without a copy handed
    /// back cannot fall back (the layer warns once). The default router sets it. Off by default.
    pub replay_via_retry: bool,
}

impl FallbackConfig {
    /// No tables, `max_fallbacks` 5, no deadline.
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

    /// Sets the call's deadline: `now + budget` when a call arrives without one.
    pub fn deadline(mut self, budget: Duration) -> Self {
        self.deadline = Some(budget);
        self
    }

    /// Sets [`replay_via_retry`](Self::replay_via_retry): the hops start from the copy of the
    /// request the retry layer directly below keeps, instead of a copy of this layer's own.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use switchyard_layers::{Registry, StateStore, fallback::{FallbackConfig, FallbackLayer}};
    /// use switchyard_layers::retry::{RetryConfig, RetryLayer};
    ///
    /// let (registry, store) = (Arc::new(Registry::new()), Arc::new(StateStore::memory()));
    /// let config = FallbackConfig::new().fallbacks("gpt-4o", ["gpt-4o-mini"]).replay_via_retry(true);
    /// let stack = tower::ServiceBuilder::new()
    ///     .layer(FallbackLayer::new(registry.clone(), config))
    ///     .layer(RetryLayer::new(registry, store, RetryConfig::default())); // directly below
    /// # let _ = stack;
    /// ```
    pub fn replay_via_retry(mut self, on: bool) -> Self {
        self.replay_via_retry = on;
        self
    }
}

impl From<FallbackTables> for FallbackConfig {
    fn from(tables: FallbackTables) -> Self {
        Self { tables, deadline: None, replay_via_retry: false }
    }
}

/// Applies [`Fallback`]: moves a failed call to other model groups. See the
/// [module docs](super).
#[derive(Clone)]
pub struct FallbackLayer {
    pub(crate) shared: Arc<Shared>,
}

/// What every service built by one layer shares.
pub(crate) struct Shared {
    pub(crate) registry: Arc<Registry>,
    pub(crate) config: FallbackConfig,
    pub(crate) on_event: Option<EventHook>,
    /// A call under `replay_via_retry` found no copy handed back (warned once).
    no_copy: AtomicBool,
}

impl Clone for Shared {
    fn clone(&self) -> Self {
        let Shared { registry, config, on_event, no_copy } = self;
        Self {
            registry: registry.clone(),
            config: config.clone(),
            on_event: on_event.clone(),
            no_copy: AtomicBool::new(no_copy.load(Ordering::Relaxed)),
        }
    }
}

impl Shared {
    /// Notes a call under `replay_via_retry` whose first group failed without a retry layer below
    /// handing its copy of the request back: it cannot fall back. Warns the first time.
    pub(crate) fn no_copy_came_back(&self) {
        if !self.no_copy.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "fallback: replay_via_retry is set but no retry layer directly below handed a copy of the request back \
                 (or the request cannot be copied); such calls cannot fall back"
            );
        }
    }

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
        Self { shared: Arc::new(Shared { registry, config, on_event: None, no_copy: AtomicBool::new(false) }) }
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
