#!/usr/bin/env python3
"""Turns signal_bench's JSON output into the markdown table of bench/results/sync.md.

Usage: make_table.py signal_bench.json
With --benchmark_repetitions the medians are used; otherwise the single runs.
"""
import json
import re
import sys


def main():
    data = json.load(open(sys.argv[1]))
    have_aggregates = any(b.get("run_type") == "aggregate" for b in data["benchmarks"])
    rows = {}
    for b in data["benchmarks"]:
        if have_aggregates and b.get("aggregate_name") != "median":
            continue
        name = b.get("run_name", b["name"])
        m = re.match(r"signal/([a-z_]+)/(fairsched|textbook)/real_time(/threads:(\d+))?", name)
        if not m:
            continue
        case = m.group(1) + (f" ({m.group(4)} threads)" if m.group(4) else "")
        rows.setdefault(case, {})[m.group(2)] = b
    print("| case | fairsched Signal | textbook signal | ratio |")
    print("|---|---|---|---|")
    for case, r in rows.items():
        cells = []
        for impl in ["fairsched", "textbook"]:
            b = r.get(impl)
            cells.append(f"{b['real_time']:.1f} ns/op ({b['items_per_second'] / 1e6:.2f} M/s)" if b else "-")
        ratio = (f"{r['fairsched']['items_per_second'] / r['textbook']['items_per_second']:.2f}x"
                 if "fairsched" in r and "textbook" in r else "-")
        print(f"| {case} | {cells[0]} | {cells[1]} | {ratio} |")


if __name__ == "__main__":
    main()
