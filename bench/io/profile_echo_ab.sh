#!/usr/bin/env bash
# Profiles the io_uring echo server of this tree against an older build ($ECHO_SERVER_BEFORE),
# at 1,000 connections x 4 KiB (the loaded cell), to explain a before/after difference in
# bench/io/echo_bench.sh: two rounds, current then before, each a 4 s loadgen run while
# `perf record -e cpu-clock` samples the server (this VM has no hardware counters); writes
# OUT/profile_<side>_r<round>.txt (symbols above 0.7% of the samples; [k] kernel, [.] user)
# and OUT/profile_loadgen.txt (loadgen's RESULT line of each run).
#   ECHO_SERVER_BEFORE=/path/to/old/echo_server bench/io/profile_echo_ab.sh OUT
set -u
cd "$(dirname "$0")/../.."
out=$1
mkdir -p "$out"
./bazelw build --config=opt //examples:echo_server //tools/loadgen > /dev/null 2>&1
bin=$(./bazelw info --config=opt bazel-bin 2>/dev/null)
port=17500
for round in 1 2; do
  for side in current before; do
    port=$((port + 1))
    if [[ $side == current ]]; then exe="$bin/examples/echo_server"; else exe="${ECHO_SERVER_BEFORE:?}"; fi
    "$exe" --backend=io_uring --workers=2 --port=$port > /dev/null 2>&1 &
    pid=$!
    sleep 0.5
    data=$(mktemp "${TMPDIR:-/tmp}/perf_echo_ab.XXXXXX")
    perf record -e cpu-clock -F 2000 -p "$pid" -o "$data" -- sleep 4 > /dev/null 2>&1 &
    perf_pid=$!
    "$bin/tools/loadgen/loadgen" --port=$port --seconds=4 --server_pid=$pid --connections=1000 \
      --size=4096 | grep '^RESULT' | sed "s/^/$side r$round /" >> "$out/profile_loadgen.txt"
    wait "$perf_pid"
    kill -TERM "$pid"
    wait "$pid"
    perf report -i "$data" --stdio --no-children --percent-limit 0.7 --sort symbol 2>/dev/null \
      | grep "%" | sed 's/  */ /g' | cut -c1-200 > "$out/profile_${side}_r$round.txt"
    rm -f "$data"
  done
done
