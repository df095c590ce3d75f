//! The whole default stack under failures: cooldowns, retries and fallbacks together, through
//! `Router::from_config` and the simulated provider, on a paused clock; and the HTTP provider
//! against loopback upstreams (real time) for what only the wire shows.

use std::{collections::BTreeSet, time::Duration};

use proptest::prelude::*;
use switchyard::{
    Config, Outcome, RouteError, RouteErrorKind, Router,
    services::{
        openai::{ChatMessage, ChatRequest},
        profile::Failure,
        sim::{SimProfile, SimProvider},
    },
};

fn hello(model: &str) -> ChatRequest {
    ChatRequest::new(model, vec![ChatMessage::user("hello")])
}

fn failing(kind: Failure, rate: f64) -> SimProfile {
    SimProfile::builder().fail(kind, rate).build().expect("valid profile")
}

const TWO_GROUPS: &str = r#"
model_list:
  - { model_name: primary, litellm_params: { model: openai/p1 }, model_info: { id: p1 } }
  - { model_name: primary, litellm_params: { model: openai/p2 }, model_info: { id: p2 } }
  - { model_name: backup, litellm_params: { model: openai/b1 }, model_info: { id: b1 } }
router_settings:
  num_retries: 2
  fallbacks: [{ primary: [backup] }]
  context_window_fallbacks: [{ primary: [big] }]
"#;

const WITH_BIG: &str = "  - { model_name: big, litellm_params: { model: openai/big }, model_info: { id: big } }\n";

fn router(sim: SimProvider) -> Router {
    let yaml = TWO_GROUPS.replacen("router_settings:", &format!("{WITH_BIG}router_settings:"), 1);
    Router::builder(&Config::from_yaml_str(&yaml).expect("valid config")).seed(3).build(sim).expect("router")
}

#[tokio::test(start_paused = true)]
async fn a_failing_deployment_is_retried_on_its_sibling_and_then_benched() {
    let sim = SimProvider::new(1).profile("p1", failing(Failure::RateLimited, 1.0));
    let stats = sim.stats();
    let router = router(sim);
    for _ in 0..50 {
        let answer = router.chat(hello("primary")).await.expect("served by the sibling");
        assert_eq!(answer.served.deployment.as_str(), "p2");
        assert_eq!(answer.served.hops, 0);
    }
    assert_eq!(stats.calls("p1"), 1, "one 429, then benched");
    let benched: Vec<_> = router.cooldowns().await.into_iter().map(|c| c.deployment).collect();
    assert_eq!(benched, vec!["p1".into()]);
}

#[tokio::test(start_paused = true)]
async fn a_group_that_fails_entirely_falls_back_and_reports_retries_and_hops() {
    let sim = SimProvider::new(2)
        .profile("p1", failing(Failure::InternalError, 1.0))
        .profile("p2", failing(Failure::InternalError, 1.0));
    let router = router(sim);
    let answer = router.chat(hello("primary")).await.expect("served by the backup group");
    assert_eq!(&*answer.served.group, "backup");
    assert_eq!(answer.served.hops, 1);
    assert_eq!(answer.served.retries, 0);
    let failed_groups: BTreeSet<_> = answer.served.failed.iter().map(|r| r.group.to_string()).collect();
    assert_eq!(failed_groups, BTreeSet::from(["primary".to_owned()]));
    assert!(answer.served.failed.len() >= 2, "both primaries were tried: {:?}", answer.served.failed);
}

#[tokio::test(start_paused = true)]
async fn a_context_window_error_goes_straight_to_the_context_window_table() {
    let sim = SimProvider::new(3)
        .profile("p1", failing(Failure::ContextWindowExceeded, 1.0))
        .profile("p2", failing(Failure::ContextWindowExceeded, 1.0));
    let stats = sim.stats();
    let router = router(sim);
    let answer = router.chat(hello("primary")).await.expect("served by the big-context group");
    assert_eq!(&*answer.served.group, "big");
    assert_eq!(stats.calls("p1") + stats.calls("p2"), 1, "not retried in the group: a fallback table exists");
    assert_eq!(stats.calls("b1"), 0, "not the general table");
}

#[tokio::test(start_paused = true)]
async fn when_everything_fails_the_last_error_comes_back_with_every_attempt() {
    let sim = SimProvider::new(4).default_profile(failing(Failure::Unavailable, 1.0));
    let router = router(sim);
    let err = router.chat(hello("primary")).await.expect_err("nothing can serve");
    assert_eq!(err.kind(), RouteErrorKind::Upstream);
    assert_eq!(err.outcome(), Some(Outcome::ServerError));
    let groups: Vec<_> = err.trail().iter().map(|r| r.group.to_string()).collect();
    assert!(groups.contains(&"primary".to_owned()) && groups.contains(&"backup".to_owned()), "{groups:?}");
}

