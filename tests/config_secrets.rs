//! Config errors on the reload path: `POST /router/reload` answers with the loader's error, so the
//! rules that keep secrets out of config errors and refuse unusable deployments hold there too.
//! The gateway is called in-process (`oneshot`) with the simulated provider; real time, no sleeps.
#![cfg(feature = "gateway")]

use std::time::Duration;

use axum::body::Body;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use switchyard::{Config, gateway::Gateway, services::sim::SimProvider};
use tower::ServiceExt;

#[path = "support/config_file.rs"]
mod config_file;
use config_file::ConfigFile;

const MASTER: &str = "sk-test-master";
/// Bound on anything a test waits for.
const PATIENCE: Duration = Duration::from_secs(20);

const BEFORE: &str = r#"
model_list:
  - { model_name: g, litellm_params: { model: openai/old }, model_info: { id: old } }
general_settings: { master_key: sk-test-master }
"#;

/// `POST /router/reload`: the status and the body.
async fn reload(gw: &Gateway) -> (StatusCode, String) {
    let req = Request::post("/router/reload")
        .header("authorization", format!("Bearer {MASTER}"))
        .header("content-type", "application/json")
        .body(Body::from("{}"))
        .expect("request");
    let resp =
        tokio::time::timeout(PATIENCE, gw.router().oneshot(req)).await.expect("answered in time").expect("infallible");
    let status = resp.status();
    let body = tokio::time::timeout(PATIENCE, resp.into_body().collect()).await.expect("in time").expect("body");
    (status, String::from_utf8_lossy(&body.to_bytes()).into_owned())
}

fn gateway(file: &ConfigFile) -> Gateway {
    let config = Config::from_path(file.path()).expect("the first config loads");
    Gateway::builder(config).provider(SimProvider::new(1)).config_path(file.path()).build().expect("gateway")
}

/// `model_list` with one deployment `n` whose `litellm_params` end with `params`.
fn with_params(params: &str) -> String {
    format!(
        "model_list:\n  - {{ model_name: g, litellm_params: {{ model: openai/new, {params} }}, model_info: {{ id: n }} }}\n\
         general_settings: {{ master_key: sk-test-master }}\n"
    )
}

#[tokio::test]
async fn a_reload_refusing_a_secret_field_never_echoes_the_secret() {
    let file = ConfigFile::new(BEFORE);
    let gw = gateway(&file);
    let refused = [
        (with_params("api_key: 9182736455.46"), "model_list[0].litellm_params.api_key"),
        (with_params("extra_headers: { x-tenant: [sk-SECRET-918273] }"), "model_list[0].litellm_params.extra_headers"),
        (with_params("api_base: 'http://user:SECRET-918273@vllm:8000/v1'"), "model_list[0].litellm_params.api_base"),
        (
            "model_list: [{ model_name: g, litellm_params: { model: openai/x } }]\n\
             general_settings: { master_key: \"sk-SECRET-918273\\n\" }\n"
                .to_owned(),
            "general_settings.master_key",
        ),
        (
            "model_list: [{ model_name: g, litellm_params: { model: openai/x } }]\n\
             router_settings: { redis_host: cache, redis_password: 9182736455.46 }\n"
                .to_owned(),
            "router_settings.redis_password",
        ),
    ];
    for (yaml, path) in refused {
        file.write(&yaml);
        let (status, body) = reload(&gw).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{yaml}: {body}");
        assert!(body.contains("invalid_config") && body.contains(path), "{yaml}: {body}");
        for secret in ["SECRET", "918273", "9182736455"] {
            assert!(!body.contains(secret), "the answer echoes `{secret}`: {body}");
        }
    }
}

#[tokio::test]
async fn a_reload_reads_a_numeric_api_key_as_its_digits() {
    let file = ConfigFile::new(BEFORE);
    let gw = gateway(&file);
    file.write(&with_params("api_key: 918273645546, extra_headers: { x-tenant: 4242 }"));
    let (status, body) = reload(&gw).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("\"added\":[\"n\"]"), "{body}");
    assert!(!body.contains("918273645546"), "{body}");
}

#[tokio::test]
async fn a_reload_refuses_an_unusable_deployment_and_changes_nothing() {
    let file = ConfigFile::new(BEFORE);
    let gw = gateway(&file);
    for params in
        ["api_base: 'unix:///var/run/vllm.sock'", "api_base: 'localhost:8000'", "extra_headers: { x-n: true }"]
    {
        file.write(&with_params(params));
        let (status, body) = reload(&gw).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{params}: {body}");
        assert!(body.contains("model_list[0].litellm_params."), "{params}: {body}");
    }
    assert_eq!(gw.routing().registry().deployments().len(), 1, "nothing changed");
}
