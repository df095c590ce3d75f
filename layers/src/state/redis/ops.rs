//! The operations that go to Redis: each one Lua script (atomic, one round trip) or one command,
//! answered from this replica's state when Redis does not answer. Cooldown changes are applied to
//! the mirror from the script's own answer.

use std::{sync::atomic::Ordering::Relaxed, time::Duration};

use redis::ScriptInvocation;
use tokio::time::Instant;

use super::{
    AsConn, RedisBackend, Replica, cache::AffinityCache, conn::Counted, limit_arg, micros, millis, scripts, sync,
};
use crate::{
    DeploymentId,
    state::{Admission, Bench, Cooldown, CooldownState, Limits, OutcomeCounts, Reservation, WindowUsage},
};

impl RedisBackend {
    pub(super) async fn bench(&self, id: &DeploymentId, bench: Bench) -> Cooldown {
        let Bench { base, reason, status, growth } = bench;
        let s = &self.replica;
        s.remember(std::slice::from_ref(id));
        if let Some(mut h) = s.request_handle() {
            let mut inv = s.cooldown_script(&scripts::BENCH, id);
            inv.arg(millis(base))
                .arg(&*reason)
                .arg(status.map(|s| s.to_string()).unwrap_or_default())
                .arg(growth.map(|g| g.factor.to_string()).unwrap_or_default())
                .arg(growth.map_or(0, |g| millis(g.cap)))
                .arg(millis(s.config.half_open_linger))
                .arg(s.keys.channel())
                .arg(id.as_str());
            if let Some(msg) = s.run::<String>(&inv, &mut h).await
                && let Some(CooldownState::CoolingDown(c)) = s.apply(&msg)
            {
                return c;
            }
        }
        s.offline_clears.remove(id);
        s.offline.insert(id.clone(), ());
        s.local.bench(id, Bench::new(base, reason, status, growth))
    }

    pub(super) async fn claim_probe(&self, id: &DeploymentId, hold: Duration) -> bool {
        let s = &self.replica;
        if let Some(mut h) = s.request_handle() {
            let mut inv = s.cooldown_script(&scripts::PROBE, id);
            inv.arg(millis(hold)).arg(s.keys.channel()).arg(id.as_str());
            match s.run_result::<Option<String>>(&inv, &mut h).await {
                Ok(Some(msg)) => {
                    s.apply(&msg);
                    return true;
                }
                Ok(None) => return false,
                Err(()) => {}
            }
        }
        s.local.claim_probe(id, hold)
    }

    pub(super) fn release_probe(&self, id: &DeploymentId) {
        let s = &self.replica;
        s.local.release_probe(id);
        if s.request_handle().is_none() {
            return;
        }
        let replica = s.clone();
        let id = id.clone();
        s.detach(Box::pin(async move {
            let Some(mut h) = replica.background_handle() else { return };
            let mut inv = replica.cooldown_script(&scripts::RELEASE, &id);
            inv.arg(replica.keys.channel()).arg(id.as_str());
            if let Some(Some(msg)) = replica.run::<Option<String>>(&inv, &mut h).await {
                replica.apply(&msg);
            }
        }));
    }

    pub(super) async fn clear_cooldown(&self, id: &DeploymentId) -> bool {
        let s = &self.replica;
        if let Some(mut h) = s.request_handle() {
            let mut inv = s.cooldown_script(&scripts::CLEAR, id);
            inv.arg(s.keys.channel()).arg(id.as_str());
            if let Some((active, msg)) = s.run::<(i64, String)>(&inv, &mut h).await {
                let was_local = s.local.cooldown_states(std::slice::from_ref(id))[0] != CooldownState::Available;
                s.apply(&msg);
                return active == 1 || was_local;
            }
        }
        s.offline.remove(id);
        s.offline_clears.insert(id.clone(), ());
        s.local.clear_cooldown(id)
    }

    pub(super) async fn record_outcome(&self, id: &DeploymentId, success: bool) -> OutcomeCounts {
        let s = &self.replica;
        if let Some(mut h) = s.request_handle() {
            // Bookkeeping of a success (the caller does not read the counts): batched per tick.
            if success && sync::in_background() {
                self.count_success(id);
                return OutcomeCounts::default();
            }
            // Successes not yet recorded go with this outcome, so the rules see them.
            let earlier = s.successes.remove(id).map_or(0, |(_, n)| n);
            let (ok, failed) = if success { (earlier + 1, 0) } else { (earlier, 1) };
            if let Some(counts) = s.record_outcomes(id, ok, failed, &mut h.request).await {
                return counts;
            }
            if earlier > 0 {
                *s.successes.entry(id.clone()).or_insert(0) += earlier;
            }
        }
        s.local.record_outcome(id, success)
    }

    /// A success the caller does not read the counts of: added to the batch the supervisor
    /// records every tick (what `record_outcome` does with it on the background writer), or
    /// counted locally while Redis is unreachable.
    pub(super) fn count_success(&self, id: &DeploymentId) {
        let s = &self.replica;
        if s.degraded.load(Relaxed) || s.handles.load().is_none() {
            s.local.record_outcome(id, true);
            return;
        }
        *s.successes.entry(id.clone()).or_insert(0) += 1;
    }

