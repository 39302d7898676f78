#!/usr/bin/env bash
# Records the hot-path measurements of bench/results/hot_path.md: coroutine yield
# (yield_bench, with the Tokio and Go programs of bench/coro/peers/), self-re-posting tasks
# (sched_bench w2 and its plain-loop limit), spawn + complete, memory per coroutine, the
# signal and yield round trips (coro_bench), the coroutine mutex hand-off (mutex_bench) and
# the memory per Start/Stop cycle (lifecycle_bench start_stop).
#
# Usage (from the workspace root):
#   bench/coro/record_hot_path.sh OUT_DIR [REPETITIONS] [BEFORE_TREE]
#     OUT_DIR       where the raw results go (created): runs.jsonl and machine.txt; commit
#                   them to publish a recording
#     REPETITIONS   rounds, default 5
#     BEFORE_TREE   optional: a checkout of an older revision with the same benchmark sources
#                   (yield_bench naming its fairsched row "fairsched_before"); its fairsched
#                   rows run in the same rounds, next to the current ones
#
# Environment (tools/bench_report/bench_report.py --all sets both to fit its time budget):
#   YIELD_FILTER  yield_bench's --benchmark_filter, default '.' (all rows); --all passes
#                 '-yield/asio/' (Asio's rows are ~27 s of each round)
#   SKIP_SCHED=1  no sched_bench runs: --all copies its own interleaved sched_bench rounds,
#                 which hold the same w2 rows, into OUT_DIR/runs.jsonl as sched_bench_r<round>
#   ONLY_YIELD=1  only yield_bench (current and before, YIELD_FILTER applied to both): a
#                 focused before/after check of some yield rows with more rounds; render it
#                 with tools/bench_report/compare.py OUT_DIR/runs.jsonl:yield_bench_before_r*
#                 OUT_DIR/runs.jsonl:yield_bench_r* (not with hot_path_report.py)
#
# Interleaving: every round runs each binary once, one repetition each, in a fixed order
# (current, before, peers), so that slow phases of a noisy machine hit every contestant
# alike; nothing is ever chosen as a "best run". Each run writes its JSON and console output
# into a temporary folder; the JSON is then appended to OUT_DIR/runs.jsonl as one line named
# <binary>[_before]_r<round> (tools/bench_report/runs.py; a new recording replaces the old
# runs.jsonl); machine.txt has the machine and the load before and after every run.
# tools/bench_report/hot_path_report.py renders the report from them.
set -euo pipefail
if (($# < 1)); then
  echo "usage: $0 OUT_DIR [REPETITIONS] [BEFORE_TREE]" >&2
  exit 2
fi
out=$(realpath -m "$1")
reps=${2:-5}
before=${3:-}
mkdir -p "$out"
rm -f "$out/runs.jsonl"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fairsched_hot_path.XXXXXX")
cd "$(dirname "$0")/../.."

targets=(//bench/coro:yield_bench //bench/coro:coro_bench //bench/coro:mutex_bench
         //bench/sched:sched_bench //bench/sched:lifecycle_bench)
./bazelw build --config=opt "${targets[@]}"
bin=$(./bazelw info --config=opt bazel-bin 2>/dev/null)
if [[ -n "$before" ]]; then
  (cd "$before" && ./bazelw build --config=opt "${targets[@]}")
  before_bin=$(cd "$before" && ./bazelw info --config=opt bazel-bin 2>/dev/null)
fi
# The peers' build goes outside OUT_DIR (OUT_DIR holds only raw files, to be committed).
if [[ ${ONLY_YIELD:-0} != 1 ]]; then
  mapfile -t peers < <(bench/coro/peers/build.sh "${TMPDIR:-/tmp}/fairsched_peers_build" | tail -n 2)
  tokio=${peers[0]}
  go_yield=${peers[1]}
fi

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "revision: $(git rev-parse HEAD)$(git diff --quiet || echo ' (with local changes)')"
  [[ -n "$before" ]] && echo "before: $(git -C "$before" rev-parse HEAD)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
  echo "cores: $(nproc)"
  echo "kernel: $(uname -sr)"
  echo "repetitions: $reps"
} >"$out/machine.txt"

# run NAME COMMAND...: one run, its JSON in $tmp/NAME.json (the command gets the path as
# its last argument's value) appended to $out/runs.jsonl, its console output in
# $tmp/NAME.txt, the load around it logged.
run() {
  local name=$1
  shift
  echo "== $name (load $(cut -d' ' -f1-3 /proc/loadavg))"
  echo "$name load_before=$(cut -d' ' -f1 /proc/loadavg)" >>"$out/machine.txt"
  "$@" >"$tmp/$name.txt" 2>&1 || { cat "$tmp/$name.txt"; echo "run $name failed" >&2; exit 1; }
  echo "$name load_after=$(cut -d' ' -f1 /proc/loadavg)" >>"$out/machine.txt"
  python3 tools/bench_report/runs.py append "$out/runs.jsonl" "$tmp/$name.json"
}

gbench() {  # gbench NAME BINARY FILTER [extra flags]
  local name=$1 binary=$2 filter=$3
  shift 3
  run "$name" "$binary" --benchmark_filter="$filter" --benchmark_repetitions=1 \
    --benchmark_out="$tmp/$name.json" --benchmark_out_format=json "$@"
}

coro_filter='spawn_complete|memory|signal_round_trip|yield_round_trip'
for ((r = 1; r <= reps; ++r)); do
  echo "==== round $r of $reps"
  gbench "yield_bench_r$r" "$bin/bench/coro/yield_bench" "${YIELD_FILTER:-.}"
  if [[ ${ONLY_YIELD:-0} == 1 ]]; then
    [[ -n "$before" ]] && gbench "yield_bench_before_r$r" "$before_bin/bench/coro/yield_bench" \
      "${YIELD_FILTER:-.}"
    continue
  fi
  [[ -n "$before" ]] && gbench "yield_bench_before_r$r" "$before_bin/bench/coro/yield_bench" 'fairsched'
  run "tokio_yield_r$r" "$tokio" --out="$tmp/tokio_yield_r$r.json"
  run "go_yield_r$r" "$go_yield" --out="$tmp/go_yield_r$r.json"
  if [[ ${SKIP_SCHED:-0} != 1 ]]; then
    FAIRSCHED_BENCH_REPETITIONS=1 gbench "sched_bench_r$r" "$bin/bench/sched/sched_bench" \
      '^(w2/workers:[12]/(fairsched|fairsched_strict|fairsched_home|fairsched_oneshot|trivial_sched|tbb_arena|asio_pool)/|w1/workers:[12]/(fairsched|fairsched_home)/|loop/w2)'
    [[ -n "$before" ]] && FAIRSCHED_BENCH_REPETITIONS=1 gbench "sched_bench_before_r$r" \
      "$before_bin/bench/sched/sched_bench" '^w[12]/workers:[12]/fairsched/'
  fi
  gbench "coro_bench_r$r" "$bin/bench/coro/coro_bench" "$coro_filter"
  [[ -n "$before" ]] && gbench "coro_bench_before_r$r" "$before_bin/bench/coro/coro_bench" \
    "($coro_filter)/coro/"
  gbench "lifecycle_bench_r$r" "$bin/bench/sched/lifecycle_bench" 'start_stop'
  gbench "mutex_bench_r$r" "$bin/bench/coro/mutex_bench" 'handoff'
  [[ -n "$before" ]] && gbench "mutex_bench_before_r$r" "$before_bin/bench/coro/mutex_bench" \
    'handoff/coro_mutex'
done
echo "raw results: $out (render: tools/bench_report/hot_path_report.py $out); console output: $tmp"
