//! [`HealthChecker`]: the background probe task of one replica.

use std::{
    collections::{HashMap, HashSet},
    fmt,
    sync::Arc,
    time::Duration,
};

use futures_util::{StreamExt, future::BoxFuture, stream};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use tokio::time::Instant;

use crate::{Deployment, DeploymentId, Registry, StateStore, state::HealthRecord};

/// Sends one health probe to a deployment: `Ok` when it answered as a healthy deployment does.
///
/// The gateway's prober sends the cheapest request the deployment's dialect allows (a one-token
/// chat completion, an embeddings call for embedding models); write your own for anything else.
/// Any `Fn(Arc<Deployment>) -> impl Future<Output = Result<(), ProbeFailure>>` is a prober.
pub trait Prober: Send + Sync + 'static {
    /// Probes `deployment`. The checker applies the timeout; the prober need not.
    fn probe(&self, deployment: Arc<Deployment>) -> BoxFuture<'static, Result<(), ProbeFailure>>;
}

impl<F, Fut> Prober for F
where
    F: Fn(Arc<Deployment>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), ProbeFailure>> + Send + 'static,
{
    fn probe(&self, deployment: Arc<Deployment>) -> BoxFuture<'static, Result<(), ProbeFailure>> {
        Box::pin(self(deployment))
    }
}

/// Why a probe failed: the upstream status, if one answered, and a short secret-free message.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProbeFailure {
    /// The upstream status, when the deployment answered.
    pub status: Option<u16>,
    /// What went wrong (never a secret).
    pub message: String,
}

impl ProbeFailure {
    /// A failure with `status` and `message`.
    pub fn new(status: Option<u16>, message: impl Into<String>) -> Self {
        Self { status, message: message.into() }
    }

    /// A 429 or a 408: LiteLLM's `health_check_ignore_transient_errors` counts these as healthy.
    pub fn is_transient(&self) -> bool {
        matches!(self.status, Some(429 | 408))
    }
}

impl fmt::Display for ProbeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status {
            Some(s) => write!(f, "{s}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// The probe task's settings. Defaults are LiteLLM's where it has one.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct HealthCheckConfig {
    /// Time between two probes of a deployment (LiteLLM's `health_check_interval`, 300 s).
    pub interval: Duration,
    /// A record older than this says nothing (LiteLLM's `health_check_staleness_threshold`,
    /// default `interval × 2`). Records are kept 1.5 × this long, as LiteLLM keeps them.
    pub staleness: Duration,
    /// Timeout of one probe (LiteLLM's `HEALTH_CHECK_TIMEOUT_SECONDS`, 60 s; per deployment
    /// `model_info.health_check_timeout`, in [`timeouts`](Self::timeouts)).
    pub timeout: Duration,
    /// Per-deployment probe timeouts.
    pub timeouts: Arc<HashMap<DeploymentId, Duration>>,
    /// Most probes in flight at once on this replica (`health_check_concurrency`; LiteLLM's
    /// default is unbounded, ours 8).
    pub concurrency: usize,
    /// Each wait between two rounds is `interval × (1 ± jitter)`, uniformly (0.1).
    pub jitter: f64,
    /// Seeds the jitter (tests); `None`: from the OS.
    pub seed: Option<u64>,
    /// Only the deployments of these model groups are probed
    /// (`background_health_check_model_groups`); `None`: every group.
    pub groups: Option<Arc<HashSet<Arc<str>>>>,
    /// Deployments never probed (`model_info.disable_background_health_check`).
    pub skip: Arc<HashSet<DeploymentId>>,
    /// A probe answered 429 or 408 counts as healthy (`health_check_ignore_transient_errors`).
    pub ignore_transient_errors: bool,
}

impl Default for HealthCheckConfig {
    fn default() -> Self {
        Self {
            interval: Self::DEFAULT_INTERVAL,
            staleness: Self::DEFAULT_INTERVAL * 2,
            timeout: Self::DEFAULT_TIMEOUT,
            timeouts: Arc::default(),
            concurrency: 8,
            jitter: 0.1,
            seed: None,
            groups: None,
            skip: Arc::default(),
            ignore_transient_errors: false,
        }
    }
}

impl HealthCheckConfig {
    /// LiteLLM's `DEFAULT_HEALTH_CHECK_INTERVAL`.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(300);
    /// LiteLLM's `HEALTH_CHECK_TIMEOUT_SECONDS`.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the interval (and, unless set after, the staleness threshold to twice it).
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self.staleness = interval.saturating_mul(2);
        self
    }

