#!/usr/bin/env python3
"""Turns sched_bench's JSON output into the markdown tables of bench/results/sched.md.

Usage: make_table.py sched_bench.json > tables.md
With --benchmark_repetitions the medians are used; otherwise the single runs.
"""
import json
import re
import sys
from collections import defaultdict

CONTESTANTS = ["fairsched", "fairsched_trivial_policy", "trivial_sched", "tbb_arena", "asio_pool"]
PEERS = ["trivial_sched", "tbb_arena", "asio_pool"]


def load(path):
    data = json.load(open(path))
    runs = {}
    have_aggregates = any(b.get("run_type") == "aggregate" for b in data["benchmarks"])
    for b in data["benchmarks"]:
        if have_aggregates and b.get("aggregate_name") != "median":
            continue
        name = re.sub(r"/real_time.*$", "", b["run_name"] if "run_name" in b else b["name"])
        runs[name] = b
    return data["context"], runs


def mops(b):
    return b["items_per_second"] / 1e6


def throughput_tables(runs):
    out = []
    for mode in ["oneshot", "repost"]:
        out.append(f"\n#### throughput, {mode} (M tasks/s; median)\n")
        out.append("| body | workers | " + " | ".join(CONTESTANTS) +
                   " | fairsched / best peer | fairsched / trivial_sched | ready-lock contended per task (fairsched / trivial policy) | physical limit (1 thread) |")
        out.append("|" + "---|" * (len(CONTESTANTS) + 6))
        for body in [0, 100, 1000]:
            for workers in [1, 2, 4]:
                row = {}
                for c in CONTESTANTS:
                    b = runs.get(f"throughput/{mode}/body_ns:{body}/workers:{workers}/{c}")
                    if b:
                        row[c] = b
                cells = [f"{mops(row[c]):.2f}" if c in row else "-" for c in CONTESTANTS]
                best_peer = max((mops(row[c]), c) for c in PEERS if c in row) if any(c in row for c in PEERS) else None
                fs = mops(row["fairsched"]) if "fairsched" in row else None
                ratio_peer = f"{fs / best_peer[0]:.2f}x (vs {best_peer[1]})" if fs and best_peer else "-"
                ratio_triv = f"{fs / mops(row['trivial_sched']):.2f}x" if fs and "trivial_sched" in row else "-"
                lock = " / ".join(f"{row[c].get('lock_contended_per_task', 0):.2g}" if c in row else "-"
                                  for c in ["fairsched", "fairsched_trivial_policy"])
                phys = runs.get(f"physical_limit/body_ns:{body}")
                phys_s = f"{mops(phys):.2f}" if phys else "-"
                out.append(f"| {body} ns | {workers} | " + " | ".join(cells) +
                           f" | {ratio_peer} | {ratio_triv} | {lock} | {phys_s} |")
    return out


def us(x):
    return f"{x / 1000:.1f}"


def latency_tables(runs):
    out = ["\n#### post-to-start latency, empty tasks (p50 / p99, microseconds; median of runs)\n"]
    out.append("| offered gap | workers | " + " | ".join(CONTESTANTS) + " |")
    out.append("|" + "---|" * (len(CONTESTANTS) + 2))
    for gap in [1000, 50000]:
        for workers in [1, 2]:
            cells = []
            for c in CONTESTANTS:
                b = runs.get(f"latency/gap_ns:{gap}/workers:{workers}/{c}")
                cells.append(f"{us(b['p50_ns'])} / {us(b['p99_ns'])}" if b else "-")
            out.append(f"| {gap // 1000} us | {workers} | " + " | ".join(cells) + " |")
    out.append("\n#### timer lateness under load (start - deadline: p50 / p99, microseconds; min in ns)\n")
    timed = [c for c in CONTESTANTS + ["fairsched_timer_wheel"] if any(k.startswith("timer_lateness/") and k.endswith("/" + c) for k in runs)]
    out.append("| workers | " + " | ".join(timed) + " |")
    out.append("|" + "---|" * (len(timed) + 1))
    for workers in [1, 2]:
        cells = []
        for c in timed:
            b = runs.get(f"timer_lateness/workers:{workers}/{c}")
            cells.append(f"{us(b['p50_ns'])} / {us(b['p99_ns'])} (min {b['min_ns']:.0f} ns)" if b else "-")
        out.append(f"| {workers} | " + " | ".join(cells) + " |")
    return out


def main():
    context, runs = load(sys.argv[1])
    lines = throughput_tables(runs) + latency_tables(runs)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
