//! Regression tests from a review of the Redis backend: each pins one behaviour the docs promise
//! (`docs/redis.md`, `docs/state.md`) against real throwaway servers: outages and recovery,
//! server errors, stalls, panicking bookkeeping, revisions, and the window arithmetic.
#![cfg(feature = "redis")]

#[path = "support/redis.rs"]
mod redis_support;

use std::{sync::Arc, time::Duration};

use redis_support::RedisServer;
use switchyard_layers::{
    DeploymentId, StateStore,
    state::{Admission, CooldownState, Growth, Limits, RedisConfig, StoreConfig},
};
use tokio::time::Instant;

static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn namespace(name: &str) -> String {
    format!("r{}-{name}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

fn id(s: &str) -> DeploymentId {
    DeploymentId::from(s)
}

fn config(url: &str, ns: &str) -> RedisConfig {
    RedisConfig::new(url)
        .namespace(ns)
        .connect_timeout(Duration::from_millis(200))
        .response_timeout(Duration::from_millis(500))
}

async fn connected(config: RedisConfig, store: StoreConfig) -> Arc<StateStore> {
    let s = Arc::new(StateStore::redis_with(config, store).unwrap());
    tokio::time::timeout(Duration::from_secs(10), s.ready()).await.expect("connected to the test's redis");
    s
}

async fn state(store: &StateStore, d: &DeploymentId) -> CooldownState {
    store.cooldown_states(std::slice::from_ref(d)).await.remove(0)
}

/// Waits (on cooldown changes, no polling) until `want` holds for `d` on `store`; `None` when it
/// did not within `within`.
async fn wait_state(
    store: &StateStore,
    d: &DeploymentId,
    within: Duration,
    want: impl Fn(&CooldownState) -> bool,
) -> Option<CooldownState> {
    let mut changes = store.watch_cooldowns();
    tokio::time::timeout(within, async {
        loop {
            let s = state(store, d).await;
            if want(&s) {
                return s;
            }
            changes.changed().await.unwrap();
        }
    })
    .await
    .ok()
}

// ---------------------------------------------------------------------------------------------
// Degraded mode and recovery.

/// Memory semantics: `bench` with growth counts a strike and leaves the deployment half-open after
/// the deadline. A replica that benches while Redis is down honours that locally; when Redis
/// returns, `recover` pushes the cooldown with the `bench` script *without growth* (ARGV[4] = ''),
/// which writes `k = 0, h = 0`, and the reply overwrites the mirror: strikes and half-open are
/// gone, fleet-wide, and the deployment later serves again without a probe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_open_bench_made_while_degraded_keeps_its_strikes_after_recovery() {
    let mut server = RedisServer::start();
    let url = server.url();
    server.kill();
    let ns = namespace("halfopen-offline");
    let store = Arc::new(StateStore::redis(config(&url, &ns).sync_interval(Duration::from_millis(20))).unwrap());
    assert!(store.is_degraded());
    let d = id("flaky");
    let growth = Some(Growth::new(2.0, Duration::from_secs(600)));
    let c = store.bench(&d, Duration::from_secs(30), "500".into(), Some(500), growth).await;
    assert_eq!(c.strikes, 1, "local bench while degraded counts a strike");

    server.restart();
    tokio::time::timeout(Duration::from_secs(10), store.ready()).await.expect("recovers");
    let key = format!("{ns}:v1:{{d:flaky}}:cooldown");
    let fields = server.command(&["HMGET", &key, "k", "h"]);
    let after = state(&store, &d).await;
    assert!(
        matches!(&after, CooldownState::CoolingDown(c) if c.strikes == 1) && fields == "1\n1",
        "after recovery: mirror {after:?}, redis k/h = {fields:?} (want strikes 1, half-open 1)"
    );
}

/// `docs/redis.md`: a failing call is "answered from local state". A `bench` whose script fails
/// with a server error (here: OOM under the recommended `noeviction` policy) falls back to a local
/// bench, but the next periodic resync reads the (absent) record, applies a `del` stamped with the
/// server's now, and lifts the cooldown this replica just set, within one `resync_interval`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cooldown_whose_bench_script_failed_survives_the_next_resync() {
    let server = RedisServer::start();
    let ns = namespace("oom");
    let store =
        connected(config(&server.url(), &ns).resync_interval(Duration::from_millis(100)), StoreConfig::default()).await;
    let d = id("failing");
    assert_eq!(state(&store, &d).await, CooldownState::Available);
    assert_eq!(server.command(&["CONFIG", "SET", "maxmemory", "1"]), "OK");
    let c = store.bench(&d, Duration::from_secs(60), "500".into(), Some(500), None).await;
    assert!(c.until > Instant::now() + Duration::from_secs(59));
    assert!(!store.is_degraded(), "a server error is not an outage");
    assert!(matches!(state(&store, &d).await, CooldownState::CoolingDown(_)), "honoured locally at once");
    // Ten resync intervals: the cooldown must still be in force.
    let lifted = wait_state(&store, &d, Duration::from_secs(1), |s| *s == CooldownState::Available).await;
    assert!(lifted.is_none(), "the locally set 60 s cooldown was lifted by a resync");
}

