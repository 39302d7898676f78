#!/usr/bin/env bash
# Runs //examples:tls_echo_server as a user would and talks to it with Debian's
# `openssl s_client` (a TLS client independent of the code under test), over loopback, on
# both backends, with TLS 1.2 and 1.3: the echoed plaintext must come back unchanged. The
# certificate is a throwaway self-signed one made here with `openssl req` (test-only key,
# in TEST_TMPDIR, never committed). Skips with a message if `openssl` is not on PATH.
set -euo pipefail

source tests/shell/server_process.sh

if ! command -v openssl > /dev/null; then
  echo "SKIPPED: no 'openssl' binary on PATH (Debian package openssl)"
  exit 0
fi

dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/tls_echo.XXXXXX")
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
  -subj /CN=localhost -addext subjectAltName=DNS:localhost \
  -keyout "$dir/key.pem" -out "$dir/cert.pem" 2> "$dir/req.log" || fail "openssl req: $(cat "$dir/req.log")"

# start <args...>: runs the server on a free port; sets pid and port. The idle timeout
# makes the server end each session (close_notify, then close) 1 s after the last bytes,
# which ends s_client's read loop: no sleeps decide what was received.
start() {
  start_server "$dir/server.log" examples/tls_echo_server --cert="$dir/cert.pem" \
    --key="$dir/key.pem" --port=0 --seconds=60 --idle_timeout_ms=1000 "$@"
}

# exchange <tls version flag> <text>: one s_client session, verifying the certificate.
exchange() {
  local got
  got=$(printf '%s' "$2" | timeout 20 openssl s_client "$1" -quiet -verify_return_error \
          -CAfile "$dir/cert.pem" -verify_hostname localhost -connect "127.0.0.1:$port" \
          2> "$dir/client.log") || fail "s_client $1 failed (${#2} bytes): $(cat "$dir/client.log"); server: $(cat "$dir/server.log")"
  [ "$got" == "$2" ] ||
    fail "s_client $1: sent ${#2} bytes '${2:0:40}...', got ${#got} '${got:0:40}...' ($(cat "$dir/client.log"))"
}

big=$(head -c 100000 /dev/zero | tr '\0' 'z')
for backend in epoll io_uring; do
  start --backend="$backend"
  exchange -tls1_3 "hello over TLS 1.3"
  exchange -tls1_2 "hello over TLS 1.2"
  exchange -tls1_3 "$big"
  # Plain bytes are not a TLS handshake: the server drops the connection with an error.
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf 'GET / HTTP/1.1\r\n\r\n' >&3
  timeout 5 cat <&3 > /dev/null || fail "the server did not close a plaintext connection"
  exec 3>&-
  stop_server
  grep -q "TLS handshake failed" "$dir/server.log" || fail "no handshake error logged: $(cat "$dir/server.log")"
done
echo PASS
