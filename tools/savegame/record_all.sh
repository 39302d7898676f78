#!/usr/bin/env bash
# One command for every savegame recording (about 10 minutes on the 2-core machine; the
# plan and its estimate are printed first). Non-interactive; run it from anywhere on an
# otherwise idle machine. Builds //examples:savegame with --config=opt, then
# records into OUT_ROOT (default bench/results/savegame_runs/<UTC date>):
#   open_loop/    tools/savegame/sweep.py: 5 rounds of offered rates past both designs'
#                 saturation, designs alternating; plot_open_loop.py: open_loop.png,
#                 summary.json, summary.txt
#   connections/  tools/savegame/connection_sweep.py: 16 ... 10,000 connections, fairsched,
#                 the Updater at its default and at a 100 ms tick, uniform and skewed load
#   closed_loop/  tools/savegame/closed_loop.py: each design 5 times, alternated, default job
# and then tools/savegame/report.py: connections.png, the summaries, the figures of
# bench/results/savegame.md and the README's savegame sentence (when README.md has the
# <!-- savegame:begin --> marker). Each run's JSON record is one line of its part's
# runs.jsonl (tools/savegame/savegame_runs.py); a part recorded again replaces its runs.jsonl.
#
# Exit status 0 when every run produced its record, also when a design saturates; 1 when a
# run produced no record or failed its correctness check (the summaries still get written).
#
#   tools/savegame/record_all.sh [OUT_ROOT]
#   environment: OPEN_RATES, OPEN_DURATION (2 s), OPEN_ROUNDS (5), CONN_POINTS,
#   CONN_DURATION (2 s), CLOSED_RUNS (5), CLOSED_DURATION (3 s)
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ next to the scripts
cd "$(dirname "$0")/../.."
out=${1:-bench/results/savegame_runs/$(date -u +%Y%m%d)}
# The long open-loop sweep's rates (record_open_loop.sh), past both designs' saturation.
open_rates=${OPEN_RATES:-4000,8000,12000,16000,20000,24000,28000,32000}
open_args=(--rates "$open_rates" --duration "${OPEN_DURATION:-2}" --rounds "${OPEN_ROUNDS:-5}"
           --connections 256 -- --drain_timeout=2)
conn_args=(--points "${CONN_POINTS:-16,64,256,1000,4000,10000}"
           --duration "${CONN_DURATION:-2}")
closed_args=(--runs "${CLOSED_RUNS:-5}" --duration "${CLOSED_DURATION:-3}")

echo "savegame recording into $out. Plan (estimates; add ~1 min for an opt build):"
plan=$(tools/savegame/sweep.py --estimate "${open_args[@]}"
       tools/savegame/connection_sweep.py --estimate "${conn_args[@]}"
       tools/savegame/closed_loop.py --estimate "${closed_args[@]}")
echo "$plan"
echo "$plan" | awk '/ runs x / { sub(/.*= ~/, ""); total += $1 }
                    END { printf "total: ~%.0f s (%.1f min)\n", total, total / 60 }'

./bazelw build --config=opt //examples:savegame
binary=$(./bazelw info --config=opt bazel-bin)/examples/savegame
mkdir -p "$out"
echo "uptime before: $(uptime)"
status=0
tools/savegame/sweep.py --binary "$binary" --out "$out/open_loop" "${open_args[@]}" || status=1
tools/savegame/plot_open_loop.py "$out/open_loop" --png "$out/open_loop/open_loop.png" \
  --summary "$out/open_loop/summary.json" | tee "$out/open_loop/summary.txt"
tools/savegame/connection_sweep.py --binary "$binary" --out "$out/connections" \
  "${conn_args[@]}" || status=1
tools/savegame/closed_loop.py --binary "$binary" --out "$out/closed_loop" "${closed_args[@]}" \
  || status=1
echo "uptime after: $(uptime)"

report=(tools/savegame/report.py "$out" --markdown bench/results/savegame.md)
if grep -q '<!-- savegame:begin -->' README.md; then
  report+=(--readme README.md)
else
  echo "README.md has no <!-- savegame:begin --> marker: its sentence is not written"
fi
"${report[@]}"
[ "$status" -eq 0 ] || echo "some runs produced no record or failed their check (see above)"
exit "$status"
