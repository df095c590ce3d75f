#!/usr/bin/env python3
"""Rough closed-loop HTTP load: N aiohttp workers POSTing chat completions back to back.

    target/litellm-venv/bin/python bench/litellm/closed_loop.py --url http://127.0.0.1:4100/v1
        [--concurrency 16] [--duration 10] [--warmup 2] [--out FILE] [--tool NAME]

A sanity check of what one LiteLLM proxy worker holds, not the real measurement: a closed loop
slows down with the server (coordinated omission), and the Python client shares the 2 cores with
the proxy and the upstream. Use an open-loop generator for published numbers.

Prints one line and, with --out, writes the same JSON shape as router_inprocess.py:
{"tool": NAME, "url": URL, "levels": [{"concurrency", "calls", "errors", "seconds",
"calls_per_sec", "latency_us": {"p50", "p90", "p99", "max"}, "client_cpu_s", "loadavg_1m_after",
and with --server-pid PID: "server_pid", "server_cpu_s", "server_cpu_us_per_call"}]}. Errors are non-2xx answers or
exceptions; they are counted, not timed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time

import aiohttp

def proc_cpu_s(pid: int | None):
    """utime+stime of a process (all its threads), from /proc; None when unknown."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


BODY = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "Say hi."}]}).encode()


def percentile_us(sorted_ns: list[int], q: float):
    if not sorted_ns:
        return None
    return round(sorted_ns[min(len(sorted_ns) - 1, int(q * (len(sorted_ns) - 1)))] / 1e3, 1)


async def run(url: str, concurrency: int, seconds: float, session: aiohttp.ClientSession):
    samples: list[int] = []
    errors = 0
    clock = time.perf_counter_ns
    start = clock()
    deadline = start + int(seconds * 1e9)
    headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench"}

    async def worker():
        nonlocal errors
        now = clock()
        while now < deadline:
            try:
                async with session.post(url, data=BODY, headers=headers) as resp:
                    await resp.read()
                    ok = 200 <= resp.status < 300
            except (aiohttp.ClientError, asyncio.TimeoutError):
                ok = False
            end = clock()
            if ok:
                samples.append(end - now)
            else:
                errors += 1
            now = end

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return samples, errors, (clock() - start) / 1e9


async def main_async(args) -> dict:
    url = args.url.rstrip("/") + "/chat/completions"
    connector = aiohttp.TCPConnector(limit=args.concurrency)
    timeout = aiohttp.ClientTimeout(total=args.timeout)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        if args.warmup > 0:
            await run(url, args.concurrency, args.warmup, session)
        server0, client0 = proc_cpu_s(args.server_pid), time.process_time()
        samples, errors, secs = await run(url, args.concurrency, args.duration, session)
        server1, client1 = proc_cpu_s(args.server_pid), time.process_time()
    samples.sort()
    lat = {
        "p50": percentile_us(samples, 0.50),
        "p90": percentile_us(samples, 0.90),
        "p99": percentile_us(samples, 0.99),
        "max": round(samples[-1] / 1e3, 1) if samples else None,
    }
    level = {
        "concurrency": args.concurrency,
        "calls": len(samples),
        "errors": errors,
        "seconds": round(secs, 3),
        "calls_per_sec": round(len(samples) / secs, 1),
        "latency_us": lat,
        "client_cpu_s": round(client1 - client0, 3),
    }
    if server0 is not None and server1 is not None:
        level["server_pid"] = args.server_pid
        level["server_cpu_s"] = round(server1 - server0, 3)
        level["server_cpu_us_per_call"] = round((server1 - server0) / len(samples) * 1e6, 1) if samples else None
    level["loadavg_1m_after"] = round(os.getloadavg()[0], 2)
    return {"tool": args.tool, "url": url, "closed_loop": True, "levels": [level]}


def main() -> None:
    ap = argparse.ArgumentParser(description="rough closed-loop chat-completions load")
    ap.add_argument("--url", required=True, help="base URL ending in /v1")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--timeout", type=float, default=30.0, help="per-request timeout, seconds")
    ap.add_argument("--tool", default="litellm-proxy")
    ap.add_argument("--server-pid", type=int, help="report this process's CPU time per call")
    ap.add_argument("--out")
    args = ap.parse_args()
    doc = asyncio.run(main_async(args))
    lv = doc["levels"][0]
    lat = lv["latency_us"]
    print(
        f"{args.tool} c={lv['concurrency']} {lv['calls_per_sec']} req/s over {lv['seconds']} s "
        f"({lv['calls']} ok, {lv['errors']} errors); latency us p50 {lat['p50']} p90 {lat['p90']} "
        f"p99 {lat['p99']} max {lat['max']}"
        + (f"; server cpu {lv['server_cpu_us_per_call']} us/call" if "server_cpu_s" in lv else "")
        + f"; load {lv['loadavg_1m_after']}"
    )
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
