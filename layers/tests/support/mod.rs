//! Shared fixtures for the select and registry behaviour tests: deployments, a stack of the real
//! `SelectLayer` over a tiny provider, and ways to count who served what.
#![allow(dead_code)]

use std::{collections::BTreeMap, sync::Arc};

use bytes::Bytes;
use switchyard_layers::{
    BoxError, Deployment, DeploymentBuilder, Registry, RouteBody, RouteCtx, RouteError, RouteErrorKind, RouteRequest,
    Served, StateStore,
    select::{SelectLayer, Strategies},
};
use tokio::sync::{mpsc, watch};
use tower::{Service, ServiceBuilder, ServiceExt, service_fn};

pub(crate) type Req = http::Request<Bytes>;
pub(crate) type Resp = http::Response<RouteBody>;

/// The seed every test router uses, so each run makes the same picks.
pub(crate) const SEED: u64 = 0x5EED_CAFE;

/// A deployment of `group` with id `id` and provider model `openai/{id}`.
pub(crate) fn dep(group: &str, id: &str) -> DeploymentBuilder {
    Deployment::builder(group, format!("openai/{id}")).id(id)
}

/// A registry holding `deployments`, in order.
pub(crate) fn registry(deployments: impl IntoIterator<Item = DeploymentBuilder>) -> Arc<Registry> {
    let list = deployments.into_iter().map(|b| b.build().expect("valid deployment"));
    Arc::new(Registry::with_deployments(list).expect("distinct ids"))
}

/// A seeded select layer.
pub(crate) fn select(
    registry: &Arc<Registry>,
    store: &Arc<StateStore>,
    strategies: impl Into<Strategies>,
) -> SelectLayer {
    SelectLayer::new(registry.clone(), store.clone(), strategies).with_seed(SEED)
}

/// The id of the deployment the select layer chose for `req`.
pub(crate) fn selected_id(req: &Req) -> String {
    req.route_ctx()
        .and_then(|c| c.selected.as_ref())
        .map(|d| d.id.to_string())
        .expect("select layer chose a deployment")
}

/// A provider that answers at once with the id of the deployment it was sent to.
pub(crate) fn echo() -> impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + Send + 'static {
    service_fn(|req: Req| async move { Ok::<_, BoxError>(http::Response::new(RouteBody::from(selected_id(&req)))) })
}

/// The real select layer over `provider`.
pub(crate) fn stack<P>(layer: SelectLayer, provider: P) -> switchyard_layers::select::Select<P> {
    ServiceBuilder::new().layer(layer).service(provider)
}

/// A request for `model`.
pub(crate) fn request(model: &str) -> Req {
    with_ctx(RouteCtx::new(model))
}

/// A request carrying `ctx`.
pub(crate) fn with_ctx(ctx: RouteCtx) -> Req {
    let mut req = http::Request::new(Bytes::from_static(b"{}"));
    req.extensions_mut().insert(ctx);
    req
}

/// Sends `req` through `svc` (waiting for readiness first, as tower requires).
pub(crate) async fn call<S>(svc: &mut S, req: Req) -> Result<Resp, BoxError>
where
    S: Service<Req, Response = Resp, Error = BoxError>,
{
    svc.ready().await?.call(req).await
}

/// The `Served` facts of a response.
pub(crate) fn served(resp: &Resp) -> &Served {
    resp.extensions().get::<Served>().expect("the select layer inserts Served")
}

/// Sends one request for `model` and returns the id of the deployment that served it.
pub(crate) async fn serve<S>(svc: &mut S, model: &str) -> String
where
    S: Service<Req, Response = Resp, Error = BoxError>,
{
    let resp = call(svc, request(model)).await.expect("served");
    served(&resp).deployment.to_string()
}

/// Sends `n` requests for `model`, one after another, and counts the serving deployments.
pub(crate) async fn tally<S>(svc: &mut S, model: &str, n: usize) -> BTreeMap<String, usize>
where
    S: Service<Req, Response = Resp, Error = BoxError>,
{
    let mut counts = BTreeMap::new();
    for _ in 0..n {
        *counts.entry(serve(svc, model).await).or_default() += 1;
    }
    counts
}

/// How many times `id` served in `counts`.
pub(crate) fn count(counts: &BTreeMap<String, usize>, id: &str) -> usize {
    counts.get(id).copied().unwrap_or(0)
}

/// The routing error inside a layer's error, with its kind checked.
pub(crate) fn route_error(err: &BoxError, kind: RouteErrorKind) -> &RouteError {
    let route = RouteError::find(&**err).unwrap_or_else(|| panic!("not a routing error: {err}"));
    assert_eq!(route.kind(), kind, "{route:?}");
    route
}

/// Marks a request the [`gated`] provider parks until the test opens the gate.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Park;

/// A request for `model` that the [`gated`] provider parks.
pub(crate) fn parked_request(model: &str) -> Req {
    let mut req = request(model);
    req.extensions_mut().insert(Park);
    req
}

/// The test's side of a [`gated`] provider.
pub(crate) struct Gate {
    /// Send `true` to let every parked request (and any later one) through.
    pub(crate) open: watch::Sender<bool>,
    /// The deployment of each request as it parks.
    pub(crate) entered: mpsc::UnboundedReceiver<String>,
}

/// A provider that parks requests marked [`Park`] until the gate opens, reporting each one as it
/// parks, and answers the others at once; every answer is the id of the deployment it was sent to.
pub(crate) fn gated()
-> (Gate, impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + Send + 'static) {
    let (open, gate) = watch::channel(false);
    let (entered_tx, entered) = mpsc::unbounded_channel();
    let provider = service_fn(move |req: Req| {
        let mut gate = gate.clone();
        let entered_tx = entered_tx.clone();
        async move {
            let id = selected_id(&req);
            if req.extensions().get::<Park>().is_some() {
                entered_tx.send(id.clone()).expect("test alive");
                gate.wait_for(|open| *open).await.expect("gate kept");
            }
            Ok::<_, BoxError>(http::Response::new(RouteBody::from(id)))
        }
    });
    (Gate { open, entered }, provider)
}
