#!/usr/bin/env bash
# tlc_check.sh: checks one TLA+ specification with one TLC configuration, as a Bazel test
# (tla/BUILD, macro tlc_check in tlc_check.bzl): SANY first (parse and semantic check of the
# spec and every module it extends), then TLC with one worker thread, and judges the output.
#
# Usage: tlc_check.sh SPEC.tla CONFIG.cfg EXPECT [EXPECT...]
#   EXPECT   pass        SANY clean, TLC exits 0 and prints "Model checking completed. No
#                        error has been found."
#            fail:TEXT   a seeded bug: TLC must stop with an error whose report contains
#                        TEXT (exactly, as a substring), e.g. "Invariant NeverInTwoQueues is
#                        violated", "Deadlock reached", "Temporal properties were violated";
#                        several fail:TEXT must all occur. Any other error fails the test.
# The .tla files next to SPEC.tla are copied into a fresh directory under TEST_TMPDIR with
# the configuration, and TLC runs there: it writes next to the spec, and a spec may EXTEND
# another.
#
# Environment:
#   TLA2TOOLS_JAR  path to tla2tools.jar (TLA+ tools, v1.7.3). Unset, or no such file: the
#                  test passes without running anything and says so (Bazel passes the
#                  variable through: .bazelrc has test --test_env=TLA2TOOLS_JAR), unless
#   FAIRSCHED_REQUIRE_TLC=1 (CI: .ci/run sets it): then a missing jar fails the test.
#   JAVA           java binary (default: java on PATH, else /usr/bin/java).
set -euo pipefail

if (($# < 3)); then
  echo "usage: $0 SPEC.tla CONFIG.cfg pass|fail:TEXT [fail:TEXT ...]" >&2
  exit 2
fi
spec_file=$1
cfg_file=$2
shift 2
expects=("$@")
spec=$(basename "$spec_file" .tla)
cfg=$(basename "$cfg_file")

# Without the jar: a skip on a developer's machine, a failure where the checks are required.
if [[ "${FAIRSCHED_REQUIRE_TLC:-}" == 1 ]]; then
  no_jar_verdict=FAIL
  no_jar_status=1
else
  no_jar_verdict=SKIPPED
  no_jar_status=0
fi
if [[ -z "${TLA2TOOLS_JAR:-}" ]]; then
  echo "tlc_check: $no_jar_verdict $spec with $cfg: TLA2TOOLS_JAR is not set: TLC not run; set it to"
  echo "  the absolute path of tla2tools.jar, the TLA+ tools v1.7.3 (MIT) from the tlaplus"
  echo "  project's releases, e.g. TLA2TOOLS_JAR=/opt/tla/tla2tools.jar ./bazelw test //tla/...)"
  if ((no_jar_status != 0)); then
    echo "  FAIRSCHED_REQUIRE_TLC=1 (set by CI's .ci/run): the TLC checks must run on this machine"
  fi
  exit "$no_jar_status"
fi
if [[ ! -f "$TLA2TOOLS_JAR" ]]; then
  echo "tlc_check: $no_jar_verdict $spec with $cfg: TLA2TOOLS_JAR=$TLA2TOOLS_JAR is not a file:"
  echo "  TLC not run; set it to the path of tla2tools.jar"
  if ((no_jar_status != 0)); then
    echo "  FAIRSCHED_REQUIRE_TLC=1 (set by CI's .ci/run): the TLC checks must run on this machine"
  fi
  exit "$no_jar_status"
fi
java_bin=${JAVA:-}
if [[ -z "$java_bin" ]]; then
  java_bin=$(command -v java || true)
  [[ -n "$java_bin" ]] || java_bin=/usr/bin/java
fi
if [[ ! -x "$java_bin" ]] && ! command -v "$java_bin" >/dev/null 2>&1; then
  echo "tlc_check: FAIL: TLA2TOOLS_JAR is set but there is no java ($java_bin); Debian:"
  echo "  apt-get install default-jre-headless, or unset TLA2TOOLS_JAR to skip TLC"
  exit 1
fi

# TLC writes its states, and traces, next to the spec: work on a copy.
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/tlc.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$(dirname "$spec_file")"/*.tla "$work/"
cp "$cfg_file" "$work/$cfg"
cd "$work"
java_opts=(-XX:+UseParallelGC -Xss16m "-Djava.io.tmpdir=$work")

echo "tlc_check: $spec.tla with $cfg, expect: ${expects[*]}"
echo "tlc_check: $("$java_bin" -cp "$TLA2TOOLS_JAR" tlc2.TLC -h 2>&1 | grep -m1 -o 'Version [^ ]*' || true)"

# SANY: any parse or semantic error fails, whatever the expectation.
set +e
"$java_bin" "${java_opts[@]}" -cp "$TLA2TOOLS_JAR" tla2sany.SANY "$spec.tla" >sany.log 2>&1
sany_rc=$?
set -e
if ((sany_rc != 0)) || grep -qiE 'error|abort|fail|could not' sany.log; then
  cat sany.log
  echo "tlc_check: FAIL: SANY rejects $spec.tla (exit $sany_rc)"
  exit 1
fi
echo "tlc_check: SANY: $spec.tla parses and passes the semantic checks"

# Wall time depends on the machine's load; the JVM's CPU time (user + system, over all its
# threads) is printed too.
TIMEFORMAT='%R s wall, %U s user + %S s system CPU'
set +e
{ time "$java_bin" "${java_opts[@]}" -cp "$TLA2TOOLS_JAR" tlc2.TLC -workers 1 -cleanup \
  -metadir "$work/states" -config "$cfg" "$spec.tla" >tlc.log 2>&1; } 2>time.log
tlc_rc=$?
set -e
cat tlc.log
echo "tlc_check: TLC ran $(cat time.log) (exit $tlc_rc)"
grep -E '^[0-9]+ states generated|depth of the complete state graph' tlc.log |
  sed 's/^/tlc_check: /' || true

if [[ "${expects[0]}" == pass ]]; then
  if ((${#expects[@]} != 1)); then
    echo "tlc_check: 'pass' cannot be combined with other expectations" >&2
    exit 2
  fi
  if ((tlc_rc != 0)) || ! grep -qF 'Model checking completed. No error has been found.' tlc.log; then
    echo "tlc_check: FAIL: expected no error; TLC did not complete without error (see above)"
    exit 1
  fi
  echo "tlc_check: PASS: no error, complete search"
  exit 0
fi

if ((tlc_rc == 0)) || grep -qF 'Model checking completed. No error has been found.' tlc.log; then
  echo "tlc_check: FAIL: expected TLC to find the seeded bug, but the model passed"
  exit 1
fi
for expect in "${expects[@]}"; do
  case "$expect" in
    fail:*)
      want=${expect#fail:}
      if ! grep -qF "$want" tlc.log; then
        echo "tlc_check: FAIL: TLC found an error, but not '$want' (see above)"
        exit 1
      fi
      ;;
    *) echo "tlc_check: unknown expectation '$expect'" >&2; exit 2 ;;
  esac
done
echo "tlc_check: PASS: TLC rejects the seeded bug with: ${expects[*]#fail:}"
