#!/usr/bin/env bash
# The Windows build of //examples:echo_server (IOCP) serving loopback load under Wine:
# starts echo_server.exe in a fresh Wine prefix (tools/mingw/wine_test.sh), then 20 Linux-side
# clients (bash /dev/tcp) each send 10 length-prefixed frames and must get every byte back
# unchanged, and the server must stop by itself (--seconds) with exit code 0. Bounded:
# every client read has a timeout, the server a time limit. `bazel test --config=mingw`.
# The frames are written to files before the server starts, so a client spawns only three
# processes per frame: on a loaded 2-core machine 20 bash clients that built each frame
# with printf/head/tr took longer than the server's 20 s (CI, stop 37).
set -euo pipefail

server_exe=$1
wine_runner=$2
work=${TEST_TMPDIR:?run by bazel test}
clients=20
frames=10
server_seconds=40

# Frame `frame` of client `id`: 1..250 bytes (the client below reads back as many).
for id in $(seq "$clients"); do
  for frame in $(seq "$frames"); do
    size=$(((id * 37 + frame * 11) % 250 + 1))
    {
      printf "\\x$(printf %02x "$size")\\x00\\x00\\x00"
      head -c "$size" /dev/zero | tr '\0' "$(printf "\\x$(printf %02x $((97 + (id + frame) % 26)))")"
    } >"$work/expected.$id.$frame"
  done
done
"$wine_runner" "$server_exe" --port=0 --workers=2 --seconds="$server_seconds" \
  >"$work/server.out" 2>&1 &
server=$!

port=""
for _ in $(seq 300); do  # up to 60 s for Wine to start
  port=$(grep -o 'listening on 127\.0\.0\.1:[0-9]*' "$work/server.out" | grep -o '[0-9]*$' || true)
  [[ -n "$port" ]] && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.2
done
if [[ -z "$port" ]]; then
  echo "FAIL: the server did not report its port" >&2
  cat "$work/server.out" >&2
  exit 1
fi
echo "server listening on port $port"

# One client: frames of 1..250 bytes (a 4-byte little-endian length, then the payload),
# each sent and read back before the next.
client() {
  local id=$1
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  for frame in $(seq "$frames"); do
    local expected="$work/expected.$id.$frame"
    cat "$expected" >&3
    timeout 20 head -c "$((4 + (id * 37 + frame * 11) % 250 + 1))" <&3 >"$work/received.$id"
    if ! cmp -s "$expected" "$work/received.$id"; then
      echo "FAIL: client $id frame $frame: the echo differs" >&2
      return 1
    fi
  done
  exec 3>&-
}

clients_start=$SECONDS
pids=()
for id in $(seq "$clients"); do
  client "$id" &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do
  wait "$pid" || failed=1
done
echo "the clients took $((SECONDS - clients_start)) s (the server runs ${server_seconds} s)"

rc=0
wait "$server" || rc=$?
cat "$work/server.out"
if ((failed)); then
  echo "FAIL: some clients did not get their bytes back" >&2
  exit 1
fi
if ((rc != 0)); then
  echo "FAIL: the server exited with $rc" >&2
  exit 1
fi
echo "PASS: $clients clients x $frames frames echoed by the IOCP echo server under Wine"
