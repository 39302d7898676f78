#!/usr/bin/env python3
"""table: the home-queue experiment's table (notes.md) from its raw runs.jsonl.

For every shape (coroutines x steps, workers): each contestant's million steps/s, median and
min-max over the rounds, and the prototype's and fairsched's ratios to Tokio, computed round
by round (median and range). Nothing is typed by hand. Usage, from the workspace root:
  bench/results/json/home_queue_experiment/table.py [RUNS.jsonl] [--notes NOTES.md]
With --notes the tables replace the text between <!-- table:begin --> and <!-- table:end -->
in that file instead of going to stdout.
"""

import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../.."))
from tools.bench_report import blocks, runs as raw_runs  # noqa: E402
from tools.bench_report.hot_path_report import parse_name  # noqa: E402

CONTESTANTS = ["fairsched", "home_queues_prototype", "home_queues_prototype_skew4k", "textbook_pool",
               "local_queue", "tokio"]


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
    path = argv[0] if argv else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                             "runs.jsonl")
    # {(args, contestant): {round: million steps/s}}, and the same for the prototype's counters
    values = {}
    counters = {}
    for run, data in raw_runs.read(path):
        match = re.search(r"_r(\d+)$", run)
        if not match:
            continue
        for bench in data.get("benchmarks", []):
            if bench.get("run_type", "iteration") != "iteration" or "items_per_second" not in bench:
                continue
            family, contestant, args = parse_name(bench.get("run_name", bench["name"]))
            if family != "yield" or contestant not in CONTESTANTS:
                continue
            values.setdefault((args, contestant), {})[int(match.group(1))] = \
                bench["items_per_second"] / 1e6
            for counter in ("look_takes_per_1k", "empty_takes_per_1k"):
                if counter in bench:
                    counters.setdefault((args, contestant, counter), []).append(bench[counter])
    shapes = sorted({args for args, _ in values},
                    key=lambda a: (dict(a)["workers"], -int(dict(a)["coroutines"])))

    def cell(numbers):
        if not numbers:
            return "n/a"
        return f"{statistics.median(numbers):.1f} ({min(numbers):.1f}-{max(numbers):.1f})"

    emit("| coroutines x steps, workers | " + " | ".join(CONTESTANTS) +
         " | prototype vs tokio | skew4k vs tokio | fairsched vs tokio |")
    emit("|---" * (len(CONTESTANTS) + 4) + "|")
    for args in shapes:
        a = dict(args)
        row = [f"{int(a['coroutines']):,} x {int(a['steps']):,}, {a['workers']}"]
        row += [cell(list(values.get((args, c), {}).values())) for c in CONTESTANTS]
        tokio = values.get((args, "tokio"), {})
        for mine in ("home_queues_prototype", "home_queues_prototype_skew4k", "fairsched"):
            ours = values.get((args, mine), {})
            ratios = [ours[r] / tokio[r] for r in ours if r in tokio and tokio[r] > 0]
            row.append(f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
                       if ratios else "n/a")
        emit("| " + " | ".join(row) + " |")
    emit("")
    emit("Tasks moved per 1,000 steps (median, min-max over the rounds): by a look (from the "
         "injection queue or another ring), and taken with the own ring empty.")
    emit("")
    emit("| coroutines x steps, workers | contestant | by a look | with the own ring empty |")
    emit("|---|---|---|---|")
    for args in shapes:
        a = dict(args)
        for c in CONTESTANTS:
            looks = counters.get((args, c, "look_takes_per_1k"))
            if looks:
                empty = counters.get((args, c, "empty_takes_per_1k"), [])
                emit(f"| {int(a['coroutines']):,} x {int(a['steps']):,}, {a['workers']} | {c} | "
                     f"{cell(looks)} | {cell(empty)} |")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
