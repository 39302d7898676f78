#!/usr/bin/env python3
"""compare: a before/after table from two Google Benchmark runs.

For a fix measured by running the same benchmark binary built from the code before and
after it (bench/results/pathologies.md). Every benchmark name present in both runs
gets one row per requested metric; a metric is a counter name, or "real_time" /
"cpu_time" (in the benchmark's time unit). With repetitions, each side shows the median
and the min-max range over them. Nothing is typed by hand: the markdown comes from the runs.

Usage (a run is RUNS.jsonl:RUN, one line of a recording's runs.jsonl (runs.py), or a JSON
file; RUNS.jsonl:PREFIX* pools every run whose name starts with PREFIX, e.g. the rounds of
an interleaved recording, each round's values counting as repetitions):
  tools/bench_report/compare.py RUNS.jsonl:BEFORE RUNS.jsonl:AFTER \\
      --metrics real_time,rss_growth_kib [--filter REGEX] [--by-round]

--by-round (both sides pooled): adds the ratio round by round, for builds that ran
alternating in the same rounds. A run's round is the `r<N>` token of its name after the
prefix, or the one the prefix ends in (`yield_base_r3`, `sb_t16_r3_w1_fairsched`; pool with
`yield_pf4d3_r*` when another build is named `pf4d3_peek`); each round's after / before (of the
medians within the round, for rounds both sides ran) is summarised as its median (min-max)
and how many rounds were above 1.
"""

import argparse
import collections
import os
import re
import statistics
import sys

try:
    from tools.bench_report import runs as raw_runs
except ImportError:  # run as a script: the module next to this file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import runs as raw_runs


ROUND = re.compile(r"(?:^|_)r(\d+)(?=_|$)")


def round_of(run_name, prefix):
    """The round number of a pooled run: the first r<N> token that ends after the prefix."""
    for match in ROUND.finditer(run_name):
        if match.end() > len(prefix):
            return int(match.group(1))
    return None


def load(spec):
    """({benchmark name: {metric: [values over repetitions]}}, the run's context (of the
    first run, when several are pooled), {(benchmark, metric): {round: [values]}} (only for
    pooled runs whose names carry a round, see --by-round))."""
    path, sep, run = spec.rpartition(":")
    if sep and path.endswith(".jsonl") and run.endswith("*"):
        prefix = run[:-1]
        pooled = [(name, data) for name, data in raw_runs.read(path) if name.startswith(prefix)]
        if not pooled:
            raise raw_runs.RunsError(f"{path} has no run starting with {prefix!r}")
        context = dict(pooled[0][1].get("context", {}), pooled_runs=len(pooled))
    else:
        pooled = [(None, raw_runs.load(spec))]
        context = pooled[0][1].get("context", {})
    runs = {}
    by_round = collections.defaultdict(lambda: collections.defaultdict(list))
    for run_name, data in pooled:
        round_number = round_of(run_name, prefix) if run_name is not None else None
        for bench in data.get("benchmarks", []):
            if bench.get("run_type") == "aggregate":
                continue
            name = bench.get("run_name", bench["name"])
            metrics = runs.setdefault(name, {})
            for key, value in bench.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    metrics.setdefault(key, []).append(float(value))
                    if round_number is not None:
                        by_round[(name, key)][round_number].append(float(value))
            metrics.setdefault("_unit", bench.get("time_unit", "ns"))
    return runs, context, by_round


def round_ratios(before_rounds, after_rounds):
    """after / before of the within-round medians, for every round both sides ran."""
    common = sorted(set(before_rounds) & set(after_rounds))
    return [statistics.median(after_rounds[r]) / statistics.median(before_rounds[r])
            for r in common if statistics.median(before_rounds[r])]


def describe(values):
    if len(values) == 1:
        return f"{values[0]:.4g}"
    return f"{statistics.median(values):.4g} ({min(values):.4g}-{max(values):.4g})"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--metrics", required=True, help="comma-separated metric names")
    parser.add_argument("--filter", default="", help="only benchmark names matching this regex")
    parser.add_argument("--by-round", action="store_true",
                        help="add the per-round ratio (runs named with an r<N> round)")
    args = parser.parse_args(argv)
    before, before_context, before_rounds = load(args.before)
    after, after_context, after_rounds = load(args.after)
    if args.by_round and not (before_rounds and after_rounds):
        raise raw_runs.RunsError("--by-round needs two pooled specs whose run names carry r<N>")
    metrics = [m for m in args.metrics.split(",") if m]
    pattern = re.compile(args.filter)
    if args.by_round:
        print("| benchmark | metric | before | after | after / before "
              "| after / before by round | rounds above 1 |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    else:
        print("| benchmark | metric | before | after | after / before |")
        print("| --- | --- | ---: | ---: | ---: |")
    for name in before:
        if name not in after or not pattern.search(name):
            continue
        for metric in metrics:
            b, a = before[name].get(metric), after[name].get(metric)
            if not b or not a:
                continue
            label = metric
            if metric in ("real_time", "cpu_time"):
                label = f"{metric} ({before[name]['_unit']})"
            ratio = statistics.median(a) / statistics.median(b) if statistics.median(b) else 0
            row = f"| {name} | {label} | {describe(b)} | {describe(a)} | {ratio:.3g} |"
            if args.by_round:
                ratios = round_ratios(before_rounds[(name, metric)], after_rounds[(name, metric)])
                above = sum(r > 1 for r in ratios)
                row += (f" {statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f}) "
                        f"| {above} of {len(ratios)} |" if ratios else " - | - |")
            print(row)
    for label, context in (("before", before_context), ("after", after_context)):
        load_avg = context.get("load_avg", [])
        loads = ", ".join(f"{x:.2f}" for x in load_avg) if load_avg else "not recorded"
        pooled = context.get("pooled_runs")
        first = f" (the first of {pooled} pooled runs)" if pooled else ""
        print(f"\n{label}: {context.get('date', '?')}{first}, {context.get('num_cpus', '?')} CPUs, "
              f"load average {loads}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
