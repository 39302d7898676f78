#!/usr/bin/env bash
# Flat `perf` profiles of the hot-path rows: coroutine yield (100,000 x 100, one
# and two workers), self-re-posting tasks (sched_bench w2, one and two workers) and spawn +
# complete (one worker), for the current tree and optionally an older one, so that bench/results/
# hot_path.md can show where the time goes before and after.
#
# Usage (from the workspace root):
#   bench/coro/profile_hot_path.sh OUT_DIR [BEFORE_TREE]
# Writes OUT_DIR/profile_<row>[_before].txt (and profile_yield[_w2]_home.txt, the yield rows
# under PostOrder::kHome): `perf report` by symbol (self time, entries
# above 1%). The virtual machines these run on expose no hardware counters, so the event is
# the cpu-clock timer (samples of where the CPU is, not cycles or cache misses). Needs `perf`
# (Debian: linux-perf) and kernel.perf_event_paranoid <= 1 or root.
set -euo pipefail
if (($# < 1)); then
  echo "usage: $0 OUT_DIR [BEFORE_TREE]" >&2
  exit 2
fi
out=$(realpath -m "$1")
before=${2:-}
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fairsched_profile.XXXXXX")  # perf's sample files
cd "$(dirname "$0")/../.."
command -v perf >/dev/null || { echo "perf not found (Debian: apt-get install linux-perf)" >&2; exit 2; }

targets=(//bench/coro:yield_bench //bench/coro:coro_bench //bench/sched:sched_bench)
./bazelw build --config=opt "${targets[@]}"
bin=$(./bazelw info --config=opt bazel-bin 2>/dev/null)
trees=("$bin:")
if [[ -n "$before" ]]; then
  (cd "$before" && ./bazelw build --config=opt "${targets[@]}")
  trees+=("$(cd "$before" && ./bazelw info --config=opt bazel-bin 2>/dev/null):_before")
fi

profile() {  # profile NAME COMMAND...
  local name=$1
  shift
  echo "== $name (load $(cut -d' ' -f1-3 /proc/loadavg))"
  perf record -q -e cpu-clock -F 5000 -o "$tmp/$name.data" -- "$@" >/dev/null 2>&1
  {
    echo "# $name: $*"
    echo "# load before the report: $(cut -d' ' -f1-3 /proc/loadavg)"
    perf report -i "$tmp/$name.data" --stdio --no-children --sort symbol --percent-limit 1 \
      2>/dev/null | grep -v '^$'
  } >"$out/$name.txt"
  rm -f "$tmp/$name.data"
}

for tree in "${trees[@]}"; do
  dir=${tree%%:*}
  suffix=${tree#*:}
  # The row is "fairsched" in a plain checkout; a before tree prepared for
  # record_hot_path.sh may have renamed it "fairsched_before": either matches.
  yield_row='fairsched(_before)?'
  profile "profile_yield$suffix" "$dir/bench/coro/yield_bench" \
    --benchmark_filter="yield/$yield_row/coroutines:100000/steps:100/workers:1/" \
    --benchmark_min_time=3
  profile "profile_yield_w2$suffix" "$dir/bench/coro/yield_bench" \
    --benchmark_filter="yield/$yield_row/coroutines:100000/steps:100/workers:2/" \
    --benchmark_min_time=3
  FAIRSCHED_BENCH_REPS=3 profile "profile_repost$suffix" "$dir/bench/sched/sched_bench" \
    --benchmark_filter='^w2/workers:1/fairsched/'
  FAIRSCHED_BENCH_REPS=3 profile "profile_repost_w2$suffix" "$dir/bench/sched/sched_bench" \
    --benchmark_filter='^w2/workers:2/fairsched/'
  profile "profile_spawn$suffix" "$dir/bench/coro/coro_bench" \
    --benchmark_filter='spawn_complete/coro/workers:1/' --benchmark_min_time=3
done
# The same two yield rows under PostOrder::kHome (home_skew_ceiling 4,096), current tree only.
for workers in 1 2; do
  profile "profile_yield$([[ $workers == 2 ]] && echo _w2)_home" "$bin/bench/coro/yield_bench" \
    --benchmark_filter="yield/fairsched_home_ceiling4k/coroutines:100000/steps:100/workers:$workers/" \
    --benchmark_min_time=3
done
rmdir "$tmp"
echo "profiles: $out/profile_*.txt"
