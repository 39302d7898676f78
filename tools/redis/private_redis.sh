#!/usr/bin/env bash
# A private redis-server for tests and for trying the savegame job by hand: on a free
# loopback port, in a directory of its own, with `appendonly yes` and `appendfsync always`
# (every write in the AOF before its answer; no RDB snapshots), stopped
# by its PID. The C++ tests and `//examples:savegame --store=redis` start theirs the same
# way from C++ (examples/redis/redis_server_process.h).
#
#   tools/redis/private_redis.sh install      # apt-get install -y redis-server if missing
#   tools/redis/private_redis.sh start DIR    # prints the port; DIR keeps the AOF, log, pid
#   tools/redis/private_redis.sh stop DIR     # SIGTERM by the PID in DIR/redis.pid, waits
#
#   dir=$(mktemp -d); port=$(tools/redis/private_redis.sh start "$dir")
#   ./bazelw run //examples:savegame -- --store=redis://127.0.0.1:$port
#   tools/redis/private_redis.sh stop "$dir"
#
# `start` installs redis-server when it is missing and this shell may (root, or sudo without
# a password); otherwise it fails with the one line that says what to install.
set -euo pipefail

die() { echo "private_redis.sh: $*" >&2; exit 1; }

find_server() {
  command -v redis-server 2>/dev/null && return 0
  for p in /usr/bin/redis-server /usr/sbin/redis-server; do
    [[ -x $p ]] && { echo "$p"; return 0; }
  done
  return 1
}

install_server() {
  find_server >/dev/null && return 0
  local sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
      die "redis-server is not installed: run 'sudo apt-get install -y redis-server'"
    fi
  fi
  echo "private_redis.sh: installing redis-server (apt-get install -y redis-server)" >&2
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server >&2 ||
    die "apt-get install redis-server failed"
  find_server >/dev/null || die "redis-server still not found after installing it"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pings() {  # port: true when the server answers PING with +PONG
  local answer
  answer=$(exec 2>/dev/null; exec 3<>"/dev/tcp/127.0.0.1/$1" &&
           printf '*1\r\n$4\r\nPING\r\n' >&3 && timeout 1 head -c 5 <&3) || return 1
  [[ $answer == "+PONG" ]]
}

start() {
  local dir=$1 server port pid
  [[ -d $dir ]] || die "no directory $dir"
  dir=$(cd "$dir" && pwd)
  install_server
  server=$(find_server)
  for _ in 1 2 3; do  # the port may be taken between free_port and the server's bind
    port=$(free_port)
    "$server" --bind 127.0.0.1 --port "$port" --dir "$dir" --appendonly yes --appendfsync always --save "" \
      --daemonize no --logfile "$dir/redis.log" --protected-mode yes </dev/null >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 200); do  # 10 s
      if pings "$port"; then
        echo "$pid" >"$dir/redis.pid"
        echo "$port" >"$dir/redis.port"
        echo "$port"
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  die "redis-server did not start; its log: $(tail -n 5 "$dir/redis.log" 2>/dev/null)"
}

stop() {
  local dir=$1 pid
  [[ -f $dir/redis.pid ]] || die "no $dir/redis.pid: nothing started there"
  pid=$(cat "$dir/redis.pid")
  kill -CONT "$pid" 2>/dev/null || true
  kill "$pid" 2>/dev/null || { rm -f "$dir/redis.pid"; return 0; }
  for _ in $(seq 1 100); do  # 5 s, then SIGKILL
    kill -0 "$pid" 2>/dev/null || { rm -f "$dir/redis.pid"; return 0; }
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$dir/redis.pid"
}

case "${1:-}" in
  install) install_server ;;
  start) [[ $# -eq 2 ]] || die "usage: $0 start DIR"; start "$2" ;;
  stop) [[ $# -eq 2 ]] || die "usage: $0 stop DIR"; stop "$2" ;;
  *) die "usage: $0 install | start DIR | stop DIR" ;;
esac