/// Cooldowns set locally while the supervisor is already recovering (after it snapshotted
/// `offline`, before `degraded` is cleared) are neither pushed (`offline.clear()` drops them) nor
/// kept: the resync reads Redis, finds nothing and lifts them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cooldowns_set_while_the_supervisor_recovers_are_not_lost() {
    let mut server = RedisServer::start();
    let url = server.url();
    server.kill();
    let ns = namespace("recover-race");
    let store = Arc::new(
        StateStore::redis(
            config(&url, &ns).sync_interval(Duration::from_millis(20)).resync_interval(Duration::from_millis(100)),
        )
        .unwrap(),
    );
    // Enough offline cooldowns that pushing them (one round trip each) takes a while.
    for i in 0..300 {
        store.bench(&id(&format!("early-{i}")), Duration::from_secs(60), "500".into(), None, None).await;
    }
    server.restart();
    let mut late = Vec::new();
    let start = Instant::now();
    while store.is_degraded() {
        assert!(start.elapsed() < Duration::from_secs(10), "never recovered");
        let d = id(&format!("late-{}", late.len()));
        store.bench(&d, Duration::from_secs(60), "500".into(), None, None).await;
        late.push(d);
        tokio::time::sleep(Duration::from_millis(1)).await; // pacing, not a sync
    }
    // Observe a few resync intervals: every cooldown set while degraded must still be in force.
    let mut changes = store.watch_cooldowns();
    let lost = tokio::time::timeout(Duration::from_secs(1), async {
        loop {
            let states = store.cooldown_states(&late).await;
            let lost: Vec<_> = late
                .iter()
                .zip(&states)
                .filter(|(_, s)| **s == CooldownState::Available)
                .map(|(d, _)| d.clone())
                .collect();
            if !lost.is_empty() {
                return lost;
            }
            changes.changed().await.unwrap();
        }
    })
    .await;
    if let Ok(lost) = lost {
        panic!(
            "{} of {} cooldowns set while degraded were lifted after recovery, from {:?} to {:?}",
            lost.len(),
            late.len(),
            lost.first().unwrap(),
            lost.last().unwrap()
        );
    }
    let early: Vec<_> = (0..300).map(|i| id(&format!("early-{i}"))).collect();
    assert!(store.cooldowns(&early).await.iter().all(Option::is_some));
}

/// Memory semantics: `clear_cooldown` ends the cooldown. While degraded the clear is applied to the
/// local state only and is not remembered: on recovery the resync reads the record that is still
/// in Redis and the deployment is benched again (an operator's clear during an outage is undone;
/// a cooldown *set* during the outage is pushed, a clear is not).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clear_made_while_degraded_is_not_undone_by_recovery() {
    let server = RedisServer::start();
    let ns = namespace("clear-offline");
    let store = connected(
        config(&server.url(), &ns)
            .response_timeout(Duration::from_millis(200))
            .sync_interval(Duration::from_millis(20))
            .resync_interval(Duration::from_millis(100)),
        StoreConfig::default(),
    )
    .await;
    let d = id("benched");
    store.bench(&d, Duration::from_secs(60), "429".into(), Some(429), None).await;
    assert_eq!(server.command(&["CLIENT", "PAUSE", "1000", "ALL"]), "OK");
    store.record_outcome(&d, true).await; // times out: the degraded mode starts
    assert!(store.is_degraded());
    assert!(store.clear_cooldown(&d).await);
    assert_eq!(state(&store, &d).await, CooldownState::Available);
    tokio::time::timeout(Duration::from_secs(10), store.ready()).await.expect("recovers after the pause");
    assert_eq!(state(&store, &d).await, CooldownState::Available, "the clear made during the outage was undone");
}

