#!/usr/bin/env bash
# Alternating A/B of //examples:echo_server builds (plain echo, 2 workers) on the echo
# harness's load generator: each round starts every variant's server in turn (the order
# rotates per round) and runs the cells below against it, 2 s each.
#   ab.sh <rounds> <out> <dir-with-one-subdirectory-per-variant>
# Each <dir>/<variant>/echo_server is a --config=opt build; loadgen comes from bazel-bin.
set -euo pipefail
rounds=$1 out=$2 dir=$3
bin=$(cd "$(dirname "$0")/../../../.." && ./bazelw info --config=opt bazel-bin 2>/dev/null)
mapfile -t variants < <(ls "$dir")
port=19100
: > "$out"
for round in $(seq "$rounds"); do
  n=${#variants[@]}
  for i in $(seq 0 $((n - 1))); do
    variant=${variants[$(((i + round) % n))]}
    for backend in epoll io_uring; do
      port=$((port + 1))
      "$dir/$variant/echo_server" --backend=$backend --workers=2 --port=$port > /dev/null 2>&1 &
      pid=$!
      sleep 0.5
      for cell in c1_s64:1:64 c64_s64:64:64 c1000_s64:1000:64; do
        IFS=: read -r label connections size <<< "$cell"
        line=$("$bin/tools/loadgen/loadgen" --port=$port --seconds=2 --connections=$connections \
               --size=$size --server_pid=$pid | grep '^RESULT' || echo "RESULT failed=1")
        echo "variant=$variant backend=$backend label=$label round=$round load=$(cut -d' ' -f1 /proc/loadavg) ${line#RESULT }" | tee -a "$out"
      done
      kill -INT $pid; wait $pid 2>/dev/null || true
    done
  done
done