    /// Sets the staleness threshold.
    pub fn staleness(mut self, staleness: Duration) -> Self {
        self.staleness = staleness;
        self
    }

    /// Sets the probe timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the most probes in flight (at least 1).
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// Sets the jitter (clamped to `0..=0.5`).
    pub fn jitter(mut self, jitter: f64) -> Self {
        self.jitter = if jitter.is_finite() { jitter.clamp(0.0, 0.5) } else { 0.0 };
        self
    }

    /// Seeds the jitter.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// How long one replica holds a deployment's probe lease: 90 % of the shortest jittered
    /// wait, so the lease has lapsed when the next round of any replica begins.
    pub fn lease_hold(&self) -> Duration {
        self.interval.mul_f64((1.0 - self.jitter) * 0.9).max(Duration::from_millis(1))
    }

    /// How long a record is kept: 1.5 × the staleness threshold (LiteLLM's expiry).
    pub fn record_ttl(&self) -> Duration {
        self.staleness.mul_f64(1.5).max(Duration::from_millis(1))
    }

    fn probes(&self, d: &Deployment) -> bool {
        !self.skip.contains(&d.id) && self.groups.as_ref().is_none_or(|g| g.contains(&*d.group))
    }

    fn timeout_for(&self, id: &DeploymentId) -> Duration {
        self.timeouts.get(id).copied().unwrap_or(self.timeout)
    }
}

/// Why the checker could not start.
#[derive(Debug)]
#[non_exhaustive]
pub struct HealthCheckError {
    message: &'static str,
}

impl fmt::Display for HealthCheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message)
    }
}

impl std::error::Error for HealthCheckError {}

/// The background probe task of one replica: stopped when dropped (or by [`stop`](Self::stop)).
///
/// Every round it takes the probe lease of each deployment it probes (so with Redis one replica
/// of the fleet probes each deployment per interval), probes those it got with at most
/// `concurrency` in flight, each under its timeout, stores the verdicts, then reads the verdicts
/// the other replicas stored (again halfway to the next round, so a replica that lost the leases
/// sees the verdicts within half an interval). The first round starts at once; each next one
/// after a jittered interval. The registry is read every round, so deployments added or removed at runtime are
/// followed; a change of the settings needs a new checker (the router builds one on reload).
#[derive(Debug)]
pub struct HealthChecker {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HealthChecker {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What one round works with.
struct Round {
    registry: Arc<Registry>,
    store: Arc<StateStore>,
    config: HealthCheckConfig,
    prober: Arc<dyn Prober>,
}

impl HealthChecker {
    /// Starts the task on the current Tokio runtime.
    pub fn spawn(
        registry: Arc<Registry>,
        store: Arc<StateStore>,
        config: HealthCheckConfig,
        prober: Arc<dyn Prober>,
    ) -> Result<Self, HealthCheckError> {
        let rt = tokio::runtime::Handle::try_current()
            .map_err(|_| HealthCheckError { message: "health checks must be started inside a Tokio runtime" })?;
        let mut rng = config.seed.map_or_else(SmallRng::from_os_rng, SmallRng::seed_from_u64);
        let round = Round { registry, store, config, prober };
        let task = rt.spawn(async move {
            loop {
                round.run().await;
                let wait = jittered(round.config.interval, round.config.jitter, &mut rng);
                // Deadlines, not durations: a refresh that takes a while does not push the round.
                let next = Instant::now() + wait;
                // Halfway, read the verdicts the replicas that held the leases stored meanwhile.
                tokio::time::sleep_until(next - wait / 2).await;
                round.refresh().await;
                tokio::time::sleep_until(next).await;
            }
        });
        Ok(Self { task })
    }

    /// Stops the task (a probe in flight is abandoned).
    pub fn stop(self) {
        drop(self);
    }