/// A panic inside one detached write (any bookkeeping closure a layer hands to
/// `run_bookkeeping`) unwinds out of the writer task: the writer is gone for the life of the
/// store, `pending` never returns to 0, so `flush()` never returns and every later detached write
/// (spend, outcomes, affinity, reconciliations) queues until it is dropped. The memory backend
/// runs the same closure inline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_panicking_detached_write_does_not_stop_the_writer() {
    let server = RedisServer::start();
    let ns = namespace("writer-panic");
    let store = connected(config(&server.url(), &ns), StoreConfig::default()).await;
    store.run_bookkeeping(async { panic!("a bug in one bookkeeping closure") });
    store.add_spend_detached("provider_spend:openai", 1.0, Duration::from_secs(60));
    tokio::time::timeout(Duration::from_secs(2), store.flush()).await.expect("flush() returned");
    let key = format!("{ns}:v1:{{s:provider_spend:openai}}:spend");
    assert_eq!(server.command(&["GET", &key]), "1", "the spend reached Redis");
}

/// `docs/redis.md`: "While degraded, no request waits for Redis". `spends` reads every key it has
/// not cached one after another on the handle it took before the loop: when Redis stops answering,
/// the first read times out and starts the degraded mode, and every further key waits another
/// `response_timeout` anyway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_check_waits_for_a_stalled_redis_at_most_once() {
    let server = RedisServer::start();
    let ns = namespace("stall");
    let timeout = Duration::from_millis(200);
    // No background traffic: nothing is cached, no cooldown is known.
    let store = connected(
        config(&server.url(), &ns)
            .response_timeout(timeout)
            .sync_interval(Duration::from_secs(3600))
            .resync_interval(Duration::from_secs(3600)),
        StoreConfig::default(),
    )
    .await;
    assert_eq!(server.command(&["CLIENT", "PAUSE", "5000", "ALL"]), "OK");
    let keys = ["provider_spend:a", "provider_spend:b", "deployment_spend:x", "deployment_spend:y"];
    let start = Instant::now();
    let read = store.spends(&keys).await.unwrap();
    let waited = start.elapsed();
    assert_eq!(read.len(), 4);
    assert!(store.is_degraded());
    assert!(waited < timeout * 2, "one budget check waited {waited:?} for a stalled Redis (timeout {timeout:?})");
}

// ---------------------------------------------------------------------------------------------
// Lua arithmetic against the memory window.

/// The memory window truncates the resolution to whole milliseconds (`as_millis().max(1)`); the
/// Redis scripts get the span in those ticks but the tick length in microseconds
/// (`resolution_us`), so with a sub-millisecond resolution the shared window is shorter than
/// `usage_window` (half as long at 500 µs): the limit is enforced over half the window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_millisecond_resolution_keeps_the_whole_window() {
    let server = RedisServer::start();
    let mut sc = StoreConfig::default();
    sc.usage_window = Duration::from_millis(400);
    sc.resolution = Duration::from_micros(500);
    let limits = Limits { rpm: Some(1), tpm: None };
    let d = id("fine");

    let memory = StateStore::memory_with(sc);
    assert!(matches!(memory.try_reserve(&d, limits, 0).await, Admission::Admitted(_)));
    let Admission::Full { retry_in: memory_wait } = memory.try_reserve(&d, limits, 0).await else { panic!("full") };

    let redis = connected(config(&server.url(), &namespace("res")), sc).await;
    assert!(matches!(redis.try_reserve(&d, limits, 0).await, Admission::Admitted(_)));
    let Admission::Full { retry_in: redis_wait } = redis.try_reserve(&d, limits, 0).await else { panic!("full") };
    assert!(memory_wait >= Duration::from_millis(395), "memory {memory_wait:?}");
    assert!(
        redis_wait >= Duration::from_millis(390),
        "redis frees the slot after {redis_wait:?}, memory after {memory_wait:?} (window 400 ms)"
    );
}

