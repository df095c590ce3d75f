//! The Switchyard gateway in your own binary: an OpenAI-compatible HTTP server routing with a
//! LiteLLM proxy config. To run the gateway, install the `switchyard` command instead
//! (`cargo install --path cli`, then `switchyard serve --config config.yaml`; `docs/gateway.md`):
//! this example shows what it does, to start from when you embed the gateway.
//!
//! ```text
//! cargo run --release --example gateway -- --config config.yaml [--port 4000] [--host 127.0.0.1]
//! RUST_LOG=switchyard=debug,info cargo run --example gateway -- --config config.yaml
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 cargo run --features otel --example gateway -- --config config.yaml
//! ```
//!
//! `config.yaml` is a LiteLLM proxy config, unchanged (`model_list`, `router_settings`,
//! `litellm_settings`, `general_settings.master_key`); `general_settings.edge` sets the
//! connection limits and the allowed origins and hosts (`docs/gateway.md`). `kill -HUP <pid>` or
//! `POST /router/reload` re-reads it; ctrl-c or `SIGTERM` shut down gracefully. Endpoints,
//! headers and metrics: `docs/gateway.md`. Built with the `otel` feature and run with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` set, it exports its traces over OTLP/HTTP
//! (`docs/observability.md#traces`).

use std::{path::PathBuf, process::ExitCode};

use switchyard::{
    Config,
    gateway::{Gateway, shutdown_signal},
    services::provider::{HttpProvider, ProviderConfig},
};
use tracing_subscriber::{EnvFilter, layer::SubscriberExt, util::SubscriberInitExt};

const USAGE: &str =
    "usage: gateway --config <config.yaml> [--port <port, default 4000>] [--host <address, default 127.0.0.1>]";

struct Args {
    config: PathBuf,
    host: String,
    port: u16,
}

fn parse_args() -> Result<Args, String> {
    let mut config = None;
    let mut host = "127.0.0.1".to_owned();
    let mut port = 4000;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg, None),
        };
        let mut value = || inline.clone().or_else(|| args.next()).ok_or_else(|| format!("{name} needs a value"));
        match name.as_str() {
            "--config" | "-c" => config = Some(PathBuf::from(value()?)),
            "--host" => host = value()?,
            "--port" | "-p" => {
                let v = value()?;
                port = v.parse().map_err(|_| format!("--port must be a port number, got `{v}`"))?;
            }
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let config = config.ok_or("--config is required")?;
    Ok(Args { config, host, port })
}

#[tokio::main]
async fn main() -> ExitCode {
    let logs = tracing_subscriber::registry()
        .with(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .with(tracing_subscriber::fmt::layer());
    // Traces go to an OTLP collector when one is named; the guard flushes them at exit.
    #[cfg(feature = "otel")]
    let (logs, _otel_guard) = {
        use switchyard::otel::{self, OtelConfig};
        match OtelConfig::from_env().map(otel::layer).transpose() {
            Ok(Some((layer, guard))) => (logs.with(Some(layer)), Some(guard)),
            Ok(None) => (logs.with(None), None),
            Err(e) => {
                eprintln!("OpenTelemetry export is off: {e}");
                (logs.with(None), None)
            }
        }
    };
    logs.init();
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("{message}");
            }
            eprintln!("{USAGE}");
            return if message.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(2) };
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_path(&args.config)?;
    let mut provider_config = ProviderConfig::default();
    if let Some(t) = config.timeout {
        provider_config = provider_config.timeout(t);
    }
    if let Some(t) = config.stream_timeout {
        provider_config = provider_config.stream_timeout(t);
    }
    let provider = HttpProvider::new(provider_config)?;
    let deployments = config.deployments.len();
    let guarded = config.master_key.is_some();
    let gateway = Gateway::builder(config).provider(provider).config_path(&args.config).build()?;
    let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port)).await?;
    let addr = listener.local_addr()?;
    tracing::info!(deployments, master_key = guarded, "loaded {}", args.config.display());
    let auth = if guarded { " -H 'authorization: Bearer $MASTER_KEY'" } else { "" };
    println!(
        "curl http://{addr}/v1/chat/completions{auth} -H 'content-type: application/json' \
         -d '{{\"model\": \"<model group>\", \"messages\": [{{\"role\": \"user\", \"content\": \"hi\"}}]}}'"
    );
    gateway.serve(listener, shutdown_signal()).await?;
    Ok(())
}
