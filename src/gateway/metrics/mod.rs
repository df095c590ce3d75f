//! Prometheus metrics: one recorder per process, installed by the first gateway, rendered by
//! `GET /metrics`. Ours are named `switchyard_*`; LiteLLM's names are emitted beside them
//! ([`litellm`]).
//!
//! The `metrics` facade has one global recorder per process, so the first [`Gateway`] built
//! installs a `PrometheusRecorder` and every later one (tests build many) renders from the same
//! handle. A program that installed its own recorder first hands its Prometheus handle to
//! [`GatewayBuilder::prometheus`]; otherwise `/metrics` answers 503.
//!
//! [`Gateway`]: super::Gateway
//! [`GatewayBuilder::prometheus`]: super::GatewayBuilder::prometheus

use std::{collections::BTreeMap, sync::OnceLock, time::Duration};

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

pub(crate) mod litellm;
use switchyard_layers::{AttemptRecord, Served, continuation::Continued, fallback::FallbackEvent};

/// Requests answered by the gateway, by endpoint and status.
pub(crate) const REQUESTS: &str = "switchyard_requests_total";
/// Time until the response head, by endpoint.
pub(crate) const REQUEST_DURATION: &str = "switchyard_request_duration_seconds";
/// Attempts made, by group, deployment and outcome.
pub(crate) const ATTEMPTS: &str = "switchyard_attempts_total";
/// Retries made inside a group.
pub(crate) const RETRIES: &str = "switchyard_retries_total";
/// Fallback hops, by the group left and the group tried.
pub(crate) const FALLBACKS: &str = "switchyard_fallbacks_total";
/// Call time minus the serving attempt's upstream time.
pub(crate) const OVERHEAD: &str = "switchyard_overhead_seconds";
/// Broken streams continued on another deployment (opt-in), by the group and deployment that
/// continued them.
pub(crate) const STREAM_CONTINUATIONS: &str = "switchyard_stream_continuations_total";
/// Config reloads, by result.
pub(crate) const RELOADS: &str = "switchyard_config_reloads_total";

/// Request durations: 5 ms to 2 min.
const DURATION_BUCKETS: [f64; 14] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];
/// Routing overhead: 10 µs to 5 s (failed attempts before the serving one count as overhead).
const OVERHEAD_BUCKETS: [f64; 14] =
    [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1.0, 5.0];

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// The process-wide Prometheus handle, installing the recorder on first use; `None` when another
/// recorder was installed first.
pub(crate) fn process_handle() -> Option<PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let recorder = builder().build_recorder();
            let handle = recorder.handle();
            match metrics::set_global_recorder(recorder) {
                Ok(()) => {
                    describe();
                    Some(handle)
                }
                Err(_) => {
                    tracing::warn!(
                        "another metrics recorder is installed: /metrics has nothing to render unless the gateway is \
                         given its Prometheus handle"
                    );
                    None
                }
            }
        })
        .clone()
}

fn builder() -> PrometheusBuilder {
    let histograms = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full(REQUEST_DURATION.to_owned()), &DURATION_BUCKETS)
        .and_then(|b| b.set_buckets_for_metric(Matcher::Full(OVERHEAD.to_owned()), &OVERHEAD_BUCKETS))
        .and_then(|b| {
            b.set_buckets_for_metric(
                Matcher::Full("switchyard_health_probe_duration_seconds".to_owned()),
                &DURATION_BUCKETS,
            )
        })
        .and_then(|b| {
            litellm::HISTOGRAMS.iter().try_fold(b, |b, name| {
                b.set_buckets_for_metric(Matcher::Full((*name).to_owned()), &litellm::LATENCY_BUCKETS)
            })
        });
    // The bucket lists are constants and not empty, so this does not fail; summaries otherwise.
    histograms.unwrap_or_default()
}

fn describe() {
    metrics::describe_counter!(REQUESTS, "Requests answered by the gateway, by endpoint and HTTP status.");
    metrics::describe_histogram!(
        REQUEST_DURATION,
        metrics::Unit::Seconds,
        "Time from the request to the response head (for a stream: its first content chunk)."
    );
    metrics::describe_counter!(ATTEMPTS, "Attempts sent to deployments, by group, deployment and outcome.");
    metrics::describe_counter!(RETRIES, "Retries inside a model group.");
    metrics::describe_counter!(FALLBACKS, "Fallback hops from one model group to another.");
    metrics::describe_counter!(
        STREAM_CONTINUATIONS,
        "Streams broken after their first text and continued (stream_continuation), by the group and deployment that \
         continued them."
    );
    metrics::describe_histogram!(
        OVERHEAD,
        metrics::Unit::Seconds,
        "Routed call time minus the serving attempt's upstream time: routing plus failed attempts."
    );
    metrics::describe_counter!(RELOADS, "Config reloads, by result.");
    metrics::describe_counter!(
        crate::cache::CACHE_REQUESTS,
        "Response cache lookups and writes, by endpoint and result (hit, miss, store, error)."
    );
    metrics::describe_counter!("switchyard_cooldowns_total", "Deployments benched, by group, deployment and outcome.");
    metrics::describe_gauge!(
        "switchyard_deployment_healthy",
        "1 when the deployment's latest fresh health probe succeeded, 0 when it failed."
    );
    metrics::describe_histogram!(
        "switchyard_health_probe_duration_seconds",
        metrics::Unit::Seconds,
        "Time of one health probe, by group, deployment and result (healthy, unhealthy, timeout)."
    );
    metrics::describe_counter!(
        "switchyard_health_fail_open_total",
        "Attempts whose health filter kept every candidate because all were marked unhealthy, by group."
    );
    litellm::describe();
}

