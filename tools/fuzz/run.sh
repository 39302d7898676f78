#!/usr/bin/env bash
# The long fuzz run: builds one fuzz target (tests/fuzz) with `--config=fuzz` and runs it
# for SECONDS under nice, then prints libFuzzer's summary (executions per second, coverage).
#
#   tools/fuzz/run.sh TARGET SECONDS [libFuzzer flags...]     e.g. tools/fuzz/run.sh kv_server 3600
#
# The corpus grows in a scratch copy ($FUZZ_WORK/<target>, default /tmp/fairsched-fuzz),
# seeded from tests/fuzz/corpus/<target> and tests/fuzz/regressions/<target>; the committed
# corpus is not touched (to keep new finds, minimise them into it with `-merge=1`). A crash,
# leak or timeout is written to tests/fuzz/regressions/<target>/ under libFuzzer's name, so
# //tests/fuzz:replay_test replays it from then on; the run stops at the first one.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ $# -lt 2 ]]; then
  echo "usage: $0 TARGET SECONDS [libFuzzer flags...]" >&2
  echo "targets: $(ls tests/fuzz/corpus | tr '\n' ' ')" >&2
  exit 2
fi
target=$1
seconds=$2
shift 2
if [[ ! -d "tests/fuzz/corpus/$target" ]]; then
  echo "no fuzz target '$target' (targets: $(ls tests/fuzz/corpus | tr '\n' ' '))" >&2
  exit 2
fi

nice -n 19 ./bazelw build --config=fuzz "//tests/fuzz:${target}_fuzzer"
fuzzer="$(./bazelw info --config=fuzz bazel-bin 2>/dev/null)/tests/fuzz/${target}_fuzzer"

work="${FUZZ_WORK:-/tmp/fairsched-fuzz}/$target"
regressions="tests/fuzz/regressions/$target"
mkdir -p "$work" "$regressions"
cp -n "tests/fuzz/corpus/$target"/* "$work"/

# -timeout: an input that runs 30 s is a hang (generous: a loaded or briefly paused machine
# is slow); -rss_limit_mb: bounded memory per input.
# The sanitizers abort on their first report (as in the fuzz build's tests).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  nice -n 19 "$fuzzer" -max_total_time="$seconds" -timeout=30 -report_slow_units=60 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$regressions/" "$@" "$work" "$regressions"
