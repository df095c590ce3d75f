//! Properties of the routing model, checked on random inputs with proptest (fixed seeds, no
//! persisted failures, so every run checks the same cases), each through the public API and on a
//! paused clock:
//!
//! - simple-shuffle's selection frequencies converge to the deployments' weights;
//! - the usage window (a sliding-window log) agrees with a model of its arithmetic, and its
//!   "room in" answer is exact;
//! - attempts through the real fallback + retry + select stack, with a provider that always
//!   fails, are bounded by (1 + retries) × (1 + hops), and no group is visited twice, whatever
//!   the fallback tables (cycles and self-references included);
//! - cooldown deadlines never shrink under any sequence of `bench` (with and without growth).

mod support;

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use bytes::Bytes;
use parking_lot::Mutex;
use proptest::{
    prelude::*,
    test_runner::{RngAlgorithm, RngSeed},
};
use support::{Req, Resp, call, dep, echo, registry, request, tally};
use switchyard_layers::{
    BoxError, DeploymentId, Outcome, RouteError, RouteRequest, StateStore,
    fallback::{FallbackConfig, FallbackEvent, FallbackLayer, FallbackTables},
    retry::{RetryConfig, RetryLayer},
    select::{RoutingStrategy, SelectLayer},
    state::{Admission, CooldownState, Growth, Limits, StoreConfig},
};
use tokio::time::{Instant, advance};
use tower::{ServiceBuilder, service_fn};

/// The same cases on every run: a fixed seed and algorithm, nothing persisted.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(0x5EED_0008),
        rng_algorithm: RngAlgorithm::ChaCha,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A current-thread runtime on a paused clock.
fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().expect("runtime")
}

// ---------------------------------------------------------------------------------------------
// simple-shuffle: frequencies converge to weights
// ---------------------------------------------------------------------------------------------

/// Requests per case: enough that the chi-square statistic is meaningful for 5 deployments.
const PICKS: usize = 2_000;

/// The chi-square critical value at p = 0.0001 for 1..=4 degrees of freedom: a correct sampler
/// exceeds it once in 10,000 cases (and the seeds are fixed, so a pass is stable).
const CHI2_CRITICAL: [f64; 4] = [15.14, 18.42, 21.11, 23.51];

proptest! {
    #![proptest_config(config(48))]

    /// Pearson's chi-square of the observed picks against the weights stays under the critical
    /// value, and every deployment with a weight is picked.
    #[test]
    fn shuffle_frequencies_converge_to_weights(
        weights in prop::collection::vec(1u32..=20, 2..=5),
        seed in any::<u64>(),
    ) {
        let deployments = weights.iter().enumerate().map(|(i, w)| dep("g", &format!("d{i}")).weight(f64::from(*w)));
        let reg = registry(deployments);
        let layer = SelectLayer::new(reg, Arc::new(StateStore::memory()), RoutingStrategy::SimpleShuffle.build())
            .with_seed(seed);
        let mut svc = ServiceBuilder::new().layer(layer).service(echo());
        let counts = paused().block_on(tally(&mut svc, "g", PICKS));
        let total: u32 = weights.iter().sum();
        let mut chi2 = 0.0;
        for (i, w) in weights.iter().enumerate() {
            let expected = PICKS as f64 * f64::from(*w) / f64::from(total);
            let observed = counts.get(&format!("d{i}")).copied().unwrap_or(0) as f64;
            prop_assert!(observed > 0.0, "d{} (weight {}) never picked: {:?}", i, w, counts);
            chi2 += (observed - expected).powi(2) / expected;
        }
        let critical = CHI2_CRITICAL[weights.len() - 2];
        prop_assert!(chi2 < critical, "chi2 {:.2} >= {} for weights {:?}: {:?}", chi2, critical, weights, counts);
    }
}

// ---------------------------------------------------------------------------------------------
// the usage window: model vs implementation
// ---------------------------------------------------------------------------------------------

