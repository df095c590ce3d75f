//! Health-check routing through the gateway over loopback HTTP: mock upstreams that speak the
//! OpenAI wire format, the real HTTP provider, and the background probes the config turns on.

#[path = "support/loopback.rs"]
mod loopback;

use std::time::Duration;

use http::StatusCode;
use loopback::{PATIENCE, failing, gateway, healthy, post, send};
use tokio::time::Instant;

const KEY: (&str, &str) = ("authorization", "Bearer sk-health");

fn deployment(group: &str, id: &str, base: &str) -> String {
    format!(
        "  - model_name: {group}\n    litellm_params: {{ model: openai/gpt-4o, api_key: key-{id}, api_base: \"{base}\" }}\n    \
         model_info: {{ id: {id} }}\n"
    )
}

/// Waits (bounded) until `/health/readiness` lists `id` as unhealthy.
async fn until_unhealthy(origin: &str, id: &str) -> serde_json::Value {
    let started = Instant::now();
    loop {
        let ready = send("GET", format!("{origin}/health/readiness"), None, &[]).await.json();
        if ready["health_checks"]["unhealthy"].as_array().is_some_and(|u| u.iter().any(|v| v == id)) {
            return ready;
        }
        assert!(started.elapsed() < PATIENCE, "the probes never marked {id} unhealthy: {ready}");
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_that_fails_its_probes_gets_no_user_request_after_the_first_round() {
    let (good, bad) = (healthy(), failing(StatusCode::SERVICE_UNAVAILABLE));
    let yaml = format!(
        "model_list:\n{}{}router_settings:\n  enable_health_check_routing: true\n  num_retries: 0\n\
         general_settings:\n  master_key: sk-health\n  background_health_checks: true\n  health_check_interval: 60\n",
        deployment("gpt", "good", &good.base_url()),
        deployment("gpt", "bad", &bad.base_url()),
    );
    let gw = gateway(&yaml).await;
    let ready = until_unhealthy(&gw.origin, "bad").await;
    assert_eq!(ready["status"], "ready", "an unhealthy deployment does not make the gateway unready: {ready}");
    assert_eq!(ready["health_checks"]["routing"], true);
    let probes_of_bad = bad.requests();
    assert!(probes_of_bad >= 1, "the probe reached the failing upstream");
    let body = r#"{"model": "gpt", "messages": [{"role": "user", "content": "hi"}]}"#;
    for _ in 0..40 {
        let answer = post(format!("{}/v1/chat/completions", gw.origin), body, &[KEY]).await;
        assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
        assert_eq!(answer.header("x-switchyard-deployment-id"), "good");
    }
    assert_eq!(bad.requests(), probes_of_bad, "no user request reached the unhealthy deployment");

    // The dashboard's state shows it.
    let state = send("GET", format!("{}/router/state", gw.origin), None, &[KEY]).await.json();
    let rows = state["groups"][0]["deployments"].as_array().expect("deployments").clone();
    let row = |id: &str| rows.iter().find(|d| d["id"] == id).cloned().expect("row");
    assert_eq!(row("bad")["state"], "unhealthy", "{state}");
    assert_eq!(row("bad")["health"]["healthy"], false);
    assert_eq!(row("bad")["health"]["status"], 503);
    assert_eq!(row("good")["health"]["healthy"], true);
    assert_eq!(state["health_routing"], true);

    // LiteLLM's `/health`: behind the master key, with its answer shape.
    let denied = send("GET", format!("{}/health", gw.origin), None, &[]).await;
    assert_eq!(denied.status, StatusCode::UNAUTHORIZED);
    let health = send("GET", format!("{}/health", gw.origin), None, &[KEY]).await;
    assert_eq!(health.status, StatusCode::OK);
    let health = health.json();
    assert_eq!(health["healthy_count"], 1, "{health}");
    assert_eq!(health["unhealthy_count"], 1);
    assert_eq!(health["healthy_endpoints"][0]["model_id"], "good");
    assert_eq!(health["unhealthy_endpoints"][0]["model_id"], "bad");
    assert_eq!(health["unhealthy_endpoints"][0]["exception_status"], 503);
    let text = health.to_string();
    assert!(!text.contains("key-good") && !text.contains("key-bad"), "no credential in the answer: {text}");
    let one = send("GET", format!("{}/health?model_id=bad", gw.origin), None, &[KEY]).await;
    assert_eq!(one.status, StatusCode::SERVICE_UNAVAILABLE, "a targeted check with nothing healthy");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_background_checks_the_health_endpoint_probes_on_demand() {
    let (good, bad) = (healthy(), failing(StatusCode::INTERNAL_SERVER_ERROR));
    let yaml = format!(
        "model_list:\n{}{}general_settings:\n  master_key: sk-health\n",
        deployment("gpt", "good", &good.base_url()),
        deployment("gpt", "bad", &bad.base_url()),
    );
    let gw = gateway(&yaml).await;
    assert_eq!((good.requests(), bad.requests()), (0, 0), "no background probe");
    let health = send("GET", format!("{}/health", gw.origin), None, &[KEY]).await.json();
    assert_eq!((health["healthy_count"].as_u64(), health["unhealthy_count"].as_u64()), (Some(1), Some(1)), "{health}");
    assert_eq!((good.requests(), bad.requests()), (1, 1), "one probe each, on demand");
    let ready = send("GET", format!("{}/health/readiness", gw.origin), None, &[]).await.json();
    assert_eq!(ready["health_checks"]["enabled"], false);
}

// ---------------------------------------------------------------------------------------------
// The router on a paused clock, around an in-process provider: the probe task's life cycle.

mod in_process {
    use std::{
        sync::{
            Arc,
            atomic::{AtomicU32, Ordering},
        },
        time::Duration,
    };

    use bytes::Bytes;
    use switchyard::{
        Config, Outcome, RouteBody, RouteCtx, RouteError, RouteErrorKind, Router,
        layers::{BoxError, RouteRequest},
    };
    use tower::service_fn;

    const YAML: &str = "model_list:\n\
        - model_name: gpt\n  litellm_params: { model: openai/gpt-4o }\n  model_info: { id: good }\n\
        - model_name: gpt\n  litellm_params: { model: openai/gpt-4o }\n  model_info: { id: bad }\n\
        router_settings:\n  enable_health_check_routing: true\n  num_retries: 0\n  seed: 3\n\
        general_settings:\n  health_check_interval: 60\n";

    /// A provider where `bad` answers 503; counts what each deployment receives.
    fn provider(
        good: Arc<AtomicU32>,
        bad: Arc<AtomicU32>,
    ) -> impl tower::Service<
        http::Request<Bytes>,
        Response = http::Response<RouteBody>,
        Error = BoxError,
        Future: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static {
        service_fn(move |req: http::Request<Bytes>| {
            let id = req.route_ctx().and_then(|c| c.selected.as_ref()).map(|d| d.id.to_string()).unwrap_or_default();
            let (good, bad) = (good.clone(), bad.clone());
            async move {
                if id == "bad" {
                    bad.fetch_add(1, Ordering::SeqCst);
                    let status = http::StatusCode::SERVICE_UNAVAILABLE;
                    return Err(RouteError::new(RouteErrorKind::Upstream, "503 Service Unavailable")
                        .with_outcome(Outcome::ServerError)
                        .with_upstream_response(status, Bytes::new())
                        .into());
                }
                good.fetch_add(1, Ordering::SeqCst);
                Ok::<_, BoxError>(http::Response::new(RouteBody::from("{}")))
            }
        })
    }

    fn request() -> http::Request<Bytes> {
        let mut req = http::Request::new(Bytes::from_static(br#"{"model":"gpt","messages":[]}"#));
        req.extensions_mut().insert(RouteCtx::new("gpt"));
        req
    }

    async fn settle() {
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_router_probes_filters_and_restarts_its_checks_on_reload() {
        let (good, bad) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
        let config = Config::from_yaml_str(YAML).unwrap();
        let router = Router::from_config(&config, provider(good.clone(), bad.clone())).unwrap();
        assert!(router.health_checks_running());
        settle().await;
        assert_eq!(bad.load(Ordering::SeqCst), 1, "the first round probed `bad` once");
        for _ in 0..30 {
            router.call(request()).await.expect("served by `good`");
        }
        assert_eq!(bad.load(Ordering::SeqCst), 1, "no user request reached `bad`");
        assert_eq!(router.store().record_outcome(&"bad".into(), true).await.failures, 0, "probes are not counted");
        tokio::time::advance(Duration::from_secs(60)).await;
        settle().await;
        assert_eq!(bad.load(Ordering::SeqCst), 2, "probed again after the interval");

        // A reload without health checks stops them (and the filter).
        let off = Config::from_yaml_str(
            &YAML.replace("enable_health_check_routing: true", "enable_health_check_routing: false"),
        )
        .unwrap();
        router.reload(&off).unwrap();
        assert!(!router.health_checks_running());
        tokio::time::advance(Duration::from_secs(600)).await;
        settle().await;
        assert_eq!(bad.load(Ordering::SeqCst), 2, "a stopped checker probes no more");
        router.reload(&config).unwrap();
        assert!(router.health_checks_running(), "a reload with them starts them again");
        settle().await;
        assert_eq!(bad.load(Ordering::SeqCst), 3);
        router.stop_health_checks();
        assert!(!router.health_checks_running());
    }

    #[tokio::test(start_paused = true)]
    async fn with_an_allowed_fails_policy_failed_probes_feed_the_cooldown_instead() {
        let (good, bad) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
        let yaml = YAML.replace(
            "num_retries: 0\n",
            "num_retries: 0\n  allowed_fails_policy: { ServiceUnavailableErrorAllowedFails: 0 }\n",
        );
        let config = Config::from_yaml_str(&yaml).unwrap();
        let router = Router::from_config(&config, provider(good, bad.clone())).unwrap();
        settle().await;
        let cooldowns = router.cooldowns().await;
        assert_eq!(cooldowns.len(), 1, "the failed probe benched `bad`: {cooldowns:?}");
        assert_eq!(cooldowns[0].deployment.as_str(), "bad");
        for _ in 0..10 {
            router.call(request()).await.expect("served by `good`");
        }
        assert_eq!(bad.load(Ordering::SeqCst), 1);
    }
}
