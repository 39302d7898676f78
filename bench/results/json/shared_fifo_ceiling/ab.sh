#!/usr/bin/env bash
# Alternating rounds of yield_bench builds at 2 workers (see notes.md in this folder):
#   ab.sh <rounds> <out> <dir with one yield_bench build per variant> <tokio_yield binary>
# Each round runs every variant once (the order rotates by round), then Tokio. The variant
# named "base" also runs the PostOrder::kHome rows of the same binary. One line per row and
# round: variant, row, round, the 1-minute load before the run, million steps/s.
set -euo pipefail
rounds=$1 out=$2 dir=$3 tokio=$4
mapfile -t variants < <(ls "$dir")
: > "$out"
for round in $(seq "$rounds"); do
  n=${#variants[@]}
  for i in $(seq 0 $((n - 1))); do
    variant=${variants[$(((i + round) % n))]}
    filter='yield/fairsched/.*workers:2'
    [[ $variant == base ]] && filter='yield/(fairsched|fairsched_home|fairsched_home_ceiling4k)/.*workers:2'
    load=$(cut -d' ' -f1 /proc/loadavg)
    "$dir/$variant" --benchmark_filter="$filter" --benchmark_min_time=2 2>/dev/null |
      grep -E '^yield/' | while read -r line; do
        contestant=$(echo "$line" | cut -d/ -f2)
        shape=$(echo "$line" | sed -E 's/.*coroutines:([0-9]+)\/steps:([0-9]+).*/\1x\2/')
        rate=$(echo "$line" | sed -E 's/.*items_per_second=([0-9.]+)M.*/\1/')
        name=$variant
        [[ $contestant != fairsched ]] && name=$contestant
        echo "variant=$name row=$shape round=$round load=$load msteps=$rate" | tee -a "$out"
      done
  done
  load=$(cut -d' ' -f1 /proc/loadavg)
  "$tokio" --filter=workers:2 2>&1 | grep -E '^yield/' | while read -r line; do
    shape=$(echo "$line" | sed -E 's/.*coroutines:([0-9]+)\/steps:([0-9]+).*/\1x\2/')
    rate=$(echo "$line" | sed -E 's/.* ([0-9.]+) M items\/s.*/\1/')
    echo "variant=tokio row=$shape round=$round load=$load msteps=$rate" | tee -a "$out"
  done
done
