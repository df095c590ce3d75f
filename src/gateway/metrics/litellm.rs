//! LiteLLM's Prometheus metric names, emitted beside ours, so that a Grafana board built on the
//! LiteLLM proxy keeps working after the switch.
//!
//! Names, label names and meanings follow LiteLLM's `PrometheusLogger`
//! (`litellm/integrations/prometheus.py`, `types/integrations/prometheus.py`, 1.100): counters carry
//! the `_total` suffix the Python client adds, so a query for
//! `litellm_deployment_success_responses_total` matches. The labels LiteLLM fills from its virtual
//! keys, teams and users (`hashed_api_key`, `team`, `user`, `end_user`, ...) are left out until
//! Switchyard has them (Prometheus treats an absent label as empty, as LiteLLM reports them
//! without a key). `exception_status` is the status of the failure class (429, 400, 401, 404,
//! 408, 500), `exception_class` LiteLLM's exception name with the provider in front
//! (`Openai.RateLimitError`). The deployment's labels are computed once per config (load and
//! reload), not per call.

use std::{collections::HashMap, sync::Arc, time::Duration};

use arc_swap::ArcSwap;
use switchyard_layers::{AttemptRecord, Deployment, DeploymentId, Outcome, Served, cooldown::CooldownEvent};

use crate::gateway::routes::deployments::public_base;

/// `litellm_deployment_state`: 0 healthy, 1 partial outage, 2 complete outage.
pub(crate) const DEPLOYMENT_STATE: &str = "litellm_deployment_state";
/// `litellm_deployment_cooled_down`: times a deployment was benched.
pub(crate) const COOLED_DOWN: &str = "litellm_deployment_cooled_down_total";
/// `litellm_deployment_success_responses`.
pub(crate) const SUCCESS: &str = "litellm_deployment_success_responses_total";
/// `litellm_deployment_failure_responses`.
pub(crate) const FAILURE: &str = "litellm_deployment_failure_responses_total";
/// `litellm_deployment_total_requests`.
pub(crate) const TOTAL: &str = "litellm_deployment_total_requests_total";
/// `litellm_deployment_successful_fallbacks`.
pub(crate) const FALLBACK_OK: &str = "litellm_deployment_successful_fallbacks_total";
/// `litellm_deployment_failed_fallbacks`.
pub(crate) const FALLBACK_FAILED: &str = "litellm_deployment_failed_fallbacks_total";
/// `litellm_deployment_rpm_limit`.
pub(crate) const RPM_LIMIT: &str = "litellm_deployment_rpm_limit";
/// `litellm_deployment_tpm_limit`.
pub(crate) const TPM_LIMIT: &str = "litellm_deployment_tpm_limit";
/// `litellm_llm_api_latency_metric`: the serving attempt's time in the provider.
pub(crate) const API_LATENCY: &str = "litellm_llm_api_latency_metric";
/// `litellm_llm_api_time_to_first_token_metric`: streams only.
pub(crate) const TTFT: &str = "litellm_llm_api_time_to_first_token_metric";
/// `litellm_request_total_latency_metric`: the whole routed call.
pub(crate) const TOTAL_LATENCY: &str = "litellm_request_total_latency_metric";
/// `litellm_overhead_latency_metric`: the call minus the serving attempt's provider time.
pub(crate) const OVERHEAD: &str = "litellm_overhead_latency_metric";
/// `litellm_proxy_total_requests_metric`: every request the gateway answered.
pub(crate) const PROXY_TOTAL: &str = "litellm_proxy_total_requests_metric_total";
/// `litellm_proxy_failed_requests_metric`: the requests answered with an error.
pub(crate) const PROXY_FAILED: &str = "litellm_proxy_failed_requests_metric_total";

/// The histograms, for the recorder's bucket settings.
pub(crate) const HISTOGRAMS: [&str; 4] = [API_LATENCY, TTFT, TOTAL_LATENCY, OVERHEAD];

/// LiteLLM's latency buckets (`LATENCY_BUCKETS` in `litellm/types/integrations/prometheus.py`;
/// `+Inf` is implicit).
pub(crate) const LATENCY_BUCKETS: [f64; 17] =
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 420.0, 600.0];

/// A deployment's labels as LiteLLM names them.
#[derive(Debug)]
struct Labels {
    /// `model` / `litellm_model_name`: the provider model without the provider prefix.
    model: String,
    model_id: String,
    api_base: String,
    api_provider: String,
    model_group: String,
}

