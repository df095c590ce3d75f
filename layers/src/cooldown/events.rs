use std::sync::Arc;

use tokio::time::Instant;

use crate::{DeploymentId, Outcome, logsafe::Escaped, state::CooldownState};

/// Something the cooldown layer did, for hooks, logs and metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CooldownEvent {
    /// A deployment was benched (or its cooldown extended).
    Benched {
        /// The deployment.
        deployment: DeploymentId,
        /// Its group.
        group: Arc<str>,
        /// Until when.
        until: Instant,
        /// The upstream status, if any.
        status: Option<u16>,
        /// The failure class.
        outcome: Outcome,
        /// Which rule fired and the (masked) upstream message.
        reason: Arc<str>,
        /// Cooldowns in a row (half-open recovery), else 0.
        strikes: u32,
    },
    /// A half-open deployment's probe started.
    ProbeStarted {
        /// The deployment.
        deployment: DeploymentId,
        /// Its group.
        group: Arc<str>,
    },
    /// A probe succeeded: the deployment serves again.
    Recovered {
        /// The deployment.
        deployment: DeploymentId,
        /// Its group.
        group: Arc<str>,
    },
    /// Every candidate of a group was cooling down.
    AllCoolingDown {
        /// The group.
        group: Arc<str>,
        /// When the first returns.
        earliest: Option<Instant>,
    },
}

/// One row of the cooldown listing ([`CooldownLayer::list`](super::CooldownLayer::list)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CooldownEntry {
    /// The deployment.
    pub deployment: DeploymentId,
    /// Its group, when it is still registered.
    pub group: Option<Arc<str>>,
    /// Cooling down (deadline, status, reason) or half-open.
    pub state: CooldownState,
}

pub(crate) fn emit(hook: Option<&super::CooldownHook>, event: CooldownEvent) {
    match &event {
        CooldownEvent::Benched { deployment, group, status, outcome, reason, until, .. } => {
            tracing::warn!(%deployment, group = %Escaped(group), ?status, outcome = outcome.as_str(), reason = %Escaped(reason),
                for_ms = until.saturating_duration_since(Instant::now()).as_millis() as u64, "deployment cooled down");
            metrics::counter!("switchyard_cooldowns_total", "group" => group.to_string(),
                "deployment" => deployment.to_string(), "outcome" => outcome.as_str())
            .increment(1);
        }
        CooldownEvent::ProbeStarted { deployment, group } => {
            tracing::info!(%deployment, group = %Escaped(group), "probing a half-open deployment");
        }
        CooldownEvent::Recovered { deployment, group } => {
            tracing::info!(%deployment, group = %Escaped(group), "deployment recovered");
            metrics::counter!("switchyard_cooldown_recoveries_total", "group" => group.to_string(),
                "deployment" => deployment.to_string())
            .increment(1);
        }
        CooldownEvent::AllCoolingDown { group, .. } => {
            metrics::counter!("switchyard_all_cooling_down_total", "group" => group.to_string()).increment(1);
        }
    }
    if let Some(hook) = hook {
        hook(&event);
    }
}
