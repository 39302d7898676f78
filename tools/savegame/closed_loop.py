#!/usr/bin/env python3
"""Repeated, alternated closed-loop runs of the savegame job (//examples:savegame): each
design runs --runs times with the job's default workload (or the extra flags), in the order
A B B A A B B A ... so that a drift in the machine's load hits both designs alike and
neither always goes first. Each run's JSON record (examples/savegame/savegame.h) becomes
one line of OUT/runs.jsonl (savegame_runs.py), named <index>-<design> (the index is the run
order); the runs replace an earlier runs.jsonl there. report.py gives the median and
min-max per design.

    tools/savegame/closed_loop.py --binary bazel-bin/examples/savegame --out DIR \\
        [--runs 5] [--duration 5] [--designs fairsched,updater] [--estimate] \\
        [-- extra savegame flags]
"""

import argparse
import sys

import savegame_runs

RUN_OVERHEAD_S = 1.0  # start, drain, check


def run_order(designs, runs):
    """Each design `runs` times: A B, B A, A B, ... (a pair per step, reversed every other)."""
    order = []
    for step in range(runs):
        order += savegame_runs.alternate(designs, step)
    return order


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", help="the savegame binary (needed unless --estimate)")
    parser.add_argument("--out", help="folder for runs.jsonl, the runs' JSON records")
    parser.add_argument("--runs", type=int, default=5, help="runs per design")
    parser.add_argument("--duration", type=float, default=5, help="seconds per run")
    parser.add_argument("--designs", default="fairsched,updater")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--estimate", action="store_true",
                        help="only print the number of runs and the estimated time")
    parser.add_argument("extra", nargs="*", help="more savegame flags (after --)")
    args = parser.parse_args(argv)

    designs = [d for d in args.designs.split(",") if d]
    if not designs or any(d not in ("fairsched", "updater") for d in designs):
        parser.error("--designs takes fairsched and/or updater")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    order = run_order(designs, args.runs)
    if args.estimate:
        savegame_runs.print_estimate("closed-loop runs", len(order),
                                     args.duration + RUN_OVERHEAD_S)
        return 0
    if not args.binary or not args.out:
        parser.error("--binary and --out are needed to run")
    runs_path = savegame_runs.new_runs_file(args.out)

    failures = 0
    for index, design in enumerate(order):
        flags = ["--design=" + design, "--duration=%g" % args.duration,
                 "--seed=%d" % (args.seed + index)] + args.extra
        if not savegame_runs.run_and_print(args.binary, runs_path,
                                           "%02d-%s" % (index, design), flags,
                                           "%2d %-9s: " % (index, design)):
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
