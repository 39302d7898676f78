#!/usr/bin/env python3
"""Renders the runs of record_processes.sh (OUT/records.jsonl, one savegame JSON record per
line) as a Markdown table, per store and number of server processes: the median (and
min-max) of req/s, of req/s per process, of acknowledged saves per CPU-second of the server
processes (their whole life, so setup and drain are in it) and of the acknowledged saves'
p99 over the rounds, the share of sent saves answered conflict (refused by the store's
compare-and-set because two processes overlapped on one user), the check, and the highest
1-minute load seen. With --plot PNG it also draws req/s
and p99 against N (needs matplotlib: apt-get install python3-matplotlib).

    examples/savegame/render_processes.py OUT/records.jsonl [--plot OUT/processes.png] > table.md
    examples/savegame/render_processes.py OUT/records.jsonl --doc docs/savegame_scaling.md

With --doc the table replaces the text between <!-- processes:begin --> and
<!-- processes:end --> in that file (tools/bench_report/blocks.py) instead of going to stdout.
"""

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
from tools.bench_report import blocks  # noqa: E402


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def groups(records):
    by = {}
    for r in records:
        key = (r["config"]["store"], r["config"].get("server_processes", 0))
        by.setdefault(key, []).append(r)
    return dict(sorted(by.items()))


def spread(values, fmt):
    if not values:
        return "-"
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def table(records):
    lines = [
        "| store | N | runs | req/s median (min-max) | req/s per process | saves per server CPU-s "
        "| p99 ms median (min-max) | conflict % | check | max load 1m |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (store, n), runs in groups(records).items():
        rps = [r["requests_per_second"] for r in runs]
        p99 = [r["latency_ms"]["acknowledged"]["p99"] for r in runs
               if r["latency_ms"]["acknowledged"]["p99"] is not None]
        per_process = [r["requests_per_second"] / max(1, n) for r in runs]
        per_cpu = [r["acknowledged"] / sum(r["server_process_cpu_seconds"]) for r in runs
                   if sum(r.get("server_process_cpu_seconds", [])) > 0]
        conflicts = [100.0 * r["replies"].get("conflict", 0) / r["sent"] for r in runs
                     if r["sent"]]
        checks = "all passed" if all(r["check"]["passed"] for r in runs) else "FAILED"
        load_max = max(max(r["loadavg_before"]["1min"] or 0, r["loadavg_after"]["1min"] or 0)
                       for r in runs)
        lines.append(f"| {store} | {n} | {len(runs)} | {spread(rps, '{:.0f}')} | "
                     f"{spread(per_process, '{:.0f}')} | {spread(per_cpu, '{:.0f}')} | "
                     f"{spread(p99, '{:.2f}')} | {spread(conflicts, '{:.1f}')} | {checks} | "
                     f"{load_max:.2f} |")
    return "\n".join(lines)


def plot(records, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    stores = sorted({store for store, _ in groups(records)})
    for store in stores:
        points = [(n, runs) for (s, n), runs in groups(records).items() if s == store]
        ns = [n for n, _ in points]
        left.plot(ns, [statistics.median(r["requests_per_second"] for r in runs)
                       for _, runs in points], marker="o", label=store)
        right.plot(ns, [statistics.median(r["latency_ms"]["acknowledged"]["p99"] or 0
                                          for r in runs) for _, runs in points],
                   marker="o", label=store)
    left.set(xlabel="server processes", ylabel="acknowledged saves / s (median)")
    right.set(xlabel="server processes", ylabel="p99 ms (median)")
    for ax in (left, right):
        ax.set_xticks(sorted({n for _, n in groups(records)}))
        ax.legend()
        ax.grid(alpha=0.3)
    fig.suptitle("savegame, fairsched design, N server processes (2 cores, shared machine)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records")
    parser.add_argument("--plot")
    parser.add_argument("--doc")
    args = parser.parse_args()
    records = load(args.records)
    if not records:
        sys.exit("render_processes: no records in " + args.records)
    if args.doc:
        blocks.rewrite_file(args.doc, {"processes": table(records).splitlines()})
    else:
        print(table(records))
    if args.plot:
        plot(records, args.plot)


if __name__ == "__main__":
    main()
