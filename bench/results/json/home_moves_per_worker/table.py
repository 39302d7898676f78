#!/usr/bin/env python3
"""Prints the table of notes.md from runs.jsonl: per run, each kHome two-worker row's
speed and the look takes per 1,000 steps of each worker (yield_bench with
per_worker_takes.patch)."""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
print("| run | 100,000 x 100: M steps/s | takes/1k by w0 | by w1 "
      "| 10,000 x 1,000: M steps/s | by w0 | by w1 |")
print("|---|---|---|---|---|---|---|")
with open(os.path.join(HERE, "runs.jsonl")) as f:
    for line in f:
        run = json.loads(line)
        cells = [run["run"].rsplit("_r", 1)[1]]
        for shape in ("coroutines:100000/", "coroutines:10000/"):
            row = next(b for b in run["benchmarks"] if shape in b["name"])
            cells += [f"{row['items_per_second'] / 1e6:.1f}",
                      f"{row['look_takes_per_1k_w0']:.1f}", f"{row['look_takes_per_1k_w1']:.1f}"]
        print("| " + " | ".join(cells) + " |")