/// Verified: big token counts survive the number conversions (`redis.call` uses %.17g for
/// integers; replies truncate to integers) and the boundaries match `window.rs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_token_counts_and_tpm_boundaries_match_memory() {
    let server = RedisServer::start();
    let redis = connected(config(&server.url(), &namespace("big")), StoreConfig::default()).await;
    let memory = StateStore::memory();
    let d = id("big");
    let tpm = 3_000_000_000u64;
    let limits = Limits { rpm: None, tpm: Some(tpm) };
    for store in [&*redis, &memory] {
        let Admission::Admitted(r) = store.try_reserve(&d, limits, 1_000_000_000).await else { panic!("admitted") };
        assert!(matches!(store.try_reserve(&d, limits, 2_000_000_000).await, Admission::Admitted(_)));
        // Exactly at the limit: one more token does not fit; after reconciling down it does.
        assert!(matches!(store.try_reserve(&d, limits, 1).await, Admission::Full { .. }));
        store.reconcile_detached(&r, 100_000_000);
        store.flush().await;
        assert!(matches!(store.try_reserve(&d, limits, 900_000_000).await, Admission::Admitted(_)));
        match store.try_reserve(&d, limits, tpm + 1).await {
            Admission::Full { retry_in } => assert!(retry_in >= Duration::from_secs(60), "{retry_in:?}"),
            Admission::Admitted(_) => panic!("a request larger than the limit never fits"),
        }
    }
}

/// Verified: `clear_cooldown` returns what the memory backend returns, including for a half-open
/// deployment whose deadline passed and for a plain cooldown that already ran out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_returns_what_memory_returns() {
    let server = RedisServer::start();
    let redis = connected(config(&server.url(), &namespace("clear")), StoreConfig::default()).await;
    let growth = Some(Growth::new(2.0, Duration::from_secs(60)));
    let (h, p) = (id("half"), id("plain"));
    redis.bench(&h, Duration::from_millis(100), "500".into(), None, growth).await;
    redis.bench(&p, Duration::from_millis(100), "500".into(), None, None).await;
    let deadline = Instant::now() + Duration::from_millis(400);
    tokio::time::sleep_until(deadline).await; // the cooldowns' own deadlines, not a sync
    assert_eq!(state(&redis, &h).await, CooldownState::HalfOpen { strikes: 1, probing: false });
    assert!(redis.clear_cooldown(&h).await, "half-open counts as in force");
    assert!(!redis.clear_cooldown(&p).await, "an expired plain cooldown does not");
}

/// The same for a bench with growth whose deadline passed: the deployment is half-open locally
/// (waiting for a probe), and a resync reading the absent record must not make it available.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_open_bench_whose_script_failed_survives_the_next_resync() {
    let server = RedisServer::start();
    let ns = namespace("oom-half-open");
    let store =
        connected(config(&server.url(), &ns).resync_interval(Duration::from_millis(100)), StoreConfig::default()).await;
    let d = id("failing-half-open");
    assert_eq!(state(&store, &d).await, CooldownState::Available);
    assert_eq!(server.command(&["CONFIG", "SET", "maxmemory", "1"]), "OK");
    let growth = Some(Growth::new(2.0, Duration::from_secs(60)));
    let c = store.bench(&d, Duration::from_millis(100), "500".into(), Some(500), growth).await;
    assert_eq!(c.strikes, 1, "benched locally");
    // Past the deadline (the cooldown's own, not a sync): half-open, waiting for a probe, and so
    // for ten resync intervals more.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(state(&store, &d).await, CooldownState::HalfOpen { strikes: 1, probing: false });
    let lifted = wait_state(&store, &d, Duration::from_secs(1), |s| *s == CooldownState::Available).await;
    assert!(lifted.is_none(), "the half-open state set locally was lifted by a resync");
}

