//! `switchyard check`: load and validate a config as `serve` would, and report what it would
//! serve, as text or as one JSON document.

use std::{
    io::{self, Write},
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Arc,
};

use serde::Serialize;
use switchyard::{Config, StateStore, config::ConfigErrorKind};

use crate::{
    EXIT_FAILURE, EXIT_OK,
    serve::StartError,
    summary::{Summary, count},
};

/// What `check` was asked to do.
#[derive(Debug)]
pub(crate) struct Options {
    pub(crate) config: PathBuf,
    pub(crate) json: bool,
    pub(crate) deny_warnings: bool,
}

/// The `--json` document: `ok`, the file, the error when there is one, and the summary when the
/// config loaded.
#[derive(Debug, Serialize)]
struct Report<'a> {
    ok: bool,
    config: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorView>,
    #[serde(flatten)]
    summary: Option<&'a Summary>,
}

/// Why the check failed: `kind` is the loader's (`yaml`, `type`, `env`, `invalid`, `io`), or
/// `gateway` (the gateway refused the config) or `warnings` (under `--deny-warnings`); `path`
/// names the offending key when the loader knows it.
#[derive(Debug, Serialize)]
struct ErrorView {
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    message: String,
}

impl ErrorView {
    fn of(e: &StartError) -> Self {
        match e.config_error() {
            Some(c) => Self {
                kind: kind_name(c.kind()),
                path: Some(c.path().to_owned()).filter(|p| !p.is_empty()),
                message: c.message().to_owned(),
            },
            None => Self { kind: "gateway", path: None, message: e.to_string() },
        }
    }
}

fn kind_name(kind: ConfigErrorKind) -> &'static str {
    match kind {
        ConfigErrorKind::Yaml => "yaml",
        ConfigErrorKind::Type => "type",
        ConfigErrorKind::Env => "env",
        ConfigErrorKind::Invalid => "invalid",
        ConfigErrorKind::Io => "io",
        _ => "config",
    }
}

/// Runs `check`: exit 0 when the config would be served, 1 when it would not (or has warnings
/// under `--deny-warnings`).
pub(crate) fn run(options: &Options) -> ExitCode {
    // The warnings are part of the report; at the default level the loader's log lines would
    // print them a second time.
    let _logs = crate::init_logging("error");
    let loaded = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(StartError::Runtime)
        .and_then(|rt| rt.block_on(async { load(&options.config) }));
    let failure = match &loaded {
        Err(e) => Some(ErrorView::of(e)),
        Ok(summary) if options.deny_warnings && !summary.warnings.is_empty() => Some(ErrorView {
            kind: "warnings",
            path: None,
            message: format!("{} (--deny-warnings)", count(summary.warnings.len(), "warning")),
        }),
        Ok(_) => None,
    };
    let shown = options.config.display().to_string();
    // A closed stdout (`| head`) ends the output early; the exit code still tells the result.
    let mut out = io::stdout().lock();
    if options.json {
        let report = Report { ok: failure.is_none(), config: shown, error: failure, summary: loaded.as_ref().ok() };
        let ok = report.ok;
        match serde_json::to_string_pretty(&report) {
            Ok(text) => {
                let _ = writeln!(out, "{text}");
            }
            Err(e) => {
                eprintln!("error: cannot write the report: {e}");
                return ExitCode::from(EXIT_FAILURE);
            }
        }
        return ExitCode::from(if ok { EXIT_OK } else { EXIT_FAILURE });
    }
    match (&loaded, failure) {
        (Err(e), _) => {
            eprintln!("error: {}", e.located(&options.config));
            ExitCode::from(EXIT_FAILURE)
        }
        (Ok(summary), failure) => {
            let verdict = if failure.is_some() { "refused" } else { "valid" };
            let _ = writeln!(
                out,
                "{shown}: {verdict}: {}, {}, {}\n\n{summary}",
                count(summary.model_groups.len(), "model group"),
                count(summary.deployments(), "deployment"),
                count(summary.warnings.len(), "warning"),
            );
            let _ = out.flush();
            match failure {
                Some(f) => {
                    eprintln!("error: {shown}: {}", f.message);
                    ExitCode::from(EXIT_FAILURE)
                }
                None => ExitCode::from(EXIT_OK),
            }
        }
    }
}

/// Loads the config and builds the gateway exactly as `serve` does, but on an in-memory state
/// store (no connection to Redis: its settings are checked without it) and without binding.
fn load(path: &Path) -> Result<Summary, StartError> {
    let config = Config::from_path(path).map_err(StartError::Config)?;
    if cfg!(not(feature = "redis")) && config.redis.is_some() {
        return Err(StartError::NoRedis);
    }
    let summary = Summary::of(&config).map_err(StartError::Config)?;
    crate::serve::build(config, path, Some(Arc::new(StateStore::memory())))?;
    Ok(summary)
}
