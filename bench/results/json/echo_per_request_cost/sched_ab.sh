#!/usr/bin/env bash
# Alternating A/B of sched_bench builds on the rows yields_before_park could move (outside
# posts and re-posts at 1 and 2 workers, post-to-start latency at 2 workers, idle CPU):
# one process per build per round, the order alternating.
#   sched_ab.sh <rounds> <out-dir> <dir-with-one-subdirectory-per-variant>
# Each <dir>/<variant>/sched_bench is a --config=opt build of //bench/sched:sched_bench.
set -euo pipefail
rounds=$1 out=$2 dir=$3
filter='^(w1|w2)/workers:[12]/fairsched/|^wake/post/gap_us:(10|10000)/workers:2/fairsched(_spin0)?/|^idle_cpu/.*fairsched'
mapfile -t variants < <(ls "$dir")
mkdir -p "$out"
for round in $(seq "$rounds"); do
  n=${#variants[@]}
  for i in $(seq 0 $((n - 1))); do
    variant=${variants[$(((i + round) % n))]}
    "$dir/$variant/sched_bench" --benchmark_filter="$filter" --benchmark_format=json \
      --benchmark_out="$out/${variant}_r$round.json" > /dev/null 2>&1
    echo "round $round $variant done (load $(cut -d' ' -f1 /proc/loadavg))"
  done
done
