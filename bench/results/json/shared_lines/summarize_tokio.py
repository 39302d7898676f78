#!/usr/bin/env python3
"""Per-round ratios of a raw file of interleaved yield rounds: each fairsched row against
Tokio's row of the same shape (coroutines, steps, workers), median (min-max) over the rounds.

Reads tokio_rounds.sh's files (lines as the benchmarks print them, after "round N" markers)
and files whose lines carry a build name first ("final yield/...", "take8 yield/...",
"tokio yield/..."), which name each row after its build."""
import collections
import re
import statistics as st
import sys

rates = collections.defaultdict(dict)  # (contestant, shape) -> {round: M steps/s}
round_no = None
for line in open(sys.argv[1], encoding="utf-8"):
    marker = re.match(r"round (\d+)", line)
    if marker:
        round_no = int(marker.group(1))
        continue
    fields = line.split()
    build = "" if fields[0].startswith("yield/") else fields.pop(0)
    name = fields[0]
    shape = re.search(r"coroutines:\d+/steps:\d+/workers:\d+", name).group(0)
    if name.endswith("/tokio"):
        contestant = "tokio"
        rate = float(re.search(r"([\d.]+) M items/s", line).group(1))
    else:
        contestant = (build + ":" if build else "") + name.split("/")[1]
        rate = float(re.search(r"items_per_second=([\d.]+)M", line).group(1))
    rates[(contestant, shape)][round_no] = rate
for (contestant, shape), by_round in sorted(rates.items()):
    if contestant == "tokio":
        continue
    tokio = rates[("tokio", shape)]
    ratios = [by_round[r] / tokio[r] for r in by_round if r in tokio]
    print(f"{contestant} {shape}: {st.median(by_round.values()):.1f} M steps/s, Tokio "
          f"{st.median(tokio.values()):.1f}; per round {st.median(ratios):.2f}x "
          f"({min(ratios):.2f}-{max(ratios):.2f})")
