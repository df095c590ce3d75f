//! [`ProviderProber`]: a health probe sent straight to the router's provider.

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http_body_util::BodyExt;
use serde_json::{Map, Value, json};
use switchyard_layers::{
    BoxError, Deployment, Outcome, RouteBody, RouteCtx, RouteError, StateStore,
    cooldown::AllowedFailsPolicy,
    ctx::Endpoint,
    health::{ProbeFailure, Prober},
    redact::redact,
};
use switchyard_services::openai::facts_from_json;
use tower::{ServiceExt, util::BoxCloneSyncService};

use super::{HealthSettings, ProbeMode, ProbeSpec};

type Provider = BoxCloneSyncService<http::Request<Bytes>, http::Response<RouteBody>, BoxError>;

/// The prompt of a chat or completion probe, and the input of an embeddings probe.
const PROBE_TEXT: &str = "ping";
/// Longest failure message kept.
const MESSAGE_MAX: usize = 200;

/// How failed probes feed the cooldown counts (LiteLLM's `allowed_fails_policy` interaction): a
/// failure is counted in the deployment's outcome window and benches it for `cooldown_time` once
/// the failures exceed what the policy allows for its error class.
#[derive(Clone, Debug)]
pub(crate) struct CooldownFeed {
    pub(crate) store: Arc<StateStore>,
    pub(crate) policy: AllowedFailsPolicy,
    pub(crate) allowed_fails: Option<u32>,
    pub(crate) cooldown_time: Duration,
}

/// Sends each deployment its [`ProbeSpec`] through the router's provider, below every routing
/// layer: a probe is never counted in usage windows, budgets or (unless told to feed them) the
/// cooldown rules.
#[derive(Clone)]
pub struct ProviderProber {
    provider: Provider,
    settings: Arc<HealthSettings>,
    feed: Option<CooldownFeed>,
}

impl std::fmt::Debug for ProviderProber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderProber").field("feeds_cooldowns", &self.feed.is_some()).finish_non_exhaustive()
    }
}

impl ProviderProber {
    /// Probes through `provider` with the probes `settings` configure.
    pub fn new(provider: Provider, settings: Arc<HealthSettings>) -> Self {
        Self { provider, settings, feed: None }
    }

    pub(crate) fn feeding(mut self, feed: Option<CooldownFeed>) -> Self {
        self.feed = feed;
        self
    }

