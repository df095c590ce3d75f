//! The demo: the whole gateway over HTTP, in one process, with no external service.
//!
//! ```text
//! cargo run --release --example demo -- [--requests 20000] [--concurrency 64] [--strategy NAME] [--seed N] [--serve]
//! ```
//!
//! It starts mock upstreams on 127.0.0.1 (healthy, slow, flaky with 30% 5xx, rate limited with
//! 429 + Retry-After, a deployment that is down, a fallback group, and a `claude` group on a mock
//! that speaks Anthropic's Messages API, the cross-vendor fallback of the `gpt-4.1` outage), starts
//! the Switchyard gateway on 127.0.0.1 with the in-memory store and a LiteLLM config pointing at
//! them, drives traffic through HTTP with a progress bar, and prints per deployment: requests
//! served, share against the configured weight, upstream errors, cooldowns, and the latency the
//! client saw; then the retries and fallbacks the gateway made. `--serve` keeps everything up
//! afterwards so you can try it with curl.

use std::{
    collections::HashMap,
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use indicatif::{ProgressBar, ProgressStyle};
use parking_lot::Mutex;
use switchyard::{
    Config,
    gateway::{Gateway, shutdown_signal},
    layers::select::RoutingStrategy,
    services::{
        mock::{MockHandle, MockProfile, MockUpstream},
        profile::{Failure, Latency},
        provider::{HttpProvider, ProviderConfig},
    },
};

/// The upstreams: (deployment id, group, weight, what the mock does).
const UPSTREAMS: [(&str, &str, u32, Behaviour); 8] = [
    ("azure-eastus", "gpt-4o", 4, Behaviour::Healthy { median_ms: 20, p99_ms: 60 }),
    ("azure-westeu", "gpt-4o", 3, Behaviour::Flaky { median_ms: 30, p99_ms: 80, rate: 0.3 }),
    ("openai", "gpt-4o", 2, Behaviour::RateLimited { median_ms: 40, p99_ms: 120, rate: 0.2 }),
    ("vllm-local", "gpt-4o", 1, Behaviour::Healthy { median_ms: 60, p99_ms: 180 }),
    ("azure-gpt41", "gpt-4.1", 1, Behaviour::Down),
    ("mini-a", "gpt-4o-mini", 1, Behaviour::Healthy { median_ms: 10, p99_ms: 30 }),
    ("mini-b", "gpt-4o-mini", 1, Behaviour::Healthy { median_ms: 15, p99_ms: 40 }),
    ("claude", "claude", 1, Behaviour::Healthy { median_ms: 40, p99_ms: 120 }),
];

/// Every fifth request asks for `gpt-4.1`, whose only deployment is down: it falls back at once
/// (the group's retry policy says not to retry its server errors) to `claude`, on Anthropic.
const OUTAGE_EVERY: u64 = 5;

#[derive(Clone, Copy)]
enum Behaviour {
    Healthy { median_ms: u64, p99_ms: u64 },
    Flaky { median_ms: u64, p99_ms: u64, rate: f64 },
    RateLimited { median_ms: u64, p99_ms: u64, rate: f64 },
    Down,
}

impl Behaviour {
    fn profile(self, seed: u64) -> Result<MockProfile, Box<dyn std::error::Error>> {
        let latency = |m: u64, p: u64| Latency::log_normal(Duration::from_millis(m), Duration::from_millis(p));
        let b = MockProfile::builder().seed(seed);
        Ok(match self {
            Self::Healthy { median_ms, p99_ms } => b.latency(latency(median_ms, p99_ms)),
            Self::Flaky { median_ms, p99_ms, rate } => {
                b.latency(latency(median_ms, p99_ms)).fail(Failure::InternalError, rate)
            }
            Self::RateLimited { median_ms, p99_ms, rate } => b
                .latency(latency(median_ms, p99_ms))
                .fail(Failure::RateLimited, rate)
                .retry_after(Duration::from_secs(1)),
            Self::Down => b.fail(Failure::Unavailable, 1.0),
        }
        .build()?)
    }
}

struct Args {
    requests: u64,
    concurrency: usize,
    strategy: Option<RoutingStrategy>,
    seed: u64,
    serve: bool,
}

const USAGE: &str = "usage: demo [--requests N] [--concurrency N] [--strategy NAME] [--seed N] [--serve]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args { requests: 20_000, concurrency: 64, strategy: None, seed: 7, serve: false };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--requests" => args.requests = value()?.parse().map_err(|e| format!("--requests: {e}"))?,
            "--concurrency" => args.concurrency = value()?.parse().map_err(|e| format!("--concurrency: {e}"))?,
            "--strategy" => args.strategy = Some(value()?.parse().map_err(|e| format!("--strategy: {e}"))?),
            "--seed" => args.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--serve" => args.serve = true,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown flag `{other}`\n{USAGE}")),
        }
    }
    if args.concurrency == 0 {
        return Err("--concurrency must be at least 1".into());
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demo failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The LiteLLM config the gateway runs on, pointing at the mock upstreams.
fn config_yaml(mocks: &[MockHandle]) -> String {
    let mut yaml = String::from("model_list:\n");
    for ((id, group, weight, _), mock) in UPSTREAMS.iter().zip(mocks) {
        // The Anthropic group: translated from the clients' chat completions to the Messages API.
        let (model, base) = match *group {
            "claude" => ("anthropic/claude-sonnet-4-5".to_owned(), mock.origin()),
            _ => (format!("openai/{id}"), mock.base_url()),
        };
        yaml.push_str(&format!(
            "  - model_name: {group}\n    litellm_params: {{ model: {model}, api_base: \"{base}\", api_key: sk-demo-{id}, weight: {weight} }}\n    model_info: {{ id: {id} }}\n",
        ));
    }
    yaml.push_str(
        "router_settings:\n  routing_strategy: simple-shuffle\n  num_retries: 2\n  cooldown_time: 2\n  timeout: 10\n  fallbacks: [{ gpt-4.1: [claude, gpt-4o-mini] }]\n  model_group_retry_policy: { gpt-4.1: { InternalServerErrorRetries: 0 } }\n",
    );
    yaml
}

#[derive(Default)]
struct Tally {
    latency: HashMap<String, Histogram<u64>>,
    errors: HashMap<u16, u64>,
    retries: u64,
    fallbacks: u64,
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let mut mocks = Vec::with_capacity(UPSTREAMS.len());
    for (i, (_, _, _, behaviour)) in UPSTREAMS.iter().enumerate() {
        mocks.push(MockUpstream::start(behaviour.profile(args.seed.wrapping_add(i as u64))?)?);
    }
    let mut config = Config::from_yaml_str(&config_yaml(&mocks))?;
    if let Some(s) = args.strategy {
        config.routing_strategy = s;
    }
    let strategy = config.routing_strategy;
    let provider = HttpProvider::new(ProviderConfig::new())?;
    let gateway = Gateway::builder(config.clone()).provider(provider).seed(args.seed).build()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        gateway
            .serve(listener, async move {
                let _ = stop_rx.await;
            })
            .await
    });

    println!(
        "Switchyard demo: gateway on http://{addr}, {} mock upstreams, strategy {strategy}; {} requests, concurrency {}",
        mocks.len(),
        args.requests,
        args.concurrency
    );
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let bar = ProgressBar::new(args.requests);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} requests  {per_sec}  eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let next = Arc::new(AtomicU64::new(0));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let started = Instant::now();
    let mut workers = Vec::with_capacity(args.concurrency);
    for _ in 0..args.concurrency {
        let (client, next, tally, bar) = (client.clone(), next.clone(), tally.clone(), bar.clone());
        let (total, url) = (args.requests, format!("http://{addr}/v1/chat/completions"));
        workers.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    break;
                }
                let model = if n % OUTAGE_EVERY == OUTAGE_EVERY - 1 { "gpt-4.1" } else { "gpt-4o" };
                let body = format!(r#"{{"model":"{model}","messages":[{{"role":"user","content":"Say hello."}}]}}"#);
                let req = http::Request::post(&url)
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(Full::new(Bytes::from(body)))
                    .expect("a valid request");
                let t = Instant::now();
                let outcome = match client.request(req).await {
                    Ok(resp) => {
                        let status = resp.status();
                        let header =
                            |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
                        let served = header("x-switchyard-deployment-id");
                        let retries: u64 =
                            header("x-switchyard-attempted-retries").and_then(|v| v.parse().ok()).unwrap_or(0);
                        let hops: u64 =
                            header("x-switchyard-attempted-fallbacks").and_then(|v| v.parse().ok()).unwrap_or(0);
                        let _ = resp.into_body().collect().await;
                        Some((status, served, retries, hops))
                    }
                    Err(_) => None,
                };
                let micros = t.elapsed().as_micros() as u64;
                let mut tally = tally.lock();
                match outcome {
                    Some((status, Some(id), retries, hops)) if status.is_success() => {
                        let h = tally.latency.entry(id).or_insert_with(|| Histogram::new(3).expect("valid precision"));
                        let _ = h.record(micros);
                        tally.retries += retries;
                        tally.fallbacks += hops;
                    }
                    Some((status, ..)) => *tally.errors.entry(status.as_u16()).or_default() += 1,
                    None => *tally.errors.entry(0).or_default() += 1,
                }
                drop(tally);
                bar.inc(1);
            }
        }));
    }
    for w in workers {
        w.await?;
    }
    bar.finish_and_clear();
    let elapsed = started.elapsed();
    let cooldowns = scrape_cooldowns(&client, &format!("http://{addr}/metrics")).await;
    report(&config, &mocks, &tally.lock(), &cooldowns, elapsed);

    if args.serve {
        println!("\nServing on http://{addr} (ctrl-c to stop). Try:");
        println!(
            "  curl -s http://{addr}/v1/chat/completions -H 'content-type: application/json' -d '{{\"model\":\"gpt-4o\",\"messages\":[{{\"role\":\"user\",\"content\":\"hi\"}}]}}' -i"
        );
        println!("  curl -s http://{addr}/router/deployments");
        shutdown_signal().await;
    }
    let _ = stop_tx.send(());
    server.await??;
    Ok(())
}

