//! L1: the whole default routing stack in process, over a provider that answers at once, against
//! that bare provider in the same run, under concurrent load.
//!
//! Variants: `bare` (the provider alone), `memory` (the default stack from
//! `Router::builder(&config).build(provider)`, 8 weighted deployments of one group, no limits, the
//! memory store), and with the `redis` feature (a default) `redis` (the same on the Redis store, on
//! a throwaway `redis-server` started on a free port; it must be installed, `scripts/test` installs
//! it) and `redis-rpm` (the same with an RPM limit of 10^12, never reached, on every deployment: one
//! reservation round trip per call).
//!
//! For each concurrency level (1, 16, 128 by default) and variant, on a multi-thread tokio runtime
//! with 2 workers: N tasks each call the service in a loop, one call after another, for a warm-up
//! and then a fixed time. Every call is timed with `std::time::Instant` around the call (the
//! request is built before the clock starts, the response dropped before it stops) into an HDR
//! histogram. A call that waits (a Redis round trip) lets the other tasks run; a task whose calls
//! never wait yields when its Tokio budget is spent (`consume_budget` after each call, every 128
//! calls), so the N tasks interleave without paying a scheduler round trip per call. Reported:
//! calls per second over the measured time, latency percentiles, and the time added per call at
//! p50 and p99 (the variant minus `bare` at the same concurrency).
//!
//! Allocations per call are counted separately, over a fixed number of sequential calls per
//! variant on a one-thread runtime (so the stack's background work, such as the Redis store's
//! connection and writer tasks, runs on the counting thread and is counted too), with the
//! `mockalloc` allocator wrapper around `System`: it counts only inside `record_allocs` and costs
//! one thread-local check per allocation elsewhere. (The workspace forbids `unsafe_code`, which a
//! hand-written `GlobalAlloc` needs.)
//!
//! ```text
//! cargo bench --bench l1
//! ```
//!
//! prints a table and writes `target/bench-results/l1.json` (schema on `to_json`).
//! Settings from the environment: `L1_SECS` (measured seconds per point, default 3), `L1_WARMUP_SECS`
//! (default 1), `L1_CONCURRENCY` (default `1,16,128`), `L1_VARIANTS` (default
//! `bare,memory,redis,redis-rpm`), `L1_ALLOC_CALLS` (default 10000), `L1_OUT` (the JSON path).
//! `L1_PROFILE_CALLS=N` skips all of that and only makes N sequential calls per variant on a
//! one-thread runtime (after the allocation pass's warm-up), for an instruction profiler: run it
//! under `valgrind --tool=callgrind` with two values of N, and the difference in instructions
//! divided by the difference in calls is the cost of one call (request construction included; the
//! `bare` variant alone gives that baseline).
//! Under `cargo test --benches` (no `--bench` argument) it runs every point for a few milliseconds
//! in the unoptimized build, checks that it works, and writes no JSON.

use std::{
    alloc::System,
    fmt::Write as _,
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use hdrhistogram::Histogram;
use mockalloc::Mockalloc;
use serde_json::json;
use switchyard::{Config, RouteBody, RouteCtx, Router, StateStore, layers::BoxError};
use tokio::runtime::Runtime;
use tower::{Service, ServiceExt, service_fn};

#[global_allocator]
static ALLOCATOR: Mockalloc<System> = Mockalloc(System);

#[cfg(feature = "redis")]
#[path = "../layers/tests/support/redis.rs"]
mod redis_support;

type Req = http::Request<Bytes>;
type Resp = http::Response<RouteBody>;

/// Tokio worker threads of the load runtime.
const WORKERS: usize = 2;
/// Calls before the counted ones in the allocation pass (lazily created state, first-use caches).
const ALLOC_WARMUP_CALLS: u64 = 1_000;
/// Longest wait for a Redis store to connect.
#[cfg(feature = "redis")]
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest latency the histograms hold (60 s), at 3 significant digits.
const HIST_MAX_NS: u64 = 60_000_000_000;

/// The services under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    Bare,
    Memory,
    Redis,
    RedisRpm,
}

