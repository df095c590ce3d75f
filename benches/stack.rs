//! Added time per call of the whole default stack (`Router::from_config`: fallback, retry,
//! cooldown, select over the memory store) against the bare provider, in the same run.
//!
//! Eight deployments of one group, weighted, no limits (the common case); the provider answers at
//! once, so the difference between the two benchmarks is what the routing stack costs.
//!
//! With the `redis` feature (a default), the `store/*` group then measures the same stack on the
//! Redis backend against the memory store, on a throwaway `redis-server` (started on a free port;
//! it must be installed, `scripts/test` installs it), for a deployment without limits (no round
//! trip on the request path) and one with an RPM limit that is never reached (one reservation
//! round trip per attempt), next to the loopback round trip itself (a raw RESP `PING`) and the
//! steps between the two: a `PING` and a trivial script (`return 1`) through the client library
//! the store uses (redis-rs, its `ConnectionManager`), and the store's reservation called on its
//! own (`StateStore::try_reserve`, the same script the stack runs). After the group it prints the
//! round trips per call (from the store's counters over a fixed number of calls), the added time
//! per call against the `PING`, and where the reservation's time goes.
//!
//! ```text
//! cargo bench --bench stack -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use std::sync::Arc;

use switchyard::{
    Config, RouteBody, RouteCtx, Router, StateStore,
    layers::{
        BoxError, Registry,
        cooldown::{CooldownConfig, CooldownLayer},
        retry::{RetryConfig, RetryLayer},
        select::{RoutingStrategy, SelectLayer},
    },
};
use tower::{ServiceBuilder, ServiceExt, service_fn, util::BoxCloneSyncService};

fn config() -> Config {
    config_with("")
}

/// The bench config, with `params` (`, rpm: 100`) added to the `litellm_params` of each `gpt-4o`
/// deployment.
fn config_with(params: &str) -> Config {
    config_sized(8, params)
}

/// The bench config with `n` deployments in `gpt-4o`.
fn config_sized(n: usize, params: &str) -> Config {
    let mut yaml = String::from("model_list:\n");
    for i in 0..n {
        yaml.push_str(&format!(
            "  - model_name: gpt-4o\n    litellm_params: {{ model: openai/gpt-4o-{i}, weight: {}{params} }}\n    model_info: {{ id: d{i} }}\n",
            i % 4 + 1
        ));
    }
    yaml.push_str("  - model_name: gpt-4o-mini\n    litellm_params: { model: openai/gpt-4o-mini }\n");
    yaml.push_str("router_settings:\n  fallbacks: [{ gpt-4o: [gpt-4o-mini] }]\n");
    Config::from_yaml_str(&yaml).expect("valid bench config")
}

/// A stack as a type-erased service.
type Stack = BoxCloneSyncService<http::Request<Bytes>, http::Response<RouteBody>, BoxError>;