impl Labels {
    fn of(d: &Deployment) -> Self {
        let provider = d.provider();
        let model = d.model.strip_prefix(provider).and_then(|m| m.strip_prefix('/')).unwrap_or(&d.model);
        Self {
            model: model.to_owned(),
            model_id: d.id.to_string(),
            // Credentials in the authority or the query string never become a label.
            api_base: d.api_base.as_deref().map(public_base).unwrap_or_default(),
            api_provider: provider.to_owned(),
            model_group: d.group.to_string(),
        }
    }

    /// The four labels of the deployment-state metrics.
    fn deployment(&self) -> [(&'static str, String); 4] {
        [
            ("litellm_model_name", self.model.clone()),
            ("model_id", self.model_id.clone()),
            ("api_base", self.api_base.clone()),
            ("api_provider", self.api_provider.clone()),
        ]
    }
}

/// Records LiteLLM's metrics; see the [module docs](self).
#[derive(Debug, Default)]
pub(crate) struct LiteLlmMetrics {
    deployments: ArcSwap<HashMap<DeploymentId, Arc<Labels>>>,
}

impl LiteLlmMetrics {
    /// Takes the deployments of a config (at build and at every reload): their labels, their
    /// RPM / TPM limit gauges, and state 0 for the ones not seen before.
    pub(crate) fn set_deployments(&self, deployments: &[Deployment]) {
        let old = self.deployments.load_full();
        let mut map = HashMap::with_capacity(deployments.len());
        for d in deployments {
            let labels = Arc::new(Labels::of(d));
            if let Some(rpm) = d.rpm {
                metrics::gauge!(RPM_LIMIT, &labels.deployment()).set(rpm as f64);
            }
            if let Some(tpm) = d.tpm {
                metrics::gauge!(TPM_LIMIT, &labels.deployment()).set(tpm as f64);
            }
            if !old.contains_key(&d.id) {
                metrics::gauge!(DEPLOYMENT_STATE, &labels.deployment()).set(0.0);
            }
            map.insert(d.id.clone(), labels);
        }
        self.deployments.store(Arc::new(map));
    }

    fn labels(&self, id: &DeploymentId) -> Option<Arc<Labels>> {
        self.deployments.load().get(id).cloned()
    }

    /// A served call: the serving deployment is healthy, its failed attempts before it are
    /// failures, the latencies, and a successful fallback when a hop served.
    pub(crate) fn served(&self, requested: &str, served: &Served, elapsed: Duration, overhead: Duration, stream: bool) {
        self.failed_attempts(requested, &served.failed);
        let Some(labels) = self.labels(&served.deployment) else { return };
        metrics::gauge!(DEPLOYMENT_STATE, &labels.deployment()).set(0.0);
        let per_request = request_labels(requested, &labels);
        metrics::counter!(SUCCESS, &per_request).increment(1);
        metrics::counter!(TOTAL, &per_request).increment(1);
        let latency = [
            ("model", labels.model.clone()),
            ("requested_model", requested.to_owned()),
            ("model_id", labels.model_id.clone()),
            ("api_provider", labels.api_provider.clone()),
        ];
        if stream {
            metrics::histogram!(TTFT, &latency).record(served.upstream.as_secs_f64());
        } else {
            metrics::histogram!(API_LATENCY, &latency).record(served.upstream.as_secs_f64());
        }
        metrics::histogram!(TOTAL_LATENCY, &latency).record(elapsed.as_secs_f64());
        let overhead_labels = [
            ("model_group", labels.model_group.clone()),
            ("api_provider", labels.api_provider.clone()),
            ("api_base", labels.api_base.clone()),
            ("litellm_model_name", labels.model.clone()),
            ("model_id", labels.model_id.clone()),
        ];
        metrics::histogram!(OVERHEAD, &overhead_labels).record(overhead.as_secs_f64());
        if served.hops > 0 {
            let first = served.failed.first().map(|r| r.outcome);
            metrics::counter!(FALLBACK_OK, &fallback_labels(requested, &served.group, first, &labels.model_id))
                .increment(1);
        }
        for group in fallback_groups_failed(requested, &served.failed, Some(&served.group)) {
            self.failed_fallback(requested, group, &served.failed);
        }
    }

