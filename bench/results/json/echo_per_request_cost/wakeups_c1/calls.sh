#!/usr/bin/env bash
# System calls per echoed request: for each variant (DIR/<variant>/echo_server, a
# --config=opt build), starts the server (2 workers), runs loadgen for 4 s and counts the
# server's syscalls and CPU with `perf stat` over 2 s in the middle; prints one line per run,
# counts divided by the requests (the sendto calls; on io_uring, which makes none, 2 s x rps).
#   [SIZE=BYTES] calls.sh DIR epoll|io_uring CONNECTIONS REPS   (from anywhere; needs perf)
# SIZE is the request size (64 by default). epoll_wait and epoll_ctl are counted for servers
# other than fairsched (the trivial one); older outputs here were made without them.
dir=$1 backend=$2 conns=$3 reps=$4
lg=$(cd "$(dirname "$0")/../../../../.." && ./bazelw info --config=opt bazel-bin 2>/dev/null)/tools/loadgen/loadgen
port=19500
for rep in $(seq $reps); do
for v in $(ls $dir); do
  port=$((port+1))
  $dir/$v/echo_server --backend=$backend --workers=2 --port=$port >/dev/null 2>&1 &
  pid=$!; sleep 0.5
  $lg --port=$port --seconds=4 --connections=$conns --size=${SIZE:-64} --server_pid=$pid > /tmp/calls_lg.txt 2>&1 &
  lpid=$!
  sleep 1
  perf stat -x, -p $pid -e syscalls:sys_enter_futex,syscalls:sys_enter_io_uring_enter,syscalls:sys_enter_epoll_pwait2,syscalls:sys_enter_sched_yield,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_write,syscalls:sys_enter_read,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_ctl,context-switches,task-clock -- sleep 2 2> /tmp/calls_perf.txt
  wait $lpid
  kill -INT $pid; wait $pid 2>/dev/null
  python3 - "$v" "$backend" "$conns" "$rep" <<'PY'
import sys
v,b,c,r=sys.argv[1:]
vals={}
for line in open('/tmp/calls_perf.txt'):
    p=line.strip().split(',')
    if len(p)>3 and p[0] not in ('<not counted>',''):
        try: vals[p[2].split(':')[-1]]=float(p[0])
        except: pass
lg=open('/tmp/calls_lg.txt').read()
import re
rps=re.search(r' rps=(\d+)',lg)
# requests in the 2 s window: approximate with rps*2
req=vals.get('sys_enter_sendto',0) or (int(rps.group(1))*2 if rps else 1)
out=' '.join(f"{k}={vals[k]/req:.3f}" for k in vals if k!='task-clock')
print(f"variant={v} backend={b} c={c} rep={r} rps={rps.group(1) if rps else '?'} sends={req:.0f} cpu_us_per_req={vals.get('task-clock',0)*1e3/req:.2f} {out}")
PY
done; done