/// One step of a usage-window run.
#[derive(Clone, Debug)]
enum WindowOp {
    /// Let this many microseconds pass.
    Wait(u64),
    /// Reserve one request with this token estimate (no limits: always admitted).
    Reserve(u64),
    /// Reconcile the `n`-th reservation (modulo the count) with this real usage, once.
    Reconcile(usize, u64),
    /// Ask how long until a request fits under this rpm limit.
    RoomFor(u64),
}

fn window_ops() -> impl Strategy<Value = Vec<WindowOp>> {
    let op = prop_oneof![
        3 => (0u64..400_000).prop_map(WindowOp::Wait),
        1 => (0u64..2_000_000).prop_map(WindowOp::Wait),
        4 => (0u64..1_000).prop_map(WindowOp::Reserve),
        1 => (any::<usize>(), 0u64..1_000).prop_map(|(i, t)| WindowOp::Reconcile(i, t)),
        1 => (1u64..8).prop_map(WindowOp::RoomFor),
    ];
    prop::collection::vec(op, 1..60)
}

/// The window's documented arithmetic over an exact event log: an event at `t` is recorded at
/// tick `ceil(t / r)`, and counts at `now` while `tick + ceil(span / r) > floor(now / r)`.
struct WindowModel {
    resolution_ns: u64,
    span_ticks: u64,
    /// (time since the store was made, in ns; tokens; reconciled already).
    events: Vec<(u64, u64, bool)>,
}

impl WindowModel {
    fn counts(&self, event_ns: u64, now_ns: u64) -> bool {
        event_ns.div_ceil(self.resolution_ns) + self.span_ticks > now_ns / self.resolution_ns
    }

