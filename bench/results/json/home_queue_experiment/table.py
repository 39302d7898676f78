#!/usr/bin/env python3
"""table: the home-queue experiment's table (notes.md) from its raw runs.jsonl.

For every shape (coroutines x steps, workers): each contestant's million steps/s, median and
min-max over the rounds, and the prototype rows' and fairsched's ratios to Tokio, computed
round by round (median and range). Only the contestants the recording holds get a column
(first_recording/ has the earlier prototype rows). Nothing is typed by hand. Usage, from the
workspace root:
  bench/results/json/home_queue_experiment/table.py [FOLDER] [--notes NOTES.md]
FOLDER holds the recording (runs.jsonl), by default this script's folder.
With --notes the tables replace the text between <!-- table:begin --> and <!-- table:end -->
in that file instead of going to stdout.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../.."))
from tools.bench_report import blocks, hot_path_report  # noqa: E402

# Every contestant either recording holds, in column order; the ones compared with Tokio.
CONTESTANTS = ["fairsched", "fairsched_strict", "fairsched_home", "fairsched_home_skew1k",
               "fairsched_home_loose", "fairsched_home_skew16k", "fairsched_home_skew64k",
               "fairsched_home_skew_max", "fairsched_home_ceiling4k", "fairsched_home_ceiling16k",
               "home_queues_prototype", "home_queues_prototype_loose",
               "home_queues_prototype_skew4k", "home_queues_no_looks", "textbook_pool",
               "local_queue", "tokio"]
AGAINST_TOKIO = ["fairsched_home", "fairsched_home_skew1k", "fairsched_home_loose",
                 "fairsched_home_skew16k", "fairsched_home_skew64k", "fairsched_home_skew_max",
                 "fairsched_home_ceiling4k", "fairsched_home_ceiling16k",
                 "home_queues_prototype",
                 "home_queues_prototype_loose", "home_queues_prototype_skew4k",
                 "home_queues_no_looks", "fairsched", "fairsched_strict"]


def main(argv):
    notes = None
    if "--notes" in argv:
        at = argv.index("--notes")
        notes = argv[at + 1]
        argv = argv[:at] + argv[at + 2:]
    lines = []
    tables(argv, lines.append)
    if notes is None:
        print("\n".join(lines))
        return 0
    try:
        blocks.rewrite_file(notes, {"table": lines})
    except blocks.BlockError as error:
        print(f"table.py: {error}", file=sys.stderr)
        return 2
    return 0


def tables(argv, emit):
    """Passes every line of the two tables to `emit`."""
    folder = argv[0] if argv else os.path.dirname(os.path.abspath(__file__))
    table = hot_path_report.Table(hot_path_report.load_runs(folder)[0])
    shapes = sorted({args for family, _, args in table.runs if family == "yield"},
                    key=lambda a: (dict(a)["workers"], -int(dict(a)["coroutines"])))
    held = {contestant for family, contestant, _ in table.runs if family == "yield"}
    columns = [c for c in CONTESTANTS if c in held]
    against = [c for c in AGAINST_TOKIO if c in held]
    emit("| coroutines x steps, workers | " + " | ".join(columns) + " | " +
         " | ".join(f"{c} vs tokio" for c in against) + " |")
    emit("|---" * (len(columns) + len(against) + 1) + "|")
    for args in shapes:
        a = dict(args)
        row = [f"{int(a['coroutines']):,} x {int(a['steps']):,}, {a['workers']}"]
        row += [hot_path_report.fmt_range(table.values("yield", c, a, "items_per_second"), 1e-6)
                for c in columns]
        for mine in against:
            row.append(hot_path_report.fmt_ratio(table.ratio(
                ("yield", mine, a, "items_per_second"), ("yield", "tokio", a, "items_per_second"))))
        emit("| " + " | ".join(row) + " |")
    emit("")
    emit("Tasks moved per 1,000 steps (median, min-max over the rounds): by a look (from the "
         "injection queue or another ring), and taken with the own ring empty.")
    emit("")
    emit("| coroutines x steps, workers | contestant | by a look | with the own ring empty |")
    emit("|---|---|---|---|")
    for args in shapes:
        a = dict(args)
        for c in columns:
            looks = table.values("yield", c, a, "look_takes_per_1k")
            if looks:
                empty = table.values("yield", c, a, "empty_takes_per_1k")
                emit(f"| {int(a['coroutines']):,} x {int(a['steps']):,}, {a['workers']} | {c} | "
                     f"{hot_path_report.fmt_range(looks)} | {hot_path_report.fmt_range(empty)} |")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
