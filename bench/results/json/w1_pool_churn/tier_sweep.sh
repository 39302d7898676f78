#!/usr/bin/env bash
# Records tier_sweep_runs.jsonl and tier_sweep_load.txt of this folder: sched_bench's w1 rows
# (one outside poster, kBatched and kHome, 1 and 2 workers) with TaskPool::kMaxSharedBatches
# at 16 (shipped, 1,024 tasks), 256 (16,384) and 1,024 (65,536), ROUNDS rounds (default 10).
# Each round runs every row once per build, the builds' order reversed every other round.
# One run per row and build, named sb_t<batches>_r<round>_w<workers>_<contestant>;
# tools/bench_report/compare.py pools each build's runs. Run from the workspace root with a
# clean sched/task_pool.h (it is edited for the builds and checked out again).
set -euo pipefail
rounds=${1:-10}
dir=bench/results/json/w1_pool_churn
out="$dir/tier_sweep_runs.jsonl"
tmp=$(mktemp -d)
trap 'git checkout sched/task_pool.h; rm -rf "$tmp"' EXIT
for n in 16 256 1024; do
  sed -i "s/kMaxSharedBatches = [0-9]*;/kMaxSharedBatches = $n;/" sched/task_pool.h
  ./bazelw build --config=opt //bench/sched:sched_bench
  cp -f bazel-bin/bench/sched/sched_bench "$tmp/sb_$n"
done
git checkout sched/task_pool.h
rm -f "$out"
uptime > "$dir/tier_sweep_load.txt"
for r in $(seq 1 "$rounds"); do
  if ((r % 2)); then order="16 256 1024"; else order="1024 256 16"; fi
  for w in 1 2; do
    for c in fairsched fairsched_home; do
      for b in $order; do
        run="$tmp/sb_t${b}_r${r}_w${w}_${c}.json"
        "$tmp/sb_$b" --benchmark_filter="^w1/workers:$w/$c/" --benchmark_repetitions=1 \
          --benchmark_out="$run" --benchmark_out_format=json > /dev/null 2>&1
        tools/bench_report/runs.py append "$out" "$run"
      done
    done
  done
  uptime >> "$dir/tier_sweep_load.txt"
done
