#!/usr/bin/env bash
# One command for a quiet-machine recording of the savegame job in open loop: builds
# //examples:savegame with --config=opt, runs tools/savegame/sweep.py over the rates (both
# designs, alternating, ROUNDS passes), then tools/savegame/plot_open_loop.py. Everything
# lands in OUT (default bench/results/savegame_runs/<UTC date>/open_loop, the open-loop part
# of that day's recording, which tools/savegame/report.py reads): runs.jsonl (one JSON
# record per run, replacing an earlier runs.jsonl there), open_loop.png, summary.json and
# the printed table (summary.txt). Run it from the workspace root on an otherwise idle
# machine; each record carries the load average before and after its run, so a busy
# machine shows. The defaults are the long sweep: offered
# rates past both designs' saturation, 5 rounds, 5 s per run (~10 minutes; the estimate is
# printed first); record_all.sh runs the same rates with 2 s per run.
#
#   tools/savegame/record_open_loop.sh [OUT] ; environment: RATES (comma-separated req/s),
#   DURATION (s per run, 5), ROUNDS (5), CONNECTIONS (256), EXTRA (more savegame flags,
#   default --drain_timeout=2: a saturated run waits 2 s for its backlog, then its replies)
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ next to the scripts
cd "$(dirname "$0")/../.."
out=${1:-bench/results/savegame_runs/$(date -u +%Y%m%d)/open_loop}
rates=${RATES:-4000,8000,12000,16000,20000,24000,28000,32000}
extra=${EXTRA:---drain_timeout=2}
# shellcheck disable=SC2086  # extra is a list of flags
tools/savegame/sweep.py --estimate --rates "$rates" --duration "${DURATION:-5}" \
  --rounds "${ROUNDS:-5}" -- $extra
./bazelw build --config=opt //examples:savegame
binary=$(./bazelw info --config=opt bazel-bin)/examples/savegame
mkdir -p "$out"
echo "recording into $out; uptime before: $(uptime)"
# shellcheck disable=SC2086  # extra is a list of flags
tools/savegame/sweep.py --binary "$binary" --out "$out" --rates "$rates" \
  --duration "${DURATION:-5}" --rounds "${ROUNDS:-5}" \
  --connections "${CONNECTIONS:-256}" -- $extra || echo "(some runs failed their check)"
tools/savegame/plot_open_loop.py "$out" --png "$out/open_loop.png" \
  --summary "$out/summary.json" | tee "$out/summary.txt"