impl Variant {
    const ALL: [Variant; 4] = [Variant::Bare, Variant::Memory, Variant::Redis, Variant::RedisRpm];

    fn name(self) -> &'static str {
        match self {
            Variant::Bare => "bare",
            Variant::Memory => "memory",
            Variant::Redis => "redis",
            Variant::RedisRpm => "redis-rpm",
        }
    }

    /// What the variant adds to each deployment's `litellm_params`.
    fn params(self) -> &'static str {
        match self {
            Variant::RedisRpm => ", rpm: 1000000000000",
            _ => "",
        }
    }

    fn is_redis(self) -> bool {
        matches!(self, Variant::Redis | Variant::RedisRpm)
    }
}

/// What to run, from the command line and the environment.
struct Settings {
    /// `cargo bench` (a real measurement) rather than `cargo test --benches` (a smoke run).
    measuring: bool,
    warmup: Duration,
    secs: Duration,
    levels: Vec<usize>,
    variants: Vec<Variant>,
    alloc_calls: u64,
    out: PathBuf,
}

impl Settings {
    fn from_env() -> Self {
        let args: Vec<String> = std::env::args().collect();
        let measuring = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let secs = |name: &str, default: f64| {
            let s =
                var(name).map_or(default, |v| v.trim().parse().unwrap_or_else(|_| panic!("{name}={v}: not seconds")));
            Duration::from_secs_f64(s)
        };
        let (warmup, measured, alloc_calls) = if measuring {
            (secs("L1_WARMUP_SECS", 1.0), secs("L1_SECS", 3.0), 10_000)
        } else {
            (Duration::from_millis(10), Duration::from_millis(30), 100)
        };
        let alloc_calls = match var("L1_ALLOC_CALLS") {
            Some(v) if measuring => v.trim().parse().unwrap_or_else(|_| panic!("L1_ALLOC_CALLS={v}: not a count")),
            _ => alloc_calls,
        };
        let levels = var("L1_CONCURRENCY").map_or_else(
            || vec![1, 16, 128],
            |v| {
                v.split(',')
                    .map(|l| l.trim().parse().unwrap_or_else(|_| panic!("L1_CONCURRENCY={v}: not a list of counts")))
                    .collect()
            },
        );
        let variants = var("L1_VARIANTS").map_or_else(
            || Variant::ALL.to_vec(),
            |v| {
                v.split(',')
                    .map(|name| {
                        Variant::ALL.into_iter().find(|k| k.name() == name.trim()).unwrap_or_else(|| {
                            panic!("L1_VARIANTS={v}: `{name}` is not one of bare, memory, redis, redis-rpm")
                        })
                    })
                    .collect()
            },
        );
        // The Redis variants need the feature (and `bare` is always measured: it is the baseline).
        let mut variants: Vec<Variant> =
            variants.into_iter().filter(|v| cfg!(feature = "redis") || !v.is_redis()).collect();
        if !variants.contains(&Variant::Bare) {
            variants.insert(0, Variant::Bare);
        }
        let out = var("L1_OUT").map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-results/l1.json"),
            PathBuf::from,
        );
        Settings { measuring, warmup, secs: measured, levels, variants, alloc_calls, out }
    }
}

/// The provider: answers every request at once with an empty body.
async fn answer(_req: Req) -> Result<Resp, BoxError> {
    Ok(http::Response::new(RouteBody::empty()))
}

