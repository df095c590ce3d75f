//! Health-probe records and probe leases on Redis: a record is one hash per deployment
//! (`{d:<id>}:health`, written by script `health_set`, read by script `health_read`, both on the
//! server's clock), the lease one key (`{d:<id>}:health:lease`, `SET NX PX`). Reads on the request
//! path come from the local mirror, which this replica's own writes and the probe task's
//! `refresh_health` (once per interval) keep current. While Redis is unreachable everything is
//! local: this replica probes every deployment itself.

use std::{sync::atomic::AtomicU64, time::Duration};

use futures_util::future::join_all;
use tokio::time::Instant;

use super::{RedisBackend, millis, scripts};
use crate::{DeploymentId, state::HealthRecord};

/// Longest stored failure reason.
const REASON_MAX: usize = 200;

/// Tells this process's leases apart in Redis (for operators reading the keys).
static LEASE_SEQ: AtomicU64 = AtomicU64::new(0);

impl RedisBackend {
    pub(super) async fn record_health(&self, id: &DeploymentId, record: HealthRecord, ttl: Duration) {
        let s = &self.replica;
        s.local.health.put(id, record.clone(), ttl);
        let Some(mut h) = s.background_handle() else { return };
        let [key, _] = s.keys.health(id);
        let reason: String = record.reason.chars().take(REASON_MAX).collect();
        let mut inv = scripts::HEALTH_SET.key(key);
        inv.arg(u8::from(record.healthy))
            .arg(u64::try_from(record.age(Instant::now()).as_millis()).unwrap_or(u64::MAX))
            .arg(u64::try_from(record.latency.as_millis()).unwrap_or(u64::MAX))
            .arg(record.status.map(|s| s.to_string()).unwrap_or_default())
            .arg(reason)
            .arg(millis(ttl));
        s.run::<i64>(&inv, &mut h).await;
    }

    pub(super) async fn claim_health_lease(&self, id: &DeploymentId, hold: Duration) -> bool {
        let s = &self.replica;
        let Some(mut h) = s.background_handle() else { return s.local.health.claim_lease(id, hold) };
        let [_, lease] = s.keys.health(id);
        let token = format!("{}-{}", std::process::id(), LEASE_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let mut cmd = redis::cmd("SET");
        cmd.arg(lease).arg(token).arg("NX").arg("PX").arg(millis(hold));
        match s.query::<Option<String>>(&cmd, &mut h).await {
            Some(reply) => reply.is_some(),
            // Redis did not answer: probe from here rather than leave the deployment unprobed.
            None => s.local.health.claim_lease(id, hold),
        }
    }

    /// Reads the shared records of `ids` (one script each, concurrently) into the mirror.
    pub(super) async fn refresh_health(&self, ids: &[DeploymentId]) {
        let s = &self.replica;
        let Some(h) = s.background_handle() else { return };
        let reads = ids.iter().map(|id| {
            let mut h = h.clone();
            async move {
                let [key, _] = s.keys.health(id);
                let inv = scripts::HEALTH_READ.key(key);
                let reply = s.run::<Option<(u8, u64, u64, String, String, i64)>>(&inv, &mut h).await;
                (id, reply)
            }
        });
        let now = Instant::now();
        for (id, reply) in join_all(reads).await {
            let Some(Some((ok, age, latency, status, reason, ttl))) = reply else { continue };
            let checked_at = now.checked_sub(Duration::from_millis(age)).unwrap_or(now);
            let record =
                HealthRecord::new(ok == 1, Duration::from_millis(latency), status.parse().ok(), reason).at(checked_at);
            let ttl = Duration::from_millis(u64::try_from(ttl).unwrap_or(0));
            if !ttl.is_zero() {
                s.local.health.put(id, record, ttl);
            }
        }
    }
}
