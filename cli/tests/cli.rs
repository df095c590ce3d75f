//! The `switchyard` binary as users run it: `check` on valid, noisy and broken configs, the
//! environment variables, `--version`, and `serve` answering a chat completion through a mock
//! upstream, then stopping gracefully on SIGTERM.

use std::{
    path::PathBuf,
    process::{Output, Stdio},
    time::Duration,
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde_json::Value;
use switchyard_services::mock::{MockProfile, MockUpstream};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, BufReader},
    process::Command,
    time::timeout,
};

/// Bound on anything a test waits for.
const PATIENCE: Duration = Duration::from_secs(20);

const VALID: &str = r#"
model_list:
  - model_name: gpt-4o
    litellm_params: { model: azure/gpt-4o-eu, api_base: "https://eu.example.openai.azure.com", api_key: sk-eu, rpm: 600 }
    model_info: { id: azure-eu }
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o, api_key: sk-us }
    model_info: { id: openai-us }
  - model_name: claude-*
    litellm_params: { model: anthropic/claude-*, api_key: sk-ant }
  - model_name: gpt-4o-mini
    litellm_params: { model: openai/gpt-4o-mini, api_key: sk-us }
router_settings:
  routing_strategy: least-busy
  model_group_alias: { fast: gpt-4o-mini }
  fallbacks: [{ gpt-4o: [gpt-4o-mini] }]
general_settings: { master_key: sk-gateway }
"#;

/// The binary, with none of the variables it reads inherited from the test's environment.
fn switchyard() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    for name in ["SWITCHYARD_CONFIG", "SWITCHYARD_HOST", "SWITCHYARD_PORT", "CONFIG_FILE_PATH", "RUST_LOG"] {
        cmd.env_remove(name);
    }
    cmd.kill_on_drop(true);
    cmd
}

/// Writes `yaml` to a file of its own under cargo's temporary directory for tests.
fn config_file(name: &str, yaml: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}.yaml"));
    std::fs::write(&path, yaml).expect("write the config");
    path
}

/// Runs the binary to completion.
async fn run(cmd: &mut Command) -> (Output, String, String) {
    let output = timeout(PATIENCE, cmd.output()).await.expect("the command ends").expect("the binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stdout, stderr)
}

#[tokio::test]
async fn check_lists_the_groups_and_deployments_of_a_valid_config() {
    let path = config_file("valid", VALID);
    let (output, stdout, stderr) = run(switchyard().arg("check").arg("--config").arg(&path)).await;
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("valid: 3 model groups, 4 deployments, 0 warnings"), "{stdout}");
    for expected in [
        "gpt-4o  (least-busy, 2 deployments)",
        "claude-*  (pattern, least-busy, 1 deployment)",
        "azure-eu",
        "azure/gpt-4o-eu",
        "https://eu.example.openai.azure.com",
        "rpm 600",
        "(provider's endpoint)",
        "fast  ->  gpt-4o-mini",
        "gpt-4o  ->  gpt-4o-mini",
    ] {
        assert!(stdout.contains(expected), "`{expected}` missing from:\n{stdout}");
    }
    for secret in ["sk-eu", "sk-us", "sk-ant", "sk-gateway"] {
        assert!(!stdout.contains(secret), "{secret} printed:\n{stdout}");
    }
}

#[tokio::test]
async fn check_prints_each_pre_router_with_the_groups_it_may_pick() {
    let yaml = VALID.replace(
        "router_settings:",
        "  - model_name: smart
    litellm_params:
      model: auto_router/complexity_router
      complexity_router_config: { tiers: { SIMPLE: gpt-4o-mini, COMPLEX: gpt-4o } }
router_settings:",
    );
    let path = config_file("pre-routers", &yaml);
    let (output, stdout, stderr) = run(switchyard().arg("check").arg("--config").arg(&path)).await;
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for expected in [
        "pre-routers (1)",
        "smart  (complexity_router)",
        "SIMPLE   ->  gpt-4o-mini",
        "COMPLEX  ->  gpt-4o",
        "default  ->  gpt-4o-mini",
    ] {
        assert!(stdout.contains(expected), "`{expected}` missing from:\n{stdout}");
    }
    let (output, stdout, _) = run(switchyard().args(["check", "--json", "--config"]).arg(&path)).await;
    assert!(output.status.success());
    let json: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(json["pre_routers"][0]["name"], "smart");
    assert_eq!(json["pre_routers"][0]["router"], "complexity_router");
}

#[tokio::test]
async fn check_prints_a_warning_for_every_ignored_key() {
    let yaml = format!("{VALID}litellm_settings: {{ success_callback: [langfuse] }}\nrouter_settings_typo: 1\n");
    let path = config_file("warnings", &yaml);
    let (output, stdout, stderr) = run(switchyard().arg("check").arg("-c").arg(&path)).await;
    assert!(output.status.success(), "warnings alone do not fail the check: {stdout}\n{stderr}");
    assert!(stdout.contains("2 warnings"), "{stdout}");
    assert!(stdout.contains("warning: `litellm_settings.success_callback` is ignored"), "{stdout}");
    assert!(stdout.contains("warning: `router_settings_typo` is ignored"), "{stdout}");
}