    /// A call that failed: its attempts are failures, and each fallback group tried failed.
    pub(crate) fn failed(&self, requested: &str, trail: &[AttemptRecord]) {
        self.failed_attempts(requested, trail);
        for group in fallback_groups_failed(requested, trail, None) {
            self.failed_fallback(requested, group, trail);
        }
    }

    fn failed_fallback(&self, requested: &str, group: &str, trail: &[AttemptRecord]) {
        let last = trail.iter().rev().find(|r| &*r.group == group);
        let model_id = last.and_then(|r| self.labels(&r.deployment)).map(|l| l.model_id.clone()).unwrap_or_default();
        let first = trail.first().map(|r| r.outcome);
        metrics::counter!(FALLBACK_FAILED, &fallback_labels(requested, group, first, &model_id)).increment(1);
    }

    fn failed_attempts(&self, requested: &str, trail: &[AttemptRecord]) {
        for r in trail {
            let Some(labels) = self.labels(&r.deployment) else { continue };
            metrics::gauge!(DEPLOYMENT_STATE, &labels.deployment()).set(1.0);
            let per_request = request_labels(requested, &labels);
            metrics::counter!(TOTAL, &per_request).increment(1);
            let mut failure = per_request.to_vec();
            failure.push(("exception_status", exception_status(r.outcome).to_owned()));
            failure.push(("exception_class", exception_class(&labels.api_provider, r.outcome)));
            metrics::counter!(FAILURE, &failure).increment(1);
        }
    }

    /// The cooldown hook: a benched deployment is a complete outage, a recovered one healthy.
    pub(crate) fn cooldown(&self, event: &CooldownEvent) {
        match event {
            CooldownEvent::Benched { deployment, status, outcome, .. } => {
                let Some(labels) = self.labels(deployment) else { return };
                metrics::gauge!(DEPLOYMENT_STATE, &labels.deployment()).set(2.0);
                let status = status.map_or_else(|| exception_status(*outcome).to_owned(), |s| s.to_string());
                let mut cooled = labels.deployment().to_vec();
                cooled.push(("exception_status", status));
                metrics::counter!(COOLED_DOWN, &cooled).increment(1);
            }
            CooldownEvent::Recovered { deployment, .. } => {
                if let Some(labels) = self.labels(deployment) {
                    metrics::gauge!(DEPLOYMENT_STATE, &labels.deployment()).set(0.0);
                }
            }
            _ => {}
        }
    }
}

/// The help texts of LiteLLM's metrics (theirs, shortened).
pub(crate) fn describe() {
    metrics::describe_gauge!(DEPLOYMENT_STATE, "LLM deployment state: 0 healthy, 1 partial outage, 2 complete outage.");
    metrics::describe_counter!(COOLED_DOWN, "Times a deployment was cooled down (LiteLLM name).");
    metrics::describe_counter!(SUCCESS, "Successful LLM API calls per deployment (LiteLLM name).");
    metrics::describe_counter!(FAILURE, "Failed LLM API calls per deployment (LiteLLM name).");
    metrics::describe_counter!(TOTAL, "LLM API calls per deployment, failed or not (LiteLLM name).");
    metrics::describe_counter!(FALLBACK_OK, "Successful fallback calls from the requested model group (LiteLLM name).");
    metrics::describe_counter!(FALLBACK_FAILED, "Failed fallback calls from the requested model group (LiteLLM name).");
    metrics::describe_gauge!(RPM_LIMIT, "The deployment's RPM limit (LiteLLM name).");
    metrics::describe_gauge!(TPM_LIMIT, "The deployment's TPM limit (LiteLLM name).");
    metrics::describe_histogram!(API_LATENCY, metrics::Unit::Seconds, "LLM API call time (LiteLLM name).");
    metrics::describe_histogram!(TTFT, metrics::Unit::Seconds, "Time to the first streamed token (LiteLLM name).");
    metrics::describe_histogram!(TOTAL_LATENCY, metrics::Unit::Seconds, "Whole routed request time (LiteLLM name).");
    metrics::describe_histogram!(OVERHEAD, metrics::Unit::Seconds, "Routing overhead (LiteLLM name).");
    metrics::describe_counter!(PROXY_TOTAL, "Requests answered by the gateway (LiteLLM name).");
    metrics::describe_counter!(PROXY_FAILED, "Requests answered with an error (LiteLLM name).");
}

/// Counts one request the gateway answered, as LiteLLM's proxy does (`route` and `status_code`;
/// failures also by `exception_status`).
pub(crate) fn record_request(route: &'static str, status: u16) {
    let code = status.to_string();
    metrics::counter!(PROXY_TOTAL, "route" => route, "status_code" => code.clone()).increment(1);
    if status >= 400 {
        metrics::counter!(PROXY_FAILED, "route" => route, "exception_status" => code).increment(1);
    }
}

/// The labels of the per-deployment request counters.
fn request_labels(requested: &str, labels: &Labels) -> [(&'static str, String); 5] {
    [
        ("requested_model", requested.to_owned()),
        ("litellm_model_name", labels.model.clone()),
        ("model_id", labels.model_id.clone()),
        ("api_base", labels.api_base.clone()),
        ("api_provider", labels.api_provider.clone()),
    ]
}

fn fallback_labels(
    requested: &str,
    fallback: &str,
    original: Option<Outcome>,
    model_id: &str,
) -> [(&'static str, String); 5] {
    let outcome = original.unwrap_or(Outcome::ServerError);
    [
        ("requested_model", requested.to_owned()),
        ("fallback_model", fallback.to_owned()),
        ("exception_status", exception_status(outcome).to_owned()),
        ("exception_class", exception_class_name(outcome).to_owned()),
        ("model_id", model_id.to_owned()),
    ]
}

/// The fallback groups of a trail that failed (every group but the requested one, and but the one
/// that served), each once, in the order tried.
fn fallback_groups_failed<'a>(requested: &str, trail: &'a [AttemptRecord], served: Option<&str>) -> Vec<&'a str> {
    let mut groups: Vec<&str> = Vec::new();
    for r in trail {
        let g = &*r.group;
        if g != requested && Some(g) != served && !groups.contains(&g) {
            groups.push(g);
        }
    }
    groups
}

/// The HTTP status LiteLLM's exception for this failure class carries.
fn exception_status(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Success => "200",
        Outcome::RateLimited => "429",
        Outcome::ContextWindowExceeded | Outcome::ContentPolicy | Outcome::BadRequest => "400",
        Outcome::Auth => "401",
        Outcome::NotFound => "404",
        Outcome::Timeout => "408",
        _ => "500",
    }
}

