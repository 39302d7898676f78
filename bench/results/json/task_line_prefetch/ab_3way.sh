#!/usr/bin/env bash
set -euo pipefail
rounds=${1:-10}; out=${2:-/tmp/pf/runs2.jsonl}; bin=/tmp/pf
cd /work/main
rm -f "$out"; uptime > /tmp/pf/load2.txt
tmp=$(mktemp -d)
builds=(base pf4 pf4d3)
for r in $(seq 1 "$rounds"); do
  k=$(( (r-1) % 3 ))
  order=("${builds[@]:$k}" "${builds[@]:0:$k}")
  ((r % 2)) || order=($(printf '%s\n' "${order[@]}" | tac))
  for b in "${order[@]}"; do
    "$bin/yb_$b" --benchmark_filter='^yield/(fairsched|fairsched_home_ceiling4k)/' --benchmark_repetitions=1 \
      --benchmark_out="$tmp/yield_${b}_r$r.json" --benchmark_out_format=json >/dev/null 2>&1
    tools/bench_report/runs.py append "$out" "$tmp/yield_${b}_r$r.json"
    "$bin/sb_$b" --benchmark_filter='^w[12]/workers:2/(fairsched|fairsched_home)/' --benchmark_repetitions=1 \
      --benchmark_out="$tmp/sched_${b}_r$r.json" --benchmark_out_format=json >/dev/null 2>&1
    tools/bench_report/runs.py append "$out" "$tmp/sched_${b}_r$r.json"
  done
  uptime >> /tmp/pf/load2.txt
done
rm -rf "$tmp"
