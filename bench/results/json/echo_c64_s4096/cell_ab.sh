#!/usr/bin/env bash
# cell_ab.sh ROUNDS OUT DIR CONNS SIZE: alternating rounds of DIR/<variant>/echo_server (epoll,
# 2 workers), loadgen for 2 s per run; the order of the variants rotates by round.
rounds=$1 out=$2 dir=$3 conns=$4 size=$5
lg=$(cd "$(dirname "$0")/../../../.." && ./bazelw info --config=opt bazel-bin 2>/dev/null)/tools/loadgen/loadgen
mapfile -t variants < <(ls "$dir")
port=19700
: > "$out"
for round in $(seq "$rounds"); do
  n=${#variants[@]}
  for i in $(seq 0 $((n - 1))); do
    v=${variants[$(((i + round) % n))]}
    port=$((port + 1))
    "$dir/$v/echo_server" --backend=epoll --workers=2 --port=$port > /dev/null 2>&1 &
    pid=$!; sleep 0.5
    line=$("$lg" --port=$port --seconds=2 --connections=$conns --size=$size --server_pid=$pid | grep '^RESULT' || echo "RESULT failed=1")
    echo "variant=$v label=c${conns}_s${size} round=$round load=$(cut -d' ' -f1 /proc/loadavg) ${line#RESULT }" | tee -a "$out"
    kill -INT $pid; wait $pid 2>/dev/null || true
  done
done
