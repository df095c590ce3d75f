//! [`RoutingStack`]: every routing layer, wired once, in the default order or one by one.
//!
//! The layers share a few pieces that each would otherwise be given separately and kept in step
//! by hand: the [`Registry`] and the [`StateStore`] (every layer but the deadline's reads them),
//! the root seed (the select layer's picks and the retry layer's jitter draw from two different
//! streams of it), the call's one deadline (set by the outermost routing layer only) and the
//! fallback tables (the fallback layer puts them into each call's context as a
//! [`FallbackHint`](crate::fallback_tables::FallbackHint), which the retry layer reads). The
//! [builder](RoutingStack::builder) takes the registry and the store once and each layer's
//! settings, and hands back the wired layers:
//!
//! - as one [`Layer`], the default order (outermost first): [`CallSpanLayer`], [`DeadlineLayer`],
//!   [`PreRouteLayer`] (a pass-through unless pre-routers were given: the config's
//!   `auto_router/...` entries, or yours with [`pre_router`](RoutingStackBuilder::pre_router)),
//!   [`ContinuationLayer`] (a pass-through unless [`continuation`](RoutingStackBuilder::continuation)
//!   turns it on), [`FallbackLayer`], [`RetryLayer`], [`HealthLayer`], [`CooldownLayer`], [`PreCallLayer`],
//!   [`SelectLayer`] (the health layer passes calls through unless
//!   [`health`](RoutingStackBuilder::health) turns it on);
//! - or as the [`RoutingStack`]'s public fields, to stack by hand with your own layers in between.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use std::{sync::Arc, time::Duration};
//! use bytes::Bytes;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//! use switchyard_layers::{
//!     BoxError, Deployment, Registry, RouteBody, RouteCtx, RouteRequest, StateStore,
//!     fallback::FallbackConfig, retry::RetryConfig, select::RoutingStrategy, stack::RoutingStack,
//! };
//!
//! let registry = Arc::new(Registry::new());
//! registry.add(Deployment::builder("gpt-4o", "openai/gpt-4o").build()?)?;
//! registry.add(Deployment::builder("gpt-4o-mini", "openai/gpt-4o-mini").build()?)?;
//! let store = Arc::new(StateStore::memory());
//! let provider = service_fn(|req: http::Request<Bytes>| async move {
//!     let model = req.route_ctx().and_then(|c| c.selected.as_ref()).map(|d| d.model.to_string());
//!     Ok::<_, BoxError>(http::Response::new(RouteBody::from(model.unwrap_or_default())))
//! });
//!
//! // The default order, in one layer.
//! let stack = RoutingStack::builder(registry.clone(), store.clone())
//!     .strategies(RoutingStrategy::LeastBusy)
//!     .seed(7)
//!     .deadline(Duration::from_secs(120))
//!     .retry(RetryConfig::default().num_retries(3))
//!     .fallback(FallbackConfig::new().fallbacks("gpt-4o", ["gpt-4o-mini"]))
//!     .build();
//! let service = ServiceBuilder::new().layer(stack.clone()).service(provider.clone());
//!
//! let mut req = http::Request::new(Bytes::new());
//! req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
//! service.oneshot(req).await?;
//!
//! // The same layers one by one, with room for yours between any two of them.
//! let RoutingStack { call_span, deadline, preroute, continuation, fallback, retry, cooldown, precall, select, .. } = stack;
//! let by_hand = ServiceBuilder::new()
//!     .layer(call_span)
//!     .layer(deadline)
//!     .layer(preroute)
//!     .layer(continuation)
//!     .layer(fallback)
//!     .layer(retry)
//!     // .layer(your_layer)
//!     .layer(cooldown)
//!     .layer(precall)
//!     .layer(select)
//!     .service(provider);
//! # let _ = by_hand;
//! # Ok(()) }
//! ```

use std::{fmt, sync::Arc, time::Duration};

use tower_layer::Layer;

use crate::{
    Registry, StateStore,
    continuation::{Continuation, ContinuationConfig, ContinuationLayer},
    cooldown::{Cooldown, CooldownConfig, CooldownLayer},
    deadline::{Deadline, DeadlineLayer},
    fallback::{Fallback, FallbackConfig, FallbackEvent, FallbackLayer},
    health::{Health, HealthConfig, HealthLayer},
    precall::{PreCall, PreCallConfig, PreCallLayer},
    preroute::{PreRoute, PreRouteLayer, PreRouter, PreRouters},
    retry::{Retry, RetryConfig, RetryLayer},
    select::{RoutingStrategy, Select, SelectLayer, Strategies},
    span::{CallSpan, CallSpanLayer},
};

/// The service [`RoutingStack`] builds around a provider `S`: the default order, outermost first.
pub type RoutingService<S> =
    CallSpan<Deadline<PreRoute<Continuation<Fallback<Retry<Health<Cooldown<PreCall<Select<S>>>>>>>, PreRouters>>>;

/// Receives the fallback layer's events.
type FallbackHook = Arc<dyn Fn(&FallbackEvent) + Send + Sync>;

