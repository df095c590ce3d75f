//! The connection the backend talks through: one multiplexed connection (single server, with
//! automatic reconnection) or a cluster connection, wrapped to count round trips and commands.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering::Relaxed},
};

use redis::{
    Cmd, Pipeline, RedisFuture, Value,
    aio::{ConnectionLike, ConnectionManager},
    cluster_async::ClusterConnection,
};

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
