//! The background tasks: the writer (detached writes, bounded), the supervisor (connects, detects
//! the end of an outage, resyncs, refreshes the read caches) and the subscriber (cooldown
//! messages from every replica).

use std::{
    panic::AssertUnwindSafe,
    sync::{Arc, Weak, atomic::Ordering::Relaxed},
    time::Duration,
};

use futures_util::{FutureExt, StreamExt, future::BoxFuture, stream::FuturesUnordered};
use redis::{Client, IntoConnectionInfo, aio::ConnectionManagerConfig, cluster::ClusterClientBuilder};
use tokio::{
    sync::{mpsc, watch},
    time::Instant,
};

use super::{
    Replica,
    config::{Topology, mask_credentials},
    conn::{Conn, Counted, Handles},
    scripts,
};
use crate::{DeploymentId, state::WindowUsage};

/// Detached writes run at most this many at a time (the multiplexed connection pipelines them).
const WRITER_CONCURRENCY: usize = 64;

/// A usage or spend entry no request read for this long is dropped from the cache.
const CACHE_IDLE: Duration = Duration::from_secs(60);

/// A revision not updated for this long is forgotten.
const REVISION_IDLE: Duration = Duration::from_secs(3600);

tokio::task_local! {
    /// Set while the writer runs a detached write.
    static BACKGROUND: ();
}

/// Whether the caller runs on the background writer.
pub(super) fn in_background() -> bool {
    BACKGROUND.try_with(|()| ()).is_ok()
}

/// Runs detached writes until every sender is gone.
pub(super) async fn writer(mut queue: mpsc::Receiver<BoxFuture<'static, ()>>, pending: Arc<watch::Sender<usize>>) {
    let done = || pending.send_modify(|n| *n = n.saturating_sub(1));
    let mut running = FuturesUnordered::new();
    loop {
        tokio::select! {
            next = queue.recv(), if running.len() < WRITER_CONCURRENCY => match next {
                // A panicking write must not take the writer (and every later write) down with it.
                Some(work) => running.push(BACKGROUND.scope((), AssertUnwindSafe(work).catch_unwind().map(drop))),
                None => break,
            },
            Some(()) = running.next(), if !running.is_empty() => done(),
        }
    }
    while running.next().await.is_some() {
        done();
    }
}

/// The connection settings of one URL, with the configured password.
fn connection_info(replica: &Replica, url: &str) -> redis::RedisResult<redis::ConnectionInfo> {
    // Small requests on a multiplexed connection: Nagle would hold one back behind another's ACK.
    let info = url.into_connection_info()?.set_tcp_settings(redis::io::tcp::TcpSettings::default().set_nodelay(true));
    Ok(match &replica.config.password {
        Some(p) => {
            let redis = info.redis_settings().clone().set_password(p.expose());
            info.set_redis_settings(redis)
        }
        None => info,
    })
}

/// A client for one URL, verifying TLS servers against the configured CA when there is one.
fn client(replica: &Replica, url: &str) -> redis::RedisResult<Client> {
    let info = connection_info(replica, url)?;
    match &replica.config.ca_cert_pem {
        Some(pem) => Client::build_with_tls(info, certificates(pem)),
        None => Client::open(info),
    }
}

fn certificates(pem: &[u8]) -> redis::TlsCertificates {
    redis::TlsCertificates { client_tls: None, root_cert: Some(pem.to_vec()) }
}

async fn connect(replica: &Replica) -> redis::RedisResult<Conn> {
    let c = &replica.config;
    match &c.topology {
        Topology::Single(url) => {
            let client = client(replica, url)?;
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(c.connect_timeout))
                .set_response_timeout(Some(c.response_timeout))
                .set_number_of_retries(2)
                .set_max_delay(c.connect_timeout);
            Ok(Conn::Single(client.get_connection_manager_with_config(config).await?))
        }
        Topology::Cluster(nodes) => {
            let infos = nodes.iter().map(|n| connection_info(replica, n)).collect::<redis::RedisResult<Vec<_>>>()?;
            let mut builder = ClusterClientBuilder::new(infos)
                .connection_timeout(c.connect_timeout)
                .response_timeout(c.response_timeout)
                .retries(1);
            if let Some(pem) = &c.ca_cert_pem {
                builder = builder.certs(certificates(pem));
            }
            let client = builder.build()?;
            Ok(Conn::Cluster(client.get_async_connection().await?))
        }
    }
}

