#!/usr/bin/env bash
# Records the coroutine benchmarks (coro_bench, mutex_bench, yield_bench) through
# tools/bench_report: --config=opt build, 5 interleaved rounds with one repetition each, the
# load before and after every run in its raw file, then report.md and plots. The figures of
# bench/results/coro.md come from the hot-path recording instead (record_hot_path.sh, run by
# `tools/bench_report/bench_report.py --all`), which also runs the Tokio and Go peers.
# Usage (from the workspace root):
#   bench/coro/record.sh [output_dir]        (default /tmp/fairsched_coro_bench)
set -euo pipefail
out=${1:-/tmp/fairsched_coro_bench}
tools/bench_report/bench_report.py --areas coro --repetitions 5 --out "$out"
echo "report: $out/report.md"
