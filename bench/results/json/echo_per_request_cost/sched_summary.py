#!/usr/bin/env python3
"""Summarizes sched_ab.sh's JSON files: for each row, a metric of the variant against the
`base` variant as the median (min-max) of per-round ratios, with each side's median.
w1/w2: items per second (higher is better); wake: p50 and p99 post-to-start (lower is
better); idle_cpu: percent of one core while idle (lower is better).
  sched_summary.py <dir> [base] [variant]"""
import collections
import glob
import json
import os
import re
import statistics
import sys


def rows(path):
    result = {}
    for bench in json.load(open(path))["benchmarks"]:
        name = bench["name"]
        if name.startswith("idle_cpu/"):
            if bench.get("aggregate_name") == "median":
                result[name.split("/iterations")[0]] = {
                    "cpu%": bench["cpu_percent_of_one_core"]}
        elif bench.get("aggregate_name") == "median":
            key = name.split("/iterations")[0]
            if "p50_us" in bench:
                result[key] = {"p50_us": bench["p50_us"], "p99_us": bench["p99_us"]}
            else:
                result[key] = {"items/s": bench["items_per_second"]}
    return result


def main():
    directory = sys.argv[1]
    base = sys.argv[2] if len(sys.argv) > 2 else "base"
    variant = sys.argv[3] if len(sys.argv) > 3 else "yields3"
    per_round = collections.defaultdict(dict)
    for path in glob.glob(os.path.join(directory, "*_r*.json")):
        match = re.match(r"(.*)_r(\d+)\.json$", os.path.basename(path))
        per_round[int(match.group(2))][match.group(1)] = rows(path)
    print(f"| row | metric | {base} (median) | {variant} (median) | {variant}/{base} per round | rounds |")
    print("|---|---|---|---|---|---|")
    keys = sorted({(row, metric) for r in per_round.values() if base in r
                   for row, metrics in r[base].items() for metric in metrics})
    for row, metric in keys:
        a, b, ratios = [], [], []
        for r in per_round.values():
            if base in r and variant in r and row in r[base] and row in r[variant]:
                x, y = r[base][row][metric], r[variant][row][metric]
                a.append(x)
                b.append(y)
                if x:
                    ratios.append(y / x)
        if not ratios:
            continue
        print(f"| {row} | {metric} | {statistics.median(a):.4g} | {statistics.median(b):.4g} | "
              f"{statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f}) | {len(ratios)} |")


if __name__ == "__main__":
    main()