    /// (requests, tokens) at `now`.
    fn totals(&self, now_ns: u64) -> (u64, u64) {
        let live = self.events.iter().filter(|(t, ..)| self.counts(*t, now_ns));
        live.fold((0, 0), |(n, tokens), (_, k, _)| (n + 1, tokens + k))
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Usage read from the store always equals the model; an event counts for at least the whole
    /// span and at most one resolution past the span rounded up to whole resolutions; `room_in`
    /// under an rpm limit is exact (room at the answer, none a nanosecond before it).
    #[test]
    fn usage_window_matches_its_model(
        span_ms in 1u64..=3_000,
        resolution_ms in 1u64..=250,
        ops in window_ops(),
    ) {
        paused().block_on(async move {
            let mut store_config = StoreConfig::default();
            store_config.usage_window = Duration::from_millis(span_ms);
            store_config.resolution = Duration::from_millis(resolution_ms);
            let store = StateStore::memory_with(store_config);
            let start = Instant::now();
            let id = DeploymentId::from("d");
            let mut model = WindowModel {
                resolution_ns: resolution_ms * 1_000_000,
                span_ticks: span_ms.div_ceil(resolution_ms),
                events: Vec::new(),
            };
            let mut reservations = Vec::new();
            let span_ns = span_ms * 1_000_000;
            for op in ops {
                let now_ns = u64::try_from(start.elapsed().as_nanos()).expect("short runs");
                match op {
                    WindowOp::Wait(us) => advance(Duration::from_micros(us)).await,
                    WindowOp::Reserve(tokens) => {
                        let Admission::Admitted(r) = store.try_reserve(&id, Limits::default(), tokens).await else {
                            panic!("no limits: always admitted");
                        };
                        reservations.push((r, model.events.len()));
                        model.events.push((now_ns, tokens, false));
                    }
                    WindowOp::Reconcile(i, actual) => {
                        if reservations.is_empty() {
                            continue;
                        }
                        let (r, at) = &reservations[i % reservations.len()];
                        let (t, _, done) = model.events[*at];
                        if done {
                            continue;
                        }
                        store.reconcile_detached(r, actual);
                        store.flush().await;
                        let live = model.counts(t, now_ns);
                        let event = &mut model.events[*at];
                        event.2 = true;
                        if live {
                            event.1 = actual;
                        }
                    }
                    WindowOp::RoomFor(rpm) => {
                        let limits = Limits { rpm: Some(rpm), tpm: None };
                        let wait = store.room_in(&id, limits, 0).await;
                        let (requests, _) = model.totals(now_ns);
                        if requests < rpm {
                            prop_assert_eq!(wait, Duration::ZERO);
                        } else {
                            let wait_ns = u64::try_from(wait.as_nanos()).expect("short waits");
                            prop_assert!(wait_ns > 0);
                            prop_assert!(model.totals(now_ns + wait_ns).0 < rpm, "no room after {:?}", wait);
                            prop_assert!(model.totals(now_ns + wait_ns - 1).0 >= rpm, "room before {:?}", wait);
                        }
                    }
                }
                let now_ns = u64::try_from(start.elapsed().as_nanos()).expect("short runs");
                let usage = store.usage(std::slice::from_ref(&id)).await[0];
                prop_assert_eq!((usage.requests, usage.tokens), model.totals(now_ns));
                for (t, ..) in &model.events {
                    let age = now_ns - t;
                    if age < span_ns {
                        prop_assert!(model.counts(*t, now_ns), "an event left before its span");
                    }
                    // At most one resolution past the span rounded up to whole ticks (with the
                    // defaults, 60 s in 10 ms ticks, exactly one resolution past the span).
                    if age >= model.span_ticks * model.resolution_ns + model.resolution_ns {
                        prop_assert!(!model.counts(*t, now_ns), "an event outstayed its span by over one tick");
                    }
                }
            }
            Ok(())
        })?;
    }
}

// ---------------------------------------------------------------------------------------------
// attempts and visits through fallback + retry + select
// ---------------------------------------------------------------------------------------------

/// A random router: `sizes[g]` deployments in group `g`, fallback edges (self-loops and cycles
/// allowed), a default list, limits, the outcome every attempt fails with, and the start group.
#[derive(Clone, Debug)]
struct Routes {
    sizes: Vec<usize>,
    edges: Vec<Vec<usize>>,
    default: Vec<usize>,
    num_retries: u32,
    max_fallbacks: u32,
    outcome: Outcome,
    start: usize,
}

const FAILURES: [Outcome; 6] = [
    Outcome::ServerError,
    Outcome::RateLimited,
    Outcome::Timeout,
    Outcome::Connect,
    Outcome::ContextWindowExceeded,
    Outcome::Auth,
];

fn routes() -> impl Strategy<Value = Routes> {
    (1usize..=5)
        .prop_flat_map(|n| {
            (
                prop::collection::vec(1usize..=3, n),
                prop::collection::vec(prop::collection::vec(0..n, 0..=3), n),
                prop::collection::vec(0..n, 0..=2),
                0u32..=3,
                0u32..=4,
                prop::sample::select(FAILURES.to_vec()),
                0..n,
            )
        })
        .prop_map(|(sizes, edges, default, num_retries, max_fallbacks, outcome, start)| Routes {
            sizes,
            edges,
            default,
            num_retries,
            max_fallbacks,
            outcome,
            start,
        })
}

/// What one call did: the group of every attempt in order, the hops, and whether it ended in a
/// typed routing error.
struct CallTrace {
    attempts: Vec<String>,
    hops: u32,
    typed: bool,
}

fn run_routes(r: &Routes, seed: u64) -> CallTrace {
    let group = |g: usize| format!("g{g}");
    let reg = registry(
        r.sizes.iter().enumerate().flat_map(|(g, n)| (0..*n).map(move |d| dep(&group(g), &format!("g{g}d{d}")))),
    );
    let mut tables = FallbackTables::default();
    for (g, targets) in r.edges.iter().enumerate().filter(|(_, t)| !t.is_empty()) {
        tables.general.insert(group(g), targets.iter().map(|t| group(*t)).collect());
    }
    tables.default = r.default.iter().map(|t| group(*t)).collect();
    tables.max_fallbacks = r.max_fallbacks;

    let attempts: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = attempts.clone();
    let outcome = r.outcome;
    let provider = service_fn(move |req: Req| {
        let seen = seen.clone();
        async move {
            let d = req.route_ctx().and_then(|c| c.selected.clone()).expect("the select layer chose");
            seen.lock().push(d.group.to_string());
            let body = Bytes::from_static(br#"{"error":{"message":"always down"}}"#);
            Err::<Resp, BoxError>(
                RouteError::upstream(outcome, d.id.clone(), "always down")
                    .with_upstream_response(outcome.http_status(), body)
                    .into(),
            )
        }
    });
    let hops: Arc<Mutex<u32>> = Arc::default();
    let hop_sink = hops.clone();
    let store = Arc::new(StateStore::memory());
    let fallback = FallbackLayer::new(reg.clone(), FallbackConfig::new().tables(tables).max_fallbacks(r.max_fallbacks))
        .on_event(move |e| {
            if matches!(e, FallbackEvent::Hop { .. }) {
                *hop_sink.lock() += 1;
            }
        });
    let retry =
        RetryLayer::new(reg.clone(), store.clone(), RetryConfig::default().num_retries(r.num_retries)).with_seed(seed);
    let select = SelectLayer::new(reg, store, RoutingStrategy::SimpleShuffle.build()).with_seed(seed);
    let mut svc = ServiceBuilder::new().layer(fallback).layer(retry).layer(select).service(provider);
    let result = paused().block_on(call(&mut svc, request(&group(r.start))));
    let typed = match &result {
        Ok(_) => false,
        Err(e) => RouteError::find(&**e).is_some(),
    };
    let attempts = attempts.lock().clone();
    let hops = *hops.lock();
    CallTrace { attempts, hops, typed }
}

proptest! {
    #![proptest_config(config(256))]

    /// Every attempt fails, so the call fails with a typed error after at most
    /// (1 + retries) × (1 + hops) attempts, at most `max_fallbacks` hops, and each group's attempts
    /// form one run: a group left is never visited again.
    #[test]
    fn attempts_are_bounded_and_no_group_is_visited_twice(r in routes(), seed in any::<u64>()) {
        let trace = run_routes(&r, seed);
        prop_assert!(trace.typed, "the call must end in a typed routing error");
        prop_assert!(!trace.attempts.is_empty(), "the start group was never tried");
        prop_assert!(trace.hops <= r.max_fallbacks, "{} hops, max {}", trace.hops, r.max_fallbacks);
        let bound = (1 + r.num_retries as usize) * (1 + trace.hops as usize);
        let attempts = trace.attempts.len();
        prop_assert!(attempts <= bound, "{} attempts > {}: {:?}", attempts, bound, trace.attempts);
        let mut runs: Vec<&String> = Vec::new();
        for g in &trace.attempts {
            if runs.last() != Some(&g) {
                prop_assert!(!runs.contains(&g), "{} visited twice: {:?}", g, trace.attempts);
                runs.push(g);
            }
        }
        prop_assert!(runs.len() as u32 <= 1 + trace.hops, "{} groups in {} hops", runs.len(), trace.hops);
    }
}

// ---------------------------------------------------------------------------------------------
// cooldown deadlines never shrink
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum CooldownOp {
    Wait(u64),
    /// `bench(id, ttl ms)` without growth.
    Set(usize, u64),
    /// `bench(id, base ms, growth (factor, cap ms))`.
    Bench(usize, u64, Option<(f64, u64)>),
}

fn cooldown_ops() -> impl Strategy<Value = Vec<CooldownOp>> {
    let op = prop_oneof![
        2 => (0u64..20_000).prop_map(CooldownOp::Wait),
        2 => (0usize..3, 0u64..30_000).prop_map(|(i, ttl)| CooldownOp::Set(i, ttl)),
        2 => (0usize..3, 0u64..30_000, prop::option::of((0.5f64..4.0, 0u64..120_000)))
            .prop_map(|(i, base, g)| CooldownOp::Bench(i, base, g)),
    ];
    prop::collection::vec(op, 1..50)
}

proptest! {
    #![proptest_config(config(512))]

    /// Each `bench` (with or without growth) leaves the deadline at the later of the running one and
    /// now + its own TTL (half-open growth capped): a deadline in force never moves earlier, and
    /// the state read back is cooling down exactly until that deadline.
    #[test]
    fn cooldown_deadlines_never_shrink(ops in cooldown_ops()) {
        paused().block_on(async move {
            let store = StateStore::memory();
            let ids: Vec<DeploymentId> = (0..3).map(|i| DeploymentId::from(format!("d{i}").as_str())).collect();
            // Per id: the deadline in force (if any) and the strikes of half-open growth.
            let mut model: BTreeMap<usize, (Instant, u32, bool)> = BTreeMap::new();
            for op in ops {
                let now = Instant::now();
                match op {
                    CooldownOp::Wait(ms) => advance(Duration::from_millis(ms)).await,
                    CooldownOp::Set(i, ttl) => {
                        let ttl = Duration::from_millis(ttl);
                        let c = store.bench(&ids[i], ttl, "test".into(), Some(500), None).await;
                        let before = model.get(&i).map(|(until, ..)| *until).filter(|u| *u > now);
                        let expected = before.map_or(now + ttl, |b| b.max(now + ttl));
                        prop_assert_eq!(c.until, expected);
                        prop_assert_eq!(c.strikes, 0);
                        model.insert(i, (c.until, 0, false));
                    }
                    CooldownOp::Bench(i, base, growth) => {
                        let base = Duration::from_millis(base);
                        let growth = growth.map(|(f, cap)| Growth::new(f, Duration::from_millis(cap)));
                        let (before, strikes) = match model.get(&i) {
                            Some((until, strikes, half_open)) if *until > now || *half_open => {
                                (Some(*until).filter(|u| *u > now), *strikes)
                            }
                            _ => (None, 0),
                        };
                        let strikes = if growth.is_some() { strikes } else { 0 };
                        let ttl = growth.map_or(base, |g| g.ttl(base, strikes));
                        if let Some(g) = growth {
                            prop_assert!(ttl <= g.cap.max(base.min(g.cap)), "ttl {:?} over the cap", ttl);
                        }
                        let c = store.bench(&ids[i], base, "test".into(), None, growth).await;
                        let expected = before.map_or(now + ttl, |b| b.max(now + ttl));
                        prop_assert_eq!(c.until, expected);
                        if let Some(b) = before {
                            prop_assert!(c.until >= b, "a deadline moved earlier");
                        }
                        let strikes = if growth.is_some() { strikes + 1 } else { 0 };
                        prop_assert_eq!(c.strikes, strikes);
                        model.insert(i, (c.until, strikes, growth.is_some()));
                    }
                }
                let now = Instant::now();
                let states = store.cooldown_states(&ids).await;
                for (i, state) in states.iter().enumerate() {
                    match (model.get(&i), state) {
                        (Some((until, ..)), CooldownState::CoolingDown(c)) => {
                            prop_assert!(*until > now);
                            prop_assert_eq!(c.until, *until);
                        }
                        (Some((until, strikes, true)), CooldownState::HalfOpen { strikes: s, .. }) => {
                            prop_assert!(*until <= now);
                            prop_assert_eq!(s, strikes);
                        }
                        (Some((until, _, false)), CooldownState::Available) => prop_assert!(*until <= now),
                        (None, CooldownState::Available) => {}
                        (m, s) => prop_assert!(false, "d{}: model {:?}, store {:?}", i, m, s),
                    }
                }
            }
            Ok(())
        })?;
    }
}
