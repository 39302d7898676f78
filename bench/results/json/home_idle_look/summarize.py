#!/usr/bin/env python3
"""Per-row medians and per-round after/before ratios of ab.sh's raw file (items per second)."""
import collections
import re
import statistics as st
import sys

rows = collections.defaultdict(lambda: collections.defaultdict(list))
round_no = None
for line in open(sys.argv[1] if len(sys.argv) > 1 else "raw_6_rounds.txt", encoding="utf-8"):
    marker = re.match(r"round (\d+) (\w+)", line)
    if marker:
        round_no = int(marker.group(1))
        continue
    build, name = line.split()[0], line.split()[1]
    rate = float(re.search(r"items_per_second=([\d.]+)M", line).group(1))
    key = name.split("/min_time")[0].split("/iterations")[0]
    rows[key][(round_no, build)].append(rate)
for key, cells in rows.items():
    rounds = sorted({r for r, _ in cells})
    before = [st.median(cells[(r, "before")]) for r in rounds]
    after = [st.median(cells[(r, "after")]) for r in rounds]
    ratios = [a / b for a, b in zip(after, before)]
    print(f"{key}: before {st.median(before):.1f}, after {st.median(after):.1f} M/s; "
          f"after/before by round {st.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
