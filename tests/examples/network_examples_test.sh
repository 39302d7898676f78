#!/usr/bin/env bash
# Runs the network example binaries as a user would and talks to them like nc, over
# loopback, on both backends: //examples:echo_server echoes plain bytes by default and
# frames with --framed (where plain text is an oversized frame: dropped, nothing echoed);
# //examples:kv_server answers a scripted session. Every read has a timeout.
set -euo pipefail

source tests/shell/server_process.sh
log=$(mktemp "${TEST_TMPDIR:-/tmp}/server.XXXXXX")

# start <binary> <args...>: runs it on a free port; sets pid and port.
start() { start_server "$log" "$@" --port=0 --seconds=30; }

# exchange <bytes to send (printf format)> <bytes expected back>: one connection.
exchange() {
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf "$1" >&3
  local got
  got=$(timeout 5 head -c "$(printf "$2" | wc -c)" <&3 | od -An -tx1) || true
  exec 3>&-
  [ "$got" == "$(printf "$2" | od -An -tx1)" ] || fail "sent '$1', expected '$2', got bytes: $got"
}

# dropped <bytes to send>: the server closes the connection without answering.
dropped() {
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf "$1" >&3
  local got status=0
  got=$(timeout 5 cat <&3 | od -An -tx1) || status=$?
  exec 3>&-
  [ "$status" -eq 0 ] || fail "sent '$1': the server did not close the connection"
  [ -z "$got" ] || fail "sent '$1': expected no answer, got bytes: $got"
}

# uses_backend <epoll|io_uring>: the running server ($pid) says so and holds that kind of
# kernel object (an eventpoll or io_uring fd), not the other.
uses_backend() {
  local kind=$1 other=io_uring
  [ "$kind" == io_uring ] && other=eventpoll
  [ "$kind" == epoll ] && kind=eventpoll
  grep -q ": $1, listening on" "$server_log" || fail "the log does not name $1: $(cat "$server_log")"
  local fds
  fds=$(ls -l "/proc/$pid/fd")
  grep -q "anon_inode:\[$kind\]" <<< "$fds" || fail "--backend=$1: no $kind fd: $fds"
  ! grep -q "anon_inode:\[$other\]" <<< "$fds" || fail "--backend=$1: an $other fd: $fds"
}

# A name that is not a backend of this platform is refused with the usage (exit 2).
status=0
examples/kv_server --backend=iocp --seconds=1 > "$log" 2>&1 || status=$?
[ "$status" -eq 2 ] || fail "kv_server --backend=iocp exited with $status: $(cat "$log")"
grep -q 'usage: kv_server \[--backend=epoll|io_uring\]' "$log" || fail "no usage: $(cat "$log")"

for backend in epoll io_uring; do
  start examples/echo_server --backend="$backend"
  exchange 'hello nc\n' 'hello nc\n'
  exchange '\377\377\377\377 any bytes' '\377\377\377\377 any bytes'
  stop_server

  start examples/echo_server --backend="$backend" --framed
  dropped 'hello nc\n'  # "hell": a frame of 1.8 GB, over the limit
  exchange '\005\000\000\000hello' '\005\000\000\000hello'
  stop_server

  start examples/kv_server --backend="$backend"
  uses_backend "$backend"
  exchange 'SET a 2\r\nhi\r\nGET a\nGET b\nQUIT\n' 'STORED\nVALUE 2\nhi\nNOT_FOUND\nBYE\n'
  exchange "GET $(head -c 5000 /dev/zero | tr '\0' x)\n" 'ERROR line too long\n'
  stop_server
done
echo PASS
