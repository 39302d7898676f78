#!/usr/bin/env python3
"""Summarizes ab.sh's lines: per backend and cell, each variant's requests/s and server CPU
per request against the variant named `base`, as the median (min-max) of per-round ratios.
  summarize.py <ab-lines.txt> [base]"""
import collections
import statistics
import sys


def main():
    path = sys.argv[1]
    base = sys.argv[2] if len(sys.argv) > 2 else "base"
    runs = collections.defaultdict(dict)  # (backend, label, round) -> variant -> fields
    for line in open(path):
        fields = dict(item.split("=", 1) for item in line.split())
        if fields.get("failed") == "1" or "rps" not in fields:
            print("failed run:", line.strip())
            continue
        key = (fields["backend"], fields["label"], int(fields["round"]))
        runs[key][fields["variant"]] = fields
    variants = sorted({v for per in runs.values() for v in per if v != base})
    cells = sorted({(b, l) for b, l, _ in runs})
    print("| backend | cell | variant | rps/base | server CPU us/req (base -> variant) | rounds |")
    print("|---|---|---|---|---|---|")
    for backend, label in cells:
        for variant in variants:
            rps, cpu_base, cpu_var = [], [], []
            for (b, l, r), per in sorted(runs.items()):
                if (b, l) != (backend, label) or base not in per or variant not in per:
                    continue
                rps.append(float(per[variant]["rps"]) / float(per[base]["rps"]))
                cpu_base.append(float(per[base]["server_cpu_us_per_req"]))
                cpu_var.append(float(per[variant]["server_cpu_us_per_req"]))
            if not rps:
                continue
            print(f"| {backend} | {label} | {variant} | {statistics.median(rps):.3f} "
                  f"({min(rps):.2f}-{max(rps):.2f}) | {statistics.median(cpu_base):.2f} -> "
                  f"{statistics.median(cpu_var):.2f} | {len(rps)} |")


if __name__ == "__main__":
    main()
