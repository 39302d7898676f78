#!/usr/bin/env bash
# The A/Bs of this folder: sched_bench's w1 rows (one outside poster, kBatched and kHome, 1 and
# 2 workers) with TaskPool::kMaxSharedBatches set to each SIZE (16 is the shipped tier, 1,024
# tasks), ROUNDS rounds, each round running every row once per build, the builds' order
# reversed every other round. One run per row and build, named
# sb_t<size>_r<round>_w<workers>_<contestant>, appended to RUNS (a runs.jsonl, replaced);
# LOAD gets `uptime` before and after each round. tools/bench_report/compare.py pools each
# build's runs (RUNS:sb_t16_*) and, with --by-round, pairs them by round.
#   tier_sweep.sh 10 tier_sweep_runs.jsonl tier_sweep_load.txt 16 256 1024
# Run from the workspace root with a clean sched/task_pool.h (it is edited for the builds and
# checked out again).
set -euo pipefail
if (($# < 5)); then
  echo "usage: $0 ROUNDS RUNS LOAD SIZE SIZE..." >&2
  exit 2
fi
rounds=$1 dir=bench/results/json/w1_pool_churn
out="$dir/$2" load="$dir/$3"
shift 3
sizes=("$@")
tmp=$(mktemp -d)
trap 'git checkout sched/task_pool.h; rm -rf "$tmp"' EXIT
for n in "${sizes[@]}"; do
  sed -i "s/kMaxSharedBatches = [0-9]*;/kMaxSharedBatches = $n;/" sched/task_pool.h
  ./bazelw build --config=opt //bench/sched:sched_bench
  cp -f bazel-bin/bench/sched/sched_bench "$tmp/sb_$n"
done
git checkout sched/task_pool.h
rm -f "$out"
uptime > "$load"
for r in $(seq 1 "$rounds"); do
  order=("${sizes[@]}")
  ((r % 2)) || order=($(printf '%s\n' "${sizes[@]}" | tac))
  for w in 1 2; do
    for c in fairsched fairsched_home; do
      for b in "${order[@]}"; do
        run="$tmp/sb_t${b}_r${r}_w${w}_${c}.json"
        "$tmp/sb_$b" --benchmark_filter="^w1/workers:$w/$c/" --benchmark_repetitions=1 \
          --benchmark_out="$run" --benchmark_out_format=json > /dev/null 2>&1
        tools/bench_report/runs.py append "$out" "$run"
      done
    done
  done
  uptime >> "$load"
done
