#!/usr/bin/env python3
"""Plots of the issue 7 benchmarks (docs/performance.md), as PNGs.

    target/litellm-venv/bin/python bench/plot.py [--results target/bench-results] [--out docs/img]

Reads l2.json (written by scripts/bench-http) and, when present, l1.json
({"levels": [{"variant": "bare|memory|redis", "concurrency": N, "calls_per_sec": X,
"latency_ns": {"p50": .., "p99": ..}}]}); writes:

- l2-latency.png: latency percentiles (p50, p99, p99.9) against the offered rate, for the mock
  directly, the Switchyard gateway and the LiteLLM proxy, one row per mock profile;
- l2-added.png: latency added over the direct call at the same rate, per percentile, Switchyard
  (µs) and LiteLLM (ms);
- l2-rate.png: the highest error-free rate of each target;
- l1.png (with l1.json): calls per second and latency against concurrency, per variant.

Needs matplotlib (in the LiteLLM venv made by bench/litellm/setup.sh).
"""

import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

TARGETS = [("direct", "mock, direct", "tab:gray"), ("switchyard", "Switchyard gateway", "tab:blue"),
           ("litellm", "LiteLLM proxy", "tab:red")]
PCTS = [("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p99_9", "p99.9")]


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def plain_log(ax, x=True, y=True):
    """Log axes labelled with plain numbers (1,000 rather than 10^3), no minor labels."""
    fmt = FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}")
    for on, axis in ((x, ax.xaxis), (y, ax.yaxis)):
        if on:
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            axis.set_major_formatter(fmt)
            axis.set_minor_formatter(NullFormatter())


def subtitle(doc):
    m = doc.get("machine", {})
    line = f"{m.get('cpus', '?')} CPUs ({m.get('cpu', '?')}); {doc.get('pinning', '')}"
    idle = doc.get("idle")
    return f"{line}\nidle states: {idle}" if idle else line


def plot_latency(l2, out):
    profiles = l2["profiles"]
    shown = [("p50", "p50"), ("p99", "p99"), ("p99_9", "p99.9")]
    fig, axes = plt.subplots(len(profiles), len(shown), figsize=(5 * len(shown), 3.8 * len(profiles)), squeeze=False)
    for row, prof in zip(axes, profiles):
        for ax, (key, label) in zip(row, shown):
            for target, name, color in TARGETS:
                levels = prof["targets"].get(target, {}).get("levels", [])
                good = [(lv["target_rate"], lv["latency_us"][key] / 1000) for lv in levels
                        if lv["error_free"] and lv["latency_us"]]
                bad = [(lv["target_rate"], lv["latency_us"][key] / 1000) for lv in levels
                       if not lv["error_free"] and lv["latency_us"]]
                if good:
                    ax.plot(*zip(*good), marker="o", color=color, label=name)
                if bad:
                    ax.plot(*zip(*bad), linestyle="none", marker="x", color=color,
                            label=f"{name}: errors or behind")
            ax.set_xscale("log")
            ax.set_yscale("log")
            plain_log(ax)
            ax.set_xlabel("offered rate (requests/s)")
            ax.set_ylabel(f"{label} latency (ms)")
            ax.set_title(f"mock {prof['latency_ms']} ms: {label}")
            ax.grid(True, which="both", alpha=0.3)
        row[0].legend(fontsize=8)
    fig.suptitle(f"L2: latency from the intended send time, open loop\n{subtitle(l2)}", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "l2-latency.png"), dpi=110)
    plt.close(fig)