/// The bench config: 8 weighted deployments of `gpt-4o` (with `params` added to each one's
/// `litellm_params`) and a fallback group, as in `benches/stack.rs`.
fn config(params: &str) -> Config {
    let mut yaml = String::from("model_list:\n");
    for i in 0..8 {
        let _ = write!(
            yaml,
            "  - model_name: gpt-4o\n    litellm_params: {{ model: openai/gpt-4o-{i}, weight: {}{params} }}\n    model_info: {{ id: d{i} }}\n",
            i % 4 + 1
        );
    }
    yaml.push_str("  - model_name: gpt-4o-mini\n    litellm_params: { model: openai/gpt-4o-mini }\n");
    yaml.push_str("router_settings:\n  fallbacks: [{ gpt-4o: [gpt-4o-mini] }]\n");
    Config::from_yaml_str(&yaml).expect("valid bench config")
}

fn request() -> Req {
    let mut req = http::Request::new(Bytes::from_static(br#"{"model":"gpt-4o","messages":[]}"#));
    req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
    req
}

/// The throwaway Redis server of the Redis variants, and a namespace counter so every store built
/// on it has its own keys.
struct Backends {
    #[cfg(feature = "redis")]
    redis: Option<redis_support::RedisServer>,
    #[cfg(feature = "redis")]
    namespaces: std::cell::Cell<u32>,
}

impl Backends {
    fn start(variants: &[Variant]) -> Self {
        #[cfg(feature = "redis")]
        {
            let redis = variants.iter().any(|v| v.is_redis()).then(redis_support::RedisServer::start);
            Backends { redis, namespaces: std::cell::Cell::new(0) }
        }
        #[cfg(not(feature = "redis"))]
        {
            let _ = variants;
            Backends {}
        }
    }

    /// The store `variant` routes with, created (and connected) on `rt`.
    fn store(&self, variant: Variant, rt: &Runtime) -> Arc<StateStore> {
        if !variant.is_redis() {
            return Arc::new(StateStore::memory());
        }
        #[cfg(feature = "redis")]
        {
            let server = self.redis.as_ref().expect("a redis-server for the Redis variants");
            let n = self.namespaces.get();
            self.namespaces.set(n + 1);
            let store = {
                let _runtime = rt.enter();
                let config = switchyard::layers::state::RedisConfig::new(server.url()).namespace(format!("l1-{n}"));
                Arc::new(StateStore::redis(config).expect("Redis store"))
            };
            rt.block_on(async {
                tokio::time::timeout(CONNECT_TIMEOUT, store.ready()).await.unwrap_or_else(|_| {
                    panic!("the Redis store did not connect to {} within {CONNECT_TIMEOUT:?}", server.url())
                });
            });
            store
        }
        #[cfg(not(feature = "redis"))]
        {
            let _ = rt;
            unreachable!("the Redis variants are filtered out without the `redis` feature")
        }
    }
}

/// One variant ready to call: the default stack with its store, or the bare provider.
enum Target {
    Bare,
    Stack { router: Router, store: Arc<StateStore> },
}

impl Target {
    /// Builds `variant`; its store (and so the Redis store's background tasks) lives on `rt`.
    fn build(variant: Variant, backends: &Backends, rt: &Runtime) -> Self {
        if variant == Variant::Bare {
            return Target::Bare;
        }
        let store = backends.store(variant, rt);
        let config = config(variant.params());
        let _runtime = rt.enter();
        let router = Router::builder(&config).seed(1).store(store.clone()).build(service_fn(answer)).expect("router");
        Target::Stack { router, store }
    }

    /// The Redis store's `(request, background)` round trips so far; `None` for the others.
    fn round_trips(&self) -> Option<(u64, u64)> {
        #[cfg(feature = "redis")]
        if let Target::Stack { store, .. } = self {
            return store.redis_stats().map(|s| (s.request_round_trips, s.background_round_trips));
        }
        None
    }

    /// Waits until the store's background writes are done (nothing for the memory store).
    async fn flush(&self) {
        if let Target::Stack { store, .. } = self {
            store.flush().await;
        }
    }
}

/// One measured point.
struct Level {
    variant: Variant,
    concurrency: usize,
    calls: u64,
    calls_per_sec: f64,
    hist: Histogram<u64>,
}

impl Level {
    fn ns(&self, quantile: f64) -> u64 {
        self.hist.value_at_quantile(quantile)
    }
}

/// What one task measured: its histogram, its measured calls, and when it stopped.
type TaskResult = (Histogram<u64>, u64, Instant);

/// `concurrency` tasks calling `service` in a loop: not recorded until `warm_end`, recorded until
/// `end`.
async fn run_level<S>(service: S, concurrency: usize, warmup: Duration, secs: Duration) -> (u64, f64, Histogram<u64>)
where
    S: Service<Req, Response = Resp, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    let warm_end = Instant::now() + warmup;
    let end = warm_end + secs;
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let service = service.clone();
            tokio::spawn(async move {
                let mut hist = Histogram::<u64>::new_with_bounds(1, HIST_MAX_NS, 3).expect("histogram bounds");
                let mut calls = 0;
                loop {
                    let req = request();
                    let start = Instant::now();
                    if start >= end {
                        break;
                    }
                    let resp = service.clone().oneshot(req).await.expect("the always-succeeding provider answered");
                    drop(resp);
                    let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    if start >= warm_end {
                        hist.saturating_record(ns);
                        calls += 1;
                    }
                    // Tokio's fairness: a task that never waits yields once its budget (128 calls)
                    // is spent, so the N tasks interleave without a scheduler round trip per call.
                    tokio::task::coop::consume_budget().await;
                }
                (hist, calls, Instant::now())
            })
        })
        .collect();
    let mut total = Histogram::<u64>::new_with_bounds(1, HIST_MAX_NS, 3).expect("histogram bounds");
    let (mut calls, mut last) = (0, end);
    for task in tasks {
        let (hist, n, stopped): TaskResult = task.await.expect("a load task panicked");
        total.add(&hist).expect("same histogram bounds");
        calls += n;
        last = last.max(stopped);
    }
    let measured = last.saturating_duration_since(warm_end).as_secs_f64();
    (calls, calls as f64 / measured, total)
}