/// Every routing layer, wired to one registry, one store, one seed and one deadline; see the
/// [module docs](self).
///
/// As a [`Layer`] it stacks the layers in the default order (what `Router::from_config` of the
/// `switchyard` crate runs). Its fields are the same layers, to stack by hand: destructure them
/// (`let RoutingStack { deadline, fallback, .. } = stack;`) and put your own layers between them.
/// A layer left out keeps its contract with the others: without the deadline layer a call has
/// the deadline its caller set (or none), without the fallback layer the retry layer retries
/// every failure its policy allows.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RoutingStack {
    /// The `call` span around the whole call (outermost).
    pub call_span: CallSpanLayer,
    /// Sets the call's one deadline, when configured.
    pub deadline: DeadlineLayer,
    /// Moves a request for a pre-router's virtual name to the group it picks (outermost of the
    /// routing layers); passes every request through when no pre-router was given.
    pub preroute: PreRouteLayer<PreRouters>,
    /// Continues a chat completion stream broken after its first text on another deployment
    /// (off unless [`continuation`](RoutingStackBuilder::continuation) turns it on).
    pub continuation: ContinuationLayer,
    /// Moves a failed call to other model groups; gives the layers below its tables.
    pub fallback: FallbackLayer,
    /// Retries within the model group.
    pub retry: RetryLayer,
    /// Drops the candidates a fresh health probe found unhealthy (off unless configured).
    pub health: HealthLayer,
    /// Drops the candidates cooling down; benches deployments after failed attempts.
    pub cooldown: CooldownLayer,
    /// Drops the candidates an attempt cannot use (limits, tags, context window, budgets, ...).
    pub precall: PreCallLayer,
    /// Picks the deployment of each attempt and reserves its limits (innermost).
    pub select: SelectLayer,
}

impl RoutingStack {
    /// A builder over `registry`'s groups with state in `store`. Every setting starts at its
    /// layer's default (LiteLLM's): `simple-shuffle`, 2 retries, no fallback tables, no deadline,
    /// LiteLLM's cooldown rules, the pre-call checks that always apply, randomness from the OS.
    pub fn builder(registry: Arc<Registry>, store: Arc<StateStore>) -> RoutingStackBuilder {
        RoutingStackBuilder {
            registry,
            store,
            strategies: RoutingStrategy::SimpleShuffle.into(),
            seed: None,
            deadline: None,
            fallback: FallbackConfig::new(),
            on_fallback: None,
            retry: RetryConfig::default(),
            health: HealthConfig::disabled(),
            cooldown: CooldownConfig::default(),
            precall: PreCallConfig::new(),
            pre_routers: PreRouters::new(),
            continuation: ContinuationConfig::default(),
        }
    }
}

impl<S: Clone> Layer<S> for RoutingStack {
    type Service = RoutingService<S>;

    fn layer(&self, provider: S) -> Self::Service {
        let select = self.select.layer(provider);
        let precall = self.precall.layer(select);
        let cooldown = self.cooldown.layer(precall);
        let health = self.health.layer(cooldown);
        let retry = self.retry.layer(health);
        let fallback = self.fallback.layer(retry);
        let continuation = self.continuation.layer(fallback);
        let preroute = self.preroute.layer(continuation);
        let deadline = self.deadline.layer(preroute);
        self.call_span.layer(deadline)
    }
}

/// Builds a [`RoutingStack`]; see [`RoutingStack::builder`].
#[must_use = "a builder does nothing until `build` is called"]
pub struct RoutingStackBuilder {
    registry: Arc<Registry>,
    store: Arc<StateStore>,
    strategies: Strategies,
    seed: Option<u64>,
    deadline: Option<Duration>,
    fallback: FallbackConfig,
    on_fallback: Option<FallbackHook>,
    retry: RetryConfig,
    health: HealthConfig,
    cooldown: CooldownConfig,
    precall: PreCallConfig,
    pre_routers: PreRouters,
    continuation: ContinuationConfig,
}

impl fmt::Debug for RoutingStackBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RoutingStackBuilder")
            .field("strategies", &self.strategies)
            .field("seed", &self.seed)
            .field("deadline", &self.deadline)
            .field("fallback", &self.fallback)
            .field("retry", &self.retry)
            .field("precall", &self.precall)
            .field("pre_routers", &self.pre_routers)
            .finish_non_exhaustive()
    }
}

impl RoutingStackBuilder {
    /// The routing strategies: one for every group (a [`RoutingStrategy`] or a built strategy),
    /// or per group ([`Strategies::with_group`]).
    pub fn strategies(mut self, strategies: impl Into<Strategies>) -> Self {
        self.strategies = strategies.into();
        self
    }

    /// Makes every random draw reproducible from `seed`: the select layer's picks and the retry
    /// layer's backoff jitter, each from its own stream (for tests, benchmarks and simulations).
    /// Without it both are seeded from the OS.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The whole call's time budget, retries, waits and fallback hops included; the deadline
    /// layer sets it on calls that arrive without a deadline. `None` (the default) sets none.
    pub fn deadline(mut self, budget: impl Into<Option<Duration>>) -> Self {
        self.deadline = budget.into();
        self
    }