def plot_added(l2, out):
    profiles = l2["profiles"]
    cols = [("switchyard", "Switchyard gateway", 1, "µs"), ("litellm", "LiteLLM proxy", 1000, "ms")]
    fig, axes = plt.subplots(len(profiles), 2, figsize=(11, 3.8 * len(profiles)), squeeze=False)
    for row, prof in zip(axes, profiles):
        for ax, (target, name, div, unit) in zip(row, cols):
            rows = prof.get("added_latency_us", {}).get(target, [])
            if target == "switchyard":
                # Only rates where the direct call was measured too.
                rows = [r for r in rows if r["rate"] == r["direct_rate"]]
            for key, label in PCTS:
                pts = [(r["rate"], r[key] / div) for r in rows]
                if pts:
                    ax.plot(*zip(*pts), marker="o", label=label)
            ax.axhline(0, color="black", linewidth=0.6)
            if target == "switchyard":
                ax.axhline(250, color="tab:red", linestyle="--", linewidth=0.8, label="target: p99 < 250 µs")
                ax.set_yscale("symlog", linthresh=1000)
                ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
            ax.set_xscale("log")
            plain_log(ax, y=False)
            if rows:
                ax.set_xticks(sorted({r["rate"] for r in rows}))
                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
            ax.set_xlabel("offered rate (requests/s)")
            ax.set_ylabel(f"added latency ({unit})" + (", symlog" if target == "switchyard" else ""))
            direct_rates = sorted({r["direct_rate"] for r in rows if r["direct_rate"] != r["rate"]})
            against = f" (against direct at {', '.join(f'{d:,.0f}' for d in direct_rates)}/s)" if direct_rates else ""
            ax.set_title(f"mock {prof['latency_ms']} ms: {name} minus direct{against}", fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            if rows:
                ax.legend(fontsize=8)
            else:
                ax.text(0.5, 0.5, "no error-free level", transform=ax.transAxes, ha="center")
    fig.suptitle(f"L2: latency added over the direct call at the same rate\n{subtitle(l2)}", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "l2-added.png"), dpi=110)
    plt.close(fig)


def plot_rate(l2, out):
    profiles = l2["profiles"]
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(TARGETS)
    for i, (target, name, color) in enumerate(TARGETS):
        xs, ys = [], []
        for j, prof in enumerate(profiles):
            rate = prof["targets"].get(target, {}).get("highest_error_free_rate")
            if rate:
                xs.append(j + (i - 1) * width)
                ys.append(rate)
        bars = ax.bar(xs, ys, width, color=color, label=name)
        ax.bar_label(bars, labels=[f"{y:,.0f}" for y in ys], fontsize=8)
    ax.set_xticks(range(len(profiles)), [f"mock {p['latency_ms']} ms" for p in profiles])
    ax.set_yscale("log")
    ax.set_ylim(bottom=10)
    plain_log(ax, x=False)
    ax.set_ylabel("highest error-free rate (requests/s)")
    m = l2.get("machine", {})
    ax.set_title(f"L2: highest error-free rate (no errors, kept up), stepping up\n"
                 f"{m.get('cpus', '?')} CPUs; gateway or proxy alone on one CPU", fontsize=9)
    ax.legend(fontsize=8, loc="upper right", bbox_to_anchor=(1.0, 0.85))
    fig.tight_layout()
    fig.savefig(os.path.join(out, "l2-rate.png"), dpi=110)
    plt.close(fig)


def plot_l1(l1, out):
    levels = l1.get("levels", [])
    variants = sorted({lv["variant"] for lv in levels})
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for i, v in enumerate(variants):
        color = f"C{i}"
        pts = sorted((lv for lv in levels if lv["variant"] == v), key=lambda lv: lv["concurrency"])
        xs = [lv["concurrency"] for lv in pts]
        a.plot(xs, [lv["calls_per_sec"] for lv in pts], marker="o", color=color, label=v)
        b.plot(xs, [lv["latency_ns"]["p50"] / 1000 for lv in pts], marker="o", color=color, label=f"{v} p50")
        b.plot(xs, [lv["latency_ns"]["p99"] / 1000 for lv in pts], marker="x", linestyle="--", color=color,
               label=f"{v} p99")
    for ax in (a, b):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrency")
        ax.set_xticks(sorted({lv["concurrency"] for lv in levels}))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    a.set_yscale("log")
    a.set_ylabel("calls/s")
    b.set_yscale("log")
    b.set_ylabel("latency (µs)")
    for ax in (a, b):
        plain_log(ax)
    fig.suptitle("L1: the stack in process", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "l1.png"), dpi=110)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--results", default="target/bench-results")
    p.add_argument("--out", default="docs/img")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    wrote = []
    l2 = load(os.path.join(args.results, "l2.json"))
    if l2 and l2.get("profiles"):
        plot_latency(l2, args.out)
        plot_added(l2, args.out)
        plot_rate(l2, args.out)
        wrote += ["l2-latency.png", "l2-added.png", "l2-rate.png"]
    l1 = load(os.path.join(args.results, "l1.json"))
    if l1 and l1.get("levels"):
        plot_l1(l1, args.out)
        wrote.append("l1.png")
    if not wrote:
        print(f"plot.py: nothing to plot in {args.results}", file=sys.stderr)
        return 1
    print("wrote " + ", ".join(os.path.join(args.out, w) for w in wrote))
    return 0


if __name__ == "__main__":
    sys.exit(main())
