#!/usr/bin/env bash
# Records the scheduler and signal benchmarks with the settings bench/results/sched.md and
# sync.md use, through tools/bench_report (which builds with --config=opt, runs one binary at
# a time, prints the machine and load, and renders report.md with tables and plots).
# Usage (from the workspace root):
#   bench/sched/record.sh [output_dir]        (default /tmp/fairsched_bench)
# Writes json/{sched_bench,signal_bench}.{json,txt}, json/meta.json, report.md and plots/
# there. BAZEL_OUTPUT_BASE, if set, names another Bazel output base.
set -euo pipefail
out=${1:-/tmp/fairsched_bench}
tool=tools/bench_report/bench_report.py
"$tool" --binaries //bench/sched:sched_bench --min-time 0.1 --repetitions 5 --out "$out"
"$tool" --binaries //bench/sync:signal_bench --min-time 0.3 --repetitions 3 --out "$out"
echo "report: $out/report.md"