    /// Whether the task has ended (stopped, or its runtime shut down).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Probes every deployment of `registry` now, without a lease and without storing anything:
    /// what LiteLLM's on-demand `/health` endpoint does. Bounded by `config.concurrency`, each
    /// probe under its timeout; in the registry's order.
    pub async fn probe_now(
        registry: &Registry,
        config: &HealthCheckConfig,
        prober: &dyn Prober,
        only: Option<&str>,
    ) -> Vec<(Arc<Deployment>, HealthRecord)> {
        let deployments: Vec<_> =
            registry.deployments().into_iter().filter(|d| only.is_none_or(|g| &*d.group == g)).collect();
        let results: Vec<_> = stream::iter(deployments.into_iter().map(|d| async move {
            let record = probe_one(prober, config, &d).await;
            (d, record)
        }))
        .buffered(config.concurrency.max(1))
        .collect()
        .await;
        results
    }
}

impl Round {
    async fn run(&self) {
        let deployments: Vec<Arc<Deployment>> =
            self.registry.deployments().into_iter().filter(|d| self.config.probes(d)).collect();
        if deployments.is_empty() {
            return;
        }
        let hold = self.config.lease_hold();
        let mut mine = Vec::with_capacity(deployments.len());
        for d in &deployments {
            if self.store.claim_health_lease(&d.id, hold).await {
                mine.push(d.clone());
            }
        }
        let ttl = self.config.record_ttl();
        stream::iter(mine.into_iter().map(|d| async move {
            let record = probe_one(&*self.prober, &self.config, &d).await;
            self.store.record_health(&d.id, record, ttl).await;
        }))
        .buffer_unordered(self.config.concurrency.max(1))
        .for_each(|()| async {})
        .await;
        self.refresh().await;
    }

    /// Reads the verdicts the other replicas stored, and sets the gauge of every deployment.
    async fn refresh(&self) {
        let deployments: Vec<Arc<Deployment>> =
            self.registry.deployments().into_iter().filter(|d| self.config.probes(d)).collect();
        let ids: Vec<DeploymentId> = deployments.iter().map(|d| d.id.clone()).collect();
        self.store.refresh_health(&ids).await;
        // The gauge follows every verdict this replica knows, its own and the others'.
        let now = Instant::now();
        for (d, record) in deployments.iter().zip(self.store.health(&ids).await) {
            if let Some(r) = record.filter(|r| r.is_fresh(self.config.staleness, now)) {
                metrics::gauge!(
                    "switchyard_deployment_healthy",
                    "deployment" => d.id.to_string(),
                    "group" => d.group.to_string()
                )
                .set(if r.healthy { 1.0 } else { 0.0 });
            }
        }
    }
}

/// Probes `d` once under its timeout; the verdict.
async fn probe_one(prober: &dyn Prober, config: &HealthCheckConfig, d: &Arc<Deployment>) -> HealthRecord {
    let timeout = config.timeout_for(&d.id);
    let started = Instant::now();
    let result = tokio::time::timeout(timeout, prober.probe(d.clone())).await;
    let latency = started.elapsed();
    let (record, result_label) = match result {
        Ok(Ok(())) => (HealthRecord::new(true, latency, None, ""), "healthy"),
        Ok(Err(f)) if config.ignore_transient_errors && f.is_transient() => {
            (HealthRecord::new(true, latency, f.status, format!("transient error ignored: {f}")), "healthy")
        }
        Ok(Err(f)) => (HealthRecord::new(false, latency, f.status, f.to_string()), "unhealthy"),
        Err(_) => {
            (HealthRecord::new(false, latency, None, format!("health check timed out after {timeout:?}")), "timeout")
        }
    };
    metrics::histogram!(
        "switchyard_health_probe_duration_seconds",
        "deployment" => d.id.to_string(),
        "group" => d.group.to_string(),
        "result" => result_label
    )
    .record(latency.as_secs_f64());
    if !record.healthy {
        tracing::info!(
            target: "switchyard::health",
            deployment = %d.id,
            group = %d.group,
            reason = %record.reason,
            "health check failed"
        );
    }
    record
}

/// `interval × (1 ± jitter)`, uniformly.
fn jittered(interval: Duration, jitter: f64, rng: &mut SmallRng) -> Duration {
    if jitter <= 0.0 {
        return interval;
    }
    let factor = 1.0 + rng.random_range(-jitter..=jitter);
    interval.mul_f64(factor.max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lease_lapses_before_the_shortest_jittered_wait() {
        let c = HealthCheckConfig::new().interval(Duration::from_secs(100)).jitter(0.1);
        assert_eq!(c.lease_hold(), Duration::from_secs(81));
        let mut rng = SmallRng::seed_from_u64(1);
        for _ in 0..1000 {
            let w = jittered(c.interval, c.jitter, &mut rng);
            assert!(w >= Duration::from_secs(90) && w <= Duration::from_secs(110), "{w:?}");
            assert!(w > c.lease_hold());
        }
        assert_eq!(c.staleness, Duration::from_secs(200));
        assert_eq!(c.record_ttl(), Duration::from_secs(300));
    }
}
