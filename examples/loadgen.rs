//! Switchyard's open-loop HTTP load generator, for `scripts/bench-http`.
//!
//! ```text
//! cargo run --release --example loadgen -- --url http://127.0.0.1:4000/v1/chat/completions \
//!     --rate 5000 --duration 10 [--warmup 2] [--stream] [--connections N] [--out runs.jsonl]
//! ```
//!
//! **Open loop, free of coordinated omission** (as `wrk2`, unlike `wrk`): request `i` has an
//! intended send time `start + i / rate` on a fixed schedule, set by a pacing thread that does
//! not care whether earlier requests have returned, and its latency is measured from that
//! intended time to the last byte of the answer. A server that stalls for 100 ms therefore shows
//! the 100 ms on every request that should have been sent meanwhile, instead of silently sending
//! fewer requests (what a closed-loop tool such as `wrk` does: each connection waits for its
//! answer before sending again, so a slow server slows the load and hides its own latency).
//!
//! Requests go over a pool of keep-alive HTTP/1.1 connections (hyper), opened when every open one
//! is busy, up to `--connections` (default `rate / 5 + 32`, at most 8,192: enough for 200 ms of
//! latency at the rate). When the pool is exhausted, requests wait in a queue (the wait counts in their latency);
//! one that is still queued at its timeout is counted as `backlog_timeout`. Each request's
//! timeout runs from its intended time.
//!
//! One current-thread Tokio runtime plus the pacing thread: it drives well over 10,000 requests
//! per second from one core. Output: one JSON line (stdout, and appended to `--out`) with the
//! rate, counts, errors by kind, the achieved rate and latency percentiles in µs (hdrhistogram).
//! The achieved rate is the successful answers over the time the target took to serve the
//! window: the window itself, or longer when the last answers came later than the median latency
//! after its end (a target that falls behind). `p50_by_tenth_us` is the median latency of each
//! tenth of the window: it rises through the window when the target falls behind.

use std::{
    collections::{BTreeMap, VecDeque},
    io::Write,
    net::{SocketAddr, ToSocketAddrs},
    path::PathBuf,
    process::ExitCode,
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http::{HeaderName, HeaderValue, Request, Uri, header};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::mpsc;

const USAGE: &str = "usage: loadgen --url URL --rate N [--duration S | --requests N] [--warmup S]
  [--connections N] [--timeout-ms N] [--stream] [--model NAME] [--body JSON] [--header 'name: value']...
  [--count-header NAME]... [--meta JSON] [--out PATH]";

type Conn = SendRequest<Full<Bytes>>;

struct Args {
    url: Uri,
    rate: f64,
    duration: f64,
    requests: Option<u64>,
    warmup: f64,
    connections: Option<usize>,
    timeout: Duration,
    stream: bool,
    model: String,
    body: Option<String>,
    headers: Vec<(HeaderName, HeaderValue)>,
    count_headers: Vec<HeaderName>,
    meta: Option<Value>,
    out: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut url = None;
    let mut a = Args {
        url: Uri::from_static("http://127.0.0.1/"),
        rate: 0.0,
        duration: 10.0,
        requests: None,
        warmup: 0.0,
        connections: None,
        timeout: Duration::from_secs(10),
        stream: false,
        model: "gpt-4o".to_owned(),
        body: None,
        headers: Vec::new(),
        count_headers: Vec::new(),
        meta: None,
        out: None,
    };
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
            "--url" => url = Some(value()?.parse::<Uri>().map_err(|e| format!("--url: {e}"))?),
            "--rate" => a.rate = num!(),
            "--duration" => a.duration = num!(),
            "--requests" => a.requests = Some(num!()),
            "--warmup" => a.warmup = num!(),
            "--connections" => a.connections = Some(num!()),
            "--timeout-ms" => a.timeout = Duration::from_millis(num!()),
            "--stream" => a.stream = true,
            "--model" => a.model = value()?,
            "--body" => a.body = Some(value()?),
            "--header" => {
                let v = value()?;
                let (name, val) = v.split_once(':').ok_or_else(|| format!("--header `{v}`: want `name: value`"))?;
                let name = HeaderName::try_from(name.trim()).map_err(|e| format!("--header `{v}`: {e}"))?;
                let val = HeaderValue::try_from(val.trim()).map_err(|e| format!("--header `{v}`: {e}"))?;
                a.headers.push((name, val));
            }
            "--count-header" => {
                let v = value()?;
                a.count_headers.push(HeaderName::try_from(v.as_str()).map_err(|e| format!("--count-header: {e}"))?);
            }
            "--meta" => {
                let v: Value = serde_json::from_str(&value()?).map_err(|e| format!("--meta: {e}"))?;
                if !v.is_object() {
                    return Err("--meta must be a JSON object".into());
                }
                a.meta = Some(v);
            }
            "--out" => a.out = Some(PathBuf::from(value()?)),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown flag `{other}`")),
        }
    }
    a.url = url.ok_or("--url is required")?;
    if a.url.scheme_str() != Some("http") {
        return Err("--url must be http://".into());
    }
    if !(a.rate.is_finite() && a.rate > 0.0) {
        return Err("--rate must be > 0".into());
    }
    if !(a.duration.is_finite() && a.duration > 0.0 && a.warmup.is_finite() && a.warmup >= 0.0) {
        return Err("--duration must be > 0 and --warmup >= 0".into());
    }
    if a.connections == Some(0) {
        return Err("--connections must be at least 1".into());
    }
    Ok(a)
}

