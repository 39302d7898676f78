#!/usr/bin/env bash
# Echo benchmark: fairsched's coroutine echo server (examples/echo_server.cc) on epoll and on
# io_uring, and the same server written with Asio (bench/io/asio_echo_server.cc), Tokio and
# Go (bench/io/peers/), and the trivial version (bench/io/trivial_epoll_echo_server.cc: a plain
# echo on raw epoll, no framework), all driven by the same load generator (tools/loadgen) in
# one run, interleaved, repeated.
#   bench/io/echo_bench.sh [repeats=3] [seconds=3] [out=/tmp/echo_bench] [servers...]
# servers: fairsched-epoll fairsched-io_uring (echo_server's default: no spin before park),
# trivial-epoll asio tokio go (the default list; tokio and go only if bench/io/peers/build.sh
# can build them, else with a warning); also fairsched-epoll-spin20 fairsched-io_uring-spin20
# (--spin_us=20, the scheduler's default; bench/results/io.md run 3) and
# fairsched-epoll-nospin, fairsched-io_uring-nospin (--spin_us=0, the names of older
# recordings; now the same as the first pair); any of them with
# the suffix -framed (e.g. asio-framed) runs the 4-byte length-prefixed protocol instead.
# before-epoll, before-io_uring: the echo_server binary named by $ECHO_SERVER_BEFORE (an
# older build, e.g. from a git worktree of the commit before a change), for a before/after
# comparison in the same interleaved run (echo_summary.py gives fairsched-X/before-X).
# The Tokio and Go peers are built outside Bazel into $ECHO_PEERS_BUILD (default
# ${TMPDIR:-/tmp}/fairsched_echo_peers_build).
# Every server echoes plain bytes by default (examples/echo_server.h, EchoProtocol::kPlain):
# loadgen's frames are just bytes to them and come back unchanged, so loadgen checks the
# echo byte for byte in both protocols.
# Points: 1, 64 and 1,000 connections x 64-byte and 4 KiB messages, plus the fairness pair
# (1,000 connections of 64 bytes, without and with one connection flooding 64 frames deep).
# Every server gets --workers=2; loadgen runs one epoll thread. Prints one RESULT line per
# run to $out/results.txt and a summary (medians, min-max, per-round ratios, the goals)
# through echo_summary.py. Exits non-zero if any run failed or saw errors (the numbers of
# the other runs are still summarised), so a short run is a smoke test of the plumbing:
#   bench/io/echo_bench.sh 1 1 /tmp/echo_smoke fairsched-epoll asio tokio go
set -euo pipefail
cd "$(dirname "$0")/../.."
repeats=${1:-3}
seconds=${2:-3}
out=${3:-/tmp/echo_bench}
shift $(( $# < 3 ? $# : 3 ))
servers=("$@")
mkdir -p "$out"
./bazelw build --config=opt //examples:echo_server //bench/io:asio_echo_server \
  //bench/io:trivial_epoll_echo_server //tools/loadgen
bin=$(./bazelw info --config=opt bazel-bin 2>/dev/null)
peers=${ECHO_PEERS_BUILD:-${TMPDIR:-/tmp}/fairsched_echo_peers_build}
if [ ${#servers[@]} -eq 0 ]; then
  servers=(fairsched-epoll fairsched-io_uring trivial-epoll asio)
  if bench/io/peers/build.sh "$peers" > /dev/null; then
    servers+=(tokio go)
  else
    echo "echo_bench.sh: WARNING: the Tokio and Go peers did not build (above); running without them" >&2
  fi
elif [[ " ${servers[*]} " =~ \ (tokio|go)(-framed)?\  ]]; then
  bench/io/peers/build.sh "$peers" > /dev/null
fi
port=17000
: > "$out/results.txt"

source bench/io/echo_servers.sh  # start_server, stop_server

run() {  # server label loadgen-args...
  local server=$1 label=$2
  shift 2
  local line
  line=$("$bin/tools/loadgen/loadgen" --port=$port --seconds="$seconds" --server_pid="$server_pid" "$@" \
         | grep '^RESULT' || echo "RESULT failed=1")
  echo "server=$server label=$label rep=$rep load=$(cut -d' ' -f1 /proc/loadavg) ${line#RESULT }" \
    | tee -a "$out/results.txt"
}

for rep in $(seq "$repeats"); do
  for server in "${servers[@]}"; do
    port=$((port + 1))
    start_server "$server"
    for connections in 1 64 1000; do
      for size in 64 4096; do
        run "$server" "c${connections}_s${size}" --connections=$connections --size=$size
      done
    done
    run "$server" fair_base --connections=1000 --size=64
    run "$server" fair_flood --connections=1000 --size=64 --flood_connections=1 --flood_depth=64
    stop_server
  done
done
python3 bench/io/echo_summary.py "$out/results.txt" || true
# A run without an rps field failed outright; errors=N > 0: loadgen saw wrong or lost echoes.
failed=$(grep -cv ' rps=.* errors=0$' "$out/results.txt" || true)
if [ "$failed" -gt 0 ]; then
  echo "echo_bench.sh: $failed run(s) failed or saw errors:" >&2
  grep -v ' rps=.* errors=0$' "$out/results.txt" >&2
  exit 1
fi
