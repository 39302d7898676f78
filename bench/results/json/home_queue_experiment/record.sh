#!/usr/bin/env bash
# Records the home-queue prototype experiment (notes.md here): yield_bench's fairsched,
# home_queues_prototype, _prototype_loose and _no_looks, textbook_pool and local_queue rows and the
# Tokio peer, interleaved: every round runs yield_bench once per contestant (one repetition
# per row, in its own process) and then Tokio. Writes
# runs.jsonl and machine.txt into this folder (a new recording replaces them: move an earlier
# one into a subfolder first, as first_recording/ holds the first); table.py
# renders them. Usage, from the workspace root:
#   bench/results/json/home_queue_experiment/record.sh [ROUNDS] [FOLDER]   # default 5, here
# FOLDER: where runs.jsonl and machine.txt go (bench/results/json/home_queues_in_scheduler
# holds the recording of PostOrder::kHome in the scheduler). YIELD_ROWS: the yield_bench
# contestants, a regular-expression alternative (default: the experiment's rows above).
set -euo pipefail
rounds=${1:-5}
here=${2:-bench/results/json/home_queue_experiment}
rows=${YIELD_ROWS:-fairsched|home_queues_prototype|home_queues_prototype_loose|home_queues_no_looks|textbook_pool|local_queue}
mkdir -p "$here"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/home_queue_experiment.XXXXXX")
./bazelw build --config=opt //bench/coro:yield_bench
bin=$(./bazelw info --config=opt bazel-bin 2>/dev/null)/bench/coro/yield_bench
mapfile -t peers < <(bench/coro/peers/build.sh "${TMPDIR:-/tmp}/fairsched_peers_build" | tail -n 2)
tokio=${peers[0]}
rm -f "$here/runs.jsonl"
tools/bench_report/machine_header.sh "rounds: $rounds" >"$here/machine.txt"
for ((r = 1; r <= rounds; ++r)); do
  echo "== round $r of $rounds (load $(cut -d' ' -f1-3 /proc/loadavg))"
  echo "round $r load_before=$(cut -d' ' -f1 /proc/loadavg)" >>"$here/machine.txt"
  # One process per contestant, in an order rotated by one every round: a row run after
  # others in the same process inherits their allocator and cache state (a row measured
  # at 30-36 M steps/s alone ran at 17 M after the other contestants' rows), so neither a
  # shared process nor a fixed order is fair.
  IFS='|' read -r -a names <<<"$rows"
  for ((i = 0; i < ${#names[@]}; ++i)); do
    row=${names[$(((i + r) % ${#names[@]}))]}
    "$bin" --benchmark_filter="yield/$row/" \
      --benchmark_repetitions=1 --benchmark_out="$tmp/yield_bench_${row}_r$r.json" \
      --benchmark_out_format=json >"$tmp/yield_bench_${row}_r$r.txt" 2>&1
    python3 tools/bench_report/runs.py append "$here/runs.jsonl" "$tmp/yield_bench_${row}_r$r.json"
  done
  "$tokio" --out="$tmp/tokio_yield_r$r.json" >"$tmp/tokio_yield_r$r.txt" 2>&1
  python3 tools/bench_report/runs.py append "$here/runs.jsonl" "$tmp/tokio_yield_r$r.json"
  echo "round $r load_after=$(cut -d' ' -f1 /proc/loadavg)" >>"$here/machine.txt"
done
echo "raw results: $here/runs.jsonl; console output: $tmp"
