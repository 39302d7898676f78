#!/usr/bin/env python3
"""Summarises raw.txt (sched_bench w1 rows, the shipped task pool against big_pool.patch,
alternating by round) as a markdown table: medians (min-max) over the rounds, the per-round
ratio big/small, and the poster's fresh one-shot allocations per task."""
import collections
import os
import re
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))
rows = collections.defaultdict(lambda: collections.defaultdict(dict))
with open(os.path.join(here, "raw.txt")) as raw:
    for line in raw:
        fields = line.split()
        round_name, build, name = fields[0], fields[1], fields[2]
        row = re.sub(r"/iterations.*", "", name)
        rate = float(re.search(r"items_per_second=([\d.]+)M", line).group(1))
        allocs = float(re.search(r"one_shot_allocs_per_task=([\d.]+)", line).group(1))
        rows[row][build][round_name] = (rate, allocs)


def spread(values, fmt):
    values = list(values)
    return (fmt % statistics.median(values)) + " (" + (fmt % min(values)) + "-" + (
        fmt % max(values)) + ")"


print("| row | shipped (M tasks/s) | shared tier x64 (M tasks/s) | x64 vs shipped, per round "
      "| allocations per task, shipped | allocations per task, x64 |")
print("|---|---|---|---|---|---|")
for row, builds in rows.items():
    small, big = builds["small"], builds["big"]
    rounds = sorted(set(small) & set(big))
    ratios = [big[r][0] / small[r][0] for r in rounds]
    print(f"| {row} | {spread((small[r][0] for r in rounds), '%.1f')} "
          f"| {spread((big[r][0] for r in rounds), '%.1f')} | {spread(ratios, '%.2fx')} "
          f"| {spread((small[r][1] for r in rounds), '%.3f')} "
          f"| {spread((big[r][1] for r in rounds), '%.3f')} |")
sys.exit(0)