    async fn send(provider: Provider, deployment: Arc<Deployment>, spec: ProbeSpec) -> Result<(), ProbeFailure> {
        let known: Vec<String> = deployment.api_key.iter().map(|k| k.expose().to_owned()).collect();
        let fail = |status: Option<u16>, message: &str| {
            let known: Vec<&str> = known.iter().map(String::as_str).collect();
            ProbeFailure::new(status, redact(message, &known, MESSAGE_MAX))
        };
        let (path, endpoint, body) = body(&deployment, &spec);
        let bytes = serde_json::to_vec(&body).map_err(|e| fail(None, &format!("probe does not serialize: {e}")))?;
        let (model, facts) = facts_from_json(&bytes, endpoint).map_err(|e| fail(None, e.message()))?;
        let bytes = Bytes::from(bytes);
        let mut req = http::Request::post(path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(bytes.clone())
            .map_err(|e| fail(None, &e.to_string()))?;
        let mut ctx = RouteCtx::with_facts(model, facts.with_body(bytes));
        ctx.selected = Some(match spec.model {
            Some(model) => {
                let mut d = (*deployment).clone();
                d.model = model.into();
                Arc::new(d)
            }
            None => deployment,
        });
        req.extensions_mut().insert(ctx);
        match provider.oneshot(req).await {
            Ok(resp) => {
                let status = resp.status();
                // The whole answer, so a failure in the body counts too.
                resp.into_body().collect().await.map_err(|e| {
                    let e = RouteError::from_boxed(e);
                    fail(e.upstream_status().map(|s| s.as_u16()), e.message())
                })?;
                if status.is_success() { Ok(()) } else { Err(fail(Some(status.as_u16()), "unexpected status")) }
            }
            Err(e) => {
                let e = RouteError::from_boxed(e);
                Err(fail(e.upstream_status().map(|s| s.as_u16()), e.message()))
            }
        }
    }
}

/// The probe request: path, endpoint and body.
fn body(deployment: &Deployment, spec: &ProbeSpec) -> (&'static str, Endpoint, Value) {
    let model = Value::from(&*deployment.group);
    let max_tokens = spec.max_tokens.unwrap_or(1);
    let (path, endpoint, mut body) = match spec.mode {
        ProbeMode::Chat => (
            "/v1/chat/completions",
            Endpoint::Chat,
            json!({"model": model, "messages": [{"role": "user", "content": PROBE_TEXT}], "max_tokens": max_tokens}),
        ),
        ProbeMode::Completion => (
            "/v1/completions",
            Endpoint::Completion,
            json!({"model": model, "prompt": PROBE_TEXT, "max_tokens": max_tokens}),
        ),
        ProbeMode::Embedding => ("/v1/embeddings", Endpoint::Embedding, json!({"model": model, "input": [PROBE_TEXT]})),
    };
    if let Value::Object(map) = &mut body {
        if spec.omit_max_tokens {
            map.remove("max_tokens");
        }
        merge(map, &spec.params);
    }
    (path, endpoint, body)
}

fn merge(into: &mut Map<String, Value>, params: &Map<String, Value>) {
    for (k, v) in params {
        // The probe stays a probe: no stream, and the model is the deployment's.
        if k != "model" && k != "stream" {
            into.insert(k.clone(), v.clone());
        }
    }
}

impl Prober for ProviderProber {
    fn probe(&self, deployment: Arc<Deployment>) -> BoxFuture<'static, Result<(), ProbeFailure>> {
        let spec = self.settings.probe_of(&deployment.id);
        let provider = self.provider.clone();
        let feed = self.feed.clone();
        Box::pin(async move {
            let result = Self::send(provider, deployment.clone(), spec).await;
            if let (Err(failure), Some(feed)) = (&result, feed) {
                feed_cooldown(&feed, &deployment, failure).await;
            }
            result
        })
    }
}

/// Counts a failed probe in the deployment's outcome window and benches it once the failures
/// exceed what the `allowed_fails_policy` allows for the failure's class.
async fn feed_cooldown(feed: &CooldownFeed, deployment: &Deployment, failure: &ProbeFailure) {
    let outcome = failure
        .status
        .and_then(|s| http::StatusCode::from_u16(s).ok())
        .map_or(Outcome::Transport, Outcome::from_status);
    let counts = feed.store.record_outcome(&deployment.id, false).await;
    let allowed = feed.policy.for_failure(outcome, failure.status).or(feed.allowed_fails).unwrap_or(3);
    if counts.failures <= u64::from(allowed) {
        return;
    }
    let base = deployment.cooldown_time.unwrap_or(feed.cooldown_time);
    let reason: Arc<str> = format!("health check failed: {failure}").into();
    feed.store.bench(&deployment.id, base, reason, failure.status, None).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_are_the_cheapest_request_of_their_mode() {
        let d = Deployment::builder("emb", "openai/text-embedding-3-small").build().unwrap();
        let (path, _, probe) = body(&d, &ProbeSpec { mode: ProbeMode::Embedding, ..ProbeSpec::default() });
        assert_eq!(path, "/v1/embeddings");
        assert_eq!(probe, json!({"model": "emb", "input": ["ping"]}));
        let (path, _, probe) = body(&d, &ProbeSpec::default());
        assert_eq!(path, "/v1/chat/completions");
        assert_eq!(probe["max_tokens"], 1);
        let mut params = Map::new();
        params.insert("max_tokens".into(), json!(5));
        params.insert("stream".into(), json!(true));
        let (_, _, probe) = body(&d, &ProbeSpec { params, ..ProbeSpec::default() });
        assert_eq!(probe["max_tokens"], 5);
        assert!(probe.get("stream").is_none(), "a probe never streams");
    }
}
