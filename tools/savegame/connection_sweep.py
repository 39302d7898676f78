#!/usr/bin/env python3
"""Connection sweep of the savegame job (//examples:savegame), closed loop: each of
--points client connections keeps one save in flight, so the points are the requests in
flight (16 ... 10,000). At every point it runs each server -- fairsched, the Updater with
its default tick ("updater") and with the talk's slow tick ("updater_tick<T>", --slow_tick,
100 ms) -- on a uniform workload and on a skewed one (--heavy_users users save
--heavy_factor times as often, each save that many times larger), so that the Updater's
walk over every job at each tick and what its pinning does to the per-worker CPU show.
The order of the runs alternates from one point to the next. Each run's JSON record
(examples/savegame/savegame.h) becomes one line of OUT/runs.jsonl (savegame_runs.py),
named <server>-<workload>-conn<N>-round<k>; the sweep replaces an earlier runs.jsonl there.
OUT/plan.json: the points asked for and run, and why a point was lowered.

Open files: the runs put the client fleet in a child process (--fleet=process), so the
job's process needs one descriptor per connection (the server side) plus 2 per store
connection (at most one per user); 10,000 connections fit under a 20,000 limit. The job
raises its soft RLIMIT_NOFILE to the hard limit (and the hard one when it may). A point the
hard limit cannot hold is lowered to the largest multiple of 500 connections that fits, and
plan.json says so.

    tools/savegame/connection_sweep.py --binary bazel-bin/examples/savegame --out DIR \\
        [--points 16,64,256,1000,4000,10000] [--duration 3] [--rounds 1] [--users 1000] \\
        [--slow_tick 100] [--heavy_users 4 --heavy_factor 10] [--step_timeout 1000] \\
        [--estimate] [-- extra savegame flags]

report.py summarises and plots the records.
"""

import argparse
import json
import os
import resource
import sys

import savegame_runs

# Seconds a run takes beyond --duration: start, drain and check, plus connecting the fleet
# and closing it (measured: ~4 s more at 8,500 connections on the 2-core machine).
RUN_OVERHEAD_S = 1.5
CONNECT_S_PER_CONNECTION = 1 / 2000.0
WORKLOADS = ("uniform", "skewed")


def descriptors_needed(connections, users):
    """What the job asks for with --fleet=process (examples/savegame/savegame.cc,
    DescriptorsNeeded)."""
    return connections + 2 * min(connections, users) + 256


def largest_fitting(limit, users):
    """The most connections, a multiple of 500, whose descriptors fit under `limit`."""
    connections = 0
    while descriptors_needed(connections + 500, users) <= limit:
        connections += 500
    return connections


def servers(slow_tick_ms):
    """(name, flags) of each server configuration."""
    return [("fairsched", ["--design=fairsched"]),
            ("updater", ["--design=updater"]),
            ("updater_tick%g" % slow_tick_ms,
             ["--design=updater", "--updater_tick=%g" % slow_tick_ms])]


def plan_points(points, users):
    """The points to run under this process's hard open-file limit, and the notes."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    run, notes = [], []
    for point in points:
        needed = descriptors_needed(point, users)
        if hard == resource.RLIM_INFINITY or needed <= hard or _can_raise(needed):
            run.append(point)
            continue
        lowered = largest_fitting(hard, users)
        notes.append("%d connections need about %d open files; the hard RLIMIT_NOFILE is %d "
                     "and this process may not raise it (no CAP_SYS_RESOURCE): the sweep "
                     "runs %d instead" % (point, needed, hard, lowered))
        if lowered > 0 and lowered not in run:
            run.append(lowered)
    return sorted(set(run)), hard, notes


def _can_raise(needed):
    """Whether the hard open-file limit can be raised to `needed` (tried, then restored)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, needed))
    except (ValueError, OSError):
        return False
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return True


def worker_cpu(record):
    return "worker CPU %s s" % " / ".join(
        "%.2f" % c for c in savegame_runs.role_seconds(record, "server"))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", help="the savegame binary (needed unless --estimate)")
    parser.add_argument("--out", help="folder for runs.jsonl, the runs' JSON records, "
                        "and plan.json")
    parser.add_argument("--points", default="16,64,256,1000,4000,10000",
                        help="comma-separated client connections (requests in flight)")
    parser.add_argument("--duration", type=float, default=3, help="seconds per run")
    parser.add_argument("--rounds", type=int, default=1, help="passes over the points")
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--slow_tick", type=float, default=100,
                        help="the talk-like Updater tick, ms")
    parser.add_argument("--heavy_users", type=int, default=4)
    parser.add_argument("--heavy_factor", type=int, default=10)
    parser.add_argument("--step_timeout", type=float, default=1000,
                        help="ms per network step: 10,000 saves in flight on 1,000 users "
                        "queue on the profile locks for longer than the job's 100 ms")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--estimate", action="store_true",
                        help="only print the number of runs and the estimated time")
    parser.add_argument("extra", nargs="*", help="more savegame flags (after --)")
    args = parser.parse_args(argv)

    points = [int(p) for p in args.points.split(",") if p]
    if not points or any(p < 1 or p > 10000 for p in points):
        parser.error("--points takes connection counts from 1 to 10000")
    if args.rounds < 1 or args.users < 1 or args.heavy_factor < 1:
        parser.error("--rounds, --users and --heavy_factor must be at least 1")
    if not 0 < args.heavy_users <= args.users:
        parser.error("--heavy_users must be between 1 and --users")
    points, hard_limit, notes = plan_points(points, args.users)
    configurations = [(server, flags, workload) for server, flags in servers(args.slow_tick)
                      for workload in WORKLOADS]
    runs = args.rounds * len(points) * len(configurations)
    if args.estimate:
        seconds = sum(args.duration + RUN_OVERHEAD_S + p * CONNECT_S_PER_CONNECTION
                      for p in points) / len(points)
        savegame_runs.print_estimate("connection sweep", runs, seconds)
        for note in notes:
            print("  " + note)
        return 0
    if not args.binary or not args.out:
        parser.error("--binary and --out are needed to run")
    runs_path = savegame_runs.new_runs_file(args.out)
    with open(os.path.join(args.out, "plan.json"), "w") as f:
        json.dump({"points_requested": [int(p) for p in args.points.split(",") if p],
                   "points_run": points, "hard_nofile_limit": hard_limit, "notes": notes,
                   "heavy_users": args.heavy_users, "heavy_factor": args.heavy_factor,
                   "slow_tick_ms": args.slow_tick, "users": args.users,
                   "step_timeout_ms": args.step_timeout}, f, indent=1)
        f.write("\n")
    for note in notes:
        print(note, flush=True)

    failures = 0
    index = 0
    for round_index in range(args.rounds):
        for point_index, point in enumerate(points):
            order = savegame_runs.alternate(configurations, point_index + round_index)
            for server, server_flags, workload in order:
                name = "%s-%s-conn%d-round%d" % (server, workload, point, round_index)
                flags = server_flags + [
                    "--fleet=process", "--connections=%d" % point, "--users=%d" % args.users,
                    "--duration=%g" % args.duration, "--step_timeout=%g" % args.step_timeout,
                    "--seed=%d" % (args.seed + index)]
                if workload == "skewed":
                    flags += ["--heavy_users=%d" % args.heavy_users,
                              "--heavy_factor=%d" % args.heavy_factor]
                index += 1
                if not savegame_runs.run_and_print(
                        args.binary, runs_path, name, flags + args.extra,
                        "%-16s %-7s conn %5d round %d: " % (server, workload, point,
                                                              round_index),
                        worker_cpu):
                    failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