/// What the request tasks share.
struct Target {
    addr: SocketAddr,
    path: Uri,
    host: HeaderValue,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Bytes,
    stream: bool,
    timeout: Duration,
    count_headers: Vec<HeaderName>,
}

/// How one request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Ok,
    Status(u16),
    Timeout,
    Connect,
    Connection,
    Body,
    StreamIncomplete,
    BacklogTimeout,
}

impl Outcome {
    fn kind(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Status(s) if (400..500).contains(&s) => "status_4xx",
            Self::Status(s) if (500..600).contains(&s) => "status_5xx",
            Self::Status(_) => "status_other",
            Self::Timeout => "timeout",
            Self::Connect => "connect",
            Self::Connection => "connection",
            Self::Body => "body",
            Self::StreamIncomplete => "stream_incomplete",
            Self::BacklogTimeout => "backlog_timeout",
        }
    }
}

struct Done {
    index: u64,
    conn: Option<Conn>,
    outcome: Outcome,
    status: Option<u16>,
    finished: Instant,
    /// When the request was written (after any queueing and connecting).
    sent: Option<Instant>,
    first_byte: Option<Instant>,
    headers: Vec<Option<String>>,
}

/// The fixed schedule: request `i` is due at `start + i / rate`.
#[derive(Clone, Copy)]
struct Schedule {
    start: Instant,
    nanos_per_request: f64,
    warmup: u64,
    total: u64,
}

impl Schedule {
    fn at(&self, i: u64) -> Instant {
        self.start + Duration::from_nanos((i as f64 * self.nanos_per_request) as u64)
    }

    fn measured(&self, i: u64) -> bool {
        i >= self.warmup
    }
}

fn main() -> ExitCode {
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
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loadgen: {e}");
            ExitCode::FAILURE
        }
    }
}

fn body(args: &Args) -> Result<Bytes, String> {
    let mut v: Value = match &args.body {
        Some(b) => serde_json::from_str(b).map_err(|e| format!("--body: {e}"))?,
        None => json!({
            "model": args.model,
            "messages": [{"role": "user", "content": "Say hello."}],
        }),
    };
    if args.stream {
        v["stream"] = Value::Bool(true);
    }
    Ok(Bytes::from(serde_json::to_vec(&v).map_err(|e| e.to_string())?))
}

/// Latency statistics in µs.
struct Stats {
    hist: Histogram<u64>,
}

impl Stats {
    fn new() -> Self {
        Self { hist: Histogram::new(3).expect("3 significant figures is valid") }
    }

