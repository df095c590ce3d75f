#!/usr/bin/env python3
"""L1 baseline: LiteLLM's Router in process, with LiteLLM's own mock response (no network).

Run with the venv from setup.sh:

    target/litellm-venv/bin/python bench/litellm/router_inprocess.py [--duration 5] [--warmup 1]
        [--levels 1,16,128] [--modes router,bare] [--out target/bench-results/litellm-router.json]

Two modes, same closed-loop harness (N asyncio tasks, each awaiting one call after another until
the level's deadline; every call timed with time.perf_counter_ns):

* ``router``: ``await router.acompletion(model="gpt-4o", messages=[...], mock_response="hi")`` on a
  ``litellm.Router`` with 8 deployments of the ``gpt-4o`` group (``openai/gpt-4o-{i}``, weights
  1,2,3,4,1,2,3,4 like ``benches/stack.rs``), ``routing_strategy="simple-shuffle"``.
* ``bare``: ``await bare()`` where ``bare`` is an ``async def`` that yields to the event loop once
  (``await asyncio.sleep(0)``, so the N tasks interleave as they do with the Router) and returns a
  canned chat-completion dict. This is the floor of the harness itself in CPython; Router/bare is
  LiteLLM's own overhead ratio.

The JSON written to --out (schema in README.md):

    {"tool": "litellm-router", "version": "1.100.0", ...,
     "levels": [{"concurrency": 1, "calls": N, "errors": 0, "seconds": S, "calls_per_sec": X,
                 "latency_us": {"p50": .., "p90": .., "p99": .., "max": ..}}, ...],
     "bare": {"tool": "python-bare-async", "levels": [...same shape...]}}
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import sys
import time
from array import array

# Before importing litellm: no remote model-cost-map fetch at import (it otherwise GETs
# raw.githubusercontent.com), errors-only logging, no telemetry.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_LOG", "ERROR")
os.environ.setdefault("LITELLM_TELEMETRY", "False")

PINNED_VERSION = "1.100.0"
MESSAGES = [{"role": "user", "content": "Say hi."}]
CANNED = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-4o",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


def make_router(deployments: int):
    import litellm
    from litellm import Router

    litellm.telemetry = False
    litellm.set_verbose = False
    litellm.suppress_debug_info = True
    litellm.callbacks = []
    litellm.success_callback = []
    litellm.failure_callback = []
    litellm._async_success_callback = []
    litellm._async_failure_callback = []
    litellm.service_callback = []
    model_list = [
        {
            "model_name": "gpt-4o",
            "litellm_params": {
                "model": f"openai/gpt-4o-{i}",
                "api_key": "sk-bench",
                "weight": i % 4 + 1,
            },
            "model_info": {"id": f"d{i}"},
        }
        for i in range(deployments)
    ]
    return Router(model_list=model_list, routing_strategy="simple-shuffle", num_retries=0)


def call_factory(mode: str, router):
    if mode == "router":

        async def call():
            return await router.acompletion(model="gpt-4o", messages=MESSAGES, mock_response="hi")

    else:

        async def call():
            await asyncio.sleep(0)
            return CANNED

    return call


async def run_level(call, concurrency: int, seconds: float):
    """N tasks, each calling in a loop until the deadline.

    Returns (calls, errors, wall seconds, process CPU seconds (all threads), latency samples in ns).
    """
    per_task = [array("q") for _ in range(concurrency)]
    errors = [0] * concurrency
    clock = time.perf_counter_ns
    cpu0 = time.process_time()
    start = clock()
    deadline = start + int(seconds * 1e9)

    async def worker(k: int):
        samples = per_task[k]
        append = samples.append
        now = clock()
        while now < deadline:
            try:
                await call()
            except Exception:  # noqa: BLE001 - counted, not timed
                errors[k] += 1
                now = clock()
                continue
            end = clock()
            append(end - now)
            now = end

    await asyncio.gather(*(worker(k) for k in range(concurrency)))
    elapsed = (clock() - start) / 1e9
    cpu = time.process_time() - cpu0
    samples = array("q")
    for s in per_task:
        samples.extend(s)
    return len(samples), sum(errors), elapsed, cpu, samples


def percentiles_us(samples: array) -> dict:
    if not samples:
        return {"p50": None, "p90": None, "p99": None, "max": None}
    try:
        import numpy as np

        arr = np.frombuffer(samples, dtype=np.int64)
        # "lower" = nearest rank at or below, no interpolation between samples.
        p50, p90, p99 = np.percentile(arr, [50, 90, 99], method="lower")
        mx = arr.max()
    except ImportError:
        s = sorted(samples)
        n = len(s)
        p50, p90, p99 = (s[min(n - 1, int(q * (n - 1)))] for q in (0.50, 0.90, 0.99))
        mx = s[-1]
    return {k: round(float(v) / 1e3, 2) for k, v in zip(("p50", "p90", "p99", "max"), (p50, p90, p99, mx))}


async def bench_mode(mode: str, router, levels, duration: float, warmup: float) -> list[dict]:
    call = call_factory(mode, router)
    if mode == "router":
        resp = await call()
        content = resp.choices[0].message.content
        if content != "hi":
            raise SystemExit(f"unexpected mock response content: {content!r}")
    out = []
    for c in levels:
        if warmup > 0:
            await run_level(call, c, warmup)
        gc.collect()
        load1 = os.getloadavg()[0]
        calls, errors, secs, cpu, samples = await run_level(call, c, duration)
        lat = percentiles_us(samples)
        out.append(
            {
                "concurrency": c,
                "calls": calls,
                "errors": errors,
                "seconds": round(secs, 3),
                "calls_per_sec": round(calls / secs, 1),
                "latency_us": lat,
                "cpu_s": round(cpu, 3),
                "cpu_us_per_call": round(cpu / calls * 1e6, 2) if calls else None,
                "loadavg_1m_before": round(load1, 2),
            }
        )
        print(
            f"{mode:>6} c={c:<4} {calls / secs:>12.1f} calls/s  "
            f"p50 {lat['p50']:>10} us  p90 {lat['p90']:>10} us  p99 {lat['p99']:>10} us  "
            f"max {lat['max']:>10} us  cpu/call {cpu / max(calls, 1) * 1e6:.1f} us  "
            f"load {load1:.2f}  errors {errors}",
            file=sys.stderr,
            flush=True,
        )
        del samples
    return out


def table(results: dict) -> str:
    rows = ["mode    conc     calls/s     p50 us     p90 us     p99 us     max us  cpu us/call  errors"]
    for mode, levels in results.items():
        for lv in levels:
            lat = lv["latency_us"]
            rows.append(
                f"{mode:<7} {lv['concurrency']:>4} {lv['calls_per_sec']:>11.1f} {lat['p50']:>10} "
                f"{lat['p90']:>10} {lat['p99']:>10} {lat['max']:>10} {lv['cpu_us_per_call']:>12} "
                f"{lv['errors']:>7}"
            )
    if "router" in results and "bare" in results:
        rows.append("")
        for r, b in zip(results["router"], results["bare"]):
            rows.append(
                f"bare/router throughput at c={r['concurrency']}: "
                f"{b['calls_per_sec'] / r['calls_per_sec']:.0f}x"
            )
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=5.0, help="measured seconds per level (5)")
    ap.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before each level (1)")
    ap.add_argument("--levels", default="1,16,128", help="comma-separated concurrency levels")
    ap.add_argument("--modes", default="router,bare", help="router, bare or both")
    ap.add_argument("--deployments", type=int, default=8)
    ap.add_argument("--out", default="target/bench-results/litellm-router.json")
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",") if x]
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in ("router", "bare"):
            ap.error(f"unknown mode {m!r}")

    import importlib.metadata as md

    version = md.version("litellm")
    if version != PINNED_VERSION:
        print(f"warning: litellm {version} installed, pinned {PINNED_VERSION}", file=sys.stderr)

    t0 = time.perf_counter()
    router = make_router(args.deployments) if "router" in modes else None
    setup_s = time.perf_counter() - t0

    async def run_all():
        return {m: await bench_mode(m, router, levels, args.duration, args.warmup) for m in modes}

    results = asyncio.run(run_all())
    print(table(results))

    doc = {
        "tool": "litellm-router",
        "version": version,
        "python": platform.python_version(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "deployments": args.deployments,
        "strategy": "simple-shuffle",
        "weights": [i % 4 + 1 for i in range(args.deployments)],
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "import_and_setup_s": round(setup_s, 3),
        "levels": results.get("router", []),
    }
    if "bare" in results:
        doc["bare"] = {"tool": "python-bare-async", "levels": results["bare"]}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
