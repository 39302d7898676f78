#!/usr/bin/env python3
"""Figures of cell_ab.sh's output: per variant the median requests/s and server CPU us per
request over the rounds, and the per-round ratio of requests/s to BASE (median, range and
every round's value, sorted). Usage: summarize.py rounds_N.txt BASE"""
import collections
import statistics
import sys


def main(path, base):
    rps = collections.defaultdict(dict)
    cpu = collections.defaultdict(dict)
    for line in open(path):
        fields = dict(part.split("=", 1) for part in line.split())
        rps[fields["variant"]][int(fields["round"])] = float(fields["rps"])
        cpu[fields["variant"]][int(fields["round"])] = float(fields["server_cpu_us_per_req"])
    for variant in sorted(rps):
        print(f"{variant}: requests/s {statistics.median(rps[variant].values()):,.0f}, "
              f"server CPU us per request {statistics.median(cpu[variant].values()):.2f}, "
              f"{len(rps[variant])} rounds")
        if variant == base:
            continue
        ratios = sorted(rps[variant][r] / rps[base][r] for r in rps[variant] if r in rps[base])
        print(f"  vs {base}: median {statistics.median(ratios):.2f} "
              f"({ratios[0]:.2f}-{ratios[-1]:.2f}); rounds: "
              + ", ".join(f"{x:.2f}" for x in ratios))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
