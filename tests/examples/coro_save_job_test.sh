#!/usr/bin/env bash
# Runs //examples:coro_save_job (the README's coroutine example) and checks what each of its
# three jobs reported: signalled -> saved, never signalled -> deadline, cancelled -> cancelled.
set -euo pipefail
out=$("examples/coro_save_job")
echo "$out"
expect() {
  grep -qx "$1" <<<"$out" || { echo "FAIL: expected the line '$1'"; exit 1; }
}
expect "signalled job: saved"
expect "unsignalled job: deadline"
expect "cancelled job: cancelled"
expect "saves: 1"
echo PASS