/// LiteLLM's exception class for this failure class.
fn exception_class_name(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Success => "",
        Outcome::RateLimited => "RateLimitError",
        Outcome::ContextWindowExceeded => "ContextWindowExceededError",
        Outcome::ContentPolicy => "ContentPolicyViolationError",
        Outcome::BadRequest => "BadRequestError",
        Outcome::Auth => "AuthenticationError",
        Outcome::NotFound => "NotFoundError",
        Outcome::Timeout => "Timeout",
        Outcome::Connect | Outcome::Transport => "APIConnectionError",
        _ => "InternalServerError",
    }
}

/// `Openai.RateLimitError`: the provider, capitalized, then the class, as LiteLLM labels it.
fn exception_class(provider: &str, outcome: Outcome) -> String {
    let mut chars = provider.chars();
    let capitalized: String = chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default();
    format!("{capitalized}.{}", exception_class_name(outcome))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exception_labels_follow_litellm() {
        assert_eq!(exception_class("openai", Outcome::RateLimited), "Openai.RateLimitError");
        assert_eq!(exception_class("azure", Outcome::Timeout), "Azure.Timeout");
        assert_eq!(exception_status(Outcome::Auth), "401");
        assert_eq!(exception_status(Outcome::Connect), "500");
    }

    #[test]
    fn the_model_label_has_no_provider_prefix() -> Result<(), Box<dyn std::error::Error>> {
        let d =
            Deployment::builder("g", "azure/gpt-4o").id("a1").api_base("https://x.azure.com/v1?key=sk-q").build()?;
        let labels = Labels::of(&d);
        assert_eq!(labels.api_base, "https://x.azure.com/v1", "no credentials in a label");
        assert_eq!(labels.model, "gpt-4o");
        assert_eq!(labels.api_provider, "azure");
        assert_eq!(labels.model_id, "a1");
        let bare = Labels::of(&Deployment::builder("g", "gpt-4o-mini").build()?);
        assert_eq!(
            (bare.model.as_str(), bare.api_provider.as_str(), bare.api_base.as_str()),
            ("gpt-4o-mini", "openai", "")
        );
        Ok(())
    }
}
