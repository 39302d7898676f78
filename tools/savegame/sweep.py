#!/usr/bin/env python3
"""Open-loop sweep of the savegame job (//examples:savegame): runs each offered rate for
both designs, alternating which design goes first from one rate to the next (and from one
round to the next), so that a drift in the machine's load hits both alike. Every run writes
its own JSON record (examples/savegame/savegame.h, RunRecordJson) into OUT as
<design>-rate<rate>-round<k>.json; a run whose check fails is kept (its record says so)
and the sweep goes on. Prints one line per run.

    tools/savegame/sweep.py --binary bazel-bin/examples/savegame --out DIR \\
        --rates 2000,4000,8000 [--duration 10] [--connections 256] [--rounds 1] \\
        [--designs fairsched,updater] [-- extra savegame flags]

plot_open_loop.py draws the records; record_open_loop.sh builds, sweeps and plots in one go.
"""

import argparse
import json
import os
import subprocess
import sys
import time


def run_order(designs, rate_index, round_index):
    """The designs in the order they run at this rate: reversed on every other step."""
    return list(designs) if (rate_index + round_index) % 2 == 0 else list(reversed(designs))


def record_name(design, rate, round_index):
    return "%s-rate%g-round%d.json" % (design, rate, round_index)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True, help="the savegame binary")
    parser.add_argument("--out", required=True, help="directory for the JSON records")
    parser.add_argument("--rates", required=True,
                        help="comma-separated offered rates, requests per second")
    parser.add_argument("--duration", type=float, default=10, help="seconds per run")
    parser.add_argument("--connections", type=int, default=256,
                        help="client connections (the most requests in flight)")
    parser.add_argument("--rounds", type=int, default=1, help="passes over the rates")
    parser.add_argument("--designs", default="fairsched,updater")
    parser.add_argument("--seed", type=int, default=1,
                        help="fleet seed of the first run; each run adds its index")
    parser.add_argument("extra", nargs="*", help="more savegame flags (after --)")
    args = parser.parse_args(argv)

    rates = [float(r) for r in args.rates.split(",") if r]
    designs = [d for d in args.designs.split(",") if d]
    if not rates or any(r <= 0 for r in rates):
        parser.error("--rates needs positive rates")
    if not designs or any(d not in ("fairsched", "updater") for d in designs):
        parser.error("--designs takes fairsched and/or updater")
    os.makedirs(args.out, exist_ok=True)

    failures = 0
    index = 0
    for round_index in range(args.rounds):
        for rate_index, rate in enumerate(rates):
            for design in run_order(designs, rate_index, round_index):
                path = os.path.join(args.out, record_name(design, rate, round_index))
                command = [args.binary, "--design=" + design, "--rate=%g" % rate,
                           "--duration=%g" % args.duration,
                           "--connections=%d" % args.connections,
                           "--seed=%d" % (args.seed + index), "--json=" + path] + args.extra
                index += 1
                began = time.monotonic()
                completed = subprocess.run(command, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.PIPE, text=True)
                seconds = time.monotonic() - began
                if not os.path.exists(path):
                    print("%-9s rate %8g round %d: no record (exit %d): %s" %
                          (design, rate, round_index, completed.returncode,
                           completed.stderr.strip()), flush=True)
                    failures += 1
                    continue
                with open(path) as f:
                    record = json.load(f)
                latency = record["latency_ms"]["acknowledged"]
                check = record["check"]
                if not check["passed"]:
                    failures += 1
                print("%-9s rate %8g round %d: %8.0f req/s  p50 %s  p99 %s  p999 %s ms  "
                      "unsent %d  load %.2f  check %s  (%.1f s)" %
                      (design, rate, round_index, record["requests_per_second"],
                       latency["p50"], latency["p99"], latency["p999"], record["unsent"],
                       record["loadavg_before"]["1min"],
                       "ok" if check["passed"] else "FAILED: " + check["message"], seconds),
                      flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