/// Connects, then every tick: probes while degraded (and resyncs when Redis is back), refreshes
/// the read caches, and re-reads every known cooldown each `resync_interval`.
pub(super) async fn supervise(weak: Weak<Replica>, mut stop: watch::Receiver<()>) {
    let tick = {
        let Some(s) = weak.upgrade() else { return };
        s.config.sync_interval.min(s.config.resync_interval)
    };
    let mut last_resync: Option<Instant> = None;
    loop {
        let notified = {
            let Some(replica) = weak.upgrade() else { return };
            if replica.handles.load().is_none() {
                let t = replica.config.connect_timeout;
                match tokio::time::timeout(t, connect(&replica)).await {
                    Ok(Ok(conn)) => {
                        let request = Counted::new(conn.clone(), replica.request.clone());
                        let background = Counted::new(conn, replica.background.clone());
                        replica.handles.store(Some(Arc::new(Handles { request, background })));
                    }
                    Ok(Err(e)) => replica.warn(&format!("redis: cannot connect, routing on local state: {e}")),
                    Err(_) => replica.warn(&format!("redis: cannot connect within {t:?}, routing on local state")),
                }
            }
            if let Some(handles) = replica.handles.load_full() {
                let mut bg = handles.background.clone();
                if replica.degraded.load(Relaxed) {
                    if ping(&replica, &mut bg).await {
                        recover(&replica, &mut bg).await;
                        last_resync = Some(Instant::now());
                    }
                } else {
                    let due = last_resync.is_none_or(|at| at.elapsed() >= replica.config.resync_interval);
                    flush_successes(&replica, &mut bg).await;
                    refresh(&replica, &mut bg, due).await;
                    if replica.resync_now.swap(false, Relaxed) || due {
                        push_offline(&replica, &mut bg).await;
                        resync(&replica, &mut bg).await;
                        last_resync = Some(Instant::now());
                    }
                }
            }
            let replica = replica.clone();
            async move { replica.resync.notified().await }
        };
        tokio::select! {
            _ = stop.changed() => return,
            () = tokio::time::sleep(tick) => {}
            () = notified => {}
        }
    }
}

async fn ping(replica: &Replica, conn: &mut Counted) -> bool {
    let t = replica.config.response_timeout;
    matches!(tokio::time::timeout(t, redis::cmd("PING").query_async::<String>(conn)).await, Ok(Ok(_)))
}

/// Records the successes counted since the last tick, one script per deployment; one batch at a
/// time (the supervisor's tick and `flush`).
pub(super) async fn flush_successes(replica: &Replica, conn: &mut Counted) {
    let _one_at_a_time = replica.flushing.lock().await;
    let ids: Vec<DeploymentId> = replica.successes.iter().map(|e| e.key().clone()).collect();
    let writes = ids.iter().filter_map(|id| {
        let n = replica.successes.remove(id).map(|(_, n)| n)?;
        let mut c = conn.clone();
        Some(async move {
            if replica.record_outcomes(id, n, 0, &mut c).await.is_none() {
                // Not recorded: count them again next time.
                *replica.successes.entry(id.clone()).or_insert(0) += n;
            }
        })
    });
    futures_util::future::join_all(writes).await;
}

