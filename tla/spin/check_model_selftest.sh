#!/usr/bin/env bash
# check_model_selftest.sh: tests check_model.sh itself. A seeded-bug target passes only if
# Spin reports exactly the violation it names, so each case below gives check_model.sh a
# wrong expectation and requires it to fail, with its own reason:
#   - an assertion bug expected as "invalid end state" (another error kind),
#   - a lost-wakeup bug (invalid end state) expected as an assertion,
#   - an assertion bug expected by a prefix of its message (no substring matching),
#   - an assertion bug expected as a different assertion that the replay prints (it passed
#     on the way to the violation),
#   - a correct model expected to fail.
# And once with the right expectation, so the cases above fail for their reason only.
#
# Usage: check_model_selftest.sh CHECK_MODEL.sh SIGNAL_FUTEX.pml MPSC_QUEUE.pml
set -uo pipefail

if (($# != 3)); then
  echo "usage: $0 check_model.sh signal_futex.pml mpsc_queue.pml" >&2
  exit 2
fi
check=$1
futex=$2
mpsc=$3
failures=0

# expect_rejected NAME REASON ARGS...: check_model.sh ARGS must exit 1 and print REASON.
expect_rejected() {
  local name=$1 reason=$2
  shift 2
  local out rc
  out=$("$check" "$@" 2>&1)
  rc=$?
  if ((rc != 1)); then
    echo "selftest: FAIL: $name: check_model.sh exited $rc, want 1"
    echo "$out" | tail -n 5
    failures=$((failures + 1))
  elif ! grep -qF -- "$reason" <<<"$out"; then
    echo "selftest: FAIL: $name: rejected, but without '$reason':"
    echo "$out" | grep '^check_model:' | tail -n 3
    failures=$((failures + 1))
  else
    echo "selftest: ok: $name rejected: $reason"
  fi
}

assertion='assertion violated (bits_taken<=bits_set)'

expect_rejected "assertion bug expected as invalid end state" \
  "check_model: FAIL: Spin found '$assertion', not the expected 'invalid end state'" \
  "$futex" safety 'fail:invalid end state' -DBUG_RECHECK_LOAD_STORE

expect_rejected "invalid end state expected as an assertion" \
  "check_model: FAIL: Spin found 'invalid end state', not the expected '$assertion'" \
  "$mpsc" safety "fail:$assertion" -DBUG_NO_NOTIFY

expect_rejected "prefix of the assertion" \
  "check_model: FAIL: Spin found '$assertion', not the expected 'assertion violated'" \
  "$futex" safety 'fail:assertion violated' -DBUG_RECHECK_LOAD_STORE

# The replay (spin -t -p) prints every assertion it passes on the way, e.g.
# "[assert((waiters<=2))]": text found there is not the violation.
expect_rejected "an assertion that passed on the way" \
  "check_model: FAIL: Spin found '$assertion', not the expected '(waiters<=2)'" \
  "$futex" safety 'fail:(waiters<=2)' -DBUG_RECHECK_LOAD_STORE

expect_rejected "a correct model expected to fail" \
  "check_model: FAIL: expected Spin to find 'invalid end state', but the model passed" \
  "$futex" safety 'fail:invalid end state'

# The right expectation passes.
if out=$("$check" "$futex" safety "fail:$assertion" -DBUG_RECHECK_LOAD_STORE 2>&1); then
  echo "selftest: ok: the right expectation passes"
else
  echo "selftest: FAIL: the right expectation was rejected:"
  echo "$out" | grep '^check_model:' | tail -n 3
  failures=$((failures + 1))
fi

if ((failures > 0)); then
  echo "selftest: $failures case(s) failed"
  exit 1
fi
echo "selftest: PASS"
