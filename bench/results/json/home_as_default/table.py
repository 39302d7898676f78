#!/usr/bin/env python3
"""table: what PostOrder::kHome (home_skew_ceiling 4,096) would change as the default order,
row by row of the hot path, from the raw runs.jsonl that record.sh writes (notes.md here).

For every row: the default order's and kHome's medians with their min-max over the rounds,
and kHome against the default computed round by round (median and range), oriented so that
above 1 means kHome is better (for a time per item, the default's time over kHome's); for
the yield rows also both against Tokio. Nothing is typed by hand. Usage, from the
workspace root:
  bench/results/json/home_as_default/table.py [FOLDER] [--notes NOTES.md]
With --notes the table replaces the text between <!-- table:begin --> and
<!-- table:end --> in that file instead of going to stdout.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../.."))
from tools.bench_report import blocks, hot_path_report  # noqa: E402

MILLIONS = 1e-6
# (label, family, default contestant, kHome contestant, metric, scale, unit, higher is better)
ROWS = [
    ("coroutine yield", "yield", "fairsched", "fairsched_home_ceiling4k",
     "items_per_second", MILLIONS, "M steps/s", True),
    ("re-post (w2)", "w2", "fairsched", "fairsched_home",
     hot_path_report.ips, MILLIONS, "M runs/s", True),
    ("outside one-shot posts (w1)", "w1", "fairsched", "fairsched_home",
     hot_path_report.ips, MILLIONS, "M tasks/s", True),
    ("spawn + complete", "spawn_complete", "coro", "coro_home",
     hot_path_report.ns_per_item, 1.0, "ns per spawn", False),
    ("lone coroutine yield round trip", "yield_round_trip", "coro", "coro_home",
     hot_path_report.ns_per_item, 1.0, "ns", False),
]


def describe(args):
    a = dict(args)
    parts = []
    if "coroutines" in a:
        parts.append(f"{int(a['coroutines']):,} x {int(a['steps']):,}")
    if "workers" in a:
        parts.append(f"{a['workers']} worker(s)")
    return ", ".join(parts) or "1 worker"


def tables(folder, emit):
    table = hot_path_report.Table(hot_path_report.load_runs(folder)[0])
    emit("| row | default (kBatched) | kHome, ceiling 4,096 | kHome vs default | "
         "default vs Tokio | kHome vs Tokio |")
    emit("|---|---|---|---|---|---|")
    for label, family, default, home, metric, scale, unit, higher in ROWS:
        shapes = sorted({args for fam, c, args in table.runs if fam == family and c == home},
                        key=lambda a: (dict(a).get("workers", "1"),
                                       -int(dict(a).get("coroutines", "0"))))
        for args in shapes:
            a = dict(args)
            mine, theirs = (family, home, a, metric), (family, default, a, metric)
            better = table.ratio(mine, theirs) if higher else table.ratio(theirs, mine)
            tokio = ("yield", "tokio", a, metric)
            against_tokio = [hot_path_report.fmt_ratio(table.ratio(key, tokio))
                             if family == "yield" else "-" for key in (theirs, mine)]
            emit(f"| {label}, {describe(args)} ({unit}) | "
                 f"{hot_path_report.fmt_range(table.values(*theirs), scale)} | "
                 f"{hot_path_report.fmt_range(table.values(*mine), scale)} | "
                 f"{hot_path_report.fmt_ratio(better)} | " + " | ".join(against_tokio) + " |")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default=os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--notes")
    options = parser.parse_args(argv)
    lines = []
    tables(options.folder, lines.append)
    if options.notes is None:
        print("\n".join(lines))
        return 0
    try:
        blocks.rewrite_file(options.notes, {"table": lines})
    except blocks.BlockError as error:
        print(f"table.py: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
