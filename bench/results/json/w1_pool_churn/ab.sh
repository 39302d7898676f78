#!/usr/bin/env bash
# Records runs.jsonl and load.txt of this folder: sched_bench's w1 rows (one outside poster,
# kBatched and kHome, 1 and 2 workers) with the shipped task pool ("small") and with
# big_pool.patch applied ("big"), ROUNDS rounds (default 6), each round running every row
# once per build in turn. One run per row and build, named
# sched_bench_<build>_r<round>_w<workers>_<contestant>; tools/bench_report/compare.py pools
# each build's runs into the table of notes.md. Run from the workspace root with a clean
# sched/task_pool.h.
set -euo pipefail
rounds=${1:-6}
dir=bench/results/json/w1_pool_churn
tmp=$(mktemp -d)
./bazelw build --config=opt //bench/sched:sched_bench
cp bazel-bin/bench/sched/sched_bench "$tmp/sb_small"
git apply "$dir/big_pool.patch"
trap 'git apply -R "$dir/big_pool.patch"; rm -rf "$tmp"' EXIT
./bazelw build --config=opt //bench/sched:sched_bench
cp bazel-bin/bench/sched/sched_bench "$tmp/sb_big"
rm -f "$dir/runs.jsonl"
uptime > "$dir/load.txt"
for r in $(seq 1 "$rounds"); do
  for w in 1 2; do
    for c in fairsched fairsched_home; do
      for b in small big; do
        run="$tmp/sched_bench_${b}_r${r}_w${w}_${c}.json"
        "$tmp/sb_$b" --benchmark_filter="^w1/workers:$w/$c/" --benchmark_repetitions=1 \
          --benchmark_out="$run" --benchmark_out_format=json > /dev/null 2>&1
        tools/bench_report/runs.py append "$dir/runs.jsonl" "$run"
      done
    done
  done
done
uptime >> "$dir/load.txt"