    fn record(&mut self, d: Duration) {
        let _ = self.hist.record(u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1));
    }

    fn json(&self) -> Value {
        let h = &self.hist;
        if h.is_empty() {
            return Value::Null;
        }
        json!({
            "count": h.len(),
            "min": h.min(),
            "mean": (h.mean() * 10.0).round() / 10.0,
            "p50": h.value_at_quantile(0.5),
            "p90": h.value_at_quantile(0.9),
            "p99": h.value_at_quantile(0.99),
            "p99_9": h.value_at_quantile(0.999),
            "max": h.max(),
        })
    }
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let authority = args.url.authority().ok_or("--url needs a host")?.clone();
    let port = authority.port_u16().unwrap_or(80);
    let addr = (authority.host(), port).to_socket_addrs()?.next().ok_or("--url: host not found")?;
    let path: Uri = args.url.path_and_query().map_or("/", |p| p.as_str()).parse()?;
    let target = Arc::new(Target {
        addr,
        path,
        host: HeaderValue::from_str(authority.as_str())?,
        headers: args.headers.clone(),
        body: body(&args)?,
        stream: args.stream,
        timeout: args.timeout,
        count_headers: args.count_headers.clone(),
    });

    let warmup = (args.rate * args.warmup).round() as u64;
    let measured = args.requests.unwrap_or_else(|| (args.rate * args.duration).round().max(1.0) as u64);
    let schedule = Schedule {
        start: Instant::now() + Duration::from_millis(50),
        nanos_per_request: 1e9 / args.rate,
        warmup,
        total: warmup + measured,
    };

    // The requests run on a current-thread runtime on a second thread; this thread paces them.
    let (due_tx, due_rx) = mpsc::unbounded_channel::<u64>();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let driver = std::thread::Builder::new()
        .name("loadgen-io".to_owned())
        .spawn(move || runtime.block_on(drive(args, target, schedule, measured, due_rx)))?;
    pace(schedule, &due_tx);
    drop(due_tx);
    driver.join().map_err(|_| "the request thread panicked")?.map_err(|e| e as Box<dyn std::error::Error>)
}

/// Announces how many requests are due, on time, whatever happens to them.
fn pace(schedule: Schedule, due_tx: &mpsc::UnboundedSender<u64>) {
    // The main thread's timer slack (50 µs by default) delays every wake-up; ask for none.
    let _ = std::fs::write("/proc/self/timerslack_ns", "1");
    let mut due = 0;
    while due < schedule.total {
        let next = schedule.at(due);
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        let now = Instant::now();
        while due < schedule.total && schedule.at(due) <= now {
            due += 1;
        }
        if due_tx.send(due).is_err() {
            return;
        }
    }
}

/// CPU time of this process (every thread), from `/proc/self/stat`, in seconds (Linux, with the
/// usual 100 clock ticks per second).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(11);
    let utime: f64 = fields.next()?.parse().ok()?;
    let stime: f64 = fields.next()?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

