#!/usr/bin/env python3
"""Table of ab.sh's output: per variant and row, the median (min-max) of million steps/s
over the rounds, and the median (min-max) of the per-round ratios to the base build and to
Tokio. Usage: summarize.py rounds_N.txt"""
import collections
import statistics
import sys


def main(path):
    values = collections.defaultdict(dict)  # (variant, row) -> {round: msteps}
    for line in open(path):
        fields = dict(part.split("=", 1) for part in line.split())
        values[(fields["variant"], fields["row"])][int(fields["round"])] = float(fields["msteps"])
    rows = sorted({row for _, row in values}, key=lambda r: -int(r.split("x")[0]))
    variants = []
    for variant, _ in values:
        if variant not in variants:
            variants.append(variant)

    def span(xs):
        return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"

    def ratios(a, b):
        return [a[r] / b[r] for r in a if r in b]

    print("| variant | row (2 workers) | M steps/s | vs base | vs Tokio | rounds |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        for variant in variants:
            mine = values.get((variant, row))
            if not mine:
                continue
            base = values.get(("base", row), {})
            tokio = values.get(("tokio", row), {})
            vs_base = span(ratios(mine, base)) if variant != "base" and base else "-"
            vs_tokio = span(ratios(mine, tokio)) if variant != "tokio" and tokio else "-"
            print(f"| {variant} | {row} | {span(list(mine.values()))} | {vs_base} | {vs_tokio} "
                  f"| {len(mine)} |")


if __name__ == "__main__":
    main(sys.argv[1])