/// Pushes what this replica did locally while Redis did not take it: cooldowns set (merged:
/// deadlines extend, strikes and half-open never drop) and cooldowns cleared. Each id leaves the
/// queue only once Redis took it. Returns whether everything was pushed.
async fn push_offline(replica: &Replica, conn: &mut Counted) -> bool {
    let mut all = true;
    let now = Instant::now();
    let benched: Vec<DeploymentId> = replica.offline.iter().map(|e| e.key().clone()).collect();
    for id in benched {
        let Some((c, half_open)) = replica.local.record(&id) else {
            replica.offline.remove(&id);
            continue;
        };
        let mut inv = replica.cooldown_script(&scripts::BENCH, &id);
        inv.arg(super::millis(c.until.saturating_duration_since(now)))
            .arg(&*c.reason)
            .arg(c.status.map(|s| s.to_string()).unwrap_or_default())
            .arg("")
            .arg(0)
            .arg(super::millis(replica.config.half_open_linger))
            .arg(replica.keys.channel())
            .arg(id.as_str())
            .arg(c.strikes)
            .arg(u8::from(half_open));
        // Off the offline list first, so the reply applies (a newer local bench re-adds it).
        replica.offline.remove(&id);
        match replica.run::<String>(&inv, conn).await {
            Some(msg) => {
                replica.apply(&msg);
            }
            None => {
                replica.offline.insert(id, ());
                all = false;
            }
        }
    }
    let cleared: Vec<DeploymentId> = replica.offline_clears.iter().map(|e| e.key().clone()).collect();
    for id in cleared {
        let mut inv = replica.cooldown_script(&scripts::CLEAR, &id);
        inv.arg(replica.keys.channel()).arg(id.as_str());
        match replica.run::<(i64, String)>(&inv, conn).await {
            Some((_, msg)) => {
                replica.offline_clears.remove(&id);
                replica.apply(&msg);
            }
            None => all = false,
        }
    }
    all
}

/// Redis is reachable again: push what was done locally meanwhile, re-read every cooldown, and
/// leave the degraded mode, unless the connection failed again during all this.
async fn recover(replica: &Replica, conn: &mut Counted) {
    let errors = replica.connection_errors.load(Relaxed);
    push_offline(replica, conn).await;
    // Reservations and spend made while degraded stay local (they were counted by this replica's
    // limits); the shared windows resume from Redis.
    replica.usage.clear();
    replica.spends.clear();
    replica.affinity.clear();
    if !resync(replica, conn).await {
        // A key that keeps failing (a server error) must not keep every deployment degraded:
        // only a connection that failed again does.
        tracing::debug!(target: "switchyard::state", "some cooldowns could not be re-read; the next resync retries");
    }
    if replica.connection_errors.load(Relaxed) != errors {
        return;
    }
    replica.degraded.store(false, Relaxed);
    replica.health.send_replace(true);
    metrics::gauge!("switchyard_state_redis_degraded").set(0.0);
    tracing::info!(target: "switchyard::state", "redis reachable: replica state resumed");
}

/// Re-reads every cooldown this replica knows of (and every one in its mirror). Returns whether
/// every read succeeded.
async fn resync(replica: &Replica, conn: &mut Counted) -> bool {
    let mut ids: Vec<DeploymentId> = replica.known.iter().map(|e| e.key().clone()).collect();
    for (id, _) in replica.local.all_cooldowns() {
        if !replica.known.contains_key(&id) {
            ids.push(id);
        }
    }
    let reads = ids.iter().map(|id| {
        let mut c = conn.clone();
        async move {
            let mut inv = replica.cooldown_script(&scripts::READ, id);
            inv.arg(id.as_str());
            replica.run::<String>(&inv, &mut c).await
        }
    });
    let mut ok = true;
    for msg in futures_util::future::join_all(reads).await {
        match msg {
            Some(msg) => {
                replica.apply(&msg);
            }
            None => ok = false,
        }
    }
    ok
}