fn request() -> http::Request<Bytes> {
    let mut req = http::Request::new(Bytes::from_static(br#"{"model":"gpt-4o","messages":[]}"#));
    req.extensions_mut().insert(RouteCtx::new("gpt-4o"));
    req
}

fn stack(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
    let provider =
        service_fn(|_req: http::Request<Bytes>| async { Ok::<_, BoxError>(http::Response::new(RouteBody::empty())) });
    let router = Router::builder(&config()).seed(1).build(provider).expect("router");
    let service = router.service();

    let mut group = c.benchmark_group("call");
    group.bench_function("bare provider", |b| {
        b.to_async(&rt).iter(|| {
            let p = provider;
            async move { black_box(p.oneshot(request()).await.expect("ok")) }
        });
    });
    // The stack built up one layer at a time, to attribute the cost.
    let registry = Arc::new(Registry::with_deployments(config().deployments).expect("registry"));
    let store = Arc::new(StateStore::memory());
    let select = SelectLayer::new(registry.clone(), store.clone(), RoutingStrategy::SimpleShuffle.build()).with_seed(1);
    let cooldown = CooldownLayer::new(registry.clone(), store.clone(), CooldownConfig::default());
    let retry = RetryLayer::new(registry.clone(), store.clone(), RetryConfig::default()).with_seed(2);
    let partial: [(&str, Stack); 3] = [
        ("select", BoxCloneSyncService::new(ServiceBuilder::new().layer(select.clone()).service(provider))),
        (
            "cooldown + select",
            BoxCloneSyncService::new(
                ServiceBuilder::new().layer(cooldown.clone()).layer(select.clone()).service(provider),
            ),
        ),
        (
            "retry + cooldown + select",
            BoxCloneSyncService::new(
                ServiceBuilder::new().layer(retry).layer(cooldown).layer(select).service(provider),
            ),
        ),
    ];
    for (name, svc) in partial {
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| {
                let s = svc.clone();
                async move { black_box(s.oneshot(request()).await.expect("ok")) }
            });
        });
    }
    group.bench_function("default stack, 8 deployments", |b| {
        b.to_async(&rt).iter(|| {
            let s = service.clone();
            async move { black_box(s.oneshot(request()).await.expect("ok")) }
        });
    });
    group.finish();

    health(c, &rt);

    // How the whole stack's cost grows with the group (the aim: 64 deployments within 2x of 4).
    let mut group = c.benchmark_group("group size");
    for n in [4, 64, 1024] {
        let service = Router::builder(&config_sized(n, "")).seed(1).build(provider).expect("router").service();
        group.bench_function(format!("default stack, {n} deployments"), |b| {
            b.to_async(&rt).iter(|| {
                let s = service.clone();
                async move { black_box(s.oneshot(request()).await.expect("ok")) }
            });
        });
    }
    group.finish();
}

/// Health-check routing's cost in the same run: the routing stack (8 deployments) with the health
/// filter off, on with every deployment healthy (the filter's one-load fast path: no record says
/// "unhealthy"), and on with one deployment of the 8 unhealthy (a read of the 8 records and a
/// filtered copy of the candidates per attempt).
fn health(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    use std::time::Duration;
    use switchyard::layers::{DeploymentId, health::HealthConfig, stack::RoutingStack, state::HealthRecord};

    let provider =
        service_fn(|_req: http::Request<Bytes>| async { Ok::<_, BoxError>(http::Response::new(RouteBody::empty())) });
    let registry = Arc::new(Registry::with_deployments(config().deployments).expect("registry"));
    let built = |store: &Arc<StateStore>, health: HealthConfig| -> Stack {
        let stack = RoutingStack::builder(registry.clone(), store.clone()).seed(1).health(health).build();
        BoxCloneSyncService::new(ServiceBuilder::new().layer(stack).service(provider))
    };
    let hour = Duration::from_secs(3600);
    let healthy = Arc::new(StateStore::memory());
    let one_down = Arc::new(StateStore::memory());
    rt.block_on(async {
        for i in 0..8 {
            let id = DeploymentId::from(format!("d{i}"));
            let ok = HealthRecord::new(true, Duration::from_millis(20), None, "");
            healthy.record_health(&id, ok.clone(), hour).await;
            let record =
                if i == 3 { HealthRecord::new(false, Duration::from_millis(20), Some(503), "down") } else { ok };
            one_down.record_health(&id, record, hour).await;
        }
    });
    let on = HealthConfig::new().staleness(hour);
    let variants: [(&str, Stack); 3] = [
        ("health filter off", built(&healthy, HealthConfig::disabled())),
        ("health filter on, all healthy", built(&healthy, on.clone())),
        ("health filter on, 1 of 8 unhealthy", built(&one_down, on)),
    ];
    let mut group = c.benchmark_group("health");
    for (name, svc) in variants {
        group.bench_function(name, |b| {
            b.to_async(rt).iter(|| {
                let s = svc.clone();
                async move { black_box(s.oneshot(request()).await.expect("ok")) }
            });
        });
    }
    group.finish();
}

