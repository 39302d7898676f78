#!/usr/bin/env bash
# Builds and runs the coroutine benchmarks the way bench/results/coro.md records them,
# printing the machine description and the load around the run. Usage (workspace root):
#   bench/coro/record.sh [output_dir]        (default /tmp/fairsched_coro_bench)
set -euo pipefail
out=${1:-/tmp/fairsched_coro_bench}
mkdir -p "$out"
bazel=(./bazelw ${BAZEL_OUTPUT_BASE:+--output_base="$BAZEL_OUTPUT_BASE"})
"${bazel[@]}" build --config=opt //bench/coro:coro_bench
bin=$("${bazel[@]}" info --config=opt bazel-bin 2>/dev/null)
echo "== machine"
grep -m1 'model name' /proc/cpuinfo
echo "cores (nproc): $(nproc)"
uname -sr
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin/bench/coro/coro_bench" --benchmark_min_time=0.2 --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/coro_bench.json" --benchmark_out_format=json | tee "$out/coro_bench.txt"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
