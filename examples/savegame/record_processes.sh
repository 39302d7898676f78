#!/usr/bin/env bash
# Records the savegame job with several server processes (--server_processes=N, see
# examples/savegame/server_processes.h): N = 1, 2, 4 on the embedded store and on Redis
# (a private redis-server per run), interleaved (round after round, every configuration
# once per round), so a drift in the machine's load hits every configuration alike. Each
# run's JSON record (the job's --json output) is kept raw in OUT/raw/ and appended as one
# line to OUT/records.jsonl; OUT/machine.txt gets the machine and the load average before
# and after every run. render_processes.py makes the table and the plot from records.jsonl.
#
#   examples/savegame/record_processes.sh [OUT] 
#   env: DURATION=5 (s per run) ROUNDS=3 WORKERS=1 (per server process) CONNECTIONS=128
#        USERS=1000 PROCESSES="1 2 4" STORES="embedded redis" BINARY=bazel-bin/examples/savegame
#
# The machine has 2 cores: N > 2 processes (and the fleet, and the store) share them, so
# what N = 4 shows is the cost of more processes on the same cores, not scaling.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-bench/results/savegame_processes/$(date -u +%Y%m%dT%H%M%SZ)}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
WORKERS=${WORKERS:-1}
CONNECTIONS=${CONNECTIONS:-128}
USERS=${USERS:-1000}
PROCESSES=${PROCESSES:-1 2 4}
STORES=${STORES:-embedded redis}
BINARY=${BINARY:-bazel-bin/examples/savegame}

if [[ ! -x "$BINARY" ]]; then
  echo "record_processes: build it first: ./bazelw build --config=opt //examples:savegame" >&2
  exit 2
fi
mkdir -p "$OUT/raw"
{
  echo "recorded: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  echo "cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo || true)"
  echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "flags: --design=fairsched --duration=$DURATION --workers=$WORKERS" \
       "--connections=$CONNECTIONS --users=$USERS; N in: $PROCESSES; stores: $STORES;" \
       "rounds: $ROUNDS"
} > "$OUT/machine.txt"

for round in $(seq 1 "$ROUNDS"); do
  for n in $PROCESSES; do
    for store in $STORES; do
      name="r$round-n$n-$store"
      echo "load before $name: $(cat /proc/loadavg)" >> "$OUT/machine.txt"
      "$BINARY" --design=fairsched --server_processes="$n" --store="$store" \
        --duration="$DURATION" --workers="$WORKERS" --connections="$CONNECTIONS" \
        --users="$USERS" --json="$OUT/raw/$name.json" > "$OUT/raw/$name.txt" 2>&1 ||
        echo "run $name FAILED (exit $?), see raw/$name.txt" >> "$OUT/machine.txt"
      echo "load after  $name: $(cat /proc/loadavg)" >> "$OUT/machine.txt"
      if [[ -f "$OUT/raw/$name.json" ]]; then
        tr -d '\n' < "$OUT/raw/$name.json" >> "$OUT/records.jsonl"
        echo >> "$OUT/records.jsonl"
      fi
    done
  done
done
echo "record_processes: $OUT/records.jsonl ($(wc -l < "$OUT/records.jsonl") runs)"
