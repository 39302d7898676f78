#!/usr/bin/env python3
"""Open-loop sweep of the savegame job (//examples:savegame): runs each offered rate for
both designs, alternating which design goes first from one rate to the next (and from one
round to the next), so that a drift in the machine's load hits both alike. Every run's JSON
record (examples/savegame/savegame.h, RunRecordJson) becomes one line of OUT/runs.jsonl
(savegame_runs.py), named <design>-rate<rate>-round<k>; the sweep replaces an earlier
runs.jsonl there. A run whose check fails is kept (its record says so) and the sweep goes
on. Prints one line per run.

    tools/savegame/sweep.py --binary bazel-bin/examples/savegame --out DIR \\
        --rates 2000,4000,8000 [--duration 10] [--connections 256] [--rounds 1] \\
        [--designs fairsched,updater] [-- extra savegame flags]

plot_open_loop.py draws the records; record_open_loop.sh builds, sweeps and plots in one go;
--estimate prints the plan's run count and time instead (tools/savegame/record_all.sh).
"""

import argparse
import sys

import savegame_runs

# Seconds a run takes beyond --duration (start, drain, check); past saturation the drain
# adds up to twice --drain_timeout (the estimate assumes the first half of the rates hold).
RUN_OVERHEAD_S = 1.0


def run_order(designs, rate_index, round_index):
    """The designs in the order they run at this rate: reversed on every other step."""
    return savegame_runs.alternate(designs, rate_index + round_index)


def run_name(design, rate, round_index):
    return "%s-rate%g-round%d" % (design, rate, round_index)


def drain_timeout(extra):
    """The --drain_timeout among the extra flags (the job's default: 10 s)."""
    for flag in extra:
        if flag.startswith("--drain_timeout="):
            return float(flag.split("=", 1)[1])
    return 10.0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", help="the savegame binary (needed unless --estimate)")
    parser.add_argument("--out", help="folder for runs.jsonl, the runs' JSON records")
    parser.add_argument("--rates", required=True,
                        help="comma-separated offered rates, requests per second")
    parser.add_argument("--duration", type=float, default=10, help="seconds per run")
    parser.add_argument("--connections", type=int, default=256,
                        help="client connections (the most requests in flight)")
    parser.add_argument("--rounds", type=int, default=1, help="passes over the rates")
    parser.add_argument("--designs", default="fairsched,updater")
    parser.add_argument("--seed", type=int, default=1,
                        help="fleet seed of the first run; each run adds its index")
    parser.add_argument("--estimate", action="store_true",
                        help="only print the number of runs and the estimated time")
    parser.add_argument("extra", nargs="*", help="more savegame flags (after --)")
    args = parser.parse_args(argv)

    rates = [float(r) for r in args.rates.split(",") if r]
    designs = [d for d in args.designs.split(",") if d]
    if not rates or any(r <= 0 for r in rates):
        parser.error("--rates needs positive rates")
    if not designs or any(d not in ("fairsched", "updater") for d in designs):
        parser.error("--designs takes fairsched and/or updater")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    runs = args.rounds * len(rates) * len(designs)
    if args.estimate:
        savegame_runs.print_estimate(
            "open-loop sweep", runs,
            args.duration + RUN_OVERHEAD_S + drain_timeout(args.extra))
        return 0
    if not args.binary or not args.out:
        parser.error("--binary and --out are needed to run")
    runs_path = savegame_runs.new_runs_file(args.out)

    failures = 0
    index = 0
    for round_index in range(args.rounds):
        for rate_index, rate in enumerate(rates):
            for design in run_order(designs, rate_index, round_index):
                flags = ["--design=" + design, "--rate=%g" % rate,
                         "--duration=%g" % args.duration,
                         "--connections=%d" % args.connections,
                         "--seed=%d" % (args.seed + index)] + args.extra
                index += 1
                if not savegame_runs.run_and_print(
                        args.binary, runs_path, run_name(design, rate, round_index), flags,
                        "%-9s rate %8g round %d: " % (design, rate, round_index),
                        lambda record: "unsent %d" % record["unsent"]):
                    failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
