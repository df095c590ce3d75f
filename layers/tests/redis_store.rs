//! The Redis backend against real servers the tests start themselves: the same semantics as the
//! memory backend, shared between stores (replicas), on one server and on a three-master cluster;
//! cooldown propagation; exact shared limits; round trips per attempt; the degraded mode.
#![cfg(feature = "redis")]

#[path = "support/redis.rs"]
mod redis_support;

use std::{sync::Arc, time::Duration};

use redis_support::{RedisCluster, RedisServer};
use switchyard_layers::{
    DeploymentId, StateStore,
    state::{Admission, CooldownState, Growth, Limits, RedisConfig, StoreConfig},
};
use tokio::time::Instant;

static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A fresh namespace per store group, so checks on one server never see each other's keys.
fn namespace(name: &str) -> String {
    format!("t{}-{name}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

#[derive(Clone)]
enum Target {
    Single(String),
    Cluster(Vec<String>),
}

impl Target {
    fn config(&self, ns: &str) -> RedisConfig {
        let c = match self {
            Target::Single(url) => RedisConfig::new(url.clone()),
            Target::Cluster(urls) => RedisConfig::cluster(urls.clone()),
        };
        c.namespace(ns).response_timeout(Duration::from_secs(5))
    }

    /// `n` connected stores sharing one namespace (replicas of one gateway).
    async fn stores(&self, name: &str, n: usize) -> Vec<Arc<StateStore>> {
        self.stores_with(name, n, StoreConfig::default()).await
    }

    async fn stores_with(&self, name: &str, n: usize, store: StoreConfig) -> Vec<Arc<StateStore>> {
        let ns = namespace(name);
        let mut out = Vec::new();
        for _ in 0..n {
            let s = Arc::new(StateStore::redis_with(self.config(&ns), store).unwrap());
            tokio::time::timeout(Duration::from_secs(10), s.ready()).await.expect("connected to the test's redis");
            out.push(s);
        }
        out
    }
}

fn id(s: &str) -> DeploymentId {
    DeploymentId::from(s)
}

/// Waits (without polling) until `store`'s mirror shows `want` for `id`; returns how long it took.
async fn until_state(store: &StateStore, id: &DeploymentId, want: impl Fn(&CooldownState) -> bool) -> Duration {
    let start = Instant::now();
    let mut changes = store.watch_cooldowns();
    loop {
        let state = store.cooldown_states(std::slice::from_ref(id)).await.remove(0);
        if want(&state) {
            return start.elapsed();
        }
        tokio::time::timeout(Duration::from_secs(5), changes.changed())
            .await
            .expect("the cooldown reached the other replica within 5 s")
            .unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// The conformance checks, each against a fresh namespace; run on one server and on a cluster.

async fn reservations_are_exact_and_shared(t: &Target) {
    let stores = t.stores("reserve", 2).await;
    let d = id("limited");
    let limits = Limits { rpm: Some(3), tpm: None };
    for i in 0..3 {
        let s = &stores[i % 2];
        assert!(matches!(s.try_reserve(&d, limits, 0).await, Admission::Admitted(_)), "request {i}");
    }
    for s in &stores {
        match s.try_reserve(&d, limits, 0).await {
            Admission::Full { retry_in } => {
                assert!(retry_in > Duration::from_secs(59) && retry_in <= Duration::from_secs(61), "{retry_in:?}")
            }
            Admission::Admitted(_) => panic!("the 4th request in the window must not pass on any replica"),
        }
    }
    let room = stores[1].room_in(&d, limits, 0).await;
    assert!(room > Duration::from_secs(59), "{room:?}");
    assert_eq!(stores[0].room_in(&d, Limits { rpm: Some(4), tpm: None }, 0).await, Duration::ZERO);
}

async fn token_estimates_are_reconciled(t: &Target) {
    let stores = t.stores("tpm", 2).await;
    let d = id("tpm");
    let limits = Limits { rpm: None, tpm: Some(1000) };
    let Admission::Admitted(r) = stores[0].try_reserve(&d, limits, 900).await else { panic!("admitted") };
    assert!(matches!(stores[1].try_reserve(&d, limits, 200).await, Admission::Full { .. }));
    stores[0].reconcile_detached(&r, 300);
    stores[0].flush().await;
    assert!(matches!(stores[1].try_reserve(&d, limits, 200).await, Admission::Admitted(_)));
    // A detached reconciliation lands through the background writer.
    let Admission::Admitted(r2) = stores[1].try_reserve(&d, limits, 400).await else { panic!("admitted") };
    stores[1].reconcile_detached(&r2, 0);
    stores[1].flush().await;
    let room = stores[0].room_in(&d, Limits { rpm: None, tpm: Some(1000) }, 500).await;
    assert_eq!(room, Duration::ZERO, "300 + 200 + 0 used: 500 more fit");
}

async fn cooldowns_extend_and_reach_every_replica(t: &Target) {
    let stores = t.stores("cooldown", 3).await;
    let d = id("benched");
    // The other replicas read the deployment (as the cooldown layer does before each attempt).
    for s in &stores[1..] {
        assert_eq!(s.cooldown_states(std::slice::from_ref(&d)).await, vec![CooldownState::Available]);
    }
    let long = stores[0].bench(&d, Duration::from_secs(60), "429 from upstream".into(), Some(429), None).await;
    let short = stores[1].bench(&d, Duration::from_secs(5), "500".into(), Some(500), None).await;
    assert_eq!(short.reason, long.reason, "a shorter cooldown never replaces a longer one");
    let gap = short.until.max(long.until) - short.until.min(long.until);
    assert!(gap < Duration::from_millis(250), "the same deadline, converted by each reply: {gap:?}");
    for s in &stores {
        until_state(s, &d, |st| matches!(st, CooldownState::CoolingDown(c) if c.status == Some(429))).await;
    }
    let all = stores[2].all_cooldowns().await;
    assert_eq!(all.len(), 1);
    assert!(stores[2].clear_cooldown(&d).await);
    for s in &stores {
        until_state(s, &d, |st| *st == CooldownState::Available).await;
    }
    assert!(!stores[0].clear_cooldown(&d).await, "nothing left to clear");
}

async fn half_open_admits_one_probe_across_replicas(t: &Target) {
    let stores = t.stores("probe", 2).await;
    let d = id("half-open");
    let growth = Some(Growth::new(2.0, Duration::from_secs(60)));
    let first = stores[0].bench(&d, Duration::from_millis(500), "500".into(), Some(500), growth).await;
    assert_eq!(first.strikes, 1);
    // Once the deadline passes, every replica sees the half-open state.
    for s in &stores {
        until_state(s, &d, |st| matches!(st, CooldownState::CoolingDown(_) | CooldownState::HalfOpen { .. })).await;
    }
    tokio::time::sleep_until(first.until + Duration::from_millis(50)).await; // the cooldown's own deadline, not a sync
    assert_eq!(
        stores[1].cooldown_states(std::slice::from_ref(&d)).await,
        vec![CooldownState::HalfOpen { strikes: 1, probing: false }]
    );
    let claims = futures_util::future::join_all(stores.iter().map(|s| s.claim_probe(&d, Duration::from_secs(30))))
        .await
        .into_iter()
        .filter(|c| *c)
        .count();
    assert_eq!(claims, 1, "one probe at a time, across replicas");
    let second = stores[1].bench(&d, Duration::from_millis(500), "500".into(), Some(500), growth).await;
    assert_eq!(second.strikes, 2);
    let left = second.until.saturating_duration_since(Instant::now());
    assert!(left > Duration::from_millis(700) && left <= Duration::from_millis(1000), "grown to 1 s: {left:?}");
}

async fn outcome_counts_are_shared(t: &Target) {
    let stores = t.stores("outcomes", 2).await;
    let d = id("counted");
    stores[0].record_outcome(&d, true).await;
    stores[1].record_outcome(&d, false).await;
    let c = stores[0].record_outcome(&d, false).await;
    assert_eq!((c.successes, c.failures), (1, 2));
}

async fn spend_is_shared_and_resets(t: &Target) {
    let stores = t.stores("spend", 3).await;
    let period = Duration::from_secs(1);
    stores[0].add_spend_detached("provider_spend:openai", 1.5, period);
    stores[0].flush().await;
    assert_eq!(stores[0].spend("provider_spend:openai").await.unwrap(), 1.5);
    stores[1].add_spend_detached("provider_spend:openai", 1.0, period);
    stores[1].flush().await;
    assert_eq!(stores[1].spend("provider_spend:openai").await.unwrap(), 2.5);
    stores[0].add_spend_detached("provider_spend:openai", 0.5, period);
    stores[0].flush().await;
    // A replica's first read of a key reads through: exact.
    let read = stores[2].spends(&["provider_spend:azure", "provider_spend:openai"]).await.unwrap();
    assert_eq!(read[0].total, 0.0);
    assert_eq!(read[1].total, 3.0);
    assert!(read[1].resets_in.is_some_and(|r| r <= period));
    // The writer's replica knows its own total; another reads its cache (stale by at most one
    // refresh interval: it has not seen the last 0.5 yet, or has).
    assert_eq!(stores[0].spends(&["provider_spend:openai"]).await.unwrap()[0].total, 3.0);
    let cached = stores[1].spends(&["provider_spend:openai"]).await.unwrap()[0].total;
    assert!(cached == 2.5 || cached == 3.0, "{cached}");
    tokio::time::sleep(period).await; // the period's own end, not a sync
    stores[1].add_spend_detached("provider_spend:openai", 0.25, period);
    stores[1].flush().await;
    assert_eq!(stores[1].spend("provider_spend:openai").await.unwrap(), 0.25, "a new period");
}

async fn affinity_is_shared(t: &Target) {
    let stores = t.stores("affinity", 2).await;
    stores[0].set_affinity("session:gpt-4o:abc", &id("a"), Duration::from_secs(30)).await;
    stores[0].flush().await;
    assert_eq!(stores[0].affinity("session:gpt-4o:abc").await, Some(id("a")));
    assert_eq!(stores[1].affinity("session:gpt-4o:abc").await, Some(id("a")), "read through");
    assert_eq!(stores[1].affinity("session:gpt-4o:none").await, None);
}

async fn conformance(t: Target) {
    reservations_are_exact_and_shared(&t).await;
    token_estimates_are_reconciled(&t).await;
    cooldowns_extend_and_reach_every_replica(&t).await;
    half_open_admits_one_probe_across_replicas(&t).await;
    outcome_counts_are_shared(&t).await;
    spend_is_shared_and_resets(&t).await;
    affinity_is_shared(&t).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_server_has_the_memory_semantics_shared() {
    let server = RedisServer::start();
    conformance(Target::Single(server.url())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_has_the_memory_semantics_shared() {
    let cluster = RedisCluster::start(3);
    conformance(Target::Cluster(cluster.urls())).await;
}

// ---------------------------------------------------------------------------------------------
// Exact shared limits: three replicas, rpm = 100, 1,000 concurrent reservations.

async fn exactly_the_limit_is_admitted(t: Target) {
    let stores = t.stores("exact", 3).await;
    let d = id("rpm-100");
    let limits = Limits { rpm: Some(100), tpm: None };
    let calls = (0..1000).map(|i| {
        let s = stores[i % 3].clone();
        let d = d.clone();
        tokio::spawn(async move { s.try_reserve(&d, limits, 0).await })
    });
    let mut admitted = 0;
    for c in futures_util::future::join_all(calls).await {
        if matches!(c.unwrap(), Admission::Admitted(_)) {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 100);
    for s in &stores {
        assert!(!s.is_degraded());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_admit_exactly_the_limit() {
    let server = RedisServer::start();
    exactly_the_limit_is_admitted(Target::Single(server.url())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_admit_exactly_the_limit_on_a_cluster() {
    let cluster = RedisCluster::start(3);
    exactly_the_limit_is_admitted(Target::Cluster(cluster.urls())).await;
}

// ---------------------------------------------------------------------------------------------
// Cooldown propagation: how long until a cooldown set on one replica is honoured by the others.

async fn propagation(t: Target) -> (Duration, Duration) {
    let stores = t.stores("propagation", 3).await;
    let ids: Vec<DeploymentId> = (0..100).map(|i| id(&format!("d{i}"))).collect();
    for s in &stores[1..] {
        s.cooldown_states(&ids).await;
    }
    let mut seen = Vec::new();
    for d in &ids {
        let watchers: Vec<_> = stores[1..]
            .iter()
            .map(|s| {
                let (s, d) = (s.clone(), d.clone());
                tokio::spawn(async move { until_state(&s, &d, |st| matches!(st, CooldownState::CoolingDown(_))).await })
            })
            .collect();
        let start = Instant::now();
        stores[0].bench(d, Duration::from_secs(60), "500".into(), Some(500), None).await;
        for w in watchers {
            w.await.unwrap();
            seen.push(start.elapsed());
        }
    }
    seen.sort();
    let p50 = seen[seen.len() / 2];
    let p99 = seen[seen.len() * 99 / 100];
    (p50, p99)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cooldowns_propagate_within_the_bound() {
    let server = RedisServer::start();
    let (p50, p99) = propagation(Target::Single(server.url())).await;
    println!("cooldown propagation, one server: p50 {p50:?}, p99 {p99:?}");
    assert!(p99 < Duration::from_secs(1), "p99 {p99:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cooldowns_propagate_within_the_bound_on_a_cluster() {
    let cluster = RedisCluster::start(3);
    let (p50, p99) = propagation(Target::Cluster(cluster.urls())).await;
    println!("cooldown propagation, cluster: p50 {p50:?}, p99 {p99:?}");
    assert!(p99 < Duration::from_secs(1), "p99 {p99:?}");
}

// ---------------------------------------------------------------------------------------------
// Round trips, counted on the client and cross-checked with the server's command statistics.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_is_one_round_trip_and_the_server_agrees() {
    let server = RedisServer::start();
    let t = Target::Single(server.url());
    let ns = namespace("rtt");
    // No background refresh during the measurement.
    let config = t.config(&ns).sync_interval(Duration::from_secs(3600)).resync_interval(Duration::from_secs(3600));
    let store = StateStore::redis(config).unwrap();
    store.ready().await;
    let d = id("counted");
    let limits = Limits { rpm: Some(1_000_000), tpm: None };
    // Warm up: the first call loads the script (EVALSHA, SCRIPT LOAD, EVALSHA).
    store.try_reserve(&d, limits, 0).await;
    store.flush().await;
    server.reset_commandstats();
    let before = store.redis_stats().unwrap();
    let n = 200;
    for _ in 0..n {
        assert!(matches!(store.try_reserve(&d, limits, 0).await, Admission::Admitted(_)));
        assert_eq!(store.cooldown_states(std::slice::from_ref(&d)).await[0], CooldownState::Available);
        store.usage(std::slice::from_ref(&d)).await;
    }
    let after = store.redis_stats().unwrap();
    assert_eq!(after.request_round_trips - before.request_round_trips, n, "one round trip per attempt");
    assert_eq!(after.background_round_trips, before.background_round_trips);
    let server_calls = server.commandstats().get("evalsha").copied().unwrap_or(0);
    assert_eq!(server_calls, n, "the server counted the same calls");
}

// ---------------------------------------------------------------------------------------------
// Degraded mode: Redis killed and restarted under load.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routing_continues_on_local_state_while_redis_is_down() {
    let mut server = RedisServer::start();
    let t = Target::Single(server.url());
    let ns = namespace("degraded");
    let config = |ns: &str| {
        t.config(ns)
            .response_timeout(Duration::from_millis(200))
            .connect_timeout(Duration::from_millis(200))
            .sync_interval(Duration::from_millis(50))
    };
    let a = Arc::new(StateStore::redis(config(&ns)).unwrap());
    let b = Arc::new(StateStore::redis(config(&ns)).unwrap());
    a.ready().await;
    b.ready().await;
    let d = id("shared");
    let limits = Limits { rpm: Some(1_000_000), tpm: None };
    assert!(matches!(a.try_reserve(&d, limits, 0).await, Admission::Admitted(_)));

    server.kill();
    // Every call still answers (from local state), and the store says it is degraded.
    for _ in 0..50 {
        assert!(matches!(a.try_reserve(&d, limits, 0).await, Admission::Admitted(_)));
        a.record_outcome(&d, true).await;
    }
    assert!(a.is_degraded());
    let stats = a.redis_stats().unwrap();
    assert!(stats.degraded && stats.degradations >= 1 && stats.errors >= 1, "{stats:?}");
    // A cooldown set while Redis is down is honoured locally at once...
    let offline = id("benched-offline");
    a.bench(&offline, Duration::from_secs(60), "500 while redis was down".into(), Some(500), None).await;
    assert!(a.cooldowns(std::slice::from_ref(&offline)).await[0].is_some());

    server.restart();
    tokio::time::timeout(Duration::from_secs(10), a.ready()).await.expect("a reconnects");
    tokio::time::timeout(Duration::from_secs(10), b.ready()).await.expect("b reconnects");
    assert!(!a.is_degraded());
    // ...and pushed to Redis when it returns, so the other replica learns of it.
    b.cooldown_states(std::slice::from_ref(&offline)).await;
    until_state(&b, &offline, |st| matches!(st, CooldownState::CoolingDown(c) if c.status == Some(500))).await;
    assert!(matches!(a.try_reserve(&d, limits, 0).await, Admission::Admitted(_)));
    assert!(!a.redis_stats().unwrap().degraded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_starts_while_redis_is_unreachable_and_connects_later() {
    let mut server = RedisServer::start();
    let url = server.url();
    server.kill();
    let config = RedisConfig::new(url)
        .namespace(namespace("late"))
        .connect_timeout(Duration::from_millis(200))
        .response_timeout(Duration::from_millis(200));
    let store = StateStore::redis(config).unwrap();
    assert!(store.is_degraded());
    let d = id("d");
    assert!(matches!(store.try_reserve(&d, Limits { rpm: Some(1), tpm: None }, 0).await, Admission::Admitted(_)));
    server.restart();
    tokio::time::timeout(Duration::from_secs(10), store.ready()).await.expect("connects once redis is up");
    assert!(!store.is_degraded());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budgets_can_fail_closed_while_redis_is_down() {
    let mut server = RedisServer::start();
    let config = RedisConfig::new(server.url())
        .namespace(namespace("closed"))
        .budgets_fail_closed(true)
        .connect_timeout(Duration::from_millis(200))
        .response_timeout(Duration::from_millis(200));
    let store = StateStore::redis(config).unwrap();
    store.ready().await;
    assert_eq!(store.spends(&["k"]).await.unwrap()[0].total, 0.0);
    server.kill();
    // The first failed call starts the degraded mode; from then on budgets refuse.
    store.record_outcome(&id("d"), true).await;
    assert!(store.is_degraded());
    let err = store.spends(&["k"]).await.unwrap_err();
    assert!(err.to_string().contains("fail-closed"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_namespaced_versioned_and_expire() {
    let server = RedisServer::start();
    let store = StateStore::redis(RedisConfig::new(server.url()).namespace("gw-prod")).unwrap();
    store.ready().await;
    let d = id("azure-eu");
    store.try_reserve(&d, Limits { rpm: Some(10), tpm: None }, 5).await;
    store.bench(&d, Duration::from_secs(30), "429".into(), Some(429), None).await;
    store.record_outcome(&d, false).await;
    store.add_spend_detached("provider_spend:openai", 0.1, Duration::from_secs(60));
    store.set_affinity("session:g:s1", &d, Duration::from_secs(60)).await;
    store.flush().await;
    let keys = server.command(&["KEYS", "*"]);
    let mut keys: Vec<&str> = keys.lines().collect();
    keys.sort();
    assert_eq!(
        keys,
        vec![
            "gw-prod:v1:{a:session:g:s1}:affinity",
            "gw-prod:v1:{d:azure-eu}:cooldown",
            "gw-prod:v1:{d:azure-eu}:outcomes:c",
            "gw-prod:v1:{d:azure-eu}:outcomes:t",
            "gw-prod:v1:{d:azure-eu}:rev",
            "gw-prod:v1:{d:azure-eu}:usage:c",
            "gw-prod:v1:{d:azure-eu}:usage:t",
            "gw-prod:v1:{s:provider_spend:openai}:spend",
        ]
    );
    for k in keys {
        let ttl: i64 = server.command(&["PTTL", k]).parse().unwrap();
        assert!(ttl > 0, "{k} has no TTL ({ttl})");
    }
}

// ---------------------------------------------------------------------------------------------
// TLS: `rediss://` through rustls, verified against a private CA.

/// A redis-server speaking only TLS, with a certificate from a CA made for the test.
struct TlsServer {
    child: std::process::Child,
    dir: std::path::PathBuf,
    port: u16,
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn openssl(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("openssl").args(args).current_dir(dir).output().expect("openssl runs");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn tls_server() -> TlsServer {
    let dir = std::env::temp_dir().join(format!("switchyard-tls-{}-{}", std::process::id(), namespace("tls")));
    std::fs::create_dir_all(&dir).unwrap();
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    openssl(
        &dir,
        &[
            &["req", "-x509"][..],
            &ec,
            &["-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj", "/CN=switchyard-test-ca"],
        ]
        .concat(),
    );
    openssl(
        &dir,
        &[&["req"][..], &ec, &["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"]].concat(),
    );
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n").unwrap();
    openssl(
        &dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "1",
            "-extfile",
            "ext.cnf",
        ],
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = std::process::Command::new("redis-server")
        .args([
            "--port",
            "0",
            "--tls-port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .args(["--tls-cert-file", "server.crt", "--tls-key-file", "server.key", "--tls-ca-cert-file", "ca.crt"])
        .args(["--tls-auth-clients", "no", "--dir", "."])
        .current_dir(&dir)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("redis-server runs (scripts/test installs it)");
    TlsServer { child, dir, port }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_connections_are_verified_against_the_configured_ca() {
    let server = tls_server();
    let url = format!("rediss://127.0.0.1:{}", server.port);
    let ca = std::fs::read(server.dir.join("ca.crt")).unwrap();
    let store = StateStore::redis(RedisConfig::new(url.clone()).namespace(namespace("tls")).ca_cert_pem(ca)).unwrap();
    tokio::time::timeout(Duration::from_secs(10), store.ready()).await.expect("connected over TLS");
    let d = id("tls");
    assert!(matches!(store.try_reserve(&d, Limits { rpm: Some(1), tpm: None }, 0).await, Admission::Admitted(_)));
    assert!(matches!(store.try_reserve(&d, Limits { rpm: Some(1), tpm: None }, 0).await, Admission::Full { .. }));
    assert_eq!(store.redis_stats().unwrap().errors, 0);

    // Without the CA, the platform's roots do not trust the server: no connection, local state.
    let untrusted = StateStore::redis(
        RedisConfig::new(url).namespace(namespace("tls")).connect_timeout(Duration::from_millis(300)),
    )
    .unwrap();
    let connected = tokio::time::timeout(Duration::from_millis(1500), untrusted.ready()).await;
    assert!(connected.is_err(), "an unverified server must not be used");
    assert!(untrusted.is_degraded());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_are_reloaded_after_the_server_forgets_them() {
    let server = RedisServer::start();
    let store = StateStore::redis(Target::Single(server.url()).config(&namespace("noscript"))).unwrap();
    store.ready().await;
    let d = id("d");
    let limits = Limits { rpm: Some(2), tpm: None };
    assert!(matches!(store.try_reserve(&d, limits, 0).await, Admission::Admitted(_)));
    assert_eq!(server.command(&["SCRIPT", "FLUSH"]), "OK");
    assert!(matches!(store.try_reserve(&d, limits, 0).await, Admission::Admitted(_)));
    assert!(matches!(store.try_reserve(&d, limits, 0).await, Admission::Full { .. }));
    let stats = store.redis_stats().unwrap();
    assert_eq!((stats.errors, stats.degraded), (0, false), "NOSCRIPT is answered by loading the script");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cooldowns_keep_propagating_after_redis_is_flushed() {
    let server = RedisServer::start();
    let t = Target::Single(server.url());
    let ns = namespace("flushed");
    let config = || t.config(&ns).resync_interval(Duration::from_millis(100));
    let a = StateStore::redis(config()).unwrap();
    let b = StateStore::redis(config()).unwrap();
    a.ready().await;
    b.ready().await;
    let d = id("d");
    b.cooldown_states(std::slice::from_ref(&d)).await;
    // Longer each time, so each one replaces the last (an equal deadline keeps the first reason).
    for (secs, reason) in [(60, "one"), (61, "two"), (62, "three")] {
        a.bench(&d, Duration::from_secs(secs), reason.into(), Some(500), None).await;
    }
    until_state(&b, &d, |s| matches!(s, CooldownState::CoolingDown(c) if &*c.reason == "three")).await;
    assert_eq!(server.command(&["FLUSHALL"]), "OK");
    // The revision counter restarts; the replica notices on its next re-read and follows.
    a.bench(&d, Duration::from_secs(90), "after the flush".into(), Some(429), None).await;
    until_state(&b, &d, |s| matches!(s, CooldownState::CoolingDown(c) if &*c.reason == "after the flush")).await;
}

#[tokio::test]
async fn an_invalid_url_is_refused_at_once_without_its_password() {
    let err = StateStore::redis(RedisConfig::new("redis://:hunter2@host:notaport/0")).unwrap_err();
    let shown = err.to_string();
    assert!(shown.contains("redis://***@host:notaport/0") && !shown.contains("hunter2"), "{shown}");
}