/// A message with a revision far ahead of the server's counter (a bogus message, or a counter
/// that restarted) must not freeze the mirror: the periodic re-read sees the server's current
/// revision below the mirror's and accepts the read, repairing the mirror within
/// `resync_interval`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resync_repairs_a_mirror_whatever_the_revisions() {
    let server = RedisServer::start();
    let ns = namespace("future");
    let c = config(&server.url(), &ns).resync_interval(Duration::from_millis(100));
    let a = connected(c.clone(), StoreConfig::default()).await;
    let b = connected(c, StoreConfig::default()).await;
    let d = id("skewed");
    assert_eq!(state(&a, &d).await, CooldownState::Available);
    b.bench(&d, Duration::from_secs(60), "429".into(), Some(429), None).await;
    wait_state(&a, &d, Duration::from_secs(5), |s| matches!(s, CooldownState::CoolingDown(_)))
        .await
        .expect("a sees b's cooldown");
    // The same record, stamped one hour ahead.
    let now_us: u64 = server.command(&["TIME"]).lines().next().unwrap().parse::<u64>().unwrap() * 1_000_000;
    let now_ms = now_us / 1000;
    let msg = format!(
        r#"{{"id":"skewed","op":"set","now":"{now_ms}","u":"{}","r":"skewed","s":"429","k":"0","h":"0","p":"0","at":"{}"}}"#,
        now_ms + 60_000,
        now_us + 3_600_000_000
    );
    server.command(&["PUBLISH", &format!("{ns}:v1:cooldowns"), &msg]);
    wait_state(
        &a,
        &d,
        Duration::from_secs(5),
        |s| matches!(s, CooldownState::CoolingDown(c) if &*c.reason == "skewed"),
    )
    .await
    .expect("a applied the skewed record");
    assert!(b.clear_cooldown(&d).await);
    let seen = wait_state(&a, &d, Duration::from_secs(2), |s| *s == CooldownState::Available).await;
    assert!(seen.is_some(), "a never saw the clear, not even through ten resyncs");
}

/// A window whose expiring ticks hold no tokens (RPM-only reservations) or no failures (an
/// outcome window of successes) subtracts zero from its totals. Lua writes `-0` for that, which
/// `HINCRBY` refuses: under steady traffic (older ticks expire while newer ones stay) every script
/// on the window failed from the first expiry on, and the store answered from local state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_expire_ticks_that_hold_zero() {
    let server = RedisServer::start();
    let mut sc = StoreConfig::default();
    sc.usage_window = Duration::from_millis(30);
    sc.outcome_window = Duration::from_millis(30);
    sc.resolution = Duration::from_millis(5);
    let redis = connected(config(&server.url(), &namespace("zero")), sc).await;
    let d = id("zero");
    let limits = Limits { rpm: Some(1_000), tpm: None };
    // Three windows of steady traffic, a call every 5 ms: from the seventh on, each script prunes
    // expired ticks while newer ones stay, and their token and failure counts are 0.
    for _ in 0..18 {
        let Admission::Admitted(_) = redis.try_reserve(&d, limits, 0).await else { panic!("far below the RPM limit") };
        redis.record_outcome(&d, true).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let stats = redis.redis_stats().unwrap();
    assert_eq!((stats.errors, stats.degradations), (0, 0), "{stats:?}");
    let usage = redis.usage(std::slice::from_ref(&d)).await.remove(0);
    assert!((1..=7).contains(&usage.requests), "the shared window holds the last 30 ms only: {usage:?}");
}

