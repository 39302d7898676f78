#!/usr/bin/env bash
# Runs //examples:savegame (fairsched design, a short closed-loop run on few users) with a
# bug planted by the hidden --seeded_bug flag and asserts that the correctness check
# (examples/savegame/check.h) fails: exit status 1 and, on stderr, exactly one check line
# matching the bug's own message (an extended regular expression, anchored at both ends).
# With the bug "none" the same run must pass (exit 0, no check line).
#
#   savegame_seeded_bug_test.sh BUG [EXPECTED_MESSAGE_REGEX]
set -uo pipefail
bug=$1
expected=${2:-}
args=(--design=fairsched --users=2 --connections=8 --client_threads=2 --duration=1
      --blob_latency=0.2 --cpu_cost=5 --step_timeout=5000 --drain_timeout=10)
if [[ $bug != none ]]; then args+=(--seeded_bug="$bug"); fi
errors=$(mktemp)
"examples/savegame" "${args[@]}" 2>"$errors"
status=$?
echo "--- stderr (exit status $status):"
cat "$errors"
check_lines=$(grep -c "correctness check FAILED" "$errors")
if [[ $bug == none ]]; then
  [[ $status == 0 && $check_lines == 0 ]] || { echo "FAIL: the clean run did not pass"; exit 1; }
  echo PASS
  exit 0
fi
[[ $status == 1 ]] || { echo "FAIL: expected exit status 1, got $status"; exit 1; }
[[ $check_lines == 1 ]] || { echo "FAIL: expected one check line, got $check_lines"; exit 1; }
line=$(grep "correctness check FAILED" "$errors")
if ! grep -qxE "savegame: fairsched: correctness check FAILED: $expected" <<<"$line"; then
  echo "FAIL: the check line does not match: $expected"
  exit 1
fi
echo PASS
