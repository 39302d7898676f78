#!/bin/bash
# tools/soak/run.sh: the soak in one command. Builds //tools/soak:soak with --config=opt,
# runs it for the chosen time, then checks and plots the raw file (soak_report.py).
#
#   tools/soak/run.sh --minutes 60 --out bench/results/soak/NAME [--interval SECONDS]
#                     [--warmup FRACTION] [--workers N] [--note TEXT]
#
# Writes NAME/soak.jsonl (the raw samples), NAME/soak.png (the plot) and NAME/summary.txt
# (the report's output); exits with the report's status: 0 pass, 1 a rule failed, 2 the
# run or the report could not be done. Run it from the workspace root.
set -euo pipefail

minutes=60
out=""
interval=60
warmup=0.2
workers=2
note=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --interval) interval="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --note) note="$2"; shift 2 ;;
    *) echo "run.sh: unknown argument $1 (see the comment at the top)" >&2; exit 2 ;;
  esac
done
if [[ -z "$out" ]]; then
  echo "run.sh: --out DIR is required" >&2
  exit 2
fi
if [[ ! -x ./bazelw ]]; then
  echo "run.sh: run from the workspace root (./bazelw not found)" >&2
  exit 2
fi
if [[ ! "$minutes" =~ ^[0-9]+([.][0-9]+)?$ ]]; then
  echo "run.sh: --minutes wants a positive number, not '$minutes'" >&2
  exit 2
fi
seconds=$(python3 -c "import sys; print(float(sys.argv[1]) * 60)" "$minutes")

./bazelw build --config=opt //tools/soak:soak
binary="$(./bazelw info --config=opt bazel-bin 2>/dev/null)/tools/soak/soak"
mkdir -p "$out"
"$binary" --seconds="$seconds" --interval="$interval" --warmup="$warmup" \
  --workers="$workers" --note="$note" --out="$out/soak.jsonl" || exit 2
status=0
python3 tools/soak/soak_report.py "$out/soak.jsonl" --png "$out/soak.png" \
  | tee "$out/summary.txt" || status=${PIPESTATUS[0]}
exit "$status"
