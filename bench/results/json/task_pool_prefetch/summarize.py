#!/usr/bin/env python3
"""Summarizes ab.sh's raw output: per row, each variant's median (min-max) in M items/s,
and the per-round ratios of each variant to the first one named (median, min-max).
Usage: summarize.py RAW.txt BASE [OTHER...]"""
import re
import statistics
import sys


def main():
    raw, names = sys.argv[1], sys.argv[2:]
    runs = {}  # (variant, row) -> [M/s per round, in order]
    for line in open(raw):
        m = re.match(r"(\S+) (\S+) items_per_second=([0-9.]+)([kMG]?)/s", line)
        if not m:
            continue
        scale = {"k": 1e-3, "M": 1.0, "G": 1e3, "": 1e-6}[m.group(4)]
        row = m.group(2).split("/iterations")[0]
        runs.setdefault((m.group(1), row), []).append(float(m.group(3)) * scale)
    rows = sorted({row for (_, row) in runs})
    print("| row | " + " | ".join(names) + " | " +
          " | ".join(f"{n} / {names[0]}" for n in names[1:]) + " |")
    print("|---" * (2 * len(names)) + "|")
    for row in rows:
        cells, ratios = [], []
        for n in names:
            v = runs.get((n, row))
            cells.append(f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f}), {len(v)} runs"
                         if v else "n/a")
        base = runs.get((names[0], row))
        for n in names[1:]:
            v = runs.get((n, row))
            if not v or not base:
                ratios.append("n/a")
                continue
            r = [a / b for a, b in zip(v, base)]
            ratios.append(f"{statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f})")
        print(f"| {row} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")


if __name__ == "__main__":
    main()