/// Calls `target` with each of `reqs`, one after another, then flushes its store.
async fn call_each(target: &Target, reqs: Vec<Req>) {
    match target {
        Target::Bare => {
            for req in reqs {
                drop(service_fn(answer).oneshot(req).await.expect("answered"));
            }
        }
        Target::Stack { router, .. } => {
            let service = router.service();
            for req in reqs {
                drop(service.clone().oneshot(req).await.expect("answered"));
            }
        }
    }
    target.flush().await;
}

/// What the allocation pass measured for one variant, per call.
struct PerCall {
    variant: Variant,
    allocs: f64,
    bytes: f64,
    /// Redis round trips on the request path and in the background (the Redis variants).
    round_trips: Option<(f64, f64)>,
}

/// Allocations and bytes allocated per call, over `calls` sequential calls (after a warm-up) on a
/// one-thread runtime that also runs the store's background tasks; and for the Redis variants the
/// round trips per call, from the store's counters over the same calls.
fn count_per_call(variant: Variant, backends: &Backends, calls: u64) -> PerCall {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let target = Target::build(variant, backends, &rt);
    rt.block_on(call_each(&target, (0..ALLOC_WARMUP_CALLS).map(|_| request()).collect()));
    // The requests are built before counting starts: only what the call does is counted.
    let reqs: Vec<Req> = (0..calls).map(|_| request()).collect();
    let before = target.round_trips();
    let info = mockalloc::record_allocs(|| rt.block_on(call_each(&target, reqs)));
    let per = |n: u64| n as f64 / calls as f64;
    PerCall {
        variant,
        allocs: per(info.num_allocs()),
        bytes: per(info.mem_allocated()),
        round_trips: before.zip(target.round_trips()).map(|((r0, b0), (r1, b1))| (per(r1 - r0), per(b1 - b0))),
    }
}

