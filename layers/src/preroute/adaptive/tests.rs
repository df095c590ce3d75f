//! The adaptive router's decision rules, learning, decay and sharing, on a paused clock with
//! seeded draws.

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use rand::{SeedableRng, rngs::SmallRng};
use tower::{ServiceExt, service_fn};
use tower_layer::Layer;

use super::*;
use crate::{
    AttemptRecord, BoxError, DeploymentId, RequestFacts, RouteBody, RouteCtx, RouteError, RouteErrorKind, RouteRequest,
    Served,
    outcome::Outcome,
    preroute::{PreRouteLayer, PreRouters},
};

fn candidates() -> Vec<AdaptiveCandidate> {
    vec![
        AdaptiveCandidate::new("a", AdaptivePreferences::new(2)).with_input_cost(Some(1e-6)),
        AdaptiveCandidate::new("b", AdaptivePreferences::new(2)).with_input_cost(Some(1e-6)),
    ]
}

fn router_on(store: &Arc<StateStore>, config: AdaptiveRouterConfig) -> AdaptiveRouter {
    AdaptiveRouter::new("auto", config, candidates(), store.clone(), Some(1)).expect("a valid router")
}

fn router() -> (Arc<StateStore>, AdaptiveRouter) {
    let store = Arc::new(StateStore::memory());
    let r = router_on(&store, AdaptiveRouterConfig::new(["a", "b"]));
    (store, r)
}

/// How many of `draws` seeded decisions for `class` go to `group`.
fn share(r: &AdaptiveRouter, class: RequestClass, group: &str, draws: usize) -> usize {
    let mut rng = SmallRng::seed_from_u64(42);
    (0..draws).filter(|_| &*r.decide(class, None, &mut rng).target == group).count()
}

fn cell<'a>(snapshot: &'a AdaptiveSnapshot, class: &str, group: &str) -> &'a CellSnapshot {
    snapshot.cells.iter().find(|c| c.request_type == class && c.model == group).expect("the cell")
}

#[tokio::test(start_paused = true)]
async fn equal_priors_split_traffic_and_learning_moves_it() {
    let (_, r) = router();
    // Same tier, same price: the draw alone decides, about half each.
    assert_eq!(share(&r, RequestClass::General, "a", 1000), 509);
    for _ in 0..20 {
        r.feedback(RequestClass::General, "a", Feedback::Signal(Signal::Satisfaction)).expect("applies");
        r.feedback(RequestClass::General, "b", Feedback::Signal(Signal::Failure)).expect("applies");
    }
    // After 20 successes for a and 20 failures for b, a wins nearly every draw.
    assert_eq!(share(&r, RequestClass::General, "a", 1000), 1000);
    // Another class learned nothing.
    assert_eq!(share(&r, RequestClass::Writing, "a", 1000), 509);
}

#[tokio::test(start_paused = true)]
async fn a_tier_and_a_strength_set_the_prior_and_cost_breaks_even_priors() {
    let store = Arc::new(StateStore::memory());
    let r = AdaptiveRouter::new(
        "auto",
        AdaptiveRouterConfig::new(["big", "small"]),
        [
            AdaptiveCandidate::new("big", AdaptivePreferences::new(3).with_strengths([RequestClass::CodeGeneration]))
                .with_input_cost(Some(1e-5)),
            AdaptiveCandidate::new("small", AdaptivePreferences::new(1)).with_input_cost(Some(1e-7)),
        ],
        store,
        Some(1),
    )
    .expect("valid");
    let snap = r.snapshot();
    assert!((cell(&snap, "code_generation", "big").prior_mean - 0.95).abs() < 1e-9);
    assert!((cell(&snap, "general", "big").prior_mean - 0.7).abs() < 1e-9);
    assert!((cell(&snap, "general", "small").prior_mean - 0.3).abs() < 1e-9);
    // Code generation: big's prior (0.95 × 0.7 = 0.665) beats small's (0.3 × 0.7 + 0.3 = 0.51) most of the time.
    assert_eq!(share(&r, RequestClass::CodeGeneration, "big", 1000), 911);
    // General: 0.7 × 0.7 = 0.49 against 0.7 × 0.3 + 0.3 = 0.51 on average: close, both win often.
    assert_eq!(share(&r, RequestClass::General, "big", 1000), 467);
}

