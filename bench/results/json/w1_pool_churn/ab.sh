#!/usr/bin/env bash
# Records raw.txt and load.txt of this folder: sched_bench's w1 rows (one outside poster,
# kBatched and kHome, 1 and 2 workers) with the shipped task pool ("small") and with
# big_pool.patch applied ("big"), ROUNDS rounds (default 6), each round running every row
# once per build in turn. Run from the workspace root with a clean sched/task_pool.h.
set -euo pipefail
rounds=${1:-6}
dir=bench/results/json/w1_pool_churn
tmp=$(mktemp -d)
./bazelw build --config=opt //bench/sched:sched_bench
cp bazel-bin/bench/sched/sched_bench "$tmp/sb_small"
git apply "$dir/big_pool.patch"
trap 'git apply -R "$dir/big_pool.patch"' EXIT
./bazelw build --config=opt //bench/sched:sched_bench
cp bazel-bin/bench/sched/sched_bench "$tmp/sb_big"
: > "$dir/raw.txt"
uptime > "$dir/load.txt"
for r in $(seq 1 "$rounds"); do
  for w in 1 2; do
    for c in fairsched fairsched_home; do
      for b in small big; do
        "$tmp/sb_$b" --benchmark_filter="^w1/workers:$w/$c/" --benchmark_repetitions=1 \
          2>/dev/null | grep -E '^w1' | head -1 | sed "s/^/r$r $b /" >> "$dir/raw.txt"
      done
    done
  done
done
uptime >> "$dir/load.txt"
