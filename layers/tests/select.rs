//! Behaviour of the select layer and its strategies, driven through the real `SelectLayer` over a
//! tiny provider. Seeded RNG and a paused clock make every run identical; the LiteLLM tests each
//! one mirrors are named by their row in the census (`research/litellm-router-census.md` §3.1).

mod support;

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::Arc,
    time::Duration,
};

use bytes::Bytes;
use futures_util::{StreamExt, future::join_all, stream};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use support::*;
use switchyard_layers::{
    BoxError, Deployment, DeploymentId, Outcome, RequestFacts, RouteBody, RouteCtx, RouteError, RouteErrorKind,
    RouteRequest, StateStore, Usage,
    body::UsageSlot,
    select::{RoutingGroup, RoutingGroups, RoutingStrategy, Strategies, StrategyArgs},
    state::{Admission, LatencyConfig, Limits, StoreConfig},
};
use tokio::time::{advance, sleep};
use tower::{Service, ServiceExt, service_fn};

fn id(s: &str) -> DeploymentId {
    DeploymentId::from(s)
}

fn memory() -> Arc<StateStore> {
    Arc::new(StateStore::memory())
}

/// Sends `n` requests for `model`, advancing the clock by `gap` after each, and counts who served.
async fn tally_spaced<S>(svc: &mut S, model: &str, n: usize, gap: Duration) -> BTreeMap<String, usize>
where
    S: Service<Req, Response = Resp, Error = BoxError>,
{
    let mut counts = BTreeMap::new();
    for _ in 0..n {
        *counts.entry(serve(svc, model).await).or_default() += 1;
        advance(gap).await;
    }
    counts
}

/// A provider that takes `delays[id]` (on the paused clock) before answering.
fn delayed(
    delays: &[(&str, Duration)],
) -> impl Service<Req, Response = Resp, Error = BoxError, Future: Send> + Clone + use<> {
    let delays: Arc<HashMap<String, Duration>> = Arc::new(delays.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect());
    service_fn(move |req: Req| {
        let delays = delays.clone();
        async move {
            let id = selected_id(&req);
            sleep(delays.get(&id).copied().unwrap_or_default()).await;
            Ok::<_, BoxError>(http::Response::new(RouteBody::from(id)))
        }
    })
}

/// Takes one request slot and `tokens` in `d`'s usage window, as traffic from elsewhere would.
async fn preload_usage(store: &StateStore, d: &str, tokens: u64) {
    let admitted = store.try_reserve(&id(d), Limits::default(), tokens).await;
    assert!(matches!(admitted, Admission::Admitted(_)));
}

// ---------------------------------------------------------------------------------------------
// simple-shuffle: weights
// ---------------------------------------------------------------------------------------------

