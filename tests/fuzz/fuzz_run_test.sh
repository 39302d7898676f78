#!/usr/bin/env bash
# A bounded fuzz run as a test (tests/fuzz/BUILD, `<target>_fuzz_run`): runs a libFuzzer
# executable for a few seconds on a scratch copy of its seed corpus, with its regression
# inputs as a second, read-only corpus. Fails (with libFuzzer's report and the crashing
# input saved among the test's outputs) when the target finds a crash, a leak or a broken
# property. Usage: fuzz_run_test.sh FUZZER CORPUS_DIR REGRESSIONS_DIR SECONDS
set -euo pipefail
fuzzer=$1
corpus=$2
regressions=$3
seconds=$4

scratch="${TEST_TMPDIR:-$(mktemp -d)}/corpus"
mkdir -p "$scratch"
cp "$corpus"/* "$scratch"/
inputs=("$scratch")
if [[ -d "$regressions" ]]; then inputs+=("$regressions"); fi
artifacts="${TEST_UNDECLARED_OUTPUTS_DIR:-$scratch/..}/"

# -timeout: an input that runs 30 s is a hang (generous: a loaded or briefly paused machine
# is slow); -rss_limit_mb: bounded memory per input.
# The log without libFuzzer's line per new input.
status=0
"$fuzzer" -max_total_time="$seconds" -timeout=30 -report_slow_units=60 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$artifacts" "${inputs[@]}" >"$scratch/../log" 2>&1 ||
  status=$?
grep -v '^#[0-9]*[[:space:]]*\(NEW\|REDUCE\|pulse\)' "$scratch/../log" || true
exit "$status"
