//! [`SimProvider`]: the simulated upstream as a tower `Service`.

use std::{
    collections::HashMap,
    fmt,
    sync::Arc,
    task::{Context, Poll},
};

use futures_util::future::BoxFuture;
use parking_lot::RwLock;
use rand::{RngCore, SeedableRng, rngs::SmallRng};
use switchyard_layers::seed::SeedSource;
use switchyard_layers::{
    BoxError, DeploymentId, Outcome, RouteBody, RouteError, RouteErrorKind, RouteRequest, ctx::Endpoint,
};
use tower_service::Service;

use super::{
    SimProfile, SimStats,
    failure::{self, Failed},
    reply::Attempt,
    stream,
};

/// A simulated OpenAI-compatible upstream: answers each attempt as the profile of the deployment
/// in `RouteCtx::selected` says (latency, stream shape, failures). See the [module docs](super).
///
/// Every clone shares the profiles and the [`SimStats`], and draws from its own random sequence,
/// seeded from the root seed given to [`SimProvider::new`] and the number of clones made before
/// it: the same seed and the same order of calls and clones give the same answers.
pub struct SimProvider {
    shared: Arc<SimState>,
    rng: SmallRng,
}

/// What every clone of a [`SimProvider`] shares: the seed source, the profiles and the stats.
struct SimState {
    seeds: SeedSource,
    profiles: RwLock<Profiles>,
    stats: SimStats,
}

#[derive(Default)]
struct Profiles {
    default: Arc<SimProfile>,
    by_id: HashMap<DeploymentId, Arc<SimProfile>>,
}

impl fmt::Debug for SimProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let profiles = self.shared.profiles.read();
        f.debug_struct("SimProvider")
            .field("default", &profiles.default)
            .field("profiles", &profiles.by_id)
            .finish_non_exhaustive()
    }
}

impl Clone for SimProvider {
    fn clone(&self) -> Self {
        Self { shared: self.shared.clone(), rng: self.shared.seeds.rng() }
    }
}

impl SimProvider {
    /// A simulator where every deployment has the [default profile](SimProfile::healthy), with
    /// randomness derived from `seed`.
    pub fn new(seed: u64) -> Self {
        let seeds = SeedSource::new(seed);
        let rng = seeds.rng();
        let shared = SimState { seeds, profiles: RwLock::default(), stats: SimStats::default() };
        Self { shared: Arc::new(shared), rng }
    }

    /// Gives deployment `id` its own profile.
    pub fn profile(self, id: impl Into<DeploymentId>, profile: SimProfile) -> Self {
        self.set_profile(id, profile);
        self
    }

    /// The profile of every deployment without its own.
    pub fn default_profile(self, profile: SimProfile) -> Self {
        self.set_default_profile(profile);
        self
    }

    /// Changes deployment `id`'s profile for this provider and all its clones, from the next
    /// attempt on (attempts in progress keep the profile they started with). Use it to make a
    /// deployment fail, then recover, in the middle of a test.
    pub fn set_profile(&self, id: impl Into<DeploymentId>, profile: SimProfile) {
        self.shared.profiles.write().by_id.insert(id.into(), Arc::new(profile));
    }

    /// Changes the default profile for this provider and all its clones.
    pub fn set_default_profile(&self, profile: SimProfile) {
        self.shared.profiles.write().default = Arc::new(profile);
    }

    /// Removes deployment `id`'s own profile; it gets the default one again.
    pub fn clear_profile(&self, id: &str) {
        self.shared.profiles.write().by_id.remove(id);
    }

    /// The counters shared by this provider and all its clones.
    pub fn stats(&self) -> SimStats {
        self.shared.stats.clone()
    }

    fn profile_for(&self, id: &DeploymentId) -> Arc<SimProfile> {
        let profiles = self.shared.profiles.read();
        profiles.by_id.get(id.as_str()).unwrap_or(&profiles.default).clone()
    }
}

impl<R: RouteRequest> Service<R> for SimProvider {
    type Response = http::Response<RouteBody>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: R) -> Self::Future {
        let Some(ctx) = req.route_ctx() else {
            return refuse("request has no RouteCtx; insert RouteCtx::new(model) or add the ingress layer");
        };
        let Some(deployment) = ctx.selected.clone() else {
            return refuse("no deployment selected; put SimProvider under a SelectLayer or set RouteCtx::selected");
        };
        let facts = ctx.facts();
        let endpoint = facts.endpoint;
        let stream = facts.stream && endpoint != Endpoint::Embedding;
        let profile = self.profile_for(&deployment.id);
        let prompt_tokens = facts.input_tokens.get().copied().unwrap_or(profile.prompt_tokens);

        // One draw from this clone's sequence per call, so a call's behaviour depends only on
        // how many calls this clone made before it.
        let mut rng = SmallRng::seed_from_u64(self.rng.next_u64());
        let stats = self.shared.stats.clone();
        let in_flight = stats.begin(&deployment.id);
        let failure = profile.draw_failure(&mut rng);
        let attempt = Attempt::new(deployment, profile, endpoint, prompt_tokens, &mut rng);
        let id = &attempt.deployment.id;

        match failure.map(|kind| failure::upstream_error(kind, &attempt)) {
            Some(Failed::NoAnswer) => {
                stats.record_hang(id);
                Box::pin(async move {
                    let _held = in_flight;
                    std::future::pending().await
                })
            }
            Some(Failed::Error(err)) => {
                stats.record(id, err.outcome().unwrap_or(Outcome::Transport));
                let delay = attempt.profile.error_latency.sample(&mut rng);
                Box::pin(async move {
                    tokio::time::sleep(delay).await;
                    drop(in_flight);
                    Err(err.into())
                })
            }
            None if stream => {
                stats.record(id, Outcome::Success);
                let ttft = attempt.profile.ttft.sample(&mut rng);
                Box::pin(async move {
                    tokio::time::sleep(ttft).await;
                    Ok(stream::response(attempt, rng, stats, in_flight))
                })
            }
            None => {
                stats.record(id, Outcome::Success);
                let latency = attempt.profile.latency.sample(&mut rng);
                Box::pin(async move {
                    tokio::time::sleep(latency).await;
                    let resp = attempt.whole(&mut rng);
                    drop(in_flight);
                    Ok(resp)
                })
            }
        }
    }
}

fn refuse(message: &'static str) -> BoxFuture<'static, Result<http::Response<RouteBody>, BoxError>> {
    Box::pin(std::future::ready(Err(RouteError::new(RouteErrorKind::MissingContext, message).into())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_embeddable<T: Clone + Send + Sync + 'static>() {}
    fn assert_send_future<F: Future + Send + 'static>(_: &F) {}

    #[test]
    fn provider_and_its_future_are_embeddable() {
        assert_embeddable::<SimProvider>();
        let mut sim = SimProvider::new(0);
        let fut = Service::<http::Request<bytes::Bytes>>::call(&mut sim, http::Request::new(bytes::Bytes::new()));
        assert_send_future(&fut);
    }
}