#[cfg(feature = "redis")]
#[path = "../layers/tests/support/redis.rs"]
mod redis_support;

/// The default stack on the Redis backend against the memory store (feature `redis`).
#[cfg(feature = "redis")]
mod redis_store {
    use std::{
        cell::RefCell,
        hint::black_box,
        io,
        rc::Rc,
        sync::Arc,
        time::{Duration, Instant},
    };

    use bytes::Bytes;
    use criterion::{Criterion, measurement::WallTime};
    use switchyard::{
        RouteBody, Router, RouterService, StateStore,
        layers::{
            BoxError, DeploymentId,
            state::{Limits, RedisConfig, RedisStats},
        },
    };
    use tokio::{net::TcpStream, runtime::Runtime};
    use tower::{ServiceExt, service_fn};

    use super::{config_with, request};
    use crate::redis_support::RedisServer;

    type Group<'a> = criterion::BenchmarkGroup<'a, WallTime>;

    /// Criterion's sample count (its default, set so the last `SAMPLES` timed batches of a
    /// benchmark are its measurement, after the warm-up batches).
    const SAMPLES: usize = 100;
    /// Calls timed between two flushes of the background writer: below its queue (10,000), so no
    /// write is ever dropped; the flushes are not timed.
    const CHUNK: u64 = 1_000;
    /// Calls per variant over which the round trips are counted (a benchmark run, and test mode).
    const COUNTED_CALLS: u64 = 10_000;
    const COUNTED_CALLS_TEST: u64 = 100;
    /// Longest wait for a Redis store to connect.
    const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
    /// The two variants: no limit (no round trip on the request path) and an RPM limit that is
    /// never reached (one reservation per attempt).
    const VARIANTS: [(&str, &str); 2] = [("no limits", ""), ("rpm limit", ", rpm: 1000000000000")];

    /// `(iterations, elapsed)` of every timed batch of one benchmark, warm-up included.
    type Samples = Rc<RefCell<Vec<(u64, Duration)>>>;

    /// One variant: the same config over the memory store and over the Redis store.
    struct Variant {
        name: &'static str,
        memory: RouterService,
        memory_store: Arc<StateStore>,
        memory_samples: Samples,
        redis: RouterService,
        redis_store: Arc<StateStore>,
        redis_samples: Samples,
        /// The Redis store's counters once it was connected.
        connected: RedisStats,
    }

    /// Whether criterion measures (`cargo bench`) rather than runs each benchmark once
    /// (`cargo test --benches`, or `-- --test`), the way criterion decides it.
    fn measuring() -> bool {
        let args: Vec<String> = std::env::args().collect();
        args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test")
    }

    /// The time per iteration as criterion estimates it (the slope of elapsed time over
    /// iterations, through the origin) from the measurement batches; `None` if it did not run.
    fn per_call(samples: &Samples) -> Option<f64> {
        let samples = samples.borrow();
        let measured = &samples[samples.len().saturating_sub(SAMPLES)..];
        let (xy, xx) = measured.iter().fold((0.0, 0.0), |(xy, xx), &(iters, elapsed)| {
            let x = iters as f64;
            (xy + x * elapsed.as_secs_f64(), xx + x * x)
        });
        (xx > 0.0).then(|| xy / xx)
    }

    /// One `PING` and its `+PONG` on an open connection, with no client library in between: the
    /// floor of any Redis round trip on this machine.
    async fn ping(conn: &TcpStream) {
        const PING: &[u8] = b"*1\r\n$4\r\nPING\r\n";
        const PONG: &[u8] = b"+PONG\r\n";
        let mut written = 0;
        while written < PING.len() {
            conn.writable().await.expect("PING: socket writable");
            match conn.try_write(&PING[written..]) {
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("PING: write failed: {e}"),
            }
        }
        let mut reply = [0; PONG.len()];
        let mut read = 0;
        while read < reply.len() {
            conn.readable().await.expect("PING: socket readable");
            match conn.try_read(&mut reply[read..]) {
                Ok(0) => panic!("PING: redis-server closed the connection"),
                Ok(n) => read += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("PING: read failed: {e}"),
            }
        }
        assert_eq!(reply, PONG, "PING answered {:?}", String::from_utf8_lossy(&reply));
    }