fn us(ns: f64) -> String {
    format!("{:.2} µs", ns / 1e3)
}

fn signed_us(ns: f64) -> String {
    format!("{:+.2} µs", ns / 1e3)
}

/// The added time of `level` over `bare` at quantile `q`, in ns (0 for `bare` itself).
fn added(level: &Level, bare: Option<&Level>, q: f64) -> Option<f64> {
    bare.map(|b| level.ns(q) as f64 - b.ns(q) as f64)
}

fn print_table(settings: &Settings, levels: &[Level], per_call: &[PerCall]) {
    println!();
    println!(
        "L1: default stack in process (8 deployments, always-succeeding provider), tokio multi-thread runtime \
         with {WORKERS} workers, {} s measured per point after {} s warm-up",
        settings.secs.as_secs_f64(),
        settings.warmup.as_secs_f64()
    );
    if !settings.measuring {
        println!("(test mode: a few milliseconds per point in an unoptimized build; not a measurement)");
    }
    println!(
        "{:<10} {:>6} {:>10} {:>12} {:>10} {:>10} {:>10} {:>11} {:>11} {:>11}",
        "variant", "tasks", "calls", "calls/s", "p50", "p90", "p99", "max", "added p50", "added p99"
    );
    for l in levels {
        let bare = levels.iter().find(|b| b.variant == Variant::Bare && b.concurrency == l.concurrency);
        let add = |q| match (l.variant, added(l, bare, q)) {
            (Variant::Bare, _) | (_, None) => "-".to_owned(),
            (_, Some(a)) => signed_us(a),
        };
        println!(
            "{:<10} {:>6} {:>10} {:>12.0} {:>10} {:>10} {:>10} {:>11} {:>11} {:>11}",
            l.variant.name(),
            l.concurrency,
            l.calls,
            l.calls_per_sec,
            us(l.ns(0.5) as f64),
            us(l.ns(0.9) as f64),
            us(l.ns(0.99) as f64),
            us(l.hist.max() as f64),
            add(0.5),
            add(0.99),
        );
    }
    println!();
    println!(
        "Per call, over {} sequential calls per variant on a one-thread runtime (Redis round trips from the \
         store's counters):",
        settings.alloc_calls
    );
    println!(
        "{:<10} {:>12} {:>12} {:>16} {:>19}",
        "variant", "allocs/call", "bytes/call", "request RT/call", "background RT/call"
    );
    for p in per_call {
        let (request, background) = p
            .round_trips
            .map_or_else(|| ("-".to_owned(), "-".to_owned()), |(r, b)| (format!("{r:.3}"), format!("{b:.3}")));
        println!("{:<10} {:>12.2} {:>12.1} {request:>16} {background:>19}", p.variant.name(), p.allocs, p.bytes);
    }
}

