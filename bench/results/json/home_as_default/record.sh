#!/usr/bin/env bash
# Records what PostOrder::kHome (home_skew_ceiling 4,096) would change as the default order,
# row by row of the hot path (notes.md here): coroutine yield (yield_bench fairsched against
# fairsched_home_ceiling4k, and Tokio), self-re-posting tasks and outside one-shot posts
# (sched_bench w2 and w1, fairsched against fairsched_home), spawn + complete and the lone
# coroutine's yield round trip (coro_bench coro against coro_home). Interleaved: every
# round runs each binary once per contestant, one repetition of each row, then Tokio. Writes runs.jsonl
# and machine.txt into FOLDER (a new recording replaces them); table.py renders them.
# Usage, from the workspace root:
#   bench/results/json/home_as_default/record.sh [ROUNDS] [FOLDER]   # default 5, here
set -euo pipefail
rounds=${1:-5}
here=${2:-bench/results/json/home_as_default}
mkdir -p "$here"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/home_as_default.XXXXXX")
./bazelw build --config=opt //bench/coro:yield_bench //bench/coro:coro_bench //bench/sched:sched_bench
bin=$(./bazelw info --config=opt bazel-bin 2>/dev/null)
mapfile -t peers < <(bench/coro/peers/build.sh "${TMPDIR:-/tmp}/fairsched_peers_build" | tail -n 2)
tokio=${peers[0]}
rm -f "$here/runs.jsonl"
tools/bench_report/machine_header.sh "rounds: $rounds" >"$here/machine.txt"
# run NAME COMMAND...: one run whose JSON goes to $tmp/NAME.json (the command names that
# path itself), appended to runs.jsonl as NAME; gbench NAME BINARY FILTER: one repetition of
# the Google Benchmark rows FILTER selects.
run() {
  local name=$1
  shift
  "$@" >"$tmp/$name.txt" 2>&1
  python3 tools/bench_report/runs.py append "$here/runs.jsonl" "$tmp/$name.json"
}
gbench() {
  local name=$1 binary=$2 filter=$3
  FAIRSCHED_BENCH_REPETITIONS=1 run "$name" "$binary" --benchmark_filter="$filter" \
    --benchmark_repetitions=1 --benchmark_out="$tmp/$name.json" --benchmark_out_format=json
}
for ((r = 1; r <= rounds; ++r)); do
  echo "== round $r of $rounds (load $(cut -d' ' -f1-3 /proc/loadavg))"
  echo "round $r load_before=$(cut -d' ' -f1 /proc/loadavg)" >>"$here/machine.txt"
  # One process per contestant, the two orders alternating by round: a row run after
  # another in the same process inherits its allocator and cache state (see
  # ../home_queue_experiment/record.sh).
  if ((r % 2)); then order=(default home); else order=(home default); fi
  for who in "${order[@]}"; do
    if [[ $who == default ]]; then
      yield=fairsched sched=fairsched coro=coro
    else
      yield=fairsched_home_ceiling4k sched=fairsched_home coro=coro_home
    fi
    gbench "yield_bench_${who}_r$r" "$bin/bench/coro/yield_bench" "^yield/$yield/"
    gbench "sched_bench_${who}_r$r" "$bin/bench/sched/sched_bench" "^w[12]/workers:[12]/$sched/"
    gbench "coro_bench_${who}_r$r" "$bin/bench/coro/coro_bench" \
      "^(spawn_complete|yield_round_trip)/$coro/"
  done
  run "tokio_yield_r$r" "$tokio" --out="$tmp/tokio_yield_r$r.json"
  echo "round $r load_after=$(cut -d' ' -f1 /proc/loadavg)" >>"$here/machine.txt"
done
echo "raw results: $here/runs.jsonl; console output: $tmp"