#[tokio::test(start_paused = true)]
async fn the_call_deadline_bounds_retries_and_fallbacks_together() {
    let yaml = r#"
model_list:
  - { model_name: solo, litellm_params: { model: openai/s }, model_info: { id: s } }
router_settings:
  num_retries: 10
  deadline: 3
"#;
    let sim = SimProvider::new(5).default_profile(failing(Failure::InternalError, 1.0));
    let router = Router::builder(&Config::from_yaml_str(yaml).expect("valid")).seed(1).build(sim).expect("router");
    let start = tokio::time::Instant::now();
    router.chat(hello("solo")).await.expect_err("always fails");
    assert!(start.elapsed() <= Duration::from_secs(3), "took {:?}", start.elapsed());
}

/// A random routing world: groups with 1-3 deployments of random health, a random fallback
/// graph, random retry and hop limits.
#[derive(Debug, Clone)]
struct World {
    groups: Vec<Vec<(u8, f64)>>,
    edges: Vec<(usize, usize)>,
    num_retries: u32,
    max_fallbacks: u32,
}

fn world() -> impl Strategy<Value = World> {
    let group = prop::collection::vec((0u8..4, prop::sample::select(vec![0.0, 0.5, 1.0])), 1..=3);
    (prop::collection::vec(group, 1..=5), prop::collection::vec((0usize..5, 0usize..5), 0..10), 0u32..=3, 0u32..=5)
        .prop_map(|(groups, edges, num_retries, max_fallbacks)| World { groups, edges, num_retries, max_fallbacks })
}

const KINDS: [Failure; 4] = [Failure::InternalError, Failure::RateLimited, Failure::Unavailable, Failure::Connect];

impl World {
    fn config(&self) -> Config {
        let mut yaml = String::from("model_list:\n");
        for (g, deployments) in self.groups.iter().enumerate() {
            for (d, _) in deployments.iter().enumerate() {
                yaml.push_str(&format!(
                    "  - {{ model_name: g{g}, litellm_params: {{ model: openai/g{g}d{d} }}, model_info: {{ id: g{g}d{d} }} }}\n"
                ));
            }
        }
        yaml.push_str(&format!(
            "router_settings:\n  num_retries: {}\n  max_fallbacks: {}\n  fallbacks:\n",
            self.num_retries, self.max_fallbacks
        ));
        let n = self.groups.len();
        let mut targets: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(a, b) in &self.edges {
            if a < n && b < n && !targets[a].contains(&b) {
                targets[a].push(b);
            }
        }
        for (a, t) in targets.iter().enumerate().filter(|(_, t)| !t.is_empty()) {
            let list: Vec<String> = t.iter().map(|b| format!("g{b}")).collect();
            yaml.push_str(&format!("    - {{ g{a}: [{}] }}\n", list.join(", ")));
        }
        if targets.iter().all(Vec::is_empty) {
            yaml = yaml.replace("  fallbacks:\n", "");
        }
        Config::from_yaml_str(&yaml).unwrap_or_else(|e| panic!("generated config is valid: {e}\n{yaml}"))
    }

    fn provider(&self, seed: u64) -> SimProvider {
        let mut sim = SimProvider::new(seed);
        for (g, deployments) in self.groups.iter().enumerate() {
            for (d, &(kind, rate)) in deployments.iter().enumerate() {
                sim = sim.profile(format!("g{g}d{d}"), failing(KINDS[kind as usize], rate));
            }
        }
        sim
    }
}

