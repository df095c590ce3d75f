//! Sticky routing in the pre-call layer: a session (or a caller key) keeps the deployment that
//! served it while that deployment can serve, and falls back to the strategy when it cannot
//! (census §1.21).

mod support;

use std::{collections::BTreeSet, sync::Arc, time::Duration};

use support::*;
use switchyard_layers::{
    ApiKey, BoxError, DeploymentId, Registry, RequestFacts, RouteCtx, StateStore,
    cooldown::{CooldownConfig, CooldownLayer},
    precall::{AffinityConfig, PreCallConfig, PreCallLayer},
    select::RoutingStrategy,
};
use tokio::time::advance;
use tower::{Service, ServiceBuilder};

const TTL: Duration = Duration::from_secs(600);

fn four() -> Arc<Registry> {
    registry([dep("g", "d1"), dep("g", "d2"), dep("g", "d3"), dep("g", "d4")])
}

/// Cooldown over pre-call (with affinity) over select (simple-shuffle) over the echo provider.
fn rig(
    reg: &Arc<Registry>,
    store: &Arc<StateStore>,
    affinity: Option<AffinityConfig>,
) -> impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + Send + 'static {
    ServiceBuilder::new()
        .layer(CooldownLayer::new(reg.clone(), store.clone(), CooldownConfig::default()))
        .layer(PreCallLayer::new(reg.clone(), store.clone(), PreCallConfig::new().affinity(affinity)))
        .layer(select(reg, store, RoutingStrategy::SimpleShuffle))
        .service(echo())
}

fn sticky() -> Option<AffinityConfig> {
    Some(AffinityConfig::new().ttl(TTL))
}

fn in_session(session: &str) -> Req {
    with_ctx(RouteCtx::with_facts("g", RequestFacts::new().session(Some(session.to_owned()))))
}

async fn serve_session<S>(svc: &mut S, session: &str) -> String
where
    S: Service<Req, Response = Resp, Error = BoxError>,
{
    let resp = call(svc, in_session(session)).await.expect("served");
    served(&resp).deployment.to_string()
}

/// Who served `n` requests of `session`.
async fn servers<S>(svc: &mut S, session: &str, n: usize) -> BTreeSet<String>
where
    S: Service<Req, Response = Resp, Error = BoxError>,
{
    let mut seen = BTreeSet::new();
    for _ in 0..n {
        seen.insert(serve_session(svc, session).await);
    }
    seen
}

#[tokio::test(start_paused = true)]
async fn one_session_sticks_to_one_deployment() {
    let reg = four();
    let store = Arc::new(StateStore::memory());
    let mut svc = rig(&reg, &store, sticky());
    assert_eq!(servers(&mut svc, "s1", 50).await.len(), 1);

    // Without affinity the same 50 requests spread.
    let mut plain = rig(&reg, &Arc::new(StateStore::memory()), None);
    assert!(servers(&mut plain, "s1", 50).await.len() > 1);
}

#[tokio::test(start_paused = true)]
async fn different_sessions_spread() {
    let reg = four();
    let store = Arc::new(StateStore::memory());
    let mut svc = rig(&reg, &store, sticky());
    let mut firsts = BTreeSet::new();
    for i in 0..40 {
        let session = format!("s{i}");
        let first = serve_session(&mut svc, &session).await;
        assert_eq!(serve_session(&mut svc, &session).await, first, "{session} sticks");
        firsts.insert(first);
    }
    assert_eq!(firsts.len(), 4, "{firsts:?}");
}

#[tokio::test(start_paused = true)]
async fn a_cooling_down_sticky_deployment_gives_way_and_the_session_sticks_to_the_new_one() {
    let reg = four();
    let store = Arc::new(StateStore::memory());
    let mut svc = rig(&reg, &store, sticky());
    let first = serve_session(&mut svc, "s").await;

    store.bench(&DeploymentId::from(first.as_str()), Duration::from_secs(30), "429".into(), Some(429), None).await;
    let second = serve_session(&mut svc, "s").await;
    assert_ne!(second, first);
    advance(Duration::from_secs(31)).await;
    // The first is back, but the session now sticks to the one that served it last.
    assert_eq!(servers(&mut svc, "s", 20).await, BTreeSet::from([second]));
}

#[tokio::test(start_paused = true)]
async fn a_removed_or_blocked_sticky_deployment_gives_way() {
    let reg = four();
    let store = Arc::new(StateStore::memory());
    let mut svc = rig(&reg, &store, sticky());

    let first = serve_session(&mut svc, "s").await;
    reg.remove(&DeploymentId::from(first.as_str())).expect("known");
    let second = serve_session(&mut svc, "s").await;
    assert_ne!(second, first);
    assert_eq!(servers(&mut svc, "s", 10).await, BTreeSet::from([second.clone()]));

    let blocked = reg.deployment(&DeploymentId::from(second.as_str())).expect("known").to_builder().blocked(true);
    reg.upsert(blocked.build().unwrap()).unwrap();
    let third = serve_session(&mut svc, "s").await;
    assert!(third != first && third != second);
    assert_eq!(servers(&mut svc, "s", 10).await, BTreeSet::from([third]));
}

#[tokio::test(start_paused = true)]
async fn affinity_expires_after_its_ttl_without_use() {
    let reg = four();
    let store = Arc::new(StateStore::memory());
    let mut svc = rig(&reg, &store, sticky());
    let first = serve_session(&mut svc, "s").await;
    let key = "session:g:s";
    assert_eq!(store.affinity(key).await, Some(DeploymentId::from(first.as_str())));

    // Each use refreshes the TTL.
    advance(TTL - Duration::from_secs(1)).await;
    assert_eq!(serve_session(&mut svc, "s").await, first);
    advance(TTL - Duration::from_secs(1)).await;
    assert_eq!(store.affinity(key).await, Some(DeploymentId::from(first.as_str())));
    advance(Duration::from_secs(1)).await;
    assert_eq!(store.affinity(key).await, None, "expired");

    // After expiry the strategy picks again (the next pick sticks anew).
    let next = serve_session(&mut svc, "s").await;
    assert_eq!(store.affinity(key).await, Some(DeploymentId::from(next.as_str())));
}

#[tokio::test(start_paused = true)]
async fn a_request_without_session_is_routed_normally() {
    let reg = four();
    let store = Arc::new(StateStore::memory());
    let mut svc = rig(&reg, &store, sticky());
    let counts = tally(&mut svc, "g", 50).await;
    assert!(counts.len() > 1, "{counts:?}");
}

#[tokio::test(start_paused = true)]
async fn caller_keys_stick_when_enabled() {
    let reg = four();
    let store = Arc::new(StateStore::memory());
    let mut svc = rig(&reg, &store, Some(AffinityConfig::new().by_api_key(true)));
    let as_caller = || {
        let facts = RequestFacts::new().caller(Some(ApiKey::new("sk-caller-1")));
        with_ctx(RouteCtx::with_facts("g", facts))
    };
    let mut seen = BTreeSet::new();
    for _ in 0..30 {
        let resp = call(&mut svc, as_caller()).await.expect("served");
        seen.insert(served(&resp).deployment.to_string());
    }
    assert_eq!(seen.len(), 1);
}
