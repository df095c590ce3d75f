//! The mock upstream as a standalone process, for the HTTP benchmarks (`scripts/bench-http`).
//!
//! ```text
//! cargo run --release --example mock_upstream -- [--port 0] [--latency-ms 0] [--scenario NAME] [flags]
//! ```
//!
//! It serves the services crate's [`MockUpstream`] (OpenAI-compatible chat completions and
//! embeddings, whole or streamed) on `127.0.0.1`, prints the port it listens on as the first line
//! of stdout, and serves until it is killed. One current-thread Tokio runtime: pin it to a core
//! with `taskset`.
//!
//! Latency and failures come from [`MockProfile`]. Three behaviours are driven by this binary
//! around the profile, and say so:
//!
//! - `--fail-first N` serves a failing profile until N requests have arrived, then the same
//!   profile without failures ([`MockHandle::set_profile`]; the switch is made by a task that
//!   polls the request count every millisecond, so a request arriving within that millisecond
//!   may fail too);
//! - `--flap-ms N` alternates every N ms between the failing profile and the same profile
//!   without failures (starting failing);
//! - `--reset` resets every connection (`MockProfile::reset`): the mock closes it with the
//!   request unread, so the client sees a connection reset (`ECONNRESET`) before any answer.
//!
//! Scenarios (`--scenario NAME`, the L3 failure profiles; flags given after it refine it):
//!
//! | name | profile |
//! |---|---|
//! | `healthy` | answers after `--latency-ms` |
//! | `rate-limit` | every request: 429 with `Retry-After: 1` |
//! | `error-500-once` | the first request: 500; then healthy (`--fail-first 1`) |
//! | `unavailable` | every request: 503 |
//! | `reset` | every connection reset (`--reset`) |
//! | `malformed-chunk` | streams: a truncated JSON event after 2 content chunks; whole answers: a truncated JSON body |
//! | `missing-done` | streams end cleanly without `data: [DONE]` |
//! | `huge-response` | whole answers of 40 MiB (above the provider's 32 MiB default limit) |
//! | `no-response` | headers never come (a latency of one hour) |
//! | `slow-first-token` | headers and the first chunk after 1.5 s |
//! | `stream-cut` | streams cut after 4 of 8 content chunks |
//! | `stall` | headers, then nothing (`MockProfile::stall`) |
//! | `context-length` | every request: 400 `context_length_exceeded` |
//! | `content-filter` | every request: 400 `content_filter` |
//! | `flapping` | 503 for 1 s, healthy for 1 s, and so on (`--flap-ms 1000`) |

use std::{
    io::Write,
    net::{Ipv4Addr, SocketAddr},
    process::ExitCode,
    time::Duration,
};

use http::StatusCode;
use switchyard::services::{
    mock::{MockHandle, MockProfile, MockUpstream},
    profile::Latency,
};

const USAGE: &str = "usage: mock_upstream [--port N] [--latency-ms N] [--latency-p99-ms N] [--scenario NAME]
  [--chunks N] [--chunk-interval-ms N] [--fail-rate R] [--fail-status S] [--retry-after-ms N]
  [--error-code CODE] [--fail-first N] [--flap-ms N] [--stall-rate R] [--stream-cut-after N]
  [--stream-cut-rate R] [--malformed-after N] [--malformed-rate R] [--missing-done-rate R]
  [--huge-bytes N] [--no-response] [--reset] [--seed N]";

/// A scenario's one-hour latency: the answer's headers never come in any benchmark.
const NEVER: Duration = Duration::from_secs(3600);

#[derive(Debug)]
struct Args {
    port: u16,
    latency_ms: u64,
    latency_p99_ms: Option<u64>,
    chunks: u32,
    chunk_interval_ms: u64,
    fail_rate: f64,
    fail_status: u16,
    retry_after_ms: Option<u64>,
    error_code: Option<String>,
    fail_first: Option<u64>,
    flap_ms: Option<u64>,
    stall_rate: f64,
    cut_after: u32,
    cut_rate: f64,
    malformed_after: u32,
    malformed_rate: f64,
    missing_done_rate: f64,
    huge_bytes: Option<usize>,
    no_response: bool,
    reset: bool,
    seed: u64,
}

impl Default for Args {
    fn default() -> Self {
        Self {
            port: 0,
            latency_ms: 0,
            latency_p99_ms: None,
            chunks: 8,
            chunk_interval_ms: 10,
            fail_rate: 0.0,
            fail_status: 500,
            retry_after_ms: None,
            error_code: None,
            fail_first: None,
            flap_ms: None,
            stall_rate: 0.0,
            cut_after: 0,
            cut_rate: 0.0,
            malformed_after: 0,
            malformed_rate: 0.0,
            missing_done_rate: 0.0,
            huge_bytes: None,
            no_response: false,
            reset: false,
            seed: 1,
        }
    }
}