    pub(super) fn window_args<'a>(&self, inv: &mut ScriptInvocation<'a>, limits: Limits, tokens: u64) {
        let s = &self.replica;
        inv.arg(s.resolution_us())
            .arg(s.span(s.store.usage_window))
            .arg(limit_arg(limits.rpm))
            .arg(limit_arg(limits.tpm))
            .arg(tokens);
    }

    pub(super) async fn try_reserve(&self, id: &DeploymentId, limits: Limits, tokens: u64) -> Admission {
        let s = &self.replica;
        if let Some(mut h) = s.request_handle() {
            let [t, c] = s.keys.usage(id);
            let mut inv = scripts::RESERVE.key(t);
            inv.key(c);
            self.window_args(&mut inv, limits, tokens);
            if let Some((admitted, n, requests, used)) = s.run::<(i64, i64, u64, u64)>(&inv, &mut h).await {
                s.cache_usage(id, WindowUsage { requests, tokens: used });
                return if admitted == 1 {
                    Admission::Admitted(Reservation { id: id.clone(), tick: n.max(0) as u64, tokens, remote: true })
                } else {
                    Admission::Full { retry_in: micros(n) }
                };
            }
        }
        s.local.try_reserve(id, limits, tokens)
    }

    pub(super) async fn room_in(&self, id: &DeploymentId, limits: Limits, tokens: u64) -> Duration {
        let s = &self.replica;
        if let Some(mut h) = s.request_handle() {
            let [t, c] = s.keys.usage(id);
            let mut inv = scripts::ROOM.key(t);
            inv.key(c);
            self.window_args(&mut inv, limits, tokens);
            if let Some((wait, requests, used)) = s.run::<(i64, u64, u64)>(&inv, &mut h).await {
                s.cache_usage(id, WindowUsage { requests, tokens: used });
                return micros(wait);
            }
        }
        s.local.room_in(id, limits, tokens)
    }

    pub(super) fn reconcile_detached(&self, r: &Reservation, actual: u64) {
        if !r.remote {
            return self.replica.local.reconcile(r, actual);
        }
        if actual == r.tokens {
            return;
        }
        let replica = self.replica.clone();
        let r = r.clone();
        self.replica.detach(Box::pin(async move {
            let Some(mut h) = replica.background_handle() else { return };
            replica.run::<i64>(&replica.adjust(&r, actual), &mut h).await;
        }));
    }

    pub(super) fn add_spend_detached(&self, key: &str, amount: f64, period: Duration) {
        let s = &self.replica;
        s.spend_locally(key, amount, period);
        if s.request_handle().is_none() {
            s.local.add_spend(key, amount, period);
            return;
        }
        let replica = s.clone();
        let key = key.to_owned();
        s.detach(Box::pin(async move {
            let Some(mut h) = replica.background_handle() else {
                replica.local.add_spend(&key, amount, period);
                return;
            };
            if replica.spend_remote(&key, amount, period, &mut h).await.is_none() {
                replica.local.add_spend(&key, amount, period);
            }
        }));
    }

    pub(super) fn set_affinity(&self, key: &str, id: &DeploymentId, ttl: Duration) {
        let s = &self.replica;
        if s.request_handle().is_none() {
            s.local.set_affinity(key, id, ttl);
            return;
        }
        let now = Instant::now();
        s.cache_affinity(key, Some(AffinityCache { id: id.clone(), until: now + ttl }), now);
        let replica = s.clone();
        let (key, id) = (s.keys.affinity(key), id.clone());
        s.detach(Box::pin(async move {
            let Some(mut h) = replica.background_handle() else { return };
            let mut cmd = redis::cmd("SET");
            cmd.arg(&key).arg(id.as_str()).arg("PX").arg(millis(ttl));
            replica.query::<()>(&cmd, &mut h).await;
        }));
    }
}

impl Replica {
    /// The resolution in µs, in whole milliseconds as the memory window counts it.
    pub(super) fn resolution_us(&self) -> u64 {
        u64::try_from(self.store.resolution.as_millis()).unwrap_or(u64::MAX).max(1).saturating_mul(1000)
    }

    /// The window span in resolution ticks (as the memory window counts them).
    pub(super) fn span(&self, window: Duration) -> u64 {
        let res_ms = u64::try_from(self.store.resolution.as_millis()).unwrap_or(u64::MAX).max(1);
        u64::try_from(window.as_millis()).unwrap_or(u64::MAX).div_ceil(res_ms).max(1)
    }

    /// Adds `successes` and `failures` to `id`'s outcome window; the counts after, or `None` when
    /// Redis did not answer.
    pub(super) async fn record_outcomes(
        &self,
        id: &DeploymentId,
        successes: u64,
        failures: u64,
        conn: &mut Counted,
    ) -> Option<OutcomeCounts> {
        let [t, c] = self.keys.outcomes(id);
        let mut inv = scripts::OUTCOME.key(t);
        inv.key(c).arg(self.resolution_us()).arg(self.span(self.store.outcome_window)).arg(successes).arg(failures);
        let (successes, failures) = self.run::<(u64, u64)>(&inv, conn).await?;
        Some(OutcomeCounts { successes, failures })
    }

    /// A cooldown script's invocation with its two keys (the record and its revision counter).
    pub(super) fn cooldown_script<'a>(&self, script: &'a redis::Script, id: &DeploymentId) -> ScriptInvocation<'a> {
        let [record, revision] = self.keys.cooldown(id);
        let mut inv = script.key(record);
        inv.key(revision);
        inv
    }

    pub(super) fn adjust<'a>(&self, r: &Reservation, actual: u64) -> ScriptInvocation<'a> {
        let [t, c] = self.keys.usage(&r.id);
        let mut inv = scripts::ADJUST.key(t);
        inv.key(c).arg(r.tick).arg(actual as i64 - r.tokens as i64);
        inv
    }

    pub(super) async fn spend_remote(
        &self,
        key: &str,
        amount: f64,
        period: Duration,
        h: &mut impl AsConn,
    ) -> Option<f64> {
        let mut inv = scripts::SPEND_ADD.key(self.keys.spend(key));
        inv.arg(amount).arg(millis(period));
        let (total, pttl) = self.run::<(f64, i64)>(&inv, h).await?;
        self.cache_spend(key, total, pttl);
        Some(total)
    }
}
