use std::{fmt, sync::Arc};

use tower_layer::Layer;

use super::Continuation;

/// Asked before each continuation: may one more retry be made (a retry budget's withdrawal)?
pub(super) type RetryPermit = Arc<dyn Fn() -> bool + Send + Sync>;

/// The continuation layer's settings: off by default (LiteLLM's behaviour: a broken stream ends
/// with an error event).
///
/// ```
/// use switchyard_layers::continuation::ContinuationConfig;
///
/// let config = ContinuationConfig::enabled().max_continuations(2).max_partial_bytes(64 * 1024);
/// assert!(config.is_enabled());
/// assert!(!ContinuationConfig::default().is_enabled());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ContinuationConfig {
    /// Continue broken streams at all.
    pub enabled: bool,
    /// Most continuations of one call (each one a new routed call).
    pub max_continuations: u32,
    /// Most bytes of text sent to the client that a call keeps to ask for a continuation; a
    /// longer answer that breaks ends with the error event.
    pub max_partial_bytes: usize,
}

impl ContinuationConfig {
    /// The default number of continuations per call.
    pub const DEFAULT_MAX_CONTINUATIONS: u32 = 1;
    /// The default bound on the text kept per call (256 KiB).
    pub const DEFAULT_MAX_PARTIAL_BYTES: usize = 256 * 1024;

    /// Continuation on, with the default limits.
    pub fn enabled() -> Self {
        Self { enabled: true, ..Self::default() }
    }

    /// Whether streams are continued.
    pub fn is_enabled(&self) -> bool {
        self.enabled && self.max_continuations > 0
    }

    /// Most continuations of one call.
    pub fn max_continuations(mut self, n: u32) -> Self {
        self.max_continuations = n;
        self
    }

    /// Most bytes of text kept per call.
    pub fn max_partial_bytes(mut self, bytes: usize) -> Self {
        self.max_partial_bytes = bytes;
        self
    }
}

impl Default for ContinuationConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            max_continuations: Self::DEFAULT_MAX_CONTINUATIONS,
            max_partial_bytes: Self::DEFAULT_MAX_PARTIAL_BYTES,
        }
    }
}

/// Continues chat completion streams broken after their first content on another deployment;
/// see the [module docs](super).
#[derive(Clone, Default)]
pub struct ContinuationLayer {
    pub(super) config: Arc<ContinuationConfig>,
    pub(super) permit: Option<RetryPermit>,
}

impl fmt::Debug for ContinuationLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContinuationLayer")
            .field("config", &self.config)
            .field("retry_permit", &self.permit.is_some())
            .finish()
    }
}

impl ContinuationLayer {
    /// A layer with `config`.
    pub fn new(config: ContinuationConfig) -> Self {
        Self { config: Arc::new(config), permit: None }
    }

    /// Each continuation is a retry: `permit` is asked before each one, and none is made when it
    /// says no. `RoutingStack` passes the retry layer's budget (`move || budget.withdraw()`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use switchyard_layers::{continuation::{ContinuationConfig, ContinuationLayer}, retry::RetryBudget};
    ///
    /// let budget = Arc::new(RetryBudget::new(0.2, 10).expect("valid budget"));
    /// let layer = ContinuationLayer::new(ContinuationConfig::enabled()).retry_permit(move || budget.withdraw());
    /// # let _ = layer;
    /// ```
    pub fn retry_permit(mut self, permit: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.permit = Some(Arc::new(permit));
        self
    }

    /// The settings.
    pub fn config(&self) -> &ContinuationConfig {
        &self.config
    }
}

impl<S> Layer<S> for ContinuationLayer {
    type Service = Continuation<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Continuation { inner, config: self.config.clone(), permit: self.permit.clone() }
    }
}
