#!/bin/bash
# A/B of the idle worker's look under PostOrder::kHome (notes.md): copy the --config=opt
# yield_bench and sched_bench of each build here as yield_before/after, sched_before/after.
# 6 alternating rounds: before/after order swaps by round.
out=./raw_6_rounds.txt; : > $out
for r in 1 2 3 4 5 6; do
  if (( r % 2 )); then order="before after"; else order="after before"; fi
  for v in $order; do
    echo "round $r $v load $(cut -d' ' -f1 /proc/loadavg)" >> $out
    ./yield_$v --benchmark_filter='yield/fairsched_home_ceiling4k/.*workers:2' --benchmark_repetitions=1 2>/dev/null | grep "^yield" | sed "s/^/$v /" >> $out
    ./sched_$v --benchmark_filter='w[12]/workers:2/fairsched_home/' 2>/dev/null | grep -E "^w[12]" | grep -v "_mean\|_median\|_stddev\|_cv" | sed "s/^/$v /" >> $out
  done
done
