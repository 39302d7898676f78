#!/usr/bin/env bash
# A/B of scheduler builds on the kHome hot-path rows, for the changes recorded here
# (notes.md): each variant is a folder of --config=opt benchmark binaries (yield_bench,
# coro_bench, sched_bench) built from one commit; every round runs each variant once, one
# repetition of each row, in the given order on odd rounds and reversed on even ones.
# Usage: ab.sh ROUNDS DIR_A DIR_B [DIR_C...] > raw.txt; then summarize.py raw.txt A B.
# A variant's name in the output is its folder's basename. To build one:
#   git checkout COMMIT && ./bazelw build --config=opt //bench/coro:yield_bench \
#     //bench/coro:coro_bench //bench/sched:sched_bench && mkdir -p DIR && cp \
#     bazel-bin/bench/coro/{yield,coro}_bench bazel-bin/bench/sched/sched_bench DIR/
set -euo pipefail
rounds=$1
shift
# row VARIANT COMMAND...: prints "VARIANT ROW items_per_second=..." per benchmark line.
row() {
  local v=$1
  shift
  "$@" 2>/dev/null | grep -E '^(yield|w[12])' | grep -vE '_(mean|median|stddev|cv) ' |
    awk -v v="$v" '{for (i = 1; i <= NF; i++) if ($i ~ /items_per_second/) print v, $1, $i}'
}
dirs=("$@")
reversed=()
for ((i = ${#dirs[@]} - 1; i >= 0; --i)); do reversed+=("${dirs[i]}"); done
for ((r = 1; r <= rounds; ++r)); do
  if ((r % 2)); then order=("${dirs[@]}"); else order=("${reversed[@]}"); fi
  for dir in "${order[@]}"; do
    v=$(basename "$dir")
    row "$v" "$dir/yield_bench" --benchmark_filter='^yield/fairsched_home_ceiling4k/' \
      --benchmark_repetitions=1
    FAIRSCHED_BENCH_REPETITIONS=1 row "$v" "$dir/sched_bench" \
      --benchmark_filter='^w[12]/workers:[12]/fairsched_home/' --benchmark_repetitions=1
    row "$v" "$dir/coro_bench" --benchmark_filter='^yield_round_trip/coro_home/' \
      --benchmark_repetitions=1
  done
done
