#!/usr/bin/env python3
"""Prints, per build and kHome row of shorter_rule_6rounds.jsonl, the speed (M steps/s) and
the look takes per 1,000 steps of each round, as in notes.md."""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
rows = {}
with open(os.path.join(HERE, "shorter_rule_6rounds.jsonl")) as f:
    for line in f:
        run = json.loads(line)
        build = run["run"].split("yield_bench_", 1)[1].rsplit("_r", 1)[0]
        for b in run["benchmarks"]:
            row = b["name"].split("/min_time")[0].replace("yield/fairsched_home_", "")
            rows.setdefault((build, row), []).append(b)
print("| build | row | M steps/s by round | look takes per 1,000 steps by round |")
print("|---|---|---|---|")
for (build, row), runs in sorted(rows.items()):
    speeds = ", ".join(f"{b['items_per_second'] / 1e6:.1f}" for b in runs)
    takes = ", ".join(f"{b['look_takes_per_1k']:.0f}" for b in runs)
    print(f"| {build} | {row} | {speeds} | {takes} |")
