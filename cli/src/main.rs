//! `switchyard`: the gateway as a command. `switchyard serve` runs the OpenAI-compatible gateway
//! on a LiteLLM proxy config; `switchyard check` loads and validates one and prints what would be
//! served. Flags, environment variables and exit codes: `docs/gateway.md#the-switchyard-command`.

mod check;
mod serve;
mod summary;

use std::{io::IsTerminal, path::PathBuf, process::ExitCode};

use clap::{Args, CommandFactory, Parser, Subcommand, error::ErrorKind};
use tracing_subscriber::{EnvFilter, layer::SubscriberExt, util::SubscriberInitExt};

/// The process ended as asked: a check that passed, a gateway that shut down gracefully.
const EXIT_OK: u8 = 0;
/// The config does not load or is invalid, or the gateway could not start or stopped on an error.
const EXIT_FAILURE: u8 = 1;
/// The command line is wrong (clap's own code for usage errors).
const EXIT_USAGE: u8 = 2;

/// LiteLLM's name for the config file's environment variable, read when neither `--config` nor
/// `SWITCHYARD_CONFIG` is given.
const LITELLM_CONFIG_ENV: &str = "CONFIG_FILE_PATH";

/// An LLM request router that serves your LiteLLM proxy config.
#[derive(Debug, Parser)]
#[command(
    name = "switchyard",
    version,
    propagate_version = true,
    arg_required_else_help = true,
    long_about = "An LLM request router that serves your LiteLLM proxy config.\n\n\
        `switchyard serve` runs the OpenAI-compatible gateway (chat completions, completions, \
        embeddings, Anthropic's /v1/messages and OpenAI's /v1/responses, each routed to any \
        vendor); `switchyard check` validates a config and prints what it would serve.",
    after_help = "Docs: docs/gateway.md (endpoints, flags, exit codes), docs/config.md (the keys)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands' names, for errors raised after parsing.
const SERVE: &str = "serve";
const CHECK: &str = "check";

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the gateway until ctrl-c or SIGTERM (SIGHUP reloads the config)
    #[command(long_about = "Serve the gateway until ctrl-c or SIGTERM.\n\n\
        Prints `listening on http://<address>` once the port is bound. SIGHUP or \
        `POST /router/reload` re-reads the config file; ctrl-c or SIGTERM stop accepting \
        connections, let requests in flight finish (up to 30 s), then exit 0. Logs go to stderr, \
        filtered by RUST_LOG (default `info`).")]
    Serve(ServeArgs),
    /// Validate a config and print what would be served, with every warning
    #[command(long_about = "Validate a config and print what would be served, with every warning.\n\n\
        Loads the config as `serve` does and builds the gateway without binding a port or \
        connecting to Redis, then prints the model groups with their deployments, the aliases, \
        the fallbacks, the router settings and the ignored keys. Exits 1 when the config does \
        not load, naming the offending key.")]
    Check(CheckArgs),
}

/// Where the config file is.
#[derive(Debug, Args)]
struct ConfigArg {
    /// The LiteLLM proxy config file (`model_list`, `router_settings`, `litellm_settings`,
    /// `general_settings`); falls back to CONFIG_FILE_PATH, as LiteLLM does
    #[arg(short, long, value_name = "PATH", env = "SWITCHYARD_CONFIG")]
    config: Option<PathBuf>,
}

impl ConfigArg {
    /// `--config`, else `SWITCHYARD_CONFIG`, else LiteLLM's `CONFIG_FILE_PATH`; the error
    /// shows the usage of `subcommand`.
    fn resolve(self, subcommand: &str) -> Result<PathBuf, clap::Error> {
        self.config
            .or_else(|| std::env::var_os(LITELLM_CONFIG_ENV).filter(|v| !v.is_empty()).map(PathBuf::from))
            .ok_or_else(|| {
                let mut cli = Cli::command();
                // Building sets the subcommands' names as their usage lines print them.
                cli.build();
                let message = "the config file is required: --config <PATH>, SWITCHYARD_CONFIG or CONFIG_FILE_PATH";
                match cli.find_subcommand_mut(subcommand) {
                    Some(cmd) => cmd.error(ErrorKind::MissingRequiredArgument, message),
                    None => cli.error(ErrorKind::MissingRequiredArgument, message),
                }
            })
    }
}

/// `switchyard serve`.
#[derive(Debug, Args)]
struct ServeArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// The address to listen on; 0.0.0.0 (LiteLLM's default) listens on every interface
    #[arg(long, value_name = "ADDRESS", env = "SWITCHYARD_HOST", default_value = "127.0.0.1")]
    host: String,
    /// The port to listen on; 0 picks a free one (the address is printed)
    #[arg(short, long, value_name = "PORT", env = "SWITCHYARD_PORT", default_value_t = 4000)]
    port: u16,
}

/// `switchyard check`.
#[derive(Debug, Args)]
struct CheckArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Print one JSON document instead of text (also on failure, with `"ok": false`)
    #[arg(long)]
    json: bool,
    /// Fail (exit 1) when the config has warnings, such as ignored keys
    #[arg(long)]
    deny_warnings: bool,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    match cli.command {
        Command::Serve(args) => {
            let config = match args.config.resolve(SERVE) {
                Ok(path) => path,
                Err(e) => return clap_exit(&e),
            };
            let options = serve::Options { config, host: args.host, port: args.port };
            serve::run(options)
        }
        Command::Check(args) => {
            let config = match args.config.resolve(CHECK) {
                Ok(path) => path,
                Err(e) => return clap_exit(&e),
            };
            let options = check::Options { config, json: args.json, deny_warnings: args.deny_warnings };
            check::run(&options)
        }
    }
}

/// Prints a clap error (or the help and version texts, which clap reports as errors) and picks
/// the exit code: 0 for `--help` and `--version`, 2 for a wrong command line.
fn clap_exit(e: &clap::Error) -> ExitCode {
    // Printing to a closed pipe is not worth a panic or another message.
    let _ = e.print();
    if e.use_stderr() { ExitCode::from(EXIT_USAGE) } else { ExitCode::from(EXIT_OK) }
}

/// Logs to stderr in tracing's text format, filtered by `RUST_LOG` (else `default_filter`);
/// with the `otel` feature and `OTEL_EXPORTER_OTLP_ENDPOINT` set, spans are also exported. The
/// returned guard flushes the export when dropped.
fn init_logging(default_filter: &str) -> LogGuard {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let logs = tracing_subscriber::registry()
        .with(filter)
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(std::io::stderr().is_terminal()));
    #[cfg(feature = "otel")]
    let (logs, guard) = {
        use switchyard::otel::{self, OtelConfig};
        match OtelConfig::from_env().map(otel::layer).transpose() {
            Ok(Some((layer, guard))) => (logs.with(Some(layer)), Some(guard)),
            Ok(None) => (logs.with(None), None),
            Err(e) => {
                eprintln!("warning: OpenTelemetry export is off: {e}");
                (logs.with(None), None)
            }
        }
    };
    logs.init();
    #[cfg(feature = "otel")]
    return LogGuard { _otel: guard };
    #[cfg(not(feature = "otel"))]
    LogGuard {}
}

/// Keeps what logging needs until the process ends (the OpenTelemetry exporter, which flushes
/// its last spans when dropped).
#[derive(Debug)]
struct LogGuard {
    #[cfg(feature = "otel")]
    _otel: Option<switchyard::otel::OtelGuard>,
}
