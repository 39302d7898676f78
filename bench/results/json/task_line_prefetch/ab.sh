#!/usr/bin/env bash
# Alternating A/B of scheduler builds that differ only in how tasks are prefetched (issue 31):
#   ab.sh ROUNDS OUT.jsonl LOAD.txt BUILD...
# A BUILD is `base` (the sources as checked out) or the name of a patch in this folder
# (NAME.patch, applied to sched/ for that build). The patches apply to dcffec9's sched/ (the
# commit before the kept change; check it out to run them again):
#   pf4         Prefetch fetches a fourth task line;
#   pf4d3       pf4 and kPrefetchDistance 3, for both orders;
#   peek        a lone worker's last claimed tasks prefetch the ready queue's next ones
#               (Consumer::Peek);
#   pf4d3_peek  both;
#   kept        pf4d3 for the default order only, PostOrder::kHome unchanged (what shipped).
#   lone_only   (applies to the shipped tree, 95a1c73 and later) the several-worker path back
#               to distance 2 and three lines; a lone worker keeps 3 and four.
# Each round runs yield_bench's default and kHome-4k rows and sched_bench's w1/w2 rows at
# one and two workers once per build, the builds' order rotating by round and reversed
# every other round. Run names: <yield|sched>_<build>_r<round>; compare with
#   tools/bench_report/compare.py OUT:yield_base_r* OUT:yield_kept_r* --metrics items_per_second --by-round
# ab_3way_10rounds.jsonl is `base pf4 pf4d3`, recorded by this script's first version (the
# same builds and order, the w rows at two workers only). Run from the workspace root with
# clean sched/.
set -euo pipefail
rounds=$1 out=$2 load=$3
shift 3
builds=("$@")
dir=bench/results/json/task_line_prefetch
tmp=$(mktemp -d)
trap 'git checkout sched; rm -rf "$tmp"' EXIT
for b in "${builds[@]}"; do
  git checkout sched
  [[ $b == base ]] || git apply "$dir/$b.patch"
  ./bazelw build --config=opt //bench/coro:yield_bench //bench/sched:sched_bench
  cp -f bazel-bin/bench/coro/yield_bench "$tmp/yb_$b"
  cp -f bazel-bin/bench/sched/sched_bench "$tmp/sb_$b"
done
git checkout sched
rm -f "$out"
uptime > "$load"
n=${#builds[@]}
for r in $(seq 1 "$rounds"); do
  k=$(((r - 1) % n))
  order=("${builds[@]:$k}" "${builds[@]:0:$k}")
  ((r % 2)) || order=($(printf '%s\n' "${order[@]}" | tac))
  for b in "${order[@]}"; do
    "$tmp/yb_$b" --benchmark_filter='^yield/(fairsched|fairsched_home_ceiling4k)/' \
      --benchmark_repetitions=1 --benchmark_out="$tmp/yield_${b}_r$r.json" \
      --benchmark_out_format=json > /dev/null 2>&1
    tools/bench_report/runs.py append "$out" "$tmp/yield_${b}_r$r.json"
    "$tmp/sb_$b" --benchmark_filter='^w[12]/workers:[12]/(fairsched|fairsched_home)/' \
      --benchmark_repetitions=1 --benchmark_out="$tmp/sched_${b}_r$r.json" \
      --benchmark_out_format=json > /dev/null 2>&1
    tools/bench_report/runs.py append "$out" "$tmp/sched_${b}_r$r.json"
  done
  uptime >> "$load"
done
