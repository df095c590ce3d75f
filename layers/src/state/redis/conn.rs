//! The connection the backend talks through: one multiplexed connection (single server, with
//! automatic reconnection) or a cluster connection, wrapped to count round trips and commands; and
//! the calls made on it, each with the reply timeout, a failure starting the degraded mode.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering::Relaxed},
};

use redis::{
    Cmd, FromRedisValue, Pipeline, RedisError, RedisFuture, ScriptInvocation, Value,
    aio::{ConnectionLike, ConnectionManager},
    cluster_async::ClusterConnection,
};
use tokio::time::Instant;

use super::{Replica, sync};

/// Round trips and commands sent through one [`Counted`] handle.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) round_trips: AtomicU64,
    pub(crate) commands: AtomicU64,
}

/// The underlying connection.
#[derive(Clone)]
pub(crate) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

/// A connection that counts what goes through it: one round trip per command or pipeline, and
/// the commands inside (what `INFO commandstats` counts on the server).
#[derive(Clone)]
pub(crate) struct Counted {
    conn: Conn,
    counters: Arc<Counters>,
}

impl Counted {
    pub(crate) fn new(conn: Conn, counters: Arc<Counters>) -> Self {
        Self { conn, counters }
    }
}

impl ConnectionLike for Counted {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.counters.round_trips.fetch_add(1, Relaxed);
        self.counters.commands.fetch_add(1, Relaxed);
        match &mut self.conn {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.counters.round_trips.fetch_add(1, Relaxed);
        self.counters.commands.fetch_add(pipeline.len() as u64, Relaxed);
        match &mut self.conn {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match &self.conn {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// Connection handles: the request path and the background tasks count separately.
#[derive(Clone)]
pub(super) struct Handles {
    pub(super) request: Counted,
    pub(super) background: Counted,
}

/// What a script can be run on: the request handles (their request connection) or a background
/// connection.
pub(super) trait AsConn {
    fn as_conn(&mut self) -> &mut Counted;
}

impl AsConn for Handles {
    fn as_conn(&mut self) -> &mut Counted {
        &mut self.request
    }
}

impl AsConn for Counted {
    fn as_conn(&mut self) -> &mut Counted {
        self
    }
}

impl Replica {
    /// The handles for an operation: on the request path, or, inside the background writer
    /// (bookkeeping that calls the store's awaited operations), counted as background.
    pub(super) fn request_handle(&self) -> Option<Handles> {
        if self.degraded.load(Relaxed) {
            return None;
        }
        let h = self.handles.load_full()?;
        if sync::in_background() {
            return Some(Handles { request: h.background.clone(), background: h.background.clone() });
        }
        Some((*h).clone())
    }

    pub(super) fn background_handle(&self) -> Option<Counted> {
        if self.degraded.load(Relaxed) {
            return None;
        }
        self.handles.load_full().map(|h| h.background.clone())
    }

    /// Runs a script with the reply timeout; a failure is recorded (and may start the degraded
    /// mode) and answered with `None`, so the caller falls back to local state.
    pub(super) async fn run<T: FromRedisValue>(&self, inv: &ScriptInvocation<'_>, conn: &mut impl AsConn) -> Option<T> {
        self.run_result(inv, conn).await.ok()
    }

    pub(super) async fn run_result<T: FromRedisValue>(
        &self,
        inv: &ScriptInvocation<'_>,
        conn: &mut impl AsConn,
    ) -> Result<T, ()> {
        match tokio::time::timeout(self.config.response_timeout, inv.invoke_async(conn.as_conn())).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                self.failed(&e);
                Err(())
            }
            Err(_) => {
                self.timed_out();
                Err(())
            }
        }
    }

    pub(super) async fn query<T: FromRedisValue>(&self, cmd: &Cmd, conn: &mut Counted) -> Option<T> {
        match tokio::time::timeout(self.config.response_timeout, cmd.query_async(conn)).await {
            Ok(Ok(v)) => Some(v),
            Ok(Err(e)) => {
                self.failed(&e);
                None
            }
            Err(_) => {
                self.timed_out();
                None
            }
        }
    }

    pub(super) fn timed_out(&self) {
        self.errors.fetch_add(1, Relaxed);
        self.connection_errors.fetch_add(1, Relaxed);
        metrics::counter!("switchyard_state_redis_errors_total", "kind" => "timeout").increment(1);
        self.degrade(&format!("no reply within {:?}", self.config.response_timeout));
    }

    pub(super) fn failed(&self, e: &RedisError) {
        self.errors.fetch_add(1, Relaxed);
        let unreachable = e.is_io_error()
            || e.is_timeout()
            || e.is_connection_dropped()
            || e.is_connection_refusal()
            || e.is_unrecoverable_error();
        if unreachable {
            self.connection_errors.fetch_add(1, Relaxed);
            metrics::counter!("switchyard_state_redis_errors_total", "kind" => "connection").increment(1);
            self.degrade(&e.to_string());
        } else {
            metrics::counter!("switchyard_state_redis_errors_total", "kind" => "server").increment(1);
            self.warn(&format!("redis call failed, answered from local state: {e}"));
        }
    }

    /// Enters the degraded mode: requests use local state until the supervisor reconnects.
    pub(super) fn degrade(&self, why: &str) {
        if !self.degraded.swap(true, Relaxed) {
            self.degradations.fetch_add(1, Relaxed);
            self.health.send_replace(false);
            metrics::gauge!("switchyard_state_redis_degraded").set(1.0);
            self.resync.notify_one();
        }
        self.warn(&format!("redis unreachable, routing on local state until it returns: {why}"));
    }

    /// Logs at most once per `warn_interval`.
    pub(super) fn warn(&self, message: &str) {
        let now = Instant::now();
        let mut last = self.last_warn.lock();
        if last.is_none_or(|at| now.saturating_duration_since(at) >= self.config.warn_interval) {
            *last = Some(now);
            drop(last);
            tracing::warn!(target: "switchyard::state", "{message}");
        }
    }
}