/// Census §3.1 rows 1 and 3: `rpm` 6 vs 1440 on the deployment; the 1440 one takes >89%.
#[tokio::test(start_paused = true)]
async fn rpm_weights_send_over_89_percent_to_the_1440_rpm_deployment() {
    let reg = registry([dep("gpt-3.5-turbo", "small").rpm(6), dep("gpt-3.5-turbo", "large").rpm(1440)]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    // One request every 10 s is 6 per minute, so neither rpm limit binds: the weights alone decide.
    let counts = tally_spaced(&mut svc, "gpt-3.5-turbo", 1000, Duration::from_secs(10)).await;
    assert!(count(&counts, "large") > 890, "{counts:?}");
}

/// Census §3.1 rows 2 and 3: with no `rpm` anywhere, `tpm` is the weight.
#[tokio::test(start_paused = true)]
async fn tpm_weights_split_traffic_when_no_deployment_sets_rpm() {
    let reg = registry([dep("gpt-3.5-turbo", "small").tpm(6), dep("gpt-3.5-turbo", "large").tpm(1440)]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let counts = tally(&mut svc, "gpt-3.5-turbo", 1000).await;
    assert!(count(&counts, "large") > 890, "{counts:?}");
}

/// `weight` set anywhere in the group wins over `rpm` for the whole group.
#[tokio::test(start_paused = true)]
async fn weight_takes_precedence_over_rpm_as_the_weight() {
    let reg = registry([dep("g", "a").rpm(1_000_000).weight(1.0), dep("g", "b").rpm(1).weight(9.0)]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let counts = tally_spaced(&mut svc, "g", 1000, Duration::from_secs(61)).await;
    assert!(count(&counts, "b") > 850, "{counts:?}");
}

/// Census §3.1 row 4: other groups sharing the router never serve a request for `claude-1`.
#[tokio::test(start_paused = true)]
async fn selection_is_scoped_to_the_requested_group() {
    let reg = registry([
        dep("gpt-3.5-turbo", "gpt-a").weight(5.0),
        dep("gpt-3.5-turbo", "gpt-b").weight(5.0),
        dep("claude-1", "claude").weight(1.0),
        dep("gpt-4", "gpt4").weight(100.0),
    ]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let counts = tally(&mut svc, "claude-1", 1000).await;
    assert_eq!(count(&counts, "claude"), 1000, "{counts:?}");
}

/// Census §3.1 row 5: an alias is served by its target group, with the target's weighted split,
/// and `Served.group` names the target group, not the alias.
#[tokio::test(start_paused = true)]
async fn alias_is_served_by_the_target_group_with_the_same_weighted_split() {
    let reg = registry([dep("gpt-3.5-turbo", "small").rpm(6), dep("gpt-3.5-turbo", "large").rpm(1440)]);
    reg.set_alias("gpt-4", "gpt-3.5-turbo", false).expect("target exists");
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let mut large = 0;
    for _ in 0..1000 {
        let resp = call(&mut svc, request("gpt-4")).await.expect("served");
        let served = served(&resp);
        assert_eq!(&*served.group, "gpt-3.5-turbo");
        assert!(["small", "large"].contains(&served.deployment.as_str()));
        large += usize::from(served.deployment.as_str() == "large");
        advance(Duration::from_secs(10)).await;
    }
    assert!(large > 890, "large served {large} of 1000");
}

/// Census §3.1 row 7: `weight` 2 vs 1.
#[tokio::test(start_paused = true)]
async fn weight_2_is_picked_about_twice_as_often_as_weight_1() {
    let reg = registry([dep("g", "two").weight(2.0), dep("g", "one").weight(1.0)]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let counts = tally(&mut svc, "g", 300).await;
    // Expected 200 ± 8.2 (one sigma); ±30 is over 3.5 sigma.
    assert!((170..=230).contains(&count(&counts, "two")), "{counts:?}");
}

/// Weights 1:2:7 over 20,000 picks. The bound is ±2 percentage points per share: for p = 0.7 one
/// sigma is sqrt(0.7 * 0.3 / 20000) = 0.32 points, so the bound is over 6 sigma (7 and 9.4 sigma
/// for the 0.2 and 0.1 shares). The RNG is seeded, so the run is reproducible anyway.
#[tokio::test(start_paused = true)]
async fn weighted_shares_stay_within_2_points_of_1_2_7_over_20000_picks() {
    let reg = registry([dep("g", "w1").weight(1.0), dep("g", "w2").weight(2.0), dep("g", "w7").weight(7.0)]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let n = 20_000;
    let counts = tally(&mut svc, "g", n).await;
    for (d, expected) in [("w1", 0.1), ("w2", 0.2), ("w7", 0.7)] {
        let share = count(&counts, d) as f64 / n as f64;
        assert!((share - expected).abs() <= 0.02, "{d}: {share:.4} vs {expected} ({counts:?})");
    }
}

/// A deployment with weight 0 never serves while a positive weight remains.
#[tokio::test(start_paused = true)]
async fn zero_weight_is_never_picked_next_to_positive_weights() {
    let reg = registry([dep("g", "zero").weight(0.0), dep("g", "one").weight(1.0), dep("g", "three").weight(3.0)]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let counts = tally(&mut svc, "g", 2000).await;
    assert_eq!(count(&counts, "zero"), 0, "{counts:?}");
    assert!(count(&counts, "one") > 0);
}

/// All weights 0: no ZeroDivisionError (census §2.4 item 35); the pick is uniform.
#[tokio::test(start_paused = true)]
async fn all_zero_weights_pick_uniformly() {
    let reg = registry([dep("g", "a").weight(0.0), dep("g", "b").weight(0.0), dep("g", "c").weight(0.0)]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let counts = tally(&mut svc, "g", 3000).await;
    for d in ["a", "b", "c"] {
        // 1000 expected, sigma 25.8: ±150 is ~6 sigma.
        assert!((850..=1150).contains(&count(&counts, d)), "{counts:?}");
    }
}

/// Census §2.4 item 35: LiteLLM looks only at `healthy[0]` to decide whether to weight, so a
/// weightless first deployment made the whole group uniform. Weights are decided for the group.
#[tokio::test(start_paused = true)]
async fn weights_are_decided_for_the_whole_group_not_from_the_first_candidate() {
    let reg = registry([dep("g", "weightless"), dep("g", "one").weight(1.0), dep("g", "three").weight(3.0)]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let counts = tally(&mut svc, "g", 4000).await;
    assert_eq!(count(&counts, "weightless"), 0, "{counts:?}");
    // 3000 expected for `three`, sigma 27.4: ±150 is ~5.5 sigma.
    assert!((2850..=3150).contains(&count(&counts, "three")), "{counts:?}");
}

/// A blocked deployment never serves, so it does not decide the weight field either: blocking
/// the only deployment with a `weight` leaves the rest weighted by their `rpm`.
#[tokio::test(start_paused = true)]
async fn blocked_deployment_does_not_decide_the_weight_field() {
    let reg = registry([
        dep("g", "blocked").weight(5.0).blocked(true),
        dep("g", "rpm-100").rpm(100),
        dep("g", "rpm-900").rpm(900),
    ]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let counts = tally_spaced(&mut svc, "g", 1000, Duration::from_secs(1)).await;
    // 900 expected, sigma 9.5: ±50 is over 5 sigma.
    assert!((850..=950).contains(&count(&counts, "rpm-900")), "{counts:?}");
}

// ---------------------------------------------------------------------------------------------
// Candidates: blocked, excluded, empty
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn blocked_deployment_is_never_chosen() {
    let reg = registry([dep("g", "blocked").weight(1000.0).blocked(true), dep("g", "open").weight(1.0)]);
    for strategy in RoutingStrategy::ALL.map(|(_, s)| s) {
        let mut svc = stack(select(&reg, &memory(), strategy), echo());
        let counts = tally(&mut svc, "g", 200).await;
        assert_eq!(count(&counts, "open"), 200, "{strategy}: {counts:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn excluded_deployments_are_never_chosen() {
    let reg = registry([dep("g", "a"), dep("g", "b"), dep("g", "c")]);
    for strategy in RoutingStrategy::ALL.map(|(_, s)| s) {
        let mut svc = stack(select(&reg, &memory(), strategy), echo());
        for _ in 0..200 {
            let mut ctx = RouteCtx::new("g");
            ctx.excluded = vec![id("a"), id("c")];
            let resp = call(&mut svc, with_ctx(ctx)).await.expect("b is left");
            assert_eq!(served(&resp).deployment.as_str(), "b", "{strategy}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn group_emptied_by_exclusion_is_no_candidates() {
    let reg = registry([dep("g", "a"), dep("g", "b")]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let mut ctx = RouteCtx::new("g");
    ctx.excluded = vec![id("a"), id("b")];
    let err = call(&mut svc, with_ctx(ctx)).await.expect_err("nothing left");
    let route = route_error(&err, RouteErrorKind::NoCandidates);
    assert_eq!(route.group().map(|g| &**g), Some("g"));
}

#[tokio::test(start_paused = true)]
async fn group_with_only_blocked_deployments_is_no_candidates() {
    let reg = registry([dep("g", "a").blocked(true)]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let err = call(&mut svc, request("g")).await.expect_err("all blocked");
    route_error(&err, RouteErrorKind::NoCandidates);
}

#[tokio::test(start_paused = true)]
async fn request_without_route_ctx_is_a_missing_context_error() {
    let reg = registry([dep("g", "a")]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let err = call(&mut svc, http::Request::new(Bytes::new())).await.expect_err("no ctx");
    route_error(&err, RouteErrorKind::MissingContext);
}

/// Excluding every weighted deployment leaves weight-0 ones, which then share uniformly.
#[tokio::test(start_paused = true)]
async fn excluding_every_weighted_deployment_leaves_a_uniform_pick() {
    let reg = registry([dep("g", "weighted").weight(1.0), dep("g", "x"), dep("g", "y")]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let mut counts = BTreeMap::<String, usize>::new();
    for _ in 0..1000 {
        let mut ctx = RouteCtx::new("g");
        ctx.excluded = vec![id("weighted")];
        let resp = call(&mut svc, with_ctx(ctx)).await.expect("served");
        *counts.entry(served(&resp).deployment.to_string()).or_default() += 1;
    }
    // 500 expected, sigma 15.8: ±80 is ~5 sigma.
    assert!((420..=580).contains(&count(&counts, "x")), "{counts:?}");
}

/// Layers above only subtract candidates; the select layer picks among what they left.
#[tokio::test(start_paused = true)]
async fn select_picks_only_among_the_candidates_outer_layers_left() {
    let reg = registry([dep("g", "a").weight(100.0), dep("g", "b").weight(1.0), dep("g", "c").weight(100.0)]);
    let b = reg.deployment(&id("b")).expect("registered");
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    for _ in 0..100 {
        let mut ctx = RouteCtx::new("g");
        ctx.candidates = Some(vec![b.clone()].into());
        let resp = call(&mut svc, with_ctx(ctx)).await.expect("served");
        assert_eq!(served(&resp).deployment.as_str(), "b");
    }
}

// ---------------------------------------------------------------------------------------------
// least-busy
// ---------------------------------------------------------------------------------------------

/// Census §3.1 row 12: in-flight {10, 54, 100} -> the one with 10; a completed call leaves the
/// counts as they were.
#[tokio::test(start_paused = true)]
async fn least_busy_picks_the_lowest_in_flight_count() {
    let reg = registry([dep("g", "d1"), dep("g", "d2"), dep("g", "d3")]);
    let store = memory();
    let held: Vec<_> = [("d1", 10), ("d2", 54), ("d3", 100)]
        .into_iter()
        .flat_map(|(d, n)| (0..n).map(|_| store.local().begin(&id(d))).collect::<Vec<_>>())
        .collect();
    let mut svc = stack(select(&reg, &store, RoutingStrategy::LeastBusy), echo());
    for _ in 0..50 {
        assert_eq!(serve(&mut svc, "g").await, "d1");
    }
    let counts: Vec<u64> = ["d1", "d2", "d3"].iter().map(|d| store.local().in_flight(&id(d))).collect();
    assert_eq!(counts, [10, 54, 100]);
    drop(held);
}

#[tokio::test(start_paused = true)]
async fn least_busy_spreads_concurrent_requests_evenly() {
    let reg = registry([dep("g", "a"), dep("g", "b"), dep("g", "c")]);
    let store = memory();
    let (mut gate, provider) = gated();
    let svc = stack(select(&reg, &store, RoutingStrategy::LeastBusy), provider);
    let parked: Vec<_> = (0..30).map(|_| tokio::spawn(svc.clone().oneshot(parked_request("g")))).collect();
    for _ in 0..30 {
        gate.entered.recv().await.expect("request parked");
    }
    for d in ["a", "b", "c"] {
        assert_eq!(store.local().in_flight(&id(d)), 10, "{d}");
    }
    gate.open.send(true).expect("provider alive");
    for h in parked {
        drop(h.await.expect("task").expect("served"));
    }
    for d in ["a", "b", "c"] {
        assert_eq!(store.local().in_flight(&id(d)), 0, "{d}");
    }
}

/// LiteLLM broke least-busy ties by dict insertion order; here they are random.
#[tokio::test(start_paused = true)]
async fn least_busy_breaks_ties_at_random() {
    let reg = registry([dep("g", "a"), dep("g", "b"), dep("g", "c")]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::LeastBusy), echo());
    let counts = tally(&mut svc, "g", 300).await;
    for d in ["a", "b", "c"] {
        assert!(count(&counts, d) >= 60, "{counts:?}");
    }
}

/// A streamed answer stays in flight until its body ends, not until its first chunk arrives
/// (LiteLLM released its slot when the stream object was returned, census §2.4 item 38).
#[tokio::test(start_paused = true)]
async fn streamed_answer_is_in_flight_until_its_body_ends() {
    let reg = registry([dep("g", "a"), dep("g", "b")]);
    let store = memory();
    let provider = service_fn(|req: Req| async move {
        let first = stream::iter([Ok::<_, BoxError>(Frame::data(Bytes::from(selected_id(&req))))]);
        let rest = stream::once(async {
            sleep(Duration::from_secs(5)).await;
            Ok(Frame::data(Bytes::from_static(b"data: [DONE]\n\n")))
        });
        Ok::<_, BoxError>(http::Response::new(RouteBody::new(StreamBody::new(first.chain(rest)))))
    });
    let mut svc = stack(select(&reg, &store, RoutingStrategy::LeastBusy), provider);
    let streaming = || with_ctx(RouteCtx::with_facts("g", RequestFacts::new().streaming(true)));
    let first = call(&mut svc, streaming()).await.expect("served");
    let first_on = served(&first).deployment.clone();
    assert_eq!(store.local().in_flight(&first_on), 1, "the stream is still open");
    let second = call(&mut svc, streaming()).await.expect("served");
    assert_ne!(served(&second).deployment, first_on, "least-busy sees the open stream");
    first.into_body().collect().await.expect("whole stream");
    assert_eq!(store.local().in_flight(&first_on), 0, "released at the end of the stream");
    drop(second);
}

/// How a test request ends, for the drift test below.
#[derive(Clone, Copy, Debug)]
enum Ending {
    /// The body is read to its end.
    Complete,
    /// The response arrives and its body is dropped unread.
    DropUnread,
    /// The provider fails.
    Fail,
    /// The caller gives up while the provider is still working (the future is dropped).
    Cancel,
    /// A stream's first chunk is read, then the body is dropped.
    AbandonStream,
}

/// Census §2.4 item 34: least-busy counts drift in LiteLLM (TTL expiry, read-modify-write). Here
/// they are drop guards: after 10,000 requests ending every possible way, every count is zero.
#[tokio::test(start_paused = true)]
async fn least_busy_counts_return_to_zero_after_errors_cancellations_and_abandoned_streams() {
    let ids = ["a", "b", "c", "d"];
    let reg = registry(ids.map(|d| dep("g", d)));
    let store = memory();
    let provider = service_fn(|req: Req| async move {
        let id = selected_id(&req);
        let (ending, delay) = *req.extensions().get::<(Ending, Duration)>().expect("test sets the ending");
        match ending {
            Ending::Cancel => sleep(Duration::from_secs(3600)).await,
            _ => sleep(delay).await,
        }
        match ending {
            Ending::Fail => Err(BoxError::from(RouteError::upstream(Outcome::ServerError, id.into(), "500"))),
            Ending::AbandonStream => {
                let chunks = stream::iter([Ok::<_, BoxError>(Frame::data(Bytes::from(id)))]).chain(stream::pending());
                Ok(http::Response::new(RouteBody::new(StreamBody::new(chunks))))
            }
            _ => Ok(http::Response::new(RouteBody::from(id))),
        }
    });
    let svc = stack(select(&reg, &store, RoutingStrategy::LeastBusy), provider);
    let mut rng = SmallRng::seed_from_u64(SEED);
    let mut peak = 0;
    for _batch in 0..100 {
        let mut calls = Vec::with_capacity(100);
        for _ in 0..100 {
            let ending = match rng.random_range(0..5) {
                0 => Ending::Complete,
                1 => Ending::DropUnread,
                2 => Ending::Fail,
                3 => Ending::Cancel,
                _ => Ending::AbandonStream,
            };
            let delay = Duration::from_millis(rng.random_range(0..20));
            let hold = Duration::from_millis(rng.random_range(0..20));
            let facts = RequestFacts::new().streaming(matches!(ending, Ending::AbandonStream));
            let mut req = with_ctx(RouteCtx::with_facts("g", facts));
            req.extensions_mut().insert((ending, delay));
            let call = svc.clone().oneshot(req);
            calls.push(async move {
                match ending {
                    Ending::Cancel => {
                        assert!(tokio::time::timeout(Duration::from_millis(5), call).await.is_err());
                    }
                    Ending::Fail => {
                        route_error(&call.await.expect_err("provider fails"), RouteErrorKind::Upstream);
                    }
                    Ending::DropUnread => {
                        let resp = call.await.expect("served");
                        sleep(hold).await;
                        drop(resp);
                    }
                    Ending::Complete => {
                        let body = call.await.expect("served").into_body();
                        sleep(hold).await;
                        body.collect().await.expect("complete body");
                    }
                    Ending::AbandonStream => {
                        let mut body = call.await.expect("served").into_body();
                        assert!(body.frame().await.is_some(), "first chunk");
                        sleep(hold).await;
                        drop(body);
                    }
                }
            });
        }
        // Poll the batch alongside a probe that samples the counts while requests are in flight.
        let probe = async {
            sleep(Duration::from_millis(3)).await;
            ids.iter().map(|d| store.local().in_flight(&id(d))).sum::<u64>()
        };
        let (_, in_flight) = tokio::join!(join_all(calls), probe);
        peak = peak.max(in_flight);
    }
    assert!(peak > 0, "the probe saw requests in flight");
    for d in ids {
        assert_eq!(store.local().in_flight(&id(d)), 0, "{d}");
    }
}

// ---------------------------------------------------------------------------------------------
// cost-based
// ---------------------------------------------------------------------------------------------

/// Census §3.1 row 13: the cheapest model by the catalog's list prices.
#[tokio::test(start_paused = true)]
async fn cost_based_picks_the_cheapest_catalog_price() {
    let reg = registry([
        Deployment::builder("chat", "openai/gpt-4").id("gpt-4"),
        Deployment::builder("chat", "openai/gpt-4o").id("gpt-4o"),
        Deployment::builder("chat", "azure/gpt-4o-mini").id("mini"),
        Deployment::builder("chat", "openai/gpt-3.5-turbo").id("turbo"),
    ]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::CostBased), echo());
    let counts = tally(&mut svc, "chat", 100).await;
    assert_eq!(count(&counts, "mini"), 100, "{counts:?}");
}

/// The catalog prices every vendor, not only OpenAI's models (LiteLLM's test picks Groq too).
#[tokio::test(start_paused = true)]
async fn cost_based_prices_other_vendors_from_the_catalog() {
    let reg = registry([
        Deployment::builder("chat", "anthropic/claude-sonnet-4-5").id("claude"),
        Deployment::builder("chat", "groq/llama-3.1-8b-instant").id("groq"),
        Deployment::builder("chat", "openai/gpt-4o").id("gpt-4o"),
    ]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::CostBased), echo());
    let counts = tally(&mut svc, "chat", 50).await;
    assert_eq!(count(&counts, "groq"), 50, "{counts:?}");
}

/// Census §3.1 row 14: prices on the deployment override the catalog.
#[tokio::test(start_paused = true)]
async fn deployment_prices_override_the_catalog() {
    let reg = registry([
        Deployment::builder("chat", "azure/gpt-4o-mini").id("mini"),
        Deployment::builder("chat", "openai/gpt-4")
            .id("discounted")
            .input_cost_per_token(0.0)
            .output_cost_per_token(1e-9),
        Deployment::builder("chat", "selfhosted/llama").id("unpriced"),
    ]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::CostBased), echo());
    let counts = tally(&mut svc, "chat", 100).await;
    assert_eq!(count(&counts, "discounted"), 100, "{counts:?}");
}

/// A deployment without any known price ranks after every priced one, but still serves when it
/// is the only one left.
#[tokio::test(start_paused = true)]
async fn unpriced_deployment_serves_only_when_priced_ones_are_full() {
    let reg = registry([
        Deployment::builder("chat", "selfhosted/llama").id("unpriced"),
        Deployment::builder("chat", "openai/gpt-4").id("gpt-4").rpm(2),
    ]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::CostBased), echo());
    let mut served_by = Vec::new();
    for _ in 0..4 {
        served_by.push(serve(&mut svc, "chat").await);
    }
    assert_eq!(served_by, ["gpt-4", "gpt-4", "unpriced", "unpriced"]);
}

/// Equal prices share the load instead of always hitting the first in config order.
#[tokio::test(start_paused = true)]
async fn cost_ties_are_broken_at_random() {
    let reg = registry([
        Deployment::builder("chat", "openai/gpt-4o-mini").id("key-1"),
        Deployment::builder("chat", "openai/gpt-4o-mini").id("key-2"),
    ]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::CostBased), echo());
    let counts = tally(&mut svc, "chat", 200).await;
    assert!(count(&counts, "key-1") > 50 && count(&counts, "key-2") > 50, "{counts:?}");
}

// ---------------------------------------------------------------------------------------------
// latency-based
// ---------------------------------------------------------------------------------------------

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// Records `n` latency samples of `s` seconds for `d`.
fn record_latency(store: &StateStore, d: &str, s: f64, n: usize) {
    for _ in 0..n {
        store.local().record_latency(&id(d), s, secs(s));
    }
}

/// Census §3.1 row 15: the lowest recorded latency wins (and keeps winning as its own answers
/// keep its samples low).
#[tokio::test(start_paused = true)]
async fn latency_based_picks_the_lowest_mean_latency() {
    let reg = registry([dep("g", "slow"), dep("g", "fast"), dep("g", "medium")]);
    let store = memory();
    let timings = [("slow", 3.0), ("fast", 0.5), ("medium", 1.0)];
    for (d, s) in timings {
        record_latency(&store, d, s, 3);
    }
    let provider = delayed(&timings.map(|(d, s)| (d, secs(s))));
    let mut svc = stack(select(&reg, &store, RoutingStrategy::LatencyBased), provider);
    let counts = tally(&mut svc, "g", 100).await;
    assert_eq!(count(&counts, "fast"), 100, "{counts:?}");
}

/// Census §3.1 row 16: the fastest deployment at its rpm limit is skipped.
#[tokio::test(start_paused = true)]
async fn latency_based_skips_the_fastest_deployment_at_its_rpm_limit() {
    let reg = registry([dep("g", "fast").rpm(3), dep("g", "slow")]);
    let store = memory();
    record_latency(&store, "fast", 0.1, 3);
    record_latency(&store, "slow", 1.0, 3);
    let provider = delayed(&[("fast", secs(0.1)), ("slow", secs(1.0))]);
    let mut svc = stack(select(&reg, &store, RoutingStrategy::LatencyBased), provider);
    let mut picks = Vec::new();
    for _ in 0..6 {
        picks.push(serve(&mut svc, "g").await);
    }
    assert_eq!(picks, ["fast", "fast", "fast", "slow", "slow", "slow"]);
}

/// Census §3.1 row 17 and §2.4 item 36: with no samples, traffic spreads; the first pick of a
/// fresh router is not always the first deployment.
#[tokio::test(start_paused = true)]
async fn latency_based_spreads_traffic_when_no_samples_exist() {
    let reg = registry([dep("g", "a"), dep("g", "b"), dep("g", "c")]);
    let mut first_picks = BTreeSet::new();
    for seed in 0..30 {
        let layer = select(&reg, &memory(), RoutingStrategy::LatencyBased).with_seed(seed);
        let mut svc = stack(layer, echo());
        first_picks.insert(serve(&mut svc, "g").await);
    }
    assert_eq!(first_picks.len(), 3, "first picks: {first_picks:?}");

    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::LatencyBased), delayed(&[]));
    let counts = tally(&mut svc, "g", 300).await;
    for d in ["a", "b", "c"] {
        assert!(count(&counts, d) >= 60, "{counts:?}");
    }
}

/// Census §3.1 row 18: buffer 0 -> only the fastest; buffer 0.5 -> everything within 1.5x the
/// fastest shares the traffic.
#[tokio::test(start_paused = true)]
async fn latency_buffer_0_uses_one_deployment_and_0_5_shares_two() {
    let timings = [("a", 1.0), ("b", 1.4), ("c", 3.0)];
    let reg = registry(timings.map(|(d, _)| dep("g", d)));
    for (buffer, expected_users) in [(0.0, vec!["a"]), (0.5, vec!["a", "b"])] {
        let store = memory();
        for (d, s) in timings {
            record_latency(&store, d, s, 3);
        }
        let strategy = RoutingStrategy::LatencyBased.build_with(&StrategyArgs::new(buffer).expect("valid buffer"));
        let provider = delayed(&timings.map(|(d, s)| (d, secs(s))));
        let mut svc = stack(select(&reg, &store, strategy), provider);
        let counts = tally(&mut svc, "g", 200).await;
        let users: Vec<&str> = counts.keys().map(String::as_str).collect();
        assert_eq!(users, expected_users, "buffer {buffer}: {counts:?}");
        for d in expected_users {
            assert!(count(&counts, d) >= 200 / 4, "buffer {buffer}: {counts:?}");
        }
    }
}

/// Census §3.1 row 19: streams rank by time to first token, other requests by total latency.
/// `quick-start` answers its first token in 0.1 s but takes 5 s in total; `quick-finish` takes 1 s
/// to its first token and 2 s in total.
#[tokio::test(start_paused = true)]
async fn streams_rank_by_ttft_and_other_requests_by_total_latency() {
    let timings: Arc<HashMap<&str, (f64, f64)>> =
        Arc::new([("quick-start", (0.1, 5.0)), ("quick-finish", (1.0, 2.0))].into_iter().collect());
    let reg = registry(timings.keys().map(|d| dep("g", d)));
    let store = memory();
    for (d, (ttft, total)) in timings.iter() {
        let attempt = store.local().begin(&id(d));
        store.local().record_ttft_held(&attempt, secs(*ttft), tokio::time::Instant::now());
        drop(attempt);
        store.local().record_latency(&id(d), *total, secs(*total));
    }
    // A simulated upstream: a stream resolves at its first chunk and ends `total` after the
    // start; a plain answer resolves when complete.
    let provider = service_fn(move |req: Req| {
        let timings = timings.clone();
        async move {
            let id = selected_id(&req);
            let (ttft, total) = timings[id.as_str()];
            if req.route_ctx().expect("ctx").facts().stream {
                sleep(secs(ttft)).await;
                let first = stream::iter([Ok::<_, BoxError>(Frame::data(Bytes::from("data: first\n\n")))]);
                let rest = stream::once(async move {
                    sleep(secs(total - ttft)).await;
                    Ok(Frame::data(Bytes::from("data: [DONE]\n\n")))
                });
                Ok::<_, BoxError>(http::Response::new(RouteBody::new(StreamBody::new(first.chain(rest)))))
            } else {
                sleep(secs(total)).await;
                Ok(http::Response::new(RouteBody::from(id)))
            }
        }
    });
    let mut svc = stack(select(&reg, &store, RoutingStrategy::LatencyBased), provider);
    for i in 0..40 {
        let stream = i % 2 == 0;
        let req = with_ctx(RouteCtx::with_facts("g", RequestFacts::new().streaming(stream)));
        let resp = call(&mut svc, req).await.expect("served");
        let by = served(&resp).deployment.to_string();
        resp.into_body().collect().await.expect("whole body");
        assert_eq!(by, if stream { "quick-start" } else { "quick-finish" }, "request {i}, stream {stream}");
    }
}

/// Census §2.4 item 36: LiteLLM gave unseen deployments latency 0, so a new deployment took all
/// the traffic. Here it is explored with one request, then ranked by what it measured.
#[tokio::test(start_paused = true)]
async fn latency_based_explores_a_new_deployment_once_then_ranks_it() {
    let reg = registry([dep("g", "fast")]);
    let store = memory();
    record_latency(&store, "fast", 0.1, 3);
    let provider = delayed(&[("fast", secs(0.1)), ("new", secs(2.0))]);
    let mut svc = stack(select(&reg, &store, RoutingStrategy::LatencyBased), provider);
    assert_eq!(serve(&mut svc, "g").await, "fast");
    reg.add(dep("g", "new").build().expect("valid")).expect("new id");
    let counts = tally(&mut svc, "g", 50).await;
    assert_eq!(count(&counts, "new"), 1, "{counts:?}");
}

/// An attempt that timed out counts as a sample as long as it took, so latency routing moves
/// away from a deployment that hangs.
#[tokio::test(start_paused = true)]
async fn timed_out_attempts_count_as_slow_latency_samples() {
    let reg = registry([dep("g", "hangs"), dep("g", "steady")]);
    let store = memory();
    record_latency(&store, "hangs", 0.1, 1);
    record_latency(&store, "steady", 0.5, 1);
    let hung = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let provider = service_fn(move |req: Req| {
        let hung = hung.clone();
        async move {
            let id = selected_id(&req);
            if id == "hangs" && !hung.swap(true, std::sync::atomic::Ordering::SeqCst) {
                sleep(Duration::from_secs(30)).await;
                return Err::<Resp, BoxError>(RouteError::upstream(Outcome::Timeout, id.into(), "timed out").into());
            }
            sleep(secs(0.5)).await;
            Ok(http::Response::new(RouteBody::from(id)))
        }
    });
    let mut svc = stack(select(&reg, &store, RoutingStrategy::LatencyBased), provider);
    let err = call(&mut svc, request("g")).await.expect_err("the fastest hangs once");
    assert_eq!(route_error(&err, RouteErrorKind::Upstream).outcome(), Some(Outcome::Timeout));
    assert_eq!(store.local().mean_latency(&id("hangs"), false), Some(15.05));
    assert_eq!(count(&tally(&mut svc, "g", 20).await, "steady"), 20);
}

/// Census §3.1 row 20 and §2.4 item 36: the sample memory per deployment is bounded, and it is a
/// sliding window of the most recent samples.
#[tokio::test(start_paused = true)]
async fn latency_samples_are_bounded_per_deployment() {
    let reg = registry([dep("g", "a"), dep("g", "b")]);
    let mut config = StoreConfig::default();
    let mut latency = LatencyConfig::default();
    latency.max_samples = 5;
    config.latency = latency;
    let store = Arc::new(StateStore::memory_with(config));
    let mut svc = stack(select(&reg, &store, RoutingStrategy::LatencyBased), delayed(&[("a", secs(1.0))]));
    tally(&mut svc, "g", 1000).await;
    for d in ["a", "b"] {
        assert!(store.local().samples(&id(d)) <= 5, "{d}: {}", store.local().samples(&id(d)));
    }
    // New samples replace the oldest (LiteLLM overwrote only the last slot once full).
    record_latency(&store, "a", 0.2, 5);
    assert_eq!(store.local().mean_latency(&id("a"), false), Some(0.2));
}

// ---------------------------------------------------------------------------------------------
// usage-based
// ---------------------------------------------------------------------------------------------

/// Census §3.1 row 21: the lowest TPM in the window wins.
#[tokio::test(start_paused = true)]
async fn usage_based_picks_the_lowest_tpm() {
    let reg = registry([dep("g", "a"), dep("g", "b"), dep("g", "c")]);
    let store = memory();
    for (d, tokens) in [("a", 300), ("b", 100), ("c", 200)] {
        preload_usage(&store, d, tokens).await;
    }
    let mut svc = stack(select(&reg, &store, RoutingStrategy::UsageBased), echo());
    let counts = tally(&mut svc, "g", 20).await;
    assert_eq!(count(&counts, "b"), 20, "{counts:?}");
}

/// Census §3.1 row 22: equal TPM -> random among the ties.
#[tokio::test(start_paused = true)]
async fn usage_based_breaks_tpm_ties_at_random() {
    let reg = registry([dep("g", "a"), dep("g", "b")]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::UsageBased), echo());
    let counts = tally(&mut svc, "g", 20).await;
    assert!(count(&counts, "a") > 0 && count(&counts, "b") > 0, "{counts:?}");
}

/// Census §3.1 row 23: a request that would push every deployment over its tpm is refused with a
/// typed rate-limit error.
#[tokio::test(start_paused = true)]
async fn request_that_would_exceed_every_tpm_is_rate_limited() {
    let reg = registry([dep("g", "a").tpm(100), dep("g", "b").tpm(100)]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::UsageBased), echo());
    let big = RouteCtx::with_facts("g", RequestFacts::new().with_input_tokens(150));
    let err = call(&mut svc, with_ctx(big)).await.expect_err("too big for both");
    let route = route_error(&err, RouteErrorKind::RateLimited);
    assert_eq!(route.outcome(), Some(Outcome::RateLimited));
    assert_eq!(route.http_status(), http::StatusCode::TOO_MANY_REQUESTS);
    let fits = RouteCtx::with_facts("g", RequestFacts::new().with_input_tokens(100));
    assert!(call(&mut svc, with_ctx(fits)).await.is_ok(), "exactly the limit fits");
}

/// Census §3.1 row 24 and §2.4 item 32: a deployment exactly at its rpm limit is filtered, one
/// below is not (LiteLLM's usage-based filter was off by one).
#[tokio::test(start_paused = true)]
async fn deployment_exactly_at_its_limit_is_filtered_one_below_is_not() {
    let reg = registry([dep("g", "limited").rpm(2).tpm(1000), dep("g", "busy")]);
    let store = memory();
    preload_usage(&store, "busy", 500).await;
    preload_usage(&store, "limited", 0).await;
    let mut svc = stack(select(&reg, &store, RoutingStrategy::UsageBased), echo());
    assert_eq!(serve(&mut svc, "g").await, "limited", "1 of 2 used: one more fits");
    assert_eq!(serve(&mut svc, "g").await, "busy", "2 of 2 used: at the limit");

    // The same boundary for tokens: 1000 of 1000 used admits nothing more.
    let store = memory();
    let reg = registry([dep("g", "limited").tpm(1000), dep("g", "busy")]);
    preload_usage(&store, "limited", 999).await;
    preload_usage(&store, "busy", 5000).await;
    let mut svc = stack(select(&reg, &store, RoutingStrategy::UsageBased), echo());
    let one_token = || with_ctx(RouteCtx::with_facts("g", RequestFacts::new().with_input_tokens(1)));
    let resp = call(&mut svc, one_token()).await.expect("served");
    assert_eq!(served(&resp).deployment.as_str(), "limited", "999 + 1 <= 1000");
    let resp = call(&mut svc, one_token()).await.expect("served");
    assert_eq!(served(&resp).deployment.as_str(), "busy", "1000 + 1 > 1000");
}

/// Census §3.1 row 25: an answer counts one request and its real total tokens, which steer the
/// next pick.
#[tokio::test(start_paused = true)]
async fn usage_based_counts_the_tokens_reported_by_the_answer() {
    let reg = registry([dep("g", "a"), dep("g", "b"), dep("g", "c")]);
    let store = memory();
    for (d, tokens) in [("a", 300), ("b", 100), ("c", 200)] {
        preload_usage(&store, d, tokens).await;
    }
    let provider = service_fn(|req: Req| async move {
        let body = RouteBody::from(selected_id(&req)).with_usage(Usage::new(100, 150));
        Ok::<_, BoxError>(http::Response::new(body))
    });
    let mut svc = stack(select(&reg, &store, RoutingStrategy::UsageBased), provider);
    assert_eq!(serve(&mut svc, "g").await, "b");
    let usage = store.usage(&[id("b")]).await[0];
    assert_eq!((usage.requests, usage.tokens), (2, 350));
    assert_eq!(serve(&mut svc, "g").await, "c", "b now has 350 tokens, c 200");
}

// ---------------------------------------------------------------------------------------------
// Limits enforced by the select layer (any strategy)
// ---------------------------------------------------------------------------------------------

/// A deployment with rpm = 5 serves exactly 5 requests in any 60 s window; the 6th goes elsewhere
/// (here: a weight-0 spare that only serves when nothing else can), and the slots free exactly
/// 60 s after they were taken.
#[tokio::test(start_paused = true)]
async fn deployment_with_rpm_n_serves_exactly_n_per_60_s_window() {
    let reg = registry([dep("g", "primary").rpm(5).weight(1.0), dep("g", "spare").weight(0.0)]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle).enforce_rate_limits(true), echo());
    let mut picks = Vec::new();
    for _ in 0..7 {
        picks.push(serve(&mut svc, "g").await);
    }
    assert_eq!(picks, ["primary", "primary", "primary", "primary", "primary", "spare", "spare"]);
    advance(Duration::from_millis(59_990)).await;
    assert_eq!(serve(&mut svc, "g").await, "spare", "59.99 s: the window still holds 5");
    advance(Duration::from_millis(10)).await;
    assert_eq!(serve(&mut svc, "g").await, "primary", "60 s: the first slots are free");
}

/// LiteLLM reads `rpm` / `tpm` as limits only in the strategies that read usage (usage-, latency-
/// and cost-based routing); simple-shuffle, least-busy and p2c count them and serve past them
/// unless `enforce_rate_limits` is set (or a pre-call layer above enforces them).
#[tokio::test(start_paused = true)]
async fn only_usage_reading_strategies_enforce_rpm_unless_enforce_rate_limits_is_set() {
    let reg = registry([dep("g", "a").rpm(2)]);
    for strategy in NON_FILTERING {
        let store = memory();
        let mut svc = stack(select(&reg, &store, strategy), echo());
        for _ in 0..4 {
            assert_eq!(serve(&mut svc, "g").await, "a", "{strategy:?} serves past its rpm");
        }
        assert_eq!(store.usage(&[DeploymentId::from("a")]).await[0].requests, 4, "{strategy:?} still counts");
    }
    for strategy in [RoutingStrategy::UsageBased, RoutingStrategy::LatencyBased, RoutingStrategy::CostBased] {
        let mut svc = stack(select(&reg, &memory(), strategy), echo());
        serve(&mut svc, "g").await;
        serve(&mut svc, "g").await;
        let err = call(&mut svc, request("g")).await.unwrap_err();
        route_error(&err, RouteErrorKind::RateLimited);
    }
}

/// Strategies that do not read usage: the select layer's reservation finds every candidate full.
const NON_FILTERING: [RoutingStrategy; 3] =
    [RoutingStrategy::SimpleShuffle, RoutingStrategy::LeastBusy, RoutingStrategy::P2cPeakEwma];
/// Strategies that read usage and skip candidates at their limits before reserving.
const USAGE_FILTERING: [RoutingStrategy; 3] =
    [RoutingStrategy::UsageBased, RoutingStrategy::LatencyBased, RoutingStrategy::CostBased];

/// Fills `a` (rpm 1) at t=0 and `b` (rpm 1) at t=20 s, then asks again at t=30 s: a typed
/// rate-limit error whose retry-after is when the first slot frees (t=60 s), and service again
/// once it has.
async fn all_full_is_rate_limited_until_the_first_slot_frees(strategy: RoutingStrategy) {
    let reg = registry([dep("g", "a").rpm(1), dep("g", "b").rpm(1)]);
    let mut svc = stack(select(&reg, &memory(), strategy).enforce_rate_limits(true), echo());
    let first = serve(&mut svc, "g").await;
    advance(Duration::from_secs(20)).await;
    let second = serve(&mut svc, "g").await;
    assert_ne!(first, second, "{strategy}");
    advance(Duration::from_secs(10)).await;
    let err = call(&mut svc, request("g")).await.expect_err("both full");
    let route = route_error(&err, RouteErrorKind::RateLimited);
    assert_eq!(route.retry_after(), Some(Duration::from_secs(30)), "{strategy}: the t=0 slot frees at t=60");
    advance(Duration::from_secs(30)).await;
    assert_eq!(serve(&mut svc, "g").await, first, "{strategy}");
}

#[tokio::test(start_paused = true)]
async fn all_deployments_at_their_rpm_limit_is_rate_limited_until_the_first_slot_frees() {
    for strategy in NON_FILTERING {
        all_full_is_rate_limited_until_the_first_slot_frees(strategy).await;
    }
}

/// The same rule for the strategies that filter by usage themselves. When such a strategy finds
/// no candidate under its limits, `Select` answers `RateLimited` without a retry-after, because
/// the retry-after is only learnt from a failed reservation (`layers/src/select/service.rs`,
/// `let Some(i) = picked else { return Err(all_limited(&group, soonest_free)) }`).
#[tokio::test(start_paused = true)]
async fn usage_filtering_strategies_report_when_the_first_slot_frees() {
    for strategy in USAGE_FILTERING {
        all_full_is_rate_limited_until_the_first_slot_frees(strategy).await;
    }
}

#[tokio::test(start_paused = true)]
async fn usage_filtering_strategies_are_rate_limited_when_every_deployment_is_full() {
    for strategy in USAGE_FILTERING {
        let reg = registry([dep("g", "a").rpm(1), dep("g", "b").rpm(1)]);
        let mut svc = stack(select(&reg, &memory(), strategy), echo());
        let first = serve(&mut svc, "g").await;
        assert_ne!(serve(&mut svc, "g").await, first, "{strategy}");
        let err = call(&mut svc, request("g")).await.expect_err("both full");
        route_error(&err, RouteErrorKind::RateLimited);
        advance(Duration::from_secs(60)).await;
        serve(&mut svc, "g").await;
    }
}

/// The TPM reservation holds the estimate while the answer is in flight and is reconciled with
/// the usage the body reports when it ends.
#[tokio::test(start_paused = true)]
async fn tpm_reservation_is_reconciled_with_the_usage_reported_by_the_body() {
    let reg = registry([dep("g", "a").tpm(1000)]);
    let store = memory();
    let provider = service_fn(|req: Req| async move {
        let body = RouteBody::from(selected_id(&req)).with_usage(Usage::new(100, 200));
        Ok::<_, BoxError>(http::Response::new(body))
    });
    let mut svc = stack(select(&reg, &store, RoutingStrategy::SimpleShuffle).enforce_rate_limits(true), provider);
    let reserving = |tokens| {
        let mut ctx = RouteCtx::new("g");
        ctx.reserve_tokens = tokens;
        with_ctx(ctx)
    };
    let tokens = |store: Arc<StateStore>| async move { store.usage(&[id("a")]).await[0].tokens };

    let first = call(&mut svc, reserving(900)).await.expect("fits");
    assert_eq!(tokens(store.clone()).await, 900, "the estimate is held while the body is alive");
    let err = call(&mut svc, reserving(600)).await.expect_err("900 + 600 > 1000");
    route_error(&err, RouteErrorKind::RateLimited);

    first.into_body().collect().await.expect("body");
    assert_eq!(tokens(store.clone()).await, 300, "reconciled with the real 100 + 200");
    assert!(call(&mut svc, reserving(600)).await.is_ok(), "300 + 600 <= 1000");
}

/// A streaming provider learns the usage only at the last chunk; the reservation is reconciled
/// with it when the stream ends.
#[tokio::test(start_paused = true)]
async fn tpm_reservation_is_reconciled_with_usage_reported_at_the_end_of_a_stream() {
    let reg = registry([dep("g", "a").tpm(10_000)]);
    let store = memory();
    let provider = service_fn(|_req: Req| async move {
        let slot = UsageSlot::new();
        let reporter = slot.clone();
        let first = stream::iter([Ok::<_, BoxError>(Frame::data(Bytes::from_static(b"data: {}\n\n")))]);
        let last = stream::once(async move {
            sleep(Duration::from_secs(1)).await;
            reporter.set(Usage::new(40, 2));
            Ok(Frame::data(Bytes::from_static(b"data: [DONE]\n\n")))
        });
        let body = RouteBody::new(StreamBody::new(first.chain(last))).with_usage_slot(slot);
        Ok::<_, BoxError>(http::Response::new(body))
    });
    let mut svc = stack(select(&reg, &store, RoutingStrategy::SimpleShuffle), provider);
    let mut ctx = RouteCtx::with_facts("g", RequestFacts::new().streaming(true));
    ctx.reserve_tokens = 500;
    let resp = call(&mut svc, with_ctx(ctx)).await.expect("served");
    let tokens = || async { store.usage(&[id("a")]).await[0].tokens };
    assert_eq!(tokens().await, 500);
    resp.into_body().collect().await.expect("whole stream");
    assert_eq!(tokens().await, 42);
}

/// The reservation is atomic: 20 requests in flight at once on a deployment with rpm = 5 ->
/// exactly 5 are sent, 15 are refused.
#[tokio::test(start_paused = true)]
async fn concurrent_requests_never_exceed_the_rpm_limit() {
    let reg = registry([dep("g", "a").rpm(5)]);
    let provider = delayed(&[("a", Duration::from_secs(1))]);
    let svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle).enforce_rate_limits(true), provider);
    let results = join_all((0..20).map(|_| svc.clone().oneshot(request("g")))).await;
    let sent = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(sent, 5);
    for err in results.into_iter().filter_map(Result::err) {
        route_error(&err, RouteErrorKind::RateLimited);
    }
}

/// The same on a multi-threaded runtime, where requests really race: the number admitted and
/// the in-flight counts afterwards do not depend on the interleaving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpm_limit_and_in_flight_counts_hold_under_parallel_requests() {
    let reg = registry([dep("g", "a").rpm(50), dep("g", "b").rpm(50), dep("g", "c").rpm(50)]);
    let store = memory();
    let svc = stack(select(&reg, &store, RoutingStrategy::LeastBusy).enforce_rate_limits(true), echo());
    let tasks: Vec<_> = (0..400).map(|_| tokio::spawn(svc.clone().oneshot(request("g")))).collect();
    let mut sent = 0;
    for t in tasks {
        match t.await.expect("task") {
            Ok(resp) => {
                sent += 1;
                drop(resp);
            }
            Err(err) => {
                route_error(&err, RouteErrorKind::RateLimited);
            }
        }
    }
    assert_eq!(sent, 150);
    for d in ["a", "b", "c"] {
        assert_eq!(store.local().in_flight(&id(d)), 0, "{d}");
    }
}

// ---------------------------------------------------------------------------------------------
// p2c-peak-ewma
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn p2c_sends_most_traffic_to_the_fast_deployment() {
    let reg = registry([dep("g", "slow"), dep("g", "fast")]);
    let store = memory();
    record_latency(&store, "slow", 2.0, 1);
    record_latency(&store, "fast", 0.05, 1);
    let provider = delayed(&[("slow", secs(2.0)), ("fast", secs(0.05))]);
    let svc = stack(select(&reg, &store, RoutingStrategy::P2cPeakEwma), provider);
    // Waves of 10 concurrent requests, so in-flight counts take part in the load.
    let mut counts = BTreeMap::<String, usize>::new();
    for _ in 0..40 {
        let wave = (0..10).map(|_| svc.clone().oneshot(request("g")));
        for resp in join_all(wave).await {
            *counts.entry(served(&resp.expect("served")).deployment.to_string()).or_default() += 1;
        }
    }
    assert!(count(&counts, "fast") >= 360, "{counts:?}");
}

/// A 429 penalty makes p2c avoid the deployment until the penalty runs out.
#[tokio::test(start_paused = true)]
async fn p2c_penalty_steers_traffic_away_until_it_expires() {
    let reg = registry([dep("g", "slow"), dep("g", "fast")]);
    let store = memory();
    record_latency(&store, "slow", 2.0, 1);
    record_latency(&store, "fast", 0.05, 1);
    let mut svc = stack(select(&reg, &store, RoutingStrategy::P2cPeakEwma), echo());
    assert_eq!(count(&tally(&mut svc, "g", 20).await, "fast"), 20);
    store.local().penalize(&id("fast"), Duration::from_secs(5));
    assert_eq!(count(&tally(&mut svc, "g", 20).await, "slow"), 20, "fast is penalized");
    advance(Duration::from_secs(5)).await;
    assert_eq!(count(&tally(&mut svc, "g", 20).await, "fast"), 20, "the penalty expired");
}

/// An upstream 429 with Retry-After penalizes the deployment by itself.
#[tokio::test(start_paused = true)]
async fn upstream_429_penalizes_the_deployment_for_its_retry_after() {
    let reg = registry([dep("g", "slow"), dep("g", "fast")]);
    let store = memory();
    record_latency(&store, "slow", 2.0, 1);
    record_latency(&store, "fast", 0.05, 1);
    let limited = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let provider = service_fn(move |req: Req| {
        let limited = limited.clone();
        async move {
            let id = selected_id(&req);
            if id == "fast" && limited.swap(false, std::sync::atomic::Ordering::SeqCst) {
                let e = RouteError::upstream(Outcome::RateLimited, DeploymentId::from(id), "429")
                    .with_retry_after(Duration::from_secs(10));
                return Err::<Resp, BoxError>(e.into());
            }
            Ok(http::Response::new(RouteBody::from(id)))
        }
    });
    let mut svc = stack(select(&reg, &store, RoutingStrategy::P2cPeakEwma), provider);
    let err = call(&mut svc, request("g")).await.expect_err("429");
    assert_eq!(route_error(&err, RouteErrorKind::Upstream).outcome(), Some(Outcome::RateLimited));
    assert_eq!(count(&tally(&mut svc, "g", 20).await, "slow"), 20);
    advance(Duration::from_secs(10)).await;
    assert_eq!(count(&tally(&mut svc, "g", 20).await, "fast"), 20);
}

// ---------------------------------------------------------------------------------------------
// Randomness
// ---------------------------------------------------------------------------------------------

/// The sequence of deployments `svc` picks for `n` requests.
async fn picks<S>(svc: &mut S, n: usize) -> Vec<String>
where
    S: Service<Req, Response = Resp, Error = BoxError>,
{
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(serve(svc, "g").await);
    }
    out
}

/// The same seed gives the same picks; a clone of a service (axum clones per request) draws its
/// own sequence instead of repeating its parent's.
#[tokio::test(start_paused = true)]
async fn seeded_services_are_reproducible_and_clones_do_not_repeat_each_other() {
    let reg = registry((0..8).map(|i| dep("g", &format!("d{i}"))));
    let mut one = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let mut again = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let mut clone = one.clone();
    let first = picks(&mut one, 32).await;
    assert_eq!(first, picks(&mut again, 32).await, "same seed, same picks");
    assert_ne!(first, picks(&mut clone, 32).await, "a clone has its own stream");
}

// ---------------------------------------------------------------------------------------------
// Served, and strategies per group
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn served_names_group_deployment_model_and_attempts() {
    let reg = registry([Deployment::builder("gpt-4o", "azure/gpt-4o-eu").id("eu")]);
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), echo());
    let resp = call(&mut svc, request("gpt-4o")).await.expect("served");
    let s = served(&resp).clone();
    assert_eq!((&*s.group, s.deployment.as_str(), &*s.model), ("gpt-4o", "eu", "azure/gpt-4o-eu"));
    assert_eq!((s.attempts, s.hops), (1, 0));
    assert!(s.failed.is_empty());
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    assert_eq!(&body[..], b"eu", "the provider was sent to the deployment Served names");
}

/// Attempts are counted per call: a retry replaying a clone of the request sees the first
/// attempt, and `Served` lists the failure.
#[tokio::test(start_paused = true)]
async fn served_counts_every_attempt_of_the_call_and_lists_the_failed_ones() {
    let reg = registry([dep("g", "broken"), dep("g", "ok")]);
    let provider = service_fn(|req: Req| async move {
        let id = selected_id(&req);
        if id == "broken" {
            return Err::<Resp, BoxError>(RouteError::upstream(Outcome::ServerError, id.into(), "500").into());
        }
        Ok(http::Response::new(RouteBody::from(id)))
    });
    let mut svc = stack(select(&reg, &memory(), RoutingStrategy::SimpleShuffle), provider);
    let mut ctx = RouteCtx::new("g");
    // Make the first attempt hit `broken`, as a retry layer would after its own pick.
    ctx.excluded = vec![id("ok")];
    let stored = ctx.clone();
    call(&mut svc, with_ctx(ctx)).await.expect_err("broken fails");
    let mut retry = stored;
    retry.excluded = vec![id("broken")];
    let resp = call(&mut svc, with_ctx(retry)).await.expect("ok serves");
    let s = served(&resp);
    assert_eq!((s.deployment.as_str(), s.attempts), ("ok", 2));
    assert_eq!(s.failed.len(), 1);
    assert_eq!((s.failed[0].deployment.as_str(), s.failed[0].outcome), ("broken", Outcome::ServerError));
}

/// Two groups with the same in-flight picture: the least-busy group always picks the idle
/// deployment, the shuffled one ignores load.
#[tokio::test(start_paused = true)]
async fn with_group_overrides_the_strategy_for_one_group() {
    let reg =
        registry([dep("busy", "busy-a"), dep("busy", "busy-b"), dep("shuffled", "sh-a"), dep("shuffled", "sh-b")]);
    let store = memory();
    let held: Vec<_> = ["busy-a", "sh-a"].iter().flat_map(|d| (0..5).map(|_| store.local().begin(&id(d)))).collect();
    let strategies =
        Strategies::new(RoutingStrategy::SimpleShuffle.build()).with_group("busy", RoutingStrategy::LeastBusy.build());
    let mut svc = stack(select(&reg, &store, strategies), echo());
    assert_eq!(count(&tally(&mut svc, "busy", 100).await, "busy-b"), 100);
    let shuffled = tally(&mut svc, "shuffled", 100).await;
    assert!(count(&shuffled, "sh-a") > 25 && count(&shuffled, "sh-b") > 25, "{shuffled:?}");
    drop(held);
}

#[tokio::test(start_paused = true)]
async fn routing_groups_set_the_strategy_of_their_models() {
    let reg = registry([
        Deployment::builder("cheap-chat", "openai/gpt-4o-mini").id("cheap-mini"),
        Deployment::builder("cheap-chat", "openai/gpt-4").id("cheap-gpt4"),
        Deployment::builder("chat", "openai/gpt-4o-mini").id("mini"),
        Deployment::builder("chat", "openai/gpt-4").id("gpt4"),
    ]);
    let groups = RoutingGroups::new(vec![RoutingGroup::new(
        "frugal",
        vec!["cheap-chat".to_owned()],
        RoutingStrategy::CostBased,
    )])
    .expect("valid routing groups");
    let strategies =
        Strategies::from_routing_groups(RoutingStrategy::SimpleShuffle.build(), &groups, &StrategyArgs::default());
    let mut svc = stack(select(&reg, &memory(), strategies), echo());
    assert_eq!(count(&tally(&mut svc, "cheap-chat", 100).await, "cheap-mini"), 100);
    let chat = tally(&mut svc, "chat", 100).await;
    assert!(count(&chat, "mini") > 25 && count(&chat, "gpt4") > 25, "{chat:?}");
}
