#!/usr/bin/env bash
# tools/redis/private_redis.sh: `start DIR` prints a loopback port where a redis-server with
# appendonly answers, its PID in DIR/redis.pid; `stop DIR` ends exactly that process. Skips
# (exit 0 with the message) only when redis-server is not installed: a test never installs.
set -euo pipefail
script=$1
if ! command -v redis-server >/dev/null && [[ ! -x /usr/bin/redis-server ]]; then
  echo "SKIPPED: redis-server is not installed: apt-get install -y redis-server"
  exit 0
fi
dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/redis.XXXXXX")
port=$("$script" start "$dir")
pid=$(cat "$dir/redis.pid")
trap 'kill -KILL "$pid" 2>/dev/null || true' EXIT
[[ $port =~ ^[0-9]+$ ]] || { echo "FAIL: start printed '$port', not a port"; exit 1; }
kill -0 "$pid" || { echo "FAIL: no process $pid"; exit 1; }
grep -q "redis-server" "/proc/$pid/cmdline" || { echo "FAIL: $pid is not redis-server"; exit 1; }
tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "127.0.0.1:$port" ||
  { echo "FAIL: not bound to 127.0.0.1:$port: $(tr '\0' ' ' <"/proc/$pid/cmdline")"; exit 1; }
# SET then GET over a raw connection; appendonly is on.
answer=$(exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n' >&3
  printf '*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$10\r\nappendonly\r\n' >&3
  timeout 2 head -c 43 <&3)
expected=$(printf '+OK\r\n$2\r\nv1\r\n*2\r\n$10\r\nappendonly\r\n$3\r\nyes\r\n')
[[ $answer == "$expected" ]] || { echo "FAIL: answers: $(printf %q "$answer")"; exit 1; }
"$script" stop "$dir"
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$pid" 2>/dev/null; then echo "FAIL: $pid still runs after stop"; exit 1; fi
[[ ! -e $dir/redis.pid ]] || { echo "FAIL: stop left $dir/redis.pid"; exit 1; }
echo "PASS: started on port $port as PID $pid, answered, stopped"
