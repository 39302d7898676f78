#!/bin/bash
# The load generator's per-connection bound, before and after, in the same rounds: the flood
# point of the echo table (1,000 connections, 64 B; without and with one flooder keeping 64
# frames in flight) against fairsched's echo server (epoll) and Asio's, each measured by a
# load generator without the bound (an older build of tools/loadgen, given as OLD) and by
# the current one (built here), interleaved round by round. One line per measurement:
#   loadgen=old|new server=... base_rps= base_p99_us= flood_rps= flood_p99_us= flooder_requests=
# Usage: bench/io/loadgen_bound_ab.sh ROUNDS OLD_LOADGEN OUT
#   (OLD_LOADGEN: e.g. tools/loadgen built at the commit before "at most depth echoes per
#   readiness report"). Loopback only; about 30 s per round.
set -euo pipefail
rounds=$1
old=$2
out=$3
./bazelw build --config=opt //examples:echo_server //bench/io:asio_echo_server //tools/loadgen
bin=$(./bazelw info --config=opt bazel-bin 2>/dev/null)
new=$bin/tools/loadgen/loadgen
: > "$out"
port=17700
source "$(dirname "$0")/echo_servers.sh"  # start_server, stop_server
field() { grep -o " $1=[0-9.]*" <<< "$2" | head -1 | cut -d= -f2; }
for round in $(seq "$rounds"); do
  for loadgen in old new; do
    if [ $loadgen = old ]; then lg=$old; else lg=$new; fi
    for server in fairsched-epoll asio; do
      port=$((port + 1))
      start_server $server > /dev/null
      base=$("$lg" --port=$port --seconds=2 --server_pid=$server_pid --connections=1000 --size=64 | grep RESULT)
      flood=$("$lg" --port=$port --seconds=2 --server_pid=$server_pid --connections=1000 --size=64 \
        --flood_connections=1 --flood_depth=64 | grep RESULT)
      echo "round=$round loadgen=$loadgen server=$server base_rps=$(field rps "$base")" \
        "base_p99_us=$(field p99_us "$base") flood_rps=$(field rps "$flood")" \
        "flood_p99_us=$(field p99_us "$flood") flooder_requests=$(field flood_requests "$flood")" \
        | tee -a "$out"
      stop_server
    done
  done
done