#[tokio::test(start_paused = true)]
async fn evidence_decays_toward_the_prior_with_the_half_life() {
    let store = Arc::new(StateStore::memory());
    let r = router_on(&store, AdaptiveRouterConfig::new(["a", "b"]).with_decay_half_life(Duration::from_secs(3600)));
    for _ in 0..40 {
        r.feedback(RequestClass::General, "b", Feedback::Score(0.0)).expect("applies");
    }
    let samples = |r: &AdaptiveRouter| cell(&r.snapshot(), "general", "b").samples;
    assert!((samples(&r) - 40.0).abs() < 1e-9);
    tokio::time::advance(Duration::from_secs(3600)).await;
    r.sync().await;
    assert!((samples(&r) - 20.0).abs() < 1e-6, "{}", samples(&r));
    tokio::time::advance(Duration::from_secs(36_000)).await;
    r.sync().await;
    assert!(samples(&r) < 0.03, "{}", samples(&r));
    // Back near the prior, the split is about even again (b keeps a trace of its failures).
    assert_eq!(share(&r, RequestClass::General, "a", 1000), 497);
}

#[tokio::test(start_paused = true)]
async fn the_sample_cap_scales_evidence_down_keeping_its_mean() {
    let store = Arc::new(StateStore::memory());
    let mut config = AdaptiveRouterConfig::new(["a", "b"]);
    config.sample_cap = 30.0;
    let r = router_on(&store, config);
    for _ in 0..30 {
        r.feedback(RequestClass::General, "a", Feedback::Score(0.75)).expect("applies");
    }
    let snap = r.snapshot();
    let a = cell(&snap, "general", "a");
    assert!((a.alpha + a.beta - 30.0).abs() < 1e-9, "{a:?}");
    // Evidence 15 : 5 (mean 0.75) on the prior 5 : 5.
    assert!((a.alpha - 20.0).abs() < 1e-9, "{a:?}");
}

#[tokio::test(start_paused = true)]
async fn replicas_sharing_a_store_learn_together() {
    let store = Arc::new(StateStore::memory());
    let replicas: Vec<AdaptiveRouter> =
        (0..3).map(|_| router_on(&store, AdaptiveRouterConfig::new(["a", "b"]))).collect();
    for _ in 0..10 {
        replicas[0].feedback(RequestClass::Writing, "a", Feedback::Score(1.0)).expect("applies");
        replicas[1].feedback(RequestClass::Writing, "b", Feedback::Score(0.0)).expect("applies");
    }
    for r in &replicas {
        r.sync().await;
        let snap = r.snapshot();
        assert!((cell(&snap, "writing", "a").alpha - 15.0).abs() < 1e-9);
        assert!((cell(&snap, "writing", "b").beta - 15.0).abs() < 1e-9);
    }
    // A router built later starts from what the store holds.
    let late = router_on(&store, AdaptiveRouterConfig::new(["a", "b"]));
    assert!((cell(&late.snapshot(), "writing", "a").alpha - 15.0).abs() < 1e-9);
}

#[tokio::test(start_paused = true)]
async fn the_sync_task_refreshes_the_mirror_on_its_interval() {
    let store = Arc::new(StateStore::memory());
    let r = router_on(&store, AdaptiveRouterConfig::new(["a", "b"]));
    r.start_sync();
    store.bandit_add("auto", "general|a", 5.0, 0.0, r.inner.decay).await;
    assert_eq!(cell(&r.snapshot(), "general", "a").samples, 0.0);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!((cell(&r.snapshot(), "general", "a").samples - 5.0).abs() < 1e-3);
}

