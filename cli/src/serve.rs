//! `switchyard serve`: load the config, build the gateway, bind, serve until ctrl-c or SIGTERM.

use std::{
    fmt, io,
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Arc,
};

use futures_util::FutureExt;
use switchyard::{
    Config, ConfigError, StateStore,
    config::ConfigErrorKind,
    gateway::{Gateway, GatewayError, shutdown_signal},
    services::provider::{HttpProvider, ProviderConfig, ProviderError},
};

use crate::{EXIT_FAILURE, EXIT_OK};

/// What `serve` was asked to do.
#[derive(Debug)]
pub(crate) struct Options {
    pub(crate) config: PathBuf,
    pub(crate) host: String,
    pub(crate) port: u16,
}

/// Why the gateway could not start, or stopped on an error.
#[derive(Debug)]
pub(crate) enum StartError {
    /// The config file does not load or is invalid.
    Config(ConfigError),
    /// The HTTP provider could not be built (CA bundle, proxy).
    Provider(ProviderError),
    /// The gateway refused the config (a deployment, a connection limit, the state store).
    Gateway(GatewayError),
    /// The config sets Redis and this build has no Redis support (feature `redis`).
    NoRedis,
    /// The address could not be bound.
    Bind { address: String, source: io::Error },
    /// The tokio runtime could not start.
    Runtime(io::Error),
    /// Serving failed (the listener broke).
    Serve(io::Error),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => e.fmt(f),
            Self::Provider(e) => write!(f, "the HTTP client cannot start: {e}"),
            Self::Gateway(e) => e.fmt(f),
            Self::NoRedis => f.write_str(
                "router_settings: the config sets Redis (`redis_*`) and this build has no Redis support: \
                 install switchyard-cli with its default features (`redis`)",
            ),
            Self::Bind { address, source } => write!(f, "cannot listen on {address}: {source}"),
            Self::Runtime(e) => write!(f, "cannot start the async runtime: {e}"),
            Self::Serve(e) => write!(f, "serving failed: {e}"),
        }
    }
}

impl StartError {
    /// The message, after the config file's path when the error is about its content (an
    /// unreadable file already names itself).
    pub(crate) fn located(&self, path: &Path) -> String {
        match self {
            Self::Config(e) if e.kind() == ConfigErrorKind::Io => e.to_string(),
            Self::Config(_) | Self::Gateway(_) | Self::NoRedis => format!("{}: {self}", path.display()),
            _ => self.to_string(),
        }
    }

    /// The loader's error, when the config is what failed (also inside a gateway error).
    pub(crate) fn config_error(&self) -> Option<&ConfigError> {
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(e) = next {
            if let Some(found) = e.downcast_ref::<ConfigError>() {
                return Some(found);
            }
            next = e.source();
        }
        None
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(e) => Some(e),
            Self::Provider(e) => Some(e),
            Self::Gateway(e) => Some(e),
            Self::Bind { source, .. } => Some(source),
            Self::Runtime(e) | Self::Serve(e) => Some(e),
            Self::NoRedis => None,
        }
    }
}

/// Runs `serve`; the exit code is 0 after a graceful shutdown, 1 on any error (logged, and
/// printed to stderr naming the config file).
pub(crate) fn run(options: Options) -> ExitCode {
    let _logs = crate::init_logging("info");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(StartError::Runtime);
    let result = runtime.and_then(|rt| rt.block_on(serve(&options)));
    match result {
        Ok(()) => ExitCode::from(EXIT_OK),
        Err(e) => {
            // Not through the logs: RUST_LOG=off must not hide why the process stopped.
            eprintln!("error: {}", e.located(&options.config));
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

async fn serve(options: &Options) -> Result<(), StartError> {
    let config = Config::from_path(&options.config).map_err(StartError::Config)?;
    let deployments = config.deployments.len();
    let guarded = config.master_key.is_some();
    let gateway = build(config, &options.config, None)?;
    let address = format!("{}:{}", options.host, options.port);
    let listener = tokio::net::TcpListener::bind((options.host.as_str(), options.port))
        .await
        .map_err(|source| StartError::Bind { address: address.clone(), source })?;
    let addr = listener.local_addr().map_err(|source| StartError::Bind { address, source })?;

    // Polled once now, so the ctrl-c and SIGTERM handlers are installed before the port is
    // announced: a supervisor that signals right after reading the line gets a graceful stop,
    // not the default action of the signal.
    let mut shutdown = Box::pin(shutdown_signal());
    if shutdown.as_mut().now_or_never().is_some() {
        return Ok(());
    }
    tracing::info!(deployments, master_key = guarded, "loaded {}", options.config.display());
    announce(&addr.to_string(), guarded);
    gateway.serve(listener, shutdown).await.map_err(StartError::Serve)?;
    tracing::info!("stopped");
    Ok(())
}

/// Builds the gateway as `serve` runs it: the HTTP provider with the config's timeouts, the
/// config file for reloads, and `store` when given (else the one the config selects).
pub(crate) fn build(config: Config, path: &Path, store: Option<Arc<StateStore>>) -> Result<Gateway, StartError> {
    let mut provider_config = ProviderConfig::default();
    if let Some(t) = config.timeout {
        provider_config = provider_config.timeout(t);
    }
    if let Some(t) = config.stream_timeout {
        provider_config = provider_config.stream_timeout(t);
    }
    let provider = HttpProvider::new(provider_config).map_err(StartError::Provider)?;
    let mut builder = Gateway::builder(config).provider(provider).config_path(path);
    if let Some(store) = store {
        builder = builder.store(store);
    }
    builder.build().map_err(StartError::Gateway)
}

/// The line scripts and tests wait for (the bound address, also when `--port 0` picked it), and
/// a request to try.
fn announce(addr: &str, guarded: bool) {
    let auth = if guarded { " -H \"authorization: Bearer $MASTER_KEY\"" } else { "" };
    let mut out = io::stdout().lock();
    // A closed stdout (a supervisor that does not read it) must not stop the gateway.
    let _ = writeln!(out, "listening on http://{addr}");
    let _ = writeln!(
        out,
        "try: curl http://{addr}/v1/chat/completions{auth} -H 'content-type: application/json' \
         -d '{{\"model\": \"<model group>\", \"messages\": [{{\"role\": \"user\", \"content\": \"hi\"}}]}}'"
    );
    let _ = out.flush();
}
