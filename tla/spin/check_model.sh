#!/usr/bin/env bash
# check_model.sh: runs one exhaustive Spin check of a Promela model and judges the result.
#
# Usage: check_model.sh MODEL.pml MODE EXPECT [--optimize] [-DNAME ...]
#   MODE     safety      assertions, invalid end states (deadlocks)  (pan compiled -DSAFETY)
#            live:NAME   the model's LTL formula NAME under weak fairness (pan -a -f)
#   EXPECT   pass        0 errors and a complete search
#            fail:TEXT   Spin must report exactly this error: pan's error line
#                        ("pan:1: TEXT (at depth N)") must read TEXT, whole, e.g.
#                        "invalid end state", "acceptance cycle", "non-progress cycle", or
#                        "assertion violated (item==claims)" (the assertion's expression
#                        as pan prints it). Nothing else counts: not another error, not a
#                        substring, not the replay's text (which also prints assertions
#                        that passed).
#   --optimize  compile pan at -O1 instead of -O0 (for the searches that run for seconds)
#   -DNAME   preprocessor switches for the model (the seeded bugs, BUG_...)
#
# The search is always exhaustive: no bitstate hashing, no hash compaction, and a run whose
# depth limit was hit counts as a failure, whatever it found. The state counts are printed
# so that the test log records the size of every check.
set -euo pipefail

if (($# < 3)); then
  echo "usage: $0 MODEL.pml safety|live:NAME pass|fail:TEXT [-DNAME ...]" >&2
  exit 2
fi
model=$(realpath "$1")
mode=$2
expect=$3
shift 3
optimize=0
defines=()
for arg in "$@"; do
  if [[ $arg == --optimize ]]; then optimize=1; else defines+=("$arg"); fi
done

for tool in spin gcc; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "check_model: '$tool' not found (Debian: apt-get install spin gcc)" >&2
    exit 2
  fi
done

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/spin.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$model" "$work/model.pml"
cd "$work"

echo "check_model: $(basename "$model") mode=$mode expect=$expect ${defines[*]:-}"
spin "${defines[@]}" -a model.pml >spin.log 2>&1 || { cat spin.log; echo "spin -a failed"; exit 1; }

# Large enough depth and memory for every model here; a run that hits the depth limit is
# rejected below instead of silently truncating the search. Compiling is most of the time:
# of 89 checks, 70 searched for under a second, and the scheduler model's pan.c (370 KB)
# takes 3.4 s of CPU to compile at -O1 against 0.95 s at -O0 (6.8 s at -O2), while its
# largest search ran 18.8 s at -O1 against 45.5 s at -O0 (measured on the 2-core machine).
# So -O0, and -O1 (--optimize, spin_check's `optimize`) for the searches that take seconds.
cflags=(-O0 -w -DMEMLIM=2048 -DVECTORSZ=4096 -DNFAIR=8)
if ((optimize)); then cflags[0]=-O1; fi
pan_args=(-m1000000 -c1)
case "$mode" in
  safety) cflags+=(-DSAFETY -DNOCLAIM) ;;
  live:*) pan_args+=(-a -f -A -N "${mode#live:}") ;;  # -A: the safety runs check assertions
  *) echo "check_model: unknown mode '$mode'" >&2; exit 2 ;;
esac
gcc "${cflags[@]}" -o pan pan.c
start=$(date +%s%N)
set +e
./pan "${pan_args[@]}" >pan.log 2>&1
set -e
end=$(date +%s%N)
cat pan.log
ms=$(((end - start) / 1000000))
printf 'check_model: pan ran %d.%03d s\n' $((ms / 1000)) $((ms % 1000))

errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.log | tail -n 1)
if [[ -z "$errors" ]]; then
  echo "check_model: FAIL: pan did not report an error count"
  exit 1
fi
grep -E 'states, stored|states, matched|transitions \(' pan.log | sed 's/^/check_model: /'

case "$expect" in
  pass)
    if ((errors != 0)); then
      echo "check_model: FAIL: expected no error, Spin found $errors; counterexample:"
      spin "${defines[@]}" -t -p -g -l model.pml | tail -n 80 || true
      exit 1
    fi
    if grep -qE 'max search depth too small|Search not completed|reached -DMEMLIM bound|out of memory|bitstate|hash-compact' pan.log; then
      echo "check_model: FAIL: the search was not exhaustive (see above)"
      exit 1
    fi
    echo "check_model: PASS: no error, exhaustive search"
    ;;
  fail:*)
    want=${expect#fail:}
    if ((errors == 0)); then
      echo "check_model: FAIL: expected Spin to find '$want', but the model passed"
      exit 1
    fi
    # pan's own report of what it found: "pan:1: <error> (at depth N)", one line per error
    # (-c1 stops at the first). The replay below only shows the path there.
    found=$(sed -n 's/^pan:[0-9][0-9]*: \(.*\) (at depth [0-9][0-9]*)$/\1/p' pan.log)
    trail=$(spin "${defines[@]}" -t -p -g model.pml 2>&1 || true)
    echo "$trail" | tail -n 40
    if [[ -z "$found" ]]; then
      echo "check_model: FAIL: Spin reported $errors error(s) but no 'pan:N: ...' error line"
      exit 1
    fi
    if [[ "$found" != "$want" ]]; then
      echo "check_model: FAIL: Spin found '$found', not the expected '$want'"
      exit 1
    fi
    echo "check_model: PASS: Spin rejects the seeded bug with '$want', as it must"
    ;;
  *) echo "check_model: unknown expectation '$expect'" >&2; exit 2 ;;
esac
