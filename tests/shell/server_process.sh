# Sourced by the shell tests that run an example server binary as a user would
# (tests/examples/network_examples_test.sh, tests/io/tls_echo_server_test.sh): start it on a
# free loopback port, find the port in its log, stop it with SIGTERM and check its exit.
# Sets and reads the globals `pid`, `port` and `server_log`; needs `set -euo pipefail`.

fail() { echo "FAIL: $*"; exit 1; }

# start_server <log file> <command...>: runs the command in the background with stdout and
# stderr in <log file> (emptied first, so no stale port from an earlier run is read) and
# waits up to 10 s for its "listening on 127.0.0.1:<port>" line; sets pid and port.
start_server() {
  server_log=$1
  shift
  : > "$server_log"
  "$@" > "$server_log" 2>&1 &
  pid=$!
  for _ in $(seq 200); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$server_log")
    if [ -n "$port" ]; then return; fi
    sleep 0.05
  done
  fail "$* did not start: $(cat "$server_log")"
}

# stop_server: SIGTERM, then the server must exit with status 0.
stop_server() {
  kill -TERM "$pid"
  wait "$pid" || fail "server exited with $?: $(cat "$server_log")"
}