/// Writes the results as JSON:
///
/// ```text
/// {"machine": {"cores": N},
///  "levels": [{"variant": "bare|memory|redis|redis-rpm", "concurrency": N, "calls": N,
///              "calls_per_sec": X, "latency_ns": {"p50", "p90", "p99", "max"},
///              "added_ns": {"p50", "p99"}}, ...],   (added: variant - bare, same concurrency)
///  "allocations": [{"variant": .., "allocs_per_call": X, "bytes_per_call": X,
///                   "request_round_trips_per_call": X|null, "background_round_trips_per_call": X|null}, ...],
///  "settings": {...}}
/// ```
fn to_json(settings: &Settings, levels: &[Level], per_call: &[PerCall]) -> serde_json::Value {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let levels: Vec<_> = levels
        .iter()
        .map(|l| {
            let bare = levels.iter().find(|b| b.variant == Variant::Bare && b.concurrency == l.concurrency);
            json!({
                "variant": l.variant.name(),
                "concurrency": l.concurrency,
                "calls": l.calls,
                "calls_per_sec": l.calls_per_sec,
                "latency_ns": {"p50": l.ns(0.5), "p90": l.ns(0.9), "p99": l.ns(0.99), "max": l.hist.max()},
                "added_ns": {"p50": added(l, bare, 0.5), "p99": added(l, bare, 0.99)},
            })
        })
        .collect();
    let allocations: Vec<_> = per_call
        .iter()
        .map(|p| {
            json!({
                "variant": p.variant.name(),
                "allocs_per_call": p.allocs,
                "bytes_per_call": p.bytes,
                "request_round_trips_per_call": p.round_trips.map(|(r, _)| r),
                "background_round_trips_per_call": p.round_trips.map(|(_, b)| b),
            })
        })
        .collect();
    json!({
        "machine": {"cores": cores},
        "levels": levels,
        "allocations": allocations,
        "settings": {
            "workers": WORKERS,
            "warmup_secs": settings.warmup.as_secs_f64(),
            "secs": settings.secs.as_secs_f64(),
            "alloc_calls": settings.alloc_calls,
            "deployments": 8,
            "test_mode": !settings.measuring,
        },
    })
}

/// `L1_PROFILE_CALLS`: `calls` sequential calls per variant and nothing else (see the module docs).
fn profile_calls(settings: &Settings, calls: u64) {
    let backends = Backends::start(&settings.variants);
    for &variant in &settings.variants {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let target = Target::build(variant, &backends, &rt);
        rt.block_on(call_each(&target, (0..ALLOC_WARMUP_CALLS).map(|_| request()).collect()));
        rt.block_on(call_each(&target, (0..calls).map(|_| request()).collect()));
        println!("l1: {:<10} {calls} calls", variant.name());
    }
}

fn main() {
    let settings = Settings::from_env();
    if let Some(calls) = std::env::var("L1_PROFILE_CALLS").ok().and_then(|v| v.trim().parse().ok()) {
        profile_calls(&settings, calls);
        return;
    }
    let backends = Backends::start(&settings.variants);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(WORKERS).enable_all().build().expect("runtime");
    let targets: Vec<(Variant, Target)> =
        settings.variants.iter().map(|&v| (v, Target::build(v, &backends, &rt))).collect();

    let mut levels = Vec::new();
    for &concurrency in &settings.levels {
        for (variant, target) in &targets {
            let (warmup, secs) = (settings.warmup, settings.secs);
            let (calls, calls_per_sec, hist) = rt.block_on(async {
                let measured = match target {
                    Target::Bare => run_level(service_fn(answer), concurrency, warmup, secs).await,
                    Target::Stack { router, .. } => run_level(router.service(), concurrency, warmup, secs).await,
                };
                // Untimed: the Redis store's queued background writes, before the next point.
                target.flush().await;
                measured
            });
            eprintln!("l1: {:<10} {concurrency:>4} tasks: {calls_per_sec:>10.0} calls/s", variant.name());
            levels.push(Level { variant: *variant, concurrency, calls, calls_per_sec, hist });
        }
    }
    drop(targets);
    rt.shutdown_timeout(Duration::from_secs(5));

    let per_call: Vec<PerCall> =
        settings.variants.iter().map(|&v| count_per_call(v, &backends, settings.alloc_calls)).collect();
    if per_call.iter().all(|p| p.allocs == 0.0) && settings.variants.len() > 1 {
        panic!("the counting allocator counted no allocation at all: is it the global allocator?");
    }

    print_table(&settings, &levels, &per_call);
    let json = serde_json::to_string_pretty(&to_json(&settings, &levels, &per_call)).expect("JSON");
    if settings.measuring {
        if let Some(dir) = settings.out.parent() {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        }
        std::fs::write(&settings.out, json + "\n")
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", settings.out.display()));
        println!("\nwrote {}", settings.out.display());
    } else {
        println!("\n(test mode: {} not written)", settings.out.display());
    }
}