    /// `calls` calls through `service`, in chunks of `CHUNK` with the background writer flushed
    /// after each; returns the time spent in the calls only.
    async fn calls(service: &RouterService, store: &StateStore, calls: u64) -> Duration {
        let mut elapsed = Duration::ZERO;
        let mut left = calls;
        while left > 0 {
            let n = left.min(CHUNK);
            let start = Instant::now();
            for _ in 0..n {
                black_box(service.clone().oneshot(request()).await.expect("ok"));
            }
            elapsed += start.elapsed();
            store.flush().await;
            left -= n;
        }
        elapsed
    }

    fn bench_stack(
        group: &mut Group<'_>,
        rt: &Runtime,
        name: &str,
        service: &RouterService,
        store: &Arc<StateStore>,
    ) -> Samples {
        let samples = Samples::default();
        group.bench_function(name, |b| {
            b.to_async(rt).iter_custom(|iters| {
                let (service, store, samples) = (service.clone(), store.clone(), samples.clone());
                async move {
                    let elapsed = calls(&service, &store, iters).await;
                    samples.borrow_mut().push((iters, elapsed));
                    elapsed
                }
            });
        });
        samples
    }

    pub(super) fn store(c: &mut Criterion) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let server = RedisServer::start();
        let provider = service_fn(|_req: http::Request<Bytes>| async {
            Ok::<_, BoxError>(http::Response::new(RouteBody::empty()))
        });

        let mut variants = Vec::new();
        for (i, (name, params)) in VARIANTS.into_iter().enumerate() {
            let config = config_with(params);
            let memory_store = Arc::new(StateStore::memory());
            let memory = Router::builder(&config).seed(1).store(memory_store.clone()).build(provider).expect("router");
            let redis_store = {
                let _runtime = rt.enter();
                let redis = RedisConfig::new(server.url()).namespace(format!("bench-{i}"));
                Arc::new(StateStore::redis(redis).expect("Redis store"))
            };
            rt.block_on(async {
                tokio::time::timeout(CONNECT_TIMEOUT, redis_store.ready()).await.unwrap_or_else(|_| {
                    panic!("the Redis store did not connect to {} within {CONNECT_TIMEOUT:?}", server.url())
                })
            });
            let connected = redis_store.redis_stats().expect("a Redis store has counters");
            let redis = Router::builder(&config).seed(1).store(redis_store.clone()).build(provider).expect("router");
            variants.push(Variant {
                name,
                memory: memory.service(),
                memory_store,
                memory_samples: Samples::default(),
                redis: redis.service(),
                redis_store,
                redis_samples: Samples::default(),
                connected,
            });
        }

