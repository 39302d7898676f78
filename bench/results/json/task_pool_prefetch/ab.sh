#!/usr/bin/env bash
# A/B of two scheduler builds on the rows the one-shot task pool serves (notes.md): outside
# one-shot posts (sched_bench w1, both orders) and, as a control the pool does not touch,
# re-posting (w2). Each variant is a folder holding a --config=opt sched_bench built from
# one tree; every round runs each variant once, one repetition of each row, in the given
# order on odd rounds and reversed on even ones, each row in its own process.
# Usage: ab.sh ROUNDS DIR_A DIR_B [DIR_C...] > raw.txt; then summarize.py raw.txt A B [C...]. A build
# that lacks a row (an older revision without kHome) prints nothing for it.
set -euo pipefail
rounds=$1
shift
rows=('^w1/workers:1/fairsched/' '^w1/workers:2/fairsched/' '^w1/workers:1/fairsched_home/'
  '^w1/workers:2/fairsched_home/' '^w2/workers:1/fairsched/' '^w2/workers:2/fairsched/')
dirs=("$@")
reversed=()
for ((i = ${#dirs[@]} - 1; i >= 0; --i)); do reversed+=("${dirs[i]}"); done
for ((r = 1; r <= rounds; ++r)); do
  if ((r % 2)); then order=("${dirs[@]}"); else order=("${reversed[@]}"); fi
  echo "# round $r, 1-minute load $(cut -d' ' -f1 /proc/loadavg)"
  for dir in "${order[@]}"; do
    v=$(basename "$dir")
    for filter in "${rows[@]}"; do
      FAIRSCHED_BENCH_REPETITIONS=1 "$dir/sched_bench" --benchmark_filter="$filter" \
        --benchmark_repetitions=1 2>/dev/null | grep -E '^w[12]' |
        grep -vE '_(mean|median|stddev|cv) ' |
        awk -v v="$v" '{for (i = 1; i <= NF; i++) if ($i ~ /items_per_second/) print v, $1, $i}' || true
    done
  done
done
