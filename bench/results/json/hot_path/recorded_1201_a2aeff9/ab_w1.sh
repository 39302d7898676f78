#!/bin/bash
# alternating rounds of sched_bench w1 (outside one-shot posts) for two builds
rounds=$1; out=$2
: > "$out"
for r in $(seq 1 "$rounds"); do
  for v in pre head; do
    FAIRSCHED_BENCH_REPETITIONS=1 ./bin/$v --benchmark_filter='^w1/workers:[12]/fairsched/' --benchmark_format=csv 2>/dev/null \
      | grep -E '^"?w1' | sed "s/^/$r,$v,/" >> "$out"
    echo "load $(cut -d' ' -f1 /proc/loadavg)" >> "$out"
  done
done
