#!/usr/bin/env bash
# Records the scheduler and signal benchmarks (bench/results/sched.md and sync.md) through
# tools/bench_report: --config=opt build, interleaved rounds (one repetition of each binary
# per round, 5 rounds), the load before and after every run in its raw file, then
# report.md, plots and the generated blocks. `tools/bench_report/bench_report.py --all`
# records these together with everything else.
# Usage (from the workspace root):
#   bench/sched/record.sh [output_dir]        (default /tmp/fairsched_bench)
# Writes json/sched/runs.jsonl (one line per run), json/sync/..., json/meta.json, report.md and
# plots/ there. BAZEL_OUTPUT_BASE, if set, names another Bazel output base.
set -euo pipefail
out=${1:-/tmp/fairsched_bench}
tools/bench_report/bench_report.py --areas sched,sync --repetitions 5 --out "$out"
echo "report: $out/report.md"
