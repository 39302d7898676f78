#!/usr/bin/env bash
# Records ab_3way_10rounds.jsonl and load_10rounds.txt of this folder (ab_4lines_8rounds.jsonl
# was recorded the same way with two builds and the coro_bench rows added): three builds of
# yield_bench and sched_bench, ROUNDS rounds (default 10), the builds' order rotating by round
# and reversed every other round.
#   base   the shipped scheduler: Prefetch fetches a task's line and the two after it,
#          kPrefetchDistance 2;
#   pf4    Prefetch fetches a fourth line (sched/internal/worker_loop.h);
#   pf4d3  pf4 with kPrefetchDistance 3 (sched/task_scheduler.h).
# Run names: <yield|sched>_<build>_r<round>; compare them with
#   tools/bench_report/compare.py RUNS:yield_base_* RUNS:yield_pf4d3_* --metrics items_per_second --by-round
# Run from the workspace root with clean sched/ sources (edited for the builds, checked out).
set -euo pipefail
rounds=${1:-10}
dir=bench/results/json/task_line_prefetch
out="$dir/ab_3way_10rounds.jsonl"
tmp=$(mktemp -d)
trap 'git checkout sched/internal/worker_loop.h sched/task_scheduler.h; rm -rf "$tmp"' EXIT
build() {  # build NAME
  ./bazelw build --config=opt //bench/coro:yield_bench //bench/sched:sched_bench
  cp -f bazel-bin/bench/coro/yield_bench "$tmp/yb_$1"
  cp -f bazel-bin/bench/sched/sched_bench "$tmp/sb_$1"
}
build base
sed -i 's/^  __builtin_prefetch(line + 2 \* kCacheLineSize, 1);$/&\n  __builtin_prefetch(line + 3 * kCacheLineSize, 1);/' \
  sched/internal/worker_loop.h
build pf4
sed -i 's/kPrefetchDistance = 2;/kPrefetchDistance = 3;/' sched/task_scheduler.h
build pf4d3
git checkout sched/internal/worker_loop.h sched/task_scheduler.h
rm -f "$out"
uptime > "$dir/load_10rounds.txt"
builds=(base pf4 pf4d3)
for r in $(seq 1 "$rounds"); do
  k=$(((r - 1) % 3))
  order=("${builds[@]:$k}" "${builds[@]:0:$k}")
  ((r % 2)) || order=($(printf '%s\n' "${order[@]}" | tac))
  for b in "${order[@]}"; do
    "$tmp/yb_$b" --benchmark_filter='^yield/(fairsched|fairsched_home_ceiling4k)/' \
      --benchmark_repetitions=1 --benchmark_out="$tmp/yield_${b}_r$r.json" \
      --benchmark_out_format=json > /dev/null 2>&1
    tools/bench_report/runs.py append "$out" "$tmp/yield_${b}_r$r.json"
    "$tmp/sb_$b" --benchmark_filter='^w[12]/workers:2/(fairsched|fairsched_home)/' \
      --benchmark_repetitions=1 --benchmark_out="$tmp/sched_${b}_r$r.json" \
      --benchmark_out_format=json > /dev/null 2>&1
    tools/bench_report/runs.py append "$out" "$tmp/sched_${b}_r$r.json"
  done
  uptime >> "$dir/load_10rounds.txt"
done
