#!/bin/bash
# Coroutine yield of one fairsched build against Tokio 1.24, interleaved (notes.md, "What it
# leaves"). Usage, from this folder:
#   ./tokio_rounds.sh ROUNDS OUT YIELD_BENCH TOKIO_YIELD
# YIELD_BENCH: a --config=opt //bench/coro:yield_bench; TOKIO_YIELD: from
# bench/coro/peers/build.sh. Per round: the fairsched rows, then Tokio's; raw lines in OUT,
# figures from summarize_tokio.py OUT.
rounds=$1 out=$2 yield=$3 tokio=$4
: > "$out"
for r in $(seq 1 "$rounds"); do
  echo "round $r load $(cut -d' ' -f1 /proc/loadavg)" >> "$out"
  "$yield" --benchmark_filter='^yield/(fairsched|fairsched_home_ceiling4k)/' 2>/dev/null |
    grep "^yield" >> "$out"
  "$tokio" 2>&1 | grep "^yield" >> "$out"
done
