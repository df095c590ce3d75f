//! The adaptive pre-routers' evidence on Redis: one hash per router (`{b:<router>}:bandit`, a
//! field per cell), written by script `bandit_add` (discount, add and cap in one step on the
//! server's clock) and read whole by script `bandit_read`. Off the request path: the router
//! writes from a bookkeeping task and reads on its sync interval. Every write also goes to the
//! local state, which answers while Redis is unreachable.

use std::time::Duration;

use super::{RedisBackend, millis, scripts};
use crate::state::{BanditDecay, BanditEvidence};

impl RedisBackend {
    pub(super) async fn bandit_add(&self, router: &str, cell: &str, successes: f64, failures: f64, decay: BanditDecay) {
        let s = &self.replica;
        s.local.bandit.add(router, cell, successes, failures, decay);
        let Some(mut h) = s.background_handle() else { return };
        let mut inv = scripts::BANDIT_ADD.key(s.keys.bandit(router));
        let half_life = if decay.half_life.is_zero() { 0 } else { millis(decay.half_life) };
        inv.arg(cell)
            .arg(successes.max(0.0).to_string())
            .arg(failures.max(0.0).to_string())
            .arg(half_life)
            .arg(if decay.cap > 0.0 { decay.cap.to_string() } else { "0".to_owned() })
            .arg(millis(decay.ttl()));
        s.run::<i64>(&inv, &mut h).await;
    }

    pub(super) async fn bandit_cells(&self, router: &str) -> Vec<(String, BanditEvidence)> {
        let s = &self.replica;
        let Some(mut h) = s.background_handle() else { return s.local.bandit.cells(router) };
        let inv = scripts::BANDIT_READ.key(s.keys.bandit(router));
        let Some(flat) = s.run::<Vec<String>>(&inv, &mut h).await else { return s.local.bandit.cells(router) };
        flat.chunks_exact(2)
            .filter_map(|pair| {
                let mut parts = pair[1].split(' ').map(str::parse::<f64>);
                let (Some(Ok(successes)), Some(Ok(failures)), Some(Ok(age))) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    return None;
                };
                let age = Duration::from_millis(if age.is_finite() && age > 0.0 { age as u64 } else { 0 });
                let clean = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
                Some((
                    pair[0].clone(),
                    BanditEvidence { age, ..BanditEvidence::new(clean(successes), clean(failures)) },
                ))
            })
            .collect()
    }
}