#[tokio::test]
async fn deny_warnings_makes_a_warning_fail_the_check() {
    let path = config_file("deny-warnings", &format!("{VALID}router_settings_typo: 1\n"));
    let (output, stdout, stderr) = run(switchyard().args(["check", "--deny-warnings", "--config"]).arg(&path)).await;
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("warning: `router_settings_typo` is ignored"), "{stdout}");
    assert!(stderr.contains("1 warning (--deny-warnings)"), "{stderr}");
}

#[tokio::test]
async fn check_fails_naming_the_field_of_a_broken_config() {
    let path = config_file(
        "broken",
        "model_list:\n  - model_name: gpt-4o\n    litellm_params: { model: openai/gpt-4o, rpm: -5 }\n",
    );
    let (output, stdout, stderr) = run(switchyard().arg("check").arg("--config").arg(&path)).await;
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.is_empty(), "nothing is reported as served: {stdout}");
    let expected = format!("error: {}: model_list[0].litellm_params.rpm: must be >= 0, got -5", path.display());
    assert!(stderr.contains(&expected), "`{expected}` missing from:\n{stderr}");
}

#[tokio::test]
async fn check_refuses_what_the_gateway_would_refuse() {
    // Loads as YAML, but the fallback names a group nobody serves.
    let path = config_file(
        "unknown-fallback",
        "model_list:\n  - model_name: gpt-4o\n    litellm_params: { model: openai/gpt-4o }\nrouter_settings:\n  fallbacks: [{ gpt-4o: [nowhere] }]\n",
    );
    let (output, stdout, stderr) = run(switchyard().arg("check").arg("--config").arg(&path)).await;
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("router_settings.fallbacks"), "{stderr}");
    assert!(stderr.contains("nowhere"), "{stderr}");
}

