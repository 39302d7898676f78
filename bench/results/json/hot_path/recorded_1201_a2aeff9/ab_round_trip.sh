#!/bin/bash
# alternating rounds of coro_bench yield_round_trip rows, f40a4d7 vs HEAD builds
out=$2; echo "# coro_bench yield_round_trip/(coro|callback_task), 1 repetition per process, alternating f40a4d7 (the page's revision) and a1571c2 (HEAD), order reversed each round; load at start $(cat /proc/loadavg)" > $out
for r in $(seq 1 $1); do if ((r%2)); then order="f40 head"; else order="head f40"; fi
  for v in $order; do ./bin/coro_$v --benchmark_filter='^yield_round_trip/(coro|callback_task)/' --benchmark_repetitions=1 --benchmark_format=csv 2>/dev/null | grep yield_round | awk -F, -v v=$v -v r=$r '{print r, v, $1, $7}' >> $out; done
done
echo "# load at end $(cat /proc/loadavg)" >> $out