#[tokio::test(start_paused = true)]
async fn a_callers_minimum_tier_leaves_lower_groups_out() {
    let store = Arc::new(StateStore::memory());
    let r = AdaptiveRouter::new(
        "auto",
        AdaptiveRouterConfig::new(["t1", "t3"]),
        [
            AdaptiveCandidate::new("t1", AdaptivePreferences::new(1)).with_input_cost(Some(1e-8)),
            AdaptiveCandidate::new("t3", AdaptivePreferences::new(3)).with_input_cost(Some(1e-5)),
        ],
        store,
        Some(1),
    )
    .expect("valid");
    let mut rng = SmallRng::seed_from_u64(1);
    for _ in 0..50 {
        assert_eq!(&*r.decide(RequestClass::General, Some(3), &mut rng).target, "t3");
    }
    let unmet = r.decide(RequestClass::General, Some(4), &mut rng);
    assert_eq!(&*unmet.target, "t3");
    assert!(unmet.signals.iter().any(|s| s == "min_quality_tier 4 unmet"), "{:?}", unmet.signals);
}

#[test]
fn costs_normalize_cheapest_one_dearest_zero_unknown_dearest() {
    assert_eq!(normalized_costs([Some(1.0), Some(3.0), Some(2.0)].into_iter()), [1.0, 0.0, 0.5]);
    assert_eq!(normalized_costs([Some(1.0), Some(1.0)].into_iter()), [0.5, 0.5]);
    assert_eq!(normalized_costs([Some(1.0), None].into_iter()), [1.0, 0.0]);
    assert_eq!(normalized_costs([None, None].into_iter()), [0.5, 0.5]);
}

#[test]
fn invalid_settings_name_their_key() {
    let store = Arc::new(StateStore::memory());
    let build = |config: AdaptiveRouterConfig, c: Vec<AdaptiveCandidate>| {
        AdaptiveRouter::new("auto", config, c, store.clone(), None).map(|_| ()).unwrap_err().to_string()
    };
    let e = build(AdaptiveRouterConfig::new(Vec::<String>::new()), vec![]);
    assert!(e.contains("available_models"), "{e}");
    let e = build(AdaptiveRouterConfig::new(["a", "b"]).with_weights(Weights::new(0.5, 0.4)), candidates());
    assert!(e.contains("weights: must sum to 1.0"), "{e}");
    let e = build(AdaptiveRouterConfig::new(["a"]), vec![AdaptiveCandidate::new("a", AdaptivePreferences::new(4))]);
    assert!(e.contains("quality_tier 4"), "{e}");
    let many: Vec<String> = (0..147).map(|i| format!("g{i}")).collect();
    let e = build(AdaptiveRouterConfig::new(many), vec![]);
    assert!(e.contains("above the limit of 1024"), "{e}");
    let mut c = AdaptiveRouterConfig::new(["a"]);
    c.sample_cap = 5.0;
    assert!(build(c, vec![]).contains("sample_cap"));
}

#[tokio::test(start_paused = true)]
async fn feedback_checks_its_score_and_group() {
    let (_, r) = router();
    assert_eq!(r.feedback(RequestClass::General, "a", Feedback::Score(1.5)), Err(FeedbackError::InvalidScore));
    assert_eq!(
        r.feedback(RequestClass::General, "zzz", Feedback::Score(1.0)),
        Err(FeedbackError::UnknownGroup("zzz".into()))
    );
    assert_eq!(r.feedback(RequestClass::General, "a", Feedback::Signal(Signal::Exhaustion)), Ok((0.0, 0.0)));
    assert_eq!(cell(&r.snapshot(), "general", "a").samples, 0.0);
}

type Resp = http::Response<RouteBody>;

fn served(group: &str, failed: Vec<AttemptRecord>) -> Served {
    Served {
        group: group.into(),
        deployment: DeploymentId::from(format!("{group}-1")),
        model: "m".into(),
        attempts: 1,
        retries: 0,
        max_retries: None,
        upstream: Duration::ZERO,
        hops: 0,
        failed,
    }
}

fn request(body: &'static str) -> http::Request<Bytes> {
    let mut req = http::Request::new(Bytes::new());
    let facts = RequestFacts::new().with_body(Bytes::from_static(body.as_bytes()));
    req.extensions_mut().insert(RouteCtx::with_facts("auto", facts));
    req
}