async fn drive(
    args: Args,
    target: Arc<Target>,
    schedule: Schedule,
    measured: u64,
    mut due_rx: mpsc::UnboundedReceiver<u64>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let cpu_start = cpu_seconds().unwrap_or(0.0);
    let max_conns = args.connections.unwrap_or_else(|| ((args.rate / 5.0).ceil() as usize + 32).min(8192));
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
    let mut idle: Vec<Conn> = Vec::new();
    let mut backlog: VecDeque<u64> = VecDeque::new();
    let mut opened = 0usize;
    let mut opened_total = 0u64;
    let mut max_open = 0usize;
    let mut in_flight = 0usize;
    let mut max_in_flight = 0usize;
    let mut next = 0u64;
    let mut scheduled_all = false;

    let mut latency = Stats::new();
    // The median latency of each tenth of the window (by intended time): a target that falls
    // behind shows a rising median, before any request times out.
    let mut tenths: Vec<Stats> = (0..10).map(|_| Stats::new()).collect();
    let mut ttfb = Stats::new();
    let mut send_lag = Stats::new();
    let mut kinds: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut statuses: BTreeMap<String, u64> = BTreeMap::new();
    let mut header_counts: Vec<BTreeMap<String, u64>> = vec![BTreeMap::new(); target.count_headers.len()];
    let mut last_finish: Option<Instant> = None;

    let spawn = |index: u64, conn: Option<Conn>| {
        let (target, done_tx) = (target.clone(), done_tx.clone());
        tokio::spawn(async move {
            let done = one(&target, index, schedule.at(index), conn).await;
            let _ = done_tx.send(done);
        });
    };

    loop {
        tokio::select! {
            biased;
            Some(done) = done_rx.recv() => {
                in_flight -= 1;
                if schedule.measured(done.index) {
                    let intended = schedule.at(done.index);
                    *kinds.entry(done.outcome.kind()).or_default() += 1;
                    if let Some(s) = done.status {
                        *statuses.entry(s.to_string()).or_default() += 1;
                    }
                    if let Some(sent) = done.sent {
                        send_lag.record(sent.saturating_duration_since(intended));
                    }
                    if done.outcome == Outcome::Ok {
                        let took = done.finished.saturating_duration_since(intended);
                        latency.record(took);
                        let tenth = (done.index - schedule.warmup) * 10 / measured.max(1);
                        tenths[usize::try_from(tenth).unwrap_or(9).min(9)].record(took);
                        if let Some(fb) = done.first_byte {
                            ttfb.record(fb.saturating_duration_since(intended));
                        }
                    }
                    for (counts, value) in header_counts.iter_mut().zip(done.headers) {
                        *counts.entry(value.unwrap_or_else(|| "(none)".to_owned())).or_default() += 1;
                    }
                    last_finish = Some(last_finish.map_or(done.finished, |l| l.max(done.finished)));
                }
                // Hand the connection (or its slot) to the oldest queued request still in time.
                let mut conn = done.conn;
                if conn.is_none() {
                    opened -= 1;
                }
                let now = Instant::now();
                while let Some(&i) = backlog.front() {
                    backlog.pop_front();
                    if now > schedule.at(i) + target.timeout {
                        if schedule.measured(i) {
                            *kinds.entry(Outcome::BacklogTimeout.kind()).or_default() += 1;
                        }
                        continue;
                    }
                    if conn.is_none() {
                        opened += 1;
                        opened_total += 1;
                        max_open = max_open.max(opened);
                    }
                    in_flight += 1;
                    spawn(i, conn.take());
                    break;
                }
                if let Some(c) = conn {
                    idle.push(c);
                }
            }
            due = due_rx.recv(), if !scheduled_all => {
                let Some(due) = due else {
                    scheduled_all = true;
                    continue;
                };
                while next < due {
                    let i = next;
                    next += 1;
                    if let Some(c) = idle.pop() {
                        in_flight += 1;
                        spawn(i, Some(c));
                    } else if opened < max_conns {
                        opened += 1;
                        opened_total += 1;
                        max_open = max_open.max(opened);
                        in_flight += 1;
                        spawn(i, None);
                    } else {
                        backlog.push_back(i);
                    }
                }
                max_in_flight = max_in_flight.max(in_flight + backlog.len());
                if next >= schedule.total {
                    scheduled_all = true;
                }
            }
        }
        if scheduled_all && in_flight == 0 {
            // Whatever is still queued never found a connection before its timeout.
            for i in backlog.drain(..) {
                if schedule.measured(i) {
                    *kinds.entry(Outcome::BacklogTimeout.kind()).or_default() += 1;
                }
            }
            break;
        }
    }

    let ok = kinds.get("ok").copied().unwrap_or(0);
    let errors: BTreeMap<&str, u64> = kinds.iter().filter(|(k, _)| **k != "ok").map(|(k, v)| (*k, *v)).collect();
    let error_total: u64 = errors.values().sum();
    let window_start = schedule.at(schedule.warmup);
    let window = schedule.at(schedule.total).saturating_duration_since(window_start).as_secs_f64();
    // The time the target took to serve the window: the window, or longer when the last answers
    // came later than the median latency after it (a target falling behind).
    let median = Duration::from_micros(if latency.hist.is_empty() { 0 } else { latency.hist.value_at_quantile(0.5) });
    let elapsed = last_finish
        .map_or(window, |l| l.saturating_duration_since(window_start).saturating_sub(median).as_secs_f64().max(window));
    let mut out = json!({
        "url": args.url.to_string(),
        "target_rate": args.rate,
        "duration_s": window,
        "warmup_s": args.warmup,
        "stream": args.stream,
        "timeout_ms": args.timeout.as_millis() as u64,
        "connections_max": max_conns,
        "connections_opened": opened_total,
        "connections_peak": max_open,
        "max_outstanding": max_in_flight,
        "scheduled": measured,
        "ok": ok,
        "errors_total": error_total,
        "errors": errors,
        "status_counts": statuses,
        "elapsed_s": (elapsed * 1000.0).round() / 1000.0,
        "achieved_rate": (ok as f64 / elapsed * 10.0).round() / 10.0,
        "latency_us": latency.json(),
        "p50_by_tenth_us": tenths
            .iter()
            .map(|t| if t.hist.is_empty() { Value::Null } else { json!(t.hist.value_at_quantile(0.5)) })
            .collect::<Vec<_>>(),
        "ttfb_us": if args.stream { ttfb.json() } else { Value::Null },
        "send_lag_us": send_lag.json(),
    });
    if !target.count_headers.is_empty() {
        let h: serde_json::Map<String, Value> = target
            .count_headers
            .iter()
            .zip(header_counts)
            .map(|(name, counts)| (name.as_str().to_owned(), json!(counts)))
            .collect();
        out["headers"] = Value::Object(h);
    }
    if let (Some(Value::Object(meta)), Value::Object(o)) = (&args.meta, &mut out) {
        for (k, v) in meta {
            o.insert(k.clone(), v.clone());
        }
    }
    if let Some(cpu) = cpu_seconds() {
        out["loadgen_cpu_s"] = json!(((cpu - cpu_start) * 100.0).round() / 100.0);
    }
    let line = serde_json::to_string(&out)?;
    println!("{line}");
    if let Some(path) = &args.out {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        writeln!(f, "{line}")?;
    }
    Ok(())
}