#[tokio::test]
async fn check_json_describes_the_config_for_scripts() {
    let path = config_file("json", &format!("{VALID}router_settings_typo: 1\n"));
    let (output, stdout, stderr) = run(switchyard().args(["check", "--json", "--config"]).arg(&path)).await;
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(&stdout).expect("one JSON document");
    assert_eq!(report["ok"], true);
    let groups: Vec<&str> =
        report["model_groups"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(groups, ["gpt-4o", "claude-*", "gpt-4o-mini"]);
    assert_eq!(report["model_groups"][0]["deployments"][0]["id"], "azure-eu");
    assert_eq!(report["model_groups"][0]["deployments"][0]["provider"], "azure");
    assert_eq!(report["model_groups"][0]["deployments"][0]["rpm"], 600);
    assert_eq!(report["model_groups"][1]["pattern"], true);
    assert_eq!(report["aliases"][0]["alias"], "fast");
    assert_eq!(report["fallbacks"]["general"]["gpt-4o"][0], "gpt-4o-mini");
    assert_eq!(report["router"]["routing_strategy"], "least-busy");
    assert_eq!(report["router"]["state"]["backend"], "memory");
    assert_eq!(report["gateway"]["master_key"], true);
    assert_eq!(report["gateway"]["response_cache"], Value::Null);
    assert_eq!(report["warnings"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn check_reports_the_response_cache() {
    let yaml = format!(
        "{VALID}litellm_settings: {{ cache: true, cache_params: {{ type: redis, url: 'redis://:pw@cache:6379', ttl: 60, namespace: prod }} }}\n"
    );
    let path = config_file("cache", &yaml);
    let (output, stdout, stderr) = run(switchyard().args(["check", "--json", "--config"]).arg(&path)).await;
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(&stdout).expect("one JSON document");
    let cache = report["gateway"]["response_cache"].as_str().expect("a cache line");
    assert_eq!(cache, "redis redis://***@cache:6379, ttl 60s, namespace prod");
}

#[tokio::test]
async fn check_json_names_the_offending_key_of_a_broken_config() {
    let path = config_file("json-broken", "router_settings: { num_retries: -1 }\n");
    let (output, stdout, stderr) = run(switchyard().args(["check", "--json", "--config"]).arg(&path)).await;
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(&stdout).expect("one JSON document");
    assert_eq!(report["ok"], false);
    assert_eq!(report["error"]["kind"], "invalid");
    assert_eq!(report["error"]["path"], "router_settings.num_retries");
    assert_eq!(report["error"]["message"], "must be >= 0, got -1");
    assert!(report.get("model_groups").is_none(), "{report}");
}

#[tokio::test]
async fn the_config_path_comes_from_switchyard_config_then_config_file_path() {
    let path = config_file("env", VALID);
    let broken = config_file("env-broken", "router_settings: { num_retries: -1 }\n");
    let (output, stdout, _) = run(switchyard().arg("check").env("SWITCHYARD_CONFIG", &path)).await;
    assert!(output.status.success(), "{stdout}");
    let (output, stdout, _) = run(switchyard().arg("check").env("CONFIG_FILE_PATH", &path)).await;
    assert!(output.status.success(), "LiteLLM's variable: {stdout}");
    // The flag wins over both variables, and ours over LiteLLM's.
    let (output, _, stderr) =
        run(switchyard().arg("check").arg("--config").arg(&broken).env("SWITCHYARD_CONFIG", &path)).await;
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let (output, _, stderr) =
        run(switchyard().arg("check").env("SWITCHYARD_CONFIG", &broken).env("CONFIG_FILE_PATH", &path)).await;
    assert_eq!(output.status.code(), Some(1), "{stderr}");
}

#[tokio::test]
async fn a_missing_config_is_a_usage_error() {
    let (output, _, stderr) = run(switchyard().arg("check")).await;
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--config"), "{stderr}");
    let (output, _, stderr) = run(switchyard().args(["serve", "--port", "http"])).await;
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--port"), "{stderr}");
}

#[tokio::test]
async fn version_and_help_describe_the_binary() {
    let expected = format!("switchyard {}", env!("CARGO_PKG_VERSION"));
    for flag in ["--version", "-V"] {
        let (output, stdout, _) = run(switchyard().arg(flag)).await;
        assert!(output.status.success());
        assert_eq!(stdout.trim(), expected);
    }
    let (output, stdout, _) = run(switchyard().arg("--help")).await;
    assert!(output.status.success());
    assert!(stdout.contains("serve") && stdout.contains("check"), "{stdout}");
    let (output, stdout, _) = run(switchyard().args(["serve", "--help"])).await;
    assert!(output.status.success());
    for variable in ["SWITCHYARD_CONFIG", "SWITCHYARD_HOST", "SWITCHYARD_PORT", "CONFIG_FILE_PATH"] {
        assert!(stdout.contains(variable), "{variable} missing from:\n{stdout}");
    }
}

#[tokio::test]
async fn serve_refuses_a_broken_config_naming_the_field() {
    let path = config_file("serve-broken", "router_settings: { routing_strategy: fastest }\n");
    let (output, stdout, stderr) = run(switchyard().args(["serve", "--port", "0", "--config"]).arg(&path)).await;
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(!stdout.contains("listening"), "{stdout}");
    assert!(stderr.contains("router_settings.routing_strategy"), "{stderr}");
}

#[tokio::test]
async fn serve_reports_a_port_already_in_use() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("address").port().to_string();
    let path = config_file("serve-taken", VALID);
    let (output, _, stderr) =
        run(switchyard().args(["serve", "--host", "127.0.0.1", "--port", &port, "--config"]).arg(&path)).await;
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("cannot listen on 127.0.0.1:{port}")), "{stderr}");
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_a_chat_completion_then_stops_gracefully_on_sigterm() {
    let upstream = MockUpstream::start(MockProfile::healthy()).expect("mock upstream");
    let yaml = format!(
        "model_list:\n  - model_name: gpt-4o\n    litellm_params: {{ model: openai/gpt-4o, api_base: \"{}\", api_key: sk-mock }}\n\
         general_settings: {{ master_key: sk-gateway }}\n",
        upstream.base_url()
    );
    let path = config_file("serve", &yaml);
    let mut child = switchyard()
        .args(["serve", "--port", "0", "--config"])
        .arg(&path)
        .env("SWITCHYARD_HOST", "127.0.0.1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    // The logs are read as they come, so a full pipe never blocks the gateway.
    let mut logs = child.stderr.take().expect("stderr");
    let logs = tokio::spawn(async move {
        let mut text = String::new();
        let _ = logs.read_to_string(&mut text).await;
        text
    });
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let origin = timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.expect("stdout is text") {
            if let Some(origin) = line.strip_prefix("listening on ") {
                return origin.to_owned();
            }
        }
        panic!("stdout closed before the gateway listened")
    })
    .await
    .expect("the gateway announces its address");

    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let live = http::Request::get(format!("{origin}/health/liveliness")).body(Full::default()).unwrap();
    let live = timeout(PATIENCE, client.request(live)).await.expect("liveliness answers").expect("connects");
    assert_eq!(live.status(), 200);

    let chat = http::Request::post(format!("{origin}/v1/chat/completions"))
        .header("authorization", "Bearer sk-gateway")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(br#"{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}"#)))
        .unwrap();
    let answer = timeout(PATIENCE, client.request(chat)).await.expect("chat answers").expect("connects");
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["x-switchyard-model-group"], "gpt-4o");
    let body = answer.into_body().collect().await.expect("body").to_bytes();
    let body: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(upstream.requests(), 1);

    // The client keeps its idle connection open: a graceful stop must not wait on it.
    let pid = child.id().expect("running").to_string();
    let kill = std::process::Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs");
    assert!(kill.success());
    let status = timeout(PATIENCE, child.wait()).await.expect("exits after SIGTERM").expect("status");
    let logs = logs.await.expect("logs");
    assert!(status.success(), "{status}\n{logs}");
    assert!(logs.contains("SIGTERM received"), "{logs}");
    drop(client);
}