#[tokio::test(start_paused = true)]
async fn call_outcomes_teach_the_chosen_groups_cell() {
    let (_, r) = router();
    let body = r#"{"model":"auto","messages":[{"role":"user","content":"Please proofread this email"}]}"#;
    // The provider serves every call with the group it was sent to.
    let ok = PreRouteLayer::set(PreRouters::new().with("auto", r.clone())).layer(service_fn(
        |req: http::Request<Bytes>| async move {
            let target = req.route_ctx().expect("a context").target().to_owned();
            let mut resp = Resp::new(RouteBody::empty());
            resp.extensions_mut().insert(served(&target, vec![]));
            Ok::<_, BoxError>(resp)
        },
    ));
    let resp = ok.clone().oneshot(request(body)).await.expect("answers");
    let decision = resp.extensions().get::<Arc<PreRouteDecision>>().expect("a decision").clone();
    assert_eq!(decision.tier.as_deref(), Some("writing"));
    assert_eq!(&*decision.reason, REASON);
    let snap = r.snapshot();
    assert_eq!(cell(&snap, "writing", &decision.target).samples, 1.0);
    assert_eq!((snap.decisions, snap.outcomes), (1, 1));

    // A refusal counts against the chosen group.
    let refused = PreRouteLayer::new("auto", r.clone()).layer(service_fn(|req: http::Request<Bytes>| async move {
        let target: Arc<str> = req.route_ctx().expect("a context").target().into();
        let err = RouteError::upstream(Outcome::ContentPolicy, DeploymentId::from("d"), "refused").with_group(target);
        Err::<Resp, BoxError>(err.into())
    }));
    let err = refused.oneshot(request(body)).await.expect_err("refused");
    assert_eq!(RouteError::find(&*err).map(RouteError::kind), Some(RouteErrorKind::Upstream));
    let snap = r.snapshot();
    let failures: f64 = snap.cells.iter().filter(|c| c.request_type == "writing").map(|c| c.beta - 5.0).sum();
    assert!((failures - 1.0).abs() < 1e-9, "{failures}");
}

#[tokio::test(start_paused = true)]
async fn a_fallback_counts_the_chosen_groups_failure_not_the_other_groups_success() {
    let (_, r) = router();
    let decision = PreRouteDecision::new("a", REASON).with_tier("general");
    let failed = AttemptRecord {
        group: "a".into(),
        deployment: DeploymentId::from("a-1"),
        outcome: Outcome::ServerError,
        duration: Duration::ZERO,
        message: None,
    };
    let s = served("b", vec![failed]);
    r.on_outcome(&PreRouteOutcome::served("auto", &decision, Some(&s)));
    let snap = r.snapshot();
    assert_eq!(cell(&snap, "general", "a").beta, 6.0);
    assert_eq!(cell(&snap, "general", "b").samples, 0.0);
    // A rate limit teaches nothing: availability is the cooldown layer's business.
    r.on_outcome(&PreRouteOutcome::failed("auto", &decision, Some(Outcome::RateLimited)));
    assert_eq!(r.snapshot().outcomes, 1);
}

#[tokio::test(start_paused = true)]
async fn a_failed_tool_result_counts_against_the_sessions_previous_group() {
    let (_, r) = router();
    let first = r#"{"model":"auto","messages":[{"role":"user","content":"list the files"}]}"#;
    let failed = r#"{"model":"auto","messages":[{"role":"user","content":"list the files"},
        {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ls","input":{}}]},
        {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"denied"}]}]}"#;
    let route = |body: &'static str, session: Option<&str>| {
        let facts =
            RequestFacts::new().with_body(Bytes::from_static(body.as_bytes())).session(session.map(str::to_owned));
        r.route(&PreRouteInput::new("auto", &facts)).expect("a decision")
    };
    let d1 = route(first, Some("s1"));
    let failures = |r: &AdaptiveRouter| r.snapshot().cells.iter().map(|c| c.beta).sum::<f64>() - 5.0 * 14.0;
    assert_eq!(failures(&r), 0.0);
    // The next turn reports the tool call failed: the group that made it (d1's) gets beta + 1.
    let _ = route(failed, Some("s1"));
    let snap = r.snapshot();
    assert_eq!(snap.tool_failures, 1);
    assert_eq!(cell(&snap, "general", &d1.target).beta, 6.0);
    // Without a session nothing can be attributed.
    let _ = route(failed, None);
    assert_eq!(r.snapshot().tool_failures, 1);
    assert_eq!(r.inner.sessions.lock().len(), 1);
}
