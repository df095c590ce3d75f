//! [`PreRouteLayer`]: the pre-router and the name it answers for.

use std::{fmt, sync::Arc};

use tower_layer::Layer;

use super::{PreRoute, PreRouters};

/// Applies [`PreRoute`]: requests for `name` (the router's own virtual model name, such as
/// `smart-router`) go to the group the pre-router `P` (a [`PreRouter`](super::PreRouter)) chooses. See the
/// [module docs](super).
pub struct PreRouteLayer<P> {
    pub(super) shared: Arc<Shared<P>>,
}

/// What every clone of the layer and its services share.
pub(super) struct Shared<P> {
    pub(super) name: Arc<str>,
    pub(super) router: P,
}

impl<P> PreRouteLayer<P> {
    /// Requests for `name` are routed by `router`; every other request passes through.
    pub fn new(name: impl Into<Arc<str>>, router: P) -> Self {
        Self { shared: Arc::new(Shared { name: name.into(), router }) }
    }

    /// The virtual model name the layer answers for (empty for a [`PreRouters`] set, which
    /// answers for each of its own names).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The pre-router.
    pub fn router(&self) -> &P {
        &self.shared.router
    }
}

impl PreRouteLayer<PreRouters> {
    /// Requests for any name of `routers` are routed by that name's pre-router; every other
    /// request passes through (all of them when the set is empty).
    pub fn set(routers: PreRouters) -> Self {
        Self::new("", routers)
    }
}

impl<P> Clone for PreRouteLayer<P> {
    fn clone(&self) -> Self {
        Self { shared: self.shared.clone() }
    }
}

impl<P: fmt::Debug> fmt::Debug for PreRouteLayer<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreRouteLayer").field("name", &self.shared.name).field("router", &self.shared.router).finish()
    }
}

impl<S, P> Layer<S> for PreRouteLayer<P> {
    type Service = PreRoute<S, P>;

    fn layer(&self, inner: S) -> Self::Service {
        PreRoute { inner, shared: self.shared.clone() }
    }
}