/// Cooldowns per deployment, from the gateway's own Prometheus endpoint.
async fn scrape_cooldowns(
    client: &Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
    url: &str,
) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    let Ok(uri) = url.parse::<http::Uri>() else { return out };
    let Ok(resp) = client.get(uri).await else { return out };
    let Ok(body) = resp.into_body().collect().await else { return out };
    for line in String::from_utf8_lossy(&body.to_bytes()).lines() {
        let Some(rest) = line.strip_prefix("switchyard_cooldowns_total{") else { continue };
        let Some((labels, value)) = rest.rsplit_once("} ") else { continue };
        let id = labels.split(',').find_map(|l| l.strip_prefix("deployment=\"")).map(|v| v.trim_end_matches('"'));
        if let (Some(id), Ok(v)) = (id, value.trim().parse::<f64>()) {
            *out.entry(id.to_owned()).or_default() += v as u64;
        }
    }
    out
}

fn report(config: &Config, mocks: &[MockHandle], tally: &Tally, cooldowns: &HashMap<String, u64>, elapsed: Duration) {
    let served: u64 = tally.latency.values().map(Histogram::len).sum();
    println!();
    println!(
        "{:<13} {:<12} {:>7} {:>7} {:>7} {:>7} {:>9} {:>7} {:>7}",
        "deployment", "group", "served", "share", "weight", "errors", "cooldowns", "p50 ms", "p99 ms"
    );
    for (d, mock) in config.deployments.iter().zip(mocks) {
        let in_group = |o: &&switchyard::Deployment| o.group == d.group;
        let group_weight: f64 = config.deployments.iter().filter(in_group).filter_map(|o| o.weight).sum();
        let group_served: u64 = config
            .deployments
            .iter()
            .filter(in_group)
            .filter_map(|o| tally.latency.get(o.id.as_str()).map(Histogram::len))
            .sum();
        let (n, p50, p99) = tally.latency.get(d.id.as_str()).map_or((0, 0.0, 0.0), |h| {
            (h.len(), h.value_at_quantile(0.5) as f64 / 1000.0, h.value_at_quantile(0.99) as f64 / 1000.0)
        });
        println!(
            "{:<13} {:<12} {:>7} {:>6.1}% {:>6.1}% {:>7} {:>9} {:>7.1} {:>7.1}",
            d.id.as_str(),
            &*d.group,
            n,
            100.0 * n as f64 / group_served.max(1) as f64,
            100.0 * d.weight.unwrap_or(0.0) / group_weight.max(f64::MIN_POSITIVE),
            mock.stats().failures,
            cooldowns.get(d.id.as_str()).copied().unwrap_or(0),
            p50,
            p99
        );
    }
    let failed: u64 = tally.errors.values().sum();
    println!();
    println!(
        "{served} served, {failed} failed, in {:.2} s ({:.0} requests/s through HTTP); {} retries, {} fallbacks",
        elapsed.as_secs_f64(),
        (served + failed) as f64 / elapsed.as_secs_f64(),
        tally.retries,
        tally.fallbacks
    );
    for (status, n) in &tally.errors {
        println!(
            "  {n} answered {}",
            if *status == 0 { "nothing (connection error)".to_owned() } else { format!("HTTP {status}") }
        );
    }
    println!("share: of the group's served requests; weight: configured share within the group; errors: failures the");
    println!("upstream returned; cooldowns: times benched; p50/p99: latency the client saw for requests served there");
}