/// The shared window against the memory window over many ticks: a prune that drops more ticks
/// than one batch reads (8), a wait that walks more ticks than one batch (16), and the keys' TTL,
/// set again only once a quarter window has passed, never shorter than the window while events
/// keep coming. Both stores see each step within a few hundred µs of each other, so their counts
/// may differ by the events of one tick at a boundary.
///
/// On the real clock: the window (4 s) is long against the 40 calls (about 1.7 s, and 2.3 s more
/// of slack for a loaded machine's scheduling and the `PTTL` reads), so the window is still full
/// when the loop ends unless it ran over twice as slowly as planned; a 200 ms window failed on a
/// loaded CI machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_ticks_prune_wait_and_expire_like_memory() {
    let server = RedisServer::start();
    let mut sc = StoreConfig::default();
    sc.usage_window = Duration::from_secs(4);
    sc.resolution = Duration::from_millis(40);
    let ns = namespace("ticks");
    let redis = connected(config(&server.url(), &ns), sc).await;
    let memory = StateStore::memory_with(sc);
    let d = id("ticks");
    let limits = Limits { rpm: None, tpm: Some(40) };
    let ttl = |suffix: &str| -> i64 {
        server.command(&["PTTL", &format!("{ns}:v1:{{d:ticks}}:usage:{suffix}")]).trim().parse().unwrap()
    };
    // 40 tokens, one per tick (each call 41 ms after the last): the window is full.
    for i in 0..40 {
        // The token's tick is stamped inside the script, some time after `before`: the keys must
        // expire at least a window after it, so TTL + the time since `before` must reach 4 s
        // (a loaded machine may take several ms between the script and the PTTL read).
        let before = std::time::Instant::now();
        for store in [&*redis, &memory] {
            let Admission::Admitted(_) = store.try_reserve(&d, limits, 1).await else { panic!("token {i} fits") };
        }
        for suffix in ["t", "c"] {
            let left = ttl(suffix);
            let since = i64::try_from(before.elapsed().as_millis()).unwrap_or(i64::MAX);
            assert!(
                left.saturating_add(since) >= 4_000,
                "usage:{suffix} lives {left} ms, {since} ms after token {i} was sent (window 4 s)"
            );
        }
        tokio::time::sleep(Duration::from_millis(41)).await;
    }
    // 20 tokens fit once the 20 oldest ticks left: a wait found two batches into the ticks.
    let waits: Vec<Duration> = {
        let mut w = Vec::new();
        for store in [&*redis, &memory] {
            let Admission::Full { retry_in } = store.try_reserve(&d, limits, 20).await else {
                panic!("the window is full")
            };
            w.push(retry_in);
        }
        w
    };
    assert!(waits[0].abs_diff(waits[1]) <= 2 * sc.resolution, "redis {:?}, memory {:?}", waits[0], waits[1]);
    // After the wait, 20 ticks leave at once (one prune over three batches): 20 tokens fit.
    tokio::time::sleep(waits[0].max(waits[1]) + Duration::from_millis(1)).await;
    for store in [&*redis, &memory] {
        let Admission::Admitted(_) = store.try_reserve(&d, limits, 20).await else {
            panic!("20 tokens fit after the wait the store gave")
        };
    }
    let stats = redis.redis_stats().unwrap();
    assert_eq!(stats.errors, 0, "{stats:?}");
}

/// A window whose sorted set lost its ticks while the hash kept them (an `allkeys-*` eviction)
/// is dropped whole by the next prune; the event that follows must start a fresh window (its tick
/// in the sorted set, both keys with a TTL) rather than add to counts read before the drop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_that_lost_its_ticks_starts_afresh() {
    let server = RedisServer::start();
    let ns = namespace("evicted");
    let redis = connected(config(&server.url(), &ns), StoreConfig::default()).await;
    let d = id("evicted");
    let limits = Limits { rpm: Some(1_000), tpm: None };
    let (t, c) = (format!("{ns}:v1:{{d:evicted}}:usage:t"), format!("{ns}:v1:{{d:evicted}}:usage:c"));
    let Admission::Admitted(_) = redis.try_reserve(&d, limits, 5).await else { panic!("admitted") };
    // The sorted set goes; the hash says its oldest tick is long gone.
    server.command(&["DEL", &t]);
    server.command(&["HSET", &c, "o", "1"]);
    let Admission::Admitted(_) = redis.try_reserve(&d, limits, 5).await else { panic!("admitted") };
    let hash = server.command(&["HMGET", &c, "a", "b"]);
    assert_eq!(hash.lines().collect::<Vec<_>>(), ["1", "5"], "only the new event counts");
    assert_eq!(server.command(&["ZCARD", &t]).trim(), "1", "its tick is in the sorted set");
    for key in [&t, &c] {
        let ttl: i64 = server.command(&["PTTL", key]).trim().parse().unwrap();
        assert!(ttl > 0, "{key} has no TTL ({ttl})");
    }
    assert_eq!(redis.redis_stats().unwrap().errors, 0);
}