/// The endpoint label for a request path: the route, never the raw path (bounded cardinality).
pub(crate) fn endpoint_label(path: &str) -> &'static str {
    let path = path.trim_end_matches('/');
    match path {
        "/v1/chat/completions" | "/chat/completions" => "/v1/chat/completions",
        "/v1/completions" | "/completions" => "/v1/completions",
        "/v1/embeddings" | "/embeddings" => "/v1/embeddings",
        "/v1/models" | "/models" => "/v1/models",
        "/health/liveliness" | "/health/liveness" => "/health/liveliness",
        "/health/readiness" => "/health/readiness",
        "/health" => "/health",
        "/metrics" => "/metrics",
        "/router/deployments" => "/router/deployments",
        "/router/reload" => "/router/reload",
        "/cache/ping" => "/cache/ping",
        "/cache/delete" => "/cache/delete",
        "/router/state" => "/router/state",
        "/router/events" => "/router/events",
        "/router/events/stream" => "/router/events/stream",
        "/ui" | "/ui/app.js" | "/ui/app.css" => "/ui",
        p if p.starts_with("/router/deployments/") && p.ends_with("/cooldown") => "/router/deployments/{id}/cooldown",
        p if p.starts_with("/openai/deployments/") && p.ends_with("/chat/completions") => "/v1/chat/completions",
        p if p.starts_with("/openai/deployments/") && p.ends_with("/embeddings") => "/v1/embeddings",
        p if p.starts_with("/openai/deployments/") && p.ends_with("/completions") => "/v1/completions",
        _ => "other",
    }
}

/// Counts one answered request and its time to the response head.
pub(crate) fn record_request(endpoint: &'static str, status: u16, elapsed: Duration) {
    metrics::counter!(REQUESTS, "endpoint" => endpoint, "status" => status.to_string()).increment(1);
    metrics::histogram!(REQUEST_DURATION, "endpoint" => endpoint).record(elapsed.as_secs_f64());
    litellm::record_request(endpoint, status);
}

/// Counts the attempts and retries of a call that was served, and its overhead.
pub(crate) fn record_served(served: &Served, overhead: Duration) {
    attempt(&served.group, served.deployment.as_str(), "success");
    record_trail(&served.failed, Some(&served.group));
    metrics::histogram!(OVERHEAD).record(overhead.as_secs_f64());
}

/// Counts the attempts and retries of a call that failed.
pub(crate) fn record_failed(trail: &[AttemptRecord]) {
    record_trail(trail, None);
}

/// Failed attempts, and the retries they imply: every attempt in a group after its first one
/// (the serving attempt counts when it is in that group).
fn record_trail(trail: &[AttemptRecord], served_group: Option<&str>) {
    let mut per_group: BTreeMap<&str, u64> = BTreeMap::new();
    for r in trail {
        attempt(&r.group, r.deployment.as_str(), r.outcome.as_str());
        *per_group.entry(&r.group).or_default() += 1;
    }
    if let Some(group) = served_group {
        *per_group.entry(group).or_default() += 1;
    }
    for (group, attempts) in per_group {
        if attempts > 1 {
            metrics::counter!(RETRIES, "group" => group.to_owned()).increment(attempts - 1);
        }
    }
}

fn attempt(group: &str, deployment: &str, outcome: &'static str) {
    metrics::counter!(ATTEMPTS, "group" => group.to_owned(), "deployment" => deployment.to_owned(), "outcome" => outcome)
        .increment(1);
}

/// Counts the continuations of a streamed answer, once its body ended.
pub(crate) fn record_continuations(continued: &Continued) {
    for served in continued.served().iter().flatten() {
        attempt(&served.group, served.deployment.as_str(), "success");
        metrics::counter!(STREAM_CONTINUATIONS, "group" => served.group.to_string(), "deployment" => served.deployment.to_string())
            .increment(1);
    }
}

/// The router's `on_fallback` hook: counts every hop.
pub(crate) fn record_fallback(event: &FallbackEvent) {
    if let FallbackEvent::Hop { from, to, .. } = event {
        metrics::counter!(FALLBACKS, "from" => from.to_string(), "to" => to.to_string()).increment(1);
    }
}

/// Counts a config reload.
pub(crate) fn record_reload(ok: bool) {
    metrics::counter!(RELOADS, "result" => if ok { "ok" } else { "error" }).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_labels_name_routes_not_paths() {
        assert_eq!(endpoint_label("/chat/completions"), "/v1/chat/completions");
        assert_eq!(endpoint_label("/v1/embeddings/"), "/v1/embeddings");
        assert_eq!(endpoint_label("/router/deployments/abc/cooldown"), "/router/deployments/{id}/cooldown");
        assert_eq!(endpoint_label("/openai/deployments/gpt-4o/chat/completions"), "/v1/chat/completions");
        assert_eq!(endpoint_label("/v1/unknown/random-text"), "other");
        assert_eq!(endpoint_label("/ui/app.js"), "/ui");
        assert_eq!(endpoint_label("/ui/"), "/ui");
        assert_eq!(endpoint_label("/router/events/stream"), "/router/events/stream");
        assert_eq!(endpoint_label("/ui/anything-else"), "other");
    }
}
