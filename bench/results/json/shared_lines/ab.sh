#!/bin/bash
# A/B of two builds of the scheduler, its cache-line layout (notes.md). Usage, from this folder:
#   ./ab.sh ROUNDS OUT BEFORE_DIR AFTER_DIR
# Each DIR holds the --config=opt yield_bench and sched_bench of one build. Per round each
# build runs once, the order swapping by round; raw lines for ../home_idle_look/summarize.py.
rounds=$1 out=$2 before=$3 after=$4
: > "$out"
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then order="before after"; else order="after before"; fi
  for v in $order; do
    if [[ $v == before ]]; then dir=$before; else dir=$after; fi
    echo "round $r $v load $(cut -d' ' -f1 /proc/loadavg)" >> "$out"
    "$dir/yield_bench" --benchmark_filter='^yield/(fairsched|fairsched_home_ceiling4k)/' \
      2>/dev/null | grep "^yield" | sed "s/^/$v /" >> "$out"
    "$dir/sched_bench" --benchmark_filter='^w[12]/workers:[12]/(fairsched|fairsched_home)/' \
      2>/dev/null | grep -E "^w[12]" | grep -v "_mean\|_median\|_stddev\|_cv" | sed "s/^/$v /" >> "$out"
  done
done