/// Groups of a trail in order of first appearance, and whether each group's attempts are one
/// contiguous run (a group is never revisited after the call left it).
fn visits(groups: &[String]) -> (Vec<String>, bool) {
    let mut order: Vec<String> = Vec::new();
    for g in groups {
        if order.last() != Some(g) {
            if order.contains(g) {
                return (order, false);
            }
            order.push(g.clone());
        }
    }
    (order, true)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(7), ..ProptestConfig::default() })]

    #[test]
    fn every_call_ends_typed_with_bounded_attempts_and_no_group_revisited(world in world(), seed in 0u64..1000) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().expect("runtime");
        rt.block_on(async {
            let router = Router::builder(&world.config()).seed(seed).build(world.provider(seed)).expect("router");
            for _ in 0..6 {
                let (trail, hops): (Vec<String>, Option<u32>) = match router.chat(hello("g0")).await {
                    Ok(answer) => {
                        let mut groups: Vec<String> = answer.served.failed.iter().map(|r| r.group.to_string()).collect();
                        groups.push(answer.served.group.to_string());
                        prop_assert!(answer.served.attempts as usize >= groups.len());
                        (groups, Some(answer.served.hops))
                    }
                    Err(e) => {
                        let e: &RouteError = &e;
                        prop_assert!(matches!(e.kind(), RouteErrorKind::Upstream | RouteErrorKind::AllCoolingDown | RouteErrorKind::NoCandidates));
                        (e.trail().iter().map(|r| r.group.to_string()).collect(), None)
                    }
                };
                let (order, contiguous) = visits(&trail);
                prop_assert!(contiguous, "a group was visited twice: {:?}", trail);
                // A group refused without an attempt (all cooling down) is a hop with no trail record.
                let groups_attempted = order.len() as u32;
                let hops = hops.unwrap_or(world.max_fallbacks);
                prop_assert!(hops <= world.max_fallbacks, "{} hops, max_fallbacks {}", hops, world.max_fallbacks);
                prop_assert!(groups_attempted <= 1 + hops, "{} groups attempted in {} hops", groups_attempted, hops);
                prop_assert!(
                    trail.len() as u32 <= (1 + world.num_retries) * (1 + hops),
                    "{} attempts with {} retries and {} hops", trail.len(), world.num_retries, hops
                );
            }
            Ok(())
        })?;
    }
}

// ---- the HTTP provider against loopback upstreams ----

/// An OpenAI-compatible upstream on `127.0.0.1:0` that answers every request with 200 and
/// `body`; its origin and the number of requests it received.
async fn upstream(body: &'static str) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use http_body_util::{BodyExt, Full};
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the upstream");
    let origin = format!("http://{}", listener.local_addr().expect("upstream address"));
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let counter = counter.clone();
            let service = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                let counter = counter.clone();
                async move {
                    let _ = req.into_body().collect().await;
                    counter.fetch_add(1, Ordering::SeqCst);
                    http::Response::builder()
                        .header("content-type", "application/json")
                        .body(Full::new(bytes::Bytes::from_static(body.as_bytes())))
                }
            });
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(tcp);
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
            });
        }
    });
    (origin, hits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_carrying_an_error_envelope_is_retried_on_a_sibling_and_benches_its_deployment() {
    use std::sync::atomic::Ordering;
    use switchyard::services::provider::{HttpProvider, ProviderConfig};
    const ENVELOPE: &str =
        r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#;
    const COMPLETION: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#;
    let (broken, broken_hits) = upstream(ENVELOPE).await;
    let (healthy, healthy_hits) = upstream(COMPLETION).await;
    // The envelope's deployment weighs far more, so the first pick is it.
    let config = Config::from_yaml_str(&format!(
        r#"
model_list:
  - model_name: gpt-4o
    litellm_params: {{ model: openai/gpt-4o, api_key: sk-a, api_base: "{broken}/v1", weight: 1000 }}
    model_info: {{ id: envelope }}
  - model_name: gpt-4o
    litellm_params: {{ model: openai/gpt-4o, api_key: sk-b, api_base: "{healthy}/v1", weight: 1 }}
    model_info: {{ id: healthy }}
router_settings: {{ num_retries: 1, allowed_fails: 0 }}
"#
    ))
    .expect("valid config");
    let provider = HttpProvider::new(ProviderConfig::default().timeout(Duration::from_secs(10))).expect("provider");
    let router = Router::builder(&config).seed(5).build(provider).expect("router builds");

    let answer = tokio::time::timeout(Duration::from_secs(20), router.chat(hello("gpt-4o")))
        .await
        .expect("answered in time")
        .expect("served by the sibling");
    assert_eq!(answer.served.deployment.as_str(), "healthy");
    assert_eq!(answer.served.attempts, 2, "the 200 envelope was a failed attempt");
    assert_eq!(answer.completion.choices.len(), 1);
    assert_eq!(broken_hits.load(Ordering::SeqCst), 1);
    let benched: Vec<_> = router.cooldowns().await.into_iter().map(|c| c.deployment).collect();
    assert_eq!(benched, vec!["envelope".into()], "the envelope's deployment is cooling down");

    // While it cools down, requests go to the sibling only.
    for _ in 0..5 {
        let answer = router.chat(hello("gpt-4o")).await.expect("served");
        assert_eq!(answer.served.deployment.as_str(), "healthy");
    }
    assert_eq!(broken_hits.load(Ordering::SeqCst), 1);
    assert_eq!(healthy_hits.load(Ordering::SeqCst), 6);
}