/// Refreshes the usage and spend entries requests read lately (and, every resync, the affinity
/// entries); drops idle ones.
async fn refresh(replica: &Replica, conn: &mut Counted, with_affinity: bool) {
    let now = Instant::now();
    replica.usage.retain(|_, e| now.saturating_duration_since(e.read_at) < CACHE_IDLE);
    replica.spends.retain(|_, e| now.saturating_duration_since(e.read_at) < CACHE_IDLE);
    let recent = replica.config.resync_interval * 2;
    replica.affinity.retain(|_, e| now.saturating_duration_since(e.read_at) < recent);
    // A revision only orders messages that arrive close together: forget idle ones (bounded by
    // the deployments, and a counter that restarted after a month idle is then accepted again).
    replica
        .revisions
        .retain(|id, (_, at)| now.saturating_duration_since(*at) < REVISION_IDLE || replica.local.record(id).is_some());

    let ids: Vec<DeploymentId> = replica.usage.iter().map(|e| e.key().clone()).collect();
    let usage = ids.iter().map(|id| {
        let mut c = conn.clone();
        async move {
            let [t, k] = replica.keys.usage(id);
            let mut inv = scripts::USAGE.key(t);
            inv.key(k).arg(replica.resolution_us()).arg(replica.span(replica.store.usage_window));
            (id, replica.run::<(u64, u64)>(&inv, &mut c).await)
        }
    });
    let keys: Vec<Arc<str>> = replica.spends.iter().map(|e| e.key().clone()).collect();
    let spends = keys.iter().map(|k| {
        let mut c = conn.clone();
        async move { replica.read_spend(k, &mut c).await }
    });
    let affinity: Vec<Arc<str>> =
        if with_affinity { replica.affinity.iter().map(|e| e.key().clone()).collect() } else { Vec::new() };
    let affinities = affinity.iter().map(|k| {
        let mut c = conn.clone();
        async move { replica.read_affinity(k, &mut c).await }
    });
    let (usage, _, _) = tokio::join!(
        futures_util::future::join_all(usage),
        futures_util::future::join_all(spends),
        futures_util::future::join_all(affinities)
    );
    for (id, read) in usage {
        if let Some((requests, tokens)) = read
            && let Some(mut e) = replica.usage.get_mut(id)
        {
            e.value = WindowUsage { requests, tokens };
        }
    }
}

/// Applies every cooldown message published by any replica; reconnects when the subscription
/// drops, and asks for a resync then (messages may have been missed).
///
/// On a cluster there is one subscriber per seed node: a message reaches the subscribers of the
/// node that ran the script directly, and the others through the cluster bus (which can add tens
/// of milliseconds); the first copy applies, the revision check drops the rest.
pub(super) async fn subscribe(weak: Weak<Replica>, url: String, mut stop: watch::Receiver<()>) {
    let mut attempt = 0usize;
    loop {
        let session = {
            let Some(replica) = weak.upgrade() else { return };
            let url = url.clone();
            attempt += 1;
            let channel = replica.keys.channel().to_owned();
            let client = client(&replica, &url);
            let timeout = replica.config.connect_timeout;
            async move {
                let client = client?;
                let mut pubsub = tokio::time::timeout(timeout, client.get_async_pubsub())
                    .await
                    .map_err(|_| redis::RedisError::from((redis::ErrorKind::Io, "pub/sub connect timed out")))??;
                pubsub.subscribe(&channel).await?;
                redis::RedisResult::Ok((pubsub, url))
            }
        };
        let backoff = match tokio::select! { _ = stop.changed() => return, r = session => r } {
            Ok((pubsub, url)) => {
                attempt = 0;
                if let Some(replica) = weak.upgrade() {
                    replica.resync_now.store(true, Relaxed);
                    replica.resync.notify_one();
                }
                tracing::debug!(target: "switchyard::state", url = %mask_credentials(&url), "subscribed to cooldown messages");
                let mut messages = pubsub.into_on_message();
                loop {
                    let msg = tokio::select! { _ = stop.changed() => return, m = messages.next() => m };
                    let Some(msg) = msg else { break };
                    let Some(replica) = weak.upgrade() else { return };
                    if let Ok(payload) = msg.get_payload::<String>() {
                        replica.apply(&payload);
                    }
                }
                Duration::from_millis(50)
            }
            Err(_) => Duration::from_millis(100 * (attempt.min(10) as u64)),
        };
        tokio::select! {
            _ = stop.changed() => return,
            () = tokio::time::sleep(backoff) => {}
        }
    }
}

impl Replica {
    pub(super) fn detach(&self, work: BoxFuture<'static, ()>) {
        self.pending.send_modify(|n| *n += 1);
        if self.writes.try_send(work).is_err() {
            self.pending.send_modify(|n| *n = n.saturating_sub(1));
            self.dropped.fetch_add(1, Relaxed);
            metrics::counter!("switchyard_state_redis_dropped_writes_total").increment(1);
        }
    }
}
