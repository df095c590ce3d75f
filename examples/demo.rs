//! The demo: traffic through the routing stack to four simulated deployments, in memory.
//!
//! ```text
//! cargo run --release --example demo -- --requests 20000 [--concurrency 256] [--strategy NAME] [--seed N]
//! ```
//!
//! The deployments come from a LiteLLM config (below), with different weights and latencies; the
//! simulated provider stands in for the real APIs, so nothing leaves the process. At the end the
//! demo prints, per deployment: requests served, share against the configured weight, and p50/p99
//! latency as the caller saw it.

use std::{
    collections::HashMap,
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use parking_lot::Mutex;
use switchyard::{
    Config, Router,
    layers::select::RoutingStrategy,
    services::{
        openai::{ChatMessage, ChatRequest},
        sim::{Latency, SimProfile, SimProvider},
    },
};

const CONFIG: &str = r#"
model_list:
  - model_name: gpt-4o
    litellm_params: { model: azure/gpt-4o-eastus, api_key: sk-demo-eastus, weight: 4 }
    model_info: { id: azure-eastus }
  - model_name: gpt-4o
    litellm_params: { model: azure/gpt-4o-westeu, api_key: sk-demo-westeu, weight: 3 }
    model_info: { id: azure-westeu }
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o, api_key: sk-demo-openai, weight: 2 }
    model_info: { id: openai }
  - model_name: gpt-4o
    litellm_params: { model: hosted_vllm/gpt-4o-distill, api_base: "http://10.0.0.7:8000/v1", weight: 1 }
    model_info: { id: vllm-local }
router_settings:
  routing_strategy: simple-shuffle
"#;

/// (deployment id, median latency, p99 latency) of the simulated upstreams.
const LATENCIES: [(&str, u64, u64); 4] =
    [("azure-eastus", 40, 120), ("azure-westeu", 60, 150), ("openai", 80, 250), ("vllm-local", 25, 60)];

struct Args {
    requests: u64,
    concurrency: usize,
    strategy: Option<RoutingStrategy>,
    seed: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { requests: 20_000, concurrency: 256, strategy: None, seed: 7 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--requests" => args.requests = value()?.parse().map_err(|e| format!("--requests: {e}"))?,
            "--concurrency" => args.concurrency = value()?.parse().map_err(|e| format!("--concurrency: {e}"))?,
            "--strategy" => args.strategy = Some(value()?.parse().map_err(|e| format!("--strategy: {e}"))?),
            "--seed" => args.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "-h" | "--help" => {
                return Err("usage: demo [--requests N] [--concurrency N] [--strategy NAME] [--seed N]".into());
            }
            other => return Err(format!("unknown flag `{other}` (try --help)")),
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

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let mut config = Config::from_yaml_str(CONFIG)?;
    if let Some(s) = args.strategy {
        config.routing_strategy = s;
    }
    let mut sim = SimProvider::new(args.seed);
    for (id, median, p99) in LATENCIES {
        let latency = Latency::log_normal(Duration::from_millis(median), Duration::from_millis(p99));
        sim = sim.profile(id, SimProfile::builder().latency(latency).build()?);
    }
    let router = Router::builder(&config).seed(args.seed).build(sim)?;

    println!(
        "Switchyard demo: {} requests, concurrency {}, strategy {}, 4 simulated deployments of `gpt-4o`",
        args.requests, args.concurrency, config.routing_strategy
    );
    let bar = ProgressBar::new(args.requests);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} requests  {per_sec}  eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );

    let next = Arc::new(AtomicU64::new(0));
    let latencies: Arc<Mutex<HashMap<String, Histogram<u64>>>> = Arc::default();
    let errors: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
    let started = Instant::now();
    let mut workers = Vec::with_capacity(args.concurrency);
    for _ in 0..args.concurrency {
        let (router, next, latencies, errors, bar) =
            (router.clone(), next.clone(), latencies.clone(), errors.clone(), bar.clone());
        let total = args.requests;
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let req = ChatRequest::new("gpt-4o", vec![ChatMessage::user("Say hello in one word.")]);
                let t = Instant::now();
                match router.chat(req).await {
                    Ok(answer) => {
                        let micros = t.elapsed().as_micros() as u64;
                        let mut map = latencies.lock();
                        let h = map
                            .entry(answer.served.deployment.to_string())
                            .or_insert_with(|| Histogram::new(3).expect("3 significant figures is valid"));
                        let _ = h.record(micros);
                    }
                    Err(e) => *errors.lock().entry(e.kind().as_str().to_owned()).or_default() += 1,
                }
                bar.inc(1);
            }
        }));
    }
    for w in workers {
        w.await?;
    }
    bar.finish_and_clear();
    let elapsed = started.elapsed();

    let total_weight: f64 = config.deployments.iter().filter_map(|d| d.weight).sum();
    let latencies = latencies.lock();
    let served: u64 = latencies.values().map(Histogram::len).sum();
    println!();
    println!(
        "{:<14} {:<28} {:>9} {:>8} {:>8} {:>9} {:>9}",
        "deployment", "provider model", "requests", "share", "weight", "p50 ms", "p99 ms"
    );
    for d in &config.deployments {
        let (n, p50, p99) = latencies.get(d.id.as_str()).map_or((0, 0.0, 0.0), |h| {
            (h.len(), h.value_at_quantile(0.5) as f64 / 1000.0, h.value_at_quantile(0.99) as f64 / 1000.0)
        });
        println!(
            "{:<14} {:<28} {:>9} {:>7.1}% {:>7.1}% {:>9.1} {:>9.1}",
            d.id.as_str(),
            d.model,
            n,
            100.0 * n as f64 / served.max(1) as f64,
            100.0 * d.weight.unwrap_or(0.0) / total_weight.max(f64::MIN_POSITIVE),
            p50,
            p99
        );
    }
    println!();
    println!(
        "{served} served, {} failed, in {:.2} s ({:.0} requests/s)",
        errors.lock().values().sum::<u64>(),
        elapsed.as_secs_f64(),
        served as f64 / elapsed.as_secs_f64()
    );
    for (kind, n) in errors.lock().iter() {
        println!("  {n} x {kind}");
    }
    Ok(())
}