async fn connect(addr: SocketAddr) -> Option<Conn> {
    let stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let _ = stream.set_nodelay(true);
    let (sender, conn) = http1::handshake(TokioIo::new(stream)).await.ok()?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Some(sender)
}

/// Sends request `index` (on `conn`, or on a new connection) and reads its answer to the end.
async fn one(t: &Target, index: u64, intended: Instant, conn: Option<Conn>) -> Done {
    let mut done = Done {
        index,
        conn: None,
        outcome: Outcome::Timeout,
        status: None,
        finished: intended,
        sent: None,
        first_byte: None,
        headers: vec![None; t.count_headers.len()],
    };
    let deadline = tokio::time::Instant::from_std(intended + t.timeout);
    let _ = tokio::time::timeout_at(deadline, exchange(t, conn, &mut done)).await;
    done.finished = Instant::now();
    done
}

async fn exchange(t: &Target, conn: Option<Conn>, done: &mut Done) {
    // A kept-alive connection the server closed meanwhile is replaced, not counted as an error.
    let mut reuse = conn;
    if let Some(c) = reuse.as_mut()
        && c.ready().await.is_err()
    {
        reuse = None;
    }
    let mut sender = match reuse {
        Some(c) => c,
        None => match connect(t.addr).await {
            Some(c) => c,
            None => {
                done.outcome = Outcome::Connect;
                return;
            }
        },
    };
    let mut req = Request::post(t.path.clone()).body(Full::new(t.body.clone())).expect("a valid request");
    let h = req.headers_mut();
    h.insert(header::HOST, t.host.clone());
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in &t.headers {
        h.insert(name.clone(), value.clone());
    }
    done.sent = Some(Instant::now());
    done.outcome = Outcome::Timeout;
    let resp = match sender.send_request(req).await {
        Ok(r) => r,
        Err(_) => {
            done.outcome = Outcome::Connection;
            return;
        }
    };
    let status = resp.status();
    done.status = Some(status.as_u16());
    for (slot, name) in done.headers.iter_mut().zip(&t.count_headers) {
        *slot = resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    }
    let mut body = resp.into_body();
    // The last bytes of a stream, to check that it ended with `data: [DONE]`.
    let mut tail: Vec<u8> = Vec::new();
    loop {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    if done.first_byte.is_none() && !data.is_empty() {
                        done.first_byte = Some(Instant::now());
                    }
                    if t.stream {
                        tail.extend_from_slice(data);
                        if tail.len() > 64 {
                            tail.drain(..tail.len() - 64);
                        }
                    }
                }
            }
            Some(Err(_)) => {
                done.outcome = Outcome::Body;
                return;
            }
            None => break,
        }
    }
    done.conn = Some(sender);
    done.outcome = if !status.is_success() {
        Outcome::Status(status.as_u16())
    } else if t.stream && !trimmed(&tail).ends_with(b"data: [DONE]") {
        Outcome::StreamIncomplete
    } else {
        Outcome::Ok
    };
}

fn trimmed(b: &[u8]) -> &[u8] {
    let end = b.iter().rposition(|c| !c.is_ascii_whitespace()).map_or(0, |p| p + 1);
    &b[..end]
}