    /// The fallback tables and the hop bound; the retry layer sees the tables through the call's
    /// context, so they are given once, here.
    pub fn fallback(mut self, config: impl Into<FallbackConfig>) -> Self {
        self.fallback = config.into();
        self
    }

    /// Calls `hook` for every fallback event (hop, skipped target, success, failure); see
    /// [`FallbackLayer::on_event`].
    pub fn on_fallback(mut self, hook: impl Fn(&FallbackEvent) + Send + Sync + 'static) -> Self {
        self.on_fallback = Some(Arc::new(hook));
        self
    }

    /// The retry settings.
    pub fn retry(mut self, config: RetryConfig) -> Self {
        self.retry = config;
        self
    }

    /// The health filter's settings (health-check routing; off by default).
    pub fn health(mut self, config: HealthConfig) -> Self {
        self.health = config;
        self
    }

    /// The cooldown settings (with their event hook, if any).
    pub fn cooldown(mut self, config: CooldownConfig) -> Self {
        self.cooldown = config;
        self
    }

    /// The pre-call settings.
    pub fn precall(mut self, config: PreCallConfig) -> Self {
        self.precall = config;
        self
    }

    /// Routes requests for the virtual model name `name` with `router` (the pre-route layer,
    /// above the fallback layer): the group it picks is routed as if the client had asked for
    /// it. One router per name; a second one for the same name replaces the first.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use switchyard_layers::{Registry, StateStore, ctx::PreRouteDecision, preroute::PreRouteInput, stack::RoutingStack};
    ///
    /// let by_stream = |input: &PreRouteInput<'_>| {
    ///     Some(PreRouteDecision::new(if input.facts().stream { "fast" } else { "big" }, "stream flag"))
    /// };
    /// let stack = RoutingStack::builder(Arc::new(Registry::new()), Arc::new(StateStore::memory()))
    ///     .pre_router("auto", by_stream)
    ///     .build();
    /// assert_eq!(stack.preroute.router().names().collect::<Vec<_>>(), ["auto"]);
    /// ```
    pub fn pre_router(mut self, name: impl Into<Arc<str>>, router: impl PreRouter) -> Self {
        self.pre_routers.insert(name, Arc::new(router));
        self
    }

    /// Mid-stream continuation of chat completion streams (off by default); each continuation
    /// withdraws from the retry layer's budget, when it has one.
    pub fn continuation(mut self, config: ContinuationConfig) -> Self {
        self.continuation = config;
        self
    }

    /// Replaces the pre-routers with `routers`.
    pub fn pre_routers(mut self, routers: PreRouters) -> Self {
        self.pre_routers = routers;
        self
    }

    /// Wires the layers.
    pub fn build(self) -> RoutingStack {
        let Self {
            registry,
            store,
            strategies,
            seed,
            deadline,
            fallback,
            on_fallback,
            retry,
            health,
            cooldown,
            precall,
            pre_routers,
            continuation,
        } = self;
        let mut continuation = ContinuationLayer::new(continuation);
        if let Some(budget) = retry.budget.clone() {
            // A continuation is a retry: it spends from the retry layer's budget.
            continuation = continuation.retry_permit(move || budget.withdraw());
        }
        // `enforce_rate_limits` is one setting: the pre-call filter and the select layer's
        // reservation (which holds without a pre-call layer too).
        let mut select = SelectLayer::new(registry.clone(), store.clone(), strategies)
            .enforce_rate_limits(precall.enforce_rate_limits);
        let mut retry = RetryLayer::new(registry.clone(), store.clone(), retry);
        if let Some(seed) = seed {
            // Two streams of one root: the picks and the jitter must not repeat each other.
            select = select.with_seed(seed);
            retry = retry.with_seed(seed.wrapping_add(1));
        }
        let mut fallback = FallbackLayer::new(registry.clone(), fallback);
        if let Some(hook) = on_fallback {
            fallback = fallback.on_event(move |e| hook(e));
        }
        RoutingStack {
            call_span: CallSpanLayer::new(),
            deadline: DeadlineLayer::optional(deadline),
            preroute: PreRouteLayer::set(pre_routers),
            continuation,
            fallback,
            retry,
            health: HealthLayer::new(registry.clone(), store.clone(), health),
            cooldown: CooldownLayer::new(registry.clone(), store.clone(), cooldown),
            precall: PreCallLayer::new(registry, store, precall),
            select,
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::BoxError;

    #[test]
    fn the_stack_and_its_service_are_embeddable() {
        crate::assert_embeddable::<RoutingStack>();
        crate::assert_embeddable::<
            RoutingService<
                tower::util::BoxCloneSyncService<http::Request<Bytes>, http::Response<crate::RouteBody>, BoxError>,
            >,
        >();
    }
}