impl Args {
    /// Sets the fields of a named scenario.
    fn scenario(&mut self, name: &str) -> Result<(), String> {
        match name {
            "healthy" => {}
            "rate-limit" => {
                (self.fail_rate, self.fail_status, self.retry_after_ms) = (1.0, 429, Some(1000));
            }
            "error-500-once" => (self.fail_rate, self.fail_status, self.fail_first) = (1.0, 500, Some(1)),
            "unavailable" => (self.fail_rate, self.fail_status) = (1.0, 503),
            "reset" => self.reset = true,
            "no-response" => self.no_response = true,
            "slow-first-token" => self.latency_ms = 1500,
            "stream-cut" => (self.cut_after, self.cut_rate) = (4, 1.0),
            "stall" => self.stall_rate = 1.0,
            "malformed-chunk" => (self.malformed_after, self.malformed_rate) = (2, 1.0),
            "missing-done" => self.missing_done_rate = 1.0,
            "huge-response" => self.huge_bytes = Some(40 << 20),
            "context-length" => {
                (self.fail_rate, self.fail_status) = (1.0, 400);
                self.error_code = Some("context_length_exceeded".to_owned());
            }
            "content-filter" => {
                (self.fail_rate, self.fail_status) = (1.0, 400);
                self.error_code = Some("content_filter".to_owned());
            }
            "flapping" => (self.fail_rate, self.fail_status, self.flap_ms) = (1.0, 503, Some(1000)),
            other => return Err(format!("unknown scenario `{other}`")),
        }
        Ok(())
    }

    /// The profile to serve, and the same profile without injected failures.
    fn profiles(&self) -> Result<(MockProfile, MockProfile), String> {
        let latency = if self.no_response {
            Latency::fixed(NEVER)
        } else {
            match self.latency_p99_ms {
                Some(p99) => Latency::log_normal(ms(self.latency_ms), ms(p99)),
                None => Latency::fixed(ms(self.latency_ms)),
            }
        };
        let status = StatusCode::from_u16(self.fail_status).map_err(|e| format!("--fail-status: {e}"))?;
        let mut b = MockProfile::builder()
            .seed(self.seed)
            .latency(latency)
            .chunks(self.chunks)
            .chunk_interval(Latency::fixed(ms(self.chunk_interval_ms)))
            .stall(self.stall_rate)
            .stream_cut(self.cut_after, self.cut_rate)
            .malformed_chunk(self.malformed_after, self.malformed_rate)
            .missing_done(self.missing_done_rate)
            .reset(if self.reset { 1.0 } else { 0.0 })
            .fail_status(status, self.fail_rate);
        if let Some(bytes) = self.huge_bytes {
            b = b.huge_response(bytes);
        }
        if let Some(after) = self.retry_after_ms {
            b = b.retry_after(ms(after));
        }
        if let Some(code) = &self.error_code {
            b = b.error_code(code.clone());
        }
        let failing = b.build().map_err(|e| e.to_string())?;
        let healthy = failing.to_builder().fail_status(status, 0.0).build().map_err(|e| e.to_string())?;
        Ok((failing, healthy))
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args::default();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        macro_rules! num {
            () => {{
                let v = value()?;
                v.parse().map_err(|e| format!("{flag} `{v}`: {e}"))?
            }};
        }
        match flag.as_str() {
            "--port" => a.port = num!(),
            "--latency-ms" => a.latency_ms = num!(),
            "--latency-p99-ms" => a.latency_p99_ms = Some(num!()),
            "--scenario" => a.scenario(&value()?)?,
            "--chunks" => a.chunks = num!(),
            "--chunk-interval-ms" => a.chunk_interval_ms = num!(),
            "--fail-rate" => a.fail_rate = num!(),
            "--fail-status" => a.fail_status = num!(),
            "--retry-after-ms" => a.retry_after_ms = Some(num!()),
            "--error-code" => a.error_code = Some(value()?),
            "--fail-first" => {
                a.fail_first = Some(num!());
                a.fail_rate = 1.0;
            }
            "--flap-ms" => a.flap_ms = Some(num!()),
            "--stall-rate" => a.stall_rate = num!(),
            "--stream-cut-after" => a.cut_after = num!(),
            "--stream-cut-rate" => a.cut_rate = num!(),
            "--malformed-after" => a.malformed_after = num!(),
            "--malformed-rate" => a.malformed_rate = num!(),
            "--missing-done-rate" => a.missing_done_rate = num!(),
            "--huge-bytes" => a.huge_bytes = Some(num!()),
            "--no-response" => a.no_response = true,
            "--reset" => a.reset = true,
            "--seed" => a.seed = num!(),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown flag `{other}`")),
        }
    }
    if a.flap_ms == Some(0) {
        return Err("--flap-ms must be at least 1".into());
    }
    Ok(a)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("{e}");
            }
            eprintln!("{USAGE}");
            return if e.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(2) };
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mock_upstream: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    let (failing, healthy) = args.profiles()?;
    let start = if args.fail_first == Some(0) { healthy.clone() } else { failing.clone() };
    let mock = MockUpstream::start_on(addr, start)?;
    announce(mock.addr().port())?;
    eprintln!("mock_upstream: {} ({args:?})", mock.base_url());
    if let Some(n) = args.fail_first.filter(|n| *n > 0) {
        while mock.requests() < n {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        mock.set_profile(healthy.clone());
        eprintln!("mock_upstream: {n} request(s) failed, healthy from now on");
    }
    if let Some(period) = args.flap_ms {
        flap(&mock, failing, healthy, Duration::from_millis(period)).await;
    }
    std::future::pending::<()>().await;
    Ok(())
}

fn announce(port: u16) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{port}")?;
    out.flush()
}

/// Alternates between the failing and the healthy profile, forever.
async fn flap(mock: &MockHandle, failing: MockProfile, healthy: MockProfile, period: Duration) {
    let mut tick = tokio::time::interval(period);
    tick.tick().await;
    let mut failing_now = true;
    loop {
        tick.tick().await;
        failing_now = !failing_now;
        mock.set_profile(if failing_now { failing.clone() } else { healthy.clone() });
    }
}
