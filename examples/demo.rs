//! The demo: traffic through the routing stack to four simulated deployments, in memory.
//!
//! ```text
//! cargo run --release --example demo -- --requests 20000 [--concurrency 256] [--strategy NAME] [--seed N]
//! ```
//!
//! The deployments come from a LiteLLM config (below), with different weights and latencies; the
//! simulated provider stands in for the real APIs, so nothing leaves the process. One deployment
//! is flaky (30% 500s), one is rate limited (429 with Retry-After), and the `gpt-4.1` group is
//! down entirely and falls back to `gpt-4o-mini`. At the end the demo prints, per deployment:
//! requests served, share against the configured weight, failed attempts, times benched, and
//! p50/p99 latency as the caller saw it; then the retries and fallbacks the stack made.

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
    layers::{cooldown::CooldownEvent, select::RoutingStrategy},
    services::{
        openai::{ChatMessage, ChatRequest},
        sim::{Latency, SimFailure, SimProfile, SimProvider},
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
  - model_name: gpt-4.1
    litellm_params: { model: azure/gpt-4.1-outage, weight: 1 }
    model_info: { id: azure-gpt41 }
  - model_name: gpt-4o-mini
    litellm_params: { model: openai/gpt-4o-mini, weight: 1 }
    model_info: { id: openai-mini }
router_settings:
  routing_strategy: simple-shuffle
  num_retries: 2
  cooldown_time: 2
  fallbacks: [{ gpt-4.1: [gpt-4o-mini] }]
"#;

/// Every fifth request asks for `gpt-4.1`, whose only deployment is down.
const OUTAGE_EVERY: u64 = 5;

/// (deployment id, median latency, p99 latency) of the simulated upstreams.
const LATENCIES: [(&str, u64, u64); 6] = [
    ("azure-eastus", 40, 120),
    ("azure-westeu", 60, 150),
    ("openai", 80, 250),
    ("vllm-local", 25, 60),
    ("azure-gpt41", 30, 60),
    ("openai-mini", 20, 50),
];

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
        let mut profile =
            SimProfile::builder().latency(latency).error_latency(Latency::fixed(Duration::from_millis(5)));
        profile = match id {
            "azure-westeu" => profile.fail(SimFailure::InternalError, 0.3),
            "openai" => profile.fail(SimFailure::RateLimited, 0.2).retry_after(Duration::from_secs(1)),
            "azure-gpt41" => profile.fail(SimFailure::Unavailable, 1.0),
            _ => profile,
        };
        sim = sim.profile(id, profile.build()?);
    }
    let sim_stats = sim.stats();
    let benched: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
    let benched_sink = benched.clone();
    let router = Router::builder(&config)
        .seed(args.seed)
        .on_cooldown(move |e| {
            if let CooldownEvent::Benched { deployment, .. } = e {
                *benched_sink.lock().entry(deployment.to_string()).or_default() += 1;
            }
        })
        .build(sim)?;

    println!(
        "Switchyard demo: {} requests, concurrency {}, strategy {}, 6 simulated deployments in 3 groups",
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
    let retries = Arc::new(AtomicU64::new(0));
    let hops = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut workers = Vec::with_capacity(args.concurrency);
    for _ in 0..args.concurrency {
        let (router, next, latencies, errors, bar, retries, hops) = (
            router.clone(),
            next.clone(),
            latencies.clone(),
            errors.clone(),
            bar.clone(),
            retries.clone(),
            hops.clone(),
        );
        let total = args.requests;
        workers.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    break;
                }
                let model = if n % OUTAGE_EVERY == OUTAGE_EVERY - 1 { "gpt-4.1" } else { "gpt-4o" };
                let req = ChatRequest::new(model, vec![ChatMessage::user("Say hello in one word.")]);
                let t = Instant::now();
                match router.chat(req).await {
                    Ok(answer) => {
                        // Retries: attempts beyond the first in each group that was attempted.
                        let mut groups: Vec<&str> = answer.served.failed.iter().map(|r| &*r.group).collect();
                        groups.push(&answer.served.group);
                        groups.dedup();
                        let extra = answer.served.attempts.saturating_sub(groups.len() as u32);
                        retries.fetch_add(u64::from(extra), Ordering::Relaxed);
                        hops.fetch_add(u64::from(answer.served.hops), Ordering::Relaxed);
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

    let latencies = latencies.lock();
    let benched = benched.lock();
    let served: u64 = latencies.values().map(Histogram::len).sum();
    println!();
    println!(
        "{:<13} {:<12} {:>7} {:>8} {:>7} {:>7} {:>8} {:>7} {:>7}",
        "deployment", "group", "served", "share", "weight", "failed", "benched", "p50 ms", "p99 ms"
    );
    for d in &config.deployments {
        let group_weight: f64 = config.deployments.iter().filter(|o| o.group == d.group).filter_map(|o| o.weight).sum();
        let group_served: u64 = config
            .deployments
            .iter()
            .filter(|o| o.group == d.group)
            .filter_map(|o| latencies.get(o.id.as_str()).map(Histogram::len))
            .sum();
        let (n, p50, p99) = latencies.get(d.id.as_str()).map_or((0, 0.0, 0.0), |h| {
            (h.len(), h.value_at_quantile(0.5) as f64 / 1000.0, h.value_at_quantile(0.99) as f64 / 1000.0)
        });
        let stats = sim_stats.deployment(d.id.as_str());
        println!(
            "{:<13} {:<12} {:>7} {:>7.1}% {:>6.1}% {:>7} {:>8} {:>7.1} {:>7.1}",
            d.id.as_str(),
            &*d.group,
            n,
            100.0 * n as f64 / group_served.max(1) as f64,
            100.0 * d.weight.unwrap_or(0.0) / group_weight.max(f64::MIN_POSITIVE),
            stats.calls - stats.count(switchyard::Outcome::Success),
            benched.get(d.id.as_str()).copied().unwrap_or(0),
            p50,
            p99
        );
    }
    println!();
    println!(
        "{served} served, {} failed, in {:.2} s ({:.0} requests/s); {} retries, {} fallbacks",
        errors.lock().values().sum::<u64>(),
        elapsed.as_secs_f64(),
        served as f64 / elapsed.as_secs_f64(),
        retries.load(Ordering::Relaxed),
        hops.load(Ordering::Relaxed),
    );
    for (kind, n) in errors.lock().iter() {
        println!("  {n} x {kind}");
    }
    println!("share: of the group's served requests; weight: configured share within the group; failed: attempts that");
    println!("failed upstream; benched: times cooled down; p50/p99: latency the caller saw for requests served there");
    Ok(())
}