        let mut group = c.benchmark_group("store");
        group.sample_size(SAMPLES);
        let ping_samples = Samples::default();
        let conn = rt.block_on(async {
            let conn = TcpStream::connect(("127.0.0.1", server.port())).await.expect("connect to redis-server");
            conn.set_nodelay(true).expect("TCP_NODELAY");
            Rc::new(conn)
        });
        group.bench_function("PING round trip (raw RESP, loopback)", |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let (conn, samples) = (conn.clone(), ping_samples.clone());
                async move {
                    let start = Instant::now();
                    for _ in 0..iters {
                        ping(&conn).await;
                    }
                    let elapsed = start.elapsed();
                    samples.borrow_mut().push((iters, elapsed));
                    elapsed
                }
            });
        });
        let steps = steps(&mut group, &rt, &server, &variants[1].redis_store);
        for v in &mut variants {
            v.memory_samples = bench_stack(&mut group, &rt, &format!("memory, {}", v.name), &v.memory, &v.memory_store);
            v.redis_samples = bench_stack(&mut group, &rt, &format!("redis, {}", v.name), &v.redis, &v.redis_store);
        }
        group.finish();

        report(&rt, &server, &variants, per_call(&ping_samples));
        report_steps(
            &steps,
            per_call(&ping_samples),
            per_call(&variants[1].redis_samples),
            per_call(&variants[1].memory_samples),
        );
        interleaved(&rt, &server, &conn, &variants[1]);
    }

    /// Rounds of the interleaved measurement (a benchmark run, and test mode).
    const ROUNDS: usize = 20_000;
    const ROUNDS_TEST: usize = 10;

    /// One call of each step per round, the order rotated every round, each call timed alone: the
    /// steps see the same machine state (a VM's wake-up latency drifts by tens of µs between
    /// benchmarks measured seconds apart), so their medians compare where separate benchmarks'
    /// means do not.
    fn interleaved(rt: &Runtime, server: &RedisServer, conn: &TcpStream, v: &Variant) {
        let rounds = if measuring() { ROUNDS } else { ROUNDS_TEST };
        let client = redis::Client::open(server.url()).expect("a redis URL");
        let manager = rt.block_on(redis::aio::ConnectionManager::new(client)).expect("connect with redis-rs");
        let trivial = redis::Script::new("return 1");
        let id = DeploymentId::from("bench-reserve-interleaved");
        let limits = Limits { rpm: Some(1_000_000_000_000), tpm: None };
        const STEPS: [&str; 6] = [
            "raw RESP PING (the round trip)",
            "PING through redis-rs",
            "trivial script through redis-rs",
            "the reservation alone (try_reserve)",
            "stack, Redis store, RPM limit",
            "stack, memory store, RPM limit",
        ];
        let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); STEPS.len()];
        rt.block_on(async {
            for round in 0..rounds {
                for k in 0..STEPS.len() {
                    let step = (round + k) % STEPS.len();
                    let start = Instant::now();
                    match step {
                        0 => ping(conn).await,
                        1 => {
                            let pong: String =
                                redis::cmd("PING").query_async(&mut manager.clone()).await.expect("PING");
                            black_box(pong);
                        }
                        2 => {
                            let one: i64 = trivial.invoke_async(&mut manager.clone()).await.expect("EVALSHA");
                            black_box(one);
                        }
                        3 => {
                            black_box(v.redis_store.try_reserve(&id, limits, 0).await);
                        }
                        4 => {
                            black_box(v.redis.clone().oneshot(request()).await.expect("ok"));
                        }
                        _ => {
                            black_box(v.memory.clone().oneshot(request()).await.expect("ok"));
                        }
                    }
                    times[step].push(start.elapsed());
                }
                if (round + 1) % CHUNK as usize == 0 {
                    v.redis_store.flush().await;
                    v.memory_store.flush().await;
                }
            }
        });
        for t in &mut times {
            t.sort_unstable();
        }
        let at = |t: &[Duration], q: f64| t[((t.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e6;
        let ping = at(&times[0], 0.5);
        println!();
        println!("Interleaved: {rounds} rounds, one call of each step per round (order rotated), each timed alone");
        println!("{:<40} {:>10} {:>10} {:>10} {:>10}", "step", "p10 µs", "p50 µs", "p90 µs", "p50/PING");
        for (name, t) in STEPS.iter().zip(&times) {
            println!(
                "{name:<40} {:>10.2} {:>10.2} {:>10.2} {:>10.2}",
                at(t, 0.1),
                at(t, 0.5),
                at(t, 0.9),
                at(t, 0.5) / ping
            );
        }
        let added = at(&times[4], 0.5) - at(&times[5], 0.5);
        println!(
            "added per RPM-limited attempt (p50 Redis stack - p50 memory stack): {added:.2} µs = {:.2} PINGs",
            added / ping
        );
    }

    /// The steps between a raw `PING` and a reservation through the stack, each measured alone.
    struct Steps {
        /// `PING` through redis-rs's `ConnectionManager` (what the store talks through).
        client_ping: Samples,
        /// `EVALSHA` of `return 1` through the same connection: a script's fixed cost.
        client_script: Samples,
        /// `StateStore::try_reserve` on the Redis store: the reservation script, no routing.
        reserve: Samples,
    }

    /// Times `op` `iters` times per batch, recording the batches into a fresh [`Samples`].
    fn bench_op<F, Fut>(group: &mut Group<'_>, rt: &Runtime, name: &str, op: F) -> Samples
    where
        F: Fn() -> Fut,
        Fut: Future<Output = ()>,
    {
        let samples = Samples::default();
        group.bench_function(name, |b| {
            b.to_async(rt).iter_custom(|iters| {
                let (samples, op) = (samples.clone(), &op);
                async move {
                    let start = Instant::now();
                    for _ in 0..iters {
                        op().await;
                    }
                    let elapsed = start.elapsed();
                    samples.borrow_mut().push((iters, elapsed));
                    elapsed
                }
            });
        });
        samples
    }

    fn steps(group: &mut Group<'_>, rt: &Runtime, server: &RedisServer, store: &Arc<StateStore>) -> Steps {
        let client = redis::Client::open(server.url()).expect("a redis URL");
        let conn = rt.block_on(redis::aio::ConnectionManager::new(client)).expect("connect with redis-rs");
        let trivial = redis::Script::new("return 1");
        let client_ping = bench_op(group, rt, "PING (redis-rs ConnectionManager)", || {
            let mut conn = conn.clone();
            async move {
                let pong: String = redis::cmd("PING").query_async(&mut conn).await.expect("PING");
                black_box(pong);
            }
        });
        let client_script = bench_op(group, rt, "EVALSHA return 1 (redis-rs ConnectionManager)", || {
            let (mut conn, trivial) = (conn.clone(), &trivial);
            async move {
                let one: i64 = trivial.invoke_async(&mut conn).await.expect("EVALSHA");
                black_box(one);
            }
        });
        let id = DeploymentId::from("bench-reserve-alone");
        let limits = Limits { rpm: Some(1_000_000_000_000), tpm: None };
        let reserve = bench_op(group, rt, "reservation alone (StateStore::try_reserve)", || {
            let (store, id) = (store.clone(), &id);
            async move {
                black_box(store.try_reserve(id, limits, 0).await);
            }
        });
        Steps { client_ping, client_script, reserve }
    }

    /// Prints each step of the reservation's time as the difference to the step before it.
    fn report_steps(steps: &Steps, ping: Option<f64>, redis: Option<f64>, memory: Option<f64>) {
        let rows = [
            ("raw RESP PING (the round trip)", ping),
            ("PING through redis-rs", per_call(&steps.client_ping)),
            ("trivial script through redis-rs", per_call(&steps.client_script)),
            ("the reservation alone (try_reserve)", per_call(&steps.reserve)),
            (
                "the stack with the reservation, minus the stack on the memory store",
                redis.zip(memory).map(|(r, m)| r - m),
            ),
        ];
        println!();
        println!("Where an RPM-limited attempt's time goes (each step measured alone, same run):");
        println!("{:<68} {:>11} {:>13} {:>10}", "step", "per call", "over previous", "in PINGs");
        let mut previous: Option<f64> = None;
        for (name, t) in rows {
            let fmt = |t: Option<f64>| t.map_or_else(|| "-".to_owned(), |t| format!("{:.2} µs", t * 1e6));
            let over = t.zip(previous).map(|(t, p)| t - p);
            let pings = t.zip(ping).map_or_else(|| "-".to_owned(), |(t, p)| format!("{:.2}", t / p));
            println!("{name:<68} {:>11} {:>13} {pings:>10}", fmt(t), fmt(over));
            previous = t.or(previous);
        }
    }

    /// Calls and total server time (µs) of `EVALSHA` (every script the backend runs) from
    /// `INFO commandstats`.
    fn scripts(info: &str) -> (u64, u64) {
        let Some(fields) = info.lines().find_map(|l| l.trim().strip_prefix("cmdstat_evalsha:")) else { return (0, 0) };
        let field =
            |name: &str| fields.split(',').find_map(|f| f.strip_prefix(name)).and_then(|v| v.parse().ok()).unwrap_or(0);
        (field("calls="), field("usec="))
    }

    /// Prints the round trips per call and the added time per call against the `PING`.
    fn report(rt: &Runtime, server: &RedisServer, variants: &[Variant], ping: Option<f64>) {
        let counted = if measuring() { COUNTED_CALLS } else { COUNTED_CALLS_TEST };
        let us = |t: Option<f64>| t.map_or_else(|| "-".to_owned(), |t| format!("{:.2} µs", t * 1e6));
        println!();
        println!("Redis store against the memory store (default stack, 8 deployments, one-thread runtime)");
        if !measuring() {
            println!("(test mode: each time is one unoptimized call, not a measurement)");
        }
        println!("PING round trip (raw RESP, loopback): {}", us(ping));
        println!(
            "{:<10} {:>11} {:>11} {:>11} {:>10} {:>16} {:>19} {:>13} {:>17}",
            "variant",
            "memory",
            "redis",
            "added",
            "added/PING",
            "request RT/call",
            "background RT/call",
            "scripts/call",
            "server µs/script"
        );
        for v in variants {
            let (memory, redis) = (per_call(&v.memory_samples), per_call(&v.redis_samples));
            if redis.is_none() {
                println!("{:<10} (not run)", v.name);
                continue;
            }
            let store = &v.redis_store;
            rt.block_on(store.flush());
            let before = store.redis_stats().expect("a Redis store has counters");
            server.reset_commandstats();
            rt.block_on(calls(&v.redis, store, counted));
            let after = store.redis_stats().expect("a Redis store has counters");
            let (script_calls, script_us) = scripts(&server.command(&["INFO", "commandstats"]));
            let per = |a: u64, b: u64| (a - b) as f64 / counted as f64;
            let added = memory.zip(redis).map(|(m, r)| r - m);
            let ratio = added.zip(ping).map_or_else(|| "-".to_owned(), |(a, p)| format!("{:.2}", a / p));
            println!(
                "{:<10} {:>11} {:>11} {:>11} {:>10} {:>16.3} {:>19.3} {:>13.3} {:>17.1}",
                v.name,
                us(memory),
                us(redis),
                us(added),
                ratio,
                per(after.request_round_trips, before.request_round_trips),
                per(after.background_round_trips, before.background_round_trips),
                script_calls as f64 / counted as f64,
                script_us as f64 / script_calls.max(1) as f64,
            );
            let (errors, dropped, degradations) = (
                after.errors - v.connected.errors,
                after.dropped_writes - v.connected.dropped_writes,
                after.degradations - v.connected.degradations,
            );
            if errors + dropped + degradations > 0 || after.degraded {
                println!(
                    "  warning: since it connected, the Redis store of `{}` had {errors} errors, {dropped} dropped \
                     writes and {degradations} degradations (degraded now: {}): its numbers mix in local answers",
                    v.name, after.degraded
                );
            }
        }
        println!(
            "(memory, redis: time per call as criterion estimates it, added = redis - memory; round trips \
             from the store's counters and scripts (EVALSHA) from INFO commandstats over {counted} calls per \
             variant, the background writer flushed every {CHUNK} calls)"
        );
    }
}

#[cfg(feature = "redis")]
criterion_group!(benches, stack, redis_store::store);
#[cfg(not(feature = "redis"))]
criterion_group!(benches, stack);
criterion_main!(benches);
