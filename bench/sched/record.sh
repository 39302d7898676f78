#!/usr/bin/env bash
# Builds and runs the scheduler and signal benchmarks the way bench/results/*.md records
# them, printing the machine description first. Usage (from the workspace root):
#   bench/sched/record.sh [output_dir]        (default /tmp/fairsched_bench)
# Writes sched_bench.{json,txt}, signal_bench.{json,txt} and sched_tables.md there.
set -euo pipefail
out=${1:-/tmp/fairsched_bench}
mkdir -p "$out"
# The workspace's own Bazel output base, unless BAZEL_OUTPUT_BASE names another one.
bazel=(./bazelw ${BAZEL_OUTPUT_BASE:+--output_base="$BAZEL_OUTPUT_BASE"})
"${bazel[@]}" build --config=opt //bench/sched:sched_bench //bench/sync:signal_bench
bin=$("${bazel[@]}" info --config=opt bazel-bin 2>/dev/null)

echo "== machine"
grep -m1 'model name' /proc/cpuinfo
echo "cores (nproc): $(nproc)"
uname -sr
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# Repetitions are set per benchmark (FAIRSCHED_BENCH_REPETITIONS, default 5; the W1/W2
# cells run one iteration each, so a repetition is one full workload).
FAIRSCHED_BENCH_REPETITIONS=${FAIRSCHED_BENCH_REPETITIONS:-5} \
"$bin/bench/sched/sched_bench" --benchmark_min_time=0.1 \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/sched_bench.json" --benchmark_out_format=json | tee "$out/sched_bench.txt"
echo "load after sched_bench: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin/bench/sync/signal_bench" --benchmark_min_time=0.3 --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/signal_bench.json" --benchmark_out_format=json | tee "$out/signal_bench.txt"
echo "load after signal_bench: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$(dirname "$0")/../make_tables.py" sched "$out/sched_bench.json" > "$out/sched_tables.md"
python3 "$(dirname "$0")/../make_tables.py" sync "$out/signal_bench.json" > "$out/signal_table.md"
echo "tables: $out/sched_tables.md"
